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

/// What is left to print: a value, or punctuation between and after values.
enum Task<'a> {
    Val(&'a Value),
    Text(&'static str),
}

/// Prints `v` with an explicit work list instead of recursion: data nested 200,000 levels deep
/// (easy to build with `loop`) prints without growing the Rust stack. The list holds at most one
/// reference per element of the value, so its size is bounded by the value's own.
fn write(out: &mut String, v: &Value, readably: bool) {
    let mut todo = vec![Task::Val(v)];
    while let Some(task) = todo.pop() {
        match task {
            Task::Text(t) => out.push_str(t),
            Task::Val(Value::Vector(xs)) => open_seq(out, &mut todo, "[", "]", xs.iter()),
            Task::Val(Value::List(xs)) => open_seq(out, &mut todo, "(", ")", xs.iter()),
            Task::Val(Value::Set(s)) => open_seq(out, &mut todo, "#{", "}", s.iter()),
            Task::Val(Value::Map(m)) => {
                out.push('{');
                todo.push(Task::Text("}"));
                let entries: Vec<_> = m.iter().collect();
                for (i, (k, x)) in entries.into_iter().enumerate().rev() {
                    todo.push(Task::Val(x));
                    todo.push(Task::Text(" "));
                    todo.push(Task::Val(k));
                    if i > 0 {
                        todo.push(Task::Text(", "));
                    }
                }
            }
            Task::Val(v) => write_scalar(out, v, readably),
        }
    }
}

/// Writes `open` now and schedules the elements (space-separated) and `close`.
fn open_seq<'a>(
    out: &mut String,
    todo: &mut Vec<Task<'a>>,
    open: &str,
    close: &'static str,
    xs: impl Iterator<Item = &'a Value>,
) {
    out.push_str(open);
    todo.push(Task::Text(close));
    let items: Vec<&Value> = xs.collect();
    for (i, x) in items.into_iter().enumerate().rev() {
        todo.push(Task::Val(x));
        if i > 0 {
            todo.push(Task::Text(" "));
        }
    }
}

/// Everything but the collections.
fn write_scalar(out: &mut String, v: &Value, readably: bool) {
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
        // Collections are scheduled by `write`; reaching here would be a bug, so print nothing.
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => {}
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
