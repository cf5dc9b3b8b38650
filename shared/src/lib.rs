//! ptc-shared: everything that crosses a process boundary in ptc-sandbox.
//!
//! - [`value`]: the owned data model (`Value`) that programs exchange with tools, contexts and memory.
//! - [`limits`]: the `Limits` every execution runs under.
//! - [`lisp_eval`]: the `lisp_eval` wire protocol (profiles, closed reasons, payload renderers).
//! - [`step`]: the outcome of one execution (`Step`, `Fail`, `FailReason`, `Usage`, tool-call trace).
//! - [`signature`]: signatures (shorthand and Malli-lite), validation with paths, coercion, rendering;
//!   `signature::check` applies them to a run (context, result, tools) as `Fail`s.
//! - [`tool_calls`]: the one owner of a run's tool-call checks (declared, limit, signatures) and trace.
//! - [`llm`]: what the SubAgent loop asks an LLM and gets back (request, answer, typed error).
//! - [`mission`]: `MissionRequest`, the one description of a SubAgent mission (agent tree, input,
//!   budgets), from the client library through the daemon into the agent loop.
//! - [`trace`]: a mission's trace (one entry per agent turn, a tree by ids).
//! - [`codec`]: length-prefixed bincode frames (the only user of bincode), blocking and, with the
//!   `tokio` feature, async.
//! - [`protocol`]: the supervisor ↔ runner messages, protocol version and runner exit codes.
//! - [`client_protocol`]: the client ↔ supervisor (daemon) messages, and `RunRequest`: the one
//!   description of a request, from the client library through the engine into the runner.
//! - `outbox` (feature `tokio`): frames out over a shared Unix stream, written in place when the
//!   socket takes them, else queued for a writer task.
//! - `client` (feature `client`): the async and blocking client library.
//! - `seccomp` (feature `seccomp`): the runner's seccomp program compiled from JSON, as bytes.
//!
//! Design invariant: nothing in this crate trusts its input. Every decoder bounds size and depth,
//! and no function here panics on data that came from a program or a wire frame.
#![forbid(unsafe_code)]

#[cfg(feature = "client")]
pub mod client;
pub mod client_protocol;
pub mod codec;
pub mod limits;
pub mod lisp_eval;
pub mod llm;
pub mod mission;
#[cfg(feature = "tokio")]
pub mod outbox;
pub mod protocol;
#[cfg(feature = "seccomp")]
pub mod seccomp;
pub mod signature;
pub mod step;
pub mod tool_calls;
pub mod trace;
pub mod value;

pub use limits::Limits;
pub use step::{Fail, FailReason, Step, ToolCallRecord, Usage};
pub use trace::{TraceEntry, TurnUsage};
pub use value::Value;
