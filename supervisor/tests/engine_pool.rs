//! Warm pools that follow demand, with the real runner forked by a zygote: a burst grows a pool
//! from its floor (the policy's `warm`) up to its bound and never past it, and an idle pool
//! shrinks back to its floor, killing the runners above it. With its zygote stopped (no runner
//! can be forked), a request is still served by the runner the pool holds, and refills that
//! arrive after the pool shrank are not kept over its target; a pool in steady use keeps the size
//! it grew to. Every wait is for a condition, with a generous timeout; nothing asserts on timing
//! (the one sleep, ten idle periods for a shrink, can only make a test weaker when the host is
//! slow, never fail it; steady use assumes a request takes less than 4 s).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
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

/// Stops a process (SIGSTOP) until dropped (SIGCONT), so a failing test never leaves it stopped.
struct Stopped(i32);

impl Stopped {
    fn new(pid: i32) -> Stopped {
        kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), Signal::SIGCONT);
    }
}

/// An engine with one zygote shard (so the test knows which process forks its runners), runs
/// timed out only after a minute (a run may wait for the stopped zygote), and a short idle.
fn one_shard_engine(tag: &str, idle: Duration) -> Arc<Engine> {
    let dir = shipped_filter_dir(tag, "timeout_ms = 60000", FLOOR);
    let mut config = EngineConfig::new(real_runner(), load_dir(&dir).unwrap());
    config.pool = PoolBounds { max: BOUND, idle };
    config.zygotes = 1;
    let engine = Arc::new(Engine::new(config).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    engine
}

/// Runs `(+ 1 2)` on `engine`, failing the test if no Step comes within 30 s.
async fn three(engine: &Arc<Engine>, what: &str) {
    let run = engine.execute(request("(+ 1 2)"), Arc::new(NoTools));
    let step = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap_or_else(|_| panic!("{what}: no Step within 30 s"));
    assert_eq!(step.return_value, Some(Value::Int(3)), "{what}: {step:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_served_by_the_pooled_runner_while_the_zygote_cannot_fork() {
    let engine = one_shard_engine("served", Duration::from_secs(600));
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    let zygote = engine.zygote_pid().unwrap();
    let pooled = children_of(zygote);
    assert_eq!(pooled.len(), FLOOR, "{pooled:?}");
    // With the zygote stopped no runner can be forked: the request is served by the one the
    // pool holds, or not at all.
    let stopped = Stopped::new(zygote);
    three(&engine, "a request with a warm runner in the pool").await;
    // The pool gave its runner away (its refill waits for the zygote).
    assert_eq!(engine.warm_count("default"), 0);
    drop(stopped);
    eventually("the pool is refilled", || {
        engine.warm_count("default") == FLOOR
    })
    .await;
    eventually("the runner that served is gone", || {
        !children_of(zygote).contains(&pooled[0])
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refill_that_arrives_after_a_shrink_is_not_kept_over_the_target() {
    let engine = one_shard_engine("late", Duration::from_millis(100));
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    let zygote = engine.zygote_pid().unwrap();
    let stopped = Stopped::new(zygote);
    // The pooled runner serves the first request; its refill is a fork the zygote holds.
    three(&engine, "the first request").await;
    eventually("one refill is waiting for the zygote", || {
        engine.pool_count("default") == 1
    })
    .await;
    // The second request finds the pool empty: the target doubles to 2 and a second refill is
    // asked for, beside the request's own fork.
    let second = {
        let engine = Arc::clone(&engine);
        tokio::spawn(async move { three(&engine, "the second request").await })
    };
    eventually("two refills are waiting for the zygote", || {
        engine.pool_count("default") == 2
    })
    .await;
    // No runner is taken for ten idle periods: the target falls back to the floor (1) while
    // both refills are still on their way.
    tokio::time::sleep(Duration::from_secs(1)).await;
    drop(stopped);
    second.await.unwrap();
    // The first refill to arrive fills the pool to its target; the second is surplus and killed.
    eventually("the pool holds its floor, ready", || {
        engine.pool_count("default") == FLOOR && engine.warm_count("default") == FLOOR
    })
    .await;
    eventually("the zygote has exactly the pooled runner", || {
        forked(&engine) == FLOOR
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_in_steady_use_keeps_the_size_it_grew_to() {
    // Idle for 4 s: a pool shrinks only after that long with no runner taken. Requests below
    // come one after another, each taking a runner well within that (a request takes
    // milliseconds; only a host 40 times slower than this one could leave a 4 s gap).
    let idle = Duration::from_secs(4);
    let engine = one_shard_engine("steady", idle);
    assert!(engine.wait_warm(Duration::from_secs(30)).await);
    // Demand outruns a pool of one: it grows to its bound.
    burst(&engine, 1, 12).await;
    // Then three idle periods of steady use, a request every 250 ms: no idle period passes
    // without a take, so the pool never shrinks back to its floor.
    let until = Instant::now() + 3 * idle;
    while Instant::now() < until {
        three(&engine, "a request in steady use").await;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Held right after the last take: the grown target, ready or being refilled.
    eventually("the pool holds its bound after steady use", || {
        engine.pool_count("default") == BOUND
    })
    .await;
}
