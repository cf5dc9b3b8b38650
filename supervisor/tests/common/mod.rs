//! Test helpers: temporary policy directories, fake runners (shell scripts that replay frames),
//! the real `ptc-runner` binary, and leak checks (child processes and fds of this process).
#![allow(dead_code, clippy::unwrap_used)]

#[path = "../../benches/support/mod.rs"]
mod support;

use ptc_shared::Value;
use ptc_shared::codec::{DEFAULT_MAX_FRAME, encode_frame};
use ptc_shared::protocol::ToolDecl;
use ptc_shared::protocol::{LandlockStatus, RunnerToSupervisor};
use ptc_supervisor::engine::{Engine, EngineConfig, RunRequest, SpawnMode, ToolHandler};
use ptc_supervisor::policy::{Policy, load_dir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh temporary directory, unique per call, removed with everything in it when the guard
/// is dropped (also when the test panics), so repeated runs leave nothing behind in /tmp.
pub fn temp_dir(tag: &str) -> TempDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("ptc-engine-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

/// A directory that is removed when dropped; reads as the `Path` it names.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TempDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A minimal seccomp filter: enough to compile (fake runners never install it).
pub const FILTER: &str = r#"{"runner": {"mismatch_action": "kill_process", "match_action": "allow",
    "filter": [{"syscall": "read"}, {"syscall": "write"}, {"syscall": "exit_group"}]}}"#;

/// A policy named `default` with the given TOML limits section and pool size.
pub fn policies(dir: &Path, limits: &str, warm: usize) -> BTreeMap<String, Policy> {
    std::fs::write(dir.join("f.json"), FILTER).unwrap();
    let text = format!(
        "[limits]\n{limits}\n[isolation]\nseccomp = \"f.json\"\nlandlock = \"best_effort\"\n[pool]\nwarm = {warm}\n"
    );
    std::fs::write(dir.join("default.toml"), text).unwrap();
    load_dir(dir).unwrap()
}

pub fn frame(msg: &RunnerToSupervisor) -> Vec<u8> {
    encode_frame(msg, DEFAULT_MAX_FRAME).unwrap()
}

pub fn ready() -> RunnerToSupervisor {
    RunnerToSupervisor::Ready {
        landlock: LandlockStatus::Enforced,
    }
}

/// Writes `frames` to files in `dir` and a `/bin/sh` fake runner whose `body` may use
/// `$F0`, `$F1`, ... (paths of the frame files) and `rf` (reads and discards one whole frame from
/// fd 3: Setup, Execute, or a ToolResult). Every body starts by reading Setup.
pub fn fake_runner(dir: &Path, frames: &[RunnerToSupervisor], body: &str) -> PathBuf {
    let mut vars = String::new();
    for (i, f) in frames.iter().enumerate() {
        let p = dir.join(format!("frame{i}.bin"));
        std::fs::write(&p, frame(f)).unwrap();
        vars.push_str(&format!("F{i}={}\n", p.display()));
    }
    let script = format!("#!/bin/sh\n{vars}{RF}rf\n{body}\n");
    let path = dir.join("fake-runner");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Reads one frame: the 4-byte big-endian length, then that many bytes (`head -c` never over-reads).
const RF: &str = "rf() {\n  n=$(/usr/bin/head -c 4 <&3 | /usr/bin/od -An -tu1 | \
    /usr/bin/awk '{print $1*16777216+$2*65536+$3*256+$4}')\n  /usr/bin/head -c \"$n\" <&3 >/dev/null\n}\n";

/// An engine spawning `runner` cold (fake runners are shell scripts, not zygotes), its pools
/// fixed at their policy's `warm` (growth is tested in `engine_pool.rs`).
pub fn engine(runner: &Path, policies: BTreeMap<String, Policy>) -> Engine {
    let mut config = EngineConfig::new(runner, policies);
    config.spawn = SpawnMode::Cold;
    config.pool.max = 0;
    Engine::new(config).unwrap()
}

pub fn request(program: &str) -> RunRequest {
    RunRequest {
        program: program.to_string(),
        ..RunRequest::default()
    }
}

/// Live children (and zombies) of this process, over all threads.
pub fn children() -> Vec<i32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    out
}

