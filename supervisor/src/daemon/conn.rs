//! One client connection: access control, handshake, and many concurrent requests.
//!
//! Tasks per connection: a reader (decodes frames from a buffered read half into a channel, so
//! the main loop's `select!` stays cancel-safe), one task per request, all owned by the
//! connection's `JoinSet`, and the writer task of the connection's [`Outbox`]: a request task
//! writes its `Step` (or `ToolCall`) itself when the socket takes it, so an answer costs no hop to
//! another task; only frames that find the socket full or others queued go through the writer.
//!
//! Invariants:
//! - The peer's uid/gid come from the kernel (SO_PEERCRED), never from the client's word.
//! - When the connection ends for any reason (EOF, a malformed or oversized frame, shutdown),
//!   the `JoinSet` is dropped: every request future is dropped, which kills its runner.
//! - Each `Run` gets exactly one `Step` frame with its id (busy, refused, cancelled included); a
//!   `Run` whose id is already in flight gets an `invalid_request` Step and the first keeps it.
//! - Memory per connection is bounded: frames by `max_frame_bytes`, their decoding by the wire
//!   budget (large ones off the runtime, on a blocking thread), at most two decoded frames wait
//!   for dispatch, and the reader stops while more than [`SEND_QUEUE_MAX`] bytes of answers are
//!   unwritten (a client that does not read is not read either); requests are bounded by
//!   admission (`per_uid_max`, `per_uid_queue`).
//! - Each connection holds one of its uid's `per_uid_connections` slots until it ends, and is
//!   closed after `idle_timeout_ms` with no request in flight and no frame.

use super::DaemonState;
use crate::engine::{BoxFuture, ToolHandler};
use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::StreamCommon;
use ptc_shared::client_protocol::{
    CLIENT_PROTOCOL_VERSION, ClientToServer, MissionRequest, RunRequest, ServerToClient,
    peek_hello_version,
};
use ptc_shared::codec::{CodecError, decode_body, encode_frame, read_frame_bytes_async};
use ptc_shared::llm::{Llm, LlmError, LlmFuture, LlmRequest, LlmResponse, LlmSet, LlmSource};
use ptc_shared::outbox::Outbox;
use ptc_shared::{FailReason, Step, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot};

type RecvHalf = BufReader<OwnedReadHalf>;
type SendHalf = OwnedWriteHalf;
use tokio::task::JoinSet;

/// How long a client may take to send `Hello`.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest `Hello` frame read before the client is known.
const HELLO_MAX: u32 = 64 << 10;

/// Who is on the other end, from the kernel.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub pid: i32,
}

type ToolReply = oneshot::Sender<Result<Value, String>>;
type LlmReply = oneshot::Sender<Result<LlmResponse, LlmError>>;

impl Conn {
    /// Sends one frame to the client; `Err` once the connection cannot be written to.
    fn send(&self, msg: &ServerToClient) -> Result<(), ()> {
        // A Step too large for any frame cannot happen (limits bound results); drop it if it does.
        let frame = encode_frame(msg, u32::MAX).map_err(|_| ())?;
        self.out.send(frame).map_err(|_| ())
    }
}

/// Per-connection state shared by its request tasks.
struct Conn {
    peer: Peer,
    out: Outbox,
    calls: Mutex<HashMap<(u64, u64), ToolReply>>,
    llm_calls: Mutex<HashMap<(u64, u64), LlmReply>>,
    requests: Mutex<HashMap<u64, oneshot::Sender<()>>>,
    next_call: AtomicU64,
    /// The peer uid's counters for `status`, looked up once per connection.
    usage: Arc<super::stats::UidCounters>,
}

/// Serves one accepted connection until it ends.
pub(crate) async fn serve(stream: Stream, shared: Arc<DaemonState>) {
    let peer = match peer_of(&stream) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read peer credentials; closing");
            return;
        }
    };
    let (rd, mut wr) = into_tokio(stream).into_split();
    // Held until this connection ends: one uid cannot hold every connection.
    let _slot = match shared.conn_slot(peer.uid) {
        Ok(slot) => slot,
        Err(open) => {
            let (uid, pid) = (peer.uid, peer.pid);
            tracing::warn!(uid, pid, open, "connection refused: per-uid connection cap");
            let msg = format!(
                "uid {uid} already has {open} connections open (per_uid_connections); close one or retry later"
            );
            refuse(&mut wr, FailReason::Busy, msg).await;
            return;
        }
    };
    let mut rd = BufReader::new(rd);
    let max_frame = shared.current().config.max_frame_bytes;
    if admit(&shared, peer, &mut rd, &mut wr).await.is_err() {
        return;
    }
    let welcome = ServerToClient::Welcome {
        version: CLIENT_PROTOCOL_VERSION,
        server: format!("ptc-supervisor {}", env!("CARGO_PKG_VERSION")),
        max_frame,
    };
    if write(&mut wr, &welcome).await.is_err() {
        return;
    }
    run_connection(peer, shared, rd, wr, max_frame).await;
}

