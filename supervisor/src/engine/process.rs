//! Runner processes: spawning them, killing them, and reaping them with their CPU time.
//!
//! Spawning is `posix_spawn` (vfork+exec in glibc: its cost does not grow with the supervisor's
//! heap, and no Rust code runs in the child) from a long-lived spawner thread (one per shard, see
//! `spawner.rs`). That thread is the runners' parent thread as far as `PR_SET_PDEATHSIG` is
//! concerned, so it lives exactly as long as the `Spawner`: when the engine goes away its runners
//! are killed by the kernel.
//!
//! The child gets: fd 3 = its end of a fresh `AF_UNIX` stream socketpair (placed by a dup2 file
//! action; every supervisor fd is close-on-exec), fds 0–1 = `/dev/null`, fd 2 = a pipe the engine
//! reads only to explain an abnormal exit, an empty environment,
//! `argv = [path]`, its own session, default signal dispositions and an empty signal mask.
//!
//! Each process is held through a pidfd: kills go through `pidfd_send_signal` (never a recycled
//! pid), exits are awaited by polling the pidfd, and reaping is `waitid(P_PIDFD)`. A process is
//! reaped exactly once: by [`RunnerProc::wait`], or, when a handle is dropped unreaped, after a
//! SIGKILL by the reaper thread. So no zombie outlives its handle by more than a kill's latency.
//!
//! With [`SpawnMode::Zygote`] (the default) each spawner thread instead starts one
//! `ptc-runner --zygote` (by the same `posix_spawn`), which forks the shard's runners (see
//! `zygote.rs`): the exec, dynamic linking and runtime warm-up are paid once, not per execution.
//! Such a runner is the zygote's child: it is killed through the pidfd the zygote sends, and its
//! exit status and CPU time come from the zygote's `Exited` report instead of our own `waitid`.
//! If the zygote cannot be started (or dies and cannot be restarted) runners are spawned cold.

use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
use nix::sys::signal::SigSet;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, pidfd_open, pidfd_send_signal, waitid};
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, mpsc};
use tokio::io::unix::AsyncFd;

/// The runner's IPC socket is always this fd.
pub const RUNNER_FD: RawFd = 3;
/// `POSIX_SPAWN_SETSID` (glibc ≥ 2.26): nix does not name it.
const POSIX_SPAWN_SETSID: i32 = 0x80;

/// Spawning or waiting for a runner failed at the OS level.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("runner path is not a valid C string")]
    BadPath,
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        source: std::io::Error,
    },
    #[error("the spawner thread is gone")]
    SpawnerGone,
    #[error("the zygote process died; its runners died with it")]
    ZygoteDied,
    #[error("the zygote could not fork a runner: {0}")]
    ForkFailed(std::io::Error),
}

/// How runners are started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpawnMode {
    /// Forked by one long-lived `ptc-runner --zygote` (restarted if it dies; cold spawn while it
    /// cannot be started).
    #[default]
    Zygote,
    /// One `posix_spawn` of the runner binary per runner.
    Cold,
}

/// `map_err` helpers: an OS error from a nix or std call, named by what was being done.
pub(super) fn os(what: &'static str) -> impl FnOnce(nix::Error) -> ProcessError {
    move |e| ProcessError::Os {
        what,
        source: std::io::Error::from(e),
    }
}

pub(super) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> ProcessError {
    move |source| ProcessError::Os { what, source }
}

/// A freshly spawned runner: its process and the supervisor's end of its socket (blocking mode).
#[derive(Debug)]
pub struct Spawned {
    pub proc: RunnerProc,
    pub sock: UnixStream,
}

/// A runner's two descriptors before it exists: our end of its IPC socket (with the preamble
/// already written), its end, and the read and write ends of its stderr pipe.
pub(crate) struct RunnerFds {
    pub ours: UnixStream,
    pub theirs: OwnedFd,
    pub err_r: std::fs::File,
    pub err_w: OwnedFd,
}

