//! Connection fairness through a real daemon on a temp socket: one uid at its
//! `per_uid_connections` cap gets `busy` while another uid is still served; idle connections are
//! closed after `idle_timeout_ms` (freeing their slots); a duplicate request id in flight is
//! `invalid_request` while the first request still gets its own answer.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::client_protocol::{ClientToServer, RunRequest, ServerToClient};
use ptc_shared::{FailReason, Value};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::time::Duration;

fn run(id: u64, program: &str) -> ClientToServer {
    ClientToServer::Run {
        id,
        request: Box::new(RunRequest {
            program: program.into(),
            ..RunRequest::default()
        }),
    }
}

fn refused(msg: Option<ServerToClient>, reason: FailReason) -> String {
    match msg {
        Some(ServerToClient::Refused { reason: r, message }) if r == reason => message,
        other => panic!("expected Refused({reason}), got {other:?}"),
    }
}

/// `(+ 1 2)` through `ptc run --connect` as `uid`; its stdout.
fn run_as(uid: u32, socket: &std::path::Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["run", "--connect"])
        .arg(socket)
        .args(["-e", "(+ 1 2)"])
        .uid(uid)
        .gid(uid)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_uid_at_its_cap_is_busy_and_others_are_served() {
    let daemon = TestDaemon::start("per_uid_connections = 3\nidle_timeout_ms = 1500\n").await;
    let socket = daemon.socket.clone();
    let dir = daemon.dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut held: Vec<Raw> = (0..3).map(|_| Raw::connect(&socket)).collect();
        for r in &mut held {
            assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
        }
        // This uid is at its cap: refused `busy`, naming the key.
        let mut extra = Raw::connect(&socket);
        let msg = refused(extra.recv(), FailReason::Busy);
        assert!(msg.contains("per_uid_connections"), "{msg}");
        // Another uid is served meanwhile.
        if nix::unistd::Uid::effective().is_root() {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
            assert_eq!(run_as(65534, &socket), "3");
        } else {
            eprintln!("NOT ROOT: cannot switch uid; the other-uid half of this test did not run");
        }
        // Idle connections are closed (busy, "idle") and their slots come back.
        for r in &mut held {
            r.0.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let msg = refused(r.recv(), FailReason::Busy);
            assert!(msg.contains("idle_timeout_ms"), "{msg}");
            assert!(r.recv().is_none());
        }
        let mut again = Raw::connect(&socket);
        assert!(matches!(again.hello(), ServerToClient::Welcome { .. }));
    })
    .await
    .unwrap();
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_request_id_in_flight_is_invalid_request() {
    let daemon = TestDaemon::start("").await;
    let socket = daemon.socket.clone();
    tokio::task::spawn_blocking(move || {
        let mut r = Raw::connect(&socket);
        r.0.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
        r.send(&run(
            7,
            "(loop [i 0] (if (< i 300000) (recur (inc i)) :first))",
        ));
        r.send(&run(7, "(+ 1 2)"));
        let mut steps = Vec::new();
        while steps.len() < 2 {
            match r.recv() {
                Some(ServerToClient::Step { request_id, step }) => steps.push((request_id, step)),
                other => panic!("expected a Step, got {other:?}"),
            }
        }
        assert!(steps.iter().all(|(id, _)| *id == 7));
        assert_eq!(steps[0].1.reason(), Some(FailReason::InvalidRequest));
        assert!(
            steps[0]
                .1
                .fail
                .as_ref()
                .unwrap()
                .message
                .contains("already in flight")
        );
        assert_eq!(
            steps[1].1.return_value,
            Some(Value::keyword("first")),
            "{:?}",
            steps[1].1.fail
        );
    })
    .await
    .unwrap();
    daemon.stop().await;
}
