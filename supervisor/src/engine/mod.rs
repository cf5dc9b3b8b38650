//! The execution engine: runs one program in one fresh, single-use `ptc-runner` process.
//!
//! [`Engine::execute`] takes a runner (from the policy's warm pool, or started on the request's
//! path: forked by the engine's zygote, or spawned cold — see [`SpawnMode`]), sends it the
//! program, routes its tool calls to the caller's [`ToolHandler`], and builds the [`Step`] from what
//! the supervisor itself observed: the frames, the exit status, the CPU time, and its own clock.
//!
//! Invariants:
//! - A runner is used for exactly one execution and is always killed and reaped (also when the
//!   `execute` future is dropped: the process handle kills on drop, and the runner's parent — our
//!   reaper thread, or the zygote — reaps it).
//! - The wall-clock deadline is enforced by SIGKILL through a pidfd; nothing the runner does can
//!   delay it, including a tool that never answers.
//! - Policies are checked against the host once, at [`Engine::new`]; a policy the host cannot
//!   enforce is refused unless it says `best_effort`.
//! - `execute` never panics and always returns a Step (failures are Steps with `fail` set).

mod classify;
mod converse;
mod pool;
mod prepare;
pub mod process;
mod spawner;
mod zygote;

use crate::check::{Enforcement, HostReport, host_report_for};
use crate::policy::Policy;
pub use pool::PoolBounds;
use pool::{Pool, PoolPolicy};
use ptc_shared::{FailReason, Step, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

pub use prepare::in_process_limits;
pub use process::{ProcessError, SpawnMode};
/// The one request type, from the client library through the engine into the runner.
pub use ptc_shared::client_protocol::RunRequest;
pub use spawner::{MAX_ZYGOTES, default_zygotes};

/// A boxed, sendable future (the engine has no async-trait dependency).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a program's tool calls go. `Err(message)` is a `tool_error` the program may catch.
pub trait ToolHandler: Send + Sync {
    fn call(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>>;
}

/// A handler for programs that declare no tools: every call is an error.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl ToolHandler for NoTools {
    fn call(&self, name: String, _args: Value) -> BoxFuture<'static, Result<Value, String>> {
        Box::pin(async move { Err(format!("no handler for tool `{name}`")) })
    }
}

/// How to build an engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The `ptc-runner` binary.
    pub runner_path: PathBuf,
    /// Policies by name (see [`crate::policy::load_dir`]).
    pub policies: BTreeMap<String, Policy>,
    /// The policy used when a request names none (default `"default"`).
    pub default_policy: String,
    /// How runners are started (default: forked by a zygote, cold spawn as the fallback).
    pub spawn: SpawnMode,
    /// How far warm pools grow under load and how soon they shrink back when idle.
    pub pool: PoolBounds,
    /// Zygote shards: each is a zygote with its own spawner and reader threads, and runs are
    /// dealt to them in turn (1 to [`MAX_ZYGOTES`]; default [`default_zygotes`], one per two
    /// cores). In cold mode, the number of spawner threads.
    pub zygotes: usize,
}

impl EngineConfig {
    /// A config with `"default"` as the default policy.
    pub fn new(
        runner_path: impl Into<PathBuf>,
        policies: BTreeMap<String, Policy>,
    ) -> EngineConfig {
        EngineConfig {
            runner_path: runner_path.into(),
            policies,
            default_policy: "default".into(),
            spawn: SpawnMode::default(),
            pool: PoolBounds::DEFAULT,
            zygotes: default_zygotes(),
        }
    }
}

/// The engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("no policies configured")]
    NoPolicies,
    #[error("default policy `{0}` is not among the configured policies")]
    NoDefaultPolicy(String),
    #[error("runner binary {0} does not exist or is not a file")]
    RunnerMissing(PathBuf),
    #[error("policy `{policy}` cannot be enforced on this host: {}", reasons.join("; "))]
    Unenforceable {
        policy: String,
        reasons: Vec<String>,
    },
    #[error("policy `{policy}`: {message}")]
    BadPolicy { policy: String, message: String },
    #[error("zygotes = {0}: must be between 1 and {MAX_ZYGOTES}")]
    Zygotes(usize),
    #[error(transparent)]
    Process(#[from] ProcessError),
}

/// Spawns, pools and drives runner processes. Share it behind an `Arc`; drop it to kill every
/// pooled runner. Cancelling an execution is dropping its `execute` future (the runner dies).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use ptc_supervisor::engine::{Engine, EngineConfig, RunRequest, NoTools};
/// use std::sync::Arc;
/// let policies = ptc_supervisor::policy::load_dir("policies".as_ref())?;
/// let engine = Engine::new(EngineConfig::new("target/release/ptc-runner", policies))?;
/// let req = RunRequest { program: "(+ 1 2)".into(), ..RunRequest::default() };
/// let step = engine.execute(req, Arc::new(NoTools)).await;
/// assert_eq!(step.return_value, Some(ptc_shared::Value::Int(3)));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Engine {
    pools: BTreeMap<String, Arc<Pool>>,
    spawner: spawner::Spawner,
    default_policy: String,
    host: HostReport,
}

impl Engine {
    /// Checks every policy against the host (probing only the namespaces the policies enter),
    /// starts the spawner, and (inside a tokio runtime) starts filling the warm pools.
    pub fn new(config: EngineConfig) -> Result<Engine, EngineError> {
        // Only the namespaces some policy enters are probed (each probe is a fork and exec).
        let mut wanted: Vec<_> = config
            .policies
            .values()
            .flat_map(|p| p.isolation.namespaces.iter().copied())
            .collect();
        wanted.sort();
        wanted.dedup();
        let host = host_report_for(&wanted);
        Engine::with_host(config, host)
    }