impl RunnerFds {
    pub fn new(preamble: &[u8]) -> Result<RunnerFds, ProcessError> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::Stream,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(os("socketpair"))?;
        let theirs = above(theirs, RUNNER_FD)?;
        let mut ours = UnixStream::from(ours);
        ours.write_all(preamble).map_err(io("writing setup"))?;
        // stderr is a pipe we read only after an abnormal exit (a panic message, say); its 64 KiB
        // buffer is the cap: a runner that fills it blocks until the deadline kill.
        let (err_r, err_w) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(os("pipe2"))?;
        nix::fcntl::fcntl(
            &err_r,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .map_err(os("fcntl"))?;
        let err_w = above(err_w, 2)?;
        Ok(RunnerFds {
            ours,
            theirs,
            err_r: std::fs::File::from(err_r),
            err_w,
        })
    }
}

/// Runs on the spawner thread: one cold runner.
pub(crate) fn spawn_one(
    path: &CString,
    preamble: &[u8],
    reaper: &Reaper,
) -> Result<Spawned, ProcessError> {
    let fds = RunnerFds::new(preamble)?;
    let pid = spawn_process(path, &[], &fds.theirs, Some(&fds.err_w))?;
    drop(fds.theirs);
    drop(fds.err_w);
    let mut proc = RunnerProc::adopt(pid, reaper.clone())?;
    proc.stderr = Some(fds.err_r);
    Ok(Spawned {
        proc,
        sock: fds.ours,
    })
}

/// `posix_spawn`s `path` with `args` after argv[0]: fd 3 ← `fd3`, fd 2 ← `stderr` (or
/// /dev/null), fds 0–1 ← /dev/null, an empty environment, its own session, default signal
/// dispositions and an empty mask. Every other fd of ours is close-on-exec.
pub(crate) fn spawn_process(
    path: &CString,
    args: &[&std::ffi::CStr],
    fd3: &OwnedFd,
    stderr: Option<&OwnedFd>,
) -> Result<i32, ProcessError> {
    let mut actions = PosixSpawnFileActions::init().map_err(os("spawn file actions"))?;
    let null = c"/dev/null";
    actions
        .add_open(
            0,
            null,
            nix::fcntl::OFlag::O_RDWR,
            nix::sys::stat::Mode::empty(),
        )
        .and_then(|()| actions.add_dup2(0, 1))
        .and_then(|()| match stderr {
            Some(err) => actions.add_dup2(err.as_raw_fd(), 2),
            None => actions.add_dup2(0, 2),
        })
        .and_then(|()| actions.add_dup2(fd3.as_raw_fd(), RUNNER_FD))
        .map_err(os("spawn file actions"))?;
    let mut attr = PosixSpawnAttr::init().map_err(os("spawn attributes"))?;
    let flags = PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
        | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF
        | PosixSpawnFlags::from_bits_retain(POSIX_SPAWN_SETSID);
    attr.set_flags(flags)
        .and_then(|()| attr.set_sigmask(&SigSet::empty()))
        .and_then(|()| attr.set_sigdefault(&SigSet::all()))
        .map_err(os("spawn attributes"))?;
    let argv: Vec<&std::ffi::CStr> = std::iter::once(path.as_c_str())
        .chain(args.iter().copied())
        .collect();
    let envp: [&std::ffi::CStr; 0] = [];
    let pid =
        posix_spawn(path.as_c_str(), &actions, &attr, &argv, &envp).map_err(os("posix_spawn"))?;
    Ok(pid.as_raw())
}

/// `fd`, or a close-on-exec duplicate of it numbered above `min`: a file action's source must not
/// be a target the actions overwrite first, and `dup2(3, 3)` would keep close-on-exec. Only a
/// supervisor started with fds 0–2 closed gets low numbers here.
pub(crate) fn above(fd: OwnedFd, min: RawFd) -> Result<OwnedFd, ProcessError> {
    let mut held = Vec::new();
    let mut fd = fd;
    // Each `try_clone` (F_DUPFD_CLOEXEC from 3) takes the lowest free number; holding the previous
    // ones makes the numbers climb.
    while fd.as_raw_fd() <= min {
        let next = fd.try_clone().map_err(io("dup"))?;
        held.push(fd);
        fd = next;
    }
    Ok(fd)
}

