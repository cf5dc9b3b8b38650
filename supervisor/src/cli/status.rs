//! `ptc status --connect SOCKET`: a daemon's live state, for people (text) or scripts (JSON,
//! the serde form of `ptc_shared::status::DaemonStatus`, one object).
//!
//! One client call (`Client::status`); this file only renders. Exit codes: 0 answered, 2 the
//! daemon could not be reached or did not answer within [`ANSWER_WITHIN`].

use super::connect::Format;
use clap::Args;
use ptc_shared::status::{DaemonStatus, Latency, UidUsage};
use ptc_supervisor::client::Client;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// How long a daemon may take to answer (it answers from counters, without a runner).
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The daemon's socket.
    #[arg(long, value_name = "SOCKET")]
    connect: PathBuf,
    /// `human` (alias `text`) or `json`.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

pub fn status(args: StatusArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage_error(&format!("cannot start a runtime: {e}")),
    };
    let answer = rt.block_on(async {
        let client = Client::connect(&args.connect)
            .await
            .map_err(|e| format!("{}: {e}", args.connect.display()))?;
        match tokio::time::timeout(ANSWER_WITHIN, client.status()).await {
            Ok(s) => s.map_err(|e| e.to_string()),
            Err(_) => Err(format!("no answer within {} s", ANSWER_WITHIN.as_secs())),
        }
    });
    let status = match answer {
        Ok(s) => s,
        Err(e) => return usage_error(&e),
    };
    match args.format {
        Format::Human => print!("{}", render(&status)),
        Format::Json => match serde_json::to_string_pretty(&status) {
            Ok(j) => println!("{j}"),
            Err(e) => return usage_error(&e.to_string()),
        },
    }
    ExitCode::SUCCESS
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// The status as aligned text.
pub fn render(s: &DaemonStatus) -> String {
    let mut o = String::new();
    let state = if s.draining { "draining" } else { "serving" };
    let _ = writeln!(
        o,
        "{}  {state}, up {}  (you are uid {})",
        s.version,
        human_ms(s.uptime_ms),
        s.caller_uid
    );
    let r = &s.runners;
    let _ = writeln!(
        o,
        "runners     {} busy / {} warm / {} limit, {} queued",
        r.busy, r.warm, r.limit, r.queued
    );
    for p in &s.policies {
        let default = if p.default { " (default)" } else { "" };
        let _ = writeln!(
            o,
            "policy      {}{default}: {} warm, {} pooled",
            p.name, p.warm, p.pooled
        );
    }
    let e = &s.executions;
    let failed: Vec<String> = e
        .failed
        .iter()
        .map(|c| format!("{} {}", c.reason, c.count))
        .collect();
    let failed = if failed.is_empty() {
        String::new()
    } else {
        format!(", {}", failed.join(", "))
    };
    let _ = writeln!(o, "executions  {} total: ok {}{failed}", e.total, e.ok);
    let _ = writeln!(o, "latency     {}", latency(&s.latency));
    render_uids(&mut o, s);
    render_errors(&mut o, s);
    o
}

fn latency(l: &Latency) -> String {
    match (l.p50_us, l.p99_us) {
        (Some(p50), Some(p99)) => format!(
            "p50 {} / p99 {} over the last {} s ({} requests)",
            human_us(p50),
            human_us(p99),
            l.window_s,
            l.count
        ),
        _ => format!("no requests in the last {} s", l.window_s),
    }
}

fn render_uids(o: &mut String, s: &DaemonStatus) {
    let _ = writeln!(
        o,
        "{:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9}",
        "uid", "in-flight", "total", "ok", "failed", "busy", "wall", "cpu"
    );
    let row = |o: &mut String, name: String, u: &UidUsage| {
        let _ = writeln!(
            o,
            "{name:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>9}",
            u.in_flight,
            u.total,
            u.ok,
            u.failed,
            u.busy,
            human_ms(u.duration_ms),
            human_ms(u.cpu_ms)
        );
    };
    for u in &s.uids {
        row(o, u.uid.to_string(), u);
    }
    if let Some(u) = &s.uids_overflow {
        row(o, "(others)".into(), u);
    }
}

fn render_errors(o: &mut String, s: &DaemonStatus) {
    if s.errors.is_empty() {
        let _ = writeln!(o, "errors      none kept");
        return;
    }
    let _ = writeln!(o, "errors      newest first:");
    for e in &s.errors {
        // Messages can quote program data: one line each, control characters shown escaped.
        let message: String = e.message.escape_debug().collect();
        let _ = writeln!(
            o,
            "  {:>8} ago  uid {}  {}  {}: {message}",
            human_ms(e.age_ms),
            e.uid,
            e.policy,
            e.reason_name
        );
    }
}

fn human_us(us: u64) -> String {
    if us < 1000 {
        format!("{us} µs")
    } else {
        format!("{:.1} ms", us as f64 / 1000.0)
    }
}

fn human_ms(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}