    /// As [`Engine::new`], with a host report made earlier (probing takes a few milliseconds).
    pub fn with_host(config: EngineConfig, host: HostReport) -> Result<Engine, EngineError> {
        if config.policies.is_empty() {
            return Err(EngineError::NoPolicies);
        }
        if !config.policies.contains_key(&config.default_policy) {
            return Err(EngineError::NoDefaultPolicy(config.default_policy));
        }
        if !config.runner_path.is_file() {
            return Err(EngineError::RunnerMissing(config.runner_path));
        }
        if !(1..=MAX_ZYGOTES).contains(&config.zygotes) {
            return Err(EngineError::Zygotes(config.zygotes));
        }
        let spawner = spawner::Spawner::start(&config.runner_path, config.spawn, config.zygotes)?;
        let mut pools = BTreeMap::new();
        for (name, policy) in config.policies {
            let enforcement = enforce(&host, &policy)?;
            let prepared =
                PoolPolicy::new(policy, enforcement).map_err(|message| EngineError::BadPolicy {
                    policy: name.clone(),
                    message,
                })?;
            let pool = Arc::new(Pool::new(prepared, spawner.clone(), config.pool));
            pool.refill();
            pools.insert(name, pool);
        }
        let growing: Vec<_> = pools
            .values()
            .filter(|p| p.can_grow())
            .map(Arc::downgrade)
            .collect();
        if !growing.is_empty() {
            pool::trim_idle(growing, config.pool.idle).map_err(process::io("pool trim thread"))?;
        }
        Ok(Engine {
            pools,
            spawner,
            default_policy: config.default_policy,
            host,
        })
    }

    /// The host report the policies were checked against.
    pub fn host(&self) -> &HostReport {
        &self.host
    }

    /// The configured policy names.
    pub fn policy_names(&self) -> impl Iterator<Item = &str> {
        self.pools.keys().map(String::as_str)
    }

    /// The policy requests naming none run under.
    pub fn default_policy(&self) -> &str {
        &self.default_policy
    }

    /// The limits of a policy (`None`: the default policy), or `None` when there is no such
    /// policy. Callers tighten these per request (`RunRequest::limits`).
    pub fn policy_limits(&self, policy: Option<&str>) -> Option<ptc_shared::Limits> {
        let name = policy.unwrap_or(&self.default_policy);
        self.pools.get(name).map(|p| p.prepared().policy.limits)
    }

    /// What is enforced for a policy on this host.
    pub fn enforcement(&self, policy: &str) -> Option<&Enforcement> {
        self.pools.get(policy).map(|p| &p.prepared().enforcement)
    }

    /// The pid of a zygote forking this engine's runners (the first shard's that is alive), while
    /// one is (`None` in cold mode, before any has started, and while none is alive).
    pub fn zygote_pid(&self) -> Option<i32> {
        self.zygote_pids().first().copied()
    }

    /// The pids of the live zygotes, at most one per shard (empty in cold mode).
    pub fn zygote_pids(&self) -> Vec<i32> {
        self.spawner.zygote_pids()
    }

    /// Warm runners ready right now for `policy`: hardened, their `Ready` received (for tests,
    /// benchmarks and status lines).
    pub fn warm_count(&self, policy: &str) -> usize {
        self.pools.get(policy).map_or(0, |p| p.confirmed_count())
    }

    /// Runners `policy`'s pool holds or is starting right now, ready or not (for tests and
    /// status lines): between the policy's `warm` and the pool bound once filled.
    pub fn pool_count(&self, policy: &str) -> usize {
        self.pools.get(policy).map_or(0, |p| p.held_count())
    }

    /// Waits (up to `max`) until every pool holds its configured number of warm runners.
    pub async fn wait_warm(&self, max: std::time::Duration) -> bool {
        let until = Instant::now() + max;
        loop {
            if self
                .pools
                .values()
                .all(|p| p.confirmed_count() >= p.prepared().policy.warm)
            {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            for p in self.pools.values() {
                p.refill();
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    /// Runs one program in a fresh runner and returns its Step (failed Steps included).
    ///
    /// The engine normalises the request here, the same for every caller: the policy default,
    /// then the limits (a request looser than its policy is `invalid_request` naming the field;
    /// see `prepare`). Dropping the future cancels the run (its runner is killed).
    pub async fn execute(&self, req: RunRequest, tools: Arc<dyn ToolHandler>) -> Step {
        let start = Instant::now();
        let name = prepare::policy_name(&req, &self.default_policy).to_string();
        let span = tracing::info_span!("execute", policy = %name, runner_pid = tracing::field::Empty,
            outcome = tracing::field::Empty, duration_ms = tracing::field::Empty);
        let run = async {
            match prepare::prepare(&self.pools, &name, req, start) {
                Ok(exec) => converse::run(exec, tools).await,
                Err(step) => *step,
            }
        };
        let step = tracing::Instrument::instrument(run, span.clone()).await;
        let outcome = step.reason().map_or("ok", FailReason::as_str);
        span.record("outcome", outcome);
        span.record("duration_ms", step.usage.duration_ms);
        tracing::debug!(parent: &span, outcome, "execution finished");
        step
    }

    /// The policy a request would run under (its own, or the engine's default).
    pub fn policy_of<'a>(&'a self, req: &'a RunRequest) -> &'a str {
        prepare::policy_name(req, &self.default_policy)
    }
}

fn enforce(host: &HostReport, policy: &Policy) -> Result<Enforcement, EngineError> {
    let e = host
        .enforce(policy)
        .map_err(|reasons| EngineError::Unenforceable {
            policy: policy.name.clone(),
            reasons,
        })?;
    for s in &e.skipped {
        tracing::warn!(policy = %policy.name, skipped = %s, "best-effort policy: not enforced");
    }
    Ok(e)
}
