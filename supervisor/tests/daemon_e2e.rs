//! End to end through a real daemon (in this process, on a temp socket, real hardened runners):
//! tools called back into the test, signatures, every failure reason intact at the client,
//! cancel, disconnect mid-run, busy, policy access, and many concurrent clients.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::{FailReason, Limits, Value};
use ptc_supervisor::client::{Client, Run, Tool};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Timing assertions (kill within 100 ms, busy at once) must not share the two cores with the
/// 12,800-run stress test: those tests and the stress test take this lock.
static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn reason(client: &Client, run: Run) -> FailReason {
    let step = client.run(run).await.unwrap_err();
    step.reason().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_run_in_the_test_process_and_results_come_back() {
    let d = TestDaemon::start("").await;
    let client = Client::connect(&d.socket).await.unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let step = client
        .run(
            Run::new("(->> (tool/orders {:status \"open\"}) (map :total) (reduce +))")
                .context(json!({"region": "eu"}))
                .tool(
                    Tool::new("orders", move |args: Value| {
                        let seen = Arc::clone(&seen);
                        async move {
                            seen.fetch_add(1, Ordering::SeqCst);
                            let status = args.to_json().unwrap()["status"].clone();
                            assert_eq!(status, json!("open"));
                            Ok::<_, String>(json!([{"total": 5}, {"total": 7}]))
                        }
                    })
                    .signature("(status :string) -> [{total :int}]")
                    .description("Open orders"),
                )
                .signature("() -> :int")
                .timeout(Duration::from_millis(900)),
        )
        .await;
    let step = step.unwrap_or_else(|s| panic!("{:?}", s.fail));
    assert_eq!(step.return_value, Some(Value::Int(12)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(step.tool_calls.len(), 1);
    // A tool error is catchable by the program and reported with its message.
    let step = client
        .run(
            Run::new("(try (tool/boom {}) (catch Exception e (str \"caught: \" (ex-message e))))")
                .tool(Tool::new(
                    "boom",
                    |_| async move { Err::<Value, _>("kaput") },
                )),
        )
        .await
        .unwrap_or_else(|s| panic!("{:?}", s.fail));
    let text = format!("{:?}", step.return_value);
    assert!(text.contains("kaput"), "{text}");
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_reasons_arrive_intact() {
    let _serial = TIMING.lock().await;
    let d = TestDaemon::start("[policies_by_uid]\n4242 = [\"strict\"]").await;
    let c = Client::connect(&d.socket).await.unwrap();
    assert_eq!(reason(&c, Run::new("(+ 1")).await, FailReason::ParseError);
    assert_eq!(
        reason(&c, Run::new("(fail \"no\")")).await,
        FailReason::Failed
    );
    assert_eq!(
        reason(&c, Run::new("(tool/nope {})")).await,
        FailReason::ToolNotFound
    );
    let t = Instant::now();
    let step = c
        .run(Run::new("(loop [] (recur))").timeout(Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{:?}", step.fail);
    assert!(
        t.elapsed() < Duration::from_millis(600),
        "{:?}",
        t.elapsed()
    );
    let step = c
        .run(Run::new("(loop [s \"x\"] (recur (str s s)))"))
        .await
        .unwrap_err();
    assert_eq!(step.reason(), Some(FailReason::MemoryExceeded));
    assert!(step.usage.memory_bytes > 32 << 20, "{:?}", step.usage);
    let deep = reason(&c, Run::new("(defn f [n] (+ 1 (f n))) (f 1)")).await;
    assert!(
        matches!(deep, FailReason::LimitExceeded | FailReason::EvalError),
        "{deep}"
    );
    let steps = Limits {
        max_steps: 1000,
        ..tight_strict()
    };
    let step = c
        .run(
            Run::new("(loop [i 0] (recur (inc i)))")
                .policy("strict")
                .limits(steps),
        )
        .await
        .unwrap_err();
    assert_eq!(
        step.reason(),
        Some(FailReason::LimitExceeded),
        "{:?}",
        step.fail
    );
    assert_eq!(
        reason(&c, Run::new("1").policy("no-such-policy")).await,
        FailReason::InvalidRequest
    );
    assert_eq!(
        reason(
            &c,
            Run::new("1").limits(Limits {
                timeout_ms: u64::MAX,
                ..Limits::default()
            })
        )
        .await,
        FailReason::InvalidRequest
    );
    d.stop().await;
}

/// Limits no looser than the shipped strict policy (read from the daemon's own policy files).
fn tight_strict() -> Limits {
    let p = ptc_supervisor::policy::load_dir(&common::shipped_policies()).unwrap();
    p["strict"].limits
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signature_failures_arrive_as_validation_errors() {
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let step = c
        .run(Run::new("(+ 1 2)").signature("() -> :string"))
        .await
        .unwrap_err();
    assert_eq!(
        step.reason(),
        Some(FailReason::ValidationError),
        "{:?}",
        step.fail
    );
    assert_eq!(step.signature.as_deref(), Some("() -> :string"));
    let ok = c
        .run(Run::new("(+ 1 2)").signature("() -> :int"))
        .await
        .unwrap();
    assert_eq!(ok.signature.as_deref(), Some("() -> :int"));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_denied_for_a_policy_the_uid_may_not_use() {
    let uid = nix::unistd::geteuid().as_raw();
    let d = TestDaemon::start(&format!("[policies_by_uid]\n{uid} = [\"strict\"]")).await;
    let c = Client::connect(&d.socket).await.unwrap();
    assert_eq!(
        reason(&c, Run::new("1")).await,
        FailReason::PermissionDenied
    );
    let ok = c.run(Run::new("(+ 1 1)").policy("strict")).await.unwrap();
    assert_eq!(ok.return_value, Some(Value::Int(2)));
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_kills_the_runner_and_answers_cancelled() {
    let _serial = TIMING.lock().await;
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let handle = c.start(Run::new("(loop [] (recur))"));
    let cancel = handle.canceller();
    let waiter = tokio::spawn(handle);
    let pid = busy_runner(Duration::from_millis(800))
        .await
        .expect("no busy runner");
    let t = Instant::now();
    cancel();
    let step = waiter.await.unwrap().unwrap_err();
    assert_eq!(
        step.reason(),
        Some(FailReason::Cancelled),
        "{:?}",
        step.fail
    );
    assert!(gone_within(pid, Duration::from_millis(300)).await.is_some());
    assert!(
        t.elapsed() < Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    // The connection is still good.
    assert_eq!(
        c.run(Run::new("7")).await.unwrap().return_value,
        Some(Value::Int(7))
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_mid_run_kills_the_runner_within_100ms() {
    let _serial = TIMING.lock().await;
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let running = tokio::spawn({
        let c = c.clone();
        async move { c.run(Run::new("(loop [] (recur))")).await }
    });
    let pid = busy_runner(Duration::from_millis(800))
        .await
        .expect("no busy runner");
    // Dropping every handle closes the connection (the pending run is aborted with it).
    running.abort();
    drop(c);
    let took = gone_within(pid, Duration::from_millis(500)).await;
    let took = took.expect("runner still alive 500 ms after the disconnect");
    assert!(
        took <= Duration::from_millis(100),
        "runner gone after {took:?}"
    );
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_uid_gets_busy_at_once() {
    let _serial = TIMING.lock().await;
    let d = TestDaemon::start("per_uid_max = 1\nper_uid_queue = 0").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let long = c.start(Run::new("(loop [] (recur))").timeout(Duration::from_millis(600)));
    let cancel = long.canceller();
    let long = tokio::spawn(long);
    busy_runner(Duration::from_millis(800))
        .await
        .expect("no busy runner");
    let t = Instant::now();
    assert_eq!(reason(&c, Run::new("1")).await, FailReason::Busy);
    assert!(
        t.elapsed() < Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
    cancel();
    let _ = long.await.unwrap();
    assert!(c.run(Run::new("1")).await.is_ok());
    d.stop().await;
}

/// 64 concurrent clients, each with its own connection, each checking that every Step it gets
/// is the answer to its own request: 64 × 200 = 12,800 runs (about 28 s on a loaded 2-core
/// machine with debug builds). `PTC_STRESS_RUNS` changes the runs per client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_clients_get_their_own_answers() {
    let _serial = TIMING.lock().await;
    let runs: usize = std::env::var("PTC_STRESS_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let d = TestDaemon::start("per_uid_max = 64\nper_uid_queue = 64").await;
    let mut tasks = tokio::task::JoinSet::new();
    for client_no in 0..64i64 {
        let socket = d.socket.clone();
        tasks.spawn(async move {
            let c = Client::connect(&socket).await.unwrap();
            for i in 0..i64::try_from(runs).unwrap() {
                let expect = client_no * 1_000_000 + i;
                let run = Run::new(format!("(+ {} {i})", client_no * 1_000_000));
                let step = c.run(run).await.unwrap_or_else(|s| panic!("{:?}", s.fail));
                assert_eq!(step.return_value, Some(Value::Int(expect)));
            }
            runs
        });
    }
    let mut total = 0;
    while let Some(n) = tasks.join_next().await {
        total += n.unwrap();
    }
    assert_eq!(total, 64 * runs);
    d.stop().await;
}
