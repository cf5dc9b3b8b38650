//! The production `ptc-runner` binary as a process: what it holds once hardened (fds, environment,
//! rlimits, seccomp and no_new_privs, dumpability, observed from outside through /proc), the
//! conversation Setup → Ready → Execute → Finished, and the exit code of each way the
//! conversation can break.
#![allow(clippy::unwrap_used)]
// Tool replies mirror the protocol's `Result<Value, ToolFailure>`, whose error holds a Fail.
#![allow(clippy::result_large_err)]

mod support;

use ptc_shared::client_protocol::RunRequest;
use ptc_shared::protocol::{
    LandlockStatus, PROTOCOL_VERSION, RunnerToSupervisor, SupervisorToRunner, ToolDecl, exit_code,
};
use ptc_shared::signature::Mode;
use ptc_shared::tool_calls::ToolFailure;
use ptc_shared::{Fail, FailReason, Limits, Value};
use support::{
    End, RUNNER, Runner, end, execute_frame, fds_of, proc_file, setup, soft_limit, spawn,
    spawn_script, spawn_with_stderr,
};

fn execute(program: &str) -> SupervisorToRunner {
    let req = RunRequest {
        program: program.into(),
        tools: vec![ToolDecl {
            name: "echo".into(),
            signature: None,
            description: None,
        }],
        ..RunRequest::default()
    };
    execute_frame(req, Limits::default())
}

#[test]
fn hardened_runner_holds_only_what_we_intend() {
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup());

    let fds = fds_of(r.pid());
    assert_eq!(
        fds.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3],
        "{fds:?}"
    );
    for fd in 0..3 {
        assert_eq!(fds[&fd], "/dev/null");
    }
    assert!(fds[&3].starts_with("socket:"), "{fds:?}");

    assert_eq!(
        proc_file(r.pid(), "environ"),
        "",
        "environment must be empty"
    );

    let status = proc_file(r.pid(), "status");
    assert!(
        status.lines().any(|l| l == "Seccomp:\t2"),
        "seccomp filter mode expected"
    );
    assert!(status.lines().any(|l| l == "NoNewPrivs:\t1"));

    // Literal values for this Setup (heap 32 MiB, contexts up to 16 MiB), not the function that
    // computes them: RLIMIT_DATA = heap + max(heap / 4, 32 MiB) + the grant for granted data
    // (8 × 16 MiB, docs/ARCHITECTURE.md); one CPU second plus the import's allowance (the
    // deadline, 1 s, per MiB of the 16 MiB a context may have); 8 fds; no files, no cores;
    // a 16 MiB stack (RUNNER_STACK_BYTES, paid out of the heap budget: see docs/SECURITY.md).
    let limits = proc_file(r.pid(), "limits");
    for (name, soft) in [
        ("Max data size", "201326592"),
        ("Max cpu time", "17"),
        ("Max open files", "8"),
        ("Max file size", "0"),
        ("Max core file size", "0"),
        ("Max stack size", "16777216"),
    ] {
        assert_eq!(soft_limit(&limits, name), soft, "{name}");
    }

    r.send(&execute("(+ 1 2)"));
    let step = finished(&mut r);
    assert_eq!(step.return_value, Some(Value::Int(3)));
    assert!(
        step.usage.memory_bytes > 0,
        "usage.memory_bytes is the allocator's peak"
    );
    assert_eq!(end(r.wait()), End::Code(0));
}

#[test]
fn imported_starts_the_programs_cpu_limit() {
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup());
    // Until the data is in, RLIMIT_CPU allows the import its allowance too (above); with
    // `Imported` it is the program's one second from the CPU used so far (rounded up to whole
    // seconds), hard one more: the allowance is gone before the program's first step.
    // A step budget the loop cannot spend within its second, so the deadline ends it on a fast
    // machine too (10,000,000 steps of this loop take about a second in a debug build).
    let req = RunRequest {
        program: "(loop [] (recur))".into(),
        ..RunRequest::default()
    };
    let limits = Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    };
    r.send(&execute_frame(req, limits));
    assert_eq!(r.recv(), Some(RunnerToSupervisor::Imported));
    let limits = proc_file(r.pid(), "limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max cpu time"))
        .unwrap();
    let mut fields = line["Max cpu time".len()..].split_whitespace();
    let soft: u64 = fields.next().unwrap().parse().unwrap();
    let hard: u64 = fields.next().unwrap().parse().unwrap();
    assert!((1..=3).contains(&soft), "{line}");
    assert_eq!(hard, soft + 1, "{line}");
    // The loop ends at the program's own deadline (the interpreter's check), not before.
    let step = finished(&mut r);
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    assert_eq!(end(r.wait()), End::Code(0));
}

