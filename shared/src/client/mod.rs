//! The client library (feature `client`): run PTC-Lisp programs through a `ptc-supervisor` daemon,
//! with the program's tools hosted as async closures in your process.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use ptc_shared::client::{Client, Run, Tool};
//! use serde_json::json;
//! use std::time::Duration;
//!
//! let client = Client::connect("/run/ptc/ptc.sock").await?;
//! let step = client
//!     .run(
//!         Run::new("(->> (tool/orders {:status \"open\"}) (map :total) (reduce +))")
//!             .context(json!({"region": "eu"}))
//!             .tool(
//!                 Tool::new("orders", |_args| async move {
//!                     Ok::<_, String>(json!([{"total": 5}, {"total": 7}]))
//!                 })
//!                 .signature("(status :string) -> [{total :int}]")
//!                 .description("Open orders"),
//!             )
//!             .signature("() -> :int")
//!             .timeout(Duration::from_millis(500)),
//!     )
//!     .await;
//! match step {
//!     Ok(step) => println!("{:?}", step.return_value),
//!     Err(step) => eprintln!("failed: {:?}", step.fail),
//! }
//! # Ok(()) }
//! ```
//!
//! Design: a [`Client`] is a cheap handle over a [`Backend`]: the daemon connection built by
//! [`Client::connect`], or an in-process engine. This crate cannot depend on the supervisor, so
//! the embedded backend lives there: `ptc_supervisor::client` re-exports this module and adds
//! `Client::embedded()` through its `Embedded` trait. Every run ends in a [`Step`]: failures of the
//! program, of the sandbox and of the connection alike (`Err(step)`, with `step.fail` set; a lost
//! connection is `runner_crashed` with a message saying so).
//!
//! Cancellation: dropping the future of [`Client::run`] cancels the request (its runner is
//! killed); [`Client::start`] returns a [`RunHandle`] that can also be cancelled explicitly and
//! then resolves to the `cancelled` Step.

mod agent;
mod blocking;
mod remote;
mod run;

pub use agent::{Agent, IntoMissionInput};
pub use blocking::BlockingClient;
pub use run::{BoxFuture, IntoContext, IntoToolValue, Run, Tool, ToolSet};

use crate::client_protocol::RunRequest;
use crate::llm::LlmSet;
use crate::mission::MissionRequest;
use crate::{Fail, FailReason, Step};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::watch;

/// Connecting to a daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad frame from the server: {0}")]
    Codec(crate::codec::CodecError),
    #[error("refused by the server: {reason}: {message}")]
    Refused { reason: FailReason, message: String },
    #[error("protocol version mismatch: ours is {ours}, the server speaks {theirs}")]
    Version { ours: u32, theirs: u32 },
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("the server closed the connection during the handshake")]
    Closed,
    #[error("cannot start a runtime for the blocking client: {0}")]
    Runtime(String),
    #[error("connection to the supervisor lost: {0}")]
    Lost(String),
    #[error("not available with this backend: {0}")]
    Unsupported(&'static str),
}

/// A cancellation flag handed to a [`Backend`] with each run.
#[derive(Debug, Clone)]
pub struct CancelSignal(watch::Receiver<bool>);

impl CancelSignal {
    /// Resolves once the run is cancelled (never, if its handle is dropped uncancelled).
    pub async fn cancelled(&mut self) {
        if self.0.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Runs `run` to its Step unless this signal fires first: then `run` is dropped (which
    /// stops it) and the Step is `cancelled`, giving back `memory` and `history` unchanged.
    pub async fn or_cancelled(
        mut self,
        run: impl Future<Output = Step>,
        memory: crate::Value,
        history: Vec<crate::Value>,
    ) -> Step {
        tokio::select! {
            step = run => step,
            () = self.cancelled() => {
                let fail = Fail::new(FailReason::Cancelled, "cancelled by the client");
                Step::failed(fail, memory, history)
            }
        }
    }

    /// A signal that never fires.
    pub fn never() -> CancelSignal {
        let (_tx, rx) = watch::channel(false);
        CancelSignal(rx)
    }
}

/// Where runs execute: a daemon connection, or an in-process engine (provided by the supervisor).
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Runs one request; the future resolves to its Step, and dropping it cancels the run.
    /// When `cancel` fires the run is stopped and the future resolves to a `cancelled` Step.
    fn run(
        &self,
        request: RunRequest,
        tools: ToolSet,
        cancel: CancelSignal,
    ) -> BoxFuture<'static, Step>;

    /// Runs one SubAgent mission: the loop runs where the backend runs programs, and calls back
    /// into `tools` and `llms` (in this process). The future resolves to the mission's Step;
    /// dropping it or firing `cancel` ends the mission and kills its runner.
    fn mission(
        &self,
        request: MissionRequest,
        tools: ToolSet,
        llms: LlmSet,
        cancel: CancelSignal,
    ) -> BoxFuture<'static, Step> {
        let _ = (request, tools, llms, cancel);
        let fail = Fail::new(
            FailReason::InvalidRequest,
            "this backend cannot run missions (use a daemon or the embedded engine)",
        );
        let step = Step::failed(fail, crate::Value::Nil, Vec::new());
        Box::pin(async move { step })
    }

