//! The daemon backend: one Unix stream connection carrying many concurrent requests.
//!
//! A reader task owns the (buffered) read half: it completes pending requests with their `Step`
//! and runs tool calls and a mission's LLM calls (each in its own task, so a slow tool or model
//! never blocks other requests). Frames
//! out go through an [`Outbox`]: written by the sending task itself when the socket takes them,
//! so a request costs no hop to another task, else queued for its writer task. When the
//! connection ends, every pending request completes with a `runner_crashed` Step saying the
//! connection was lost (or with the server's refusal reason).
//!
//! Invariant: a request's future that is dropped before its Step arrived sends `Cancel`, so the
//! server kills its runner; a `Step` for an id no longer pending is ignored.

use super::run::{BoxFuture, ToolSet};
use super::{Backend, CancelSignal, ClientError};
use crate::client_protocol::{
    CLIENT_MAX_FRAME, CLIENT_PROTOCOL_VERSION, ClientToServer, MissionRequest, RunRequest,
    ServerToClient, peek_hello_version,
};
use crate::codec::{CodecError, encode_frame, read_frame_bytes_async, write_frame_async};
use crate::llm::{LlmError, LlmRequest, LlmSet};
use crate::outbox::Outbox;
use crate::status::DaemonStatus;
use crate::{Fail, FailReason, Step, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::BufReader;
use tokio::net::UnixStream;
use tokio::net::unix::OwnedReadHalf;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Largest frame accepted from the server (a Step carries results, prints and the tool trace).
const SERVER_MAX_FRAME: u32 = 256 << 20;

struct Pending {
    done: oneshot::Sender<Step>,
    tools: ToolSet,
    /// A mission's LLMs (`None` for a run).
    llms: Option<LlmSet>,
    /// The request's memory and history, for a failed Step built here (lost connection).
    memory: Value,
    history: Vec<Value>,
}

impl Pending {
    fn fail(self, fail: Fail) {
        let _ = self
            .done
            .send(Step::failed(fail, self.memory, self.history));
    }
}

/// ConnState between the request futures and the reader task.
struct ConnState {
    pending: Mutex<HashMap<u64, Pending>>,
    /// Set once the connection is gone: the Fail every later request gets.
    closed: Mutex<Option<Fail>>,
    out: Outbox,
    /// The server's frame limit, from its `Welcome`.
    max_frame: u32,
    /// `Status` requests awaiting their answer (ids share `Remote::next_id` with runs).
    statuses: Mutex<HashMap<u64, oneshot::Sender<DaemonStatus>>>,
}

/// A live connection to a daemon.
pub(crate) struct Remote {
    shared: Arc<ConnState>,
    next_id: AtomicU64,
    tasks: [JoinHandle<()>; 2],
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").finish_non_exhaustive()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        // Runs still awaited elsewhere must not wait for a Step that can no longer arrive.
        self.shared.close(lost("the client was dropped"));
    }
}

impl Remote {
    /// Connects and performs the handshake.
    pub(crate) async fn connect(path: &Path) -> Result<Remote, ClientError> {
        let stream = UnixStream::connect(path).await?;
        let (mut rd, mut wr) = stream.into_split();
        let hello = ClientToServer::Hello {
            version: CLIENT_PROTOCOL_VERSION,
            client: format!("ptc-shared {}", env!("CARGO_PKG_VERSION")),
        };
        // A server that refuses us (SO_PEERCRED) may close before reading the Hello: then the
        // write fails but its Refused frame is still there to read, and says more.
        let sent = write_frame_async(&mut wr, &hello, CLIENT_MAX_FRAME).await;
        let max_frame = match (handshake(&mut rd).await, sent) {
            (Ok(m), Ok(())) => m,
            (Err(e @ ClientError::Refused { .. }), _) | (Err(e), Ok(())) => return Err(e),
            (_, Err(e)) => return Err(e.into()),
        };
        let (out, drain) = Outbox::new(wr);
        let shared = Arc::new(ConnState {
            pending: Mutex::new(HashMap::new()),
            closed: Mutex::new(None),
            out,
            max_frame,
            statuses: Mutex::new(HashMap::new()),
        });
        let reader = tokio::spawn(read_loop(BufReader::new(rd), Arc::clone(&shared)));
        let writer = tokio::spawn(write_loop(drain, Arc::clone(&shared)));
        Ok(Remote {
            shared,
            next_id: AtomicU64::new(1),
            tasks: [reader, writer],
        })
    }
}

