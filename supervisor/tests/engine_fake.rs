//! Engine behaviour against fake runners (shell scripts replaying pre-encoded frames): spawning,
//! the deadline kill, classification of every kind of ending, tool routing and cancellation.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::protocol::{RunnerToSupervisor, ToolDecl};
use ptc_shared::{Fail, FailReason, Step, Value};
use ptc_supervisor::engine::{BoxFuture, NoTools, RunRequest, ToolHandler};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn imported() -> RunnerToSupervisor {
    RunnerToSupervisor::Imported
}

fn finished(v: i64) -> RunnerToSupervisor {
    RunnerToSupervisor::Finished(Box::new(Step {
        return_value: Some(Value::Int(v)),
        ..Step::default()
    }))
}

async fn run_fake(
    frames: &[RunnerToSupervisor],
    body: &str,
    limits: &str,
    req: RunRequest,
) -> Step {
    run_timed(frames, body, limits, req).await.0
}

/// Runs one request on a fresh engine; also returns how long `execute` alone took.
async fn run_timed(
    frames: &[RunnerToSupervisor],
    body: &str,
    limits: &str,
    req: RunRequest,
) -> (Step, Duration) {
    run_on_fresh_engine("fake", (frames, body), limits, req, Arc::new(NoTools)).await
}

/// Runs `req` with `tools` on a fresh engine over a fake runner replaying `frames` with
/// `body`; also returns how long `execute` alone took.
async fn run_on_fresh_engine(
    tag: &str,
    (frames, body): (&[RunnerToSupervisor], &str),
    limits: &str,
    req: RunRequest,
    tools: Arc<dyn ToolHandler>,
) -> (Step, Duration) {
    let dir = temp_dir(tag);
    let runner = fake_runner(&dir, frames, body);
    let engine = engine(&runner, policies(&dir, limits, 0));
    let t = Instant::now();
    let step = engine.execute(req, tools).await;
    (step, t.elapsed())
}

#[tokio::test]
async fn finished_step_is_accepted_and_measured() {
    let step = run_fake(
        &[ready(), finished(7)],
        "cat $F0 >&3; rf; cat $F1 >&3",
        "",
        request("(+ 3 4)"),
    )
    .await;
    assert_eq!(step.fail, None, "{step:?}");
    assert_eq!(step.return_value, Some(Value::Int(7)));
    assert!(step.usage.duration_ms < 1000);
}

#[tokio::test]
async fn deadline_kill_is_a_timeout_with_elapsed_time() {
    let (step, took) = run_timed(
        &[ready(), imported()],
        "cat $F0 >&3; rf; cat $F1 >&3; exec /bin/sleep 10",
        "timeout_ms = 200",
        request("x"),
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    // Killed at the deadline, not when the runner's 10 s sleep ends; the bound is loose because
    // a loaded host can be slow to schedule the kill (a 300 ms bound failed on a busy machine).
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let fail = step.fail.unwrap();
    assert_eq!(
        fail.details.get_key(&Value::string("limit")),
        Some(&Value::string("timeout_ms"))
    );
    assert!(
        matches!(fail.details.get_key(&Value::string("elapsed_ms")), Some(Value::Int(ms)) if *ms >= 200)
    );
}

#[tokio::test]
async fn sigsys_is_a_sandbox_violation() {
    let step = run_fake(
        &[ready()],
        "cat $F0 >&3; rf; kill -SYS $$",
        "",
        request("x"),
    )
    .await;
    assert_eq!(
        step.reason(),
        Some(FailReason::SandboxViolation),
        "{step:?}"
    );
}

#[tokio::test]
async fn garbage_is_runner_crashed() {
    let body = "cat $F0 >&3; rf; printf '\\000\\000\\000\\003abc' >&3; exec /bin/sleep 30";
    let (step, took) = run_timed(&[ready()], body, "timeout_ms = 60000", request("x")).await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
    assert!(step.fail.unwrap().message.contains("bad frame"));
    // The misbehaving runner is killed at once, not left to the deadline (a minute) or its sleep;
    // the bound is loose for loaded hosts.
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn oversized_frame_header_is_runner_crashed() {
    let body = "cat $F0 >&3; rf; printf '\\377\\377\\377\\377' >&3; exec /bin/sleep 5";
    let step = run_fake(&[ready()], body, "", request("x")).await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
}

#[tokio::test]
async fn exit_without_frame_is_a_crash_and_an_exit_after_finished_is_not() {
    let body = "cat $F0 >&3; rf; echo 'thread main panicked' >&2; exit 3";
    let step = run_fake(&[ready()], body, "", request("x")).await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed));
    let fail = step.fail.unwrap();
    assert!(fail.message.contains("code 3"));
    assert_eq!(
        fail.details.get_key(&Value::string("exit_code")),
        Some(&Value::Int(3))
    );
    // The panic text goes to the supervisor's log, never to the client: only its length.
    assert_eq!(fail.details.get_key(&Value::string("stderr")), None);
    assert_eq!(
        fail.details.get_key(&Value::string("stderr_bytes")),
        Some(&Value::Int(20))
    );
    assert!(!fail.message.contains("panicked"), "{}", fail.message);
    let step = run_fake(
        &[ready(), finished(1)],
        "cat $F0 >&3; rf; cat $F1 >&3; exit 1",
        "",
        request("x"),
    )
    .await;
    assert_eq!(
        step.return_value,
        Some(Value::Int(1)),
        "the Step is complete once Finished arrives; an exit after it is only logged: {step:?}"
    );
}