/// The tokio stream under interprocess's wrapper (a Unix socket on every platform we build for),
/// for its owned halves: `try_write` from any task, and no lock shared between the halves.
fn into_tokio(stream: Stream) -> UnixStream {
    let Stream::UdSocket(s) = stream;
    UnixStream::from(s)
}

fn peer_of(stream: &Stream) -> std::io::Result<Peer> {
    let c = stream.peer_creds()?;
    Ok(Peer {
        uid: c.euid().unwrap_or(u32::MAX),
        gid: c.egid().unwrap_or(u32::MAX),
        pid: c.pid().unwrap_or(-1),
    })
}

/// Access control from the kernel's credentials, then the version handshake. On `Err` the
/// peer has been sent its `Refused` frame (best effort) and the connection is to be closed.
async fn admit(
    shared: &DaemonState,
    peer: Peer,
    rd: &mut RecvHalf,
    wr: &mut SendHalf,
) -> Result<(), ()> {
    if !shared.current().config.allows(peer.uid, peer.gid) {
        let (uid, gid, pid) = (peer.uid, peer.gid, peer.pid);
        tracing::warn!(uid, gid, pid, "connection refused: uid/gid not allowed");
        let msg = format!("uid {uid} / gid {gid} may not use this supervisor");
        refuse(wr, FailReason::PermissionDenied, msg).await;
        return Err(());
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(rd)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(msg)) => {
            tracing::info!(uid = peer.uid, pid = peer.pid, %msg, "handshake failed");
            refuse(wr, FailReason::InvalidRequest, msg).await;
            Err(())
        }
        Err(_) => Err(()),
    }
}

/// The request phase: reader and writer tasks around [`dispatch`].
async fn run_connection(
    peer: Peer,
    shared: Arc<DaemonState>,
    rd: RecvHalf,
    wr: SendHalf,
    max_frame: u32,
) {
    let (out, drain) = Outbox::new(wr);
    let conn = Arc::new(Conn {
        peer,
        out,
        calls: Mutex::new(HashMap::new()),
        llm_calls: Mutex::new(HashMap::new()),
        requests: Mutex::new(HashMap::new()),
        next_call: AtomicU64::new(1),
        usage: shared.stats.uid(peer.uid),
    });
    let writer = tokio::spawn(drain);
    // Two decoded frames at most wait for dispatch: each may be max_frame bytes.
    let (frames_tx, frames_rx) = mpsc::channel(2);
    let reader = tokio::spawn(read_loop(rd, max_frame, conn.out.clone(), frames_tx));
    let idle = Duration::from_millis(shared.current().config.idle_timeout_ms);
    let end = dispatch(&conn, &shared, frames_rx, idle).await;
    reader.abort();
    if let Some((reason, msg)) = end {
        tracing::info!(uid = peer.uid, pid = peer.pid, %reason, %msg, "closing connection");
        let _ = conn.send(&ServerToClient::Refused {
            reason,
            message: msg,
        });
    }
    drop(conn);
    // The writer ends once every request task (holding `out`) is gone; bound the final writes.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer).await;
}

async fn handshake(rd: &mut RecvHalf) -> Result<(), String> {
    let body = match read_frame_bytes_async(rd, HELLO_MAX).await {
        Ok(Some(b)) => b,
        Ok(None) => return Err("closed before Hello".into()),
        Err(e) => return Err(format!("bad Hello frame: {e}")),
    };
    match decode_body::<ClientToServer>(&body, HELLO_MAX) {
        Ok(ClientToServer::Hello {
            version: CLIENT_PROTOCOL_VERSION,
            ..
        }) => Ok(()),
        Ok(ClientToServer::Hello { version, .. }) => Err(version_msg(version)),
        Ok(_) => Err("the first frame must be Hello".into()),
        Err(e) => match peek_hello_version(&body) {
            Some(v) if v != CLIENT_PROTOCOL_VERSION => Err(version_msg(v)),
            _ => Err(format!("bad Hello frame: {e}")),
        },
    }
}

fn version_msg(theirs: u32) -> String {
    format!(
        "protocol version mismatch: the supervisor speaks {CLIENT_PROTOCOL_VERSION}, the client {theirs}"
    )
}