/// How a runner process ended, as the kernel reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitInfo {
    /// `Some(code)` for a normal exit.
    pub code: Option<i32>,
    /// `Some(signal)` when a signal ended it.
    pub signal: Option<i32>,
    /// User + system CPU time of the process.
    pub cpu_ms: u64,
    /// The start of what it wrote to stderr, read only after an abnormal exit.
    pub stderr: Option<String>,
}

/// One runner process, owned through its pidfd.
#[derive(Debug)]
pub struct RunnerProc {
    pid: i32,
    /// `None` once the process is known to have ended (reaped by us or by the zygote).
    pidfd: Option<PidFd>,
    exit: ExitSource,
    /// Read end of the runner's stderr pipe (non-blocking).
    stderr: Option<std::fs::File>,
    /// Its `/proc/PID/schedstat`, opened while the pid was known to be this process's (see
    /// [`RunnerProc::cpu_ms_now`]); `None` if that could not be established.
    sched: Option<std::fs::File>,
}

/// Who reaps the process and so learns how it ended.
#[derive(Debug)]
enum ExitSource {
    /// Our child: `waitid` on the pidfd; the reaper thread reaps it if the handle is dropped.
    Child(Reaper),
    /// The zygote's child: the zygote reaps it and its report lands in this slot.
    Zygote(Arc<ExitSlot>),
}

/// How a zygote-forked runner ended, as the zygote reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
        cpu_ms: u64,
    },
    /// The zygote died first (the runner died with it); no status is available.
    Lost,
}

/// Where the zygote client's reader thread puts a runner's end, and wakes its waiter.
#[derive(Debug, Default)]
pub(crate) struct ExitSlot {
    ended: Mutex<Option<Ended>>,
    notify: tokio::sync::Notify,
}

impl ExitSlot {
    pub fn set(&self, ended: Ended) {
        if let Ok(mut e) = self.ended.lock() {
            *e = Some(ended);
        }
        // A stored permit: a waiter that checks the slot just before this still wakes.
        self.notify.notify_one();
    }

    fn get(&self) -> Option<Ended> {
        self.ended.lock().ok().and_then(|e| *e)
    }
}

/// A pidfd, registered with tokio's reactor once someone waits on it.
#[derive(Debug)]
enum PidFd {
    Plain(OwnedFd),
    Polled(AsyncFd<OwnedFd>),
}

impl PidFd {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            PidFd::Plain(fd) => fd.as_fd(),
            PidFd::Polled(a) => a.get_ref().as_fd(),
        }
    }

    fn into_owned(self) -> OwnedFd {
        match self {
            PidFd::Plain(fd) => fd,
            PidFd::Polled(a) => a.into_inner(),
        }
    }
}

impl RunnerProc {
    /// A runner forked by the zygote, with the pidfd it sent and the slot its end will land in.
    pub(crate) fn forked(
        pid: i32,
        pidfd: OwnedFd,
        slot: Arc<ExitSlot>,
        stderr: std::fs::File,
    ) -> RunnerProc {
        // The zygote may reap the child at any time, and then its pid can be reused. A proc file
        // stays bound to the process it was opened for, so if the process is still running
        // after the open (its pidfd is not readable yet), the file is this runner's.
        let sched = open_schedstat(pid).filter(|_| still_running(pidfd.as_fd()));
        RunnerProc {
            pid,
            pidfd: Some(PidFd::Plain(pidfd)),
            exit: ExitSource::Zygote(slot),
            stderr: Some(stderr),
            sched,
        }
    }

