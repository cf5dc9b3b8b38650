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
//! The embedded backend hands the client's [`RunRequest`] to the engine unchanged (and a
//! [`MissionRequest`] to the agent loop unchanged): the engine
//! normalises it (policy default, limits), exactly as for a daemon's client, so every field
//! means the same in both modes.

pub use ptc_shared::client::*;

use crate::engine::{self, Engine, EngineConfig, EngineError, ToolHandler};
use crate::installed::default_runner;
use crate::policy::{PolicyError, PolicySource};
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::llm::LlmSet;
use ptc_shared::mission::MissionRequest;
use ptc_shared::{Fail, FailReason, Step, Value};
use std::sync::Arc;

/// The embedded engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Engine(#[from] EngineError),
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
}

impl EmbeddedBackend {
    /// Builds an engine from a config (call inside a tokio runtime, so the warm pools fill).
    pub fn new(config: EngineConfig) -> Result<EmbeddedBackend, EngineError> {
        Ok(EmbeddedBackend {
            engine: Arc::new(Engine::new(config)?),
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
        cancel: CancelSignal,
    ) -> BoxFuture<'static, Step> {
        let engine = Arc::clone(&self.engine);
        cancellable(request, cancel, move |request| async move {
            engine
                .execute(request, Arc::new(ToolSetHandler(tools)))
                .await
        })
    }

    /// The agent loop on this engine, calling the client's tool and LLM closures directly.
    fn mission(
        &self,
        request: MissionRequest,
        tools: ToolSet,
        llms: LlmSet,
        cancel: CancelSignal,
    ) -> BoxFuture<'static, Step> {
        let engine = Arc::clone(&self.engine);
        let handler = Arc::new(ToolSetHandler(tools));
        let run = crate::agent::run_mission(engine, llms, handler, request);
        Box::pin(cancel.or_cancelled(run, Value::Nil, Vec::new()))
    }
}

/// Runs `request` through `run` unless `cancel` fires first. The memory and history are kept
/// for the `cancelled` Step; the request itself moves into `run`.
fn cancellable<F>(
    request: RunRequest,
    cancel: CancelSignal,
    run: impl FnOnce(RunRequest) -> F,
) -> BoxFuture<'static, Step>
where
    F: std::future::Future<Output = Step> + Send + 'static,
{
    let (memory, history) = (request.memory.clone(), request.history.clone());
    Box::pin(cancel.or_cancelled(run(request), memory, history))
}

/// Runs requests in this process's interpreter, without a sandbox (`ptc run --in-process`):
/// for trusted programs and development. There is no policy: the request's limits replace the
/// defaults ([`engine::in_process_limits`]). The interpreter runs on a blocking thread; its tool
/// calls go to the same async [`Tool`] closures as in the other modes.
#[derive(Debug, Default)]
pub struct InProcessBackend;

impl Backend for InProcessBackend {
    fn run(
        &self,
        request: RunRequest,
        tools: ToolSet,
        cancel: CancelSignal,
    ) -> BoxFuture<'static, Step> {
        let handle = tokio::runtime::Handle::current();
        // A cancelled in-process run ends at its own deadline; its Step is not waited for.
        cancellable(request, cancel, move |request| async move {
            let job = tokio::task::spawn_blocking(move || run_in_process(request, &tools, &handle));
            job.await.unwrap_or_else(|e| {
                let msg = format!("the interpreter thread failed: {e}");
                let fail = Fail::new(FailReason::RunnerCrashed, msg);
                Step::failed(fail, Value::Nil, Vec::new())
            })
        })
    }
}

/// One in-process run on the current (blocking) thread; tool calls block on their futures.
fn run_in_process(request: RunRequest, tools: &ToolSet, handle: &tokio::runtime::Handle) -> Step {
    let limits = engine::in_process_limits(&request);
    let (program, decls, mut opts) = ptc_runner::RunOptions::from_request(request, limits);
    opts.tools = decls
        .into_iter()
        .map(|d| {
            let (set, h, name) = (tools.clone(), handle.clone(), d.name.clone());
            let mut tool =
                ptc_runner::Tool::new(d.name, move |args| h.block_on(set.call(&name, args)));
            tool.signature = d.signature;
            tool.description = d.description;
            tool
        })
        .collect();
    match ptc_runner::run(&program, opts) {
        Ok(s) | Err(s) => s,
    }
}

/// `Client::embedded()`: a client over an in-process engine.
pub trait Embedded: Sized {
    /// An in-process engine with the default runner binary and policies directory
    /// (`$PTC_RUNNER`; policies from [`PolicySource::from_env`]). Call inside a tokio runtime.
    fn embedded() -> Result<Self, EmbeddedError>;

    /// An in-process engine with an explicit configuration.
    fn embedded_with(config: EngineConfig) -> Result<Self, EmbeddedError>;

    /// No sandbox: programs run in this process's interpreter ([`InProcessBackend`]).
    fn in_process() -> Self;
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

    fn in_process() -> Client {
        Client::from_backend(Arc::new(InProcessBackend))
    }
}
