//! The clock around granted data (docs/ARCHITECTURE.md, "Granted data: the clock"), against
//! fake runners (shell scripts replaying pre-encoded frames): until a runner says `Imported`
//! the engine allows `timeout_ms` plus the import's allowance (`timeout_ms` per MiB of context);
//! from `Imported` on, the program's own `timeout_ms` only. A runner cannot restart its clock
//! (a second `Imported`) nor spend the import's allowance on tools (a `ToolCall` before it).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::protocol::{RunnerToSupervisor, ToolDecl, import_allowance_ms};
use ptc_shared::{FailReason, Limits, Step, Value};
use ptc_supervisor::engine::{NoTools, RunRequest};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TIMEOUT_MS: u64 = 100;

/// Runs `req` on a fresh engine (deadline [`TIMEOUT_MS`]) over a fake runner; also returns how
/// long `execute` took.
async fn run(frames: &[RunnerToSupervisor], body: &str, req: RunRequest) -> (Step, Duration) {
    let dir = temp_dir("import-clock");
    let runner = fake_runner(&dir, frames, body);
    let limits = format!("timeout_ms = {TIMEOUT_MS}");
    let engine = engine(&runner, policies(&dir, &limits, 0));
    let t = Instant::now();
    let step = engine.execute(req, Arc::new(NoTools)).await;
    (step, t.elapsed())
}

/// A request whose context is a string of `bytes` bytes.
fn with_context(bytes: usize) -> RunRequest {
    RunRequest {
        context: Value::string("x".repeat(bytes)).into(),
        ..request("(count data)")
    }
}

fn detail(step: &Step, key: &str) -> Option<Value> {
    let fail = step.fail.as_ref()?;
    fail.details.get_key(&Value::string(key)).cloned()
}

/// The allowance the engine gives `req`'s context under this file's policy.
fn allowance(req: &RunRequest) -> u64 {
    let limits = Limits {
        timeout_ms: TIMEOUT_MS,
        ..Limits::default()
    };
    import_allowance_ms(&limits, req.context.encoded_len())
}

#[tokio::test]
async fn a_runner_that_never_says_imported_is_killed_after_its_allowance() {
    // 4 MiB of context: 400 ms for the import on top of the 100 ms deadline.
    let req = with_context(4 << 20);
    let allowed = allowance(&req);
    assert!((400..=401).contains(&allowed), "{allowed}");
    let body = "cat $F0 >&3; rf; exec /bin/sleep 10";
    let (step, took) = run(&[ready()], body, req).await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    assert_eq!(detail(&step, "limit"), Some(Value::string("timeout_ms")));
    let allowed_i = i64::try_from(allowed).unwrap();
    assert_eq!(detail(&step, "allowance_ms"), Some(Value::Int(allowed_i)));
    assert!(
        took >= Duration::from_millis(TIMEOUT_MS + allowed),
        "{took:?}"
    );

    // The allowance is proportional to the context: with none, the deadline alone.
    let (step, took) = run(&[ready()], body, request("x")).await;
    assert_eq!(detail(&step, "limit"), Some(Value::string("timeout_ms")));
    assert_eq!(detail(&step, "allowance_ms"), Some(Value::Int(1)));
    assert!(took < Duration::from_millis(TIMEOUT_MS + 300), "{took:?}");
}

#[tokio::test]
async fn after_imported_the_program_has_only_its_own_deadline() {
    // The same 4 MiB context, but the runner says `Imported` at once: the allowance it did not
    // use is not the program's. The kill comes at the program's deadline from `Imported`.
    let req = with_context(4 << 20);
    let allowed = allowance(&req);
    let frames = [ready(), RunnerToSupervisor::Imported];
    let body = "cat $F0 >&3; rf; cat $F1 >&3; exec /bin/sleep 10";
    let (step, took) = run(&frames, body, req).await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    assert_eq!(detail(&step, "limit"), Some(Value::string("timeout_ms")));
    assert_eq!(
        detail(&step, "allowance_ms"),
        None,
        "the program had started"
    );
    // `elapsed_ms` counts from the program's start.
    let Some(Value::Int(elapsed)) = detail(&step, "elapsed_ms") else {
        panic!("{step:?}")
    };
    let elapsed = u64::try_from(elapsed).unwrap();
    assert!(
        (TIMEOUT_MS..TIMEOUT_MS + allowed).contains(&elapsed),
        "{elapsed}"
    );
    assert!(
        took < Duration::from_millis(TIMEOUT_MS + allowed),
        "{took:?}"
    );
}

#[tokio::test]
async fn a_second_imported_is_a_protocol_error() {
    let frames = [
        ready(),
        RunnerToSupervisor::Imported,
        RunnerToSupervisor::Imported,
    ];
    let body = "cat $F0 >&3; rf; cat $F1 $F2 >&3; exec /bin/sleep 10";
    let (step, _) = run(&frames, body, with_context(4 << 20)).await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
    // Killed at once, not at a deadline the second `Imported` could have restarted.
    assert!(step.fail.unwrap().message.contains("`Imported` twice"));
}

#[tokio::test]
async fn a_tool_call_before_imported_is_a_protocol_error() {
    let call = RunnerToSupervisor::ToolCall {
        id: 1,
        name: "echo".into(),
        args: Value::Nil,
    };
    let mut req = with_context(1 << 20);
    req.tools = vec![ToolDecl::new("echo", None)];
    let body = "cat $F0 >&3; rf; cat $F1 >&3; exec /bin/sleep 10";
    let (step, _) = run(&[ready(), call], body, req).await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
    assert!(step.tool_calls.is_empty(), "{step:?}");
    assert!(step.fail.unwrap().message.contains("before `Imported`"));
}
