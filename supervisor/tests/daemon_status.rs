//! `ptc status` and `Client::status()` against a real daemon on a temp socket: outcome counts
//! move by exactly the Steps clients got (ok, program failures, a timeout, `busy`), latency
//! percentiles appear, runner and queue figures match the config, errors are kept newest first,
//! and a non-root caller (the CLI run as uid 65534) sees only its own uid and its own errors
//! while root sees both; the JSON parses and the text names every section.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::FailReason;
use ptc_shared::status::DaemonStatus;
use ptc_supervisor::client::{Client, ClientError, Embedded, Run};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// Failed counts by reason name, plus `ok`.
fn counts(s: &DaemonStatus) -> BTreeMap<String, u64> {
    let mut m: BTreeMap<String, u64> = s
        .executions
        .failed
        .iter()
        .map(|c| (c.reason.to_string(), c.count))
        .collect();
    m.insert("ok".into(), s.executions.ok);
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_latency_runners_and_errors_move_with_runs() {
    // One run at a time per uid and no queue: a second concurrent run is `busy` at once.
    let d = TestDaemon::start("max_runners = 3\nper_uid_max = 1\nper_uid_queue = 0\n").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let before = c.status().await.unwrap();
    assert!(before.version.starts_with("ptc-supervisor "));
    assert_eq!(before.caller_uid, nix::unistd::geteuid().as_raw());
    assert_eq!((before.runners.limit, before.runners.queued), (3, 0));
    assert!(before.policies.iter().any(|p| p.default));

    let mut expected = counts(&before);
    let mut bump = |reason: Option<FailReason>| {
        let key = reason.map_or("ok".to_string(), |r| r.to_string());
        *expected.entry(key).or_insert(0) += 1;
    };
    for program in ["(+ 1 2)", "(+ 1", "(fail {:reason :not_found})", "(+ 1 2)"] {
        bump(
            c.run(Run::new(program))
                .await
                .err()
                .and_then(|s| s.reason()),
        );
    }
    let slow = c.start(Run::new("(loop [] (recur))").timeout(Duration::from_millis(600)));
    let slow = tokio::spawn(slow);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let during = c.status().await.unwrap();
    assert_eq!(during.runners.busy, 1, "{during:?}");
    let me = during.uids.iter().find(|u| u.uid == during.caller_uid);
    assert_eq!(me.map(|u| u.in_flight), Some(1), "{during:?}");
    let busy = c.run(Run::new("(+ 1 2)")).await.unwrap_err();
    assert_eq!(busy.reason(), Some(FailReason::Busy));
    bump(busy.reason());
    let slow = slow.await.unwrap().unwrap_err();
    assert_eq!(slow.reason(), Some(FailReason::Timeout));
    bump(slow.reason());

    let after = c.status().await.unwrap();
    assert_eq!(counts(&after), expected, "{after:?}");
    assert_eq!(after.executions.total, before.executions.total + 6);
    let (p50, p99) = (after.latency.p50_us.unwrap(), after.latency.p99_us.unwrap());
    assert!(p50 > 0 && p50 <= p99, "{:?}", after.latency);
    // The timed-out run is the slowest of six: the 99th percentile is at least its timeout.
    assert!(p99 >= 600_000, "{:?}", after.latency);
    assert_eq!(after.latency.count, before.latency.count + 6);
    let me = after
        .uids
        .iter()
        .find(|u| u.uid == after.caller_uid)
        .unwrap();
    assert_eq!((me.in_flight, me.ok, me.busy), (0, 2, 1), "{me:?}");
    // Errors newest first: the timeout, then busy, then the program's own reason.
    let names: Vec<&str> = after
        .errors
        .iter()
        .map(|e| e.reason_name.as_str())
        .collect();
    assert_eq!(
        names[..4],
        ["timeout", "busy", "not_found", "parse_error"],
        "{names:?}"
    );
    assert!(after.errors[0].age_ms < 10_000);
    assert_eq!(after.errors[2].reason, FailReason::Failed);
    d.stop().await;
}

fn ptc_as(uid: Option<u32>, args: &[&str], socket: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ptc"));
    cmd.args(args).arg("--connect").arg(socket);
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    cmd.output().unwrap()
}

fn json_status(uid: Option<u32>, socket: &Path) -> serde_json::Value {
    let out = ptc_as(uid, &["status", "--format", "json"], socket);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn uids_of(j: &serde_json::Value, key: &str) -> Vec<u64> {
    let mut v: Vec<u64> = j[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["uid"].as_u64().unwrap())
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_root_caller_sees_only_its_own_uid() {
    if !nix::unistd::geteuid().is_root() {
        common::skip("switching the client's uid needs root (running as a regular user)");
        return;
    }
    const NOBODY: u32 = 65534;
    let d = TestDaemon::start("").await;
    std::fs::set_permissions(&d.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let socket = d.socket.clone();
    tokio::task::spawn_blocking(move || {
        // Each uid runs once and fails once (root's message names a secret).
        for (uid, secret) in [(None, "root-secret"), (Some(NOBODY), "nobody-secret")] {
            assert!(
                ptc_as(uid, &["run", "-e", "(+ 1 2)"], &socket)
                    .status
                    .success()
            );
            let fail = format!("(fail \"{secret}\")");
            assert_eq!(
                ptc_as(uid, &["run", "-e", &fail], &socket).status.code(),
                Some(1)
            );
        }
        let nobody = json_status(Some(NOBODY), &socket);
        assert_eq!(nobody["caller_uid"], NOBODY);
        assert_eq!(uids_of(&nobody, "uids"), [u64::from(NOBODY)], "{nobody}");
        assert_eq!(uids_of(&nobody, "errors"), [u64::from(NOBODY)], "{nobody}");
        assert!(!nobody.to_string().contains("root-secret"), "{nobody}");
        let mine = &nobody["uids"][0];
        assert_eq!(
            (mine["total"].as_u64(), mine["ok"].as_u64()),
            (Some(2), Some(1))
        );
        // The daemon-wide totals are everyone's.
        assert_eq!(nobody["executions"]["total"], 4);
        assert!(nobody["latency"]["p99_us"].as_u64().is_some(), "{nobody}");

        let root = json_status(None, &socket);
        assert_eq!(uids_of(&root, "uids"), [0, u64::from(NOBODY)], "{root}");
        assert_eq!(uids_of(&root, "errors"), [0, u64::from(NOBODY)], "{root}");

        let out = ptc_as(None, &["status", "--format", "text"], &socket);
        let text = String::from_utf8_lossy(&out.stdout);
        for needle in [
            "ptc-supervisor ",
            "runners ",
            "policy ",
            "executions  4 total: ok 2, failed 2",
            "p50 ",
            "65534",
            "root-secret",
        ] {
            assert!(text.contains(needle), "{needle:?} not in\n{text}");
        }
    })
    .await
    .unwrap();
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_needs_a_daemon() {
    let dir = common::temp_dir("status-nodaemon");
    let out = ptc_as(None, &["status"], &dir.join("none.sock"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    let policies = ptc_supervisor::policy::load_dir(&common::shipped_policies()).unwrap();
    let config = ptc_supervisor::engine::EngineConfig::new(common::real_runner(), policies);
    let embedded = Client::embedded_with(config).unwrap();
    assert!(matches!(
        embedded.status().await,
        Err(ClientError::Unsupported(_))
    ));
}
