//! Regexes: `#"..."` literals, `re-pattern re-find re-matches re-seq`, and the regex-aware
//! `clojure.string/split`, `replace` and `replace-first`.
//!
//! The engine is the `regex` crate (linear time; no backreferences or lookaround; Unicode-aware
//! `\w \d \s`; see DIVERGENCES-text.md) with a compiled-size limit, so a hostile pattern cannot
//! blow up time or memory. What surrounds the engine is Java's: `split` follows
//! `Pattern.split` (a zero-width match at the start yields no empty first piece, trailing empty
//! pieces are dropped unless a limit is given) and replacement strings follow
//! `Matcher.appendReplacement` (`$1`, `${name}`, `\$`), with its errors. How `re-find` finds
//! a match's groups without the engine where it can is `refind.rs`.

use super::{BuiltinDef, Fast, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::{Coll, PVec, Value};
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
        |_, a| Ok(super::refind::re_find(
            regex_arg(&a[0], "re-find")?,
            str_arg(&a[1], "re-find")?
        )),
        Fast::Two(|r, s| match (r, s) {
            (Value::Regex(r), Value::Str(s)) => Some(Ok(super::refind::re_find(r, s))),
            _ => None,
        })
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
        "All matches, in order, or nil.",
        "(re-seq #\"\\d\" \"a1b2\") ;=> (\"1\" \"2\")",
        |i, a| {
            let (r, s) = (regex_arg(&a[0], "re-seq")?, str_arg(&a[1], "re-seq")?);
            let mut out = Vec::new();
            for c in r.captures_iter(s) {
                i.tick()?;
                out.push(groups(&c));
            }
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

fn regex_arg<'v>(v: &'v Value, op: &str) -> EvalResult<&'v Rc<regex::Regex>> {
    match v {
        Value::Regex(r) => Ok(r),
        other => Err(expected(op, "a regex", other)),
    }
}

fn str_arg<'v>(v: &'v Value, op: &str) -> EvalResult<&'v str> {
    super::string::text(v, op)
}

/// A match as Clojure returns it: the string, or a vector of the match and its groups.
pub(super) fn groups(c: &regex::Captures<'_>) -> Value {
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
        str_arg(&a[1], "re-matches")?,
    );
    Ok(match r.captures(s) {
        Some(c)
            if c.get(0)
                .is_some_and(|m| m.start() == 0 && m.end() == s.len()) =>
        {
            groups(&c)
        }
        // A shorter leftmost match does not mean no full match exists: anchor and retry.
        _ => match anchored(r) {
            Some(full) => full.captures(s).map(|c| groups(&c)).unwrap_or_default(),
            None => Value::Nil,
        },
    })
}

thread_local! {
    /// Anchored versions of the patterns `re-matches` has seen, so a loop over many strings
    /// compiles each pattern once. Cleared when it grows past `ANCHORED_CACHE` entries.
    static ANCHORED: std::cell::RefCell<std::collections::HashMap<String, Rc<regex::Regex>>> =
        std::cell::RefCell::default();
}

const ANCHORED_CACHE: usize = 64;

/// `\A(?:re)\z`, compiled once per pattern.
fn anchored(r: &regex::Regex) -> Option<Rc<regex::Regex>> {
    let src = r.as_str();
    if let Some(hit) = ANCHORED.with(|c| c.borrow().get(src).cloned()) {
        return Some(hit);
    }
    let full = compile(&format!(r"\A(?:{src})\z")).ok()?;
    ANCHORED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= ANCHORED_CACHE {
            c.clear();
        }
        c.insert(src.to_string(), full.clone());
    });
    Some(full)
}

/// `clojure.string/split`: Java's `Pattern.split(s, limit)`.
///
/// A string separator is accepted too and taken literally (Clojure requires a regex).
pub fn split(a: Vec<Value>) -> EvalResult {
    let s = str_arg(&a[0], "split")?;
    let limit = match a.get(2) {
        Some(v) => super::math::int_arg(v, "split")?,
        None => 0,
    };
    let compiled;
    let sep = match &a[1] {
        Value::Regex(r) => Sep::of_regex(r),
        Value::Str(sep) if !sep.is_empty() => Sep::of_text(sep),
        Value::Str(sep) => {
            compiled = compile(&regex::escape(sep)).map_err(|e| EvalError::arg("split", e))?;
            Sep::Regex(&compiled)
        }
        other => return Err(expected("split", "a regex separator", other)),
    };
    Ok(split_with(s, sep, limit))
}

