//! Syscall coverage: every program of the conformance corpus (tests/conformance/cases and ptc)
//! runs in a hardened `ptc-runner` under the real seccomp policy, and none may die of SIGSYS or
//! any other signal. Results are the conformance suite's business; this test checks only that
//! the interpreter's ordinary paths stay inside the allowlist.
#![allow(clippy::unwrap_used)]

mod support;

use ptc_shared::client_protocol::RunRequest;
use ptc_shared::protocol::{RunnerToSupervisor, SupervisorToRunner, ToolDecl, exit_code};
use ptc_shared::{Limits, Value};
use support::{End, RUNNER, end, execute_frame, setup_for, spawn};

/// One conformance case, as much of it as a run needs.
struct Case {
    id: String,
    program: String,
    context: Value,
    memory: Value,
    limits: Limits,
}

/// The case's own `:limits`, with the CPU rlimit well above the deadline so that the
/// interpreter's deadline, not SIGXCPU, ends a runaway loop.
fn limits_of(v: &Value) -> Limits {
    let mut limits = v
        .to_json()
        .ok()
        .and_then(|j| serde_json::from_value::<Limits>(j).ok())
        .unwrap_or_default();
    limits.timeout_ms = limits.timeout_ms.min(2000);
    limits.cpu_ms = limits.timeout_ms + 3000;
    limits
}

/// Every case of the corpus.
fn corpus() -> Vec<Case> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/conformance");
    let mut cases = Vec::new();
    for dir in ["cases", "ptc"] {
        let mut files: Vec<_> = std::fs::read_dir(format!("{root}/{dir}"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "edn"))
        {
            let text = std::fs::read_to_string(&file).unwrap();
            for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
                let case = ptc_runner::edn::parse(line).unwrap();
                let field = |k: &str| {
                    case.get_key(&Value::keyword(k))
                        .cloned()
                        .unwrap_or_default()
                };
                let (Value::Str(id), Value::Str(program)) = (field("id"), field("program")) else {
                    continue;
                };
                let limits = limits_of(&field("limits"));
                cases.push(Case {
                    id,
                    program,
                    context: field("context"),
                    memory: field("memory"),
                    limits,
                });
            }
        }
    }
    cases
}

/// Runs one case, answering every tool call by echoing its arguments.
fn run_case(case: &Case, tools: &[String]) -> End {
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup_for(&case.limits));
    let tools = tools
        .iter()
        .map(|n| ToolDecl {
            name: n.clone(),
            signature: None,
            description: None,
        })
        .collect();
    let req = RunRequest {
        program: case.program.clone(),
        context: (&case.context).into(),
        memory: case.memory.clone(),
        tools,
        ..RunRequest::default()
    };
    r.send(&execute_frame(req, case.limits));
    while let Some(msg) = r.recv() {
        if let RunnerToSupervisor::ToolCall { id, args, .. } = msg {
            r.send(&SupervisorToRunner::ToolResult {
                id,
                result: Ok(args),
            });
        }
    }
    end(r.wait())
}

#[test]
fn no_conformance_program_leaves_the_seccomp_allowlist() {
    let cases = corpus();
    assert!(
        cases.len() > 500,
        "corpus not found or nearly empty: {}",
        cases.len()
    );
    let tools: Vec<String> = ["echo", "get-orders", "get-users", "bad", "search"]
        .map(String::from)
        .to_vec();
    let mut bad = Vec::new();
    // Two workers: the machine has two cores and each case is a process.
    let chunks: Vec<_> = cases.chunks(cases.len().div_ceil(2)).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    for case in chunk.iter() {
                        let ended = run_case(case, &tools);
                        if !matches!(ended, End::Code(0) | End::Code(exit_code::MEMORY)) {
                            out.push(format!("{}: {ended:?}", case.id));
                        }
                    }
                    out
                })
            })
            .collect();
        for h in handles {
            bad.extend(h.join().unwrap());
        }
    });
    assert!(bad.is_empty(), "runners that died: {bad:#?}");
}
