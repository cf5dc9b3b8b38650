//! Engine benchmarks: end-to-end latency of a trivial program through a cold-spawned runner and
//! through a warm pool, executions per second at concurrency 1, 4 and 16, and fork+exec of
//! `/bin/true` measured in the same run as the baseline.
//!
//! Uses the real `ptc-runner` from the same target directory, built first with the bench's profile. Run with `cargo bench -p ptc-supervisor --bench engine`.
#![allow(clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptc_supervisor::engine::{Engine, EngineConfig, ExecRequest, NoTools};
use ptc_supervisor::policy::{Policy, load_dir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn runner() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    // Always (re)build: a no-op when current, and a stale runner would skew the figures.
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.args([
        "build",
        "--quiet",
        "-p",
        "ptc-runner",
        "--bin",
        "ptc-runner",
    ]);
    if dir.ends_with("release") {
        cmd.arg("--release");
    }
    let built = cmd
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(built.success(), "building ptc-runner failed");
    dir.join("ptc-runner")
}

/// The shipped default policy with `warm` runners.
fn policies(warm: usize) -> BTreeMap<String, Policy> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
    let mut all = load_dir(&dir).unwrap();
    all.retain(|name, _| name == "default");
    if let Some(p) = all.get_mut("default") {
        p.warm = warm;
    }
    all
}

fn trivial() -> ExecRequest {
    ExecRequest {
        program: "(+ 1 2)".into(),
        ..ExecRequest::default()
    }
}

fn engine(rt: &tokio::runtime::Runtime, warm: usize) -> Arc<Engine> {
    let _guard = rt.enter();
    Arc::new(Engine::new(EngineConfig::new(runner(), policies(warm))).unwrap())
}

async fn one(engine: &Engine) {
    let step = engine.execute(trivial(), Arc::new(NoTools)).await;
    assert!(step.fail.is_none(), "{step:?}");
}

fn latency(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("latency");
    g.sample_size(200).measurement_time(Duration::from_secs(5));
    g.bench_function("fork_exec_bin_true", |b| {
        b.iter(|| std::process::Command::new("/bin/true").status().unwrap())
    });
    let cold = engine(&rt, 0);
    g.bench_function("engine_cold_spawn", |b| b.to_async(&rt).iter(|| one(&cold)));
    let warm = engine(&rt, 4);
    g.bench_function("engine_warm_pool", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let warm = Arc::clone(&warm);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    // Timed from the moment a warm runner is ready: the request's critical path.
                    warm.wait_warm(Duration::from_secs(5)).await;
                    let t = Instant::now();
                    one(&warm).await;
                    total += t.elapsed();
                }
                total
            }
        })
    });
    g.finish();
    percentiles(&rt, &warm);
}

/// p50/p99 of warm-pool latency, printed for BENCHMARKS.md (criterion reports means and medians).
fn percentiles(rt: &tokio::runtime::Runtime, warm: &Arc<Engine>) {
    let mut samples: Vec<Duration> = rt.block_on(async {
        let mut v = Vec::with_capacity(500);
        for _ in 0..500 {
            warm.wait_warm(Duration::from_secs(5)).await;
            let t = Instant::now();
            one(warm).await;
            v.push(t.elapsed());
        }
        v
    });
    samples.sort();
    // Nearest-rank percentile over the sorted samples.
    let p = |percent: usize| samples[(samples.len() - 1) * percent / 100];
    eprintln!(
        "warm pool latency over 500 runs: p50 {:?}, p99 {:?}",
        p(50),
        p(99)
    );
}

fn throughput(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = engine(&rt, 16);
    let mut g = c.benchmark_group("throughput");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for conc in [1usize, 4, 16] {
        let batch = 64u64;
        g.throughput(Throughput::Elements(batch));
        g.bench_function(format!("concurrency_{conc}"), |b| {
            b.to_async(&rt).iter(|| {
                let engine = Arc::clone(&engine);
                async move {
                    let sem = Arc::new(tokio::sync::Semaphore::new(conc));
                    let mut set = tokio::task::JoinSet::new();
                    for _ in 0..batch {
                        let (engine, sem) = (Arc::clone(&engine), Arc::clone(&sem));
                        set.spawn(async move {
                            let _p = sem.acquire().await.unwrap();
                            one(&engine).await;
                        });
                    }
                    while set.join_next().await.is_some() {}
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, latency, throughput);
criterion_main!(benches);
