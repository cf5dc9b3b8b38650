//! Warm pools: per policy, runners that are already spawned with the policy's `Setup` and
//! hardening themselves (or done, waiting for `Execute`).
//!
//! A pooled runner is handed out once and never returns to the pool. The pool is refilled in the
//! background up to its current target (pooled + being spawned never exceeds it) when an
//! execution that took a pooled runner ends, so a runner's start-up CPU never competes with the
//! request on a small machine.
//!
//! The target follows demand ([`PoolBounds`]): it starts at the policy's `warm` count (the
//! floor), doubles, up to the bound, whenever a request finds no runner that has finished its
//! setup (the pool was empty, or the runner taken had not yet sent `Ready`), and falls back to
//! the floor once no runner was taken for the idle period; the runners above it are then killed.
//! The engine's trim thread ([`trim_idle`]) applies the idle rule, so an idle pool shrinks with
//! no request arriving. Invariant: floor ≤ target ≤ bound, and pooled + filling ≤ target except
//! for the moment between a shrink and the trim that follows it. When the pool is empty, or the request tightened the heap or CPU
//! limit (which are baked into `Setup` as rlimits), the runner is spawned on the request's path
//! instead. Runners found dead when taken are discarded (and reaped by their handle).
//!
//! Refilling costs no async task: the spawner hands the new runner straight to the pool from the
//! thread that learned of it (see [`super::spawner::Spawner::spawn_then`]). Its `Ready` is read
//! when it is taken — by then it is normally waiting in the socket, so that is one non-blocking
//! read, not a turn of the event loop — or by [`Pool::confirmed_count`]. A runner is only ever
//! given an `Execute` after its `Ready` was read and its landlock status accepted.
//! Pooled runners hold no tokio registration, so a pool survives any runtime.

use super::process::{ProcessError, RunnerProc};
use super::spawner::Spawner;
use crate::check::Enforcement;
use crate::policy::{LandlockMode, Policy};
use ptc_shared::Limits;
use ptc_shared::codec::{
    DEFAULT_MAX_FRAME, HEADER_LEN, decode_body, encode_frame, read_frame_async,
};
use ptc_shared::protocol::{LandlockStatus, RunnerToSupervisor, Setup, SupervisorToRunner};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long a starting runner may take to harden itself and answer `Ready`.
const SETUP_TIMEOUT: Duration = Duration::from_secs(5);

/// A policy with what the host enforces of it and its pre-encoded `Setup` frame.
#[derive(Debug)]
pub(crate) struct PoolPolicy {
    pub policy: Policy,
    pub enforcement: Enforcement,
    setup_frame: Vec<u8>,
}

impl PoolPolicy {
    pub fn new(policy: Policy, enforcement: Enforcement) -> Result<PoolPolicy, String> {
        let setup_frame = encode_setup(&policy, &enforcement, &policy.limits)?;
        Ok(PoolPolicy {
            policy,
            enforcement,
            setup_frame,
        })
    }

    /// Whether runners started with the policy's own `Setup` can serve `limits`.
    fn pool_serves(&self, limits: &Limits) -> bool {
        limits.heap_bytes == self.policy.limits.heap_bytes
            && limits.cpu_ms == self.policy.limits.cpu_ms
    }
}

fn encode_setup(policy: &Policy, e: &Enforcement, limits: &Limits) -> Result<Vec<u8>, String> {
    let mut setup = Setup::for_limits(limits, policy.seccomp_bpf.to_vec(), e.landlock);
    setup.namespaces = e
        .namespaces
        .iter()
        .map(|n| n.setup_bit())
        .fold(0, |a, b| a | b);
    setup.run_as = e.run_as;
    encode_frame(&SupervisorToRunner::Setup(setup), DEFAULT_MAX_FRAME).map_err(|e| e.to_string())
}

/// A hardened runner waiting for its `Execute`: its `Ready` has been read and accepted. The
/// socket is in non-blocking mode.
#[derive(Debug)]
pub(crate) struct Warm {
    pub proc: RunnerProc,
    pub sock: std::os::unix::net::UnixStream,
}

/// A pooled runner: `ready` is false until its `Ready` frame has been read and accepted.
#[derive(Debug)]
struct Pooled {
    warm: Warm,
    ready: bool,
}

/// Why a runner could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("runner did not become ready: {0}")]
    NotReady(String),
    /// The runner ended during setup; `stderr` is what it wrote (a failed hardening step names
    /// itself there: `setup failed at <step>: <ERRNO>`).
    #[error("runner did not become ready: {message}")]
    Ended {
        message: String,
        stderr: Option<String>,
    },
}

