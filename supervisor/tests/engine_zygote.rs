//! The engine's zygote backend with the real runner (and the hostile probe): runners are forked by
//! one zygote and hold exactly fds 0–3; every kind of ending is classified from the zygote's exit
//! report as from our own wait (SIGSYS, SIGXCPU with exact CPU time, panics, crashes); a dead
//! zygote fails in-flight executions with a clear error and is replaced.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::{FailReason, Step, Value};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, SpawnMode};
use ptc_supervisor::policy::load_dir;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn engine_for(runner: &Path, dir: &Path, spawn: SpawnMode) -> Engine {
    let mut config = EngineConfig::new(runner, load_dir(dir).unwrap());
    config.spawn = spawn;
    // One shard, pools fixed at `warm`: these tests count the zygote's children (growth:
    // engine_pool.rs; several shards: engine_shards.rs).
    config.pool.max = 0;
    config.zygotes = 1;
    Engine::new(config).unwrap()
}

/// A runner path that is the probe attempting `op` (the engine passes `--zygote` before it).
fn probe_runner(dir: &Path, op: &str) -> PathBuf {
    let path = dir.join(format!("probe-{op}"));
    let script = format!("#!/bin/sh\nexec {} \"$@\" {op}\n", probe_binary().display());
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn run(engine: &Engine, program: &str) -> Step {
    engine.execute(request(program), Arc::new(NoTools)).await
}

fn detail<'a>(step: &'a Step, key: &str) -> Option<&'a Value> {
    step.fail.as_ref()?.details.get_key(&Value::string(key))
}

async fn zygote_of(engine: &Engine) -> i32 {
    for _ in 0..500 {
        if let Some(pid) = engine.zygote_pid() {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no zygote started");
}

fn fds_of(pid: i32) -> Vec<(u32, String)> {
    let mut fds: Vec<(u32, String)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let target = std::fs::read_link(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().parse().unwrap(),
                target.to_string_lossy().into_owned(),
            )
        })
        .collect();
    fds.sort();
    fds
}

#[tokio::test]
async fn pooled_runners_are_forked_by_the_zygote_and_hold_only_fds_0_to_3() {
    let dir = shipped_filter_dir("pooled", "", 2);
    let engine = engine_for(&real_runner(), &dir, SpawnMode::Zygote);
    assert!(engine.wait_warm(Duration::from_secs(10)).await);
    let zygote = zygote_of(&engine).await;
    let pooled = children_of(zygote);
    assert_eq!(pooled.len(), 2, "{pooled:?}");
    for pid in pooled {
        let fds = fds_of(pid);
        let numbers: Vec<u32> = fds.iter().map(|f| f.0).collect();
        assert_eq!(numbers, vec![0, 1, 2, 3], "{fds:?}");
        assert_eq!(fds[0].1, "/dev/null");
        assert_eq!(fds[1].1, "/dev/null");
        assert!(
            fds[2].1.starts_with("pipe:"),
            "stderr is the engine's pipe: {fds:?}"
        );
        assert!(fds[3].1.starts_with("socket:"), "{fds:?}");
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        assert!(environ.is_empty());
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(status.lines().any(|l| l == "Seccomp:\t2"), "{status}");
    }
    let step = run(&engine, "(+ 1 2)").await;
    assert_eq!(step.return_value, Some(Value::Int(3)), "{step:?}");
    assert_eq!(engine.zygote_pid(), Some(zygote));
}

