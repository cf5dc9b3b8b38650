//! Engine benchmarks: end-to-end latency of a trivial program through a cold-spawned runner, a
//! zygote-forked runner (forked on the request's path), and a warm pool (filled by the zygote, and
//! for comparison by cold spawns); executions per second at concurrency 1, 4 and 16; and fork+exec
//! of `/bin/true` measured in the same run as the baseline.
//!
//! Besides criterion's groups, a summary (p50/p99 latency and executions/s per variant, each also
//! as a ratio to `/bin/true` in the same run, since the machine is shared and noisy) is printed to
//! stderr. Uses the real `ptc-runner` from the same target directory, built first with the bench's
//! profile. Run with `cargo bench -p ptc-supervisor --bench engine` (add `-- --quick` for a short
//! run).
#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, RunRequest, SpawnMode};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn trivial() -> RunRequest {
    RunRequest {
        program: "(+ 1 2)".into(),
        ..RunRequest::default()
    }
}

fn engine(rt: &tokio::runtime::Runtime, spawn: SpawnMode, warm: usize) -> Arc<Engine> {
    let _guard = rt.enter();
    let mut config = EngineConfig::new(
        support::runner_bin("ptc-runner"),
        support::default_policy(warm),
    );
    config.spawn = spawn;
    let engine = Arc::new(Engine::new(config).unwrap());
    // Let the zygote and the pool start before anything is timed.
    rt.block_on(engine.wait_warm(Duration::from_secs(10)));
    engine
}

async fn one(engine: &Engine) {
    let step = engine.execute(trivial(), Arc::new(NoTools)).await;
    assert!(step.fail.is_none(), "{step:?}");
}

fn bin_true() {
    let status = std::process::Command::new("/bin/true").status().unwrap();
    assert!(status.success());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// What is measured: `/bin/true`, or the engine with a spawn mode and pool size.
#[derive(Clone, Copy)]
enum Variant {
    BinTrue,
    Engine(&'static str, SpawnMode, usize),
}

const VARIANTS: [Variant; 5] = [
    Variant::BinTrue,
    Variant::Engine("cold spawn", SpawnMode::Cold, 0),
    Variant::Engine("zygote fork", SpawnMode::Zygote, 0),
    Variant::Engine("warm pool (zygote)", SpawnMode::Zygote, 4),
    Variant::Engine("warm pool (cold)", SpawnMode::Cold, 4),
];

fn name(v: Variant) -> &'static str {
    match v {
        Variant::BinTrue => "fork+exec /bin/true",
        Variant::Engine(n, ..) => n,
    }
}

fn latency(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("latency");
    g.sample_size(200).measurement_time(Duration::from_secs(5));
    g.bench_function("fork_exec_bin_true", |b| b.iter(bin_true));
    let cold = engine(&rt, SpawnMode::Cold, 0);
    g.bench_function("engine_cold_spawn", |b| b.to_async(&rt).iter(|| one(&cold)));
    let zygote = engine(&rt, SpawnMode::Zygote, 0);
    g.bench_function("engine_zygote_fork", |b| {
        b.to_async(&rt).iter(|| one(&zygote))
    });
    let warm = engine(&rt, SpawnMode::Zygote, 4);
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
}

fn throughput(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("throughput");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for (label, spawn) in [("zygote", SpawnMode::Zygote), ("cold", SpawnMode::Cold)] {
        let engine = engine(&rt, spawn, 16);
        for conc in [1usize, 4, 16] {
            let batch = 64u64;
            g.throughput(Throughput::Elements(batch));
            g.bench_function(format!("{label}_concurrency_{conc}"), |b| {
                b.to_async(&rt)
                    .iter(|| batch_run(Variant::Engine("", spawn, 16), Some(&engine), conc, 64))
            });
        }
    }
    g.finish();
}

/// Runs `n` executions (or `/bin/true`s), `conc` at a time.
async fn batch_run(v: Variant, engine: Option<&Arc<Engine>>, conc: usize, n: usize) {
    let sem = Arc::new(tokio::sync::Semaphore::new(conc));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let sem = Arc::clone(&sem);
        let engine = engine.cloned();
        set.spawn(async move {
            let _p = sem.acquire().await.unwrap();
            match (v, engine) {
                (Variant::Engine(..), Some(e)) => one(&e).await,
                _ => tokio::task::spawn_blocking(bin_true).await.unwrap(),
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
}

/// Nearest-rank percentiles of sequential latencies.
fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    (
        support::percentile(&samples, 50),
        support::percentile(&samples, 99),
    )
}

/// The figures for BENCHMARKS.md: per variant, p50/p99 latency over sequential runs and
/// executions/s at concurrency 1, 4, 16, with ratios to `/bin/true` from this same run.
fn summary(_: &mut Criterion) {
    let rt = runtime();
    let quick = std::env::args().any(|a| a == "--quick");
    let (lat_n, tp_n) = if quick { (300, 300) } else { (1000, 1000) };
    let mut rows = Vec::new();
    for v in VARIANTS {
        let engine = match v {
            Variant::BinTrue => None,
            Variant::Engine(_, spawn, warm) => Some(engine(&rt, spawn, warm)),
        };
        let lat = rt.block_on(async {
            let mut out = Vec::with_capacity(lat_n);
            for _ in 0..lat_n {
                if let Some(e) = &engine {
                    // A pool variant is timed from the moment a warm runner is ready.
                    e.wait_warm(Duration::from_secs(5)).await;
                }
                let t = Instant::now();
                match &engine {
                    Some(e) => one(e).await,
                    None => bin_true(),
                }
                out.push(t.elapsed());
            }
            out
        });
        let (p50, p99) = percentiles(lat);
        let mut rates = Vec::new();
        for conc in [1usize, 4, 16] {
            let t = Instant::now();
            rt.block_on(batch_run(v, engine.as_ref(), conc, tp_n));
            rates.push(tp_n as f64 / t.elapsed().as_secs_f64());
        }
        rows.push((name(v), p50, p99, rates));
    }
    let (base_p50, base_rates) = (rows[0].1, rows[0].3.clone());
    eprintln!("\nsummary (ratios are to fork+exec /bin/true in this run):");
    eprintln!(
        "{:<22} {:>10} {:>10} {:>8} | {:>16} {:>16} {:>16}",
        "variant", "p50", "p99", "p50/true", "exec/s c=1", "exec/s c=4", "exec/s c=16"
    );
    for (name, p50, p99, rates) in &rows {
        let r: Vec<String> = rates
            .iter()
            .zip(&base_rates)
            .map(|(r, b)| format!("{r:>7.0} ({:>4.2}x)", r / b))
            .collect();
        eprintln!(
            "{name:<22} {:>10.1?} {:>10.1?} {:>7.2}x | {:>16} {:>16} {:>16}",
            p50,
            p99,
            p50.as_secs_f64() / base_p50.as_secs_f64(),
            r[0],
            r[1],
            r[2]
        );
    }
}

criterion_group!(benches, summary, latency, throughput);
criterion_main!(benches);
