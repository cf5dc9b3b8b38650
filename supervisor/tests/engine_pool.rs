//! Warm pools that follow demand, with the real runner forked by a zygote: a burst grows a pool
//! from its floor (the policy's `warm`) up to its bound and never past it, and an idle pool
//! shrinks back to its floor, killing the runners above it. Every wait is for a condition, with
//! a generous timeout; nothing asserts on timing.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::Value;
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, PoolBounds};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const FLOOR: usize = 1;
const BOUND: usize = 4;

fn engine_with(tag: &str, idle: Duration) -> Arc<Engine> {
    let dir = shipped_filter_dir(tag, "", FLOOR);
    let mut config = EngineConfig::new(real_runner(), load_dir(&dir).unwrap());
    config.pool = PoolBounds { max: BOUND, idle };
    Arc::new(Engine::new(config).unwrap())
}

/// Live processes forked by the engine's zygotes (every shard's).
fn forked(engine: &Engine) -> usize {
    engine
        .zygote_pids()
        .into_iter()
        .map(|z| children_of(z).len())
        .sum()
}

/// Rounds of `clients` concurrent executions, each checked.
async fn burst(engine: &Arc<Engine>, rounds: usize, clients: usize) {
    for _ in 0..rounds {
        let runs: Vec<_> = (0..clients)
            .map(|_| {
                let engine = Arc::clone(engine);
                tokio::spawn(
                    async move { engine.execute(request("(+ 1 2)"), Arc::new(NoTools)).await },
                )
            })
            .collect();
        for r in runs {
            let step = r.await.unwrap();
            assert_eq!(step.return_value, Some(Value::Int(3)), "{step:?}");
        }
    }
}

/// Waits up to 30 s for `cond`.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_grows_the_pool_to_its_bound_and_never_past_it() {
    // Never idle long enough to shrink during the test.
    let engine = engine_with("grow", Duration::from_secs(600));
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    assert_eq!(engine.pool_count("default"), FLOOR);

    // Sample the pool all through the burst: the bound must hold at every moment.
    let most = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (engine, most, stop) = (Arc::clone(&engine), Arc::clone(&most), Arc::clone(&stop));
        tokio::spawn(async move {
            while !stop.load(Ordering::Acquire) {
                most.fetch_max(engine.pool_count("default"), Ordering::AcqRel);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
    };
    burst(&engine, 4, 12).await;
    // Demand outran a pool of one: it refills to its bound, exactly.
    eventually("the pool holds its bound, ready", || {
        engine.warm_count("default") == BOUND
    })
    .await;
    burst(&engine, 2, 12).await;
    stop.store(true, Ordering::Release);
    sampler.await.unwrap();
    let most = most.load(Ordering::Acquire);
    assert!(most <= BOUND, "the pool held {most} runners, bound {BOUND}");
    eventually("the pool is back at its bound", || {
        engine.warm_count("default") == BOUND
    })
    .await;
    // The processes agree: the zygotes' children are exactly the pooled runners.
    eventually("the zygotes have exactly the pooled runners", || {
        forked(&engine) == BOUND
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_pool_shrinks_to_its_floor() {
    let engine = engine_with("shrink", Duration::from_millis(1500));
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    burst(&engine, 3, 12).await;
    // The releases ask for refills at once (well within the idle period), up to the grown target.
    eventually("the pool grew", || engine.pool_count("default") > FLOOR).await;
    // Then, with no request arriving, it drops back to its floor and the surplus dies.
    eventually("the pool is back at its floor", || {
        engine.pool_count("default") == FLOOR && engine.warm_count("default") == FLOOR
    })
    .await;
    eventually("the surplus runners are gone", || forked(&engine) == FLOOR).await;
    // And it still serves, and grows again under load.
    burst(&engine, 2, 12).await;
    eventually("the pool grew again", || {
        engine.pool_count("default") > FLOOR
    })
    .await;
}
