//! Printing interpreter values: `pr-str` (readable) and `str` (strings and chars bare).
//!
//! Plain data prints exactly as `ptc_shared::value::pr_str` does; the extra kinds print the way
//! Clojure shows them (`\a`, `#"re"`, `#function[...]`), and a lazy seq prints its realized
//! prefix followed by `...` (only infinite seqs stay lazy).

use crate::value::Value;
use ptc_shared::value::{format_float, print::write_quoted};
use std::fmt::Write;

/// Clojure's `pr-str`.
pub fn pr_str(v: &Value) -> String {
    let mut s = String::new();
    write(&mut s, v, true);
    s
}

/// Clojure's `str` of one value: nil is "", strings and chars bare; anything else is its
/// `toString`, which for collections is the readable form (`(str ["a"])` is `["a"]`).
pub fn str_of(v: &Value) -> String {
    match v {
        Value::Nil => String::new(),
        Value::Str(s) => s.to_string(),
        Value::Char(c) => c.to_string(),
        // Pattern.toString is the bare source.
        Value::Regex(r) => r.as_str().to_string(),
        // Double.toString, not the reader's ##Inf / ##NaN.
        Value::Float(f) if f.is_nan() => "NaN".into(),
        Value::Float(f) if f.is_infinite() => {
            if *f > 0.0 { "Infinity" } else { "-Infinity" }.into()
        }
        other => pr_str(other),
    }
}

/// `print`/`println` rendering: like `str`, but nil prints as "nil".
pub fn print_of(v: &Value) -> String {
    let mut s = String::new();
    write(&mut s, v, false);
    s
}

/// `pr-str` cut to 80 characters, for error messages.
pub fn pr_str_short(v: &Value) -> String {
    let s = pr_str(v);
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(77).collect::<String>())
    } else {
        s
    }
}

fn write(out: &mut String, v: &Value, readably: bool) {
    match v {
        Value::Nil => out.push_str("nil"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&format_float(*f)),
        Value::Char(c) if readably => write_char(out, *c),
        Value::Char(c) => out.push(*c),
        Value::Str(s) if readably => write_quoted(out, s),
        Value::Str(s) => out.push_str(s),
        Value::Keyword(k) => {
            out.push(':');
            out.push_str(k);
        }
        Value::Symbol(s) => out.push_str(s),
        Value::Vector(xs) => write_seq(out, "[", "]", xs.iter(), readably),
        Value::List(xs) => write_seq(out, "(", ")", xs.iter(), readably),
        Value::Set(s) => write_seq(out, "#{", "}", s.iter(), readably),
        Value::Map(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(out, k, readably);
                out.push(' ');
                write(out, x, readably);
            }
            out.push('}');
        }
        Value::Lazy(_) => out.push_str("(...)"),
        Value::Fn(l) => {
            let _ = write!(
                out,
                "#function[{}]",
                l.template.name.as_deref().unwrap_or("fn")
            );
        }
        Value::Builtin(b) => {
            let _ = write!(out, "#function[{}]", b.name);
        }
        Value::Native(_) => out.push_str("#function[fn]"),
        Value::Regex(r) => {
            out.push_str("#\"");
            out.push_str(r.as_str());
            out.push('"');
        }
        Value::Error(e) => {
            let _ = write!(out, "#error {{:message {:?}}}", e.message);
        }
        Value::Temporal(t) => out.push_str(&crate::builtins::time::format_temporal(*t)),
    }
}

fn write_char(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\newline"),
        ' ' => out.push_str("\\space"),
        '\t' => out.push_str("\\tab"),
        '\r' => out.push_str("\\return"),
        c => {
            out.push('\\');
            out.push(c);
        }
    }
}

fn write_seq<'a>(
    out: &mut String,
    open: &str,
    close: &str,
    xs: impl Iterator<Item = &'a Value>,
    readably: bool,
) {
    out.push_str(open);
    for (i, x) in xs.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write(out, x, readably);
    }
    out.push_str(close);
}