async fn write(wr: &mut SendHalf, msg: &ServerToClient) -> std::io::Result<()> {
    let frame = encode_frame(msg, u32::MAX).map_err(std::io::Error::other)?;
    wr.write_all(&frame).await
}

async fn refuse(wr: &mut SendHalf, reason: FailReason, message: String) {
    let _ = tokio::time::timeout(
        Duration::from_millis(500),
        write(wr, &ServerToClient::Refused { reason, message }),
    )
    .await;
}

/// Answers queued for a client that is not reading them, past which its connection is not read
/// either (backpressure): a client cannot make the daemon buffer without end by never reading.
pub const SEND_QUEUE_MAX: usize = 4 << 20;

async fn read_loop(
    mut rd: RecvHalf,
    max_frame: u32,
    out: Outbox,
    tx: mpsc::Sender<Result<Option<ClientToServer>, CodecError>>,
) {
    loop {
        out.wait_below(SEND_QUEUE_MAX).await;
        let r = match read_frame_bytes_async(&mut rd, max_frame).await {
            Ok(Some(body)) => decode_off_runtime(body, max_frame).await.map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        let stop = !matches!(r, Ok(Some(_)));
        if tx.send(r).await.is_err() || stop {
            return;
        }
    }
}

/// Frames up to this size decode on the runtime; larger ones on a blocking thread, so a 16 MiB
/// context (a second or more of decoding in a debug build) cannot stall other connections'
/// reads or any deadline timer.
const INLINE_DECODE: usize = 64 << 10;

/// Large frames decoding at once, daemon-wide: each may cost up to
/// `value::wire::DECODE_AMPLIFICATION` times its size in values, so this bounds the sum (a
/// connection waiting here reads nothing more: backpressure on that client only).
static LARGE_DECODES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

async fn decode_off_runtime(body: Vec<u8>, max: u32) -> Result<ClientToServer, CodecError> {
    if body.len() <= INLINE_DECODE {
        return decode_body(&body, max);
    }
    let _permit = LARGE_DECODES
        .acquire()
        .await
        .map_err(|e| CodecError::Decode(format!("decoding closed: {e}")))?;
    tokio::task::spawn_blocking(move || decode_body(&body, max))
        .await
        .unwrap_or_else(|e| Err(CodecError::Decode(format!("decoding task failed: {e}"))))
}

/// Handles frames until the connection ends; returns what to tell the client if the daemon
/// ended it: a bad frame (`invalid_request`), or `idle` long with no request in flight and no
/// frame (`busy`: the slot goes to someone else).
async fn dispatch(
    conn: &Arc<Conn>,
    shared: &Arc<DaemonState>,
    mut frames: mpsc::Receiver<Result<Option<ClientToServer>, CodecError>>,
    idle: Duration,
) -> Option<(FailReason, String)> {
    let mut tasks = JoinSet::new();
    let mut stop = shared.stop_signal();
    loop {
        tokio::select! {
            frame = frames.recv() => match frame {
                Some(Ok(Some(msg))) => handle(conn, shared, msg, &mut tasks),
                Some(Ok(None)) | None => return None,
                Some(Err(CodecError::Io(_))) => return None,
                Some(Err(e)) => return Some((FailReason::InvalidRequest, e.to_string())),
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            () = stop.stopped() => return None,
            // Re-armed by every event above; only an idle connection reaches it.
            () = tokio::time::sleep(idle), if tasks.is_empty() => {
                let msg = format!("closed after {} ms with no request (idle_timeout_ms)", idle.as_millis());
                return Some((FailReason::Busy, msg));
            }
        }
    }
}

/// What a client asked for: one run, or one mission.
enum Work {
    Run(Box<RunRequest>),
    Mission(Box<MissionRequest>),
}

impl Work {
    /// The memory and history a failed Step gives back (a mission starts from none).
    fn memory_history(&self) -> (Value, Vec<Value>) {
        match self {
            Work::Run(r) => (r.memory.clone(), r.history.clone()),
            Work::Mission(_) => (Value::Nil, Vec::new()),
        }
    }
}

fn handle(
    conn: &Arc<Conn>,
    shared: &Arc<DaemonState>,
    msg: ClientToServer,
    tasks: &mut JoinSet<()>,
) {
    match msg {
        ClientToServer::Run { id, request } => start(conn, shared, id, Work::Run(request), tasks),
        ClientToServer::Mission { id, request } => {
            start(conn, shared, id, Work::Mission(request), tasks);
        }
        ClientToServer::ToolResult {
            request_id,
            call_id,
            result,
        } => {
            let reply = conn
                .calls
                .lock()
                .ok()
                .and_then(|mut c| c.remove(&(request_id, call_id)));
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        }
        ClientToServer::LlmResult {
            request_id,
            call_id,
            result,
        } => {
            let reply = conn
                .llm_calls
                .lock()
                .ok()
                .and_then(|mut c| c.remove(&(request_id, call_id)));
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        }
        ClientToServer::Cancel { request_id } => {
            let cancel = conn
                .requests
                .lock()
                .ok()
                .and_then(|mut r| r.remove(&request_id));
            if let Some(c) = cancel {
                let _ = c.send(());
            }
        }
        ClientToServer::Status { id } => {
            let status = super::status::snapshot(shared, conn.peer.uid);
            let _ = conn.send(&ServerToClient::Status {
                request_id: id,
                status: Box::new(status),
            });
        }
        ClientToServer::Hello { .. } => {
            tracing::debug!("ignoring a second Hello");
        }
    }
}

/// Registers request `id` and spawns its task; an id already in flight is refused and the
/// earlier request keeps it.
fn start(
    conn: &Arc<Conn>,
    shared: &Arc<DaemonState>,
    id: u64,
    work: Work,
    tasks: &mut JoinSet<()>,
) {
    let (cancel_tx, cancel_rx) = oneshot::channel();
    let duplicate = match conn.requests.lock() {
        Ok(r) if r.contains_key(&id) => true,
        Ok(mut r) => {
            r.insert(id, cancel_tx);
            false
        }
        Err(_) => false,
    };
    if duplicate {
        tracing::debug!(id, "duplicate request id refused");
        let msg = format!("request id {id} is already in flight on this connection");
        let (memory, history) = work.memory_history();
        let step = refusal(memory, history, FailReason::InvalidRequest, &msg);
        let _ = conn.send(&ServerToClient::Step {
            request_id: id,
            step: Box::new(step),
        });
        return;
    }
    tasks.spawn(request_task(
        Arc::clone(conn),
        Arc::clone(shared),
        id,
        work,
        cancel_rx,
    ));
}

async fn request_task(
    conn: Arc<Conn>,
    shared: Arc<DaemonState>,
    id: u64,
    work: Work,
    cancel: oneshot::Receiver<()>,
) {
    let _active = shared.active_guard();
    let _in_flight = conn.usage.enter();
    let start = Instant::now();
    let generation = shared.current();
    let policy = match &work {
        Work::Run(req) => generation.engine.policy_of(req).to_string(),
        Work::Mission(m) => m
            .agent
            .policy
            .clone()
            .unwrap_or_else(|| generation.engine.default_policy().to_string()),
    };
    let peer = conn.peer;
    let span = tracing::info_span!("request", uid = peer.uid, pid = peer.pid, request_id = id,
        policy = %policy, outcome = tracing::field::Empty, duration_ms = tracing::field::Empty);
    let (memory, history) = work.memory_history();
    let run = run_request(&shared, &generation, &conn, id, work);
    let step = tokio::select! {
        step = tracing::Instrument::instrument(run, span.clone()) => step,
        Ok(()) = cancel => {
            // The daemon built this Step, so its clock is the daemon's.
            let mut step = refusal(memory, history, FailReason::Cancelled, "cancelled by the client");
            step.usage.duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
            step
        }
    };
    let outcome = step.reason().map_or("ok", FailReason::as_str);
    span.record("outcome", outcome);
    span.record("duration_ms", step.usage.duration_ms);
    tracing::info!(parent: &span, outcome, "request finished");
    shared
        .stats
        .finish(&conn.usage, &policy, &step, start.elapsed());
    if let Ok(mut r) = conn.requests.lock() {
        r.remove(&id);
    }
    let _ = conn.send(&ServerToClient::Step {
        request_id: id,
        step: Box::new(step),
    });
}

async fn run_request(
    shared: &DaemonState,
    generation: &Arc<super::Generation>,
    conn: &Arc<Conn>,
    id: u64,
    work: Work,
) -> Step {
    let uid = conn.peer.uid;
    let (memory, history) = work.memory_history();
    if shared.is_draining() {
        let msg = "the supervisor is shutting down";
        return refusal(memory, history, FailReason::Busy, msg);
    }
    if let Some(policy) = forbidden_policy(generation, uid, &work) {
        let msg = format!("uid {uid} may not use policy `{policy}`");
        return refusal(memory, history, FailReason::PermissionDenied, &msg);
    }
    // Once per request: a mission's nested agents run on this permit (they borrow it).
    let _permit = match generation.admission.admit(uid).await {
        Ok(p) => p,
        Err(busy) => return refusal(memory, history, FailReason::Busy, busy.message()),
    };
    let tools = Arc::new(ConnTools {
        conn: Arc::clone(conn),
        request_id: id,
    });
    match work {
        Work::Run(req) => generation.engine.execute(*req, tools).await,
        Work::Mission(m) => {
            let llm = Llm::from_source(Arc::new(ConnLlm {
                conn: Arc::clone(conn),
                request_id: id,
            }));
            let llms = LlmSet::mirror(&m.models, &llm);
            let engine = Arc::clone(&generation.engine);
            crate::agent::run_mission(engine, llms, tools, *m).await
        }
    }
}

/// The first policy the request would run under that `uid` may not use (for a mission: any
/// agent's in its tree; the tree is depth-capped when decoded).
fn forbidden_policy(generation: &super::Generation, uid: u32, work: &Work) -> Option<String> {
    let default = generation.engine.default_policy();
    match work {
        Work::Run(req) => {
            let p = generation.engine.policy_of(req);
            (!generation.config.policy_allowed(uid, p)).then(|| p.to_string())
        }
        Work::Mission(m) => {
            let mut stack = vec![&m.agent];
            while let Some(a) = stack.pop() {
                let p = a.policy.as_deref().unwrap_or(default);
                if !generation.config.policy_allowed(uid, p) {
                    return Some(p.to_string());
                }
                stack.extend(a.agents.iter());
            }
            None
        }
    }
}

/// A Step for a request the daemon did not run (or stopped): the request's memory and history
/// unchanged, as every failed Step ([`Step::failed`]).
fn refusal(memory: Value, history: Vec<Value>, reason: FailReason, msg: &str) -> Step {
    Step::failed(ptc_shared::Fail::new(reason, msg), memory, history)
}

/// Routes one request's tool calls to its client.
struct ConnTools {
    conn: Arc<Conn>,
    request_id: u64,
}

/// Forgets an unanswered tool call when its future is dropped (deadline, cancel).
struct CallGuard {
    conn: Arc<Conn>,
    key: (u64, u64),
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Ok(mut c) = self.conn.calls.lock() {
            c.remove(&self.key);
        }
    }
}

impl ToolHandler for ConnTools {
    fn call(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        let call_id = self.conn.next_call.fetch_add(1, Ordering::Relaxed);
        let key = (self.request_id, call_id);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut c) = self.conn.calls.lock() {
            c.insert(key, tx);
        }
        let sent = self.conn.send(&ServerToClient::ToolCall {
            request_id: self.request_id,
            call_id,
            name,
            args,
        });
        let guard = CallGuard {
            conn: Arc::clone(&self.conn),
            key,
        };
        Box::pin(async move {
            let _guard = guard;
            if sent.is_err() {
                return Err("the client connection is closed".into());
            }
            rx.await
                .unwrap_or_else(|_| Err("the client went away before answering".into()))
        })
    }
}

