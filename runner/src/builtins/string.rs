//! Strings: clojure.string (under `clojure.string/`, `str/`, `string/`) and the core string
//! functions (`subs`). Indexes count characters, not bytes.

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;

/// Core string functions.
pub static CORE_TABLE: &[BuiltinDef] = &[def!(
    "subs",
    2,
    3,
    "Substring from start (to end), by character index.",
    "(subs \"hello\" 1 3) ;=> \"el\"",
    subs
)];

/// clojure.string.
pub static TABLE: &[BuiltinDef] = &[
    def!(
        "join",
        1,
        2,
        "Joins the items' string forms with a separator.",
        "(str/join \",\" [1 2]) ;=> \"1,2\"",
        join
    ),
    def!(
        "upper-case",
        1,
        1,
        "Upper case.",
        "(str/upper-case \"a\") ;=> \"A\"",
        |_, a| Ok(Value::str(&text(&a[0], "upper-case")?.to_uppercase()))
    ),
    def!(
        "lower-case",
        1,
        1,
        "Lower case.",
        "(str/lower-case \"A\") ;=> \"a\"",
        |_, a| Ok(Value::str(&text(&a[0], "lower-case")?.to_lowercase()))
    ),
    def!(
        "trim",
        1,
        1,
        "Without surrounding whitespace.",
        "(str/trim \" a \") ;=> \"a\"",
        |_, a| Ok(Value::str(text(&a[0], "trim")?.trim()))
    ),
    def!(
        "blank?",
        1,
        1,
        "True if nil, empty or only whitespace.",
        "(str/blank? \" \") ;=> true",
        |_, a| Ok(Value::Bool(match &a[0] {
            Value::Nil => true,
            v => text(v, "blank?")?.trim().is_empty(),
        }))
    ),
    def!(
        "starts-with?",
        2,
        2,
        "True if s starts with the prefix.",
        "(str/starts-with? \"abc\" \"a\") ;=> true",
        |_, a| Ok(Value::Bool(
            text(&a[0], "starts-with?")?.starts_with(text(&a[1], "starts-with?")?)
        ))
    ),
    def!(
        "ends-with?",
        2,
        2,
        "True if s ends with the suffix.",
        "(str/ends-with? \"abc\" \"c\") ;=> true",
        |_, a| Ok(Value::Bool(
            text(&a[0], "ends-with?")?.ends_with(text(&a[1], "ends-with?")?)
        ))
    ),
    def!(
        "includes?",
        2,
        2,
        "True if s contains the substring.",
        "(str/includes? \"abc\" \"b\") ;=> true",
        |_, a| Ok(Value::Bool(
            text(&a[0], "includes?")?.contains(text(&a[1], "includes?")?)
        ))
    ),
    def!(
        "split",
        2,
        3,
        "Splits on a regex or string; trailing empty strings are dropped.",
        "(str/split \"a,b\" #\",\") ;=> [\"a\" \"b\"]",
        |_, a| super::regex::split(a)
    ),
    def!(
        "replace",
        3,
        3,
        "Replaces all matches of a string or regex ($1 groups allowed).",
        "(str/replace \"aa\" \"a\" \"b\") ;=> \"bb\"",
        |i, a| super::regex::replace(i, a, true)
    ),
];

/// A string argument, or a type error naming `op`.
pub fn text<'v>(v: &'v Value, op: &str) -> EvalResult<&'v str> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(expected(op, "a string", other)),
    }
}

fn subs(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let s = text(&a[0], "subs")?;
    let n = s.chars().count();
    let start = super::math::int_arg(&a[1], "subs")?;
    let end = match a.get(2) {
        Some(e) => super::math::int_arg(e, "subs")?,
        None => i64::try_from(n).unwrap_or(i64::MAX),
    };
    let oob = || {
        EvalError::new(
            ErrorKind::IndexOutOfBounds,
            "subs",
            format!("range {start}..{end} out of bounds for string of length {n}"),
        )
    };
    let (Ok(st), Ok(en)) = (usize::try_from(start), usize::try_from(end)) else {
        return Err(oob());
    };
    if st > en || en > n {
        return Err(oob());
    }
    Ok(Value::str(
        &s.chars().skip(st).take(en - st).collect::<String>(),
    ))
}

fn join(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (sep, coll) = match a.as_slice() {
        [coll] => (String::new(), coll),
        [sep, coll] => (crate::print::str_of(sep), coll),
        _ => return Ok(Value::str("")),
    };
    let items = i.seq_vec(coll)?;
    let parts: Vec<String> = items.iter().map(crate::print::str_of).collect();
    Ok(Value::str(&parts.join(&sep)))
}
