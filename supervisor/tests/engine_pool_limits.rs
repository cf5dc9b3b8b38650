//! A warm runner has its policy's heap budget and rlimits baked in (its `Setup` was sent before
//! any request existed): a request that tightens the heap must get a runner started with its
//! own limits, never a pooled one, whether the pool holds runners or not.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::{FailReason, Limits, Step, Value};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;

/// About 8 MiB live at its peak: a string doubled to 4 MiB and its copy.
const GROW: &str = "(count (loop [s \"x\" i 0] (if (< i 22) (recur (str s s) (inc i)) s)))";

async fn run(engine: &Engine, limits: Option<Limits>) -> Step {
    let req = RunRequest {
        program: GROW.into(),
        limits,
        ..RunRequest::default()
    };
    engine.execute(req, Arc::new(NoTools)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_tightens_the_heap_never_gets_a_warm_runner() {
    // The shipped default limits (a 64 MiB heap, 1 s of CPU) and two warm runners.
    let dir = shipped_filter_dir("pool-limits", "", 2);
    let engine = Engine::new(EngineConfig::new(real_runner(), load_dir(&dir).unwrap())).unwrap();
    let fits = run(&engine, None).await;
    assert_eq!(fits.return_value, Some(Value::Int(1 << 22)), "{fits:?}");
    // Only the heap is tightened (to the 4 MiB minimum; the CPU time is the policy's), twice:
    // once with the pool refilled, once right after.
    for _ in 0..2 {
        let tight = Limits {
            heap_bytes: 4 << 20,
            ..Limits::default()
        };
        let step = run(&engine, Some(tight)).await;
        let fail = step.fail.as_ref().unwrap_or_else(|| panic!("{step:?}"));
        assert_eq!(fail.reason, FailReason::MemoryExceeded, "{}", fail.message);
        assert_eq!(
            fail.details.get_key(&Value::string("limit")),
            Some(&Value::string("heap_bytes")),
            "{fail:?}"
        );
    }
}
