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