async fn handshake(rd: &mut OwnedReadHalf) -> Result<u32, ClientError> {
    let body = read_frame_bytes_async(rd, CLIENT_MAX_FRAME)
        .await?
        .ok_or(ClientError::Closed)?;
    match crate::codec::decode_body::<ServerToClient>(&body, CLIENT_MAX_FRAME) {
        Ok(ServerToClient::Welcome {
            version: CLIENT_PROTOCOL_VERSION,
            max_frame,
            ..
        }) => Ok(max_frame),
        Ok(ServerToClient::Refused { reason, message }) => {
            Err(ClientError::Refused { reason, message })
        }
        Ok(ServerToClient::Welcome { version, .. }) => Err(ClientError::Version {
            ours: CLIENT_PROTOCOL_VERSION,
            theirs: version,
        }),
        Ok(_) => Err(ClientError::Protocol("expected Welcome".into())),
        Err(e) => match peek_hello_version(&body) {
            Some(theirs) if theirs != CLIENT_PROTOCOL_VERSION => Err(ClientError::Version {
                ours: CLIENT_PROTOCOL_VERSION,
                theirs,
            }),
            _ => Err(e.into()),
        },
    }
}

impl ConnState {
    /// Marks the connection closed and fails every pending request. Lock order everywhere:
    /// `pending`, then `closed`, so no request can register after the drain and wait forever.
    fn close(&self, fail: Fail) {
        let drained: Vec<Pending> = match self.pending.lock() {
            Ok(mut p) => {
                if let Ok(mut c) = self.closed.lock() {
                    c.get_or_insert(fail.clone());
                }
                p.drain().map(|(_, v)| v).collect()
            }
            Err(_) => Vec::new(),
        };
        for p in drained {
            p.fail(fail.clone());
        }
        // After `closed` is set: a `status` call either registered before (and is dropped here,
        // so its receiver errs) or sees `closed` under this lock.
        if let Ok(mut s) = self.statuses.lock() {
            s.clear();
        }
    }

    fn closed_fail(&self) -> Option<Fail> {
        self.closed.lock().ok().and_then(|c| c.clone())
    }
}

fn lost(detail: impl std::fmt::Display) -> Fail {
    Fail::new(
        FailReason::RunnerCrashed,
        format!("connection to the supervisor lost: {detail}"),
    )
}

async fn read_loop(mut rd: BufReader<OwnedReadHalf>, shared: Arc<ConnState>) {
    let fail = loop {
        let msg =
            match crate::codec::read_frame_async::<ServerToClient, _>(&mut rd, SERVER_MAX_FRAME)
                .await
            {
                Ok(Some(m)) => m,
                Ok(None) => break lost("closed by the server"),
                Err(e) => break lost(e),
            };
        match msg {
            ServerToClient::Step { request_id, step } => {
                let p = shared
                    .pending
                    .lock()
                    .ok()
                    .and_then(|mut p| p.remove(&request_id));
                if let Some(p) = p {
                    let _ = p.done.send(*step);
                }
            }
            ServerToClient::ToolCall {
                request_id,
                call_id,
                name,
                args,
            } => spawn_tool(&shared, request_id, call_id, &name, args),
            ServerToClient::LlmCall {
                request_id,
                call_id,
                request,
            } => spawn_llm(&shared, request_id, call_id, request),
            ServerToClient::Status { request_id, status } => {
                let waiting = shared
                    .statuses
                    .lock()
                    .ok()
                    .and_then(|mut s| s.remove(&request_id));
                if let Some(tx) = waiting {
                    let _ = tx.send(*status);
                }
            }
            ServerToClient::Refused { reason, message } => break Fail::new(reason, message),
            ServerToClient::Welcome { .. } => break lost("unexpected second Welcome"),
        }
    };
    shared.close(fail);
}

fn spawn_tool(
    shared: &Arc<ConnState>,
    request_id: u64,
    call_id: u64,
    name: &str,
    args: crate::Value,
) {
    let tools = shared
        .pending
        .lock()
        .ok()
        .and_then(|p| p.get(&request_id).map(|p| p.tools.clone()));
    let Some(tools) = tools else {
        return; // the request was cancelled meanwhile
    };
    let fut = tools.call(name, args);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let result = fut.await;
        let _ = shared.send(&ClientToServer::ToolResult {
            request_id,
            call_id,
            result,
        });
    });
}