/// Runs `program` in a hardened runner, answering tool calls with `reply`.
fn run_program(
    program: &str,
    mut reply: impl FnMut(&str, Value) -> Result<Value, ToolFailure>,
) -> (Option<ptc_shared::Step>, End) {
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup());
    r.send(&execute(program));
    let mut last = None;
    while let Some(msg) = r.recv() {
        match msg {
            RunnerToSupervisor::ToolCall { id, name, args } => {
                let result = reply(&name, args);
                r.send(&SupervisorToRunner::ToolResult { id, result });
            }
            RunnerToSupervisor::Finished(step) => last = Some(*step),
            RunnerToSupervisor::Imported => assert!(last.is_none()),
            other => panic!("unexpected {other:?}"),
        }
    }
    (last, end(r.wait()))
}

fn finished(r: &mut Runner) -> ptc_shared::Step {
    match support::recv_after_import(r) {
        Some(RunnerToSupervisor::Finished(step)) => *step,
        other => panic!("expected Finished, got {other:?}"),
    }
}

fn echo(_: &str, args: Value) -> Result<Value, ToolFailure> {
    Ok(args)
}

#[test]
fn tool_calls_are_forwarded_and_their_errors_mapped() {
    let (step, code) = run_program("(tool/echo {:a 1})", |name, args| {
        assert_eq!(name, "echo");
        Ok(args)
    });
    let step = step.unwrap();
    let mut expected = ptc_shared::value::Map::new();
    expected.insert(Value::string("a"), Value::Int(1));
    assert_eq!(step.return_value, Some(Value::Map(Box::new(expected))));
    // The engine checks and records tool calls; the runner only forwards them.
    assert!(step.tool_calls.is_empty());
    assert_eq!(code, End::Code(0));

    let cases = [
        (ToolFailure::NotFound, FailReason::ToolNotFound),
        (ToolFailure::Error("boom".into()), FailReason::ToolError),
        (
            ToolFailure::Terminal(Fail::new(FailReason::Timeout, "deadline")),
            FailReason::Timeout,
        ),
    ];
    for (err, reason) in cases {
        let (step, code) = run_program("(tool/echo {})", |_, _| Err(err.clone()));
        assert_eq!(step.unwrap().reason(), Some(reason));
        assert_eq!(code, End::Code(0));
    }
    // Terminal failures are not catchable by the program.
    let terminal = || {
        Err(ToolFailure::Terminal(Fail::new(
            FailReason::Timeout,
            "deadline",
        )))
    };
    let (step, _) = run_program(
        "(try (tool/echo {}) (catch Exception e :caught))",
        |_, _| terminal(),
    );
    assert_eq!(step.unwrap().reason(), Some(FailReason::Timeout));
}

