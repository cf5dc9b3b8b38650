//! The one seam between the SubAgent loop and the engine: a turn's program becomes one engine
//! request and runs in a fresh sandboxed runner. Only this file knows the engine's request
//! type, so a change to it is a change here.
//!
//! Memory carries across turns exactly as across `ptc run`s: the previous Step's `memory` and
//! `history` (`*1 *2 *3`) go into the next request, and a failed turn leaves them unchanged.

use crate::engine::{Engine, RunRequest, ToolHandler};
use ptc_shared::protocol::ToolDecl;
use ptc_shared::signature::Mode;
use ptc_shared::value::EncodedValue;
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
    /// The program's wall-clock limit; `None` is the policy's.
    pub timeout_ms: Option<u64>,
    pub validation: Mode,
}

/// Runs one turn's program. No signature is sent: a turn's value is not the mission's result
/// (only `(return v)` is, and the loop checks that).
pub async fn execute(engine: &Engine, turn: Turn, tools: Arc<dyn ToolHandler>) -> Step {
    // A request may never loosen its policy. A turn timeout looser than the policy's runs under
    // the policy's, and the turn's Step says so, rather than failing every turn of a mission.
    let policy_timeout = engine
        .policy_limits(turn.policy.as_deref())
        .map(|l| l.timeout_ms);
    let (timeout_ms, warning) = match (turn.timeout_ms, policy_timeout) {
        (Some(asked), Some(policy)) if asked > policy => (
            Some(policy),
            Some(format!(
                "turn timeout of {asked} ms is looser than the policy's {policy} ms: the turn ran \
                 under {policy} ms (choose a policy that allows more)"
            )),
        ),
        (asked, _) => (asked, None),
    };
    let req = RunRequest {
        program: turn.program,
        context: EncodedValue::encode(&turn.context),
        memory: turn.memory,
        history: turn.history,
        tools: turn.tools,
        policy: turn.policy,
        timeout_ms,
        validation: turn.validation,
        ..RunRequest::default()
    };
    let mut step = engine.execute(req, tools).await;
    step.warnings.extend(warning);
    step
}
