//! Regexes: `#"..."` literals, `re-pattern re-find re-matches re-seq`, and regex-aware
//! `clojure.string/split` and `replace`. The engine is the `regex` crate (linear time, no
//! backreferences or lookaround; see docs/divergences.md) with a compiled-size limit, so a
//! hostile pattern cannot blow up time or memory.

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;
use std::rc::Rc;

/// Compiled-program size limit for one regex.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "re-pattern",
        1,
        1,
        "Compiles a string to a regex.",
        "(re-pattern \"a+\")",
        |_, a| match &a[0] {
            r @ Value::Regex(_) => Ok(r.clone()),
            v => compile(super::string::text(v, "re-pattern")?)
                .map(Value::Regex)
                .map_err(|e| EvalError::arg("re-pattern", e)),
        }
    ),
    def!(
        "re-find",
        2,
        2,
        "First match (with groups, a vector) or nil.",
        "(re-find #\"\\d+\" \"ab12\") ;=> \"12\"",
        |_, a| {
            let (r, s) = (
                regex_arg(&a[0], "re-find")?,
                super::string::text(&a[1], "re-find")?,
            );
            Ok(r.captures(s).map(|c| groups(&c)).unwrap_or_default())
        }
    ),
    def!(
        "re-matches",
        2,
        2,
        "The match if the whole string matches, else nil.",
        "(re-matches #\"\\d+\" \"12\") ;=> \"12\"",
        re_matches
    ),
    def!(
        "re-seq",
        2,
        2,
        "All matches, in order.",
        "(re-seq #\"\\d\" \"a1b2\") ;=> (\"1\" \"2\")",
        |_, a| {
            let (r, s) = (
                regex_arg(&a[0], "re-seq")?,
                super::string::text(&a[1], "re-seq")?,
            );
            let out: Vec<Value> = r.captures_iter(s).map(|c| groups(&c)).collect();
            Ok(if out.is_empty() {
                Value::Nil
            } else {
                Value::list(out)
            })
        }
    ),
];

/// Compiles a regex with the size limit.
pub fn compile(src: &str) -> Result<Rc<regex::Regex>, String> {
    regex::RegexBuilder::new(src)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map(Rc::new)
        .map_err(|e| e.to_string())
}

fn regex_arg<'v>(v: &'v Value, op: &str) -> EvalResult<&'v regex::Regex> {
    match v {
        Value::Regex(r) => Ok(r),
        other => Err(expected(op, "a regex", other)),
    }
}

/// A match as Clojure returns it: the string, or a vector of the match and its groups.
fn groups(c: &regex::Captures<'_>) -> Value {
    if c.len() == 1 {
        return c.get(0).map(|m| Value::str(m.as_str())).unwrap_or_default();
    }
    Value::vector(
        c.iter()
            .map(|m| m.map(|m| Value::str(m.as_str())).unwrap_or_default()),
    )
}

fn re_matches(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (r, s) = (
        regex_arg(&a[0], "re-matches")?,
        super::string::text(&a[1], "re-matches")?,
    );
    Ok(match r.captures(s) {
        Some(c)
            if c.get(0)
                .is_some_and(|m| m.start() == 0 && m.end() == s.len()) =>
        {
            groups(&c)
        }
        // A shorter leftmost match does not mean no full match exists: anchor and retry.
        _ => match compile(&format!("^(?:{})$", r.as_str())) {
            Ok(full) => full.captures(s).map(|c| groups(&c)).unwrap_or_default(),
            Err(_) => Value::Nil,
        },
    })
}

/// `clojure.string/split` on a regex or a literal string; drops trailing empty strings.
pub fn split(a: Vec<Value>) -> EvalResult {
    let s = super::string::text(&a[0], "split")?;
    let limit = match a.get(2) {
        Some(v) => Some(super::math::int_arg(v, "split")?),
        None => None,
    };
    let mut parts: Vec<&str> = match (&a[1], limit) {
        (Value::Regex(r), Some(n)) if n > 0 => r
            .splitn(s, usize::try_from(n).unwrap_or(usize::MAX))
            .collect(),
        (Value::Regex(r), _) => r.split(s).collect(),
        (Value::Str(sep), Some(n)) if n > 0 => s
            .splitn(usize::try_from(n).unwrap_or(usize::MAX), &**sep)
            .collect(),
        (Value::Str(sep), _) => s.split(&**sep).collect(),
        (other, _) => return Err(expected("split", "a regex or string separator", other)),
    };
    // Java's split: an empty match at the start yields no leading empty string.
    if s.is_empty() {
        return Ok(Value::vector([Value::str("")]));
    }
    if limit.is_none_or(|n| n <= 0) {
        while parts.len() > 1 && parts.last() == Some(&"") {
            parts.pop();
        }
        if parts.len() == 1 && parts.first() == Some(&"") && !s.is_empty() {
            parts.clear();
        }
    }
    Ok(Value::vector(parts.into_iter().map(Value::str)))
}

/// `replace` / `replace-first` with a string, a regex (`$1` groups) or a fn of the match.
pub fn replace(i: &mut Interp<'_>, a: Vec<Value>, all: bool) -> EvalResult {
    let s = super::string::text(&a[0], "replace")?;
    let limit = if all { 0 } else { 1 };
    match (&a[1], &a[2]) {
        (Value::Str(from), Value::Str(to)) => Ok(Value::str(&if all {
            s.replace(&**from, to)
        } else {
            s.replacen(&**from, to, 1)
        })),
        (Value::Regex(r), Value::Str(to)) => {
            let to = java_replacement(to);
            Ok(Value::str(&r.replacen(s, limit, to.as_str())))
        }
        (Value::Regex(r), f) if f.is_fn() => {
            let mut out = String::new();
            let mut last = 0;
            for (n, c) in r.captures_iter(s).enumerate() {
                if !all && n > 0 {
                    break;
                }
                let Some(m) = c.get(0) else { continue };
                out.push_str(s.get(last..m.start()).unwrap_or(""));
                out.push_str(&crate::print::str_of(&i.apply(f, vec![groups(&c)])?));
                last = m.end();
            }
            out.push_str(s.get(last..).unwrap_or(""));
            Ok(Value::str(&out))
        }
        (Value::Char(c), Value::Char(d)) => Ok(Value::str(&s.replace(*c, &d.to_string()))),
        (from, _) => Err(expected(
            "replace",
            "a string, char or regex pattern with a matching replacement",
            from,
        )),
    }
}

/// Java's `$1` / `\$` replacement syntax → the regex crate's `${1}` / `$$`.
fn java_replacement(to: &str) -> String {
    let mut out = String::new();
    let mut chars = to.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    if n == '$' {
                        out.push_str("$$")
                    } else {
                        out.push(n)
                    }
                }
            }
            '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                out.push_str(&format!("${{{digits}}}"));
            }
            c => out.push(c),
        }
    }
    out
}
