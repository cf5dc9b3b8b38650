//! The client library (re-exported from `ptc_shared::client`) plus its embedded mode.
//!
//! `ptc_shared` cannot depend on this crate, so the in-process backend lives here and reaches
//! users as `Client::embedded()` through the [`Embedded`] trait: the same `Client`, `Run` and
//! `Tool` types work against a daemon or an in-process engine (still one sandboxed runner per
//! run; only the daemon is left out).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use ptc_supervisor::client::{Client, Embedded, Run};
//! let client = Client::embedded()?;
//! let step = client.run(Run::new("(+ 1 2)")).await;
//! assert!(step.is_ok());
//! # Ok(()) }
//! ```
//!
//! [`exec_request`] is the one place a wire [`RunRequest`] becomes an engine [`ExecRequest`]
//! (the daemon uses it too), so `timeout` means the same in both modes.

pub use ptc_shared::client::*;

use crate::daemon::config::default_runner;
use crate::engine::{self, Engine, EngineConfig, EngineError, ExecRequest, ToolHandler};
use crate::policy::{Policy, PolicyError, PolicySource};
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::{Fail, FailReason, Step, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The embedded engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Turns a wire request into an engine request: `timeout_ms` tightens the wall-clock limit of
/// the request's own limits, or else of its policy's.
pub fn exec_request(
    req: RunRequest,
    policies: &BTreeMap<String, Policy>,
    default_policy: &str,
) -> ExecRequest {
    let mut limits = req.limits;
    if let Some(t) = req.timeout_ms {
        let name = req.policy.as_deref().unwrap_or(default_policy);
        let base = limits.or_else(|| policies.get(name).map(|p| p.limits));
        limits = base.map(|mut l| {
            l.timeout_ms = l.timeout_ms.min(t);
            l
        });
    }
    ExecRequest {
        program: req.program,
        context: req.context,
        memory: req.memory,
        history: req.history,
        tools: req.tools,
        policy: req.policy,
        limits,
        signature: req.signature,
        validation: req.validation,
    }
}

/// A failed Step that keeps the request's memory and history (for refusals and cancellations).
pub fn refusal(req_memory: Value, history: Vec<Value>, reason: FailReason, msg: &str) -> Step {
    Step {
        memory: req_memory,
        history,
        ..Step::failed(Fail::new(reason, msg))
    }
}

struct ToolSetHandler(ToolSet);

impl ToolHandler for ToolSetHandler {
    fn call(&self, name: String, args: Value) -> engine::BoxFuture<'static, Result<Value, String>> {
        self.0.call(&name, args)
    }
}

/// Runs requests on an in-process [`Engine`].
#[derive(Debug)]
pub struct EmbeddedBackend {
    engine: Arc<Engine>,
    policies: BTreeMap<String, Policy>,
    default_policy: String,
}

impl EmbeddedBackend {
    /// Builds an engine from a config (call inside a tokio runtime, so the warm pools fill).
    pub fn new(config: EngineConfig) -> Result<EmbeddedBackend, EngineError> {
        let policies = config.policies.clone();
        let default_policy = config.default_policy.clone();
        Ok(EmbeddedBackend {
            engine: Arc::new(Engine::new(config)?),
            policies,
            default_policy,
        })
    }

    /// The engine underneath.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

impl Backend for EmbeddedBackend {
    fn run(
        &self,
        request: RunRequest,
        tools: ToolSet,
        mut cancel: CancelSignal,
    ) -> BoxFuture<'static, Step> {
        let memory = request.memory.clone();
        let history = request.history.clone();
        let req = exec_request(request, &self.policies, &self.default_policy);
        let engine = Arc::clone(&self.engine);
        Box::pin(async move {
            tokio::select! {
                step = engine.execute(req, Arc::new(ToolSetHandler(tools))) => step,
                () = cancel.cancelled() => {
                    refusal(memory, history, FailReason::Cancelled, "cancelled by the client")
                }
            }
        })
    }
}

/// `Client::embedded()`: a client over an in-process engine.
pub trait Embedded: Sized {
    /// An in-process engine with the default runner binary and policies directory
    /// (`$PTC_RUNNER`; policies from [`PolicySource::from_env`]). Call inside a tokio runtime.
    fn embedded() -> Result<Self, EmbeddedError>;

    /// An in-process engine with an explicit configuration.
    fn embedded_with(config: EngineConfig) -> Result<Self, EmbeddedError>;
}

impl Embedded for Client {
    fn embedded() -> Result<Client, EmbeddedError> {
        let policies = PolicySource::from_env().load()?;
        Client::embedded_with(EngineConfig::new(default_runner(), policies))
    }

    fn embedded_with(config: EngineConfig) -> Result<Client, EmbeddedError> {
        Ok(Client::from_backend(Arc::new(EmbeddedBackend::new(
            config,
        )?)))
    }
}
