//! `ptc mcp --http ADDR`: the same `lisp_eval` server over MCP's Streamable HTTP transport.
//!
//! rmcp's [`StreamableHttpService`] speaks the protocol (sessions by `Mcp-Session-Id`, SSE
//! answers, `Host` and `Origin` checks, the body limit); hyper's HTTP/1.1 connection serves
//! it on a TCP listener. Each MCP session gets its own [`LispEval`] built from the server's one
//! [`Shared`] part, so the tool logic, the limits and the execution slots are the stdio
//! server's: only the way bytes arrive differs. A session's `lisp_session_*` table belongs to
//! that MCP session (ids are sequential, so one client never sees another's) and ends with it.
//!
//! Checks, in order, before rmcp sees a request:
//! 1. The path is [`MCP_PATH`] (else 404).
//! 2. With a bearer token configured, `Authorization: Bearer TOKEN` matches it, compared in
//!    constant time (else 401). A bind to a non-loopback address without a token is refused
//!    at start ([`HttpError::NonLoopbackWithoutToken`]): nothing else would stand between the
//!    network and the sandbox.
//! 3. A request opening a new MCP session (no `Mcp-Session-Id`) while [`MAX_HTTP_SESSIONS`]
//!    are open is answered 503.
//!
//! Then rmcp: a present `Origin` not on the allow-list is 403 (DNS rebinding: a web page the
//! user visits cannot drive the server; the default list is the loopback origins); on a
//! loopback bind a `Host` that is not a loopback name is 403 too; a body over
//! [`MAX_FRAME_BYTES`] is 413.
//!
//! Invariants:
//! - Bounded: connections ([`MAX_CONNECTIONS`], more are closed at accept), MCP sessions,
//!   bodies, and the calls themselves (the shared slots). A connection that has not sent a whole
//!   request head within [`HttpOptions::idle_connection`] of the last answer (or of its accept) is
//!   closed, so idle keep-alive connections cannot hold the places; a call in flight is never cut.
//! - Shutdown (the `shutdown` future, SIGTERM/SIGINT in `ptc mcp`): the listener closes, running
//!   calls get [`EOF_GRACE`] as at stdio's end of input and are then stopped (`shutting_down`),
//!   rmcp's sessions are cancelled, connections are closed; no runner outlives [`HttpServer::run`].

use super::input::MAX_FRAME_BYTES;
use super::{EOF_GRACE, LispEval, McpServeError, Options, Shared};
use crate::client::Client;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The one path the server answers on.
pub const MCP_PATH: &str = "/mcp";
/// MCP sessions open at once; a request opening one more is answered 503.
pub const MAX_HTTP_SESSIONS: usize = 32;
/// TCP connections served at once; more are closed as soon as they are accepted.
pub const MAX_CONNECTIONS: usize = 128;
/// An MCP session with no request for this long is ended (with its `lisp_session_*` table).
pub const SESSION_IDLE: Duration = Duration::from_secs(600);
/// How long connections may take to close once the calls are stopped, before they are cut.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The origins a browser page may call from by default: the loopback ones, any port.
pub const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// A bearer token, compared in constant time; never printed.
#[derive(Clone)]
pub struct BearerToken(Vec<u8>);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// A token from its text (a file's or a variable's): surrounding whitespace is dropped; an
    /// empty token, or one with characters a header cannot carry, is refused.
    pub fn new(text: &str) -> Result<BearerToken, HttpError> {
        let token = text.trim();
        if token.is_empty() {
            return Err(HttpError::BadToken("it is empty"));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(HttpError::BadToken(
                "it has characters other than printable ASCII",
            ));
        }
        Ok(BearerToken(token.as_bytes().to_vec()))
    }

    /// Whether an `Authorization` header carries this token. Time depends only on the
    /// lengths, never on where the bytes differ.
    fn admits(&self, header: Option<&HeaderValue>) -> bool {
        let Some(given) = header.and_then(|h| h.as_bytes().strip_prefix(b"Bearer ")) else {
            return false;
        };
        let mut diff = u8::from(given.len() != self.0.len());
        for (i, want) in self.0.iter().enumerate() {
            diff |= want ^ given.get(i).copied().unwrap_or(!want);
        }
        std::hint::black_box(diff) == 0
    }
}

