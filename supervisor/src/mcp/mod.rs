//! `ptc mcp`: the `lisp_eval` tool for any MCP client, over stdio (here) or Streamable HTTP
//! ([`http`]), on the official Rust SDK (`rmcp`).
//!
//! A thin client: each `tools/call` is checked ([`args`]), started through the client library
//! ([`Client::start`], an embedded engine or a daemon connection: one fresh sandboxed runner
//! per call) and rendered by the shared `lisp_eval` protocol
//! ([`ptc_shared::lisp_eval`]) into the MCP envelope `{isError, structuredContent, content:
//! [{type: "text", text}]}` whose text is the payload's JSON. There is no execution path here.
//!
//! Invariants:
//! - Bounded: frames ([`input::MAX_FRAME_BYTES`]), `program`, `context` (typed `args_error`),
//!   payloads (the protocol's caps, `truncated`), and concurrency: at most `max_concurrency`
//!   calls run, a call beyond that is answered `busy` at once (no queue grows).
//! - A call's runner lives no longer than the call: `notifications/cancelled` (rmcp cancels
//!   the request's token) drops the run's handle at once, which kills its runner (the
//!   `cancelled` answer is suppressed by rmcp, as the protocol asks). At end of input, calls
//!   already running get [`EOF_GRACE`] to finish (so `printf ... | ptc mcp` works) and are then
//!   stopped the same way, answered `shutting_down`; the process exits with no runner left.
//! - Two ways in, one way to answer: a plain `lisp_eval` line after `initialized` is taken by
//!   the input stream and answered by the direct path (`direct`: one task, no rmcp dispatch);
//!   every other line goes through rmcp to [`ServerHandler`]. Both run a call with the same
//!   code (`LispEval::run_call`) and write whole lines to one output ([`out`]).
//! - With [`Options::sessions`], five more tools keep a session's memory and `*1 *2 *3`
//!   between calls ([`sessions`] owns the table and its bounds, `session_tools` the handlers);
//!   without it they are neither listed nor callable.
//! - One handler, two transports: [`http`] builds one `LispEval` per MCP session from the
//!   server's [`Shared`] part (client, policy, slots, shutdown), so the tool code and every
//!   limit are the ones below; only the stdio input stream feeds the fast path.
//! - Protocol versions: 2025-11-25 preferred, 2025-06-18 accepted; rmcp answers a client
//!   asking for anything else with 2025-11-25 and leaves the choice to the client.

pub mod args;
mod direct;
pub mod http;
pub mod input;
pub mod out;
pub mod preparse;
mod session_tools;
pub mod sessions;

use crate::client::{Client, RunHandle};
use direct::{Direct, DirectCalls};
use input::{FRAME_BYTES_META, FramedInput, MAX_FRAME_BYTES};
use preparse::{PREPARSED_META, Preparser};
use ptc_shared::Step;
use ptc_shared::lisp_eval::ArgsError;
use ptc_shared::lisp_eval::session::SessionTool;
use ptc_shared::lisp_eval::{
    ErrorOptions, Payload, Profile, Reason, SuccessOptions, TOOL_NAME, render_error, render_step,
    to_json_value,
};
use rmcp::model::CancelledNotificationParam;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use sessions::{SessionConfig, Sessions};
use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{Semaphore, watch};

/// The protocol versions this server speaks, oldest first.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] =
    &[ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25];

/// How long calls still running when the input ends may go on (less than rmcp's 5 s drain).
pub const EOF_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Most calls that may run at once, whatever the flag says.
pub const MAX_CONCURRENCY: usize = 8;

/// How the server runs its calls.
#[derive(Debug, Clone)]
pub struct Options {
    /// The policy every call runs under (the client's default when `None`).
    pub policy: Option<String>,
    /// Calls running at once; more are answered `busy`. At most [`MAX_CONCURRENCY`].
    pub max_concurrency: usize,
    /// How long a call's arguments read by the fast path wait for its handler
    /// ([`preparse::PARKED_TTL`] by default).
    pub parked_ttl: std::time::Duration,
    /// Offer the stateful session tools, bounded so (off by default).
    pub sessions: Option<SessionConfig>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            policy: None,
            max_concurrency: default_concurrency(),
            parked_ttl: preparse::PARKED_TTL,
            sessions: None,
        }
    }
}

/// min(8, CPUs).
pub fn default_concurrency() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_CONCURRENCY)
}

