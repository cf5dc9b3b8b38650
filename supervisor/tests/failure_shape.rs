//! The failed-Step rule, in every mode: whatever the reason, a failed run gives back the input
//! memory unchanged, an empty `memory_delta` and the input history (`Step::failed`), in-process,
//! sandboxed (embedded engine) and through a daemon alike, even when the program defined
//! something before it failed.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::{FailReason, Step, Value};
use ptc_supervisor::client::{Client, Embedded, Run, Tool};
use ptc_supervisor::engine::EngineConfig;
use ptc_supervisor::policy::load_dir;
use std::time::Duration;

fn memory() -> Value {
    Value::from_json(&serde_json::json!({"x": 1})).unwrap()
}

fn history() -> Vec<Value> {
    vec![Value::Int(5), Value::string("earlier")]
}

/// A run of `program` with the memory and history every case starts from.
fn run(program: &str) -> Run {
    Run::new(format!("(def y 2) {program}"))
        .memory(memory())
        .history(history())
        .tool(Tool::sync("boom", |_| Err::<Value, _>("the tool broke")))
}

/// One run per failure reason a program can cause in this mode.
fn cases(sandboxed: bool) -> Vec<(FailReason, Run)> {
    let mut cases = vec![
        (FailReason::ParseError, run("(+ 1")),
        (FailReason::AnalysisError, run("(let [a] a)")),
        (FailReason::EvalError, run("(+ 1 \"a\")")),
        (
            FailReason::Timeout,
            run("(loop [] (recur))").timeout(Duration::from_millis(150)),
        ),
        (
            FailReason::ValidationError,
            run("1").signature("() -> :string"),
        ),
        (FailReason::ToolError, run("(tool/boom {})")),
        (FailReason::ToolNotFound, run("(tool/nope {})")),
        (FailReason::Failed, run("(fail \"no\")")),
        (
            FailReason::LimitExceeded,
            run("(loop [] (recur))").max_steps(100),
        ),
        (FailReason::InvalidRequest, run("1").signature("(((")),
    ];
    if sandboxed {
        let bomb = "(reduce (fn [acc _] (str acc acc)) \"0123456789\" (range 30))";
        cases.push((FailReason::MemoryExceeded, run(bomb)));
        cases.push((
            FailReason::InvalidRequest,
            run("1").policy("no-such-policy"),
        ));
        cases.push((
            FailReason::InvalidRequest,
            run("1").timeout(Duration::from_secs(60)),
        ));
    }
    cases
}

fn assert_shape(mode: &str, want: FailReason, step: &Step) {
    assert_eq!(step.reason(), Some(want), "{mode}: {:?}", step.fail);
    assert_eq!(step.memory, memory(), "{mode} {want}: memory");
    assert_eq!(
        step.memory_delta,
        Value::Map(Box::new(ptc_shared::value::Map::new())),
        "{mode} {want}: delta"
    );
    assert_eq!(step.history, history(), "{mode} {want}: history");
    assert!(step.return_value.is_none());
}

async fn check(mode: &str, client: &Client, sandboxed: bool) {
    for (want, r) in cases(sandboxed) {
        let step = client.run(r).await.unwrap_err();
        assert_shape(mode, want, &step);
    }
    let handle = client.start(run("(loop [] (recur))"));
    let cancel = handle.canceller();
    let waiter = tokio::spawn(handle);
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancel();
    assert_shape(
        mode,
        FailReason::Cancelled,
        &waiter.await.unwrap().unwrap_err(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_gives_back_the_input_memory_and_history_in_every_mode() {
    check("in-process", &Client::in_process(), false).await;
    let policies = load_dir(&common::shipped_policies()).unwrap();
    let config = EngineConfig::new(common::real_runner(), policies);
    check("sandboxed", &Client::embedded_with(config).unwrap(), true).await;
    let d = TestDaemon::start("").await;
    let c = Client::connect(&d.socket).await.unwrap();
    check("daemon", &c, true).await;
    d.stop().await;
}
