//! `ptc bench`: N executions at a concurrency through the client library (the embedded engine,
//! or a daemon with `--connect`), reporting latency percentiles and throughput, like
//! redis-benchmark: the number a user sizes a host with.
//!
//! Latency is measured per run from `Client::run` to its Step. Failed runs are counted and
//! reported; they are not left out of the latencies.

use super::connect::{Format, open_client};
use clap::Args;
use ptc_supervisor::client::Run;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Daemon socket (default: the embedded engine, no daemon needed).
    #[arg(long)]
    connect: Option<PathBuf>,
    /// Program to run.
    #[arg(short = 'e', long = "eval", default_value = "(+ 1 2)")]
    program: String,
    /// Number of executions.
    #[arg(short = 'n', default_value_t = 1000)]
    n: usize,
    /// Executions in flight at once.
    #[arg(short = 'c', default_value_t = 1)]
    concurrency: usize,
    /// Policy to run under.
    #[arg(long)]
    policy: Option<String>,
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

/// What one benchmark run measured.
struct Report {
    latencies_us: Vec<u64>,
    failed: usize,
    first_failure: Option<String>,
    elapsed: Duration,
}

pub fn bench(args: BenchArgs) -> ExitCode {
    if args.n == 0 || args.concurrency == 0 {
        eprintln!("error: usage: -n and -c must be at least 1");
        return ExitCode::from(2);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match rt.block_on(measure(&args)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: usage: {e}");
            return ExitCode::from(2);
        }
    };
    print_report(&args, &report);
    if report.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

async fn measure(args: &BenchArgs) -> Result<Report, String> {
    let client = open_client(args.connect.as_deref()).await?;
    // Let warm pools fill before the clock starts (embedded mode starts cold).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.concurrency.min(args.n) {
        let (client, next, n) = (client.clone(), Arc::clone(&next), args.n);
        let (program, policy) = (args.program.clone(), args.policy.clone());
        workers.spawn(async move {
            let mut lat = Vec::new();
            let mut failures = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < n {
                let mut run = Run::new(program.clone());
                if let Some(p) = &policy {
                    run = run.policy(p.clone());
                }
                let t = Instant::now();
                let r = client.run(run).await;
                lat.push(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
                if let Err(step) = r {
                    failures.push(step.fail.map(|f| format!("{}: {}", f.reason, f.message)));
                }
            }
            (lat, failures)
        });
    }
    let mut latencies_us = Vec::with_capacity(args.n);
    let mut failures = Vec::new();
    while let Some(r) = workers.join_next().await {
        let (l, f) = r.map_err(|e| e.to_string())?;
        latencies_us.extend(l);
        failures.extend(f);
    }
    let elapsed = start.elapsed();
    latencies_us.sort_unstable();
    Ok(Report {
        latencies_us,
        failed: failures.len(),
        first_failure: failures.into_iter().next().flatten(),
        elapsed,
    })
}

/// The value at quantile `per_mille`/1000 of sorted samples (nearest rank).
fn percentile(sorted: &[u64], per_mille: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (per_mille * sorted.len()).div_ceil(1000);
    sorted
        .get(rank.saturating_sub(1).min(sorted.len() - 1))
        .copied()
        .unwrap_or(0)
}

fn print_report(args: &BenchArgs, r: &Report) {
    let p50 = percentile(&r.latencies_us, 500);
    let p99 = percentile(&r.latencies_us, 990);
    let rate = r.latencies_us.len() as f64 / r.elapsed.as_secs_f64().max(1e-9);
    let target = args
        .connect
        .as_ref()
        .map_or("embedded".to_string(), |p| p.display().to_string());
    match args.format {
        Format::Json => println!(
            "{}",
            json!({"target": target, "n": args.n, "concurrency": args.concurrency,
                   "p50_us": p50, "p99_us": p99, "runs_per_sec": rate.round(),
                   "failed": r.failed, "first_failure": r.first_failure})
        ),
        Format::Human => {
            println!("target:      {target}");
            println!(
                "executions:  {} at concurrency {}",
                args.n, args.concurrency
            );
            println!("latency:     p50 {p50} µs, p99 {p99} µs");
            println!("throughput:  {rate:.0} executions/s");
            if r.failed > 0 {
                println!(
                    "failed:      {} (first: {})",
                    r.failed,
                    r.first_failure.as_deref().unwrap_or("?")
                );
            }
        }
    }
}
