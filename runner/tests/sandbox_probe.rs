//! Hostile-probe tests: the `ptc-runner-probe` twin hardens exactly like `ptc-runner` (same
//! `harden.rs`, same Setup, the real `policies/seccomp/runner.json`) and then attempts one
//! forbidden operation. Every attempt must end in SIGSYS or a denied call, never succeed.
//!
//! Attribution: the control probes (`env`, `tool-call`, `churn`, `clock`) run the same code
//! around the attempt under the same filter and finish normally, so a SIGSYS in the forbidden
//! cases comes from the forbidden operation itself.
#![allow(clippy::unwrap_used)]

mod support;

use ptc_shared::Value;
use ptc_shared::protocol::{LandlockStatus, RunnerToSupervisor, SupervisorToRunner, exit_code};
use support::{End, PERMISSIVE, PROBE, Runner, end, setup, setup_with, spawn};

const FORBIDDEN: &[&str] = &[
    "open",
    "create",
    "socket",
    "unix-socket",
    "exec",
    "spawn",
    "thread",
    "fork",
    "ptrace",
    "kill-parent",
    "mmap-exec",
    "mprotect-exec",
    "mmap-shared",
];

fn hardened_probe(op: &str) -> Runner {
    let mut r = spawn(PROBE, &[op]);
    r.harden(setup());
    r
}

/// The value a probe returned in `Finished`, or its failure message.
fn finished(r: &mut Runner) -> Result<Value, String> {
    match r.recv() {
        Some(RunnerToSupervisor::Finished(step)) => match (step.return_value, step.fail) {
            (Some(Value::Vector(mut v)), None) if v.len() == 2 => Ok(v.pop().unwrap()),
            (_, Some(f)) => Err(f.message),
            other => panic!("unexpected Finished: {other:?}"),
        },
        other => panic!("expected Finished, got {other:?}"),
    }
}

#[test]
fn every_forbidden_operation_is_killed_by_seccomp() {
    for op in FORBIDDEN {
        let mut r = hardened_probe(op);
        let frame = r.recv();
        let status = r.wait();
        assert!(
            !matches!(&frame, Some(RunnerToSupervisor::Finished(s)) if s.return_value.is_some()),
            "{op}: the probe reports the operation succeeded: {frame:?}"
        );
        assert_eq!(
            end(status),
            End::Signal(libc::SIGSYS),
            "{op}: expected a seccomp kill, got {frame:?}"
        );
    }
}

#[test]
fn control_probes_run_normally_under_the_same_filter() {
    let mut r = hardened_probe("env");
    assert_eq!(
        finished(&mut r),
        Ok(Value::Int(0)),
        "the runner's environment must be empty"
    );
    assert_eq!(end(r.wait()), End::Code(0));

    for op in ["churn", "clock"] {
        let mut r = hardened_probe(op);
        assert!(finished(&mut r).is_ok(), "{op}");
        assert_eq!(end(r.wait()), End::Code(0), "{op}");
    }
}

#[test]
fn a_tool_call_round_trips_under_the_filter() {
    let mut r = hardened_probe("tool-call");
    let Some(RunnerToSupervisor::ToolCall { id, name, args }) = r.recv() else {
        panic!("expected a ToolCall")
    };
    assert_eq!(name, "echo");
    r.send(&SupervisorToRunner::ToolResult {
        id,
        result: Ok(args),
    });
    assert_eq!(finished(&mut r), Ok(Value::Int(41)));
    assert_eq!(end(r.wait()), End::Code(0));
}

#[test]
fn memory_bomb_reports_its_peak_and_exits_with_the_memory_code() {
    let mut r = hardened_probe("alloc-bomb");
    let peak = support::memory_exceeded(&mut r);
    // The budget is heap_bytes less the main stack's share (RUNNER_STACK_BYTES).
    let budget = setup().heap_budget_bytes;
    assert!(budget < support::HEAP && peak > budget, "{peak}");
    assert_eq!(end(r.wait()), End::Code(exit_code::MEMORY));
}

#[test]
fn allocation_failure_under_rlimit_data_is_reported_like_the_budget() {
    // A budget above RLIMIT_DATA: the system allocator returns null first.
    let mut s = setup();
    s.heap_budget_bytes = 1 << 30;
    s.rlimits.data_bytes = 48 << 20;
    let mut r = spawn(PROBE, &["alloc-bomb"]);
    r.harden(s);
    // The would-be live bytes when malloc failed: near RLIMIT_DATA, far below the budget.
    let peak = support::memory_exceeded(&mut r);
    assert!((32 << 20..64 << 20).contains(&peak), "{peak}");
    assert_eq!(end(r.wait()), End::Code(exit_code::MEMORY));
}

#[test]
fn crashes_are_not_mistaken_for_sandbox_violations() {
    let mut r = hardened_probe("panic");
    assert_eq!(end(r.wait()), End::Code(exit_code::PANIC));
    let mut r = hardened_probe("stack-overflow");
    assert_eq!(end(r.wait()), End::Signal(libc::SIGSEGV));
}

#[test]
fn cpu_rlimit_stops_a_spinning_runner() {
    // One CPU second (soft limit) ends it with SIGXCPU; wall time depends on the machine's load.
    let mut r = hardened_probe("spin");
    assert_eq!(end(r.wait()), End::Signal(libc::SIGXCPU));
}

#[test]
fn an_inherited_ignored_sigxcpu_is_reset_to_its_default() {
    // An ignored disposition survives exec; the runner must restore SIGXCPU's killing default,
    // or the soft CPU limit would do nothing until the hard limit's SIGKILL.
    let script = r#"trap '' XCPU; exec /usr/bin/env -i "$0" "$@" 3<&0 </dev/null"#;
    let mut r = support::spawn_script(script, PROBE, &["spin"]);
    r.harden(setup());
    assert_eq!(end(r.wait()), End::Signal(libc::SIGXCPU));
}

#[test]
fn landlock_alone_denies_files_and_signals() {
    for (op, errno) in [
        ("open", libc::EACCES),
        ("create", libc::EACCES),
        ("kill-parent", libc::EPERM),
    ] {
        let mut r = spawn(PROBE, &[op]);
        let status = r.harden(setup_with(PERMISSIVE));
        if status != LandlockStatus::Enforced {
            eprintln!("landlock is {status:?} on this kernel: layered check skipped");
            return;
        }
        let denied = finished(&mut r).expect_err("landlock must deny it");
        let expected = std::io::Error::from_raw_os_error(errno).to_string();
        assert!(denied.contains(&expected), "{op}: {denied}");
        assert_eq!(end(r.wait()), End::Code(0));
    }
}

#[test]
fn no_filter_no_run() {
    for bpf in [vec![], vec![0u8; 12]] {
        let mut r = spawn(PROBE, &["env"]);
        let mut s = setup();
        s.seccomp_bpf = serde_bytes::ByteBuf::from(bpf);
        r.send(&SupervisorToRunner::Setup(s));
        assert_eq!(r.recv(), None, "no Ready without a filter");
        assert_eq!(end(r.wait()), End::Code(exit_code::NO_SECCOMP));
    }
}