/// The server could not start or its transport failed.
#[derive(Debug, thiserror::Error)]
pub enum McpServeError {
    #[error("MCP initialization failed: {0}")]
    Init(String),
    #[error("the MCP service stopped abnormally: {0}")]
    Join(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Http(#[from] http::HttpError),
}

/// Serves `lisp_eval` on stdin/stdout until stdin ends; running calls are stopped then.
pub async fn serve_stdio(client: Client, options: Options) -> Result<(), McpServeError> {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    serve(client, options, reader, writer).await
}

/// Serves `lisp_eval` over any byte streams (stdio in `ptc mcp`, pipes in tests).
pub async fn serve<R, W>(
    client: Client,
    options: Options,
    read: R,
    write: W,
) -> Result<(), McpServeError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (eof_tx, eof) = watch::channel(false);
    let preparser = Preparser::with_ttl(options.parked_ttl);
    let shared = Shared::new(client, &options, eof);
    let server = Arc::new(LispEval::new(
        &shared,
        options.sessions,
        Some(preparser.clone()),
    ));
    let (lines, rmcp_out, writer) = out::spawn(write);
    let input = FramedInput::new(read, MAX_FRAME_BYTES, eof_tx)
        .with_preparser(preparser)
        .with_direct(Direct::new(Arc::clone(&server), lines));
    // Our own limit comes first; rmcp's (with room for the newline) never fires.
    let transport = AsyncRwTransport::<RoleServer, _, _>::new(input, rmcp_out)
        .with_max_line_length(MAX_FRAME_BYTES + 2);
    let running = server
        .serve(transport)
        .await
        .map_err(|e| McpServeError::Init(e.to_string()))?;
    let reason = running.waiting().await?;
    tracing::info!(?reason, "MCP session ended");
    // The output closes once every direct call has answered too.
    if let Err(e) = writer.await? {
        tracing::warn!(%e, "the output failed");
    }
    Ok(())
}

/// What every [`LispEval`] of one server shares: the client, the policy, the execution slots
/// (so the concurrency cap holds across HTTP sessions) and the end-of-service signal.
#[derive(Debug, Clone)]
struct Shared {
    client: Client,
    policy: Option<String>,
    slots: Arc<Semaphore>,
    capacity: usize,
    eof: watch::Receiver<bool>,
}

impl Shared {
    fn new(client: Client, options: &Options, eof: watch::Receiver<bool>) -> Shared {
        let capacity = options.max_concurrency.clamp(1, MAX_CONCURRENCY);
        Shared {
            client,
            policy: options.policy.clone(),
            slots: Arc::new(Semaphore::new(capacity)),
            capacity,
            eof,
        }
    }
}

/// The `lisp_eval` server of one MCP session (stdio has one; HTTP one per `Mcp-Session-Id`):
/// one client, execution slots shared with the server's other sessions.
#[derive(Debug)]
struct LispEval {
    client: Client,
    policy: Option<String>,
    slots: Arc<Semaphore>,
    capacity: usize,
    /// True once the input ended (stdio) or the server is shutting down (HTTP).
    eof: watch::Receiver<bool>,
    /// Arguments the input stream already parsed, by `_meta[PREPARSED_META]`: `Some` only when
    /// the input stream is ours (stdio), so the `ptc/` `_meta` keys were written by it. Over
    /// HTTP a client's `_meta` is not read and every call takes the general path.
    framed: Option<Preparser>,
    /// The session table, when the session tools are offered.
    sessions: Option<Sessions>,
    /// Plain `lisp_eval` calls answered without rmcp's dispatch ([`direct`]).
    direct: DirectCalls,
}

impl LispEval {
    fn new(shared: &Shared, sessions: Option<SessionConfig>, framed: Option<Preparser>) -> Self {
        let shared = shared.clone();
        LispEval {
            client: shared.client,
            policy: shared.policy,
            slots: shared.slots,
            capacity: shared.capacity,
            eof: shared.eof,
            framed,
            sessions: sessions.map(Sessions::new),
            direct: DirectCalls::default(),
        }
    }

    async fn call(
        &self,
        arguments: Option<JsonObject>,
        ctx: RequestContext<RoleServer>,
    ) -> Payload {
        let Some(preparser) = &self.framed else {
            return self
                .run_call(args::parse(arguments), ctx.ct.cancelled_owned())
                .await;
        };
        if let Some(size) = ctx.meta.get(FRAME_BYTES_META) {
            return error(
                Reason::ArgsError,
                &format!("the request is {size} bytes, over the frame limit of {MAX_FRAME_BYTES}"),
            );
        }
        let parsed = match ctx.meta.get(PREPARSED_META).map(|k| k.as_u64()) {
            None => args::parse(arguments),
            Some(key) => match key.and_then(|k| preparser.take(k)) {
                Some(p) => args::check(p),
                None => {
                    return error(
                        Reason::ArgsError,
                        "the call's arguments are gone (parked too long); send it again",
                    );
                }
            },
        };
        self.run_call(parsed, ctx.ct.cancelled_owned()).await
    }

    /// Runs a `lisp_eval` call whose arguments were checked (or not: then the error is the
    /// answer) in a free slot, until it ends or `cancelled` completes.
    async fn run_call(
        &self,
        parsed: Result<args::Call, ArgsError>,
        cancelled: impl Future<Output = ()>,
    ) -> Payload {
        let call = match parsed {
            Ok(c) => c,
            Err(e) => return e.render(),
        };
        let Some(_slot) = self.slot() else {
            return self.busy();
        };
        match self.wait(self.start(call.run), cancelled).await {
            Ok(step) => render(&step, call.schema, false),
            Err(stopped) => stopped,
        }
    }

