//! The tool calls of one run: the single owner of every check a call passes (declared, the
//! tool-call limit, argument and result signatures) and of its record in the Step's trace.
//!
//! Whoever hosts the tools drives a [`ToolCalls`]: the in-process host of `ptc_runner::run`, or
//! the engine for a sandboxed run (the runner only forwards each call over IPC and keeps no
//! count or trace of its own). So a limit or a check is written once, and an in-process run and
//! a sandboxed one fail the same way.
//!
//! Invariant: every call that reaches [`ToolCalls::begin`] ends up in exactly one record,
//! whether it is refused, answered, or cut off (deadline: [`ToolCalls::abandon`]).

use crate::protocol::ToolDecl;
use crate::signature::Mode;
use crate::signature::check::ToolSigs;
use crate::{Fail, FailReason, ToolCallRecord, Value};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// How a tool call failed, as the program's host reports it (also on the runner's wire).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToolFailure {
    /// No tool of that name: the run fails with `tool_not_found`.
    NotFound,
    /// The tool reported an error: `tool_error` with this message (catchable by `try`).
    Error(String),
    /// The host ends the run with exactly this failure (deadline, tool-call limit, result too
    /// large, validation, lost connection): `try` cannot catch it.
    Terminal(Fail),
}

impl ToolFailure {
    /// The text recorded in the trace for this failure.
    fn recorded(&self) -> String {
        match self {
            ToolFailure::NotFound => "tool_not_found".into(),
            ToolFailure::Error(m) => m.clone(),
            ToolFailure::Terminal(f) => f.message.clone(),
        }
    }
}

/// The call between [`ToolCalls::begin`] and [`ToolCalls::finish`].
#[derive(Debug)]
struct InFlight {
    name: String,
    args: Value,
    began: Instant,
}

/// Checks and records the tool calls of one run.
#[derive(Debug)]
pub struct ToolCalls {
    sigs: ToolSigs,
    max_calls: u32,
    calls: u32,
    records: Vec<ToolCallRecord>,
    in_flight: Option<InFlight>,
}

impl ToolCalls {
    /// Parses the declared tools' signatures (see [`ToolSigs::new`] for the failures).
    pub fn new(decls: &[ToolDecl], mode: Mode, max_calls: u32) -> Result<ToolCalls, Fail> {
        Ok(ToolCalls {
            sigs: ToolSigs::new(decls, mode)?,
            max_calls,
            calls: 0,
            records: Vec::new(),
            in_flight: None,
        })
    }

    /// Checks a call before its handler runs: the arguments the handler gets (coerced), or the
    /// failure, already recorded. On `Ok`, call the handler and then [`finish`](Self::finish).
    pub fn begin(&mut self, name: &str, args: Value) -> Result<Value, ToolFailure> {
        self.calls = self.calls.saturating_add(1);
        let began = Instant::now();
        let refused = if self.calls > self.max_calls {
            let msg = format!("tool call limit of {} reached", self.max_calls);
            let fail =
                Fail::new(FailReason::LimitExceeded, msg).with_detail("limit", "max_tool_calls");
            Some(ToolFailure::Terminal(fail))
        } else if !self.sigs.declared(name) {
            Some(ToolFailure::NotFound)
        } else {
            None
        };
        let checked = match refused {
            Some(f) => Err(f),
            None => self
                .sigs
                .check_args(name, args.clone())
                .map_err(ToolFailure::Terminal),
        };
        match checked {
            Ok(coerced) => {
                self.in_flight = Some(InFlight {
                    name: name.to_string(),
                    args: coerced.clone(),
                    began,
                });
                Ok(coerced)
            }
            Err(f) => {
                self.push(name.to_string(), args, Err(f.recorded()), began);
                Err(f)
            }
        }
    }

    /// Checks the handler's outcome for the call in flight and records it: the result the
    /// program gets, or the failure.
    pub fn finish(&mut self, out: Result<Value, ToolFailure>) -> Result<Value, ToolFailure> {
        let Some(call) = self.in_flight.take() else {
            let fail = Fail::new(FailReason::RunnerCrashed, "a tool result with no call");
            return Err(ToolFailure::Terminal(fail));
        };
        let result = out.and_then(|v| {
            self.sigs
                .check_result(&call.name, v)
                .map_err(ToolFailure::Terminal)
        });
        let recorded = match &result {
            Ok(v) => Ok(v.clone()),
            Err(f) => Err(f.recorded()),
        };
        self.push(call.name, call.args, recorded, call.began);
        result
    }

    /// The run was cut off while a call was in flight: it is recorded with `why`.
    pub fn abandon(&mut self, why: &str) {
        if let Some(call) = self.in_flight.take() {
            self.push(call.name, call.args, Err(why.to_string()), call.began);
        }
    }

    /// The last recorded call failed after all (e.g. its result was too large to send).
    pub fn amend_last(&mut self, error: String) {
        if let Some(r) = self.records.last_mut() {
            r.result = None;
            r.error = Some(error);
        }
    }

    /// The trace, in call order.
    pub fn into_records(mut self) -> Vec<ToolCallRecord> {
        self.abandon("the run ended while the tool ran");
        self.records
    }

    fn push(&mut self, name: String, args: Value, out: Result<Value, String>, began: Instant) {
        let duration_us = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (result, error) = match out {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(e)),
        };
        self.records.push(ToolCallRecord {
            name,
            args,
            result,
            error,
            duration_us,
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn decl(name: &str, sig: Option<&str>) -> ToolDecl {
        ToolDecl::new(name, sig)
    }

    #[test]
    fn every_call_is_checked_and_recorded_once() {
        let decls = [decl("get", Some("(n :int) -> :int")), decl("any", None)];
        let mut calls = ToolCalls::new(&decls, Mode::Enabled, 3).unwrap();
        let args = Value::from_json(&serde_json::json!({"n": "2"})).unwrap();
        let coerced = calls.begin("get", args).unwrap();
        assert_eq!(coerced.get_key(&Value::string("n")), Some(&Value::Int(2)));
        let bad = calls.finish(Ok(Value::string("x"))).unwrap_err();
        assert!(matches!(bad, ToolFailure::Terminal(f) if f.reason == FailReason::ValidationError));
        assert_eq!(calls.begin("nope", Value::Nil), Err(ToolFailure::NotFound));
        calls.begin("any", Value::Nil).unwrap();
        assert_eq!(
            calls.finish(Err(ToolFailure::Error("e".into()))),
            Err(ToolFailure::Error("e".into()))
        );
        let over = calls.begin("any", Value::Nil).unwrap_err();
        let ToolFailure::Terminal(f) = over else {
            panic!("{over:?}")
        };
        assert_eq!(f.reason, FailReason::LimitExceeded);
        assert_eq!(
            f.details.get_key(&Value::string("limit")),
            Some(&Value::string("max_tool_calls"))
        );
        let records = calls.into_records();
        assert_eq!(records.len(), 4);
        assert!(
            records
                .iter()
                .all(|r| r.result.is_none() && r.error.is_some())
        );
    }

    #[test]
    fn a_call_cut_off_is_still_recorded() {
        let mut calls = ToolCalls::new(&[decl("slow", None)], Mode::Enabled, 1).unwrap();
        calls.begin("slow", Value::Int(1)).unwrap();
        calls.abandon("deadline");
        let records = calls.into_records();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].error.as_deref(), Some("deadline"));
    }
}