impl StartError {
    /// What the runner wrote to stderr before it ended, if it did.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            StartError::Ended { stderr, .. } => stderr.as_deref(),
            _ => None,
        }
    }
}

/// How far a warm pool may grow under load, and how soon it shrinks back to its policy's `warm`
/// count (its floor) when idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolBounds {
    /// The most runners a pool holds (a policy whose `warm` is higher keeps its `warm`; one
    /// whose `warm` is 0 never pools).
    pub max: usize,
    /// After this long without a runner taken, a pool drops back to its floor.
    pub idle: Duration,
}

impl PoolBounds {
    /// The defaults: up to 32 runners, back to the floor after 5 s idle.
    pub const DEFAULT: PoolBounds = PoolBounds {
        max: 32,
        idle: Duration::from_secs(5),
    };
}

impl Default for PoolBounds {
    fn default() -> PoolBounds {
        PoolBounds::DEFAULT
    }
}

#[derive(Debug)]
pub(crate) struct Pool {
    prepared: PoolPolicy,
    spawner: Spawner,
    /// Oldest first: the runner taken is the one most likely to have finished its setup.
    ready: Mutex<VecDeque<Pooled>>,
    filling: AtomicUsize,
    /// The size the pool is refilled to: between `floor` and `max`.
    target: AtomicUsize,
    floor: usize,
    max: usize,
    idle: Duration,
    /// When a runner was last taken (or the pool last shrank).
    last_take: Mutex<Instant>,
}

impl Pool {
    pub fn new(prepared: PoolPolicy, spawner: Spawner, bounds: PoolBounds) -> Pool {
        let floor = prepared.policy.warm;
        Pool {
            prepared,
            spawner,
            ready: Mutex::new(VecDeque::new()),
            filling: AtomicUsize::new(0),
            target: AtomicUsize::new(floor),
            floor,
            // A policy with no warm runners is spawned on demand only: it never pools.
            max: if floor == 0 { 0 } else { bounds.max.max(floor) },
            idle: bounds.idle,
            last_take: Mutex::new(Instant::now()),
        }
    }

    /// Whether the pool can grow (and so needs the trim thread to shrink it).
    pub fn can_grow(&self) -> bool {
        self.max > self.floor
    }

    /// The runners the pool holds or is starting right now (for tests and status lines).
    pub fn held_count(&self) -> usize {
        self.ready_count() + self.filling.load(Ordering::Acquire)
    }