#[tokio::test]
async fn memory_frame_and_memory_exit_code() {
    let mem = RunnerToSupervisor::MemoryExceeded { peak_bytes: 12345 };
    let step = run_fake(
        &[ready(), mem],
        "cat $F0 >&3; rf; cat $F1 >&3; exit 91",
        "",
        request("x"),
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::MemoryExceeded), "{step:?}");
    assert_eq!(step.usage.memory_bytes, 12345);
    let step = run_fake(&[ready()], "cat $F0 >&3; rf; exit 91", "", request("x")).await;
    assert_eq!(step.reason(), Some(FailReason::MemoryExceeded));
}

#[tokio::test]
async fn runner_that_never_gets_ready_is_reported() {
    let step = run_fake(&[], "exit 92", "", request("x")).await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed));
    let msg = step.fail.unwrap().message;
    assert!(msg.contains("92") && msg.contains("setup_failed"), "{msg}");
}

#[tokio::test]
async fn runner_cannot_claim_supervisor_reasons() {
    let lie = RunnerToSupervisor::Finished(Box::new(Step::failed(
        Fail::new(FailReason::Busy, "x"),
        Value::Nil,
        Vec::new(),
    )));
    let step = run_fake(
        &[ready(), lie],
        "cat $F0 >&3; rf; cat $F1 >&3",
        "",
        request("x"),
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed));
}

#[tokio::test]
async fn looser_limits_and_unknown_policy_are_invalid_requests() {
    let dir = temp_dir("invalid");
    let runner = fake_runner(&dir, &[ready()], "exit 0");
    let engine = engine(&runner, policies(&dir, "timeout_ms = 100", 0));
    let mut req = request("x");
    req.limits = Some(ptc_shared::Limits {
        timeout_ms: 5000,
        ..ptc_shared::Limits::default()
    });
    let memory = Value::from_json(&serde_json::json!({"k": 42})).unwrap();
    req.memory = memory.clone();
    let step = engine.execute(req, Arc::new(NoTools)).await;
    assert_eq!(step.reason(), Some(FailReason::InvalidRequest));
    assert_eq!(
        step.memory, memory,
        "memory is returned unchanged on failure"
    );
    let fail = step.fail.unwrap();
    assert!(fail.message.contains("`timeout_ms` of 5000") && fail.message.contains("(100)"));
    let mut req = request("x");
    req.policy = Some("nope".into());
    assert_eq!(
        engine.execute(req, Arc::new(NoTools)).await.reason(),
        Some(FailReason::InvalidRequest)
    );
}

#[tokio::test]
async fn program_over_the_size_limit_never_reaches_a_runner() {
    let step = run_fake(
        &[ready()],
        "exit 0",
        "max_program_bytes = 10",
        request("(+ 1 2 3 4 5 6 7 8)"),
    )
    .await;
    assert_eq!(step.reason(), Some(FailReason::LimitExceeded));
}

/// Answers `echo` with its args, `big` with a large string, and never answers `hang`.
struct TestTools;

impl ToolHandler for TestTools {
    fn call(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async move {
            match name.as_str() {
                "echo" => Ok(args),
                "big" => Ok(Value::string("x".repeat(10_000))),
                "hang" => std::future::pending().await,
                _ => Err("no such tool".into()),
            }
        })
    }
}

fn tool_call(id: u64, name: &str) -> RunnerToSupervisor {
    RunnerToSupervisor::ToolCall {
        id,
        name: name.into(),
        args: Value::Int(i64::try_from(id).unwrap()),
    }
}

fn with_tools(names: &[&str]) -> RunRequest {
    let mut req = request("x");
    req.tools = names
        .iter()
        .map(|n| ToolDecl {
            name: n.to_string(),
            signature: None,
            description: None,
        })
        .collect();
    req
}

async fn run_tools(
    frames: &[RunnerToSupervisor],
    body: &str,
    limits: &str,
    req: RunRequest,
) -> (Step, Duration) {
    run_on_fresh_engine("tools", (frames, body), limits, req, Arc::new(TestTools)).await
}

