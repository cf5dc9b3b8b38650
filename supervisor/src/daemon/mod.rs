//! The supervisor daemon: many clients on one local socket, one engine, fair admission.
//!
//! [`Daemon::bind`] loads everything and takes the socket (a filesystem socket through
//! `interprocess`, mode 0660 set explicitly after bind, or a socket inherited from systemd);
//! [`Daemon::run`] accepts connections until it is told to stop through its [`Control`]
//! channel (the CLI maps SIGTERM/SIGINT and SIGHUP onto it; tests inject it directly).
//!
//! Lifecycle:
//! - ready: `READY=1` and a `STATUS=` line to systemd; `WATCHDOG=1` at half of `WatchdogSec`.
//! - reload: config and policies are loaded into a new `Generation` (new engine, new admission
//!   bounds); running requests finish on the generation they started on. A bad reload is logged
//!   and the old generation stays. The socket itself is not rebound.
//! - shutdown: stop accepting, refuse new runs with `busy`, let running executions finish up
//!   to `shutdown_grace_ms`, then end every connection (which kills the remaining runners).

pub mod admission;
pub mod config;
mod conn;
mod listen;
pub mod notify;
mod slots;
mod stats;
mod status;

use crate::engine::{Engine, EngineConfig, EngineError};
use crate::policy::PolicyError;
use admission::Admission;
use config::{Config, ConfigError};
use interprocess::local_socket::traits::tokio::Listener as _;
use notify::Notifier;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, watch};

pub use listen::ListenerSource;

/// The daemon could not start (or reload).
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("socket {path}: {message}")]
    Socket { path: PathBuf, message: String },
}

/// What the daemon is told from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Reload config and policies (SIGHUP).
    Reload,
    /// Drain and exit (SIGTERM).
    Shutdown,
}

/// Everything a configuration produced: swapped whole on reload.
#[derive(Debug)]
pub(crate) struct Generation {
    pub config: Config,
    /// Shared with the missions running on it (the agent loop holds the engine).
    pub engine: Arc<Engine>,
    pub admission: Admission,
}

impl Generation {
    fn build(config: Config) -> Result<Generation, DaemonError> {
        let policies = config.policies.load()?;
        let mut ec = EngineConfig::new(config.runner.clone(), policies);
        ec.default_policy = config.default_policy.clone();
        ec.pool = config.pool;
        ec.zygotes = config.zygotes;
        let engine = Arc::new(Engine::new(ec)?);
        let admission = Admission::new(
            config.max_runners,
            config.max_queue,
            config.per_uid_max,
            config.per_uid_queue,
        );
        Ok(Generation {
            config,
            engine,
            admission,
        })
    }

    fn status(&self) -> String {
        let names: Vec<&str> = self.engine.policy_names().collect();
        format!(
            "serving; policies: {}; max_runners {}",
            names.join(", "),
            self.config.max_runners
        )
    }
}

/// State shared by the accept loop and every connection.
#[derive(Debug)]
pub(crate) struct DaemonState {
    current: RwLock<Arc<Generation>>,
    draining: AtomicBool,
    active: AtomicUsize,
    idle: Notify,
    stop: watch::Sender<bool>,
    /// Open connections per client uid (kept across reloads).
    slots: Arc<slots::ConnSlots>,
    /// Counters for `status` (kept across reloads).
    stats: stats::Stats,
}

/// Counts a request as in flight while alive.
pub(crate) struct ActiveGuard<'a>(&'a DaemonState);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        if self.0.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Resolves when connections must end now.
pub(crate) struct StopSignal(watch::Receiver<bool>);

