//! `ptc`: run PTC-Lisp programs (in a sandboxed runner, or in-process), serve the daemon, check
//! the host. The command-line contract (exit codes, `error: <reason>: <message>` on stderr,
//! `--format json` Step on stdout) is what scripts rely on: see `ptc --help`.
#![forbid(unsafe_code)]
// Printing results to stdout is this binary's job (the lint guards the libraries).
#![allow(clippy::print_stdout)]

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