/// `split`'s fast path: a string at a regex, no limit (the usual `(str/split s #" ")`).
pub fn split_fast(s: &Value, sep: &Value) -> Option<EvalResult> {
    match (s, sep) {
        (Value::Str(s), Value::Regex(r)) => Some(Ok(split_with(s, Sep::of_regex(r), 0))),
        _ => None,
    }
}

/// `(first (str/split s sep))` as written in the source (`analyze::fuse`): `split`'s own checks
/// and errors, then its first piece, or nil when it has none.
pub fn split_head(a: Vec<Value>) -> EvalResult {
    match split(a)? {
        Value::Vector(pieces) => Ok(pieces.iter().next().cloned().unwrap_or_default()),
        other => Ok(other),
    }
}

/// [`split_head`]'s fast path: a non-empty string at a plain separator (`#" "`, `#","`) whose
/// first match is past its start gives the text before it (a new text, as `split`'s pieces
/// are), or the whole text (copied) when there is no match; anything else (an empty text, a
/// first piece that is empty, a regex that is not plain text) is left to [`split_head`].
pub fn split_head_fast(s: &Value, sep: &Value) -> Option<EvalResult> {
    let (Value::Str(s), Value::Regex(r)) = (s, sep) else {
        return None;
    };
    let at = match Sep::of_regex(r) {
        Sep::Char(c) => s.find(c),
        Sep::Literal(lit) => s.find(lit),
        Sep::Regex(_) => return None,
    };
    match at {
        None if !s.is_empty() => Some(Ok(Value::str(s))),
        Some(i) if i > 0 => Some(Ok(Value::str(s.get(..i)?))),
        _ => None,
    }
}

