//! `ptc run`: one execution from the command line. The flags build one client-library [`Run`]
//! and choose one client; the engine (or, in-process, the interpreter) decides the limits, so a
//! flag means the same with and without `--connect`.

use super::input::{read_context_file, read_data_file};
use super::tools::{CliTool, parse_tool_flag, read_tools_file};
use clap::{Args, ValueEnum};
use ptc_shared::Step;
use ptc_supervisor::client::{Client, ClientError, Embedded, Run};
use ptc_supervisor::engine::{EngineConfig, SpawnMode};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    /// Wall-clock timeout in milliseconds (at most the policy's: a looser one is refused).
    #[arg(long)]
    timeout: Option<u64>,
    /// Evaluation step budget (at most the policy's: a looser one is refused).
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
    /// Policy to run under: a name, or (sandboxed) a policy file (with --connect: a name the
    /// daemon knows).
    #[arg(long)]
    policy: Option<String>,
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: usage: {msg}");
    ExitCode::from(2)
}

/// Runs the program and reports the Step: one request built from the flags, one client built
/// from the flags (daemon, embedded sandbox or in-process), one run path for all three.
pub fn run(args: RunArgs) -> ExitCode {
    let (target, policy) = match Target::from_args(&args) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let run = match build_run(&args, policy) {
        Ok(r) => r,
        Err(e) => return usage_error(&e),
    };
    match target.run(run) {
        Ok(step) => report(&step, args.format),
        Err((reason, message)) => {
            eprintln!("error: {reason}: {message}");
            ExitCode::from(2)
        }
    }
}

/// Where a run goes.
enum Target {
    /// A daemon on this socket (`--connect`).
    Connect(PathBuf),
    /// The default: one sandboxed runner from an engine embedded in this process.
    Sandboxed(Box<EngineConfig>),
    /// `--in-process`: this process's interpreter, no sandbox.
    InProcess,
}

impl Target {
    /// The target and the policy name the request names (`--policy` is a name the daemon or
    /// the policies directory knows, or, sandboxed, a policy file added under its own name).
    fn from_args(args: &RunArgs) -> Result<(Target, Option<String>), String> {
        if let Some(socket) = &args.connect {
            return Ok((Target::Connect(socket.clone()), args.policy.clone()));
        }
        if args.in_process {
            if args.policy.is_some() {
                return Err("--policy applies to sandboxed runs; drop --in-process".into());
            }
            return Ok((Target::InProcess, None));
        }
        let (mut policies, chosen) = super::sandbox::policies_for(args.policy.as_deref())?;
        // One run starts what it needs and nothing more: only the policy it runs under (so only
        // that policy's namespaces are probed), no warm pool, no zygote (one exec of the runner
        // costs less than an exec of the zygote plus a fork), one spawner thread.
        let used = chosen.clone().unwrap_or_else(|| "default".to_string());
        if policies.contains_key(&used) {
            policies.retain(|name, _| *name == used);
        }
        for p in policies.values_mut() {
            p.warm = 0;
        }
        let mut config = EngineConfig::new(ptc_supervisor::installed::default_runner(), policies);
        config.default_policy = used;
        config.pool.max = 0;
        config.spawn = SpawnMode::Cold;
        config.zygotes = 1;
        Ok((Target::Sandboxed(Box::new(config)), chosen))
    }

    /// Runs `run` through this target's client. `Err((reason, message))` means nothing ran
    /// (exit 2): a daemon refused the connection (its reason) or none could be used (`usage`).
    fn run(self, run: Run) -> Result<Step, (String, String)> {
        let usage = |m: String| ("usage".to_string(), m);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| usage(format!("cannot start the runtime: {e}")))?;
        rt.block_on(async {
            let client = match self {
                Target::Connect(socket) => Client::connect(&socket).await.map_err(|e| match e {
                    ClientError::Refused { reason, message } => (reason.to_string(), message),
                    e => usage(format!(
                        "cannot use the daemon at {}: {e}",
                        socket.display()
                    )),
                })?,
                Target::Sandboxed(config) => Client::embedded_with(*config)
                    .map_err(|e| usage(format!("cannot start the sandbox: {e}")))?,
                Target::InProcess => Client::in_process(),
            };
            Ok(match client.run(run).await {
                Ok(s) | Err(s) => s,
            })
        })
    }
}

/// The client-library request for this command line: every flag that shapes the run, in
/// every mode (tools hosted by the CLI).
fn build_run(args: &RunArgs, policy: Option<String>) -> Result<Run, String> {
    let source = match (&args.expr, &args.file) {
        (Some(e), _) => e.clone(),
        (None, Some(f)) => {
            std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?
        }
        (None, None) => return Err("give a program FILE or -e 'PROGRAM'".into()),
    };
    let validation = args
        .validation
        .parse()
        .map_err(|_| format!("unknown validation mode `{}`", args.validation))?;
    let mut run = Run::new(source).validation(validation);
    if let Some(p) = &args.context {
        run = run.context(read_context_file(p)?);
    }
    if let Some(p) = &args.memory {
        run = run.memory(read_data_file(p)?);
    }
    // The engine (or the interpreter) enforces the real deadline; this bounds a hung command.
    let budget = Duration::from_millis(args.timeout.unwrap_or(60_000));
    for (name, tool) in cli_tools(args)? {
        run = run.tool(super::connect::client_tool(name, tool, budget));
    }
    if let Some(sig) = &args.signature {
        run = run.signature(sig.clone());
    }
    if let Some(prev) = &args.context_signature {
        run = run.context_signature(prev.clone());
    }
    if let Some(p) = policy {
        run = run.policy(p);
    }
    if let Some(t) = args.timeout {
        run = run.timeout(Duration::from_millis(t));
    }
    if let Some(s) = args.max_steps {
        run = run.max_steps(s);
    }
    Ok(run)
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
