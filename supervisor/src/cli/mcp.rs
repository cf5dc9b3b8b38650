//! `ptc mcp`: the `lisp_eval` MCP server on stdin/stdout, or with `--http ADDR` over Streamable
//! HTTP (see `ptc_supervisor::mcp`).
//!
//! Flags pick the client (an engine embedded in this process, or `--connect SOCKET` to a
//! daemon), the policy, the concurrency, the optional sessions and the transport; the server
//! itself lives in the library. stdout is the protocol (stdio), so diagnostics go to stderr
//! (`RUST_LOG` sets the level, default `warn`). Over HTTP the bound address is the first line
//! on stderr, and SIGTERM or SIGINT stops the server; the bearer token comes from a file or
//! the environment, never from the command line (which `ps` shows).

use clap::Args;
use ptc_supervisor::client::{Client, Embedded};
use ptc_supervisor::engine::EngineConfig;
use ptc_supervisor::mcp::http::{BearerToken, HttpOptions, HttpServer, MCP_PATH};
use ptc_supervisor::mcp::sessions::SessionConfig;
use ptc_supervisor::mcp::{self, Options};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Policy every call runs under: a name in the policies directory or a policy file
    /// (with --connect: a name the daemon knows).
    #[arg(long, value_name = "NAME|FILE")]
    policy: Option<String>,
    /// Run calls through a ptc-supervisor daemon on this socket instead of an engine
    /// embedded in this process.
    #[arg(long, value_name = "SOCKET")]
    connect: Option<PathBuf>,
    /// Calls that may run at once (1 to 8); one more is answered `busy`. Default: min(8, CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=8))]
    max_concurrency: Option<u8>,
    /// Also offer stateful sessions (lisp_session_start, _eval, _inspect, _list, _close): a
    /// session keeps its programs' `def`s and *1 *2 *3 from one call to the next.
    #[arg(long)]
    sessions: bool,
    /// Sessions open at once (1 to 1024); starting one more is `session_limit`.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "sessions",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    max_sessions: u16,
    /// A session with no call for this long is ended (`session_expired`).
    #[arg(long, value_name = "MS", default_value_t = 600_000, requires = "sessions",
          value_parser = clap::value_parser!(u64).range(1..))]
    session_ttl_ms: u64,
    /// Bytes one session may keep (its memory and *1 *2 *3, encoded; at most 4 MiB); an eval
    /// that would keep more is `memory_limit` and keeps nothing.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20, requires = "sessions",
          value_parser = clap::value_parser!(u64).range(1..=4 * 1024 * 1024))]
    session_memory_bytes: u64,
    /// Serve over MCP's Streamable HTTP transport on this address (at path /mcp) instead of
    /// stdio; port 0 picks a free port. A non-loopback address needs a bearer token.
    #[arg(long, value_name = "ADDR:PORT")]
    http: Option<SocketAddr>,
    /// A file holding the bearer token every HTTP request must carry (`Authorization: Bearer
    /// TOKEN`). Default: the PTC_MCP_TOKEN variable, if set.
    #[arg(long, value_name = "FILE", requires = "http")]
    http_token_file: Option<PathBuf>,
    /// A browser origin allowed to call besides the loopback ones (scheme://host:port, or
    /// :* for any port); repeatable. Requests with any other Origin header get 403.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    http_allow_origin: Vec<String>,
    /// Close an HTTP connection that sends no whole request head for this long (after it
    /// connects or after its last answer), so idle connections cannot hold the 128 places.
    #[arg(long, value_name = "MS", requires = "http", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    http_idle_ms: u64,
}

/// The variable holding the HTTP bearer token when no --http-token-file is given.
const TOKEN_VAR: &str = "PTC_MCP_TOKEN";

pub fn mcp(args: McpArgs) -> ExitCode {
    init_logging();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage_error(&format!("cannot start the runtime: {e}")),
    };
    let result = rt.block_on(async {
        let (client, policy) = open(&args).await?;
        let options = Options {
            policy,
            max_concurrency: args
                .max_concurrency
                .map_or_else(mcp::default_concurrency, usize::from),
            sessions: args.sessions.then(|| SessionConfig {
                idle_ttl: Duration::from_millis(args.session_ttl_ms),
                max_sessions: usize::from(args.max_sessions),
                max_memory_bytes: args.session_memory_bytes,
            }),
            ..Options::default()
        };
        match args.http {
            Some(addr) => serve_http(client, options, addr, &args).await,
            None => mcp::serve_stdio(client, options)
                .await
                .map_err(|e| e.to_string()),
        }
    });
    // Nothing may outlive the session: runs were stopped at end of input.
    rt.shutdown_timeout(Duration::from_millis(500));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => usage_error(&e),
    }
}

/// The client and the policy name each call carries (`None`: the client's default).
async fn open(args: &McpArgs) -> Result<(Client, Option<String>), String> {
    if let Some(socket) = &args.connect {
        if let Some(p) = args
            .policy
            .as_deref()
            .filter(|p| std::path::Path::new(p).is_file())
        {
            return Err(format!(
                "--policy {p}: with --connect, name a policy the daemon knows"
            ));
        }
        let client = Client::connect(socket)
            .await
            .map_err(|e| format!("cannot use the daemon at {}: {e}", socket.display()))?;
        return Ok((client, args.policy.clone()));
    }
    let (policies, chosen) = super::sandbox::policies_for(args.policy.as_deref())?;
    let mut config = EngineConfig::new(ptc_supervisor::daemon::config::default_runner(), policies);
    if let Some(name) = chosen {
        config.default_policy = name;
    }
    let client =
        Client::embedded_with(config).map_err(|e| format!("cannot start the sandbox: {e}"))?;
    Ok((client, None))
}

/// Binds, says where on stderr, and serves until SIGTERM or SIGINT.
async fn serve_http(
    client: Client,
    options: Options,
    addr: SocketAddr,
    args: &McpArgs,
) -> Result<(), String> {
    let http = HttpOptions {
        addr,
        token: token(args)?,
        allowed_origins: args.http_allow_origin.clone(),
        idle_connection: std::time::Duration::from_millis(args.http_idle_ms),
    };
    let stop = shutdown_signal().map_err(|e| format!("cannot watch for signals: {e}"))?;
    let server = HttpServer::bind(client, options, http)
        .await
        .map_err(|e| e.to_string())?;
    let bound = server.local_addr().map_err(|e| e.to_string())?;
    eprintln!("ptc mcp: listening on http://{bound}{MCP_PATH}");
    server.run(stop).await.map_err(|e| e.to_string())
}

/// The bearer token, from --http-token-file or else PTC_MCP_TOKEN; none if neither is given.
fn token(args: &McpArgs) -> Result<Option<BearerToken>, String> {
    let text = match &args.http_token_file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("--http-token-file {}: {e}", path.display()))?,
        None => match std::env::var(TOKEN_VAR) {
            Ok(t) => t,
            Err(std::env::VarError::NotPresent) => return Ok(None),
            Err(e) => return Err(format!("{TOKEN_VAR}: {e}")),
        },
    };
    BearerToken::new(&text).map(Some).map_err(|e| e.to_string())
}

/// Completes at the first SIGTERM or SIGINT.
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}
