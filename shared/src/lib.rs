//! ptc-shared: everything that crosses a process boundary in ptc-sandbox.
//!
//! - [`value`]: the owned data model (`Value`) that programs exchange with tools, contexts and memory.
//! - [`limits`]: the `Limits` every execution runs under.
//! - [`step`]: the outcome of one execution (`Step`, `Fail`, `FailReason`, `Usage`, tool-call trace).
//! - [`signature`]: signatures (shorthand and Malli-lite), validation with paths, coercion, rendering.
//!
//! Design invariant: nothing in this crate trusts its input. Every decoder bounds size and depth,
//! and no function here panics on data that came from a program or a wire frame.
#![forbid(unsafe_code)]

pub mod limits;
pub mod signature;
pub mod step;
pub mod value;

pub use limits::Limits;
pub use step::{Fail, FailReason, Step, ToolCallRecord, Usage};
pub use value::Value;