    /// Takes our own child `pid` (just spawned, so not yet reaped) into a handle.
    pub(crate) fn adopt(pid: i32, reaper: Reaper) -> Result<RunnerProc, ProcessError> {
        let rpid = Pid::from_raw(pid).ok_or(ProcessError::Os {
            what: "posix_spawn",
            source: std::io::Error::other("invalid pid"),
        })?;
        match pidfd_open(rpid, rustix::process::PidfdFlags::empty()) {
            Ok(fd) => Ok(RunnerProc {
                pid,
                pidfd: Some(PidFd::Plain(fd)),
                exit: ExitSource::Child(reaper),
                stderr: None,
                // Our own unreaped child: the pid cannot be anyone else's.
                sched: open_schedstat(pid),
            }),
            Err(e) => {
                // Without a pidfd we cannot kill it safely later: kill it now and reap by pid.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::SIGKILL,
                );
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
                Err(ProcessError::Os {
                    what: "pidfd_open",
                    source: e.into(),
                })
            }
        }
    }

    /// The CPU time used so far, exact (the scheduler's run time from `/proc/PID/schedstat`), or
    /// `None` when it cannot be read or the process may already have been reaped. One `pread` of
    /// the file opened when the handle was made (off the request's path): that file is bound to
    /// this process, and reading it fails once the process is reaped, so a reused pid can never
    /// be read by mistake.
    pub fn cpu_ms_now(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        self.pidfd.as_ref()?;
        let file = self.sched.as_ref()?;
        let mut buf = [0u8; 128];
        let n = file.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(buf.get(..n)?).ok()?;
        let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
        Some(ns / 1_000_000)
    }

    /// Whether the zygote reaps this process (it was forked by it), not us.
    pub fn reaped_by_zygote(&self) -> bool {
        matches!(self.exit, ExitSource::Zygote(_))
    }

    /// The process id (for logs and tests).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Sends SIGKILL. Harmless if it already exited (the pidfd keeps the pid from being reused).
    pub fn kill(&self) {
        if let Some(fd) = &self.pidfd {
            let _ = pidfd_send_signal(fd.fd(), Signal::KILL);
        }
    }

    /// Waits for the process to exit, then reaps it. Cancel-safe: if the future is dropped, the
    /// handle still owns the process and `Drop` kills and reaps it.
    pub async fn wait(&mut self) -> Result<ExitInfo, ProcessError> {
        if let ExitSource::Zygote(slot) = &self.exit {
            let slot = Arc::clone(slot);
            loop {
                if let Some(info) = self.try_reap()? {
                    return Ok(info);
                }
                slot.notify.notified().await;
            }
        }
        loop {
            if let Some(info) = self.try_reap()? {
                return Ok(info);
            }
            let afd = self.polled()?;
            let mut guard = afd.readable().await.map_err(io("polling pidfd"))?;
            guard.clear_ready();
        }
    }

    /// The pidfd registered with the reactor (registered on first use; it stays in `self`, so a
    /// dropped `wait` future never loses the fd).
    fn polled(&mut self) -> Result<&AsyncFd<OwnedFd>, ProcessError> {
        if let Some(PidFd::Plain(_)) = self.pidfd {
            let Some(plain) = self.pidfd.take() else {
                return Err(ProcessError::SpawnerGone);
            };
            let fd = plain.into_owned();
            // The AsyncFd owns the fd, so it cannot be closed while registered (the I/O-safety
            // concern behind the deprecation does not arise).
            #[allow(deprecated)]
            let afd = AsyncFd::with_interest(fd, tokio::io::Interest::READABLE);
            match afd {
                Ok(a) => self.pidfd = Some(PidFd::Polled(a)),
                Err(e) => {
                    return Err(ProcessError::Os {
                        what: "registering pidfd",
                        source: e,
                    });
                }
            }
        }
        match &self.pidfd {
            Some(PidFd::Polled(a)) => Ok(a),
            _ => Err(ProcessError::SpawnerGone),
        }
    }

    /// Reaps the process if it has exited.
    pub fn try_reap(&mut self) -> Result<Option<ExitInfo>, ProcessError> {
        if let ExitSource::Zygote(slot) = &self.exit {
            return match slot.get() {
                None => Ok(None),
                Some(Ended::Lost) => {
                    self.pidfd = None;
                    Err(ProcessError::ZygoteDied)
                }
                Some(Ended::Exited {
                    code,
                    signal,
                    cpu_ms,
                }) => Ok(Some(self.reaped(code, signal, cpu_ms))),
            };
        }
        let Some(fd) = &self.pidfd else {
            return Err(ProcessError::SpawnerGone);
        };
        // Peek first, so the CPU time can be read from /proc while the zombie still exists.
        let opts = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let peek = waitid(WaitId::PidFd(fd.fd()), opts).map_err(|e| ProcessError::Os {
            what: "waitid",
            source: e.into(),
        })?;
        let Some(status) = peek else { return Ok(None) };
        let cpu_ms = zombie_cpu_ms(self.pid);
        let _ = waitid(
            WaitId::PidFd(fd.fd()),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
        );
        let (code, signal) = (status.exit_status(), status.terminating_signal());
        Ok(Some(self.reaped(code, signal, cpu_ms)))
    }

    /// The exit of a process that is gone: no pidfd left, and its stderr if it failed.
    fn reaped(&mut self, code: Option<i32>, signal: Option<i32>, cpu_ms: u64) -> ExitInfo {
        self.pidfd = None;
        let stderr = if code == Some(0) {
            None
        } else {
            self.stderr_head()
        };
        ExitInfo {
            code,
            signal,
            cpu_ms,
            stderr,
        }
    }

    /// Up to 2 KiB of the runner's stderr (lossy UTF-8, trimmed); `None` if it wrote nothing.
    fn stderr_head(&mut self) -> Option<String> {
        use std::io::Read;
        let mut buf = Vec::new();
        let file = self.stderr.take()?;
        // Non-blocking: stops at what is buffered, at EOF, or at the cap.
        let _ = file.take(2048).read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf).trim().to_string();
        (!text.is_empty()).then_some(text)
    }
}