/// What `split` cuts at: a regex, or plain text found by search (the usual `#" "` or `#","`,
/// and every string separator; one character by `memchr`), which cuts exactly where the regex
/// would.
#[derive(Clone, Copy)]
enum Sep<'a> {
    Char(char),
    Literal(&'a str),
    Regex(&'a regex::Regex),
}

impl<'a> Sep<'a> {
    /// The usual one-byte separator (`#" "`, `#","`) is told in the caller's code (one table
    /// load); other patterns are read out of line.
    #[inline]
    fn of_regex(r: &'a regex::Regex) -> Sep<'a> {
        match r.as_str().as_bytes() {
            [b] if plain_byte(*b) => Sep::Char(char::from(*b)),
            _ => Sep::of_pattern(r),
        }
    }

    #[inline(never)]
    fn of_pattern(r: &'a regex::Regex) -> Sep<'a> {
        literal_text(r.as_str()).map_or(Sep::Regex(r), Sep::of_text)
    }

    /// A non-empty text, taken literally.
    fn of_text(text: &'a str) -> Sep<'a> {
        let mut chars = text.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => Sep::Char(c),
            _ => Sep::Literal(text),
        }
    }
}

/// The text a pattern matches when it is plain text: not empty, and only characters that are
/// never regex syntax (letters, digits, space and a few punctuation marks). A conservative test:
/// a pattern it refuses still splits correctly, by the regex.
fn literal_text(pattern: &str) -> Option<&str> {
    // The usual one-byte separator (`#" "`, `#","`) is decided by a table, not a char walk.
    if let [b] = pattern.as_bytes() {
        return plain_byte(*b).then_some(pattern);
    }
    (!pattern.is_empty() && pattern.chars().all(plain)).then_some(pattern)
}

/// A character that is never regex syntax.
fn plain(c: char) -> bool {
    c.is_alphanumeric() || " ,;:/@_=!%'\"<>".contains(c)
}

/// [`plain`] of a one-byte pattern's byte.
fn plain_byte(b: u8) -> bool {
    PLAIN_BYTE.get(usize::from(b)).copied().unwrap_or(false)
}

/// [`plain`] of each ASCII byte, for the one-byte patterns.
const PLAIN_BYTE: [bool; 128] = {
    let mut table = [false; 128];
    let mut b: u8 = 0;
    while b < 128 {
        table[b as usize] = b.is_ascii_alphanumeric();
        b += 1;
    }
    let punct = b" ,;:/@_=!%'\"<>";
    let mut i = 0;
    while i < punct.len() {
        table[punct[i] as usize] = true;
        i += 1;
    }
    table
};

/// Up to this many bytes, `split` at an ASCII character walks the text's bytes.
const SHORT_TEXT: usize = 64;

/// Java's `split` of `s` at the matches of `sep`, at most `limit` pieces (all when not positive;
/// trailing empty pieces dropped when 0).
fn split_with(s: &str, sep: Sep<'_>, limit: i64) -> Value {
    if s.is_empty() {
        return Value::vector([Value::str("")]);
    }
    let parts = match sep {
        Sep::Char(c) => match u8::try_from(c).ok().filter(u8::is_ascii) {
            // An ASCII byte never occurs inside another character's UTF-8 bytes: a plain walk
            // over the bytes finds it, cheaper than the char searcher's `memchr` on short texts
            // (names, codes, CSV lines) and slower than it on long ones.
            Some(sep) if s.len() <= SHORT_TEXT => {
                // Each search is a `position` over the rest (a tight loop), not a filter over
                // every byte's index.
                let bytes = s.as_bytes();
                let mut from = 0;
                let at = std::iter::from_fn(move || {
                    let i = from + bytes.get(from..)?.iter().position(|&b| b == sep)?;
                    from = i + 1;
                    Some((i, from))
                });
                pieces(s, at, limit)
            }
            _ => pieces(s, s.match_indices(c).map(|(i, m)| (i, i + m.len())), limit),
        },
        Sep::Literal(lit) => pieces(
            s,
            s.match_indices(lit).map(|(i, m)| (i, i + m.len())),
            limit,
        ),
        Sep::Regex(r) => pieces(s, r.find_iter(s).map(|m| (m.start(), m.end())), limit),
    };
    Value::Vector(Coll::new(parts))
}

/// The pieces of `s` between the `matches` (start, end), as Java's `split` with `limit` cuts them.
fn pieces(s: &str, matches: impl Iterator<Item = (usize, usize)>, limit: i64) -> PVec {
    let max = usize::try_from(limit).unwrap_or(0);
    let mut parts = crate::pvec::Flat::new();
    let mut last = 0;
    for (start, end) in matches {
        if max > 0 && parts.len() + 1 >= max {
            break;
        }
        // A zero-width match at the very start produces no empty leading piece.
        if end == 0 {
            continue;
        }
        parts.push(Value::str(s.get(last..start).unwrap_or("")));
        last = end;
    }
    parts.push(Value::str(s.get(last..).unwrap_or("")));
    if limit == 0 {
        while parts
            .last()
            .is_some_and(|p| matches!(p, Value::Str(t) if t.is_empty()))
        {
            parts.pop();
        }
    }
    PVec::from_flat(parts)
}

/// `replace` / `replace-first` with a string, char or regex pattern.
pub fn replace(i: &mut Interp<'_>, a: Vec<Value>, all: bool) -> EvalResult {
    let op = if all { "replace" } else { "replace-first" };
    let s = str_arg(&a[0], op)?;
    match (&a[1], &a[2]) {
        (Value::Str(from), Value::Str(to)) => Ok(Value::str(&if all {
            s.replace(&**from, to)
        } else {
            s.replacen(&**from, to, 1)
        })),
        (Value::Char(c), Value::Char(d)) => {
            let (from, to) = (c.to_string(), d.to_string());
            Ok(Value::str(&if all {
                s.replace(&from, &to)
            } else {
                s.replacen(&from, &to, 1)
            }))
        }
        (
            Value::Regex(r),
            to @ (Value::Str(_) | Value::Fn(_) | Value::Builtin(_) | Value::Native(_)),
        ) => replace_regex(i, r, s, to, all, op),
        (Value::Regex(_), other) => Err(expected(op, "a string or fn replacement", other)),
        (Value::Str(_), other) => Err(expected(op, "a string replacement", other)),
        (Value::Char(_), other) => Err(expected(op, "a char replacement", other)),
        (from, _) => Err(expected(op, "a string, char or regex pattern", from)),
    }
}

fn replace_regex(
    i: &mut Interp<'_>,
    r: &regex::Regex,
    s: &str,
    to: &Value,
    all: bool,
    op: &str,
) -> EvalResult {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for c in r.captures_iter(s) {
        i.tick()?;
        let Some(m) = c.get(0) else { continue };
        out.push_str(s.get(last..m.start()).unwrap_or(""));
        match to {
            Value::Str(t) => expand_java(&c, r, t, &mut out)?,
            f => match i.apply1(f, groups(&c))? {
                Value::Str(x) => out.push_str(&x),
                other => return Err(expected(op, "a string from the replacement fn", &other)),
            },
        }
        last = m.end();
        if !all {
            break;
        }
    }
    out.push_str(s.get(last..).unwrap_or(""));
    Ok(Value::str(&out))
}

fn bad_replacement(msg: String) -> EvalError {
    EvalError::new(ErrorKind::ArgumentError, "replace", msg)
}

/// Appends Java's expansion of replacement `t` for match `c`: `$n` (as many digits as still
/// name a group), `${name}`, and `\x` for a literal x.
fn expand_java(
    c: &regex::Captures<'_>,
    r: &regex::Regex,
    t: &str,
    out: &mut String,
) -> EvalResult<()> {
    let mut chars = t.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some(x) => out.push(x),
                None => return Err(bad_replacement("character to be escaped is missing".into())),
            },
            '$' => {
                let n = match chars.next() {
                    Some('{') => {
                        let name: String = chars.by_ref().take_while(|&x| x != '}').collect();
                        if r.capture_names().flatten().all(|g| g != name) {
                            return Err(bad_replacement(format!("No group with name {{{name}}}")));
                        }
                        out.push_str(c.name(&name).map_or("", |m| m.as_str()));
                        continue;
                    }
                    Some(d) if d.is_ascii_digit() => group_number(d, &mut chars, c.len())?,
                    _ => return Err(bad_replacement("Illegal group reference".into())),
                };
                out.push_str(c.get(n).map_or("", |m| m.as_str()));
            }
            x => out.push(x),
        }
    }
    Ok(())
}