/// Answers one LLM call of a mission with the client's LLM for the request's model.
fn spawn_llm(shared: &Arc<ConnState>, request_id: u64, call_id: u64, request: LlmRequest) {
    let llms = shared
        .pending
        .lock()
        .ok()
        .and_then(|p| p.get(&request_id).and_then(|p| p.llms.clone()));
    let Some(llms) = llms else {
        return; // cancelled meanwhile, or not a mission
    };
    let llm = llms.resolve(request.model.as_deref());
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let result = match llm {
            Some(llm) => llm.complete(request).await,
            None => Err(LlmError::Fatal(format!(
                "model `{}` is not known to this client",
                request.model.unwrap_or_default()
            ))),
        };
        let _ = shared.send(&ClientToServer::LlmResult {
            request_id,
            call_id,
            result,
        });
    });
}

/// The outbox's writer task; a write error there ends the connection.
async fn write_loop(
    drain: impl std::future::Future<Output = std::io::Result<()>>,
    shared: Arc<ConnState>,
) {
    if let Err(e) = drain.await {
        shared.close(lost(e));
    }
}

impl ConnState {
    /// Encodes and sends one message. A message too large for the server's frame limit fails
    /// only its own request (a tool result is replaced by an error); a write error ends the
    /// connection. `Err` means the message was not sent.
    fn send(&self, msg: &ClientToServer) -> Result<(), ()> {
        let frame = match encode_frame(msg, self.max_frame) {
            Ok(f) => f,
            Err(e) => return self.unsendable(msg, &e),
        };
        self.out.send(frame).map_err(|e| self.close(lost(e)))
    }

    fn unsendable(&self, msg: &ClientToServer, e: &CodecError) -> Result<(), ()> {
        match msg {
            ClientToServer::Run { id, .. } => {
                let fail = Fail::new(FailReason::InvalidRequest, format!("request not sent: {e}"));
                finish(self, *id, fail);
                Err(())
            }
            ClientToServer::ToolResult {
                request_id,
                call_id,
                ..
            } => {
                // The tool's answer is too large for the wire: send the error instead.
                let err = ClientToServer::ToolResult {
                    request_id: *request_id,
                    call_id: *call_id,
                    result: Err(format!("tool result not sent: {e}")),
                };
                // Not `send`: a server limit too small even for this must not recurse.
                let frame = encode_frame(&err, self.max_frame).map_err(|_| ())?;
                self.out.send(frame).map_err(|e| self.close(lost(e)))
            }
            ClientToServer::LlmResult {
                request_id,
                call_id,
                ..
            } => {
                let err = ClientToServer::LlmResult {
                    request_id: *request_id,
                    call_id: *call_id,
                    result: Err(LlmError::Fatal(format!("LLM answer not sent: {e}"))),
                };
                let frame = encode_frame(&err, self.max_frame).map_err(|_| ())?;
                self.out.send(frame).map_err(|e| self.close(lost(e)))
            }
            ClientToServer::Mission { id, .. } => {
                let fail = Fail::new(FailReason::InvalidRequest, format!("mission not sent: {e}"));
                finish(self, *id, fail);
                Err(())
            }
            _ => Err(()),
        }
    }
}

fn finish(shared: &ConnState, id: u64, fail: Fail) {
    let p = shared.pending.lock().ok().and_then(|mut p| p.remove(&id));
    if let Some(p) = p {
        p.fail(fail);
    }
}

/// Sends `Cancel` when a request's future is dropped before its Step arrived.
struct CancelOnDrop {
    shared: Arc<ConnState>,
    id: u64,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let removed = self
                .shared
                .pending
                .lock()
                .ok()
                .and_then(|mut p| p.remove(&self.id));
            if removed.is_some() {
                let _ = self.shared.send(&ClientToServer::Cancel {
                    request_id: self.id,
                });
            }
        }
    }
}

