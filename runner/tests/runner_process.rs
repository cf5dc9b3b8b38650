//! The production `ptc-runner` binary as a process: what it holds once hardened (fds, environment,
//! rlimits, seccomp and no_new_privs, observed from outside through /proc), the conversation
//! Setup → Ready → Execute → Finished, and the exit code of each way the conversation can break.
#![allow(clippy::unwrap_used)]

mod support;

use ptc_shared::protocol::{
    Execute, PROTOCOL_VERSION, RunnerToSupervisor, SupervisorToRunner, ToolDecl, exit_code,
};
use ptc_shared::{Limits, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use support::{End, RUNNER, Runner, end, setup, spawn, spawn_script};

fn execute(program: &str) -> SupervisorToRunner {
    SupervisorToRunner::Execute(Box::new(Execute {
        version: PROTOCOL_VERSION,
        program: program.into(),
        context: Value::Nil,
        memory: Value::Nil,
        history: vec![],
        tools: vec![ToolDecl {
            name: "echo".into(),
            signature: None,
            description: None,
        }],
        limits: Limits::default(),
    }))
}

fn proc_file(r: &Runner, name: &str) -> String {
    std::fs::read_to_string(format!("/proc/{}/{name}", r.pid())).unwrap()
}

/// fd number → link target, from /proc/PID/fd.
fn open_fds(r: &Runner) -> BTreeMap<u32, String> {
    std::fs::read_dir(format!("/proc/{}/fd", r.pid()))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let fd = e.file_name().to_string_lossy().parse().unwrap();
            (
                fd,
                std::fs::read_link(e.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            )
        })
        .collect()
}

/// The soft limit of one line of /proc/PID/limits, e.g. "Max open files".
fn soft_limit(limits: &str, name: &str) -> String {
    let line = limits.lines().find(|l| l.starts_with(name)).unwrap();
    line[name.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn hardened_runner_holds_only_what_we_intend() {
    let mut r = spawn(RUNNER, &[]);
    r.harden(setup());

    let fds = open_fds(&r);
    assert_eq!(
        fds.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3],
        "{fds:?}"
    );
    for fd in 0..3 {
        assert_eq!(fds[&fd], "/dev/null");
    }
    assert!(fds[&3].starts_with("socket:"), "{fds:?}");

    assert_eq!(proc_file(&r, "environ"), "", "environment must be empty");

    let status = proc_file(&r, "status");
    assert!(
        status.lines().any(|l| l == "Seccomp:\t2"),
        "seccomp filter mode expected"
    );
    assert!(status.lines().any(|l| l == "NoNewPrivs:\t1"));

    let limits = proc_file(&r, "limits");
    let expected = ptc_shared::protocol::RunnerRlimits::for_limits(&Limits {
        heap_bytes: support::HEAP,
        ..Limits::default()
    });
    assert_eq!(
        soft_limit(&limits, "Max data size"),
        expected.data_bytes.to_string()
    );
    assert_eq!(
        soft_limit(&limits, "Max cpu time"),
        expected.cpu_soft_secs.to_string()
    );
    assert_eq!(
        soft_limit(&limits, "Max open files"),
        expected.nofile.to_string()
    );
    assert_eq!(soft_limit(&limits, "Max file size"), "0");
    assert_eq!(soft_limit(&limits, "Max core file size"), "0");
    assert_eq!(
        soft_limit(&limits, "Max stack size"),
        expected.stack_bytes.to_string()
    );

    r.send(&execute("(+ 1 2)"));
    match r.recv() {
        Some(RunnerToSupervisor::Finished(step)) => assert!(step.usage.memory_bytes > 0),
        other => panic!("expected Finished, got {other:?}"),
    }
    assert_eq!(end(r.wait()), End::Code(0));
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
    r.child.kill().unwrap();
    r.child.wait().unwrap();
    // With PR_SET_PDEATHSIG the runner is killed too and its end of the socket closes; without
    // it, it would sit waiting for Execute and this read would time out instead.
    r.sock
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 1];
    let n = std::io::Read::read(&mut r.sock, &mut buf).unwrap();
    assert_eq!(n, 0, "the orphaned runner must be gone");
}
