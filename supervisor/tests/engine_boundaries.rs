//! Limits at their boundaries in a real sandboxed runner (engine) and through a real daemon on a
//! temp socket: a program that needs exactly N passes under N and fails under N−1 with the exact
//! reason and `details.limit`. N comes from the run's own usage (steps, tool calls) or from the
//! printed result, and the boundary is then checked literally at N and N−1. The heap and the
//! wall clock are checked with tolerances stated as multiples.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::protocol::ToolDecl;
use ptc_shared::{FailReason, Limits, Step, Value};
use ptc_supervisor::client::{Client, Run};
use ptc_supervisor::engine::{BoxFuture, Engine, EngineConfig, RunRequest, ToolHandler};
use ptc_supervisor::policy::PolicySource;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct One;

impl ToolHandler for One {
    fn call(&self, name: String, _args: Value) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async move {
            if name == "slow" {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            Ok(Value::Int(1))
        })
    }
}

fn engine() -> Engine {
    let mut policies = PolicySource::BuiltIn.load().unwrap();
    for p in policies.values_mut() {
        p.warm = 0;
    }
    Engine::new(EngineConfig::new(common::real_runner(), policies)).unwrap()
}

async fn run(engine: &Engine, program: &str, limits: Limits) -> Step {
    let req = RunRequest {
        program: program.into(),
        tools: ["t", "slow"]
            .map(|name| ToolDecl {
                name: name.into(),
                signature: None,
                description: None,
            })
            .to_vec(),
        limits: Some(limits),
        ..RunRequest::default()
    };
    engine.execute(req, Arc::new(One)).await
}

fn assert_limit(step: &Step, reason: FailReason, limit: &str) {
    let fail = step
        .fail
        .as_ref()
        .unwrap_or_else(|| panic!("expected {limit} to fail: {step:?}"));
    assert_eq!(fail.reason, reason, "{}", fail.message);
    assert_eq!(
        fail.details.get_key(&Value::string("limit")),
        Some(&Value::string(limit)),
        "{fail:?}"
    );
}

/// Runs at `n` (must pass) and `n - 1` (must fail with `limit`).
async fn at_boundary(e: &Engine, program: &str, n: u64, set: fn(&mut Limits, u64), limit: &str) {
    let mut l = Limits::default();
    set(&mut l, n);
    let ok = run(e, program, l).await;
    assert!(
        ok.fail.is_none(),
        "{program} under {limit} = {n}: {:?}",
        ok.fail
    );
    set(&mut l, n - 1);
    assert_limit(&run(e, program, l).await, FailReason::LimitExceeded, limit);
}

#[tokio::test]
async fn sandboxed_limits_hold_exactly_at_their_boundary() {
    let e = engine();
    let steps = "(loop [i 0] (if (< i 100) (recur (inc i)) i))";
    let needed = run(&e, steps, Limits::default()).await.usage.eval_steps;
    assert!(needed >= 300, "{needed}");
    at_boundary(&e, steps, needed, |l, n| l.max_steps = n, "max_steps").await;

    let calls = "(dotimes [i 5] (tool/t {}))";
    at_boundary(
        &e,
        calls,
        5,
        |l, n| l.max_tool_calls = u32::try_from(n).unwrap(),
        "max_tool_calls",
    )
    .await;

    // "aaaa…" (100 characters) prints as 102 bytes.
    let result = "(apply str (repeat 100 \"a\"))";
    at_boundary(
        &e,
        result,
        102,
        |l, n| l.max_result_bytes = n,
        "max_result_bytes",
    )
    .await;

    let iterations = "(count (range 50))";
    at_boundary(
        &e,
        iterations,
        50,
        |l, n| l.max_iterations = n,
        "max_iterations",
    )
    .await;
}

#[tokio::test]
async fn context_size_holds_at_its_boundary() {
    // Checked by the engine before any runner: bisect the limit, then require the boundary to be
    // at least the context's content and at most a small multiple of it.
    let e = engine();
    let mut ctx = ptc_shared::value::Map::new();
    ctx.insert(Value::string("s"), Value::string("x".repeat(1000)));
    let ctx = Value::Map(Box::new(ctx));
    let attempt = |n: u64| {
        let req = RunRequest {
            program: "(count data/s)".into(),
            context: (&ctx).into(),
            limits: Some(Limits {
                max_context_bytes: n,
                ..Limits::default()
            }),
            ..RunRequest::default()
        };
        let e = &e;
        async move { e.execute(req, Arc::new(One)).await }
    };
    let (mut lo, mut hi) = (0u64, 100_000u64);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if attempt(mid).await.fail.is_none() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    assert!(
        (1000..1100).contains(&lo),
        "a 1000-byte string needs {lo} context bytes"
    );
    assert_eq!(attempt(lo).await.return_value, Some(Value::Int(1000)));
    assert_limit(
        &attempt(lo - 1).await,
        FailReason::LimitExceeded,
        "max_context_bytes",
    );
}

#[tokio::test]
async fn heap_and_wall_clock_hold_within_stated_multiples() {
    let e = engine();
    // About 8 MiB live at the peak (a string doubled to 4 MiB and its copy).
    let grow = "(count (loop [s \"x\" i 0] (if (< i 22) (recur (str s s) (inc i)) s)))";
    let big = run(&e, grow, Limits::default()).await;
    assert_eq!(
        big.return_value,
        Some(Value::Int(1 << 22)),
        "{:?}",
        big.fail
    );
    let peak = big.usage.memory_bytes;
    // Passes with 4× its peak, fails with half of it.
    let with_heap = |h: u64| Limits {
        heap_bytes: h.max(4 << 20),
        ..Limits::default()
    };
    assert!(run(&e, grow, with_heap(peak * 4)).await.fail.is_none());
    let half = run(&e, grow, with_heap(peak / 2)).await;
    assert_limit(&half, FailReason::MemoryExceeded, "heap_bytes");

    // The deadline (the run waits on a tool that answers after 30 s): never before it, and
    // within 4× of it even on a loaded 2-core host.
    let t = Instant::now();
    let l = Limits {
        timeout_ms: 300,
        ..Limits::default()
    };
    let step = run(&e, "(tool/slow {})", l).await;
    let took = t.elapsed();
    assert_limit(&step, FailReason::Timeout, "timeout_ms");
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_millis(300 * 4), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_daemon_the_step_budget_holds_at_its_boundary() {
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let program = "(loop [i 0] (if (< i 100) (recur (inc i)) i))";
    let needed = c.run(Run::new(program)).await.unwrap().usage.eval_steps;
    let with = |n| Limits {
        max_steps: n,
        ..Limits::default()
    };
    let ok = c.run(Run::new(program).limits(with(needed))).await.unwrap();
    assert_eq!(ok.return_value, Some(Value::Int(100)));
    let over = c
        .run(Run::new(program).limits(with(needed - 1)))
        .await
        .unwrap_err();
    assert_limit(&over, FailReason::LimitExceeded, "max_steps");
    d.stop().await;
}
