//! 1,000 sequential and 1,000 concurrent (16 at a time) executions through the real runner leave
//! no zombie processes and no leaked file descriptors in the supervisor process.
//! One test per binary: it counts this process's fds and children. It runs in both spawn modes; in
//! zygote mode (the default) runners are the zygote's children and are counted there.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::Value;
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, SpawnMode};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;
use std::time::Duration;

fn is_zombie(pid: &i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
}

/// Runner processes (children of this process or of its zygote) and how many of all our
/// descendants are zombies.
fn runners_and_zombies() -> (usize, usize) {
    let kids = children();
    let runners = runners();
    let zombies = kids.iter().chain(&runners).filter(|p| is_zombie(p)).count();
    (runners.len(), zombies)
}

/// Waits until the pools are back at their floor (`warm` runners, having grown under the
/// concurrent load and shrunk when idle) with every killed runner reaped; then the caller's
/// assertions say what is wrong if that never happened.
async fn settle(engine: &Engine, warm: usize) {
    assert!(engine.wait_warm(Duration::from_secs(10)).await);
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while runners_and_zombies() != (warm, 0) && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_executions_leak_nothing() {
    leak_check(SpawnMode::Zygote).await;
    leak_check(SpawnMode::Cold).await;
}

async fn leak_check(mode: SpawnMode) {
    let policies = load_dir(&shipped_policies()).unwrap();
    let warm: usize = policies.values().map(|p| p.warm).sum();
    let mut config = EngineConfig::new(real_runner(), policies);
    config.spawn = mode;
    // Short, so the pools grown by the concurrent round shrink back within the test.
    config.pool.idle = Duration::from_millis(200);
    let shards = config.zygotes;
    let engine = Arc::new(Engine::new(config).unwrap());
    settle(&engine, warm).await;
    let fds_before = open_fds();
    assert_eq!(runners_and_zombies(), (warm, 0), "{mode:?}");
    // In zygote mode every runner below comes from these zygotes, one per shard (no fallback,
    // no restart).
    let zygote = zygotes();
    let expected = if mode == SpawnMode::Zygote { shards } else { 0 };
    assert_eq!(zygote.len(), expected, "{mode:?}: one zygote per shard");

    for i in 0..1000i64 {
        let step = engine
            .execute(request(&format!("(+ {i} 1)")), Arc::new(NoTools))
            .await;
        assert_eq!(step.return_value, Some(Value::Int(i + 1)), "{step:?}");
    }
    settle(&engine, warm).await;
    assert_eq!(
        runners_and_zombies(),
        (warm, 0),
        "after 1,000 sequential executions"
    );
    assert_eq!(
        open_fds(),
        fds_before,
        "fds after 1,000 sequential executions"
    );

    let sem = Arc::new(tokio::sync::Semaphore::new(16));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..1000i64 {
        let (engine, sem) = (Arc::clone(&engine), Arc::clone(&sem));
        tasks.spawn(async move {
            let _permit = sem.acquire().await.unwrap();
            let step = engine
                .execute(request(&format!("(* {i} 2)")), Arc::new(NoTools))
                .await;
            assert_eq!(step.return_value, Some(Value::Int(i * 2)), "{step:?}");
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    settle(&engine, warm).await;
    assert_eq!(
        runners_and_zombies(),
        (warm, 0),
        "after 1,000 concurrent executions"
    );
    assert_eq!(
        open_fds(),
        fds_before,
        "fds after 1,000 concurrent executions"
    );
    assert_eq!(zygotes(), zygote, "the same zygotes served every execution");
    drop(engine);
    assert_eq!(
        no_children_within(2000).await,
        Vec::<i32>::new(),
        "{mode:?}: processes outlived the engine"
    );
}