/// A forked runner runs nothing before its program (no warm-up of its own): what the runtime
/// initialises lazily, reading /proc where seccomp would now kill it (regex's pool, hash seeds,
/// float formatting, stacker's bounds), must come primed from the zygote. Each program here is
/// the first and only one of a fresh forked runner under the shipped filter.
#[tokio::test]
async fn a_forked_runners_first_program_uses_the_zygotes_primed_runtime() {
    let dir = shipped_filter_dir("primed", "", 1);
    let engine = engine_for(&real_runner(), &dir, SpawnMode::Zygote);
    assert!(engine.wait_warm(Duration::from_secs(10)).await);
    let cases = [
        (r#"(re-find #"a+b" "xaab")"#, Value::string("aab")),
        (
            "(count (frequencies (map #(mod % 7) (range 1000))))",
            Value::Int(7),
        ),
        (r#"(format "%.2f" (/ 10.0 4))"#, Value::string("2.50")),
        (
            "(defn depth [n] (if (= n 0) 0 (inc (depth (dec n))))) (depth 300)",
            Value::Int(300),
        ),
    ];
    let zygote = zygote_of(&engine).await;
    for (program, expected) in cases {
        let step = run(&engine, program).await;
        assert_eq!(step.fail, None, "{program}: {step:?}");
        assert_eq!(step.return_value, Some(expected), "{program}");
    }
    assert_eq!(engine.zygote_pid(), Some(zygote), "served by one zygote");
}

#[tokio::test]
async fn cold_mode_spawns_runners_directly() {
    let dir = shipped_filter_dir("cold", "", 1);
    let engine = engine_for(&real_runner(), &dir, SpawnMode::Cold);
    assert!(engine.wait_warm(Duration::from_secs(10)).await);
    assert_eq!(engine.zygote_pid(), None);
    let step = run(&engine, "(* 6 7)").await;
    assert_eq!(step.return_value, Some(Value::Int(42)), "{step:?}");
}

#[tokio::test]
async fn forbidden_operation_in_a_forked_runner_is_a_sandbox_violation() {
    let dir = shipped_filter_dir("sigsys", "", 0);
    let engine = engine_for(&probe_runner(&dir, "open"), &dir, SpawnMode::Zygote);
    let step = run(&engine, "1").await;
    assert_eq!(
        step.reason(),
        Some(FailReason::SandboxViolation),
        "{step:?}"
    );
    assert!(engine.zygote_pid().is_some(), "served by the zygote");
}

#[tokio::test]
async fn panics_and_crashes_of_forked_runners_are_runner_crashed() {
    let dir = shipped_filter_dir("crash", "", 0);
    let engine = engine_for(&probe_runner(&dir, "panic"), &dir, SpawnMode::Zygote);
    let step = run(&engine, "1").await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
    assert_eq!(detail(&step, "exit_code"), Some(&Value::Int(101)));
    // The panic message comes through the stderr pipe into the supervisor's log; the client
    // sees only its length, never its text.
    assert_eq!(detail(&step, "stderr"), None);
    assert!(
        matches!(detail(&step, "stderr_bytes"), Some(Value::Int(n)) if *n > 10),
        "{step:?}"
    );
    assert!(
        !format!("{:?}", step.fail).contains("probe panic"),
        "{step:?}"
    );

    let engine = engine_for(
        &probe_runner(&dir, "stack-overflow"),
        &dir,
        SpawnMode::Zygote,
    );
    let step = run(&engine, "1").await;
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
    assert_eq!(detail(&step, "signal"), Some(&Value::Int(11)));
}

#[tokio::test]
async fn cpu_limit_in_a_forked_runner_is_a_timeout_with_exact_cpu_time() {
    let dir = shipped_filter_dir("spin", "timeout_ms = 15000\ncpu_ms = 1000", 0);
    let engine = engine_for(&probe_runner(&dir, "spin"), &dir, SpawnMode::Zygote);
    let step = run(&engine, "1").await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    assert_eq!(detail(&step, "limit"), Some(&Value::string("cpu")));
    // From the zygote's wait4 rusage. On this (virtualised, loaded) host the kernel's accounting
    // has reported as little as ~870 ms at the 1 s SIGXCPU, so only its order is checked.
    assert!(step.usage.cpu_ms >= 500, "{step:?}");
}

#[tokio::test]
async fn a_dead_zygote_fails_in_flight_executions_clearly_and_is_replaced() {
    let dir = shipped_filter_dir("death", "timeout_ms = 5000", 2);
    let engine = Arc::new(engine_for(&real_runner(), &dir, SpawnMode::Zygote));
    assert!(engine.wait_warm(Duration::from_secs(10)).await);
    let zygote = zygote_of(&engine).await;
    let e2 = Arc::clone(&engine);
    let in_flight = tokio::spawn(async move { run(&e2, "(loop [] (recur))").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Our own unreaped child, so signalling it by pid is safe.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(zygote),
        nix::sys::signal::SIGKILL,
    )
    .unwrap();
    let step = in_flight.await.unwrap();
    assert_eq!(step.reason(), Some(FailReason::RunnerCrashed), "{step:?}");
    let message = step.fail.as_ref().unwrap().message.clone();
    assert!(message.contains("zygote"), "{message}");
    assert!(
        step.usage.duration_ms < 2000,
        "failed at once, not at the deadline: {step:?}"
    );

    let step = run(&engine, "(+ 40 2)").await;
    assert_eq!(step.return_value, Some(Value::Int(42)), "{step:?}");
    let replacement = zygote_of(&engine).await;
    assert_ne!(replacement, zygote);
    assert!(engine.wait_warm(Duration::from_secs(10)).await);
    // The pool refilled from the new zygote (the runner that just finished may still be exiting).
    let mut kids = children_of(replacement);
    for _ in 0..200 {
        if kids.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        kids = children_of(replacement);
    }
    assert_eq!(kids.len(), 2, "{kids:?}");
    // The dead zygote was reaped: no zombie among our children.
    assert!(!children().contains(&zygote));
}

#[tokio::test]
async fn dropping_the_engine_ends_the_zygote_and_its_runners() {
    let dir = shipped_filter_dir("drop", "", 2);
    let engine = engine_for(&real_runner(), &dir, SpawnMode::Zygote);
    assert!(engine.wait_warm(Duration::from_secs(10)).await);
    let zygote = zygote_of(&engine).await;
    let pooled = children_of(zygote);
    assert_eq!(pooled.len(), 2);
    drop(engine);
    for _ in 0..500 {
        let alive = |p: &i32| std::path::Path::new(&format!("/proc/{p}")).exists();
        if !alive(&zygote) && !pooled.iter().any(alive) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("zygote {zygote} or its runners {pooled:?} outlived the engine");
}

#[tokio::test]
async fn a_finished_execution_reports_its_cpu_time_measured_by_the_supervisor() {
    let dir = shipped_filter_dir("cpu-finished", "timeout_ms = 20000\ncpu_ms = 20000", 0);
    for spawn in [SpawnMode::Zygote, SpawnMode::Cold] {
        let engine = engine_for(&real_runner(), &dir, spawn);
        let step = run(&engine, "(reduce + (map inc (range 900000)))").await;
        assert!(step.fail.is_none(), "{step:?}");
        // Read from the kernel's scheduler accounting at Finished, not the runner's word.
        assert!(step.usage.cpu_ms >= 20, "{:?}", step.usage);
        assert!(
            step.usage.cpu_ms <= step.usage.duration_ms + 5,
            "{:?}",
            step.usage
        );
    }
}

#[tokio::test]
async fn a_binary_that_is_no_zygote_is_spawned_cold() {
    let dir = temp_dir("no-zygote");
    let finished = ptc_shared::protocol::RunnerToSupervisor::Finished(Box::new(Step {
        return_value: Some(Value::Int(7)),
        ..Step::default()
    }));
    // Started with `--zygote`, this fake never says Hello (it waits for a Setup frame): the
    // engine gives up on it after a moment and spawns runners cold.
    let runner = fake_runner(&dir, &[ready(), finished], "cat $F0 >&3; rf; cat $F1 >&3");
    let mut config = EngineConfig::new(&runner, policies(&dir, "timeout_ms = 5000", 0));
    config.spawn = SpawnMode::Zygote;
    config.zygotes = 1;
    let engine = Engine::new(config).unwrap();
    let step = run(&engine, "x").await;
    assert_eq!(step.return_value, Some(Value::Int(7)), "{step:?}");
    assert_eq!(engine.zygote_pid(), None);
}

#[tokio::test]
async fn a_hung_zygote_is_replaced() {
    let dir = shipped_filter_dir("hung", "", 0);
    let engine = engine_for(&real_runner(), &dir, SpawnMode::Zygote);
    let zygote = zygote_of(&engine).await;
    let stopped = nix::unistd::Pid::from_raw(zygote);
    // Our own unreaped child: signalling it by pid is safe.
    nix::sys::signal::kill(stopped, nix::sys::signal::SIGSTOP).unwrap();
    let step = run(&engine, "1").await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    // Once its request has waited past the fork timeout, the next request replaces it.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let step = run(&engine, "(+ 1 1)").await;
    assert_eq!(step.return_value, Some(Value::Int(2)), "{step:?}");
    assert_ne!(engine.zygote_pid(), Some(zygote));
}
