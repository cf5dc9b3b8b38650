//! ptc-runner: the PTC-Lisp interpreter, as a library, and (in `main.rs`) the hardened
//! single-use runner process.
//!
//! Pipeline: [`reader`] (text → forms) → [`analyze`] (forms → resolved expressions, all checks
//! before anything runs) → [`eval`] (expressions → values) with [`builtins`] tables per
//! namespace. [`api::run`] is the in-process entry point; [`session`] builds the Step.
#![forbid(unsafe_code)]

pub mod analyze;
pub mod api;
pub mod builtins;
pub mod convert;
pub mod edn;
pub mod error;
pub mod eval;
pub mod print;
pub mod pvec;
pub mod reader;
pub mod session;
#[cfg(test)]
mod test_rng;
pub mod value;

pub use api::{RunOptions, Tool, ToolFailure, ToolHost, run, run_with_host};
pub use ptc_shared::{Limits, Step};
