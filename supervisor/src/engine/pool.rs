//! Warm pools: per policy, runners that are already spawned, hardened and waiting for `Execute`.
//!
//! A pooled runner has received the policy's `Setup` and answered `Ready`; it is handed out once and
//! never returns to the pool. The pool is refilled in the background up to the policy's `warm`
//! count (ready + in flight never exceeds it) when an execution that took a pooled runner ends,
//! so a runner's start-up CPU never competes with the request on a small machine. When the pool is empty, or the request tightened the
//! heap or CPU limit (which are baked into `Setup` as rlimits), the runner is spawned cold on the
//! request's path instead. Pooled runners hold no tokio registration, so a pool survives any
//! runtime; runners found dead when taken are discarded (and reaped by their handle).

use super::process::{ProcessError, RunnerProc, Spawner};
use crate::check::Enforcement;
use crate::policy::{LandlockMode, Policy};
use ptc_shared::Limits;
use ptc_shared::codec::{DEFAULT_MAX_FRAME, encode_frame, read_frame_async};
use ptc_shared::protocol::{LandlockStatus, RunnerToSupervisor, Setup, SupervisorToRunner};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a starting runner may take to harden itself and answer `Ready`.
const SETUP_TIMEOUT: Duration = Duration::from_secs(5);

/// A policy with what the host enforces of it and its pre-encoded `Setup` frame.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub policy: Policy,
    pub enforcement: Enforcement,
    setup_frame: Vec<u8>,
}

impl Prepared {
    pub fn new(policy: Policy, enforcement: Enforcement) -> Result<Prepared, String> {
        let setup_frame = encode_setup(&policy, &enforcement, &policy.limits)?;
        Ok(Prepared {
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

/// A hardened runner waiting for its `Execute`. The socket is in non-blocking mode.
#[derive(Debug)]
pub(crate) struct Warm {
    pub proc: RunnerProc,
    pub sock: std::os::unix::net::UnixStream,
}

/// Why a runner could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Process(#[from] ProcessError),
    #[error("runner did not become ready: {0}")]
    NotReady(String),
}

#[derive(Debug)]
pub(crate) struct Pool {
    prepared: Prepared,
    spawner: Spawner,
    ready: Mutex<Vec<Warm>>,
    filling: AtomicUsize,
}

impl Pool {
    pub fn new(prepared: Prepared, spawner: Spawner) -> Pool {
        Pool {
            prepared,
            spawner,
            ready: Mutex::new(Vec::new()),
            filling: AtomicUsize::new(0),
        }
    }

    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }

    pub fn ready_count(&self) -> usize {
        self.ready.lock().map_or(0, |r| r.len())
    }

    /// Starts background fills up to `warm`. Does nothing outside a tokio runtime.
    pub fn refill(self: &Arc<Self>) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let want = self.prepared.policy.warm;
        loop {
            let have = self.ready_count() + self.filling.load(Ordering::Acquire);
            if have >= want {
                return;
            }
            self.filling.fetch_add(1, Ordering::AcqRel);
            let pool = Arc::clone(self);
            rt.spawn(async move {
                let started = pool.start(&pool.prepared.setup_frame).await;
                match started {
                    Ok(w) => {
                        if let Ok(mut r) = pool.ready.lock() {
                            r.push(w);
                        }
                    }
                    Err(e) => tracing::warn!(policy = %pool.prepared.policy.name, error = %e, "warm runner failed to start"),
                }
                pool.filling.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }

    /// A runner for one execution under `limits`: a live pooled one if it can serve them,
    /// otherwise a cold start.
    pub async fn take(self: &Arc<Self>, limits: &Limits) -> Result<Warm, StartError> {
        if !self.prepared.pool_serves(limits) {
            let frame = encode_setup(&self.prepared.policy, &self.prepared.enforcement, limits)
                .map_err(StartError::NotReady)?;
            return self.start(&frame).await;
        }
        match self.pop_live() {
            // Refilled by the caller once this execution is over, so the spawn's CPU does not
            // compete with the request it would delay (see `Pool::refill`).
            Some(w) => Ok(w),
            None => {
                self.refill();
                self.start(&self.prepared.setup_frame).await
            }
        }
    }

    fn pop_live(&self) -> Option<Warm> {
        let mut ready = self.ready.lock().ok()?;
        while let Some(mut w) = ready.pop() {
            // A runner that died while idle (OOM killer, operator) is reaped here and skipped.
            if matches!(w.proc.try_reap(), Ok(None)) {
                return Some(w);
            }
        }
        None
    }

    /// Spawns a runner with `setup` already in its socket and waits for its `Ready`.
    async fn start(&self, setup: &[u8]) -> Result<Warm, StartError> {
        let spawned = self.spawner.spawn(setup.to_vec()).await?;
        let mut proc = spawned.proc;
        let io = |e: std::io::Error| {
            StartError::Process(ProcessError::Os {
                what: "runner socket",
                source: e,
            })
        };
        spawned.sock.set_nonblocking(true).map_err(io)?;
        let mut sock = tokio::net::UnixStream::from_std(spawned.sock).map_err(io)?;
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
            Ok(Ok(None)) | Ok(Err(_)) => {
                return Err(StartError::NotReady(exit_description(&mut proc).await));
            }
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

/// How a runner that closed its socket during setup ended, for the error message.
async fn exit_description(proc: &mut RunnerProc) -> String {
    match tokio::time::timeout(Duration::from_millis(500), proc.wait()).await {
        Ok(Ok(info)) => match (info.code, info.signal) {
            (Some(code), _) => {
                let name = ptc_shared::protocol::exit_code::describe(code).unwrap_or("unknown");
                format!("runner exited with code {code} ({name}) during setup")
            }
            (None, Some(sig)) => format!("runner was killed by signal {sig} during setup"),
            (None, None) => "runner ended during setup".to_string(),
        },
        Ok(Err(e)) => format!("runner ended during setup ({e})"),
        Err(_) => "runner closed its socket during setup".to_string(),
    }
}
