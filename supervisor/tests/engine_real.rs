//! The engine with the real, hardened `ptc-runner` and the shipped policies: results, every limit
//! hit on purpose, a runner killed from outside, and a tool that never answers.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::protocol::ToolDecl;
use ptc_shared::{FailReason, Limits, Step, Value};
use ptc_supervisor::engine::{BoxFuture, Engine, EngineConfig, NoTools, RunRequest, ToolHandler};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn shipped_engine() -> Engine {
    let policies = load_dir(&shipped_policies()).unwrap();
    Engine::new(EngineConfig::new(real_runner(), policies)).unwrap()
}

/// The shipped filter with a clock no loaded host reaches: for tests that wait for another limit
/// or an outside event. The policies live in memory once loaded, so the directory may go.
fn unhurried_engine(tag: &str) -> Engine {
    let dir = shipped_filter_dir(
        tag,
        "timeout_ms = 60000\ncpu_ms = 60000\nmax_steps = 1000000000000",
        0,
    );
    Engine::new(EngineConfig::new(real_runner(), load_dir(&dir).unwrap())).unwrap()
}

/// `engine`'s runner that is spinning: the one whose CPU time grows across two consecutive looks
/// (idle pooled runners and one in setup do not), waited for rather than slept for. Only this
/// engine's zygotes' children are looked at: the tests of this file run in parallel, and another
/// test's spinning runner is a child of this process too.
async fn spinning_runner(engine: &Engine) -> Option<i32> {
    let runners = || -> Vec<i32> {
        engine
            .zygote_pids()
            .into_iter()
            .flat_map(children_of)
            .collect()
    };
    let looks = Duration::from_millis(50);
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let t0: Vec<(i32, u64)> = runners().into_iter().map(|p| (p, cpu_ticks(p))).collect();
        tokio::time::sleep(looks).await;
        let t1: Vec<u64> = t0.iter().map(|(p, _)| cpu_ticks(*p)).collect();
        tokio::time::sleep(looks).await;
        let grew = t0
            .iter()
            .zip(&t1)
            .find(|((p, a), b)| **b > *a && cpu_ticks(*p) > **b);
        if let Some(((p, _), _)) = grew {
            return Some(*p);
        }
    }
    None
}

async fn run(engine: &Engine, program: &str) -> Step {
    engine.execute(request(program), Arc::new(NoTools)).await
}

#[tokio::test]
async fn trivial_program_returns_its_value_with_usage() {
    let engine = shipped_engine();
    let step = run(&engine, "(+ 1 2)").await;
    assert_eq!(step.fail, None, "{step:?}");
    assert_eq!(step.return_value, Some(Value::Int(3)));
    assert!(step.usage.memory_bytes > 0);
}

#[tokio::test]
async fn infinite_loop_times_out_at_the_deadline_within_a_multiple_of_it() {
    let engine = shipped_engine();
    let mut req = request("(loop [] (recur))");
    req.limits = Some(Limits {
        timeout_ms: 300,
        ..Limits::default()
    });
    let t = Instant::now();
    let step = engine.execute(req, Arc::new(NoTools)).await;
    let took = t.elapsed();
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    // Never early; late by at most a multiple (a loaded 2-core debug host, not a few ms of slack).
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert!(took < Duration::from_millis(300 * 4), "{took:?}");
}

#[tokio::test]
async fn memory_bomb_is_memory_exceeded_and_the_engine_keeps_serving() {
    // The clock is lifted: on a loaded host the deadline could otherwise come first.
    let engine = unhurried_engine("memory-bomb");
    // Doubling a string: 64 MiB after 26 steps, far inside every other limit.
    let step = run(&engine, "(loop [s \"x\"] (recur (str s s)))").await;
    assert_eq!(
        step.reason(),
        Some(FailReason::MemoryExceeded),
        "{:?}",
        step.fail
    );
    assert!(
        step.usage.memory_bytes > 32 << 20,
        "peak {}",
        step.usage.memory_bytes
    );
    assert_eq!(
        run(&engine, "(* 6 7)").await.return_value,
        Some(Value::Int(42))
    );
}

#[tokio::test]
async fn deep_recursion_is_a_clean_error() {
    let engine = shipped_engine();
    let step = run(&engine, "(defn f [n] (+ 1 (f n))) (f 1)").await;
    let reason = step.reason().unwrap();
    assert!(
        matches!(reason, FailReason::LimitExceeded | FailReason::EvalError),
        "{step:?}"
    );
    assert_eq!(
        run(&engine, "(+ 1 1)").await.return_value,
        Some(Value::Int(2))
    );
}

#[tokio::test]
async fn ten_megabytes_of_println_are_truncated() {
    let engine = shipped_engine();
    let line = "x".repeat(100);
    let program = format!("(dotimes [i 100000] (println \"{line}\"))");
    let step = run(&engine, &program).await;
    let total: usize = step.prints.iter().map(String::len).sum();
    assert!(total <= (64 << 10) + 512, "prints total {total}");
    assert!(!step.prints.is_empty(), "{step:?}");
}