#[test]
fn interpreter_paths_that_touch_lazy_runtime_state_survive_the_filter() {
    // regex sizes its pool from /proc (primed before landlock); deep recursion is capped cleanly.
    let (step, code) = run_program(r#"(re-find #"a+" "caaat")"#, echo);
    assert_eq!(
        (step.unwrap().return_value, code),
        (Some(Value::string("aaa")), End::Code(0))
    );
    let (step, code) = run_program("(defn f [n] (f (inc n))) (f 0)", echo);
    assert!(step.unwrap().fail.is_some());
    assert_eq!(code, End::Code(0));
    let (step, code) = run_program(
        "(println \"hi\") (reduce + (map (fn [x] (* x x)) (range 100000)))",
        echo,
    );
    let step = step.unwrap();
    assert_eq!((step.prints, code), (vec!["hi".to_string()], End::Code(0)));
}

#[test]
fn the_program_signature_travels_with_execute() {
    let run = |program: &str, validation: Mode| {
        let mut r = spawn(RUNNER, &[]);
        r.harden(setup());
        let SupervisorToRunner::Execute(mut exec) = execute(program) else {
            unreachable!()
        };
        exec.request.signature = Some("() -> :int".into());
        exec.request.validation = validation;
        r.send(&SupervisorToRunner::Execute(exec));
        let step = finished(&mut r);
        assert_eq!(end(r.wait()), End::Code(0));
        step
    };
    assert_eq!(
        run("(+ 1 2)", Mode::Enabled).return_value,
        Some(Value::Int(3))
    );
    assert_eq!(
        run("\"three\"", Mode::Enabled).reason(),
        Some(FailReason::ValidationError)
    );
    assert_eq!(
        run("\"three\"", Mode::Disabled).return_value,
        Some(Value::string("three"))
    );
}

#[test]
fn a_program_over_the_heap_budget_ends_with_memory_exceeded() {
    // Generous time so that only the heap can end it, even in a debug build on a busy machine.
    let limits = Limits {
        heap_bytes: support::HEAP,
        timeout_ms: 20_000,
        cpu_ms: 20_000,
        ..Limits::default()
    };
    let mut r = spawn(RUNNER, &[]);
    r.harden(support::setup_for(&limits));
    let SupervisorToRunner::Execute(mut exec) = execute("(count (vec (range 3000000)))") else {
        unreachable!()
    };
    exec.limits = limits;
    r.send(&SupervisorToRunner::Execute(exec));
    let peak = support::memory_exceeded(&mut r);
    // The budget is heap_bytes less the main stack's share (RUNNER_STACK_BYTES).
    let budget = support::setup_for(&limits).heap_budget_bytes;
    assert!(budget < support::HEAP && peak > budget, "{peak}");
    assert_eq!(end(r.wait()), End::Code(exit_code::MEMORY));
}

#[test]
fn a_reply_to_the_wrong_call_is_a_protocol_error() {
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup());
    r.send(&execute("(tool/echo {})"));
    assert_eq!(r.recv(), Some(RunnerToSupervisor::Imported));
    let Some(RunnerToSupervisor::ToolCall { id, .. }) = r.recv() else {
        panic!("expected a ToolCall")
    };
    r.send(&SupervisorToRunner::ToolResult {
        id: id + 1,
        result: Ok(Value::Nil),
    });
    assert_eq!(r.recv(), None, "no Finished after a protocol violation");
    assert_eq!(end(r.wait()), End::Code(exit_code::PROTOCOL));
}

#[test]
fn setup_must_come_first_and_match_our_version() {
    let mut r = spawn(RUNNER, &[]);
    r.send(&execute("1"));
    assert_eq!(r.recv(), None);
    assert_eq!(end(r.wait()), End::Code(exit_code::SETUP));

    let mut r = spawn(RUNNER, &[]);
    let mut s = setup();
    s.version = PROTOCOL_VERSION + 1;
    r.send(&SupervisorToRunner::Setup(s));
    assert_eq!(r.recv(), None);
    assert_eq!(end(r.wait()), End::Code(exit_code::SETUP));

    let mut r = spawn(RUNNER, &[]);
    drop(std::io::Write::write_all(
        &mut r.sock,
        &[0, 0, 0, 3, 0xff, 0xff, 0xff],
    ));
    assert_eq!(end(r.wait()), End::Code(exit_code::SETUP));
}

#[test]
fn a_failed_setup_names_its_step_and_errno_on_stderr() {
    // Real failures, no test hook: a first frame that is not Setup, a program that is no BPF.
    let mut r = spawn_with_stderr(RUNNER, &[]);
    r.send(&execute("1"));
    assert_eq!(end(r.wait()), End::Code(exit_code::SETUP));
    assert_eq!(r.stderr_text(), "setup failed at read_setup: EPROTO");

    let mut r = spawn_with_stderr(RUNNER, &[]);
    let mut s = setup();
    s.seccomp_bpf = serde_bytes::ByteBuf::from(vec![0u8; 12]);
    r.send(&SupervisorToRunner::Setup(s));
    assert_eq!(end(r.wait()), End::Code(exit_code::NO_SECCOMP));
    assert_eq!(r.stderr_text(), "setup failed at seccomp_program: EINVAL");
}

