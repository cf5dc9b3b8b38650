//! A blocking wrapper for callers without an async runtime.
//!
//! It owns a small tokio runtime (one worker thread) that drives the connection and the tool
//! closures; `run` blocks the calling thread until the Step arrives. Tools may be async closures
//! ([`Tool::new`](super::Tool::new)) or plain ones ([`Tool::sync`](super::Tool::sync)).
//! Do not call it from inside an async runtime (tokio forbids blocking there).

use super::{Agent, Client, ClientError, IntoMissionInput, Run};
use crate::Step;
use std::path::Path;

/// A [`Client`] with blocking methods.
///
/// ```no_run
/// use ptc_shared::client::{BlockingClient, Run, Tool};
/// let client = BlockingClient::connect("/run/ptc/ptc.sock")?;
/// let step = client.run(
///     Run::new("(tool/double {:n 21})")
///         .tool(Tool::sync("double", |args: ptc_shared::Value| {
///             let n = args.to_json().ok().and_then(|j| j["n"].as_i64()).unwrap_or(0);
///             Ok::<_, String>(serde_json::json!(n * 2))
///         })),
/// );
/// # Ok::<(), ptc_shared::client::ClientError>(())
/// ```
#[derive(Debug)]
pub struct BlockingClient {
    rt: tokio::runtime::Runtime,
    client: Client,
}

impl BlockingClient {
    /// Connects to a daemon (see [`Client::connect`]).
    pub fn connect(path: impl AsRef<Path>) -> Result<BlockingClient, ClientError> {
        let rt = runtime()?;
        let client = rt.block_on(Client::connect(path))?;
        Ok(BlockingClient { rt, client })
    }

    /// Wraps an existing client (e.g. the supervisor's embedded one), with its own runtime.
    /// The client must not be tied to another runtime's reactor: build it with
    /// [`BlockingClient::with`].
    pub fn with<F>(make: F) -> Result<BlockingClient, ClientError>
    where
        F: FnOnce() -> Result<Client, ClientError>,
    {
        let rt = runtime()?;
        let client = {
            let _guard = rt.enter();
            make()?
        };
        Ok(BlockingClient { rt, client })
    }

    /// Runs a program and blocks until its Step (see [`Client::run`]).
    pub fn run(&self, run: Run) -> Result<Step, Step> {
        self.rt.block_on(self.client.run(run))
    }

    /// Runs a mission and blocks until its Step (see [`Client::delegate`]). The LLM and tool
    /// closures run on this client's runtime.
    pub fn delegate(&self, agent: Agent, context: impl IntoMissionInput) -> Result<Step, Step> {
        self.rt.block_on(self.client.delegate(agent, context))
    }

    /// The async client underneath.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ClientError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| ClientError::Runtime(e.to_string()))
}