#[tokio::test]
async fn runner_killed_from_outside_is_runner_crashed() {
    let engine = Arc::new(unhurried_engine("killed"));
    let e2 = Arc::clone(&engine);
    let task = tokio::spawn(async move {
        e2.execute(request("(loop [] (recur))"), Arc::new(NoTools))
            .await
    });
    let pid = spinning_runner(&engine)
        .await
        .expect("no spinning runner found in 30 s");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL).unwrap();
    let step = task.await.unwrap();
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
}

struct Tools;

impl ToolHandler for Tools {
    fn call(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async move {
            match name.as_str() {
                "hang" => std::future::pending().await,
                _ => Ok(Value::Vector(vec![args, Value::Int(5)])),
            }
        })
    }
}

#[tokio::test]
async fn tools_work_and_a_tool_that_never_answers_times_out() {
    let engine = shipped_engine();
    let decl = |n: &str| ToolDecl {
        name: n.into(),
        signature: None,
        description: None,
    };
    let mut req = request("(count (tool/echo {:a 1}))");
    req.tools = vec![decl("echo"), decl("hang")];
    let step = engine.execute(req.clone(), Arc::new(Tools)).await;
    assert_eq!(step.return_value, Some(Value::Int(2)), "{step:?}");
    assert_eq!(step.tool_calls.len(), 1);
    req.program = "(tool/hang {})".into();
    req.limits = Some(Limits {
        timeout_ms: 200,
        ..Limits::default()
    });
    let t = Instant::now();
    let step = engine.execute(req, Arc::new(Tools)).await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    // Never early; late by at most a multiple (a bound of 1.5x failed on a loaded 2-core host).
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < Duration::from_millis(200 * 10), "{took:?}");
}

#[tokio::test]
async fn strict_policy_runs_and_requests_cannot_loosen_it() {
    let engine = shipped_engine();
    let mut req: RunRequest = request("(+ 1 2)");
    req.policy = Some("strict".into());
    let step = engine.execute(req.clone(), Arc::new(NoTools)).await;
    assert_eq!(step.return_value, Some(Value::Int(3)), "{step:?}");
    req.limits = Some(Limits::default());
    assert_eq!(
        engine.execute(req, Arc::new(NoTools)).await.reason(),
        Some(FailReason::InvalidRequest)
    );
}

#[tokio::test]
async fn cpu_rlimit_is_a_timeout_with_limit_cpu() {
    // Wall clock far past the 1 s CPU limit (a loaded 2-core host gives one process a fraction of a
    // core), so the kernel's SIGXCPU ends the run, not our kill.
    let dir = temp_dir("cpu");
    let filter = shipped_policies().join("seccomp/runner.json");
    let text = format!(
        "[limits]\ntimeout_ms = 15000\ncpu_ms = 1000\nmax_steps = 1000000000000\n[isolation]\nseccomp = \"{}\"\nlandlock = \"best_effort\"\n[pool]\nwarm = 0\n",
        filter.display()
    );
    std::fs::write(dir.join("default.toml"), text).unwrap();
    let engine = Engine::new(EngineConfig::new(real_runner(), load_dir(&dir).unwrap())).unwrap();
    let step = run(&engine, "(loop [] (recur))").await;
    let fail = step.fail.clone().unwrap();
    assert_eq!(fail.reason, FailReason::Timeout, "{step:?}");
    assert_eq!(
        fail.details.get_key(&Value::string("limit")),
        Some(&Value::string("cpu")),
        "{step:?}"
    );
    // /proc's utime+stime of the zombie is tick-sampled: it has read as low as 810 ms here after the
    // kernel's 1 s SIGXCPU on a loaded host, so only check that it is of that order.
    assert!(step.usage.cpu_ms >= 500, "{step:?}");
}

/// `echo` returns its args; `wrong` returns a string whatever its signature says.
struct SigTools;

impl ToolHandler for SigTools {
    fn call(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async move {
            match name.as_str() {
                "echo" => Ok(args
                    .get_key(&Value::string("n"))
                    .cloned()
                    .unwrap_or_default()),
                _ => Ok(Value::string("not an int")),
            }
        })
    }
}

#[tokio::test]
async fn signatures_are_checked_around_tools_and_on_the_result() {
    let engine = shipped_engine();
    let decl = |n: &str| ToolDecl {
        name: n.into(),
        signature: Some("(n :int) -> :int".into()),
        description: None,
    };
    let mut req = request("(+ 1 (tool/echo {:n \"41\"}))");
    req.tools = vec![decl("echo"), decl("wrong")];
    let step = engine.execute(req.clone(), Arc::new(SigTools)).await;
    assert_eq!(
        step.return_value,
        Some(Value::Int(42)),
        "the argument was coerced to an int: {step:?}"
    );
    assert_eq!(
        step.tool_calls[0].args.get_key(&Value::string("n")),
        Some(&Value::Int(41))
    );
    req.program = "(tool/wrong {:n 1})".into();
    let step = engine.execute(req.clone(), Arc::new(SigTools)).await;
    assert_eq!(step.reason(), Some(FailReason::ValidationError), "{step:?}");
    req.program = "\"a string\"".into();
    req.signature = Some("() -> :int".into());
    let step = engine.execute(req, Arc::new(SigTools)).await;
    assert_eq!(step.reason(), Some(FailReason::ValidationError), "{step:?}");
    assert_eq!(step.signature.as_deref(), Some("() -> :int"));
}