#[test]
fn a_runner_without_its_socket_on_fd_3_stops_at_the_first_check() {
    // fd 3 closed, then fd 3 a character device: neither is a supervisor's socket, and the
    // runner says so before it reads anything from it.
    for (script, errno) in [
        (r#"exec /usr/bin/env -i "$0" </dev/null 3<&-"#, "EBADF"),
        (
            r#"exec /usr/bin/env -i "$0" </dev/null 3</dev/null"#,
            "ENOTSOCK",
        ),
    ] {
        let mut r = support::spawn_script_as(script, RUNNER, None);
        assert_eq!(end(r.wait()), End::Code(exit_code::SETUP), "{script}");
        assert_eq!(
            r.stderr_text(),
            format!("setup failed at fstat_ipc_fd: {errno}"),
            "{script}"
        );
    }
}

#[test]
fn a_runner_started_by_an_ordinary_user_is_not_dumpable_once_hardened() {
    use std::os::unix::fs::MetadataExt;
    if !nix::unistd::geteuid().is_root() {
        support::skip("starting a runner as another user needs a root test process");
        return;
    }
    let copy = support::OpenCopy::new(RUNNER);
    let bin = copy.path.to_str().unwrap();
    let script = r#"exec /usr/bin/env -i "$0" 3<&0 </dev/null"#;
    let mut r = support::spawn_script_as(script, bin, Some((65534, 65534)));
    r.harden(setup());
    let status = proc_file(r.pid(), "status");
    assert!(
        status
            .lines()
            .any(|l| l == "Uid:\t65534\t65534\t65534\t65534"),
        "{status}"
    );
    // /proc/PID of a dumpable process belongs to its user; of one that is not, to root: no
    // other process of uid 65534 may ptrace the runner or read its memory.
    let owner = std::fs::metadata(format!("/proc/{}/status", r.pid()))
        .unwrap()
        .uid();
    assert_eq!(owner, 0, "a hardened runner must not be dumpable");
    r.send(&execute("(+ 1 2)"));
    assert_eq!(finished(&mut r).return_value, Some(Value::Int(3)));
    assert_eq!(end(r.wait()), End::Code(0));
}

#[test]
fn ready_says_whether_landlock_was_asked_for() {
    // Asked for, landlock is applied as far as this kernel can (`Enforced`, `Partial`, or
    // `Unsupported` where it has none): the answer is never `NotRequested`, which is kept for a
    // Setup that did not ask.
    let mut asked = spawn(RUNNER, &[]);
    let status = asked.harden(setup());
    assert_ne!(status, LandlockStatus::NotRequested);
    let mut s = setup();
    s.landlock = false;
    let mut not_asked = spawn(RUNNER, &[]);
    assert_eq!(not_asked.harden(s), LandlockStatus::NotRequested);
    not_asked.send(&execute("(+ 1 2)"));
    assert_eq!(finished(&mut not_asked).return_value, Some(Value::Int(3)));
}

#[test]
fn anything_but_execute_after_ready_is_a_protocol_error() {
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup());
    r.send(&SupervisorToRunner::ToolResult {
        id: 1,
        result: Ok(Value::Nil),
    });
    assert_eq!(end(r.wait()), End::Code(exit_code::PROTOCOL));

    let mut r = spawn(RUNNER, &[]);
    r.harden(setup());
    r.sock.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(end(r.wait()), End::Code(exit_code::PROTOCOL));
}

#[test]
fn runner_dies_with_its_parent() {
    // sh is the runner's parent here: fd 5 keeps the socket, the runner runs in the background.
    let script = r#"exec 5<&0; /usr/bin/env -i "$0" 3<&5 5<&- </dev/null & wait"#;
    let mut r = spawn_script(script, RUNNER, &[]);
    r.harden(setup());
    let child = r.child.as_mut().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // With PR_SET_PDEATHSIG the runner is killed too and its end of the socket closes; without
    // it, it would sit waiting for Execute and this read would time out instead.
    r.assert_gone();
}

#[test]
fn namespaces_from_setup_are_entered_before_hardening() {
    use ptc_shared::protocol::ns;
    let link = |pid: &str, kind: &str| std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).ok();
    let mut r = spawn(RUNNER, &[]);
    let mut s = setup();
    s.namespaces = ns::USER | ns::NET | ns::IPC | ns::UTS | ns::MOUNT;
    r.harden(s);
    let pid = r.pid().to_string();
    for kind in ["user", "net", "ipc", "uts", "mnt"] {
        let (ours, theirs) = (link("self", kind), link(&pid, kind));
        assert!(
            ours.is_some() && theirs.is_some(),
            "{kind}: no /proc ns link"
        );
        assert_ne!(
            ours, theirs,
            "the runner should be in its own {kind} namespace"
        );
    }
    // Without the bits the runner stays in every one of ours.
    let mut plain = spawn(RUNNER, &[]);
    plain.harden(setup());
    let plain_pid = plain.pid().to_string();
    for kind in ["user", "net", "ipc", "uts", "mnt"] {
        assert_eq!(link("self", kind), link(&plain_pid, kind), "{kind}");
    }
    // And it still runs programs normally inside the namespaces.
    r.send(&execute("(+ 1 2)"));
    assert_eq!(finished(&mut r).return_value, Some(Value::Int(3)));
}

