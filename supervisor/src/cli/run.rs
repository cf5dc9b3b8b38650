//! `ptc run`: one execution from the command line.

use super::input::read_data_file;
use super::tools::{CliTool, CliToolError, parse_tool_flag, read_tools_file};
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
    /// The program's signature, shorthand or Malli-lite: e.g. '(limit :int) -> [{id :int}]'.
    #[arg(long)]
    signature: Option<String>,
    /// The signature of the step that produced the context (e.g. a previous run's
    /// `step.signature`): its output fields become this run's inputs.
    #[arg(long, value_name = "SIG")]
    context_signature: Option<String>,
    /// How strictly the signature is applied.
    #[arg(long, default_value = "enabled", value_parser = ["enabled", "warn_only", "disabled", "strict"])]
    validation: String,
    /// A tool run outside the sandbox: NAME=COMMAND (args as JSON on stdin, JSON result on stdout).
    #[arg(long = "tool", value_name = "NAME=COMMAND")]
    tool: Vec<String>,
    /// A JSON file mapping tool names to fixed results.
    #[arg(long = "tools", value_name = "FILE.json")]
    tools_file: Option<PathBuf>,
    /// Run through a ptc-supervisor daemon listening on this socket.
    #[arg(long, value_name = "SOCKET", conflicts_with = "in_process")]
    connect: Option<PathBuf>,
    /// Policy to run under (with --connect: a name the daemon knows).
    #[arg(long)]
    policy: Option<String>,
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
    if !args.in_process {
        return run_sandboxed(&args, source, opts, limits);
    }
    if args.policy.is_some() {
        return usage_error("--policy applies to sandboxed runs; drop --in-process");
    }
    opts.limits = limits;
    opts.signature = args.signature.clone();
    opts.context_signature = args.context_signature.clone();
    opts.validation = args.validation.parse().unwrap_or_default();
    let tools = match cli_tools(&args) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(limits.timeout_ms);
    opts.tools = tools
        .into_iter()
        .map(|(name, t)| in_process_tool(name, t, deadline))
        .collect();
    let step = match run_in_process(&source, opts) {
        Ok(s) | Err(s) => s,
    };
    report(&step, args.format)
}

/// The default: one sandboxed runner through an engine embedded in this process (no daemon).
/// `--policy` names a policy in the policies directory or gives a policy file; `--timeout` and
/// `--max-steps` tighten its limits.
fn run_sandboxed(args: &RunArgs, source: String, opts: RunOptions, flags: Limits) -> ExitCode {
    let (mut policies, chosen) = match super::sandbox::policies_for(args.policy.as_deref()) {
        Ok(p) => p,
        Err(e) => return usage_error(&e),
    };
    // One run: no warm pools to fill.
    for p in policies.values_mut() {
        p.warm = 0;
    }
    let Some(policy_limits) = policies.get(&chosen).map(|p| p.limits) else {
        return usage_error(&format!("no policy named `{chosen}`"));
    };
    let mut limits = policy_limits;
    if args.timeout.is_some() {
        limits.timeout_ms = limits.timeout_ms.min(flags.timeout_ms);
    }
    if args.max_steps.is_some() {
        limits.max_steps = limits.max_steps.min(flags.max_steps);
    }
    let run = match build_run(args, source, opts) {
        Ok(r) => r.policy(chosen.clone()).limits(limits),
        Err(e) => return usage_error(&e),
    };
    let config = ptc_supervisor::engine::EngineConfig {
        default_policy: chosen,
        ..ptc_supervisor::engine::EngineConfig::new(
            ptc_supervisor::daemon::config::default_runner(),
            policies,
        )
    };
    match super::sandbox::run_embedded(config, run) {
        Ok(step) => report(&step, args.format),
        Err(message) => {
            eprintln!("error: usage: {message}");
            ExitCode::from(2)
        }
    }
}

/// The client-library request for this command line (tools hosted by the CLI).
fn build_run(
    args: &RunArgs,
    source: String,
    opts: RunOptions,
) -> Result<ptc_supervisor::client::Run, String> {
    let tools = cli_tools(args)?;
    let validation = args
        .validation
        .parse()
        .map_err(|_| format!("unknown validation mode `{}`", args.validation))?;
    // The engine enforces the real deadline; this only bounds a hung tool command here.
    let budget = std::time::Duration::from_millis(args.timeout.unwrap_or(60_000));
    let mut run = ptc_supervisor::client::Run::new(source)
        .context(opts.context)
        .memory(opts.memory)
        .validation(validation);
    for (name, tool) in tools {
        run = run.tool(super::connect::client_tool(name, tool, budget));
    }
    if let Some(sig) = &args.signature {
        run = run.signature(sig.clone());
    }
    if let Some(prev) = &args.context_signature {
        run = run.context_signature(prev);
    }
    Ok(run)
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
    let tools = match cli_tools(args) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let validation = match args.validation.parse() {
        Ok(v) => v,
        Err(_) => return usage_error(&format!("unknown validation mode `{}`", args.validation)),
    };
    // The daemon enforces the real deadline; this only bounds a hung tool command here.
    let budget = std::time::Duration::from_millis(args.timeout.unwrap_or(60_000));
    let mut run = ptc_supervisor::client::Run::new(source)
        .context(opts.context)
        .memory(opts.memory);
    for (name, tool) in tools {
        run = run.tool(super::connect::client_tool(name, tool, budget));
    }
    if let Some(sig) = &args.signature {
        run = run.signature(sig.clone());
    }
    run = run.validation(validation);
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

/// The tools given with `--tool` and `--tools`.
fn cli_tools(args: &RunArgs) -> Result<Vec<(String, CliTool)>, String> {
    let mut tools = match &args.tools_file {
        Some(p) => read_tools_file(p)?,
        None => Vec::new(),
    };
    for t in &args.tool {
        tools.push(parse_tool_flag(t)?);
    }
    Ok(tools)
}

/// A CLI tool as an in-process tool: a deadline kill ends the run (not catchable by `try`).
fn in_process_tool(name: String, tool: CliTool, deadline: std::time::Instant) -> ptc_runner::Tool {
    let tool_name = name.clone();
    ptc_runner::Tool::with_failure(name, move |args| {
        match tool.call(&tool_name, &args, deadline) {
            Ok(v) => Ok(v),
            Err(CliToolError::Error(e)) => Err(ptc_runner::ToolFailure::Error(e)),
            Err(CliToolError::Terminal(f)) => Err(ptc_runner::ToolFailure::Terminal(f)),
        }
    })
}

/// Prints the Step in the chosen format; the exit code says success or failure.
pub(super) fn report(step: &Step, format: Format) -> ExitCode {
    if let Format::Json = format {
        println!("{}", step.to_json());
    }
    for w in &step.warnings {
        eprintln!("warning: {w}");
    }
    match (&step.fail, &step.return_value) {
        (Some(f), _) => {
            eprintln!("error: {}: {}", f.reason_name(), f.message);
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