    /// The daemon's live state. Only a daemon has one: other backends answer `Unsupported`.
    fn status(&self) -> BoxFuture<'static, Result<crate::status::DaemonStatus, ClientError>> {
        Box::pin(async {
            Err(ClientError::Unsupported(
                "status is served by a daemon (Client::connect)",
            ))
        })
    }
}

/// A handle for running programs. Cloning shares the connection; it closes with the last clone.
#[derive(Debug, Clone)]
pub struct Client {
    backend: Arc<dyn Backend>,
}

impl Client {
    /// Connects to a `ptc-supervisor` daemon's socket and performs the version handshake.
    pub async fn connect(path: impl AsRef<Path>) -> Result<Client, ClientError> {
        let remote = remote::Remote::connect(path.as_ref()).await?;
        Ok(Client::from_backend(Arc::new(remote)))
    }

    /// A client over any backend (the supervisor's embedded engine uses this).
    pub fn from_backend(backend: Arc<dyn Backend>) -> Client {
        Client { backend }
    }

    /// Runs a program and waits for its Step: `Ok` on success, `Err` with `fail` set otherwise.
    pub async fn run(&self, run: Run) -> Result<Step, Step> {
        self.start(run).await
    }

    /// The daemon's live state (`ptc status`): version, uptime, policies, outcomes, latency,
    /// runners and queue, per-uid usage and recent errors, filtered by this process's uid as the
    /// daemon sees it (root sees every uid). Needs no runner and is not admission-controlled.
    pub async fn status(&self) -> Result<crate::status::DaemonStatus, ClientError> {
        self.backend.status().await
    }

    /// Starts a run and returns a handle that resolves to its Step and can cancel it.
    pub fn start(&self, run: Run) -> RunHandle {
        let (tx, rx) = watch::channel(false);
        let fut = match run.into_parts() {
            Ok((request, tools)) => self.backend.run(request, tools, CancelSignal(rx)),
            Err(e) => {
                // The run's context or memory did not convert: there is no input memory.
                let fail = Fail::new(FailReason::InvalidRequest, e);
                let step = Step::failed(fail, crate::Value::Nil, Vec::new());
                Box::pin(async move { step })
            }
        };
        RunHandle { fut, cancel: tx }
    }
}

impl Client {
    /// Runs a SubAgent mission: an LLM (yours, called from the supervisor like a tool) writes
    /// PTC-Lisp turn by turn until a program returns a value matching the signature. `Ok` with
    /// the return value, usage and trace; `Err` with `fail` set (a budget, the LLM, a program's
    /// `(fail ...)`).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use ptc_shared::client::{Agent, Client, Tool};
    /// use ptc_shared::llm::{Llm, LlmRequest, LlmResponse};
    /// use serde_json::json;
    ///
    /// let client = Client::connect("/run/ptc/ptc.sock").await?;
    /// // A stand-in for a real model: it answers every turn with one program.
    /// let llm = Llm::new(|_req: LlmRequest| async move {
    ///     Ok(LlmResponse::text(
    ///         "```clojure\n(return {:count (count (tool/orders {:region data/region}))})\n```",
    ///     ))
    /// });
    /// let agent = Agent::new("How many open orders are in {{region}}?")
    ///     .signature("(region :string) -> {count :int}")
    ///     .tool(
    ///         Tool::new("orders", |_args| async move { Ok::<_, String>(json!([{"id": 1}, {"id": 2}])) })
    ///             .signature("(region :string) -> [{id :int}]")
    ///             .description("Open orders of a region"),
    ///     )
    ///     .max_turns(3)
    ///     .llm(llm);
    /// match client.delegate(agent, json!({"region": "eu"})).await {
    ///     Ok(step) => println!("{:?} in {} turns", step.return_value, step.usage.turns),
    ///     Err(step) => eprintln!("failed: {:?}", step.fail),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delegate(
        &self,
        agent: Agent,
        context: impl IntoMissionInput,
    ) -> Result<Step, Step> {
        self.start_mission(agent, context).await
    }

    /// Starts a mission and returns a handle that resolves to its Step and can cancel it.
    pub fn start_mission(&self, agent: Agent, context: impl IntoMissionInput) -> RunHandle {
        let (tx, rx) = watch::channel(false);
        let fut = match agent.into_parts(context) {
            Ok((request, tools, llms)) => {
                self.backend.mission(request, tools, llms, CancelSignal(rx))
            }
            Err(e) => {
                let fail = Fail::new(FailReason::InvalidRequest, e);
                let step = Step::failed(fail, crate::Value::Nil, Vec::new());
                Box::pin(async move { step })
            }
        };
        RunHandle { fut, cancel: tx }
    }
}

/// A started run: await it for the Step; [`RunHandle::cancel`] stops it early.
pub struct RunHandle {
    fut: BoxFuture<'static, Step>,
    cancel: watch::Sender<bool>,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle").finish_non_exhaustive()
    }
}

impl RunHandle {
    /// Cancels the run: its runner is killed and the handle resolves to a `cancelled` Step
    /// (or to the real Step if it was already on its way).
    pub fn cancel(&self) {
        let _ = self.cancel.send(true);
    }

    /// A function that cancels this run from elsewhere (another task or thread).
    pub fn canceller(&self) -> impl Fn() + Send + Sync + 'static {
        let tx = self.cancel.clone();
        move || {
            let _ = tx.send(true);
        }
    }
}

impl Future for RunHandle {
    type Output = Result<Step, Step>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.fut.as_mut().poll(cx).map(Step::into_result)
    }
}