#[test]
fn run_as_switches_uid_and_gid_and_drops_groups() {
    if !nix::unistd::geteuid().is_root() {
        support::skip("switching users needs a root test process");
        return;
    }
    let mut r = spawn(RUNNER, &[]);
    let mut s = setup();
    s.run_as = Some((65534, 65534));
    r.harden(s);
    let status = proc_file(r.pid(), "status");
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        field("Uid:"),
        "Uid:\t65534\t65534\t65534\t65534",
        "{status}"
    );
    assert_eq!(
        field("Gid:"),
        "Gid:\t65534\t65534\t65534\t65534",
        "{status}"
    );
    assert_eq!(field("Groups:").trim(), "Groups:", "{status}");
    r.send(&execute("(reduce + (range 10))"));
    assert_eq!(finished(&mut r).return_value, Some(Value::Int(45)));
}

/// Runs `program` with `context` in a runner hardened for `limits`; returns the runner to read from.
fn start_with(program: &str, context: Value, limits: Limits) -> Runner {
    let mut r = spawn(RUNNER, &[]);
    r.harden(support::setup_for(&limits));
    let req = RunRequest {
        program: program.into(),
        context: context.into(),
        ..RunRequest::default()
    };
    r.send(&execute_frame(req, limits));
    r
}

/// Limits with an 8 MiB heap (a 6 MiB allocator budget once the stack's quarter is paid) and a
/// generous clock, so that only memory can end a run.
fn small_heap() -> Limits {
    Limits {
        heap_bytes: 8 << 20,
        timeout_ms: 20_000,
        cpu_ms: 20_000,
        ..Limits::default()
    }
}

/// The budget is enforced on the allocation that crosses it: a program growing in small steps
/// reports a peak just past the budget, not the grant's (mutation testing: `settle` doing nothing
/// left the budget at the grant and the old test, `peak > budget`, still passed).
#[test]
fn memory_exceeded_reports_the_first_allocation_past_the_budget() {
    let limits = small_heap();
    let budget = support::setup_for(&limits).heap_budget_bytes;
    assert_eq!(budget, 6 << 20, "8 MiB less a quarter for the stack");
    let mut r = start_with(
        "(reduce (fn [acc i] (conj acc (str \"item-\" i))) [] (range 10000000))",
        Value::Nil,
        limits,
    );
    let peak = support::memory_exceeded(&mut r);
    assert!(
        budget < peak && peak <= budget + (1 << 20),
        "{peak} vs {budget}"
    );
    assert_eq!(end(r.wait()), End::Code(exit_code::MEMORY));
}

/// Records and small vectors held inline are given back by their last owner without `Value`'s
/// drop per value (`value::release_inline`, from `Record`'s `Drop` and a vector's): numbers
/// forgotten, texts' counts given back there. 300,000 rounds of records, tuples and pairs with
/// fresh texts (a vector or a map inside stops the walk) made and dropped in turn fit an 8 MiB
/// heap, which a leaked text apiece (~19 MB) would not (mutation testing: forgetting every
/// value, texts included, in either).
#[test]
fn records_and_small_vectors_made_and_dropped_in_turn_give_their_texts_back() {
    let mut r = start_with(
        "(loop [i 0 n 0] \
           (if (< i 300000) \
             (recur (inc i) (+ n (count (:s {:s (str \"item-\" i) :n i :f 1.5})) \
                               (count (:v {:s (str \"v-\" i) :v [i (str i)]})) \
                               (count (second [i (str \"item-\" i) 1.5])) \
                               (count (first [(str \"v-\" i) {:i i}])))) \
             n))",
        Value::Nil,
        small_heap(),
    );
    let step = finished(&mut r);
    assert!(step.fail.is_none(), "{:?}", step.fail);
    let (records, vectors) = (3_188_890 + 600_000, 3_188_890 + 2_288_890);
    assert_eq!(step.return_value, Some(Value::Int(records + vectors)));
    assert_eq!(end(r.wait()), End::Code(0));
}

