//! Client → daemon → warm runner → client, measured against the process-spawn baselines in the
//! same run.
//!
//! The daemon is a real `ptc serve` process (this bench's own build) on a temp socket, with the
//! shipped policies copied and the default policy's warm pool raised to 32 runners. Measured:
//! - criterion: one trivial run through the daemon; fork+exec of `/bin/true`; and
//!   `bwrap --ro-bind / / /bin/true` when bubblewrap is installed;
//! - a summary table: p50/p99 latency of 2,000 sequential runs, of 2,000 requests refused before
//!   any runner (the client ↔ daemon protocol alone), and throughput with 1, 8 and 64
//!   concurrent clients (one connection each), plus the daemon's peak RSS (VmHWM) after the
//!   64-client round. Set `PTC_BENCH_RUNS` to change the runs per throughput round (default 4,000).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use criterion::{Criterion, criterion_group, criterion_main};
use ptc_supervisor::client::{Client, Run};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

struct Daemon {
    child: Child,
    socket: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// target/<profile>/ptc-runner, built in this profile if missing.
fn runner() -> PathBuf {
    let ptc = PathBuf::from(env!("CARGO_BIN_EXE_ptc"));
    let runner = ptc.with_file_name("ptc-runner");
    if !runner.exists() {
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "-p",
                "ptc-runner",
                "--bin",
                "ptc-runner",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success());
    }
    runner
}

fn start_daemon() -> Daemon {
    let dir = std::env::temp_dir().join(format!("ptc-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let policies = dir.join("policies");
    std::fs::create_dir_all(policies.join("seccomp")).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
    for f in ["strict.toml", "seccomp/runner.json"] {
        std::fs::copy(shipped.join(f), policies.join(f)).unwrap();
    }
    let default = std::fs::read_to_string(shipped.join("default.toml")).unwrap();
    let default = default.replace("warm = 2 ", "warm = 32 ");
    assert!(
        default.contains("warm = 32"),
        "default.toml pool line changed"
    );
    std::fs::write(policies.join("default.toml"), default).unwrap();
    let socket = dir.join("ptc.sock");
    let config = dir.join("ptc.toml");
    std::fs::write(
        &config,
        format!(
            "socket = \"{}\"\npolicies_dir = \"{}\"\nrunner = \"{}\"\nper_uid_max = 64\nper_uid_queue = 256\n",
            socket.display(),
            policies.display(),
            runner().display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < until, "daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the warm pool fill.
    std::thread::sleep(Duration::from_millis(500));
    Daemon { child, socket }
}

fn percentile(sorted: &[u64], per_mille: usize) -> u64 {
    let rank = (per_mille * sorted.len()).div_ceil(1000);
    sorted
        .get(rank.saturating_sub(1).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0)
}

/// `runs` trivial executions spread over `clients` connections; returns runs per second.
fn throughput(rt: &tokio::runtime::Runtime, socket: &Path, clients: usize, runs: usize) -> f64 {
    rt.block_on(async {
        let mut conns = Vec::new();
        for _ in 0..clients {
            conns.push(Client::connect(socket).await.unwrap());
        }
        let next = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for c in conns {
            let next = Arc::clone(&next);
            tasks.spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    let step = c.run(Run::new("(+ 1 2)")).await;
                    assert!(step.is_ok(), "{:?}", step.err().and_then(|s| s.fail));
                }
            });
        }
        while tasks.join_next().await.is_some() {}
        runs as f64 / start.elapsed().as_secs_f64()
    })
}

/// p50 and p99 of spawning `cmd` and waiting for it, in µs.
fn spawn_latency(cmd: &[&str], n: usize) -> (u64, u64) {
    let mut lat: Vec<u64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let s = Command::new(cmd[0]).args(&cmd[1..]).status().unwrap();
            assert!(s.success());
            u64::try_from(t.elapsed().as_micros()).unwrap()
        })
        .collect();
    lat.sort_unstable();
    (percentile(&lat, 500), percentile(&lat, 990))
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn bwrap_available() -> bool {
    Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "/bin/true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn summary(rt: &tokio::runtime::Runtime, d: &Daemon) {
    let client = rt.block_on(Client::connect(&d.socket)).unwrap();
    let mut lat: Vec<u64> = (0..2000)
        .map(|_| {
            let t = Instant::now();
            rt.block_on(client.run(Run::new("(+ 1 2)"))).unwrap();
            u64::try_from(t.elapsed().as_micros()).unwrap()
        })
        .collect();
    lat.sort_unstable();
    // The protocol alone: a request the daemon refuses before any runner (unknown policy).
    let mut proto: Vec<u64> = (0..2000)
        .map(|_| {
            let t = Instant::now();
            let r = rt.block_on(client.run(Run::new("1").policy("no-such-policy")));
            assert!(r.is_err());
            u64::try_from(t.elapsed().as_micros()).unwrap()
        })
        .collect();
    proto.sort_unstable();
    let runs: usize = std::env::var("PTC_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000);
    println!("\n== ptc daemon summary ({runs} runs per throughput round) ==");
    println!(
        "daemon round trip (sequential): p50 {} µs, p99 {} µs",
        percentile(&lat, 500),
        percentile(&lat, 990)
    );
    println!(
        "protocol only (refused before a runner): p50 {} µs, p99 {} µs",
        percentile(&proto, 500),
        percentile(&proto, 990)
    );
    for clients in [1, 8, 64] {
        let rate = throughput(rt, &d.socket, clients, runs);
        println!("throughput, {clients:>2} clients: {rate:>7.0} runs/s");
    }
    println!("daemon peak RSS (VmHWM): {} KiB", vm_hwm_kib(d.child.id()));
    let (p50, p99) = spawn_latency(&["/bin/true"], 500);
    println!("fork+exec /bin/true: p50 {p50} µs, p99 {p99} µs");
    if bwrap_available() {
        let (p50, p99) = spawn_latency(&["bwrap", "--ro-bind", "/", "/", "/bin/true"], 300);
        println!("bwrap --ro-bind / / /bin/true: p50 {p50} µs, p99 {p99} µs");
    } else {
        println!("bwrap: not installed or not usable here; skipped");
    }
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let d = start_daemon();
    let client = rt.block_on(Client::connect(&d.socket)).unwrap();
    c.bench_function("daemon_round_trip_trivial", |b| {
        b.iter(|| rt.block_on(client.run(Run::new("(+ 1 2)"))).unwrap());
    });
    c.bench_function("fork_exec_bin_true", |b| {
        b.iter(|| Command::new("/bin/true").status().unwrap());
    });
    if bwrap_available() {
        c.bench_function("bwrap_ro_bind_bin_true", |b| {
            b.iter(|| {
                Command::new("bwrap")
                    .args(["--ro-bind", "/", "/", "/bin/true"])
                    .status()
                    .unwrap()
            });
        });
    }
    summary(&rt, &d);
}

criterion_group! {
    name = daemon;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(4));
    targets = benches
}
criterion_main!(daemon);