impl StopSignal {
    pub async fn stopped(&mut self) {
        if self.0.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl DaemonState {
    pub fn current(&self) -> Arc<Generation> {
        match self.current.read() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    pub fn active_guard(&self) -> ActiveGuard<'_> {
        self.active.fetch_add(1, Ordering::AcqRel);
        ActiveGuard(self)
    }

    /// A connection slot for `uid` under the current `per_uid_connections`.
    pub fn conn_slot(&self, uid: u32) -> Result<slots::Slot, usize> {
        let max = self.current().config.per_uid_connections;
        self.slots.take(uid, max)
    }

    pub fn stop_signal(&self) -> StopSignal {
        StopSignal(self.stop.subscribe())
    }

    fn swap(&self, generation: Generation) {
        match self.current.write() {
            Ok(mut g) => *g = Arc::new(generation),
            Err(p) => *p.into_inner() = Arc::new(generation),
        }
    }

    /// Waits until no request is in flight.
    async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.active.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// A bound, ready-to-run daemon.
#[derive(Debug)]
pub struct Daemon {
    shared: Arc<DaemonState>,
    listener: interprocess::local_socket::tokio::Listener,
    socket: PathBuf,
    config_path: Option<PathBuf>,
    socket_override: Option<PathBuf>,
    notifier: Notifier,
}

impl Daemon {
    /// Loads policies, starts the engine and takes the socket. Call inside a tokio runtime.
    /// `config_path` is re-read on reload; `socket_override` (from `--socket`) wins over it.
    pub fn bind(
        mut config: Config,
        config_path: Option<PathBuf>,
        socket_override: Option<PathBuf>,
        source: ListenerSource,
    ) -> Result<Daemon, DaemonError> {
        if let Some(s) = &socket_override {
            config.socket.clone_from(s);
        }
        let generation = Generation::build(config)?;
        let (listener, socket) = listen::listen(source, &generation.config)?;
        let (stop, _) = watch::channel(false);
        Ok(Daemon {
            shared: Arc::new(DaemonState {
                current: RwLock::new(Arc::new(generation)),
                draining: AtomicBool::new(false),
                active: AtomicUsize::new(0),
                idle: Notify::new(),
                stop,
                slots: Arc::default(),
                stats: stats::Stats::default(),
            }),
            listener,
            socket,
            config_path,
            socket_override,
            notifier: Notifier::from_env(),
        })
    }

    /// The socket path clients connect to (empty for an inherited socket without a path).
    pub fn socket_path(&self) -> &std::path::Path {
        &self.socket
    }

    /// The engine of the current configuration (for tests and status).
    pub fn engine_warm(&self, policy: &str) -> usize {
        self.shared.current().engine.warm_count(policy)
    }

    /// Accepts connections until `Control::Shutdown` (or the channel closes), then drains.
    pub async fn run(self, mut control: mpsc::Receiver<Control>) {
        let status = self.shared.current().status();
        tracing::info!(socket = %self.socket.display(), %status, "ptc-supervisor ready");
        self.notifier.notify(&format!("READY=1\nSTATUS={status}"));
        let mut watchdog = Notifier::watchdog_interval().map(tokio::time::interval);
        let mut conns = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(stream) => self.admit_connection(stream, &mut conns),
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
                ctl = control.recv() => match ctl {
                    Some(Control::Reload) => self.reload(),
                    Some(Control::Shutdown) | None => break,
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                _ = tick(&mut watchdog) => self.notifier.notify("WATCHDOG=1"),
            }
        }
        self.drain(conns).await;
    }

    fn admit_connection(
        &self,
        stream: interprocess::local_socket::tokio::Stream,
        conns: &mut tokio::task::JoinSet<()>,
    ) {
        let max = self.shared.current().config.max_connections;
        if conns.len() >= max {
            tracing::warn!(max, "connection refused: too many connections");
            conns.spawn(conn::refuse_busy(stream));
            return;
        }
        conns.spawn(conn::serve(stream, Arc::clone(&self.shared)));
    }

    fn reload(&self) {
        let loaded = match &self.config_path {
            Some(p) => Config::load(p),
            None => Ok(Config::default()),
        };
        let result = loaded.map_err(DaemonError::from).and_then(|mut c| {
            let old = self.shared.current();
            if let Some(s) = &self.socket_override {
                c.socket.clone_from(s);
            }
            if c.socket != old.config.socket {
                tracing::warn!("`socket` changed: takes effect at the next restart");
            }
            Generation::build(c)
        });
        match result {
            Ok(generation) => {
                let status = generation.status();
                self.shared.swap(generation);
                tracing::info!(%status, "configuration reloaded");
                self.notifier.notify(&format!("STATUS={status}"));
            }
            Err(e) => tracing::error!(error = %e, "reload failed; keeping the old configuration"),
        }
    }

    async fn drain(self, mut conns: tokio::task::JoinSet<()>) {
        drop(self.listener);
        tracing::info!("stopped accepting connections");
        self.shared.draining.store(true, Ordering::Release);
        self.notifier.notify("STOPPING=1\nSTATUS=draining");
        let grace_ms = self.shared.current().config.shutdown_grace_ms;
        let grace = Duration::from_millis(grace_ms);
        let active = self.shared.active.load(Ordering::Acquire);
        tracing::info!(active, grace_ms, "draining");
        if tokio::time::timeout(grace, self.shared.wait_idle())
            .await
            .is_err()
        {
            let left = self.shared.active.load(Ordering::Acquire);
            tracing::warn!(left, "grace period over; killing the remaining executions");
        }
        let _ = self.shared.stop.send(true);
        // Connections flush their last Steps and close; bound that too.
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while conns.join_next().await.is_some() {}
        })
        .await;
        conns.abort_all();
        tracing::info!("ptc-supervisor stopped");
    }
}

async fn tick(watchdog: &mut Option<tokio::time::Interval>) {
    match watchdog {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}
