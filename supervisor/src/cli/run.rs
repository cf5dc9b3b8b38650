//! `ptc run`: one execution from the command line.

use super::input::read_data_file;
use clap::{Args, ValueEnum};
use ptc_runner::{RunOptions, run as run_in_process};
use ptc_shared::{Limits, Step};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// The result printed like Clojure's pr-str.
    Edn,
    /// The whole Step as JSON (also on failure).
    Json,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Program file (or use -e).
    file: Option<PathBuf>,
    /// Program text.
    #[arg(short = 'e', long = "eval", conflicts_with = "file")]
    expr: Option<String>,
    /// Context data (JSON, or EDN for *.edn): read as data/NAME and ctx/NAME.
    #[arg(long)]
    context: Option<PathBuf>,
    /// Memory from an earlier run (JSON or EDN map of name → value).
    #[arg(long)]
    memory: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "edn")]
    format: Format,
    /// Run the interpreter inside this process instead of a sandboxed runner.
    #[arg(long)]
    in_process: bool,
    /// Wall-clock timeout in milliseconds.
    #[arg(long)]
    timeout: Option<u64>,
    /// Evaluation step budget.
    #[arg(long)]
    max_steps: Option<u64>,
    /// Run through a ptc-supervisor daemon listening on this socket.
    #[arg(long, value_name = "SOCKET", conflicts_with = "in_process")]
    connect: Option<PathBuf>,
    /// Policy to run under (with --connect: a name the daemon knows).
    #[arg(long)]
    policy: Option<String>,
    /// A tool the program may call: COMMAND runs via `sh -c`, args JSON on stdin, JSON on stdout.
    #[arg(long = "tool", value_name = "NAME=COMMAND")]
    tool: Vec<String>,
    /// Tools with fixed results: a JSON object mapping tool names to results.
    #[arg(long = "tools", value_name = "FILE.json")]
    tools: Option<PathBuf>,
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: usage: {msg}");
    ExitCode::from(2)
}

/// Runs the program and reports the Step.
pub fn run(args: RunArgs) -> ExitCode {
    let source = match (&args.expr, &args.file) {
        (Some(e), _) => e.clone(),
        (None, Some(f)) => match std::fs::read_to_string(f) {
            Ok(s) => s,
            Err(e) => return usage_error(&format!("cannot read {}: {e}", f.display())),
        },
        (None, None) => return usage_error("give a program FILE or -e 'PROGRAM'"),
    };
    let mut opts = RunOptions::default();
    for (path, slot) in [
        (&args.context, &mut opts.context),
        (&args.memory, &mut opts.memory),
    ] {
        if let Some(p) = path {
            match read_data_file(p) {
                Ok(v) => *slot = v,
                Err(e) => return usage_error(&e),
            }
        }
    }
    let mut limits = Limits::default();
    if let Some(t) = args.timeout {
        limits.timeout_ms = t;
        limits.cpu_ms = limits.cpu_ms.max(t);
    }
    if let Some(s) = args.max_steps {
        limits.max_steps = s;
    }
    if let Some(socket) = &args.connect {
        return run_connect(&args, socket, source, opts);
    }
    if !args.tool.is_empty() || args.tools.is_some() || args.policy.is_some() {
        return usage_error("--tool, --tools and --policy need --connect SOCKET for now");
    }
    opts.limits = limits;
    let step = match run_in_process(&source, opts) {
        Ok(s) | Err(s) => s,
    };
    report(&step, args.format)
}

/// `--connect`: the same run through a daemon, the CLI hosting `--tool`/`--tools`.
fn run_connect(
    args: &RunArgs,
    socket: &std::path::Path,
    source: String,
    opts: RunOptions,
) -> ExitCode {
    if args.max_steps.is_some() {
        return usage_error("--max-steps is not supported with --connect (the policy decides)");
    }
    let tools = match super::connect::cli_tools(&args.tool, args.tools.as_deref()) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let mut run = ptc_supervisor::client::Run::new(source)
        .context(opts.context)
        .memory(opts.memory);
    for t in tools {
        run = run.tool(t);
    }
    if let Some(p) = &args.policy {
        run = run.policy(p.clone());
    }
    if let Some(t) = args.timeout {
        run = run.timeout(std::time::Duration::from_millis(t));
    }
    match super::connect::run_connected(socket, run) {
        Ok(step) => report(&step, args.format),
        Err((reason, message)) => {
            eprintln!("error: {reason}: {message}");
            ExitCode::from(2)
        }
    }
}

/// Prints the Step in the chosen format; the exit code says success or failure.
fn report(step: &Step, format: Format) -> ExitCode {
    if let Format::Json = format {
        println!("{}", step.to_json());
    }
    for w in &step.warnings {
        eprintln!("warning: {w}");
    }
    match (&step.fail, &step.return_value) {
        (Some(f), _) => {
            eprintln!("error: {}: {}", f.reason, f.message);
            ExitCode::from(1)
        }
        (None, v) => {
            if let Format::Edn = format {
                for p in &step.prints {
                    eprintln!("{p}");
                }
                println!(
                    "{}",
                    v.as_ref()
                        .map(ptc_shared::value::pr_str)
                        .unwrap_or_else(|| "nil".into())
                );
            }
            ExitCode::SUCCESS
        }
    }
}
