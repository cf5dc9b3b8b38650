//! Signatures applied to a run, as `Fail`s: the context is validated (and coerced) before
//! evaluation, the result after, and tool arguments and results around each call. Failures are
//! `validation_error`s whose message lists every path; an unparsable signature is an
//! `invalid_request`.
//!
//! The one place signatures meet runs: the interpreter (context, result), and [`ToolSigs`] for
//! tools, which both the in-process host and the engine use through
//! [`crate::tool_calls::ToolCalls`]. Every declared tool signature is parsed once, up front.

use super::{Mode, Signature, ValidationError};
use crate::protocol::ToolDecl;
use crate::value::EncodedValue;
use crate::{Fail, FailReason, Value};

/// Parses a signature given with a request.
pub fn parse(text: &str, what: &str) -> Result<Signature, Fail> {
    Signature::parse(text).map_err(|e| {
        Fail::new(
            FailReason::InvalidRequest,
            format!("invalid {what} signature: {e}"),
        )
    })
}

/// The text of the signature chained from the step that produced the context (`previous`) and
/// this run's own signature, if any.
pub fn chained(previous: &str, own: Option<&str>) -> Result<String, Fail> {
    let prev = parse(previous, "context")?;
    let own = own.map(|o| parse(o, "run")).transpose()?;
    Ok(Signature::chain(&prev, own.as_ref()).render())
}

/// A `validation_error` listing every error, also as `details.errors`.
pub fn failure(subject: &str, errors: &[ValidationError]) -> Fail {
    let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let msg = format!(
        "{subject} does not match the signature: {}",
        list.join("; ")
    );
    Fail::new(FailReason::ValidationError, msg).with_detail(
        "errors",
        Value::Vector(list.into_iter().map(Value::Str).collect()),
    )
}

/// Validates and coerces the context; returns it with the warnings to report.
pub fn context(sig: &Signature, context: Value, mode: Mode) -> Result<(Value, Vec<String>), Fail> {
    sig.validate_input_owned(context, mode)
        .map(|c| (c.value, c.warnings))
        .map_err(|e| failure("the context", &e))
}

/// [`context`] on the context's encoding, row by row (`Signature::validate_input_encoded`):
/// the checked context's encoding (`None`: the one given, unchanged) with the warnings.
pub fn context_encoded(
    sig: &Signature,
    context: &EncodedValue,
    mode: Mode,
) -> Result<(Option<EncodedValue>, Vec<String>), Fail> {
    sig.validate_input_encoded(context, mode)
        .map(|c| (c.value, c.warnings))
        .map_err(|e| failure("the context", &e))
}

/// Validates the result (never coerced).
pub fn result(sig: &Signature, value: Value, mode: Mode) -> Result<(Value, Vec<String>), Fail> {
    sig.validate_output_owned(value, mode)
        .map(|c| (c.value, c.warnings))
        .map_err(|e| failure("the result", &e))
}

/// The declared tools of one run with their signatures, parsed once.
#[derive(Debug, Default)]
pub struct ToolSigs {
    tools: Vec<(String, Option<Signature>)>,
    mode: Mode,
}

impl ToolSigs {
    /// Parses every declared signature (`invalid_request` if one does not parse); strict
    /// validation requires one per tool (`validation_error`).
    pub fn new(decls: &[ToolDecl], mode: Mode) -> Result<ToolSigs, Fail> {
        let mut tools = Vec::with_capacity(decls.len());
        for d in decls {
            let sig = match d.signature.as_deref() {
                Some(text) => Some(parse(text, &format!("tool {}", d.name))?),
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
            Some(sig) => sig
                .validate_input_owned(args, self.mode)
                .map(|c| c.value)
                .map_err(|e| failure(&format!("the arguments of tool {name}"), &e)),
            None => Ok(args),
        }
    }

    /// The result the program gets (never coerced), or the terminal failure.
    pub fn check_result(&self, name: &str, value: Value) -> Result<Value, Fail> {
        match self.lookup(name).flatten() {
            Some(sig) => sig
                .validate_output_owned(value, self.mode)
                .map(|c| c.value)
                .map_err(|e| failure(&format!("the result of tool {name}"), &e)),
            None => Ok(value),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn context_errors_list_every_path() {
        let sig =
            parse("(id :int, name :string) -> :any", "run").unwrap_or_else(|f| panic!("{f:?}"));
        let ctx =
            crate::Value::from_json(&serde_json::json!({"id": "x", "name": 3})).unwrap_or_default();
        let f = context(&sig, ctx, Mode::Enabled)
            .err()
            .unwrap_or_else(|| panic!("should fail"));
        assert_eq!(f.reason, FailReason::ValidationError);
        assert!(
            f.message.contains("id:") && f.message.contains("name:"),
            "{}",
            f.message
        );
    }

    #[test]
    fn coercion_warns_and_bad_signature_is_invalid_request() {
        let sig = parse("(limit :int) -> :any", "run").unwrap_or_else(|f| panic!("{f:?}"));
        let ctx = crate::Value::from_json(&serde_json::json!({"limit": "10"})).unwrap_or_default();
        let (v, warnings) = context(&sig, ctx, Mode::Enabled).unwrap_or_else(|f| panic!("{f:?}"));
        assert_eq!(v.get_key(&Value::string("limit")), Some(&Value::Int(10)));
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            parse("(a :list) -> :int", "run").err().map(|f| f.reason),
            Some(FailReason::InvalidRequest)
        );
    }

    fn decl(name: &str, sig: Option<&str>) -> ToolDecl {
        ToolDecl::new(name, sig)
    }

    #[test]
    fn tool_arguments_are_coerced_and_results_checked() {
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
    fn bad_or_missing_tool_signatures_are_refused_up_front() {
        let err = ToolSigs::new(&[decl("t", Some("(a :nonsense"))], Mode::Enabled).unwrap_err();
        assert_eq!(err.reason, FailReason::InvalidRequest);
        let err = ToolSigs::new(&[decl("t", None)], Mode::Strict).unwrap_err();
        assert_eq!(err.reason, FailReason::ValidationError);
    }
}
