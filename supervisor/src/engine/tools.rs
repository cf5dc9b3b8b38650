//! Tool signatures on the supervisor side: a runner forwards each `ToolCall` as the program made
//! it, and the supervisor checks (and coerces) the arguments before the caller's handler sees
//! them, and checks the handler's result before the runner does — exactly the checks an
//! in-process run makes (`ptc_runner::validate`), so both paths fail the same way.
//!
//! Invariant: every declared signature is parsed once, before a runner is taken; a request with
//! an unparsable one never reaches a runner.

use ptc_runner::validate;
use ptc_shared::protocol::ToolDecl;
use ptc_shared::signature::{Mode, Signature};
use ptc_shared::{Fail, FailReason, Value};

/// The declared tools with their parsed signatures.
#[derive(Debug, Default)]
pub(crate) struct ToolSigs {
    tools: Vec<(String, Option<Signature>)>,
    mode: Mode,
}

impl ToolSigs {
    /// Parses every declared signature; strict validation requires one per tool.
    pub fn new(decls: &[ToolDecl], mode: Mode) -> Result<ToolSigs, Fail> {
        let mut tools = Vec::with_capacity(decls.len());
        for d in decls {
            let sig = match d.signature.as_deref() {
                Some(text) => Some(validate::parse(text, &format!("tool {}", d.name))?),
                None if mode == Mode::Strict => {
                    let msg = format!(
                        "strict validation requires a signature for every tool; `{}` has none",
                        d.name
                    );
                    return Err(Fail::new(FailReason::ValidationError, msg));
                }
                None => None,
            };
            tools.push((d.name.clone(), sig));
        }
        Ok(ToolSigs { tools, mode })
    }

    /// `None` if no tool of that name was declared; otherwise its signature, if any.
    fn lookup(&self, name: &str) -> Option<Option<&Signature>> {
        self.tools
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.as_ref())
    }

    pub fn declared(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    /// The arguments the handler gets (coerced), or the terminal failure.
    pub fn check_args(&self, name: &str, args: Value) -> Result<Value, Fail> {
        match self.lookup(name).flatten() {
            Some(sig) => validate::tool_args(name, sig, args, self.mode).map(|(v, _)| v),
            None => Ok(args),
        }
    }

    /// The result the runner gets, or the terminal failure.
    pub fn check_result(&self, name: &str, value: Value) -> Result<Value, Fail> {
        match self.lookup(name).flatten() {
            Some(sig) => validate::tool_result(name, sig, value, self.mode).map(|(v, _)| v),
            None => Ok(value),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn decl(name: &str, sig: Option<&str>) -> ToolDecl {
        ToolDecl {
            name: name.into(),
            signature: sig.map(str::to_string),
            description: None,
        }
    }

    #[test]
    fn arguments_are_coerced_and_results_checked() {
        let sigs =
            ToolSigs::new(&[decl("get", Some("(limit :int) -> :int"))], Mode::Enabled).unwrap();
        let args = Value::from_json(&serde_json::json!({"limit": "10"})).unwrap();
        let coerced = sigs.check_args("get", args).unwrap();
        assert_eq!(
            coerced.get_key(&Value::string("limit")),
            Some(&Value::Int(10))
        );
        let bad = sigs.check_result("get", Value::string("nope")).unwrap_err();
        assert_eq!(bad.reason, FailReason::ValidationError);
        assert!(sigs.declared("get") && !sigs.declared("other"));
    }

    #[test]
    fn bad_or_missing_signatures_are_refused_up_front() {
        let err = ToolSigs::new(&[decl("t", Some("(a :nonsense"))], Mode::Enabled).unwrap_err();
        assert_eq!(err.reason, FailReason::InvalidRequest);
        let err = ToolSigs::new(&[decl("t", None)], Mode::Strict).unwrap_err();
        assert_eq!(err.reason, FailReason::ValidationError);
    }
}
