//! The one seam between the SubAgent loop and the engine: a turn's program becomes one engine
//! request and runs in a fresh sandboxed runner. Only this file knows the engine's request
//! type, so a change to it is a change here.
//!
//! Memory carries across turns exactly as across `ptc run`s: the previous Step's `memory` and
//! `history` (`*1 *2 *3`) go into the next request, and a failed turn leaves them unchanged.

use crate::engine::{Engine, RunRequest, ToolHandler};
use ptc_shared::protocol::ToolDecl;
use ptc_shared::signature::Mode;
use ptc_shared::{Step, Value};
use std::sync::Arc;

/// What one turn runs.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub program: String,
    pub context: Value,
    pub memory: Value,
    pub history: Vec<Value>,
    /// Tools and nested agents the program may call.
    pub tools: Vec<ToolDecl>,
    pub policy: Option<String>,
    /// The program's wall-clock limit (tightens the policy's).
    pub timeout_ms: u64,
    pub validation: Mode,
}

/// Runs one turn's program. No signature is sent: a turn's value is not the mission's result
/// (only `(return v)` is, and the loop checks that).
pub async fn execute(engine: &Engine, turn: Turn, tools: Arc<dyn ToolHandler>) -> Step {
    // The turn's timeout tightens the policy's (a request may never loosen its policy).
    let policy_timeout = engine
        .policy_limits(turn.policy.as_deref())
        .map(|l| l.timeout_ms);
    let timeout_ms = policy_timeout.map_or(turn.timeout_ms, |p| p.min(turn.timeout_ms));
    let req = RunRequest {
        program: turn.program,
        context: turn.context,
        memory: turn.memory,
        history: turn.history,
        tools: turn.tools,
        policy: turn.policy,
        timeout_ms: Some(timeout_ms),
        validation: turn.validation,
        ..RunRequest::default()
    };
    engine.execute(req, tools).await
}
