//! The SubAgent loop: a mission solved by an LLM writing PTC-Lisp, turn by turn.
//!
//! Each turn the LLM answers with one ```clojure program ([`extract`]); the program runs in a
//! fresh sandboxed runner through the engine ([`exec`], the only file that knows the engine's
//! request); what it did is fed back ([`prompt`]) until a program calls `(return v)` with a
//! value matching the signature, or `(fail v)`. The result is one [`Step`], like a single run's,
//! with `usage` (tokens, requests, turns) and a flat `trace` (see [`ptc_shared::trace`]).
//!
//! Design:
//! - The client owns the LLM ([`Llm`]); the loop never opens a connection.
//! - Memory carries across turns as across `ptc run`s (memory, `*1 *2 *3`); after a failed turn
//!   the next program reads the failure as `ctx/fail`.
//! - Budgets end a mission with typed reasons from the closed [`FailReason`] set:
//!   `max_turns_exceeded` (per agent), `turn_budget_exhausted` (across the agent tree),
//!   `max_depth_exceeded`, `mission_timeout`, `token_budget_exhausted`, `llm_error` (after
//!   retries, which spend no turn). A program's own `(fail {:reason :x})` keeps reason `failed`
//!   with `x` as its program reason (`Fail::reason_name`), so it can never pose as one of these.
//! - A nested agent is a tool of its parent: it runs its own loop with its own `max_turns`, its
//!   LLM by model name or inherited, and its turns enter the trace under the parent's turn.
//!   Tree-wide budgets it hits end the whole mission; its other failures are a `tool_error` the
//!   parent's program sees. It runs inside the parent turn's program deadline, so a parent that
//!   calls agents needs a `turn_timeout_ms` long enough for them.
//! - Dropping the mission future ends it and kills its runner (the engine's invariant).
//! - The mission's Step: `return`/`fail`, the last memory and history, the returning turn's
//!   prints, tool calls and memory delta (every turn's are in the trace), `usage` totals of the
//!   whole tree (tokens, LLM requests with retries, turns, wall time) and the tree's trace.

mod exec;
pub mod extract;
pub mod llm;
pub mod prompt;
mod run;
mod tools;

pub use llm::{
    Llm, LlmError, LlmMessage, LlmNames, LlmRequest, LlmResponse, LlmSet, LlmSource, Retry, Role,
    TokenCounts,
};
pub use ptc_shared::mission::{AgentSpec, MissionInput, MissionOptions, MissionRequest};

use crate::engine::{Engine, ToolHandler};
use ptc_shared::{FailReason, Step};
use std::sync::Arc;

/// Names a tool or agent may not have: the program's own `return` and `fail`.
pub const RESERVED_TOOL_NAMES: [&str; 2] = ["return", "fail"];

/// Runs a mission to its Step. `tools` answers the calls of every agent's callable tools;
/// `llms` answers the model names in `request.models` (the client's, or a mirror of them that
/// sends each request back to the client). Library users reach this through
/// `Client::delegate`; the daemon and the embedded backend call it directly.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use ptc_supervisor::agent::{run_mission, AgentSpec, Llm, LlmResponse, LlmSet, MissionRequest};
/// use ptc_supervisor::engine::{Engine, EngineConfig, NoTools};
/// use std::sync::Arc;
/// let policies = ptc_supervisor::policy::load_dir("policies".as_ref())?;
/// let engine = Arc::new(Engine::new(EngineConfig::new("target/release/ptc-runner", policies))?);
/// let llm = Llm::new(|_req| async { Ok(LlmResponse::text("```clojure\n(return 42)\n```")) });
/// let llms = LlmSet::new(llm);
/// let request = MissionRequest {
///     agent: AgentSpec::new("Answer.").signature(":int"),
///     input: Default::default(),
///     options: Default::default(),
///     models: llms.names(),
/// };
/// let step = run_mission(engine, llms, Arc::new(NoTools), request).await;
/// assert_eq!(step.return_value, Some(ptc_shared::Value::Int(42)));
/// # Ok(()) }
/// ```
pub async fn run_mission(
    engine: Arc<Engine>,
    llms: LlmSet,
    tools: Arc<dyn ToolHandler>,
    request: MissionRequest,
) -> Step {
    run::mission(engine, llms, tools, request).await
}

/// Whether a failure of a nested agent ends the whole mission (tree-wide budgets) rather than
/// being a `tool_error` its parent's program sees.
fn ends_tree(reason: FailReason) -> bool {
    matches!(
        reason,
        FailReason::TurnBudgetExhausted
            | FailReason::MissionTimeout
            | FailReason::TokenBudgetExhausted
            | FailReason::MaxDepthExceeded
    )
}