impl Remote {
    /// Registers and sends one request; returns its id and the receiver of its Step, or the
    /// failed Step when it cannot be sent.
    fn start(
        &self,
        request: RunRequest,
        tools: ToolSet,
    ) -> Result<(u64, oneshot::Receiver<Step>), Step> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let run = ClientToServer::Run {
            id,
            request: Box::new(request),
        };
        // Encoded first, so the request's memory and history move into `Pending` uncopied.
        let frame = encode_frame(&run, self.shared.max_frame);
        let ClientToServer::Run { request, .. } = run else {
            return Err(Step::failed(lost("internal"), Value::Nil, Vec::new()));
        };
        let RunRequest {
            memory, history, ..
        } = *request;
        let frame = match frame {
            Ok(f) => f,
            Err(e) => {
                let fail = Fail::new(FailReason::InvalidRequest, format!("request not sent: {e}"));
                return Err(Step::failed(fail, memory, history));
            }
        };
        Ok(self.register(id, frame, (tools, None), (memory, history)))
    }

    /// Registers and sends one mission, as [`Remote::start`] does a run.
    fn start_mission(
        &self,
        request: MissionRequest,
        tools: ToolSet,
        llms: LlmSet,
    ) -> Result<(u64, oneshot::Receiver<Step>), Step> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let msg = ClientToServer::Mission {
            id,
            request: Box::new(request),
        };
        let frame = encode_frame(&msg, self.shared.max_frame).map_err(|e| {
            let fail = Fail::new(FailReason::InvalidRequest, format!("mission not sent: {e}"));
            Step::failed(fail, Value::Nil, Vec::new())
        })?;
        Ok(self.register(id, frame, (tools, Some(llms)), (Value::Nil, Vec::new())))
    }

    /// Files request `id` (its callbacks, and the memory and history a failed Step returns)
    /// and sends its encoded `frame`; the receiver gets its Step. On a closed connection the
    /// request is finished at once with the connection's failure, and a failed send closes the
    /// connection, which finishes every pending request.
    fn register(
        &self,
        id: u64,
        frame: Vec<u8>,
        (tools, llms): (ToolSet, Option<LlmSet>),
        (memory, history): (Value, Vec<Value>),
    ) -> (u64, oneshot::Receiver<Step>) {
        let (tx, rx) = oneshot::channel();
        let pending = Pending {
            done: tx,
            tools,
            llms,
            memory,
            history,
        };
        if let Ok(mut p) = self.shared.pending.lock() {
            // Checked under the `pending` lock: `close` cannot drain between check and insert.
            if let Some(fail) = self.shared.closed_fail() {
                pending.fail(fail);
                return (id, rx);
            }
            p.insert(id, pending);
        }
        let _ = self
            .shared
            .out
            .send(frame)
            .map_err(|e| self.shared.close(lost(e)));
        (id, rx)
    }
}

/// Waits for request `id`'s Step; on `cancel` sends `Cancel` (the server answers with the
/// `cancelled` Step), and a future dropped early sends `Cancel` too.
async fn await_step(
    shared: Arc<ConnState>,
    started: Result<(u64, oneshot::Receiver<Step>), Step>,
    mut cancel: CancelSignal,
) -> Step {
    let (id, mut rx) = match started {
        Ok(s) => s,
        Err(step) => return step,
    };
    let mut guard = CancelOnDrop {
        shared,
        id,
        armed: true,
    };
    let step = tokio::select! {
        step = &mut rx => step,
        () = cancel.cancelled() => {
            let _ = guard.shared.send(&ClientToServer::Cancel { request_id: id });
            rx.await
        }
    };
    guard.armed = false;
    // The sender is dropped only after `close` or `finish` sent the Step.
    step.unwrap_or_else(|_| Step::failed(lost("request dropped"), Value::Nil, Vec::new()))
}

impl Remote {
    /// Registers and sends one `Status` request; the receiver gets the answer, or errs once
    /// the connection is gone.
    fn start_status(&self) -> Result<oneshot::Receiver<DaemonStatus>, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = encode_frame(&ClientToServer::Status { id }, self.shared.max_frame)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut s = self
                .shared
                .statuses
                .lock()
                .map_err(|_| ClientError::Lost("poisoned".into()))?;
            if let Some(fail) = self.shared.closed_fail() {
                return Err(ClientError::Lost(fail.message));
            }
            s.insert(id, tx);
        }
        if let Err(e) = self.shared.out.send(frame) {
            self.shared.close(lost(&e));
            return Err(ClientError::Lost(e.to_string()));
        }
        Ok(rx)
    }
}

impl Backend for Remote {
    fn status(&self) -> BoxFuture<'static, Result<DaemonStatus, ClientError>> {
        let started = self.start_status();
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let answer = started?.await;
            answer.map_err(|_| {
                let why = shared.closed_fail().map(|f| f.message);
                ClientError::Lost(why.unwrap_or_else(|| "no answer".into()))
            })
        })
    }

    fn run(
        &self,
        request: RunRequest,
        tools: ToolSet,
        cancel: CancelSignal,
    ) -> BoxFuture<'static, Step> {
        let started = self.start(request, tools);
        Box::pin(await_step(Arc::clone(&self.shared), started, cancel))
    }

    fn mission(
        &self,
        request: MissionRequest,
        tools: ToolSet,
        llms: LlmSet,
        cancel: CancelSignal,
    ) -> BoxFuture<'static, Step> {
        let started = self.start_mission(request, tools, llms);
        Box::pin(await_step(Arc::clone(&self.shared), started, cancel))
    }
}

impl From<CodecError> for ClientError {
    fn from(e: CodecError) -> ClientError {
        ClientError::Codec(e)
    }
}
