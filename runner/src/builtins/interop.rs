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
    def!(
        "parse-boolean",
        1,
        1,
        "\"true\" → true, \"false\" → false, anything else nil.",
        "(parse-boolean \"true\") ;=> true",
        |_, a| Ok(match super::string::text(&a[0], "parse-boolean")? {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::Nil,
        })
    ),
];

/// `Integer/parseInt`, `Long/parseLong`, `Double/parseDouble`, `Float/parseFloat`,
/// `Boolean/parseBoolean`.
pub static PARSE_TABLE: &[BuiltinDef] = &[
    def!(
        "parseInt",
        1,
        2,
        "Parses a 32-bit integer (optionally in a radix); an error if malformed.",
        "(Integer/parseInt \"42\") ;=> 42",
        |_, a| parse_radix(&a, "parseInt", true)
    ),
    def!(
        "parseLong",
        1,
        2,
        "Parses a 64-bit integer (optionally in a radix); an error if malformed.",
        "(Long/parseLong \"42\") ;=> 42",
        |_, a| parse_radix(&a, "parseLong", false)
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
        "True for \"true\" in any case, else false (nil is false).",
        "(Boolean/parseBoolean \"TRUE\") ;=> true",
        |_, a| match &a[0] {
            Value::Nil => Ok(Value::Bool(false)),
            v => Ok(Value::Bool(
                super::string::text(v, "parseBoolean")?.eq_ignore_ascii_case("true")
            )),
        }
    ),
    def!(
        "parseFloat",
        1,
        1,
        "Parses a number as Double/parseDouble does (the result is a double, not a 32-bit float).",
        "(Float/parseFloat \" 1.5 \") ;=> 1.5",
        |_, a| {
            let s = super::string::text(&a[0], "parseFloat")?;
            parse_double(s.trim())
                .map(Value::Float)
                .ok_or_else(|| number_format(s))
        }
    ),
];

/// The constants of `Double`, `Long`, `Integer` (and `Float`'s, as doubles) that programs name:
/// `Double/NaN`, `Long/MAX_VALUE`, ...; `None` for anything else.
pub fn constant(class: &str, name: &str) -> Option<Value> {
    let class = class.strip_prefix("java.lang.").unwrap_or(class);
    Some(match (class, name) {
        ("Double" | "Float", "NaN") => Value::Float(f64::NAN),
        ("Double" | "Float", "POSITIVE_INFINITY") => Value::Float(f64::INFINITY),
        ("Double" | "Float", "NEGATIVE_INFINITY") => Value::Float(f64::NEG_INFINITY),
        ("Double", "MAX_VALUE") => Value::Float(f64::MAX),
        // Java's MIN_VALUE is the smallest positive (subnormal) double.
        ("Double", "MIN_VALUE") => Value::Float(f64::from_bits(1)),
        ("Long", "MAX_VALUE") => Value::Int(i64::MAX),
        ("Long", "MIN_VALUE") => Value::Int(i64::MIN),
        ("Integer", "MAX_VALUE") => Value::Int(i64::from(i32::MAX)),
        ("Integer", "MIN_VALUE") => Value::Int(i64::from(i32::MIN)),
        _ => return None,
    })
}

fn number_format(s: &str) -> EvalError {
    EvalError::new(
        ErrorKind::ArgumentError,
        "parse",
        format!("For input string: \"{s}\""),
    )
}

