//! The outcome of one execution: `Step`.
//!
//! A Step is what a client gets back whatever happened: the return value or the failure, the
//! memory after the run, what the run printed, the tool calls it made and what it used. Fail
//! reasons are one closed `Copy` enum: every internal error of every layer maps to exactly one of
//! them, and they are what crosses the wire (snake_case).

use crate::value::Value;
use serde::{Deserialize, Serialize};

/// Declares [`FailReason`] from one list, `Variant = "wire_name"`: the enum, its serde names,
/// [`FailReason::ALL`] and [`FailReason::as_str`] cannot disagree, and a new reason is one line.
macro_rules! fail_reasons {
    ($($(#[$doc:meta])* $variant:ident = $wire:literal,)*) => {
        /// Why an execution failed. Closed: clients may match on it exhaustively.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum FailReason {
            $($(#[$doc])* #[serde(rename = $wire)] $variant,)*
        }

        impl FailReason {
            /// Every reason, in declaration order (`ALL[r as usize] == r`; a test checks it):
            /// counters per reason index an array by it, and surfaces map each one (an
            /// exception class per reason in the Python package).
            pub const ALL: [FailReason; [$($wire),*].len()] = [$(FailReason::$variant),*];

            /// The wire name, e.g. `"parse_error"`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(FailReason::$variant => $wire,)*
                }
            }
        }
    };
}

fail_reasons! {
    ParseError = "parse_error",
    AnalysisError = "analysis_error",
    EvalError = "eval_error",
    Timeout = "timeout",
    MemoryExceeded = "memory_exceeded",
    ValidationError = "validation_error",
    ToolError = "tool_error",
    ToolNotFound = "tool_not_found",
    /// The program called `fail`.
    Failed = "failed",
    LimitExceeded = "limit_exceeded",
    /// The runner process tried a forbidden operation and was killed by seccomp.
    SandboxViolation = "sandbox_violation",
    /// The runner died for another reason or broke the protocol.
    RunnerCrashed = "runner_crashed",
    /// The supervisor is at capacity and did not queue the request.
    Busy = "busy",
    /// The request was cancelled by the client.
    Cancelled = "cancelled",
    /// The client is not allowed to do this (peer credentials, policy).
    PermissionDenied = "permission_denied",
    /// The request itself was malformed (bad policy name, limits looser than the policy, ...).
    InvalidRequest = "invalid_request",
    // The SubAgent loop's reasons (see `crate::trace` for the mission's Step):
    /// The agent used its `max_turns` without a valid `(return v)`.
    MaxTurnsExceeded = "max_turns_exceeded",
    /// The whole agent tree used its shared `turn_budget`.
    TurnBudgetExhausted = "turn_budget_exhausted",
    /// A nested agent would run deeper than `max_depth`.
    MaxDepthExceeded = "max_depth_exceeded",
    /// The mission ran past its `mission_timeout`.
    MissionTimeout = "mission_timeout",
    /// The mission's token budget is spent.
    TokenBudgetExhausted = "token_budget_exhausted",
    /// The LLM failed: a non-retryable error, or retryable ones until the attempts ran out.
    LlmError = "llm_error",
    /// The prompt names a `{{placeholder}}` the context does not have.
    TemplateError = "template_error",
    /// The context given to the mission is a failed Step.
    ChainedFailure = "chained_failure",
    /// A tool or nested agent is named `return` or `fail`.
    ReservedToolName = "reserved_tool_name",
    /// An agent names a model the client does not know.
    ModelNotFound = "model_not_found",
}

impl FailReason {
    /// Reasons only the SubAgent loop reports (a runner claiming one is not believed).
    pub fn is_agent(self) -> bool {
        use FailReason::*;
        matches!(
            self,
            MaxTurnsExceeded
                | TurnBudgetExhausted
                | MaxDepthExceeded
                | MissionTimeout
                | TokenBudgetExhausted
                | LlmError
                | TemplateError
                | ChainedFailure
                | ReservedToolName
                | ModelNotFound
        )
    }
}

impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed execution: the reason, a one-line message an LLM can act on, and details.
///
/// Program-chosen reasons: `(fail {:reason :not_found ...})` keeps the typed reason `failed`
/// (so [`FailReason`] stays a closed set a program cannot extend) and records the program's word
/// in `program_reason`. [`Fail::reason_name`] is what surfaces show (`not_found`); a name that
/// is not a plain identifier, or that spells a system reason (`timeout`), is never shown, so a
/// program cannot forge a system failure. JSON tells them apart by `"kind": "program"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fail {
    pub reason: FailReason,
    pub message: String,
    /// The builtin or special form that failed, when known.
    pub op: Option<String>,
    /// Structured details, e.g. `{:kind "type_error"}` or `{:limit "max_steps"}`; a map or nil.
    pub details: Value,
    /// The reason a program gave to `fail` (only meaningful with reason `failed`).
    pub program_reason: Option<String>,
}

impl Fail {
    /// A failure with no `op` and no details.
    pub fn new(reason: FailReason, message: impl Into<String>) -> Fail {
        Fail {
            reason,
            message: message.into(),
            op: None,
            details: Value::Nil,
            program_reason: None,
        }
    }

    /// A program's `(fail ...)`: reason `failed`, keeping the program's own reason name when it
    /// is a plain identifier (`[a-z0-9_-]`, at most 64 bytes) that no system reason spells.
    pub fn program(message: impl Into<String>, reason: Option<&str>) -> Fail {
        let mut f = Fail::new(FailReason::Failed, message);
        f.program_reason = reason
            .filter(|r| valid_program_reason(r))
            .map(str::to_string);
        f
    }