/// Routes one mission's LLM requests to its client.
struct ConnLlm {
    conn: Arc<Conn>,
    request_id: u64,
}

/// Forgets an unanswered LLM call when its future is dropped (mission end, cancel).
struct LlmCallGuard {
    conn: Arc<Conn>,
    key: (u64, u64),
}

impl Drop for LlmCallGuard {
    fn drop(&mut self) {
        if let Ok(mut c) = self.conn.llm_calls.lock() {
            c.remove(&self.key);
        }
    }
}

impl LlmSource for ConnLlm {
    fn complete(&self, request: LlmRequest) -> LlmFuture {
        let call_id = self.conn.next_call.fetch_add(1, Ordering::Relaxed);
        let key = (self.request_id, call_id);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut c) = self.conn.llm_calls.lock() {
            c.insert(key, tx);
        }
        let sent = self.conn.send(&ServerToClient::LlmCall {
            request_id: self.request_id,
            call_id,
            request,
        });
        let guard = LlmCallGuard {
            conn: Arc::clone(&self.conn),
            key,
        };
        Box::pin(async move {
            let _guard = guard;
            if sent.is_err() {
                return Err(LlmError::Fatal("the client connection is closed".into()));
            }
            rx.await.unwrap_or_else(|_| {
                Err(LlmError::Fatal(
                    "the client went away before answering".into(),
                ))
            })
        })
    }
}

/// Tells a connection over the limit that the daemon is busy, then closes it.
pub(crate) async fn refuse_busy(stream: Stream) {
    let (_rd, mut wr) = into_tokio(stream).into_split();
    refuse(
        &mut wr,
        FailReason::Busy,
        "too many connections; retry later".into(),
    )
    .await;
}
