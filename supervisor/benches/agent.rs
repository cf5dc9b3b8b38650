//! SubAgent loop overhead: one-turn and three-turn missions with an instant scripted LLM and
//! trivial programs, next to bare executions of the same kind of program, all in one run on one
//! warm engine (the machine is shared and noisy, so only same-run ratios mean anything).
//!
//! Prints p50/p99 in µs and the ratios to stderr. Run with
//! `cargo bench -p ptc-supervisor --bench agent` (`-- N` for N samples per variant, default 300).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "support/mod.rs"]
mod support;

use ptc_shared::Value;
use ptc_supervisor::agent::{
    AgentSpec, Llm, LlmError, LlmRequest, LlmResponse, LlmSet, MissionRequest, run_mission,
};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, RunRequest};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn engine() -> Arc<Engine> {
    let config = EngineConfig::new(
        support::runner_bin("ptc-runner"),
        support::default_policy(4),
    );
    Arc::new(Engine::new(config).unwrap())
}

fn scripted(turns: u32) -> LlmSet {
    let llm = Llm::new(move |req: LlmRequest| async move {
        let program = if req.turn < turns {
            format!("(def x{} {})", req.turn, req.turn)
        } else {
            "(return (+ 1 2))".to_string()
        };
        Ok::<_, LlmError>(LlmResponse::text(format!("```clojure\n{program}\n```")))
    });
    LlmSet::new(llm)
}

async fn mission(engine: &Arc<Engine>, turns: u32) {
    let step = run_mission(
        Arc::clone(engine),
        scripted(turns),
        Arc::new(NoTools),
        MissionRequest {
            agent: AgentSpec::new("Add.").signature(":int"),
            input: Default::default(),
            options: Default::default(),
            models: Default::default(),
        },
    )
    .await;
    assert_eq!(step.return_value, Some(Value::Int(3)), "{step:?}");
}

async fn bare(engine: &Engine) {
    let req = RunRequest {
        program: "(+ 1 2)".into(),
        ..RunRequest::default()
    };
    let step = engine.execute(req, Arc::new(NoTools)).await;
    assert!(step.fail.is_none());
}

/// The `p`th percentile (0-100) in µs.
fn pct(mut v: Vec<Duration>, p: usize) -> f64 {
    v.sort();
    support::percentile(&v, p).as_secs_f64() * 1e6
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(300);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = rt.block_on(async { engine() });
    rt.block_on(engine.wait_warm(Duration::from_secs(10)));
    let (mut b, mut one, mut three) = (Vec::new(), Vec::new(), Vec::new());
    rt.block_on(async {
        for _ in 0..20 {
            bare(&engine).await;
            mission(&engine, 3).await;
        }
        // Interleaved, so drift on a shared machine hits every variant alike.
        for _ in 0..n {
            let t = Instant::now();
            bare(&engine).await;
            b.push(t.elapsed());
            let t = Instant::now();
            mission(&engine, 1).await;
            one.push(t.elapsed());
            let t = Instant::now();
            mission(&engine, 3).await;
            three.push(t.elapsed());
        }
    });
    let (b50, o50, t50) = (
        pct(b.clone(), 50),
        pct(one.clone(), 50),
        pct(three.clone(), 50),
    );
    eprintln!("agent bench, {n} samples each (µs):");
    eprintln!("  bare execution     p50 {b50:8.0}  p99 {:8.0}", pct(b, 99));
    eprintln!(
        "  1-turn mission     p50 {o50:8.0}  p99 {:8.0}  = {:.2}x bare",
        pct(one, 99),
        o50 / b50
    );
    eprintln!(
        "  3-turn mission     p50 {t50:8.0}  p99 {:8.0}  = {:.2}x bare, {:.2}x bare per turn",
        pct(three, 99),
        t50 / b50,
        t50 / 3.0 / b50
    );
}
