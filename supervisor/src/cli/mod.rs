//! Command-line parsing and dispatch for `ptc`.
//!
//! Exit codes: 0 success; 1 the program failed (a Step with `fail`); 2 usage or input errors
//! (bad flags, unreadable files) before anything ran.

mod input;
mod run;
mod tools;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Run untrusted PTC-Lisp programs with OS-level isolation.
#[derive(Debug, Parser)]
#[command(name = "ptc", version, about, long_about = None, after_help = "Exit codes: 0 success, 1 the program failed (reason on stderr), 2 bad usage or input.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a program and print its result.
    ///
    /// Example: ptc run -e '(->> data/orders (map :total) (reduce +))' --context orders.json
    Run(run::RunArgs),
}

/// Parses arguments and runs the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run::run(args),
    }
}