    /// An execution slot, if one is free (the caller answers `busy` otherwise).
    fn slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.slots).try_acquire_owned().ok()
    }

    fn busy(&self) -> Payload {
        let msg = format!(
            "all {} execution slots are in use; retry shortly",
            self.capacity
        );
        error(Reason::Busy, &msg)
    }

    /// Starts `run` under the server's policy.
    fn start(&self, run: crate::client::Run) -> RunHandle {
        let run = match &self.policy {
            Some(p) => run.policy(p.clone()),
            None => run,
        };
        self.client.start(run)
    }

    /// Waits for the run's Step, unless the client cancels (`cancelled` completes) or the
    /// input ended [`EOF_GRACE`] ago: then the handle is dropped here, which kills the runner,
    /// and the answer is the error payload.
    async fn wait(
        &self,
        run: RunHandle,
        cancelled: impl Future<Output = ()>,
    ) -> Result<Step, Payload> {
        let mut eof = self.eof.clone();
        let input_closed = async move {
            if eof.wait_for(|closed| *closed).await.is_err() {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep(EOF_GRACE).await;
        };
        tokio::select! {
            step = run => Ok(match step { Ok(s) | Err(s) => s }),
            () = cancelled => Err(error(Reason::Cancelled, "cancelled by the client")),
            () = input_closed => Err(error(Reason::ShuttingDown, "the server's input closed and the call did not finish in time; it was stopped")),
        }
    }
}

/// The payload of a finished run; with a schema, the checked value goes out as `validated`;
/// a session's eval adds `memory`.
fn render(step: &Step, schema: bool, include_memory: bool) -> Payload {
    let mut opts = SuccessOptions {
        include_memory,
        ..SuccessOptions::default()
    };
    if schema && step.fail.is_none() {
        let value = step.return_value.clone().unwrap_or_default();
        match to_json_value(&value) {
            Ok(j) => opts.validated = Some(j),
            Err(e) => return error(Reason::ValidationError, &e.to_string()),
        }
    }
    render_step(step, &opts)
}

fn error(reason: Reason, message: &str) -> Payload {
    render_error(reason, message, &ErrorOptions::default())
}

fn envelope(p: Payload) -> CallToolResult {
    if p.is_error {
        CallToolResult::structured_error(p.json)
    } else {
        CallToolResult::structured(p.json)
    }
}

/// What the server tells a client at `initialize`.
const INSTRUCTIONS: &str =
    "One tool, lisp_eval: run a PTC-Lisp program in a fresh sandbox, with data from `context`.";

/// The same, when the session tools are offered.
const INSTRUCTIONS_WITH_SESSIONS: &str = "lisp_eval runs a PTC-Lisp program in a fresh sandbox, with data from `context`, and remembers nothing. To keep `def`s and *1 *2 *3 from one program to the next, start a session (lisp_session_start) and run programs with lisp_session_eval; close it when done.";

impl LispEval {
    /// The tools offered, for the message about an unknown one.
    fn tool_names(&self) -> String {
        if self.sessions.is_none() {
            return format!("only {TOOL_NAME}");
        }
        let names: Vec<&str> = SessionTool::ALL.iter().map(|t| t.name()).collect();
        format!("{TOOL_NAME}, {}", names.join(", "))
    }
}

/// The tool every server offers.
fn lisp_eval_tool() -> Tool {
    Tool::new(
        TOOL_NAME,
        Profile::McpNoTools.description(),
        Arc::new(args::input_schema()),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

impl ServerHandler for LispEval {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ptc", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_instructions(if self.sessions.is_some() {
                INSTRUCTIONS_WITH_SESSIONS
            } else {
                INSTRUCTIONS
            })
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        self.direct.initialized.store(true, Ordering::Release);
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        if let Some(id) = &notification.request_id {
            self.direct.cancel(id);
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools = vec![lisp_eval_tool()];
        if self.sessions.is_some() {
            tools.extend(session_tools::tools());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name == TOOL_NAME {
            return Ok(envelope(self.call(request.arguments, context).await).into());
        }
        let tool = SessionTool::from_name(&request.name);
        let Some((tool, sessions)) = tool.zip(self.sessions.as_ref()) else {
            let hint = if tool.is_some() {
                "; the session tools need `ptc mcp --sessions`"
            } else {
                ""
            };
            let msg = format!(
                "unknown tool `{}` (this server has {}){hint}",
                request.name,
                self.tool_names()
            );
            return Err(McpError::invalid_params(msg, None));
        };
        let payload = self
            .session_call(sessions, tool, request.arguments, context)
            .await;
        Ok(envelope(payload).into())
    }
}
