//! JSON (under `json/`), with cheshire's names: `parse-string` and `generate-string`.
//!
//! Parsing uses serde_json (strict JSON, nesting capped at its recursion limit of 128) and keeps
//! object key order; keys stay strings unless the second argument is `true` (keywords) or a fn
//! (applied to each key). Generation writes the value directly so map order is preserved:
//! keywords and symbols become strings (`:a/b` → `"a/b"`), sets and seqs become arrays, dates
//! their ISO text; functions, regexes and non-finite floats are errors (JSON cannot hold them).

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::{MapImpl, Value};
use std::fmt::Write;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "parse-string",
        1,
        2,
        "Parses JSON text; string keys, or keywords with `true`, or (f key) with a fn.",
        "(json/parse-string \"{\\\"a\\\":1}\" true) ;=> {:a 1}",
        parse_string
    ),
    def!(
        "generate-string",
        1,
        2,
        "JSON text of a value (map order kept); {:pretty true} indents.",
        "(json/generate-string {:a [1 2]}) ;=> \"{\\\"a\\\":[1,2]}\"",
        generate_string
    ),
];

fn json_err(msg: impl Into<String>) -> EvalError {
    EvalError::new(ErrorKind::ArgumentError, "json", msg)
}

fn parse_string(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let text = match &a[0] {
        Value::Nil => return Ok(Value::Nil),
        v => super::string::text(v, "parse-string")?,
    };
    let parsed: serde_json::Value =
        serde_json::from_str(text).map_err(|e| json_err(format!("invalid JSON: {e}")))?;
    i.tick_n(text.len() as u64 / 16)?;
    let key_fn = a.get(1).cloned().unwrap_or_default();
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || from_json(i, parsed, &key_fn))
}

fn from_json(i: &mut Interp<'_>, j: serde_json::Value, key_fn: &Value) -> EvalResult {
    use serde_json::Value as J;
    Ok(match j {
        J::Null => Value::Nil,
        J::Bool(b) => Value::Bool(b),
        J::Number(n) => match n.as_i64() {
            Some(x) => Value::Int(x),
            None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => Value::str(&s),
        J::Array(xs) => {
            let items: EvalResult<Vec<Value>> =
                xs.into_iter().map(|x| from_json(i, x, key_fn)).collect();
            Value::vector(items?)
        }
        J::Object(m) => {
            let mut out = MapImpl::default();
            for (k, v) in m {
                let key = match key_fn {
                    Value::Nil | Value::Bool(false) => Value::str(&k),
                    Value::Bool(true) => Value::kw(&k),
                    f => i.apply1(f, Value::str(&k))?,
                };
                out.insert(key, from_json(i, v, key_fn)?);
            }
            Value::map(out)
        }
    })
}

fn generate_string(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let pretty = match a.get(1) {
        Some(Value::Map(m)) => m.get(&Value::kw("pretty")).is_some_and(Value::truthy),
        Some(Value::Nil) | None => false,
        Some(other) => return Err(expected("generate-string", "an options map", other)),
    };
    let mut out = String::new();
    let mut w = Writer {
        out: &mut out,
        pretty,
        indent: 0,
    };
    w.value(i, &a[0])?;
    Ok(Value::str(&out))
}

struct Writer<'o> {
    out: &'o mut String,
    pretty: bool,
    indent: usize,
}

impl Writer<'_> {
    /// A JSON string literal: quotes, backslashes and control characters escaped.
    fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                c if u32::from(c) < 0x20 => {
                    let _ = write!(self.out, "\\u{:04x}", u32::from(c));
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }

    fn newline(&mut self) {
        if self.pretty {
            self.out.push('\n');
            self.out.push_str(&"  ".repeat(self.indent));
        }
    }

    fn value(&mut self, i: &mut Interp<'_>, v: &Value) -> EvalResult<()> {
        i.tick()?;
        match v {
            Value::Nil => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => {
                let _ = write!(self.out, "{n}");
            }
            Value::Float(f) if f.is_finite() => self.out.push_str(&crate::print::str_of(v)),
            Value::Str(s) | Value::Keyword(s) | Value::Symbol(s) => self.string(s),
            Value::Char(c) => self.string(&c.to_string()),
            Value::Temporal(_) => self.string(&crate::print::str_of(v)),
            Value::Map(m) => self.map(i, m)?,
            Value::Vector(xs) | Value::List(xs) => {
                let items: Vec<Value> = xs.iter().cloned().collect();
                self.array(i, &items)?;
            }
            Value::Set(_) | Value::Lazy(_) => {
                let items = i.seq_vec(v)?;
                self.array(i, &items)?;
            }
            other => {
                return Err(json_err(format!(
                    "cannot encode {} {} as JSON",
                    other.type_name(),
                    crate::print::pr_str_short(other)
                )));
            }
        }
        Ok(())
    }

    fn array(&mut self, i: &mut Interp<'_>, items: &[Value]) -> EvalResult<()> {
        self.out.push('[');
        self.indent += 1;
        for (k, x) in items.iter().enumerate() {
            if k > 0 {
                self.out.push(',');
            }
            self.newline();
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.value(i, x))?;
        }
        self.indent -= 1;
        if !items.is_empty() {
            self.newline();
        }
        self.out.push(']');
        Ok(())
    }

    fn map(&mut self, i: &mut Interp<'_>, m: &MapImpl) -> EvalResult<()> {
        self.out.push('{');
        self.indent += 1;
        for (n, (k, x)) in m.iter().enumerate() {
            if n > 0 {
                self.out.push(',');
            }
            self.newline();
            match k {
                Value::Str(s) | Value::Keyword(s) | Value::Symbol(s) => self.string(s),
                other => self.string(&crate::print::str_of(other)),
            }
            self.out.push(':');
            if self.pretty {
                self.out.push(' ');
            }
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.value(i, x))?;
        }
        self.indent -= 1;
        if !m.is_empty() {
            self.newline();
        }
        self.out.push('}');
        Ok(())
    }
}
