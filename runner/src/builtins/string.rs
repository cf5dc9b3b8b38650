//! Strings: all of clojure.string (under `clojure.string/`, `str/`, `string/`) and the core
//! string functions (`subs symbol namespace`).
//!
//! Semantics follow Clojure 1.11 on the JVM with one systematic difference: indexes and lengths
//! count Unicode scalar values, not UTF-16 code units (so `"😀"` has length 1; see
//! DIVERGENCES-text.md). Whitespace is Java's `Character.isWhitespace` (no-break spaces are not
//! whitespace), because `trim`/`blank?` are defined by it. Functions that Clojure applies to
//! `(.toString x)` (`upper-case lower-case capitalize join includes? starts-with? ends-with?
//! index-of last-index-of`) accept any non-nil value.

use super::{BuiltinDef, Fast, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;

/// Core string functions.
pub static CORE_TABLE: &[BuiltinDef] = &[
    def!(
        "subs",
        2,
        3,
        "Substring from start (to end), by character index.",
        "(subs \"hello\" 1 3) ;=> \"el\"",
        subs
    ),
    def!(
        "symbol",
        1,
        2,
        "A symbol from a string, keyword or symbol (or ns and name).",
        "(symbol \"a\") ;=> a",
        symbol
    ),
    def!(
        "namespace",
        1,
        1,
        "The namespace part of a keyword or symbol, or nil.",
        "(namespace :a/b) ;=> \"a\"",
        |_, a| match &a[0] {
            Value::Keyword(k) | Value::Symbol(k) => Ok(k
                .rsplit_once('/')
                .filter(|(ns, _)| !ns.is_empty())
                .map(|(ns, _)| Value::str(ns))
                .unwrap_or_default()),
            other => Err(expected("namespace", "a keyword or symbol", other)),
        }
    ),
];

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
        |_, a| case_changed(&a[0], Case::Upper),
        Fast::One(|v| case_of_text(v, Case::Upper).map(Ok))
    ),
    def!(
        "lower-case",
        1,
        1,
        "Lower case.",
        "(str/lower-case \"A\") ;=> \"a\"",
        |_, a| case_changed(&a[0], Case::Lower),
        Fast::One(|v| case_of_text(v, Case::Lower).map(Ok))
    ),
    def!(
        "capitalize",
        1,
        1,
        "First character upper case, the rest lower case.",
        "(str/capitalize \"hELLO\") ;=> \"Hello\"",
        |_, a| Ok(Value::str(&capitalize(&any_text(&a[0], "capitalize")?)))
    ),
    def!(
        "trim",
        1,
        1,
        "Without surrounding whitespace.",
        "(str/trim \" a \") ;=> \"a\"",
        |_, a| Ok(Value::str(text(&a[0], "trim")?.trim_matches(java_ws)))
    ),
    def!(
        "triml",
        1,
        1,
        "Without leading whitespace.",
        "(str/triml \" a \") ;=> \"a \"",
        |_, a| Ok(Value::str(
            text(&a[0], "triml")?.trim_start_matches(java_ws)
        ))
    ),
    def!(
        "trimr",
        1,
        1,
        "Without trailing whitespace.",
        "(str/trimr \" a \") ;=> \" a\"",
        |_, a| Ok(Value::str(text(&a[0], "trimr")?.trim_end_matches(java_ws)))
    ),
    def!(
        "trim-newline",
        1,
        1,
        "Without trailing newline and return characters.",
        "(str/trim-newline \"a\\n\") ;=> \"a\"",
        |_, a| Ok(Value::str(
            text(&a[0], "trim-newline")?.trim_end_matches(['\n', '\r'])
        ))
    ),
    def!(
        "blank?",
        1,
        1,
        "True if nil, empty or only whitespace.",
        "(str/blank? \" \") ;=> true",
        |_, a| Ok(Value::Bool(match &a[0] {
            Value::Nil => true,
            v => text(v, "blank?")?.chars().all(java_ws),
        }))
    ),
    def!(
        "starts-with?",
        2,
        2,
        "True if s starts with the prefix.",
        "(str/starts-with? \"abc\" \"a\") ;=> true",
        |_, a| Ok(Value::Bool(
            receiver(&a[0], "starts-with?")?.starts_with(text(&a[1], "starts-with?")?)
        ))
    ),
    def!(
        "ends-with?",
        2,
        2,
        "True if s ends with the suffix.",
        "(str/ends-with? \"abc\" \"c\") ;=> true",
        |_, a| Ok(Value::Bool(
            receiver(&a[0], "ends-with?")?.ends_with(text(&a[1], "ends-with?")?)
        ))
    ),
    def!(
        "includes?",
        2,
        2,
        "True if s contains the substring.",
        "(str/includes? \"abc\" \"b\") ;=> true",
        |_, a| Ok(Value::Bool(
            receiver(&a[0], "includes?")?.contains(text(&a[1], "includes?")?)
        ))
    ),
    def!(
        "index-of",
        2,
        3,
        "Index of the first occurrence of a string or char (from an index), or nil.",
        "(str/index-of \"hello\" \"l\") ;=> 2",
        |_, a| index_of(&a, false)
    ),
    def!(
        "last-index-of",
        2,
        3,
        "Index of the last occurrence of a string or char (at or before an index), or nil.",
        "(str/last-index-of \"hello\" \"l\") ;=> 3",
        |_, a| index_of(&a, true)
    ),
    def!(
        "reverse",
        1,
        1,
        "The characters in reverse order.",
        "(str/reverse \"abc\") ;=> \"cba\"",
        |_, a| Ok(Value::str(
            &text(&a[0], "reverse")?.chars().rev().collect::<String>()
        ))
    ),
    def!(
        "escape",
        2,
        2,
        "Replaces each char c for which (cmap c) is non-nil by (str (cmap c)).",
        "(str/escape \"a<b\" {\\< \"&lt;\"}) ;=> \"a&lt;b\"",
        escape
    ),
    def!(
        "split",
        2,
        3,
        "Splits on a regex; trailing empty strings are dropped unless a limit is given.",
        "(str/split \"a,b\" #\",\") ;=> [\"a\" \"b\"]",
        |_, a| super::regex::split(a),
        Fast::Two(super::regex::split_fast)
    ),
    def!(
        "split-lines",
        1,
        1,
        "Splits on \\n or \\r\\n.",
        "(str/split-lines \"a\\nb\") ;=> [\"a\" \"b\"]",
        split_lines
    ),
    def!(
        "replace",
        3,
        3,
        "Replaces all matches of a string, char or regex ($1 groups, or a fn of the match).",
        "(str/replace \"aa\" \"a\" \"b\") ;=> \"bb\"",
        |i, a| super::regex::replace(i, a, true)
    ),
    def!(
        "replace-first",
        3,
        3,
        "Replaces the first match of a string, char or regex.",
        "(str/replace-first \"aa\" \"a\" \"b\") ;=> \"ba\"",
        |i, a| super::regex::replace(i, a, false)
    ),
    def!(
        "re-quote-replacement",
        1,
        1,
        "Escapes $ and \\ so a string is used literally as a replacement.",
        "(str/re-quote-replacement \"$1\") ;=> \"\\\\$1\"",
        |_, a| {
            let s = text(&a[0], "re-quote-replacement")?;
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                if c == '$' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            Ok(Value::str(&out))
        }
    ),
];

