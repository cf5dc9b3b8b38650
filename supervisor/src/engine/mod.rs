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

mod pool;
pub mod process;
mod session;
mod tools;
mod zygote;

use crate::check::{Enforcement, HostReport, host_report};
use crate::policy::Policy;
use pool::{Pool, Prepared};
use ptc_shared::protocol::ToolDecl;
use ptc_shared::{Fail, FailReason, Limits, Step, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

pub use process::{ProcessError, SpawnMode};

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

/// One execution request.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    pub program: String,
    pub context: Value,
    pub memory: Value,
    pub history: Vec<Value>,
    /// The tools the program may call; a call to any other is `tool_not_found`.
    pub tools: Vec<ToolDecl>,
    /// Policy name; `None` is the engine's default policy.
    pub policy: Option<String>,
    /// Tighter limits than the policy's (looser ones are refused with `invalid_request`).
    pub limits: Option<Limits>,
    /// The program's signature: the runner checks the context and the result against it; the
    /// engine checks each tool's declared signature around its calls.
    pub signature: Option<String>,
    /// How strictly signatures are applied (default `enabled`).
    pub validation: ptc_shared::signature::Mode,
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
    #[error(transparent)]
    Process(#[from] ProcessError),
}

/// Spawns, pools and drives runner processes. Share it behind an `Arc`; drop it to kill every
/// pooled runner. Cancelling an execution is dropping its `execute` future (the runner dies).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use ptc_supervisor::engine::{Engine, EngineConfig, ExecRequest, NoTools};
/// use std::sync::Arc;
/// let policies = ptc_supervisor::policy::load_dir("policies".as_ref())?;
/// let engine = Engine::new(EngineConfig::new("target/release/ptc-runner", policies))?;
/// let req = ExecRequest { program: "(+ 1 2)".into(), ..ExecRequest::default() };
/// let step = engine.execute(req, Arc::new(NoTools)).await;
/// assert_eq!(step.return_value, Some(ptc_shared::Value::Int(3)));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Engine {
    pools: BTreeMap<String, Arc<Pool>>,
    spawner: process::Spawner,
    default_policy: String,
    host: HostReport,
}

impl Engine {
    /// Checks every policy against the host, starts the spawner, and (inside a tokio runtime)
    /// starts filling the warm pools.
    pub fn new(config: EngineConfig) -> Result<Engine, EngineError> {
        Engine::with_host(config, host_report())
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
        let spawner = process::Spawner::start(&config.runner_path, config.spawn)?;
        let mut pools = BTreeMap::new();
        for (name, policy) in config.policies {
            let enforcement = enforce(&host, &policy)?;
            let prepared =
                Prepared::new(policy, enforcement).map_err(|message| EngineError::BadPolicy {
                    policy: name.clone(),
                    message,
                })?;
            let pool = Arc::new(Pool::new(prepared, spawner.clone()));
            pool.refill();
            pools.insert(name, pool);
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

    /// The limits of a policy (`None`: the default policy), or `None` when there is no such
    /// policy. Callers tighten these per request (`ExecRequest::limits`).
    pub fn policy_limits(&self, policy: Option<&str>) -> Option<Limits> {
        let name = policy.unwrap_or(&self.default_policy);
        self.pools.get(name).map(|p| p.prepared().policy.limits)
    }

    /// What is enforced for a policy on this host.
    pub fn enforcement(&self, policy: &str) -> Option<&Enforcement> {
        self.pools.get(policy).map(|p| &p.prepared().enforcement)
    }

    /// The pid of the zygote forking this engine's runners, while one is alive (`None` in cold
    /// mode, before it has started, and between its death and its restart).
    pub fn zygote_pid(&self) -> Option<i32> {
        self.spawner.zygote_pid()
    }

    /// Warm runners ready right now for `policy`: hardened, their `Ready` received (for tests,
    /// benchmarks and status lines).
    pub fn warm_count(&self, policy: &str) -> usize {
        self.pools.get(policy).map_or(0, |p| p.confirmed_count())
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
    pub async fn execute(&self, req: ExecRequest, tools: Arc<dyn ToolHandler>) -> Step {
        let start = Instant::now();
        let name = req
            .policy
            .clone()
            .unwrap_or_else(|| self.default_policy.clone());
        let span = tracing::info_span!("execute", policy = %name, runner_pid = tracing::field::Empty,
            outcome = tracing::field::Empty, duration_ms = tracing::field::Empty);
        let step = tracing::Instrument::instrument(
            self.execute_inner(&name, req, tools, start),
            span.clone(),
        )
        .await;
        let outcome = step.reason().map_or("ok", FailReason::as_str);
        span.record("outcome", outcome);
        span.record("duration_ms", step.usage.duration_ms);
        tracing::debug!(parent: &span, outcome, "execution finished");
        step
    }

    async fn execute_inner(
        &self,
        name: &str,
        req: ExecRequest,
        tools: Arc<dyn ToolHandler>,
        start: Instant,
    ) -> Step {
        let Some(pool) = self.pools.get(name) else {
            return invalid(req, format!("unknown policy `{name}`"), start);
        };
        let limits = match pool.prepared().policy.limits_for(req.limits.as_ref()) {
            Ok(l) => l,
            Err(field) => {
                return invalid(
                    req,
                    format!("limit `{field}` is looser than policy `{name}` allows"),
                    start,
                );
            }
        };
        session::run(pool, req, limits, tools, start).await
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

/// A Step for a request refused before any runner was involved.
fn invalid(req: ExecRequest, message: String, start: Instant) -> Step {
    let base = session::Base {
        memory: req.memory,
        history: req.history,
        signature: req.signature,
    };
    session::failed_step(
        base,
        Fail::new(FailReason::InvalidRequest, message),
        Vec::new(),
        start,
        0,
    )
}