impl Drop for RunnerProc {
    fn drop(&mut self) {
        if let Some(fd) = self.pidfd.take() {
            let fd = fd.into_owned();
            let _ = pidfd_send_signal(&fd, Signal::KILL);
            // The zygote reaps its own children (and reports them to a slot nobody reads).
            if let ExitSource::Child(reaper) = &self.exit {
                reaper.reap(fd);
            }
        }
    }
}

fn open_schedstat(pid: i32) -> Option<std::fs::File> {
    std::fs::File::open(format!("/proc/{pid}/schedstat")).ok()
}

/// Whether the process behind `pidfd` has not exited yet (a pidfd turns readable at exit).
fn still_running(pidfd: BorrowedFd<'_>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(pidfd, PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
}

/// CPU time of an exited, not yet reaped child, from `/proc/PID/stat` (utime + stime). Safe to
/// read by pid: an unreaped zombie's pid cannot be reused. 0 if unreadable.
fn zombie_cpu_ms(pid: i32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
    let stime: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
    let hz = clock_ticks();
    (utime + stime).saturating_mul(1000) / hz
}

fn clock_ticks() -> u64 {
    use nix::unistd::{SysconfVar, sysconf};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t.unsigned_abs(),
        _ => 100,
    }
}

/// Reaps killed processes off the async path: a blocking `waitid` on a dedicated thread.
#[derive(Debug, Clone)]
pub(crate) struct Reaper {
    tx: mpsc::Sender<OwnedFd>,
}

impl Reaper {
    pub(crate) fn start() -> Result<Reaper, ProcessError> {
        let (tx, rx) = mpsc::channel::<OwnedFd>();
        std::thread::Builder::new()
            .name("ptc-reaper".into())
            .spawn(move || {
                while let Ok(fd) = rx.recv() {
                    // Blocks until the (already SIGKILLed) process is gone, then reaps it.
                    let _ = waitid(WaitId::PidFd(fd.as_fd()), WaitIdOptions::EXITED);
                }
            })
            .map_err(io("starting the reaper thread"))?;
        Ok(Reaper { tx })
    }

    fn reap(&self, fd: OwnedFd) {
        if let Err(mpsc::SendError(fd)) = self.tx.send(fd) {
            // Reaper gone (process exiting): reap inline; the process was killed, so this is brief.
            let _ = waitid(WaitId::PidFd(fd.as_fd()), WaitIdOptions::EXITED);
        }
    }
}