/// A binding written over its slot lets the old value go (`eval::forget_or_drop`: nil and
/// numbers forgotten, anything else dropped). 300,000 rounds of a `let` whose text and vector
/// are used on odd rounds only, so every other round's are still in their slots when the next
/// round binds them, fit an 8 MiB heap, which a leaked text and vector apiece (~20 MB) would
/// not (mutation testing: forgetting every old value).
#[test]
fn bindings_written_over_give_their_old_values_back() {
    let mut r = start_with(
        "(loop [i 0 n 0] \
           (if (< i 300000) \
             (let [s (str \"item-\" i \"-padding-padding\") v [s i]] \
               (recur (inc i) (if (odd? i) (+ n (count s) (count v)) n))) \
             n))",
        Value::Nil,
        small_heap(),
    );
    let step = finished(&mut r);
    assert!(step.fail.is_none(), "{:?}", step.fail);
    assert_eq!(step.return_value, Some(Value::Int(4_294_445)));
    assert_eq!(end(r.wait()), End::Code(0));
}

/// Granted data: a context far larger than the heap is imported under the grant, the program
/// then has its own heap on top, and `usage.memory_bytes` counts only what the program added
/// (mutation testing: `open_grant` and `peak` were not pinned by a runner test).
#[test]
fn a_context_larger_than_the_heap_is_granted_and_not_billed_to_the_program() {
    let mut context = ptc_shared::value::Map::new();
    context.insert(Value::string("s"), Value::string("x".repeat(8 << 20)));
    let mut r = start_with(
        "[(count data/s) (count (apply str (repeat 100000 \"y\")))]",
        Value::Map(Box::new(context)),
        small_heap(),
    );
    let step = finished(&mut r);
    let two = |a, b| Some(Value::Vector(vec![Value::Int(a), Value::Int(b)]));
    assert_eq!(step.return_value, two(8 << 20, 100_000), "{:?}", step.fail);
    let used = step.usage.memory_bytes;
    assert!((100_000..6 << 20).contains(&used), "{used}");
    assert_eq!(end(r.wait()), End::Code(0));
}

/// When RLIMIT_DATA runs out before the heap budget (the system allocator returns null), the
/// runner still ends `MemoryExceeded` and reports what the program had live, above its granted
/// data (mutation testing: `alloc::live` returning 0 or 1 was otherwise unobserved).
#[test]
fn a_null_from_the_system_allocator_is_memory_exceeded_with_the_live_bytes() {
    let limits = Limits {
        heap_bytes: 1 << 30,
        timeout_ms: 20_000,
        cpu_ms: 20_000,
        ..Limits::default()
    };
    let mut setup = support::setup_for(&limits);
    setup.rlimits.data_bytes = 160 << 20;
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup);
    let req = RunRequest {
        program: "(def keep (apply str (repeat 300000 \"y\"))) (loop [s \"yyyyyyyy\" i 0] (if (< i 30) (recur (str s s) (inc i)) (count s)))"
            .into(),
        ..RunRequest::default()
    };
    r.send(&execute_frame(req, limits));
    let peak = support::memory_exceeded(&mut r);
    // Live bytes include the request that failed (charged before the system allocator was
    // asked), so they may pass RLIMIT_DATA, but stay far under the 1 GiB budget: the null ended it.
    assert!((300_000..256 << 20).contains(&peak), "{peak}");
    assert_eq!(end(r.wait()), End::Code(exit_code::MEMORY));
}

/// A small block that outgrows its size class moves to the next class through the free lists
/// (`heap.rs` `realloc`), in a real, armed runner: vectors grown one element at a time through
/// every small class and past the largest (4, 8, 16, 32 elements...), strings grown by `str/join`
/// and `str/replace`, interleaved with values dropped in between, keep every element.
#[test]
fn values_grown_through_every_small_size_class_keep_their_contents() {
    let program = "(let [vs (map (fn [n] (reduce conj [] (range n))) (range 1 80)) \
                   ss (map (fn [n] (str/replace (str/join (repeat n \"ab\")) \"b\" \"cd\")) (range 1 200))] \
                   [(every? true? (map (fn [v n] (= v (vec (range n)))) vs (range 1 80))) \
                    (reduce + (map (fn [v] (reduce + v)) vs)) \
                    (every? true? (map (fn [s n] (= s (apply str (repeat n \"acd\")))) ss (range 1 200))) \
                    (reduce + (map count ss))])";
    let (step, code) = run_program(program, echo);
    let step = step.expect("a Finished step");
    // Sums of 0..n-1 for n = 1..79 (C(80, 3)); strings of 3n characters for n = 1..199.
    let want = Value::Vector(vec![
        Value::Bool(true),
        Value::Int(82_160),
        Value::Bool(true),
        Value::Int(3 * 199 * 200 / 2),
    ]);
    assert_eq!(step.return_value, Some(want), "{:?}", step.fail);
    assert_eq!(code, End::Code(0));
}