#[tokio::test]
async fn tool_calls_are_routed_and_recorded() {
    let frames = [
        ready(),
        imported(),
        tool_call(1, "echo"),
        tool_call(2, "nope"),
        finished(1),
    ];
    // Each ToolResult is at least one byte: wait for it before sending the next frame.
    let body = "cat $F0 >&3; rf; cat $F1 $F2 >&3; rf; cat $F3 >&3; rf; cat $F4 >&3";
    let (step, _) = run_tools(&frames, body, "", with_tools(&["echo"])).await;
    assert_eq!(step.fail, None, "{step:?}");
    assert_eq!(step.tool_calls.len(), 2);
    assert_eq!(step.usage.tool_calls, 2);
    assert_eq!(step.tool_calls[0].name, "echo");
    assert_eq!(step.tool_calls[0].result, Some(Value::Int(1)));
    assert_eq!(step.tool_calls[1].error.as_deref(), Some("tool_not_found"));
}

#[tokio::test]
async fn tool_limits_are_enforced_by_the_supervisor() {
    let frames = [
        ready(),
        imported(),
        tool_call(1, "echo"),
        tool_call(2, "echo"),
        finished(1),
    ];
    let body = "cat $F0 >&3; rf; cat $F1 $F2 >&3; rf; cat $F3 >&3; rf; cat $F4 >&3";
    let (step, _) = run_tools(&frames, body, "max_tool_calls = 1", with_tools(&["echo"])).await;
    assert_eq!(step.tool_calls.len(), 2);
    assert!(
        step.tool_calls[1]
            .error
            .as_deref()
            .unwrap()
            .contains("limit")
    );
    let frames = [ready(), imported(), tool_call(1, "big"), finished(1)];
    let body = "cat $F0 >&3; rf; cat $F1 $F2 >&3; rf; cat $F3 >&3";
    let (step, _) = run_tools(
        &frames,
        body,
        "max_tool_result_bytes = 1000",
        with_tools(&["big"]),
    )
    .await;
    assert!(
        step.tool_calls[0]
            .error
            .as_deref()
            .unwrap()
            .contains("exceeds"),
        "{step:?}"
    );
}

#[tokio::test]
async fn tool_that_never_answers_times_out() {
    let frames = [ready(), imported(), tool_call(1, "hang")];
    let body = "cat $F0 >&3; rf; cat $F1 $F2 >&3; exec /bin/sleep 10";
    let (step, took) = run_tools(&frames, body, "timeout_ms = 150", with_tools(&["hang"])).await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    assert!(
        took >= Duration::from_millis(150) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(step.tool_calls.len(), 1);
    assert!(
        step.tool_calls[0]
            .error
            .as_deref()
            .unwrap()
            .contains("deadline")
    );
}

#[tokio::test]
async fn dropping_an_execution_kills_and_reaps_its_runner() {
    let dir = temp_dir("cancel");
    let pid_file = dir.join("pid");
    let body = format!(
        "echo $$ > {}; cat $F0 >&3; exec /bin/sleep 30",
        pid_file.display()
    );
    let runner = fake_runner(&dir, &[ready()], &body);
    let engine = engine(&runner, policies(&dir, "timeout_ms = 60000", 0));
    let fut = engine.execute(request("x"), Arc::new(NoTools));
    // Poll the execution until its runner is observed alive, then drop it.
    let proc_dir = {
        tokio::pin!(fut);
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let alive = std::fs::read_to_string(&pid_file)
                .ok()
                .filter(|p| !p.trim().is_empty())
                .map(|p| std::path::PathBuf::from(format!("/proc/{}", p.trim())))
                .filter(|d| d.exists());
            if let Some(d) = alive {
                break d;
            }
            assert!(Instant::now() < until, "the runner never started");
            let pending = tokio::time::timeout(Duration::from_millis(10), &mut fut).await;
            assert!(pending.is_err(), "the execution ended on its own");
        }
    };
    // Killed and reaped (a zombie would still have a /proc entry).
    let until = Instant::now() + Duration::from_millis(500);
    while proc_dir.exists() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        !proc_dir.exists(),
        "runner {} outlived its cancelled execution",
        proc_dir.display()
    );
}