    /// A request found no runner done with its setup: double the target, up to the bound.
    fn grow(&self) {
        let _ = self
            .target
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_mul(2).max(t + 1).min(self.max))
            });
    }

    /// Drops back to the floor if no runner was taken for the idle period, killing the runners
    /// above it (newest first: the oldest are the likeliest to be ready).
    fn trim(&self) {
        let Ok(mut last) = self.last_take.lock() else {
            return;
        };
        if last.elapsed() < self.idle || self.target.load(Ordering::Acquire) == self.floor {
            return;
        }
        *last = Instant::now();
        drop(last);
        self.target.store(self.floor, Ordering::Release);
        let surplus: Vec<Pooled> = match self.ready.lock() {
            Ok(mut r) => {
                let keep = self.floor.min(r.len());
                r.drain(keep..).collect()
            }
            Err(_) => return,
        };
        tracing::debug!(policy = %self.prepared.policy.name, killed = surplus.len(), "idle pool shrank to its floor");
        // Dropping a runner's handle kills it; its parent (reaper thread or zygote) reaps it.
        drop(surplus);
    }

    fn taken(&self) {
        if let Ok(mut last) = self.last_take.lock() {
            *last = Instant::now();
        }
    }

    pub fn prepared(&self) -> &PoolPolicy {
        &self.prepared
    }

    pub fn ready_count(&self) -> usize {
        self.ready.lock().map_or(0, |r| r.len())
    }

    /// Starts background fills up to `warm`. Does nothing outside a tokio runtime.
    pub fn refill(self: &Arc<Self>) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        while self.reserve_fill() {
            let pool = Arc::clone(self);
            let setup = self.prepared.setup_frame.clone();
            self.spawner
                .spawn_then(setup, Box::new(move |spawned| pool.arrived(spawned)));
        }
    }

    /// Counts one more runner as being started if the pool is below its target. Checked and
    /// counted under the pool's lock, so concurrent refills never overshoot the target.
    fn reserve_fill(&self) -> bool {
        let Ok(ready) = self.ready.lock() else {
            return false;
        };
        let want = self.target.load(Ordering::Acquire);
        if ready.len() + self.filling.load(Ordering::Acquire) >= want {
            return false;
        }
        self.filling.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// A refill's runner, on the thread that spawned or forked it.
    fn arrived(&self, spawned: Result<super::process::Spawned, ProcessError>) {
        let pooled = spawned.and_then(|s| {
            s.sock.set_nonblocking(true).map_err(|e| ProcessError::Os {
                what: "runner socket",
                source: e,
            })?;
            Ok(Pooled {
                warm: Warm {
                    proc: s.proc,
                    sock: s.sock,
                },
                ready: false,
            })
        });
        match pooled {
            Ok(p) => {
                if let Ok(mut r) = self.ready.lock() {
                    // The pool may have shrunk while this runner started: then it is surplus
                    // (dropping it kills it).
                    if r.len() < self.target.load(Ordering::Acquire) {
                        r.push_back(p);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(policy = %self.prepared.policy.name, error = %e, "warm runner failed to start");
            }
        }
        self.filling.fetch_sub(1, Ordering::AcqRel);
    }

    /// Pooled runners whose `Ready` has arrived, reading it now where it is waiting (runners
    /// that failed their setup are dropped). For tests, benchmarks and status lines.
    pub fn confirmed_count(&self) -> usize {
        let Ok(mut ready) = self.ready.lock() else {
            return 0;
        };
        ready.retain_mut(|p| {
            if !p.ready {
                match self.ready_now(&p.warm.sock) {
                    Ok(true) => p.ready = true,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(policy = %self.prepared.policy.name, error = %e, "warm runner failed to start");
                        return false;
                    }
                }
            }
            true
        });
        ready.iter().filter(|p| p.ready).count()
    }

    /// A runner for one execution under `limits`: a live pooled one if it can serve them,
    /// otherwise a cold start.
    pub async fn take(self: &Arc<Self>, limits: &Limits) -> Result<Warm, StartError> {
        if !self.prepared.pool_serves(limits) {
            let frame = encode_setup(&self.prepared.policy, &self.prepared.enforcement, limits)
                .map_err(StartError::NotReady)?;
            return self.start(&frame).await;
        }
        self.taken();
        // Refilled by the caller once this execution is over, so the spawn's CPU does not
        // compete with the request it would delay (see `Pool::refill`).
        while let Some(p) = self.pop_live() {
            match self.confirm(p).await {
                Ok(w) => return Ok(w),
                Err(e) => {
                    tracing::warn!(policy = %self.prepared.policy.name, error = %e, "warm runner failed to start");
                }
            }
        }
        self.grow();
        self.refill();
        self.start(&self.prepared.setup_frame).await
    }

    fn pop_live(&self) -> Option<Pooled> {
        let mut ready = self.ready.lock().ok()?;
        while let Some(mut p) = ready.pop_front() {
            // A runner that died while idle (OOM killer, operator) is reaped here and skipped.
            if matches!(p.warm.proc.try_reap(), Ok(None)) {
                return Some(p);
            }
        }
        None
    }

    /// A pooled runner whose `Ready` has been read and accepted: at once when it is waiting in
    /// the socket, else by waiting for it (and then demand outran the pool: it grows).
    async fn confirm(&self, p: Pooled) -> Result<Warm, StartError> {
        if p.ready || self.ready_now(&p.warm.sock)? {
            return Ok(p.warm);
        }
        self.grow();
        let Warm { proc, sock } = p.warm;
        self.await_ready(proc, sock).await
    }

    /// Reads the runner's `Ready` if all of it has arrived (`Ok(false)` if not yet) and checks
    /// it; one `recv` when it has. Only the `Ready` frame is consumed: a runner sends nothing
    /// else before its `Execute`.
    fn ready_now(&self, sock: &std::os::unix::net::UnixStream) -> Result<bool, StartError> {
        use nix::sys::socket::{MsgFlags, recv};
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 64];
        let peeked = match recv(sock.as_raw_fd(), &mut buf, MsgFlags::MSG_PEEK) {
            Ok(n) => n,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => return Ok(false),
            Err(e) => return Err(StartError::NotReady(format!("runner socket: {e}"))),
        };
        if peeked == 0 {
            return Err(StartError::NotReady(
                "runner closed its socket during setup".into(),
            ));
        }
        let Some(header) = buf.get(..HEADER_LEN).filter(|_| peeked >= HEADER_LEN) else {
            return Ok(false);
        };
        let len = header
            .iter()
            .fold(0usize, |a, b| (a << 8) | usize::from(*b));
        let Some(frame) = buf.get_mut(..HEADER_LEN + len) else {
            return Err(StartError::NotReady(format!(
                "unexpected first frame of {len} bytes"
            )));
        };
        if peeked < frame.len() {
            return Ok(false);
        }
        let got = recv(sock.as_raw_fd(), frame, MsgFlags::empty())
            .map_err(|e| StartError::NotReady(format!("runner socket: {e}")))?;
        let body = frame.get(HEADER_LEN..got).unwrap_or_default();
        match decode_body::<RunnerToSupervisor>(body, DEFAULT_MAX_FRAME) {
            Ok(RunnerToSupervisor::Ready { landlock }) => {
                self.check_landlock(landlock).map(|()| true)
            }
            Ok(other) => Err(StartError::NotReady(format!(
                "unexpected first frame {other:?}"
            ))),
            Err(e) => Err(StartError::NotReady(format!("bad first frame: {e}"))),
        }
    }

    /// Spawns a runner with `setup` already in its socket and waits for its `Ready`.
    async fn start(&self, setup: &[u8]) -> Result<Warm, StartError> {
        let spawned = self.spawner.spawn(setup.to_vec()).await?;
        self.await_ready(spawned.proc, spawned.sock).await
    }

    /// Waits (up to [`SETUP_TIMEOUT`]) for a starting runner's `Ready` and checks it.
    async fn await_ready(
        &self,
        mut proc: RunnerProc,
        sock: std::os::unix::net::UnixStream,
    ) -> Result<Warm, StartError> {
        let io = |e: std::io::Error| {
            StartError::Process(ProcessError::Os {
                what: "runner socket",
                source: e,
            })
        };
        sock.set_nonblocking(true).map_err(io)?;
        let mut sock = tokio::net::UnixStream::from_std(sock).map_err(io)?;
        let first = tokio::time::timeout(
            SETUP_TIMEOUT,
            read_frame_async::<RunnerToSupervisor, _>(&mut sock, DEFAULT_MAX_FRAME),
        )
        .await;
        let landlock = match first {
            Ok(Ok(Some(RunnerToSupervisor::Ready { landlock }))) => landlock,
            Ok(Ok(Some(other))) => {
                return Err(StartError::NotReady(format!(
                    "unexpected first frame {other:?}"
                )));
            }
            Ok(Ok(None)) | Ok(Err(_)) => return Err(ended_during_setup(&mut proc).await),
            Err(_) => {
                return Err(StartError::NotReady(format!(
                    "no Ready within {SETUP_TIMEOUT:?}"
                )));
            }
        };
        self.check_landlock(landlock)?;
        let sock = sock.into_std().map_err(io)?;
        Ok(Warm { proc, sock })
    }

    fn check_landlock(&self, status: LandlockStatus) -> Result<(), StartError> {
        let required = self.prepared.policy.isolation.landlock == LandlockMode::Required;
        let enforced = matches!(status, LandlockStatus::Enforced | LandlockStatus::Partial);
        if required && !enforced {
            return Err(StartError::NotReady(format!(
                "landlock is required but the runner reports {status:?}"
            )));
        }
        Ok(())
    }
}