    /// The reason as surfaces show it: the program's own reason for a `failed` with one,
    /// else the system reason's wire name.
    pub fn reason_name(&self) -> &str {
        match (&self.reason, &self.program_reason) {
            (FailReason::Failed, Some(r)) if valid_program_reason(r) => r,
            (r, _) => r.as_str(),
        }
    }

    /// Whether [`Fail::reason_name`] is a program-chosen reason.
    pub fn is_program_reason(&self) -> bool {
        self.reason_name() != self.reason.as_str()
    }

    /// `"program"` for a program-chosen reason, else `"system"`: the `kind` in the JSON forms.
    pub fn kind_name(&self) -> &'static str {
        if self.is_program_reason() {
            "program"
        } else {
            "system"
        }
    }

    /// Adds one `details` entry (string key).
    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Fail {
        let mut m = match std::mem::take(&mut self.details) {
            Value::Map(m) => m,
            _ => Box::new(crate::value::Map::new()),
        };
        m.insert(Value::string(key), value.into());
        self.details = Value::Map(m);
        self
    }
}

fn valid_program_reason(r: &str) -> bool {
    !r.is_empty()
        && r.len() <= 64
        && r.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        // Exhaustive by construction: any name that parses as a FailReason is a system one.
        && serde_json::from_value::<FailReason>(serde_json::Value::String(r.to_string())).is_err()
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

impl ToolCallRecord {
    /// Plain JSON (values as JSON, non-finite floats as `null`), as in the Step's and the
    /// trace's JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": self.name,
            "args": json_or_null(&self.args),
            "result": self.result.as_ref().map(json_or_null),
            "error": self.error,
            "duration_us": self.duration_us,
        })
    }
}

/// A value as JSON, or `null` where JSON has no form for it (non-finite floats).
pub(crate) fn json_or_null(x: &Value) -> serde_json::Value {
    x.to_json().unwrap_or(serde_json::Value::Null)
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
    /// `input_tokens + output_tokens` when an LLM was involved.
    pub total_tokens: Option<u64>,
    /// LLM requests made (attempts, retries included); the agent tree's total.
    pub requests: u32,
    /// Agent turns taken; the agent tree's total (0 for a single run).
    pub turns: u32,
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
    /// The program ended through `(return v)` (the SubAgent loop ends its mission on it).
    pub returned: bool,
    /// A mission's turns, flat, in the order they ended (see [`crate::trace`]); empty for a run.
    pub trace: Vec<crate::trace::TraceEntry>,
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
            _ => Value::Map(Box::new(crate::value::Map::new())),
        };
        Step {
            fail: Some(fail),
            memory,
            memory_delta: Value::Map(Box::new(crate::value::Map::new())),
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
        let v = json_or_null;
        let fail = self.fail.as_ref().map(|f| {
            json!({"reason": f.reason_name(), "kind": f.kind_name(), "message": f.message, "op": f.op, "details": v(&f.details)})
        });
        json!({
            "return": self.return_value.as_ref().map(v),
            "fail": fail,
            "memory": v(&self.memory),
            "memory_delta": v(&self.memory_delta),
            "history": self.history.iter().map(v).collect::<Vec<_>>(),
            "signature": self.signature,
            "prints": self.prints,
            "warnings": self.warnings,
            "tool_calls": self.tool_calls.iter().map(ToolCallRecord::to_json).collect::<Vec<_>>(),
            "usage": serde_json::to_value(&self.usage).unwrap_or(serde_json::Value::Null),
            "trace": self.trace.iter().map(crate::trace::TraceEntry::to_json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod program_reason_tests {
    use super::*;

    #[test]
    fn all_reasons_are_listed_in_order() {
        for (i, r) in FailReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r}");
        }
        // No variant after the last listed one: a `Refused` frame (tag 1) whose reason is
        // the index one past ALL does not decode.
        use crate::client_protocol::ServerToClient;
        use crate::codec::{HEADER_LEN, decode_body, encode_frame};
        let n = u32::try_from(FailReason::ALL.len()).unwrap_or(u32::MAX);
        for (reason, decodes) in [(n - 1, true), (n, false)] {
            let frame = encode_frame(&(1u32, reason, "m"), 1024).ok();
            let body = frame.as_deref().map_or(&[][..], |f| &f[HEADER_LEN..]);
            let back = decode_body::<ServerToClient>(body, 1024);
            assert_eq!(back.is_ok(), decodes, "reason index {reason}: {back:?}");
        }
    }

    #[test]
    fn wire_names_are_what_serde_writes_and_distinct() {
        // `as_str` and serde's names come from one list (`fail_reasons!`); this checks the
        // macro wires both to it, and that no two reasons share a name.
        let mut seen = std::collections::HashSet::new();
        for r in FailReason::ALL {
            let json = serde_json::to_string(&r).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            let back: Result<FailReason, _> = serde_json::from_str(&json);
            assert_eq!(back.ok(), Some(r));
            assert!(seen.insert(r.as_str()), "{r} twice");
        }
    }

    #[test]
    fn program_reasons_are_shown_only_when_they_cannot_pass_for_system_ones() {
        let f = Fail::program("User 123", Some("not_found"));
        assert_eq!(
            (f.reason, f.reason_name()),
            (FailReason::Failed, "not_found")
        );
        assert!(f.is_program_reason());
        let long = "x".repeat(65);
        for bad in [
            "timeout",
            "max_turns_exceeded",
            "Not Found",
            "",
            long.as_str(),
        ] {
            let f = Fail::program("m", Some(bad));
            assert_eq!(f.reason_name(), "failed", "{bad:?}");
            assert!(!f.is_program_reason());
        }
        // A program reason on another reason is never shown.
        let mut f = Fail::new(FailReason::Timeout, "m");
        f.program_reason = Some("custom".into());
        assert_eq!(f.reason_name(), "timeout");
    }
}
