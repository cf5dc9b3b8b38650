//! Test-side runner spawning: a socketpair, the runner exec'd with the socket on fd 3, an empty
//! environment and /dev/null on fds 0–2, then frames over the socket. (The production spawner is
//! the supervisor's; this one goes through `sh` only to place fds without `unsafe`.)
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use ptc_shared::client_protocol::RunRequest;
use ptc_shared::codec::{DEFAULT_MAX_FRAME, read_frame, write_frame};
use ptc_shared::protocol::{
    Execute, LandlockStatus, PROTOCOL_VERSION, RunnerToSupervisor, Setup, SupervisorToRunner,
};
use ptc_shared::{Limits, seccomp};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const RUNNER: &str = env!("CARGO_BIN_EXE_ptc-runner");
pub const PROBE: &str = env!("CARGO_BIN_EXE_ptc-runner-probe");
pub const POLICY: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../policies/seccomp/runner.json"
));
/// A filter that allows everything (logging mismatches): for testing landlock on its own.
pub const PERMISSIVE: &str = r#"{ "runner": { "mismatch_action": "log", "match_action": "allow", "filter": [ { "syscall": "getpid" } ] } }"#;
pub const HEAP: u64 = 32 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

/// fd 3 ← the socket (our stdin), 0 ← /dev/null, and fd 7 ← /dev/null as a deliberately leaked
/// descriptor the runner must close; `env -i` guarantees the runner's environment is empty.
const PLACE_FDS: &str = r#"exec /usr/bin/env -i "$0" "$@" 3<&0 </dev/null 7</dev/null"#;

pub mod zygote;

/// A spawned runner and our end of its socket. `child` is `None` for a runner forked by a zygote
/// (not our child: its end is reported by the zygote).
pub struct Runner {
    pub child: Option<Child>,
    pid: u32,
    pub sock: UnixStream,
}

/// Set to a directory to re-derive the seccomp allowlist (see policies/seccomp/README.md): every
/// runner then starts under `strace -ff -o DIR/trace` with the permissive filter.
const TRACE_VAR: &str = "PTC_SECCOMP_TRACE";

pub fn spawn(bin: &str, args: &[&str]) -> Runner {
    match std::env::var(TRACE_VAR) {
        Ok(dir) => {
            let out = format!("{dir}/trace");
            let traced: Vec<&str> = ["-ff", "-o", out.as_str(), bin]
                .into_iter()
                .chain(args.iter().copied())
                .collect();
            spawn_script(PLACE_FDS, "/usr/bin/strace", &traced)
        }
        Err(_) => spawn_script(PLACE_FDS, bin, args),
    }
}

/// Spawns `script` (run by `sh -c` with `$0` = bin, `$@` = args) with the socket on its stdin.
pub fn spawn_script(script: &str, bin: &str, args: &[&str]) -> Runner {
    spawn_script_with(script, bin, args, Stdio::null())
}

/// Like [`spawn`], with the runner's stderr on a pipe (read it with [`Runner::stderr_text`]).
pub fn spawn_with_stderr(bin: &str, args: &[&str]) -> Runner {
    spawn_script_with(PLACE_FDS, bin, args, Stdio::piped())
}

fn spawn_script_with(script: &str, bin: &str, args: &[&str], stderr: Stdio) -> Runner {
    let (ours, theirs) = UnixStream::pair().unwrap();
    ours.set_read_timeout(Some(TIMEOUT)).unwrap();
    let child = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .arg(bin)
        .args(args)
        .env_clear()
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    Runner {
        pid: child.id(),
        child: Some(child),
        sock: ours,
    }
}

/// Setup with the real policy compiled for this host.
/// `/proc/PID/NAME` as text.
pub fn proc_file(pid: u32, name: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/{name}")).unwrap()
}

