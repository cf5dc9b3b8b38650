//! The one boundary between `ptc_shared::Value` (plain data that crosses processes) and the
//! interpreter's `Value`. Functions, regexes and lazy (infinite) seqs have no plain-data form:
//! converting one is an error that names what was found. Characters become one-char strings,
//! dates their ISO-8601 text, exceptions a map with `:message` and `:data`.

use crate::value::{ExInfo, MapImpl, Text, Value};
use ptc_shared::value::{MAX_DEPTH, Map as SMap, Value as S};

/// Plain data → interpreter value.
pub fn from_shared(v: &S) -> Value {
    Importer::default().value(v)
}

/// Strings up to this length are interned while importing: JSON data repeats its keys (and many
/// values) on every row, and one shared `Rc` per distinct string saves an allocation each time.
const INTERN_MAX: usize = 64;

/// Converts plain data into interpreter values, sharing repeated short strings.
#[derive(Default)]
struct Importer {
    strings: std::collections::HashSet<Text, foldhash::fast::RandomState>,
}

impl Importer {
    fn text(&mut self, s: &str) -> Text {
        if s.len() > INTERN_MAX {
            return Text::from(s);
        }
        if let Some(rc) = self.strings.get(s) {
            return rc.clone();
        }
        let rc = Text::from(s);
        self.strings.insert(rc.clone());
        rc
    }

    fn value(&mut self, v: &S) -> Value {
        match v {
            S::Nil => Value::Nil,
            S::Bool(b) => Value::Bool(*b),
            S::Int(i) => Value::Int(*i),
            S::Float(f) => Value::Float(*f),
            S::Str(s) => Value::Str(self.text(s)),
            S::Keyword(k) => Value::Keyword(self.text(k)),
            S::Vector(xs) => Value::vector(xs.iter().map(|x| self.value(x)).collect::<Vec<_>>()),
            S::List(xs) => Value::list(xs.iter().map(|x| self.value(x)).collect::<Vec<_>>()),
            S::Set(xs) => Value::set(xs.iter().map(|x| self.value(x)).collect::<Vec<_>>()),
            S::Map(m) => {
                let mut out = MapImpl::with_capacity(m.len());
                for (k, x) in m {
                    // Keys of a plain-data map are already distinct.
                    let (k, x) = (self.value(k), self.value(x));
                    out.insert_new(k, x);
                }
                Value::map(out)
            }
        }
    }
}

/// Interpreter value → plain data; an error message for values that are not plain data.
pub fn to_shared(v: &Value) -> Result<S, String> {
    to_shared_at(v, 0, false)
}

/// Tool arguments: like [`to_shared`], but keyword map keys become strings (tools speak JSON).
pub fn to_tool_args(v: &Value) -> Result<S, String> {
    to_shared_at(v, 0, true)
}

fn to_shared_at(v: &Value, depth: usize, string_keys: bool) -> Result<S, String> {
    if depth > MAX_DEPTH {
        return Err(format!("value nested deeper than {MAX_DEPTH} levels"));
    }
    // MAX_DEPTH levels fit any 64 KiB+ stack in release, not every thread's in a debug build.
    let conv = |x: &Value| {
        stacker::maybe_grow(32 * 1024, 256 * 1024, || {
            to_shared_at(x, depth + 1, string_keys)
        })
    };
    Ok(match v {
        Value::Nil => S::Nil,
        Value::Bool(b) => S::Bool(*b),
        Value::Int(i) => S::Int(*i),
        Value::Float(f) => S::Float(*f),
        Value::Char(c) => S::Str(c.to_string()),
        Value::Str(s) => S::Str(s.to_string()),
        // Tools speak JSON: keyword values reach them as strings, like keyword keys.
        Value::Keyword(k) if string_keys => S::Str(k.to_string()),
        Value::Keyword(k) => S::Keyword(k.to_string()),
        Value::Symbol(s) => S::Str(s.to_string()),
        Value::Vector(xs) => S::Vector(xs.iter().map(conv).collect::<Result<_, _>>()?),
        Value::List(xs) => S::List(xs.iter().map(conv).collect::<Result<_, _>>()?),
        Value::Set(s) => S::Set(s.iter().map(conv).collect::<Result<_, _>>()?),
        Value::Map(m) => {
            let mut out = SMap::with_capacity(m.len());
            for (k, x) in m.iter() {
                let k = match (string_keys, k) {
                    (true, Value::Keyword(s)) => S::Str(s.to_string()),
                    _ => conv(k)?,
                };
                out.insert(k, conv(x)?);
            }
            S::Map(out)
        }
        Value::Temporal(t) => S::Str(crate::builtins::time::format_temporal(*t)),
        Value::Error(e) => exception_map(e, depth, string_keys)?,
        Value::Lazy(_) => {
            return Err(
                "an infinite lazy sequence cannot be returned; take a finite part with take".into(),
            );
        }
        Value::Fn(_) | Value::Builtin(_) | Value::Native(_) => {
            return Err("a function is not data and cannot leave the program".into());
        }
        Value::Regex(r) => {
            return Err(format!(
                "a regex (#\"{}\") is not data and cannot leave the program",
                r.as_str()
            ));
        }
    })
}

fn exception_map(e: &ExInfo, depth: usize, string_keys: bool) -> Result<S, String> {
    let mut m = SMap::new();
    m.insert(S::Keyword("message".into()), S::Str(e.message.clone()));
    m.insert(
        S::Keyword("data".into()),
        to_shared_at(&e.data, depth + 1, string_keys)?,
    );
    Ok(S::Map(m))
}

/// Whether a value is plain data all the way down (what memory may persist). Looks at most
/// [`MAX_DEPTH`] levels deep: anything deeper cannot be converted anyway (`to_shared` refuses it).
pub fn is_data(v: &Value) -> bool {
    is_data_at(v, 0)
}

fn is_data_at(v: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    let data = |x: &Value| is_data_at(x, depth + 1);
    match v {
        Value::Fn(_) | Value::Builtin(_) | Value::Native(_) | Value::Regex(_) | Value::Lazy(_) => {
            false
        }
        Value::Vector(xs) | Value::List(xs) => xs.iter().all(data),
        Value::Set(s) => s.iter().all(data),
        Value::Map(m) => m.iter().all(|(k, x)| data(k) && data(x)),
        _ => true,
    }
}
