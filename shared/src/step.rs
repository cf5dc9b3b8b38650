//! The outcome of one execution: `Step`.
//!
//! A Step is what a client gets back whatever happened: the return value or the failure, the
//! memory after the run, what the run printed, the tool calls it made and what it used. Fail
//! reasons are one closed `Copy` enum: every internal error of every layer maps to exactly one of
//! them, and they are what crosses the wire (snake_case).

use crate::value::Value;
use serde::{Deserialize, Serialize};

/// Why an execution failed. Closed: clients may match on it exhaustively.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailReason {
    ParseError,
    AnalysisError,
    EvalError,
    Timeout,
    MemoryExceeded,
    ValidationError,
    ToolError,
    ToolNotFound,
    /// The program called `fail`.
    Failed,
    LimitExceeded,
    /// The runner process tried a forbidden operation and was killed by seccomp.
    SandboxViolation,
    /// The runner died for another reason or broke the protocol.
    RunnerCrashed,
    /// The supervisor is at capacity and did not queue the request.
    Busy,
    /// The request was cancelled by the client.
    Cancelled,
    /// The client is not allowed to do this (peer credentials, policy).
    PermissionDenied,
    /// The request itself was malformed (bad policy name, limits looser than the policy, ...).
    InvalidRequest,
}

impl FailReason {
    /// The wire name, e.g. `"parse_error"`.
    pub fn as_str(self) -> &'static str {
        use FailReason::*;
        match self {
            ParseError => "parse_error",
            AnalysisError => "analysis_error",
            EvalError => "eval_error",
            Timeout => "timeout",
            MemoryExceeded => "memory_exceeded",
            ValidationError => "validation_error",
            ToolError => "tool_error",
            ToolNotFound => "tool_not_found",
            Failed => "failed",
            LimitExceeded => "limit_exceeded",
            SandboxViolation => "sandbox_violation",
            RunnerCrashed => "runner_crashed",
            Busy => "busy",
            Cancelled => "cancelled",
            PermissionDenied => "permission_denied",
            InvalidRequest => "invalid_request",
        }
    }
}

impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed execution: the reason, a one-line message an LLM can act on, and details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fail {
    pub reason: FailReason,
    pub message: String,
    /// The builtin or special form that failed, when known.
    pub op: Option<String>,
    /// Structured details, e.g. `{:kind "type_error"}` or `{:limit "max_steps"}`; a map or nil.
    pub details: Value,
}

impl Fail {
    /// A failure with no `op` and no details.
    pub fn new(reason: FailReason, message: impl Into<String>) -> Fail {
        Fail {
            reason,
            message: message.into(),
            op: None,
            details: Value::Nil,
        }
    }

    /// Adds one `details` entry (string key).
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Fail {
        let mut m = match std::mem::take(&mut self.details) {
            Value::Map(m) => m,
            _ => crate::value::Map::new(),
        };
        m.insert(Value::string(key), value.into());
        self.details = Value::Map(m);
        self
    }
}

/// One tool call made by a program, for the Step's trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub name: String,
    pub args: Value,
    /// The tool's result, or `None` when it failed.
    pub result: Option<Value>,
    pub error: Option<String>,
    pub duration_us: u64,
}

/// What an execution used.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub duration_ms: u64,
    /// CPU time of the runner process (0 in-process).
    pub cpu_ms: u64,
    /// Peak heap bytes.
    pub memory_bytes: u64,
    pub eval_steps: u64,
    pub tool_calls: u32,
    /// Filled by the SubAgent loop when an LLM produced the program.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// The outcome of one execution. Exactly one of `return_value` / `fail` is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    #[serde(rename = "return")]
    pub return_value: Option<Value>,
    pub fail: Option<Fail>,
    /// User namespace after the run (the input memory, unchanged, on failure: see [`Step::failed`]).
    pub memory: Value,
    /// Names this run added or changed, with their new values.
    pub memory_delta: Value,
    /// The last three successful results (`*1 *2 *3`), newest first.
    pub history: Vec<Value>,
    /// Signature text the run was checked against, if any.
    pub signature: Option<String>,
    pub prints: Vec<String>,
    /// Things the caller should know that did not fail the run (e.g. a `defn` that memory
    /// cannot persist because functions are not data).
    pub warnings: Vec<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: Usage,
}

impl Step {
    /// The one constructor of a failed Step, used by every layer (interpreter, engine, daemon,
    /// client). The rule is transactional: a failed run changes nothing, so `memory` is the
    /// input memory unchanged (as a map: `nil` or a non-map means empty, exactly as a successful
    /// run reads it), `memory_delta` is the empty map and `history` is the input history.
    /// `usage`, `prints` and `tool_calls` start empty; a layer that observed them fills them in
    /// (what ran still ran: its prints, tool calls and cost are reported).
    pub fn failed(fail: Fail, memory: Value, history: Vec<Value>) -> Step {
        let memory = match memory {
            Value::Map(m) => Value::Map(m),
            _ => Value::Map(crate::value::Map::new()),
        };
        Step {
            fail: Some(fail),
            memory,
            memory_delta: Value::Map(crate::value::Map::new()),
            history,
            ..Step::default()
        }
    }

    /// `Ok(self)` for success, `Err(self)` for failure.
    pub fn into_result(self) -> Result<Step, Step> {
        if self.fail.is_some() {
            Err(self)
        } else {
            Ok(self)
        }
    }

    /// The failure reason, if the Step failed.
    pub fn reason(&self) -> Option<FailReason> {
        self.fail.as_ref().map(|f| f.reason)
    }
}

impl Step {
    /// The Step as plain JSON (values as JSON, keywords as strings), for `--format json` and
    /// for clients that speak JSON. Non-finite floats become `null` here, since JSON has none.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let v = |x: &Value| x.to_json().unwrap_or(serde_json::Value::Null);
        let fail = self.fail.as_ref().map(|f| {
            json!({"reason": f.reason.as_str(), "message": f.message, "op": f.op, "details": v(&f.details)})
        });
        let calls: Vec<_> = self
            .tool_calls
            .iter()
            .map(|c| json!({"name": c.name, "args": v(&c.args), "result": c.result.as_ref().map(v), "error": c.error, "duration_us": c.duration_us}))
            .collect();
        json!({
            "return": self.return_value.as_ref().map(v),
            "fail": fail,
            "memory": v(&self.memory),
            "memory_delta": v(&self.memory_delta),
            "history": self.history.iter().map(v).collect::<Vec<_>>(),
            "signature": self.signature,
            "prints": self.prints,
            "warnings": self.warnings,
            "tool_calls": calls,
            "usage": serde_json::to_value(&self.usage).unwrap_or(serde_json::Value::Null),
        })
    }
}