/// A string argument, or a type error naming `op`.
pub fn text<'v>(v: &'v Value, op: &str) -> EvalResult<&'v str> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(expected(op, "a string", other)),
    }
}

/// The receiver of a function that Clojure applies to `(.toString s)` (`includes? starts-with?
/// ends-with? index-of last-index-of`): a string as it is, any other non-nil value printed.
fn receiver<'v>(v: &'v Value, op: &str) -> EvalResult<std::borrow::Cow<'v, str>> {
    match v {
        Value::Str(s) => Ok(std::borrow::Cow::Borrowed(s)),
        v => any_text(v, op).map(std::borrow::Cow::Owned),
    }
}

/// Which case change.
#[derive(Clone, Copy)]
enum Case {
    Upper,
    Lower,
}

/// `upper-case` / `lower-case` of any non-nil value (its `.toString`, as Clojure does).
fn case_changed(v: &Value, case: Case) -> EvalResult {
    if let Some(done) = case_of_text(v, case) {
        return Ok(done);
    }
    let s = any_text(
        v,
        if matches!(case, Case::Upper) {
            "upper-case"
        } else {
            "lower-case"
        },
    )?;
    Ok(Value::str(&changed(&s, case)))
}

/// The case change of a string `v`, or `None` when `v` is not a string. `v` itself when nothing
/// changes (as Java's `toLowerCase` returns `this`), so the usual call on data already in the
/// case allocates nothing. ASCII text is changed byte by byte (Java's and Rust's Unicode
/// mappings agree with that on ASCII), other text by Rust's full Unicode mapping.
fn case_of_text(v: &Value, case: Case) -> Option<Value> {
    let Value::Str(s) = v else { return None };
    if !s.is_ascii() {
        let after = changed(s, case);
        return Some(if after == **s {
            v.clone()
        } else {
            Value::Str(crate::value::Text::from(after))
        });
    }
    let changes = |b: &u8| match case {
        Case::Upper => b.is_ascii_lowercase(),
        Case::Lower => b.is_ascii_uppercase(),
    };
    Some(if s.bytes().any(|b| changes(&b)) {
        // Changed in place in a copy of the exact length: no `String` to shrink into a box.
        let mut after: Box<str> = Box::from(&**s);
        match case {
            Case::Upper => after.make_ascii_uppercase(),
            Case::Lower => after.make_ascii_lowercase(),
        }
        Value::Str(crate::value::Text::from(after))
    } else {
        v.clone()
    })
}