/// fd number → link target, from `/proc/PID/fd`.
pub fn fds_of(pid: u32) -> std::collections::BTreeMap<u32, String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let target = std::fs::read_link(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().parse().unwrap(),
                target.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// The soft limit of one line of `/proc/PID/limits`, e.g. "Max open files".
pub fn soft_limit(limits: &str, name: &str) -> String {
    let line = limits.lines().find(|l| l.starts_with(name)).unwrap();
    line[name.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Asserts the rlimits every hardened runner has (from `setup()`'s limits), in `/proc/PID/limits`.
pub fn assert_hardened_rlimits(pid: u32) {
    let limits = proc_file(pid, "limits");
    let expected = ptc_shared::protocol::RunnerRlimits::for_limits(&Limits {
        heap_bytes: HEAP,
        ..Limits::default()
    });
    let soft = |name| soft_limit(&limits, name);
    assert_eq!(soft("Max data size"), expected.data_bytes.to_string());
    assert_eq!(soft("Max open files"), expected.nofile.to_string());
    assert_eq!(soft("Max file size"), "0");
    assert_eq!(soft("Max core file size"), "0");
}

/// The next frame, past the runner's `Imported` if that comes first (a real runner sends it
/// once its data is in and before the program starts; a probe, or a run that fails before its
/// program, sends none).
pub fn recv_after_import(r: &mut Runner) -> Option<RunnerToSupervisor> {
    match r.recv() {
        Some(RunnerToSupervisor::Imported) => r.recv(),
        other => other,
    }
}

/// The peak a `MemoryExceeded` frame reports (anything else fails the test).
pub fn memory_exceeded(r: &mut Runner) -> u64 {
    match recv_after_import(r) {
        Some(RunnerToSupervisor::MemoryExceeded { peak_bytes }) => peak_bytes,
        other => panic!("expected MemoryExceeded, got {other:?}"),
    }
}

/// An `Execute` frame for `request` under `limits` (in production only the engine builds one).
pub fn execute_frame(mut request: RunRequest, limits: Limits) -> SupervisorToRunner {
    let context = std::mem::take(&mut request.context);
    SupervisorToRunner::Execute(Box::new(Execute {
        version: PROTOCOL_VERSION,
        limits,
        request,
        context,
    }))
}

pub fn setup() -> Setup {
    setup_with(if std::env::var_os(TRACE_VAR).is_some() {
        PERMISSIVE
    } else {
        POLICY
    })
}

pub fn setup_with(policy: &str) -> Setup {
    let bpf = seccomp::compile_filter(policy.as_bytes(), seccomp::RUNNER_FILTER).unwrap();
    Setup::for_limits(
        &Limits {
            heap_bytes: HEAP,
            ..Limits::default()
        },
        bpf,
        true,
    )
}

/// Setup for an execution's own limits (heap budget and rlimits follow them), real policy.
pub fn setup_for(limits: &Limits) -> Setup {
    let mut s = setup();
    let fresh = Setup::for_limits(limits, Vec::new(), true);
    s.heap_budget_bytes = fresh.heap_budget_bytes;
    s.rlimits = fresh.rlimits;
    s
}

impl Runner {
    /// Asserts that the runner's end of the socket closes (the process is gone) within 5 s.
    pub fn assert_gone(&mut self) {
        self.sock
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 1];
        let n = std::io::Read::read(&mut self.sock, &mut buf).unwrap();
        assert_eq!(n, 0, "the runner must be gone");
    }

    /// A runner forked by a zygote, known by its pid and our end of its socket.
    pub fn forked(pid: i32, sock: UnixStream) -> Runner {
        Runner {
            child: None,
            pid: u32::try_from(pid).unwrap(),
            sock,
        }
    }

    pub fn send(&mut self, msg: &SupervisorToRunner) {
        write_frame(&mut self.sock, msg, DEFAULT_MAX_FRAME).unwrap();
    }

    /// The next frame; `None` at end of stream or on a read error (e.g. the runner died).
    pub fn recv(&mut self) -> Option<RunnerToSupervisor> {
        read_frame(&mut self.sock, DEFAULT_MAX_FRAME).ok().flatten()
    }

    /// Sends Setup and returns the landlock status from `Ready`.
    pub fn harden(&mut self, setup: Setup) -> LandlockStatus {
        self.send(&SupervisorToRunner::Setup(setup));
        self.ready()
    }

    /// Reads `Ready` (the Setup was sent already) and returns the landlock status.
    pub fn ready(&mut self) -> LandlockStatus {
        match self.recv() {
            Some(RunnerToSupervisor::Ready { landlock }) => landlock,
            other => panic!("expected Ready, got {other:?}"),
        }
    }

    /// Everything the runner wrote to its stderr (spawned by [`spawn_with_stderr`]), trimmed.
    pub fn stderr_text(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut err) = self.child.as_mut().and_then(|c| c.stderr.take()) {
            std::io::Read::read_to_string(&mut err, &mut text).unwrap();
        }
        text.trim().to_string()
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the runner to end (killing it after the timeout so a test never hangs).
    pub fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        let child = self
            .child
            .as_mut()
            .expect("a forked runner is waited for through its zygote");
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > TIMEOUT {
                let _ = child.kill();
                panic!("runner did not exit within {TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// How a process ended, for readable assertions.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    Code(i32),
    Signal(i32),
}

pub fn end(status: ExitStatus) -> End {
    match (status.code(), status.signal()) {
        (Some(c), _) => End::Code(c),
        (None, Some(s)) => End::Signal(s),
        _ => panic!("status with neither code nor signal: {status:?}"),
    }
}

/// A test that cannot run on this host says so loudly instead of passing quietly; under CI
/// (`CI=true`: root, a full kernel, every binary installed) a skip is a failure.
pub fn skip(reason: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!ci, "a test may not skip under CI: {reason}");
    eprintln!("\n*** SKIPPED (not a pass): {reason} ***\n");
}

/// Spawns `script` like [`spawn_script`], with the runner's stderr on a pipe (read it with
/// [`Runner::stderr_text`]) and, with `user`, the script (so the runner it execs) started as that
/// (uid, gid): as root, std also drops the supplementary groups first.
pub fn spawn_script_as(script: &str, bin: &str, user: Option<(u32, u32)>) -> Runner {
    use std::os::unix::process::CommandExt;
    let (ours, theirs) = UnixStream::pair().unwrap();
    ours.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(script)
        .arg(bin)
        .env_clear()
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    let child = cmd.spawn().unwrap();
    Runner {
        pid: child.id(),
        child: Some(child),
        sock: ours,
    }
}

/// A copy of a binary in a fresh directory any user may enter (the build tree may lie under one
/// that only its owner can), removed with the directory when dropped.
pub struct OpenCopy {
    dir: std::path::PathBuf,
    pub path: std::path::PathBuf,
}

impl OpenCopy {
    pub fn new(bin: &str) -> OpenCopy {
        use std::os::unix::fs::PermissionsExt;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ptc-open-copy-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let open = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(&dir, open.clone()).unwrap();
        let path = dir.join("ptc-runner");
        std::fs::copy(bin, &path).unwrap();
        std::fs::set_permissions(&path, open).unwrap();
        OpenCopy { dir, path }
    }
}

impl Drop for OpenCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
