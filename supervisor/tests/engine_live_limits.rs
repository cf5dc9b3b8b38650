//! Independent expectations: the rlimits and namespaces of a live runner started by the engine
//! under each built-in policy, read from /proc while it runs and compared with values written
//! here literally, not with the function that computes them. (RLIMIT_DATA is the heap budget plus
//! max(heap / 4, 32 MiB); CPU is `cpu_ms` rounded up to whole seconds.) One test per binary
//! process: the inspecting tool looks at every runner alive, so nothing else may run beside it.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::Value;
use ptc_supervisor::engine::{BoxFuture, Engine, EngineConfig, ToolHandler};
use ptc_supervisor::policy::PolicySource;
use std::sync::Arc;

/// Reports, for the one runner alive, its soft and hard limits of interest and namespace links.
struct Inspect;

fn limit_line(limits: &str, name: &str) -> Value {
    let line = limits
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_default();
    let cols: Vec<&str> = line[name.len()..].split_whitespace().collect();
    Value::Vector(cols.iter().take(2).map(|c| Value::string(*c)).collect())
}

impl ToolHandler for Inspect {
    fn call(&self, _name: String, _args: Value) -> BoxFuture<'static, Result<Value, String>> {
        let alive = named_runners();
        let report = match alive.as_slice() {
            [p] => {
                let limits =
                    std::fs::read_to_string(format!("/proc/{p}/limits")).unwrap_or_default();
                let ns = |k: &str| {
                    let theirs = std::fs::read_link(format!("/proc/{p}/ns/{k}")).ok();
                    let ours = std::fs::read_link(format!("/proc/self/ns/{k}")).ok();
                    Value::Bool(theirs.is_some() && theirs != ours)
                };
                Ok(Value::Vector(vec![
                    limit_line(&limits, "Max data size"),
                    limit_line(&limits, "Max cpu time"),
                    limit_line(&limits, "Max open files"),
                    limit_line(&limits, "Max file size"),
                    limit_line(&limits, "Max core file size"),
                    limit_line(&limits, "Max stack size"),
                    Value::Vector(
                        ["user", "net", "ipc", "uts", "mnt", "pid"]
                            .iter()
                            .map(|k| ns(k))
                            .collect(),
                    ),
                ]))
            }
            other => Err(format!("expected one live runner, found {other:?}")),
        };
        Box::pin(async move { report })
    }
}

fn pair(soft: &str, hard: &str) -> Value {
    Value::Vector(vec![Value::string(soft), Value::string(hard)])
}

async fn inspect(engine: &Engine, policy: &str) -> Vec<Value> {
    run_inspect(engine, Some(policy), Arc::new(Inspect)).await
}

#[tokio::test]
async fn live_runners_of_the_built_in_policies_have_the_pinned_rlimits_and_namespaces() {
    let mut policies = PolicySource::BuiltIn.load().unwrap();
    for p in policies.values_mut() {
        p.warm = 0;
    }
    let engine = Engine::new(EngineConfig::new(real_runner(), policies)).unwrap();

    // default: heap 64 MiB → RLIMIT_DATA 64 + 32 MiB, plus the granted-data import allowance
    // (8 × max_context_bytes = 128 MiB); cpu: seen from a tool call, so after `Imported`, when
    // the runner set the program's 1000 ms from the CPU it had used (`program_cpu_secs`: whole
    // seconds, rounded up, hard one more; 1 s when it had used under a millisecond, as a forked
    // runner on a fast host has, else 2 s); stack 16 MiB (fixed, RUNNER_STACK_BYTES, out of the
    // heap budget); no namespaces.
    let mut d = inspect(&engine, "default").await;
    let cpu = d.get(1).cloned();
    assert!(
        cpu == Some(pair("1", "2")) || cpu == Some(pair("2", "3")),
        "default cpu: {cpu:?}"
    );
    if let Some(slot) = d.get_mut(1) {
        *slot = pair("2", "3");
    }
    let f = |b: bool| Value::Bool(b);
    assert_eq!(
        d,
        vec![
            pair("234881024", "234881024"),
            pair("2", "3"),
            pair("8", "8"),
            pair("0", "0"),
            pair("0", "0"),
            pair("16777216", "16777216"),
            Value::Vector(vec![
                f(false),
                f(false),
                f(false),
                f(false),
                f(false),
                f(false)
            ]),
        ],
        "default"
    );

    // strict: heap 16 MiB → RLIMIT_DATA 16 + 32 MiB + the 8 MiB import grant; cpu: under 750 ms
    // used + 250 ms → 1 s; user, net, ipc, uts and
    // mount namespaces of its own (never pid: a runner has no children).
    let s = inspect(&engine, "strict").await;
    assert_eq!(
        s,
        vec![
            pair("58720256", "58720256"),
            pair("1", "2"),
            pair("8", "8"),
            pair("0", "0"),
            pair("0", "0"),
            pair("16777216", "16777216"),
            Value::Vector(vec![f(true), f(true), f(true), f(true), f(true), f(false)]),
        ],
        "strict"
    );
}
