//! Signatures applied to a run: the context is validated (and coerced) before evaluation, the
//! result after, and tool arguments and results around each call. Failures are
//! `validation_error` Steps whose message lists every path; an unparsable signature is an
//! `invalid_request`. Modes come from `ptc_shared::signature::Mode`.

use ptc_shared::signature::{Mode, Signature, ValidationError};
use ptc_shared::{Fail, FailReason, Value};

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

/// Validates the result (never coerced).
pub fn result(sig: &Signature, value: Value, mode: Mode) -> Result<(Value, Vec<String>), Fail> {
    sig.validate_output_owned(value, mode)
        .map(|c| (c.value, c.warnings))
        .map_err(|e| failure("the result", &e))
}

/// Validates and coerces a tool's arguments before the call.
pub fn tool_args(
    tool: &str,
    sig: &Signature,
    args: Value,
    mode: Mode,
) -> Result<(Value, Vec<String>), Fail> {
    sig.validate_input_owned(args, mode)
        .map(|c| {
            (
                c.value,
                c.warnings
                    .into_iter()
                    .map(|w| format!("tool {tool}: {w}"))
                    .collect(),
            )
        })
        .map_err(|e| failure(&format!("the arguments of tool {tool}"), &e))
}

/// Checks a tool's result against its declared output.
pub fn tool_result(
    tool: &str,
    sig: &Signature,
    value: Value,
    mode: Mode,
) -> Result<(Value, Vec<String>), Fail> {
    sig.validate_output_owned(value, mode)
        .map(|c| (c.value, c.warnings))
        .map_err(|e| failure(&format!("the result of tool {tool}"), &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_errors_list_every_path() {
        let sig =
            parse("(id :int, name :string) -> :any", "run").unwrap_or_else(|f| panic!("{f:?}"));
        let ctx = ptc_shared::Value::from_json(&serde_json::json!({"id": "x", "name": 3}))
            .unwrap_or_default();
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
        let ctx =
            ptc_shared::Value::from_json(&serde_json::json!({"limit": "10"})).unwrap_or_default();
        let (v, warnings) = context(&sig, ctx, Mode::Enabled).unwrap_or_else(|f| panic!("{f:?}"));
        assert_eq!(v.get_key(&Value::string("limit")), Some(&Value::Int(10)));
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            parse("(a :list) -> :int", "run").err().map(|f| f.reason),
            Some(FailReason::InvalidRequest)
        );
    }
}