/// The engine's trim thread: every quarter of the idle period, shrinks the pools that were idle
/// for all of it; ends when the engine (every pool) is gone. Started only when a pool can grow.
pub(crate) fn trim_idle(pools: Vec<Weak<Pool>>, idle: Duration) -> std::io::Result<()> {
    let tick = (idle / 4).max(Duration::from_millis(5));
    std::thread::Builder::new()
        .name("ptc-pool-trim".into())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                let live: Vec<Arc<Pool>> = pools.iter().filter_map(Weak::upgrade).collect();
                if live.is_empty() {
                    return;
                }
                live.iter().for_each(|p| p.trim());
            }
        })
        .map(drop)
}

/// How a runner that closed its socket during setup ended, and what it said on stderr.
async fn ended_during_setup(proc: &mut RunnerProc) -> StartError {
    let (message, stderr) = match tokio::time::timeout(Duration::from_millis(500), proc.wait())
        .await
    {
        Ok(Ok(info)) => {
            let message = match (info.code, info.signal) {
                (Some(code), _) => {
                    let name = ptc_shared::protocol::exit_code::describe(code).unwrap_or("unknown");
                    format!("runner exited with code {code} ({name}) during setup")
                }
                (None, Some(sig)) => format!("runner was killed by signal {sig} during setup"),
                (None, None) => "runner ended during setup".to_string(),
            };
            (message, info.stderr)
        }
        Ok(Err(e)) => (format!("runner ended during setup ({e})"), None),
        Err(_) => ("runner closed its socket during setup".to_string(), None),
    };
    // The runner's own word first in the message too: it is what a human reads (the CLI's text
    // output, the daemon's log); `details.stderr` keeps it for programs.
    let message = match stderr.as_deref().and_then(|t| t.lines().next()) {
        Some(said) => format!("{message}: {said}"),
        None => message,
    };
    StartError::Ended { message, stderr }
}
