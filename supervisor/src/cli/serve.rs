//! `ptc serve`: run the supervisor daemon in the foreground (what the systemd unit starts).
//!
//! The systemd socket, if any, is taken before the tokio runtime starts (taking it edits the
//! environment, which is only sound while the process has one thread). SIGTERM and SIGINT drain
//! and exit 0; SIGHUP reloads the config file and the policies. Logs: see `init_logging`.

use clap::Args;
use ptc_supervisor::daemon::config::{Config, LogFormat};
use ptc_supervisor::daemon::{Control, Daemon, ListenerSource};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tokio::signal::unix::{SignalKind, signal};

/// The config file read when `--config` is not given and it exists.
const DEFAULT_CONFIG: &str = "/etc/ptc/ptc.toml";

/// Defaults: socket /run/ptc/ptc.sock (root) or $XDG_RUNTIME_DIR/ptc/ptc.sock; runner
/// $PTC_RUNNER or `ptc-runner` next to `ptc`; policies $PTC_POLICIES, /etc/ptc/policies, or built in.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Socket path (overrides `socket` in the config; ignored under socket activation).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Config file (TOML). Default: /etc/ptc/ptc.toml if it exists, else built-in defaults.
    #[arg(long)]
    config: Option<PathBuf>,
}

pub fn serve(args: ServeArgs) -> ExitCode {
    let inherited = match ListenerSource::from_systemd() {
        Ok(l) => l,
        Err(e) => return fail(2, &format!("socket passed by systemd is unusable: {e}")),
    };
    let config_path = args.config.or_else(|| {
        Path::new(DEFAULT_CONFIG)
            .is_file()
            .then(|| PathBuf::from(DEFAULT_CONFIG))
    });
    let config = match &config_path {
        Some(p) => match Config::load(p) {
            Ok(c) => c,
            Err(e) => return fail(2, &e.to_string()),
        },
        None => Config::default(),
    };
    init_logging(config.log_format);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(1, &format!("cannot start the runtime: {e}")),
    };
    let source = inherited.map_or(ListenerSource::Bind, ListenerSource::Inherited);
    rt.block_on(async move {
        // Handlers first: once the socket is bound, clients (and tests) may take the daemon as
        // started, and a SIGHUP or SIGTERM before this would kill it with the default action.
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        if let Err(e) = forward_signals(tx) {
            return fail(1, &format!("cannot install signal handlers: {e}"));
        }
        let daemon = match Daemon::bind(config, config_path, args.socket, source) {
            Ok(d) => d,
            Err(e) => return fail(2, &e.to_string()),
        };
        daemon.run(rx).await;
        ExitCode::SUCCESS
    })
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

fn forward_signals(tx: tokio::sync::mpsc::Sender<Control>) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        loop {
            let ctl = tokio::select! {
                _ = term.recv() => Control::Shutdown,
                _ = int.recv() => Control::Shutdown,
                _ = hup.recv() => Control::Reload,
            };
            if tx.send(ctl).await.is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Under systemd (`$JOURNAL_STREAM`) text logs go to journald natively, with the span fields as
/// journal fields; otherwise, or for `log_format = "json"`, to stderr. `RUST_LOG` filters
/// (default `info`).
fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if format == LogFormat::Text && std::env::var_os("JOURNAL_STREAM").is_some() {
        match tracing_journald::layer() {
            Ok(layer) => {
                let r = tracing_subscriber::registry()
                    .with(filter())
                    .with(layer.with_syslog_identifier("ptc-supervisor".into()))
                    .try_init();
                if r.is_ok() {
                    return;
                }
            }
            Err(e) => eprintln!("warning: journald unavailable ({e}); logging to stderr"),
        }
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    if let Err(e) = result {
        eprintln!("warning: logging not initialised: {e}");
    }
}