/// Where and how the HTTP transport listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to bind (port 0: any free port; [`HttpServer::local_addr`] says which).
    pub addr: SocketAddr,
    /// Required on every request when set; required to bind a non-loopback address.
    pub token: Option<BearerToken>,
    /// Origins allowed besides [`LOOPBACK_ORIGINS`] (`scheme://host:port`, `:*` for any port).
    pub allowed_origins: Vec<String>,
    /// How long a connection may go without sending a whole request head (after its accept or
    /// its last answer) before it is closed.
    pub idle_connection: Duration,
}

/// Why the HTTP transport cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "refusing to serve on {0}, which is not a loopback address, without a bearer token (set PTC_MCP_TOKEN or --http-token-file)"
    )]
    NonLoopbackWithoutToken(SocketAddr),
    #[error("the bearer token is unusable: {0}")]
    BadToken(&'static str),
    #[error("the allowed origin `{0}` is not scheme://host[:port|:*] (or `null`)")]
    BadOrigin(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

type Body = BoxBody<Bytes, Infallible>;
type Mcp = StreamableHttpService<LispEval, LocalSessionManager>;

/// A bound server, not yet serving.
#[derive(Debug)]
pub struct HttpServer {
    listener: TcpListener,
    gate: Arc<Gate>,
    eof: watch::Sender<bool>,
    /// Its cancellation token ends rmcp's sessions.
    rmcp_config: StreamableHttpServerConfig,
    shared: Shared,
    idle_connection: Duration,
}

/// The checks in front of rmcp's service, and the service.
struct Gate {
    token: Option<BearerToken>,
    sessions: Arc<LocalSessionManager>,
    mcp: Mcp,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Checks the options and binds the address; serving starts with [`HttpServer::run`].
    pub async fn bind(
        client: Client,
        options: Options,
        http: HttpOptions,
    ) -> Result<HttpServer, McpServeError> {
        if !http.addr.ip().is_loopback() && http.token.is_none() {
            return Err(HttpError::NonLoopbackWithoutToken(http.addr).into());
        }
        let config = rmcp_config(&http)?;
        let listener = TcpListener::bind(http.addr)
            .await
            .map_err(|source| HttpError::Bind {
                addr: http.addr,
                source,
            })?;
        let (eof_tx, eof) = watch::channel(false);
        let shared = Shared::new(client, &options, eof);
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(SESSION_IDLE);
        let sessions = Arc::new(manager);
        let for_sessions = shared.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(LispEval::new(&for_sessions, options.sessions, None)),
            Arc::clone(&sessions),
            config.clone(),
        );
        Ok(HttpServer {
            listener,
            gate: Arc::new(Gate {
                token: http.token,
                sessions,
                mcp,
            }),
            eof: eof_tx,
            rmcp_config: config,
            shared,
            idle_connection: http.idle_connection,
        })
    }

    /// The address bound (the port chosen when 0 was asked).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then stops as the module header says.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), McpServeError> {
        let HttpServer {
            listener,
            gate,
            eof,
            rmcp_config,
            shared,
            idle_connection,
        } = self;
        let mut conns = JoinSet::new();
        let (closing_tx, closing) = watch::channel(false);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => {
                    // Connections that ended free their places before this one is counted.
                    while conns.try_join_next().is_some() {}
                    match accepted {
                        Ok((stream, _)) if conns.len() < MAX_CONNECTIONS => {
                            conns.spawn(serve_connection(stream, Arc::clone(&gate), closing.clone(), idle_connection));
                        }
                        Ok(_) => tracing::warn!("connection refused: {MAX_CONNECTIONS} already open"),
                        // Out of descriptors, say: wait rather than spin.
                        Err(e) => {
                            tracing::warn!(%e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            }
        }
        drop(listener);
        stop_calls(&eof, &shared).await;
        // Answers already written reach their clients: hyper closes each connection once its
        // responses are done; only then are rmcp's sessions (and their GET streams) ended.
        let _ = closing_tx.send(true);
        if !drain(&mut conns).await {
            rmcp_config.cancellation_token.cancel();
            if !drain(&mut conns).await {
                conns.shutdown().await;
            }
        }
        rmcp_config.cancellation_token.cancel();
        Ok(())
    }
}

/// Waits up to [`CLOSE_GRACE`] for every connection to close; whether they all did.
async fn drain(conns: &mut JoinSet<()>) -> bool {
    let all = async { while conns.join_next().await.is_some() {} };
    tokio::time::timeout(CLOSE_GRACE, all).await.is_ok()
}

/// Gives running calls [`EOF_GRACE`] to finish (each is stopped after it, answered
/// `shutting_down`), and waits until every slot is free again.
async fn stop_calls(eof: &watch::Sender<bool>, shared: &Shared) {
    let _ = eof.send(true);
    let all = u32::try_from(shared.capacity).unwrap_or(u32::MAX);
    let waited = tokio::time::timeout(EOF_GRACE + CLOSE_GRACE, shared.slots.acquire_many(all));
    if waited.await.is_err() {
        tracing::warn!("calls still running after the shutdown grace");
    }
}

/// rmcp's configuration: the body limit, the origin allow-list, and (only on a non-loopback
/// bind, where the bearer token guards) no `Host` check.
fn rmcp_config(http: &HttpOptions) -> Result<StreamableHttpServerConfig, HttpError> {
    for origin in &http.allowed_origins {
        if !origin_is_well_formed(origin) {
            return Err(HttpError::BadOrigin(origin.clone()));
        }
    }
    let origins = LOOPBACK_ORIGINS
        .iter()
        .map(|o| (*o).to_owned())
        .chain(http.allowed_origins.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(MAX_FRAME_BYTES)
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    if !http.addr.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    Ok(config)
}

/// `null`, or `scheme://host` with an optional `:port` or `:*` and nothing after.
fn origin_is_well_formed(origin: &str) -> bool {
    if origin == "null" {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let host = rest
        .strip_suffix(":*")
        .or_else(|| {
            rest.rsplit_once(':')
                .filter(|(h, p)| !h.is_empty() && !h.ends_with('[') && p.parse::<u16>().is_ok())
                .map(|(h, _)| h)
        })
        .unwrap_or(rest);
    matches!(scheme, "http" | "https")
        && !host.is_empty()
        && !host.contains(['/', '?', '#', '@', ' '])
}

/// One TCP connection, until the peer closes it or the server closes (then gracefully).
async fn serve_connection(
    stream: TcpStream,
    gate: Arc<Gate>,
    mut closing: watch::Receiver<bool>,
    idle: Duration,
) {
    let service = hyper::service::service_fn(move |req| {
        let gate = Arc::clone(&gate);
        async move { Ok::<_, Infallible>(gate.answer(req).await) }
    });
    // hyper's header-read timer runs whenever the connection waits for a request head: from the
    // accept, and again after each answer (keep-alive), but never while a call is answered.
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(idle)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        done = conn.as_mut() => {
            if let Err(e) = done { tracing::debug!(%e, "connection ended"); }
            return;
        }
        _ = closing.wait_for(|c| *c) => conn.as_mut().graceful_shutdown(),
    }
    if let Err(e) = conn.await {
        tracing::debug!(%e, "connection ended");
    }
}

impl Gate {
    async fn answer(&self, req: Request<Incoming>) -> Response<Body> {
        if req.uri().path() != MCP_PATH {
            return plain(StatusCode::NOT_FOUND, "Not Found: the MCP endpoint is /mcp");
        }
        if let Some(token) = &self.token
            && !token.admits(req.headers().get(AUTHORIZATION))
        {
            let mut r = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: a bearer token is required",
            );
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
        let opens_session = !req.headers().contains_key("mcp-session-id");
        if opens_session && self.sessions.sessions.read().await.len() >= MAX_HTTP_SESSIONS {
            let msg = format!(
                "Service Unavailable: {MAX_HTTP_SESSIONS} MCP sessions are open; close one (DELETE) or retry later"
            );
            return plain(StatusCode::SERVICE_UNAVAILABLE, &msg);
        }
        self.mcp.handle(req).await
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_admits_only_itself() {
        let t = BearerToken::new(" s3cret\n").expect("token");
        let h = |s: &'static str| HeaderValue::from_static(s);
        assert!(t.admits(Some(&h("Bearer s3cret"))));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Bearer S3cret",
            "s3cret",
            "Bearer ",
        ] {
            assert!(!t.admits(Some(&h(wrong))), "{wrong}");
        }
        assert!(!t.admits(None));
        assert!(matches!(
            BearerToken::new(" \n"),
            Err(HttpError::BadToken(_))
        ));
        assert!(matches!(
            BearerToken::new("a b"),
            Err(HttpError::BadToken(_))
        ));
    }

    #[test]
    fn origins_are_checked_for_shape() {
        for good in [
            "http://a.example:*",
            "https://a.example:8443",
            "http://[::1]:*",
            "null",
            "http://a",
        ] {
            assert!(origin_is_well_formed(good), "{good}");
        }
        for bad in [
            "a.example",
            "ftp://a",
            "http://",
            "http://a/x",
            "http://a:*/",
        ] {
            assert!(!origin_is_well_formed(bad), "{bad}");
        }
    }
}