/// Children of `pid` (any thread), from /proc.
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    out
}

/// Whether `pid` is a runner zygote (`ptc-runner --zygote`).
pub fn is_zygote(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"--zygote"))
}

/// Runner processes of this process: its children that are not zygotes, and the zygotes'
/// children.
pub fn runners() -> Vec<i32> {
    let mut out = Vec::new();
    for c in children() {
        if is_zygote(c) {
            out.extend(children_of(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// [`runners`] that are already `ptc-runner` (a freshly forked child may still carry its
/// zygote's name for a moment).
pub fn named_runners() -> Vec<i32> {
    runners()
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "ptc-runner")
        })
        .collect()
}

/// Zygotes among this process's children.
pub fn zygotes() -> Vec<i32> {
    children().into_iter().filter(|p| is_zygote(*p)).collect()
}

pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Waits up to `ms` for this process to have no children left.
pub async fn no_children_within(ms: u64) -> Vec<i32> {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    loop {
        let c = children();
        if c.is_empty() || std::time::Instant::now() > until {
            return c;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// The real runner binary (`target/<profile>/ptc-runner`), brought up to date once per test
/// binary (a no-op build when it is current, so a stale runner is never tested).
pub fn real_runner() -> PathBuf {
    static RUNNER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    RUNNER
        .get_or_init(|| support::runner_bin("ptc-runner"))
        .clone()
}

/// The TEST-ONLY hostile probe binary (`ptc-runner-probe`), built like [`real_runner`].
pub fn probe_binary() -> PathBuf {
    static PROBE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PROBE
        .get_or_init(|| support::runner_bin("ptc-runner-probe"))
        .clone()
}

/// The shipped policies directory.
pub fn shipped_policies() -> PathBuf {
    support::shipped_policies()
}

/// A policy directory with the shipped seccomp filter and the given limits and pool size.
pub fn shipped_filter_dir(tag: &str, limits: &str, warm: usize) -> TempDir {
    let dir = temp_dir(tag);
    let filter = shipped_policies().join("seccomp/runner.json");
    let text = format!(
        "[limits]\n{limits}\n[isolation]\nseccomp = \"{}\"\nlandlock = \"best_effort\"\n[pool]\nwarm = {warm}\n",
        filter.display()
    );
    std::fs::write(dir.join("default.toml"), text).unwrap();
    dir
}

/// Runs `(tool/inspect {})` under `policy` (the engine's default when `None`), with `tool`
/// answering `inspect`; returns the vector the tool reported.
pub async fn run_inspect(
    engine: &Engine,
    policy: Option<&str>,
    tool: std::sync::Arc<dyn ToolHandler>,
) -> Vec<Value> {
    let req = RunRequest {
        program: "(tool/inspect {})".into(),
        tools: vec![ToolDecl {
            name: "inspect".into(),
            signature: None,
            description: None,
        }],
        policy: policy.map(Into::into),
        ..RunRequest::default()
    };
    let step = engine.execute(req, tool).await;
    match step.return_value {
        Some(Value::Vector(v)) => v,
        other => panic!("{policy:?}: no report: {other:?} {:?}", step.fail),
    }
}

/// CPU ticks (utime) of a process, 0 if gone.
pub fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace()
        .nth(11)
        .and_then(|u| u.parse().ok())
        .unwrap_or(0)
}

/// A test that cannot run on this host says so loudly instead of passing quietly; under CI
/// (`CI=true`: root, a full kernel, every binary installed) a skip is a failure.
pub fn skip(reason: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "a test may not skip under CI: {reason}");
    eprintln!("\n*** SKIPPED (not a pass): {reason} ***\n");
}
