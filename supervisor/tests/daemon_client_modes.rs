//! The same client API in its other modes: the blocking wrapper against a daemon, and the
//! embedded engine (no daemon at all), including cancellation.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::{FailReason, Value};
use ptc_supervisor::client::{BlockingClient, Client, Embedded, Run};
use ptc_supervisor::engine::EngineConfig;
use ptc_supervisor::policy::load_dir;
use std::time::{Duration, Instant};

#[test]
fn blocking_client_against_a_daemon() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = rt.block_on(TestDaemon::start(""));
    let c = BlockingClient::connect(&d.socket).unwrap();
    let step = c.run(Run::new("(* 6 7)")).unwrap();
    assert_eq!(step.return_value, Some(Value::Int(42)));
    let step = c.run(Run::new("(fail \"nope\")")).unwrap_err();
    assert_eq!(step.reason(), Some(FailReason::Failed));
    // A connection to a path nobody listens on is an error, not a hang.
    assert!(BlockingClient::connect(d.dir.join("nothing.sock")).is_err());
    rt.block_on(d.stop());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_client_runs_and_cancels_without_a_daemon() {
    let policies = load_dir(&common::shipped_policies()).unwrap();
    let c = Client::embedded_with(EngineConfig::new(common::real_runner(), policies)).unwrap();
    let step = c.run(Run::new("(+ 1 2)")).await.unwrap();
    assert_eq!(step.return_value, Some(Value::Int(3)));
    let handle = c.start(Run::new("(loop [] (recur))"));
    let cancel = handle.canceller();
    let waiter = tokio::spawn(handle);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    cancel();
    let step = waiter.await.unwrap().unwrap_err();
    assert_eq!(step.reason(), Some(FailReason::Cancelled));
    assert!(
        t.elapsed() < Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_outliving_its_client_ends_instead_of_hanging() {
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    let handle = c.start(Run::new("(loop [] (recur))"));
    drop(c);
    let step = tokio::time::timeout(Duration::from_secs(2), handle)
        .await
        .expect("the run hung after its client was dropped")
        .unwrap_err();
    assert_eq!(
        step.reason(),
        Some(FailReason::RunnerCrashed),
        "{:?}",
        step.fail
    );
    assert!(step.fail.unwrap().message.contains("dropped"));
    d.stop().await;
}