/// Java's greedy group number: further digits are taken while the number stays a valid group.
fn group_number(
    first: char,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    groups: usize,
) -> EvalResult<usize> {
    let mut n = first.to_digit(10).map_or(0, |d| d as usize);
    if n >= groups {
        return Err(bad_replacement(format!("No group {n}")));
    }
    while let Some(d) = chars.peek().and_then(|x| x.to_digit(10)) {
        let next = n * 10 + d as usize;
        if next >= groups {
            break;
        }
        n = next;
        chars.next();
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The literal fast path of `split` cuts every string as the regex engine does.
    #[test]
    fn the_one_byte_table_answers_as_the_plain_test() {
        for b in 0u8..=255 {
            let pattern = char::from(b).to_string();
            let want = plain(char::from(b)).then_some(pattern.as_str());
            assert_eq!(literal_text(&pattern), want, "{b}");
        }
    }

    #[test]
    fn literal_split_answers_as_the_regex() {
        let long = "a b,c@d, ab aa é x ".repeat(4);
        let texts = [
            "",
            " ",
            "a",
            "a b",
            " a b ",
            "a  b",
            "a,b,,c,,",
            ",,a",
            "ab@cd@",
            "aaa",
            "ééxéé",
            "x",
            &long,
            long.get(1..).unwrap_or(""),
        ];
        assert!(
            texts.iter().any(|t| t.len() > SHORT_TEXT),
            "both walks are checked"
        );
        let seps = [" ", ",", "@", "a", "aa", "é", "x", ", ", "ab"];
        let mut checked = 0;
        for sep in seps {
            let r = compile(sep).unwrap_or_else(|e| panic!("{sep}: {e}"));
            assert_eq!(literal_text(r.as_str()), Some(sep), "{sep} is plain text");
            for text in texts {
                for limit in [-1, 0, 1, 2, 3] {
                    let general = split_with(text, Sep::Regex(&r), limit);
                    for fast in [Sep::Literal(sep), Sep::of_text(sep), Sep::of_regex(&r)] {
                        let fast = split_with(text, fast, limit);
                        assert_eq!(fast, general, "(split {text:?} #{sep:?} {limit})");
                    }
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 9 * 14 * 5);
        assert!(matches!(Sep::of_text("é"), Sep::Char('é')));
        assert!(matches!(Sep::of_text("ab"), Sep::Literal("ab")));
        for syntax in [
            ".", "a+", "\\s", "[,]", "(?i)a", "a|b", "^a", "a$", "-", "#", "~", "&", "",
        ] {
            assert_eq!(literal_text(syntax), None, "{syntax} is not plain text");
        }
    }
}