#[tokio::test]
async fn warm_pool_fills_and_is_used_once_per_runner() {
    let dir = temp_dir("pool");
    let counter = dir.join("spawned");
    let body = format!(
        "echo x >> {}; cat $F0 >&3; rf; cat $F1 >&3",
        counter.display()
    );
    let runner = fake_runner(&dir, &[ready(), finished(5)], &body);
    let engine = engine(&runner, policies(&dir, "", 2));
    assert!(engine.wait_warm(Duration::from_secs(5)).await);
    assert_eq!(engine.warm_count("default"), 2);
    for _ in 0..3 {
        let step = engine.execute(request("x"), Arc::new(NoTools)).await;
        assert_eq!(step.return_value, Some(Value::Int(5)), "{step:?}");
    }
    assert!(engine.wait_warm(Duration::from_secs(5)).await);
    // 3 executions, each on its own runner, plus 2 warm ones still waiting.
    let spawned = std::fs::read_to_string(&counter).unwrap().lines().count();
    assert_eq!(spawned, 5);
}

#[tokio::test]
async fn pooled_runners_that_failed_their_setup_are_skipped() {
    let dir = temp_dir("pool-bad");
    let counter = dir.join("spawned");
    // The first two runners (the pool's fill) die before `Ready`; later ones work.
    let body = format!(
        "n=$(cat {c} 2>/dev/null | wc -l); echo x >> {c}; [ \"$n\" -lt 2 ] && exit 92; cat $F0 >&3; rf; cat $F1 >&3",
        c = counter.display()
    );
    let runner = fake_runner(&dir, &[ready(), finished(5)], &body);
    let engine = engine(&runner, policies(&dir, "", 2));
    let until = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(&counter).map_or(0, |t| t.lines().count()) < 2 {
        assert!(Instant::now() < until, "the pool never started its runners");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let step = engine.execute(request("x"), Arc::new(NoTools)).await;
    assert_eq!(step.return_value, Some(Value::Int(5)), "{step:?}");
    // The pool refills with working runners, and only confirmed ones count as warm.
    assert!(engine.wait_warm(Duration::from_secs(5)).await);
    assert_eq!(engine.warm_count("default"), 2);
}

#[tokio::test]
async fn unenforceable_policies_are_refused_unless_best_effort() {
    let dir = temp_dir("enforce");
    let runner = fake_runner(&dir, &[ready()], "exit 0");
    std::fs::write(dir.join("f.json"), FILTER).unwrap();
    let policy = |best_effort: bool| {
        let text = format!(
            "[isolation]\nseccomp = \"f.json\"\nlandlock = \"off\"\nnamespaces = [\"pid\", \"net\"]\nbest_effort = {best_effort}\n"
        );
        let p =
            ptc_supervisor::policy::Policy::from_toml("default", &dir.join("default.toml"), &text)
                .unwrap();
        std::collections::BTreeMap::from([("default".to_string(), p)])
    };
    // A pid namespace is never enforceable (a runner has no children to contain).
    let err = ptc_supervisor::engine::Engine::new(ptc_supervisor::engine::EngineConfig::new(
        &runner,
        policy(false),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("default") && err.contains("pid namespace"),
        "{err}"
    );
    let engine = engine(&runner, policy(true));
    let e = engine.enforcement("default").unwrap();
    let net_here = ptc_supervisor::check::host_report()
        .namespace_available(ptc_supervisor::policy::Namespace::Net);
    assert_eq!(
        e.namespaces
            .contains(&ptc_supervisor::policy::Namespace::Net),
        net_here,
        "{e:?}"
    );
    assert!(
        !e.namespaces
            .contains(&ptc_supervisor::policy::Namespace::Pid),
        "{e:?}"
    );
    assert!(
        e.skipped.iter().any(|s| s.contains("pid namespace")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_ready_frame_that_arrives_in_two_parts_is_waited_for() {
    let dir = temp_dir("pool-split");
    // The header and the first byte of `Ready`, a pause, then the rest: a pool that looks at its
    // runner in between must wait for the whole frame, not take the part for a bad frame.
    let body =
        "/usr/bin/head -c 5 $F0 >&3; sleep 0.5; /usr/bin/tail -c +6 $F0 >&3; rf; cat $F1 >&3";
    let runner = fake_runner(&dir, &[ready(), finished(5)], body);
    let engine = engine(&runner, policies(&dir, "", 1));
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    assert_eq!(engine.warm_count("default"), 1);
    let step = engine.execute(request("x"), Arc::new(NoTools)).await;
    assert_eq!(step.return_value, Some(Value::Int(5)), "{step:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Threads of this process named `name` (from /proc/self/task/*/comm).
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .count()
}

#[tokio::test]
async fn a_pool_that_cannot_grow_starts_no_trim_thread() {
    // Every engine of this binary pins its pools at their `warm` (`common::engine`), so none may
    // have started the thread that shrinks grown pools back to their floor.
    let dir = temp_dir("no-trim");
    let runner = fake_runner(&dir, &[ready()], "cat $F0 >&3; rf");
    let engine = engine(&runner, policies(&dir, "", 2));
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    assert_eq!(threads_named("ptc-pool-trim"), 0);
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}
