//! Limits the supervisor enforces itself, before or around the runner: the context size, and a
//! request's limits that may only tighten its policy's.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::{FailReason, Limits, Value};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, RunRequest};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;

fn shipped_engine() -> Engine {
    let mut policies = load_dir(&shipped_policies()).unwrap();
    for p in policies.values_mut() {
        p.warm = 0;
    }
    Engine::new(EngineConfig::new(real_runner(), policies)).unwrap()
}

fn limit_of(step: &ptc_shared::Step) -> Value {
    let f = step.fail.as_ref().unwrap();
    f.details
        .get_key(&Value::string("limit"))
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_context_over_max_context_bytes_is_refused_before_any_runner() {
    let engine = shipped_engine();
    let rows: Vec<Value> = (0..2000)
        .map(|i| Value::string(format!("row {i} with some text")))
        .collect();
    let mut ctx = ptc_shared::value::Map::new();
    ctx.insert(Value::string("rows"), Value::Vector(rows));
    let limits = Limits {
        max_context_bytes: 4096,
        ..Limits::default()
    };
    let req = RunRequest {
        program: "(count data/rows)".into(),
        context: Value::Map(Box::new(ctx.clone())).into(),
        limits: Some(limits),
        ..RunRequest::default()
    };
    let step = engine.execute(req, Arc::new(NoTools)).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::LimitExceeded),
        "{:?}",
        step.fail
    );
    assert_eq!(limit_of(&step), Value::string("max_context_bytes"));
    // The same context under the policy's own limit runs.
    let req = RunRequest {
        program: "(count data/rows)".into(),
        context: Value::Map(Box::new(ctx)).into(),
        ..RunRequest::default()
    };
    let step = engine.execute(req, Arc::new(NoTools)).await;
    assert_eq!(step.return_value, Some(Value::Int(2000)), "{:?}", step.fail);
}

#[tokio::test]
async fn a_request_may_tighten_limits_but_never_loosen_them() {
    let engine = shipped_engine();
    let looser = Limits {
        timeout_ms: 3_600_000,
        ..Limits::default()
    };
    let req = RunRequest {
        program: "1".into(),
        limits: Some(looser),
        ..RunRequest::default()
    };
    let step = engine.execute(req, Arc::new(NoTools)).await;
    assert_eq!(
        step.reason(),
        Some(FailReason::InvalidRequest),
        "{:?}",
        step.fail
    );
    assert!(step.fail.as_ref().unwrap().message.contains("timeout_ms"));
    let tighter = Limits {
        max_steps: 100,
        ..Limits::default()
    };
    let req = RunRequest {
        program: "(loop [] (recur))".into(),
        limits: Some(tighter),
        ..RunRequest::default()
    };
    let step = engine.execute(req, Arc::new(NoTools)).await;
    assert_eq!(step.reason(), Some(FailReason::LimitExceeded));
    assert_eq!(limit_of(&step), Value::string("max_steps"));
}
