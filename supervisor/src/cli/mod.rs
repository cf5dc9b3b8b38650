//! Command-line parsing and dispatch for `ptc`.
//!
//! Exit codes: 0 success; 1 the program failed (a Step with `fail`); 2 usage or input errors
//! (bad flags, unreadable files, an unreachable daemon) before anything ran.

mod agent;
mod bench;
mod connect;
mod input;
mod llm_source;
mod mcp;
mod policies;
mod run;
mod sandbox;
mod serve;
mod status;
mod tools;
mod trace;
mod trace_html;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Run untrusted PTC-Lisp programs with OS-level isolation.
#[derive(Debug, Parser)]
#[command(name = "ptc", version, about, long_about = None, after_help = "Exit codes: 0 success, 1 the program failed (reason on stderr), 2 bad usage or input.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process; boxing the large variant would only add indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Run a program and print its result.
    ///
    /// Example: ptc run -e '(->> data/orders (map :total) (reduce +))' --context orders.json
    Run(run::RunArgs),
    /// Run the supervisor daemon in the foreground (what systemd starts).
    ///
    /// Example: ptc serve --socket /tmp/ptc.sock --config /etc/ptc/ptc.toml
    /// Then: ptc run --connect /tmp/ptc.sock -e '(+ 1 2)'
    /// SIGTERM drains (running executions finish within shutdown_grace_ms) and exits 0;
    /// SIGHUP reloads the config and policies (a bad reload keeps the old ones).
    /// Exit codes: 0 after a clean shutdown, 2 bad config, policies or socket, 1 other failures.
    Serve(serve::ServeArgs),
    /// List and validate the policies, and whether this host can enforce each.
    ///
    /// Example: ptc policies --dir /etc/ptc/policies --format json
    /// Exit codes: 0 all enforceable, 1 some cannot be enforced here, 2 a policy file is invalid.
    Policies(policies::PoliciesArgs),
    /// Measure latency (p50, p99 in µs) and executions per second at a concurrency.
    ///
    /// Example: ptc bench -n 2000 -c 8 -e '(+ 1 2)'            (embedded engine)
    ///          ptc bench --connect /run/ptc/ptc.sock -n 10000 -c 64
    /// Exit codes: 0 all runs succeeded, 1 some failed, 2 bad usage or unreachable daemon.
    Bench(bench::BenchArgs),
    /// Report which isolation mechanisms this kernel and these privileges allow (seccomp,
    /// landlock ABI, user namespaces, cgroup v2 delegation, rlimits).
    ///
    /// Example: ptc check --format json
    /// Exit codes: 0 seccomp is available (the runner can be sandboxed), 1 it is not.
    Check(CheckArgs),
    /// Serve the `lisp_eval` tool to an MCP client over stdio (JSON-RPC, one line per message),
    /// or with --http over MCP's Streamable HTTP transport.
    ///
    /// Example (an MCP client's config): {"command": "ptc", "args": ["mcp"]}
    ///          ptc mcp --http 127.0.0.1:8765   (then {"type": "http", "url": "http://127.0.0.1:8765/mcp"})
    /// Each call runs in a fresh sandboxed runner; stdin closing (stdio) or SIGTERM/SIGINT (HTTP)
    /// stops running calls and exits 0. With --sessions, lisp_session_* tools keep `def`s and
    /// *1 *2 *3 between calls. Over HTTP a non-loopback address needs a bearer token
    /// (--http-token-file or PTC_MCP_TOKEN), and requests from an Origin not allowed get 403.
    /// Exit codes: 0 after the client closed stdin or a signal, 2 bad flags, an unusable
    /// policy/daemon or an address that cannot be served.
    Mcp(mcp::McpArgs),
    /// Solve a mission with an LLM writing programs, turn by turn (SubAgent loop).
    ///
    /// Example: ptc agent 'How many orders are open?' --context orders.json \
    ///            --signature '{count :int}' --llm-cmd ./my-llm.sh --trace run.jsonl
    /// Exit codes: 0 the mission returned, 1 it failed (reason on stderr), 2 bad usage or input.
    Agent(agent::AgentArgs),
    /// Show a daemon's live state: version, uptime, policies, outcomes, latency p50/p99 over the
    /// last minute, runners busy/warm/limit, queue, per-uid usage (root sees every uid, others
    /// their own) and the last errors.
    ///
    /// Example: ptc status --connect /run/ptc/ptc.sock --format json
    /// Exit codes: 0 answered, 2 the daemon could not be reached.
    Status(status::StatusArgs),
    /// Render a mission trace (written by `ptc agent --trace FILE.jsonl`) as an indented tree,
    /// or with `--html OUT.html` as one self-contained page (timeline, agents, turns).
    ///
    /// Example: ptc trace run.jsonl --html run.html
    /// Exit codes: 0 rendered, 2 the trace cannot be read or parsed, or the page not written.
    Trace(trace::TraceArgs),
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    #[arg(long, value_enum, default_value = "human")]
    format: connect::Format,
}

/// `ptc check`: the host report, for humans or as JSON.
fn check(args: CheckArgs) -> ExitCode {
    let report = ptc_supervisor::check::host_report();
    match args.format {
        connect::Format::Human => print!("{report}"),
        connect::Format::Json => match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
    }
    if report.seccomp {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Parses arguments and runs the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Serve(args) => serve::serve(args),
        Command::Policies(args) => policies::policies(args),
        Command::Bench(args) => bench::bench(args),
        Command::Check(args) => check(args),
        Command::Mcp(args) => mcp::mcp(args),
        Command::Agent(args) => agent::agent(args),
        Command::Status(args) => status::status(args),
        Command::Trace(args) => trace::trace(args),
    }
}
