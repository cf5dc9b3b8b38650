//! A mission's trace: one [`TraceEntry`] per agent turn, kept flat.
//!
//! A tree, drawn by ids: every agent run (the root mission, and each call of a nested agent)
//! gets a `run` id, every turn an `id`, both from one counter per mission, so ids are unique in
//! the tree and increase in the order things started. A nested agent's turns name the parent
//! turn that called it in `parent`. Flat on purpose: the trace crosses bincode frames and JSONL
//! files, and a flat list has no depth a peer could grow (no recursion when decoding it).
//!
//! Entries are appended when a turn ends, so a child's turns come before the parent turn that
//! called them; sort by `id` to read them in the order they started.

use crate::step::{Fail, ToolCallRecord, json_or_null};
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// What one turn used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// LLM requests this turn made (retries included).
    pub requests: u32,
    /// Time waiting for the LLM.
    pub llm_ms: u64,
    /// Time running the program (0 when there was none).
    pub exec_ms: u64,
}

/// One turn of one agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// Unique in the mission's tree.
    pub id: u64,
    /// The agent run this turn belongs to.
    pub run: u64,
    /// The parent's turn that called this agent (`None` for the root agent's turns).
    pub parent: Option<u64>,
    /// The agent's path, e.g. `main/researcher`.
    pub agent: String,
    /// 0 for the root agent.
    pub depth: u32,
    /// 1-based within the agent run.
    pub turn: u32,
    pub model: Option<String>,
    /// The LLM's whole answer (empty when the LLM failed).
    pub llm_text: String,
    /// The extracted program (`None` when the answer had no usable code block).
    pub program: Option<String>,
    /// The program's value (also for turns that did not return).
    pub result: Option<Value>,
    /// Why the turn did not succeed: the program's failure, a signature mismatch, a missing
    /// code block, or the mission-ending reason.
    pub fail: Option<Fail>,
    /// The program ended through `(return v)` and the value matched the signature.
    pub returned: bool,
    pub prints: Vec<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    /// Names the program defined or changed, with their new values.
    pub memory_delta: Value,
    pub usage: TurnUsage,
}

impl TraceEntry {
    /// Plain JSON (values as JSON), for `--trace FILE.jsonl` and the Step's JSON.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let v = json_or_null;
        let fail = self.fail.as_ref().map(
            |f| json!({"reason": f.reason_name(), "kind": f.kind_name(), "message": f.message}),
        );
        let calls: Vec<_> = self
            .tool_calls
            .iter()
            .map(ToolCallRecord::to_json)
            .collect();
        json!({
            "id": self.id, "run": self.run, "parent": self.parent, "agent": self.agent,
            "depth": self.depth, "turn": self.turn, "model": self.model,
            "llm_text": self.llm_text, "program": self.program,
            "result": self.result.as_ref().map(v), "fail": fail, "returned": self.returned,
            "prints": self.prints, "tool_calls": calls, "memory_delta": v(&self.memory_delta),
            "usage": serde_json::to_value(&self.usage).unwrap_or(serde_json::Value::Null),
        })
    }
}