/// Java's `Integer.parseInt(s, radix)` / `Long.parseLong(s, radix)`.
fn parse_radix(a: &[Value], op: &str, int32: bool) -> EvalResult {
    let s = super::string::text(&a[0], op)?;
    let radix = match a.get(1) {
        Some(r) => super::math::int_arg(r, op)?,
        None => 10,
    };
    let radix = u32::try_from(radix)
        .ok()
        .filter(|r| (2..=36).contains(r))
        .ok_or_else(|| EvalError::arg(op, format!("radix {radix} out of range")))?;
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return Err(number_format(s));
    }
    let n = i64::from_str_radix(s.strip_prefix('+').unwrap_or(s), radix)
        .map_err(|_| number_format(s))?;
    if int32 && i32::try_from(n).is_err() {
        return Err(number_format(s));
    }
    Ok(Value::Int(n))
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
    // Double.valueOf ignores leading and trailing characters up to U+0020.
    let s = s.trim_matches(|c: char| c <= ' ');
    if s.is_empty() {
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

/// Java `List`/`Set`/`Map` methods that Clojure collections answer: `.indexOf .contains
/// .size .isEmpty .get .containsKey`.
fn coll_method(i: &mut Interp<'_>, target: &Value, method: &str, args: &[Value]) -> EvalResult {
    let arg = args.first().cloned().unwrap_or_default();
    let items = || match target {
        Value::Vector(xs) | Value::List(xs) => xs.iter().cloned().collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let pos = |v: Option<usize>| Value::Int(v.and_then(|k| i64::try_from(k).ok()).unwrap_or(-1));
    Ok(match (target, method) {
        (Value::Vector(_) | Value::List(_), "indexOf") => {
            pos(items().iter().position(|x| *x == arg))
        }
        (Value::Vector(_) | Value::List(_), "lastIndexOf") => {
            pos(items().iter().rposition(|x| *x == arg))
        }
        (Value::Vector(_) | Value::List(_), "contains") => Value::Bool(items().contains(&arg)),
        (Value::Set(s), "contains") => Value::Bool(s.contains(&arg)),
        (Value::Map(m), "containsKey") => Value::Bool(m.contains_key(&arg)),
        (Value::Map(m), "get") => m.get(&arg).cloned().unwrap_or_default(),
        (Value::Vector(xs), "get") => {
            let k = idx(Some(&arg), "get")?;
            xs.get(k).cloned().ok_or_else(|| {
                EvalError::new(
                    ErrorKind::IndexOutOfBounds,
                    "get",
                    format!("index {k} out of bounds"),
                )
            })?
        }
        (_, "size") => Value::Int(i64::try_from(i.seq_vec(target)?.len()).unwrap_or(i64::MAX)),
        (_, "isEmpty") => Value::Bool(i.seq_vec(target)?.is_empty()),
        _ => {
            return Err(EvalError::new(
                ErrorKind::TypeError,
                method,
                format!("no method .{method} on {}", target.type_name()),
            ));
        }
    })
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
        Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Map(_) => {
            coll_method(i, &target, method, &args)
        }
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

/// Java's `startsWith(prefix, offset)`: false for an offset outside the string.
fn starts_with_at(s: &str, prefix: &str, offset: Option<&Value>) -> EvalResult<bool> {
    let Some(off) = offset else {
        return Ok(s.starts_with(prefix));
    };
    let off = super::math::int_arg(off, "startsWith")?;
    let Ok(off) = usize::try_from(off) else {
        return Ok(false);
    };
    Ok(
        match s.char_indices().map(|(b, _)| b).chain([s.len()]).nth(off) {
            Some(b) => s.get(b..).is_some_and(|t| t.starts_with(prefix)),
            None => false,
        },
    )
}

/// `.indexOf` / `.lastIndexOf`: as `str/index-of`, but -1 when absent, and an integer argument
/// is a character code as in Java's `indexOf(int ch)` (no such character: -1).
fn index_of(s: &str, args: &[Value], last: bool) -> EvalResult {
    let mut a = vec![Value::str(s)];
    a.extend(args.iter().cloned());
    if let Some(Value::Int(c)) = a.get(1) {
        match u32::try_from(*c).ok().and_then(char::from_u32) {
            Some(ch) => a[1] = Value::Char(ch),
            None => return Ok(Value::Int(-1)),
        }
    }
    let found = super::string::index_of(&a, last)?;
    Ok(if found.is_nil() {
        Value::Int(-1)
    } else {
        found
    })
}

/// `.substring` with Java's bounds: `start <= end <= length`, in characters.
fn substring(s: &str, args: &[Value]) -> EvalResult {
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
    Ok(Value::str(
        &s.chars().skip(start).take(end - start).collect::<String>(),
    ))
}

fn string_method(s: &str, method: &str, args: &[Value]) -> EvalResult {
    let arg_str = |k: usize| -> EvalResult<&str> {
        super::string::text(args.get(k).unwrap_or(&Value::Nil), method)
    };
    Ok(match method {
        "length" => Value::Int(i64::try_from(s.chars().count()).unwrap_or(i64::MAX)),
        "toUpperCase" => Value::str(&s.to_uppercase()),
        "toLowerCase" => Value::str(&s.to_lowercase()),
        // Java's trim strips characters up to U+0020; strip is Unicode-aware.
        "trim" => Value::str(s.trim_matches(|c: char| c <= ' ')),
        "strip" => Value::str(s.trim_matches(super::string::java_ws)),
        "isBlank" => Value::Bool(s.chars().all(super::string::java_ws)),
        "toString" => Value::str(s),
        "concat" => Value::str(&format!("{s}{}", arg_str(0)?)),
        "equalsIgnoreCase" => Value::Bool(
            matches!(args.first(), Some(Value::Str(o)) if o.to_lowercase() == s.to_lowercase()),
        ),
        "matches" => {
            let re = super::regex::compile(&format!(r"\A(?:{})\z", arg_str(0)?))
                .map_err(|e| EvalError::arg("matches", e))?;
            Value::Bool(re.is_match(s))
        }
        "isEmpty" => Value::Bool(s.is_empty()),
        "startsWith" => Value::Bool(starts_with_at(s, arg_str(0)?, args.get(1))?),
        "endsWith" => Value::Bool(s.ends_with(arg_str(0)?)),
        "contains" => Value::Bool(s.contains(arg_str(0)?)),
        "indexOf" | "lastIndexOf" => index_of(s, args, method == "lastIndexOf")?,
        "substring" => substring(s, args)?,
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
                "a supported String method (.length .substring .indexOf .lastIndexOf .startsWith .endsWith .contains .trim .toUpperCase .toLowerCase .charAt .split .replace .matches ...)",
                &Value::str(s),
            ));
        }
    })
}