/// The Unicode case change of `s` (the general path).
fn changed(s: &str, case: Case) -> String {
    match case {
        Case::Upper => s.to_uppercase(),
        Case::Lower => s.to_lowercase(),
    }
}

/// `(.toString x)` of a non-nil value (nil is an error, as on the JVM).
fn any_text(v: &Value, op: &str) -> EvalResult<String> {
    match v {
        Value::Nil => Err(expected(op, "a string", v)),
        v => Ok(crate::print::str_of(v)),
    }
}

/// Java's `Character.isWhitespace`: Unicode spaces except the no-break ones, plus the ASCII
/// separators U+001C..U+001F; U+0085 is not whitespace.
pub fn java_ws(c: char) -> bool {
    match c {
        '\u{1C}'..='\u{1F}' => true,
        '\u{85}' | '\u{A0}' | '\u{2007}' | '\u{202F}' => false,
        c => c.is_whitespace(),
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => {
            let mut out: String = first.to_uppercase().collect();
            out.push_str(&chars.as_str().to_lowercase());
            out
        }
        None => String::new(),
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

fn symbol(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    match a.as_slice() {
        [Value::Str(s) | Value::Symbol(s) | Value::Keyword(s)] => Ok(Value::Symbol(s.clone())),
        [Value::Nil, Value::Str(n)] => Ok(Value::Symbol(n.clone())),
        [Value::Str(ns), Value::Str(n)] => Ok(Value::Symbol(format!("{ns}/{n}").into())),
        [other, ..] => Err(expected("symbol", "a string, keyword or symbol", other)),
        [] => Err(expected("symbol", "a name", &Value::Nil)),
    }
}

fn join(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (sep, coll) = match a.as_slice() {
        [coll] => (String::new(), coll),
        [sep, coll] => (crate::print::str_of(sep), coll),
        _ => return Ok(Value::str("")),
    };
    let items = i.seq_vec(coll)?;
    let mut out = String::new();
    for (k, x) in items.iter().enumerate() {
        if k > 0 {
            out.push_str(&sep);
        }
        out.push_str(&crate::print::str_of(x));
    }
    Ok(Value::str(&out))
}

fn escape(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let s = text(&a[0], "escape")?;
    let cmap = &a[1];
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match i.apply1(cmap, Value::Char(c))? {
            Value::Nil => out.push(c),
            r => out.push_str(&crate::print::str_of(&r)),
        }
    }
    Ok(Value::str(&out))
}

fn split_lines(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let s = text(&a[0], "split-lines")?;
    let mut parts: Vec<&str> = s
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    Ok(Value::vector(parts.into_iter().map(Value::str)))
}

/// Byte offset of character index `ci` (the length if past the end).
fn byte_of(s: &str, ci: usize) -> usize {
    s.char_indices().nth(ci).map_or(s.len(), |(b, _)| b)
}

/// Character index of byte offset `b`.
fn char_of(s: &str, b: usize) -> Value {
    Value::Int(i64::try_from(s.get(..b).map_or(0, |p| p.chars().count())).unwrap_or(-1))
}

/// `index-of` / `last-index-of` with Java's `indexOf(str, from)` / `lastIndexOf(str, from)`.
pub fn index_of(a: &[Value], last: bool) -> EvalResult {
    let op = if last { "last-index-of" } else { "index-of" };
    // Bounds-checked: `.indexOf` interop reaches here with whatever arguments a program gave.
    let s = receiver(a.first().unwrap_or(&Value::Nil), op)?;
    let s = &*s;
    let needle = match a.get(1).unwrap_or(&Value::Nil) {
        Value::Str(n) => n.to_string(),
        Value::Char(c) => c.to_string(),
        other => return Err(expected(op, "a string or char to find", other)),
    };
    let from = match a.get(2) {
        Some(v) => Some(super::math::int_arg(v, op)?),
        None => None,
    };
    let found = if last {
        let end = match from {
            Some(f) if f < 0 => return Ok(Value::Nil),
            // A match may start at `from` at the latest.
            Some(f) => {
                let mut e = byte_of(s, usize::try_from(f).unwrap_or(usize::MAX))
                    .saturating_add(needle.len())
                    .min(s.len());
                while !s.is_char_boundary(e) {
                    e -= 1;
                }
                e
            }
            None => s.len(),
        };
        s.get(..end).and_then(|h| h.rfind(needle.as_str()))
    } else {
        let start = byte_of(s, usize::try_from(from.unwrap_or(0).max(0)).unwrap_or(0));
        s.get(start..)
            .and_then(|h| h.find(needle.as_str()))
            .map(|b| b + start)
    };
    Ok(found.map(|b| char_of(s, b)).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The ASCII path of `upper-case`/`lower-case` answers as the Unicode mapping does, and hands
    /// back the very string when nothing changes.
    #[test]
    fn ascii_case_changes_answer_as_the_unicode_mapping() {
        let mut rng = Rng(0x5eed_ca5e);
        let mut texts: Vec<String> = (0u8..128).map(|b| char::from(b).to_string()).collect();
        for _ in 0..2_000 {
            let len = rng.below(12);
            texts.push(
                (0..len)
                    .map(|_| char::from(u8::try_from(rng.below(128)).unwrap_or(b'?')))
                    .collect(),
            );
        }
        texts.extend(["Straße", "ǅ", "ΟΔΟΣ", "İi", "ﬁ", "Ab\u{0300}"].map(String::from));
        for text in &texts {
            let orig = crate::value::Text::from(text.as_str());
            let v = Value::Str(orig.clone());
            for case in [Case::Upper, Case::Lower] {
                let Some(Value::Str(got)) = case_of_text(&v, case) else {
                    panic!("{text:?}: not a string");
                };
                let want = changed(text, case);
                assert_eq!(*got, *want, "{text:?}");
                assert_eq!(
                    crate::value::Text::ptr_eq(&got, &orig),
                    want == *text,
                    "{text:?}"
                );
            }
        }
        assert_eq!(case_of_text(&Value::Int(1), Case::Upper), None);
    }
}
