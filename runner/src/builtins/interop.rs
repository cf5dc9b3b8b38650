//! Bounded Java interop: the String methods LLM code uses (`.length .substring .indexOf ...`),
//! `Integer/parseInt` and friends, and date methods (delegated to `time`). Anything else is a
//! clear error naming the method; the analyzer rejects unknown `Class/member` names up front.

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;

/// Core-level parse functions.
pub static TABLE: &[BuiltinDef] = &[
    def!(
        "parse-long",
        1,
        1,
        "Parses a whole string as an integer, or nil.",
        "(parse-long \"42\") ;=> 42",
        |_, a| Ok(parse_long(super::string::text(&a[0], "parse-long")?)
            .map(Value::Int)
            .unwrap_or_default())
    ),
    def!(
        "parse-double",
        1,
        1,
        "Parses a whole string as a double, or nil.",
        "(parse-double \"1.5\") ;=> 1.5",
        |_, a| Ok(parse_double(super::string::text(&a[0], "parse-double")?)
            .map(Value::Float)
            .unwrap_or_default())
    ),
];

/// `Integer/parseInt`, `Long/parseLong`, `Double/parseDouble`, `Boolean/parseBoolean`.
pub static PARSE_TABLE: &[BuiltinDef] = &[
    def!(
        "parseInt",
        1,
        1,
        "Parses an integer; an error if malformed.",
        "(Integer/parseInt \"42\") ;=> 42",
        |_, a| parse_or_err(&a[0], "parseInt")
    ),
    def!(
        "parseLong",
        1,
        1,
        "Parses an integer; an error if malformed.",
        "(Long/parseLong \"42\") ;=> 42",
        |_, a| parse_or_err(&a[0], "parseLong")
    ),
    def!(
        "parseDouble",
        1,
        1,
        "Parses a double; an error if malformed.",
        "(Double/parseDouble \"1.5\") ;=> 1.5",
        |_, a| {
            let s = super::string::text(&a[0], "parseDouble")?;
            parse_double(s.trim())
                .map(Value::Float)
                .ok_or_else(|| number_format(s))
        }
    ),
    def!(
        "parseBoolean",
        1,
        1,
        "True for \"true\" in any case, else false.",
        "(Boolean/parseBoolean \"TRUE\") ;=> true",
        |_, a| Ok(Value::Bool(
            matches!(&a[0], Value::Str(s) if s.eq_ignore_ascii_case("true"))
        ))
    ),
];

fn number_format(s: &str) -> EvalError {
    EvalError::new(
        ErrorKind::ArgumentError,
        "parse",
        format!("For input string: \"{s}\""),
    )
}

fn parse_or_err(v: &Value, op: &str) -> EvalResult {
    let s = super::string::text(v, op)?;
    parse_long(s)
        .map(Value::Int)
        .ok_or_else(|| number_format(s))
}

/// Clojure's `parse-long`: optional sign, digits only, in range.
pub fn parse_long(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.strip_prefix('+').unwrap_or(s).parse().ok()
}

/// Clojure's `parse-double`: Java's Double.valueOf grammar (the common part of it).
pub fn parse_double(s: &str) -> Option<f64> {
    if s.is_empty() || s.trim() != s {
        return None;
    }
    match s {
        "NaN" => return Some(f64::NAN),
        "Infinity" | "+Infinity" => return Some(f64::INFINITY),
        "-Infinity" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    let body = s.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(s);
    if body
        .chars()
        .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
    {
        return None;
    }
    body.parse().ok()
}

/// `(.method target args...)`.
pub fn call_method(i: &mut Interp<'_>, method: &str, mut args: Vec<Value>) -> EvalResult {
    if args.is_empty() {
        return Err(EvalError::arg(
            method,
            format!(".{method} needs a target object"),
        ));
    }
    let target = args.remove(0);
    match &target {
        Value::Str(s) => string_method(s, method, &args),
        Value::Temporal(t) => super::time::method(i, *t, method, &args),
        other => Err(EvalError::new(
            ErrorKind::TypeError,
            method,
            format!("no method .{method} on {}", other.type_name()),
        )),
    }
}

fn idx(v: Option<&Value>, op: &str) -> EvalResult<usize> {
    let i = super::math::int_arg(v.unwrap_or(&Value::Nil), op)?;
    usize::try_from(i).map_err(|_| {
        EvalError::new(
            ErrorKind::IndexOutOfBounds,
            op,
            format!("index {i} out of range"),
        )
    })
}

/// Index in chars of a byte offset.
fn char_index(s: &str, byte: usize) -> i64 {
    i64::try_from(s.get(..byte).map_or(0, |p| p.chars().count())).unwrap_or(-1)
}

fn string_method(s: &str, method: &str, args: &[Value]) -> EvalResult {
    let arg_str = |k: usize| -> EvalResult<&str> {
        super::string::text(args.get(k).unwrap_or(&Value::Nil), method)
    };
    Ok(match method {
        "length" => Value::Int(i64::try_from(s.chars().count()).unwrap_or(i64::MAX)),
        "toUpperCase" => Value::str(&s.to_uppercase()),
        "toLowerCase" => Value::str(&s.to_lowercase()),
        "trim" => Value::str(s.trim()),
        "isEmpty" => Value::Bool(s.is_empty()),
        "startsWith" => Value::Bool(s.starts_with(arg_str(0)?)),
        "endsWith" => Value::Bool(s.ends_with(arg_str(0)?)),
        "contains" => Value::Bool(s.contains(arg_str(0)?)),
        "indexOf" => Value::Int(s.find(arg_str(0)?).map_or(-1, |b| char_index(s, b))),
        "lastIndexOf" => Value::Int(s.rfind(arg_str(0)?).map_or(-1, |b| char_index(s, b))),
        "substring" => {
            let n = s.chars().count();
            let start = idx(args.first(), "substring")?;
            let end = if args.len() > 1 {
                idx(args.get(1), "substring")?
            } else {
                n
            };
            if start > end || end > n {
                return Err(EvalError::new(
                    ErrorKind::IndexOutOfBounds,
                    "substring",
                    format!("range {start}..{end} out of bounds for length {n}"),
                ));
            }
            Value::str(&s.chars().skip(start).take(end - start).collect::<String>())
        }
        "charAt" => {
            let k = idx(args.first(), "charAt")?;
            s.chars().nth(k).map(Value::Char).ok_or_else(|| {
                EvalError::new(
                    ErrorKind::IndexOutOfBounds,
                    "charAt",
                    format!("index {k} out of bounds"),
                )
            })?
        }
        "split" => super::regex::split(vec![
            Value::str(s),
            super::regex::compile(arg_str(0)?)
                .map(Value::Regex)
                .map_err(|e| EvalError::arg("split", e))?,
        ])?,
        "replace" => Value::str(&s.replace(arg_str(0)?, arg_str(1)?)),
        "equals" => Value::Bool(matches!(args.first(), Some(Value::Str(o)) if &**o == s)),
        _ => {
            return Err(expected(
                &format!(".{method}"),
                "a supported String method (.length .substring .indexOf .lastIndexOf .startsWith .endsWith .contains .trim .toUpperCase .toLowerCase)",
                &Value::str(s),
            ));
        }
    })
}
