//! Isolation options of a policy, observed on the live runner: namespaces and run-as. The probe is
//! a tool call: while the runner waits for the tool's answer, the test (the tool host) inspects
//! the runner process through /proc.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::Value;
use ptc_supervisor::engine::{BoxFuture, Engine, EngineConfig, ToolHandler};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;

/// A tool that reports, for every runner alive now, its namespaces and uid line.
struct Inspect;

impl ToolHandler for Inspect {
    fn call(&self, _name: String, _args: Value) -> BoxFuture<'static, Result<Value, String>> {
        let report: Vec<Value> = named_runners()
            .into_iter()
            .map(|p| {
                let link = |k: &str| {
                    std::fs::read_link(format!("/proc/{p}/ns/{k}"))
                        .map(|l| l.display().to_string())
                        .unwrap_or_default()
                };
                let status =
                    std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
                let uid = status
                    .lines()
                    .find(|l| l.starts_with("Uid:"))
                    .unwrap_or_default()
                    .to_string();
                Value::Vector(vec![
                    Value::string(link("net")),
                    Value::string(link("user")),
                    Value::string(uid),
                ])
            })
            .collect();
        Box::pin(async move { Ok(Value::Vector(report)) })
    }
}

fn engine_with(isolation: &str) -> Engine {
    let dir = temp_dir("isolation");
    std::fs::create_dir_all(dir.join("seccomp")).unwrap();
    std::fs::copy(
        shipped_policies().join("seccomp/runner.json"),
        dir.join("seccomp/runner.json"),
    )
    .unwrap();
    let text =
        format!("[isolation]\nseccomp = \"seccomp/runner.json\"\n{isolation}\n[pool]\nwarm = 0\n");
    std::fs::write(dir.join("default.toml"), text).unwrap();
    Engine::new(EngineConfig::new(real_runner(), load_dir(&dir).unwrap())).unwrap()
}

async fn inspect(engine: &Engine) -> Vec<Value> {
    run_inspect(engine, None, Arc::new(Inspect)).await
}

#[tokio::test]
async fn namespaces_and_run_as_reach_the_runner() {
    if !nix::unistd::geteuid().is_root() {
        skip("run_as needs a root supervisor");
        return;
    }
    let ours = |k: &str| {
        std::fs::read_link(format!("/proc/self/ns/{k}"))
            .unwrap()
            .display()
            .to_string()
    };
    let isolated = engine_with(
        "namespaces = [\"user\", \"net\", \"ipc\", \"uts\", \"mount\"]\nrun_as = { uid = 65534, gid = 65534 }",
    );
    let report = inspect(&isolated).await;
    assert_eq!(report.len(), 1, "{report:?}");
    let Value::Vector(r) = &report[0] else {
        panic!()
    };
    assert_ne!(r[0], Value::string(ours("net")), "own network namespace");
    assert_ne!(r[1], Value::string(ours("user")), "own user namespace");
    assert!(
        matches!(&r[2], Value::Str(u) if u.contains("65534")),
        "{r:?}"
    );
    let plain = engine_with("");
    let report = inspect(&plain).await;
    let Value::Vector(r) = &report[0] else {
        panic!()
    };
    assert_eq!(
        r[0],
        Value::string(ours("net")),
        "no namespaces unless the policy asks"
    );
}

/// Fields of /proc/PID/stat after the command name, as numbers (ppid is index 1, pgrp 2,
/// session 3, tty_nr 4); empty when the process is gone.
fn stat_of(pid: i32) -> Vec<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(-1))
        .collect()
}

/// A tool that reports, for every runner alive now: [pid, ppid, pgrp, session, tty_nr], and
/// its parent's [pgrp, session, tty_nr].
struct Groups;

impl ToolHandler for Groups {
    fn call(&self, _name: String, _args: Value) -> BoxFuture<'static, Result<Value, String>> {
        let report: Vec<Value> = named_runners()
            .into_iter()
            .map(|p| {
                let own = stat_of(p);
                let parent = stat_of(i32::try_from(own[0]).unwrap());
                let mut row = vec![i64::from(p)];
                row.extend_from_slice(&own[..4]);
                row.extend_from_slice(&parent[1..4]);
                Value::Vector(row.into_iter().map(Value::Int).collect())
            })
            .collect();
        Box::pin(async move { Ok(Value::Vector(report)) })
    }
}

/// A pooled runner leads a session of its own (`setsid` after the fork), as does its zygote
/// (`POSIX_SPAWN_SETSID`): neither has a controlling terminal, so no terminal signal (SIGINT,
/// SIGHUP, job control) reaches a runner, and no signal to the engine's process group or the
/// zygote's does; and each runner is its own scheduler autogroup where the kernel groups by
/// session (BENCHMARKS.md, issue 14 fifth part: why it stays).
#[tokio::test]
async fn a_runner_leads_its_own_session_with_no_controlling_terminal() {
    let engine = engine_with("");
    let report = run_inspect(&engine, None, Arc::new(Groups)).await;
    assert_eq!(report.len(), 1, "{report:?}");
    let Value::Vector(row) = &report[0] else {
        panic!("{report:?}")
    };
    let n: Vec<i64> = row
        .iter()
        .map(|v| match v {
            Value::Int(i) => *i,
            other => panic!("{other:?}"),
        })
        .collect();
    let [
        pid,
        ppid,
        pgrp,
        session,
        tty,
        parent_pgrp,
        parent_session,
        parent_tty,
    ] = n[..]
    else {
        panic!("{n:?}")
    };
    assert!(
        is_zygote(i32::try_from(ppid).unwrap()),
        "forked by a zygote"
    );
    assert_eq!(
        (pgrp, session),
        (pid, pid),
        "leads its own group and session"
    );
    assert_eq!(
        (parent_pgrp, parent_session),
        (ppid, ppid),
        "so does the zygote"
    );
    assert_eq!((tty, parent_tty), (0, 0), "no controlling terminal");
    let ours = stat_of(i32::try_from(std::process::id()).unwrap());
    assert_ne!(
        parent_session, ours[3],
        "the zygote is not in the engine's session"
    );
}
