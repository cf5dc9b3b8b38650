//! ptc-supervisor: the library behind the `ptc` CLI and the daemon.
//!
//! - [`agent`]: the SubAgent loop: missions solved by an LLM writing programs, turn by turn.
//! - [`policy`]: named policies (limits, isolation, pool size) loaded and validated from TOML.
//! - [`check`]: what isolation this host offers (`ptc check`) and what a policy gets of it.
//! - [`engine`]: runs programs in fresh, single-use, hardened `ptc-runner` processes.
//! - [`daemon`]: the `ptc-supervisor` daemon serving many clients over a local socket.
//! - [`mcp`]: `ptc mcp`, the `lisp_eval` MCP server (rmcp; stdio, or Streamable HTTP) over the client library.
//! - [`client`]: the client library (from `ptc_shared::client`) plus its embedded mode.
//! - [`installed`]: where the runner binary and the policies are by default.
//!
//! Layers point one way: `cli -> client -> engine`, `daemon -> engine`, `mcp -> client`; `client` and `daemon`
//! never import each other (both read [`installed`]).
//!
//! Invariant: no code here panics on program input or wire data; every failure is a `Step`.
#![forbid(unsafe_code)]

pub mod agent;
pub mod check;
pub mod client;
pub mod daemon;
pub mod engine;
pub mod installed;
pub mod mcp;
pub mod policy;
