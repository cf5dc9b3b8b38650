//! The owned data model that crosses process boundaries.
//!
//! `Value` is plain data: no functions, no regexes, no lazy sequences. Maps and sets keep insertion
//! order (printing and JSON are deterministic) but compare and hash as unordered collections, as
//! Clojure's do. `(= 1 1.0)` is false here exactly as in Clojure: integers and floats never compare
//! equal, so `Int` and `Float` hash differently.
//!
//! Invariant: every recursive walk here is bounded by [`MAX_DEPTH`]; deeper values are rejected at
//! the boundary (JSON import, wire decode) so that no walk can exhaust the stack.

use indexmap::{IndexMap, IndexSet};
use std::hash::{Hash, Hasher};

pub mod encoded;
mod json;
mod json_wire;
pub mod print;
pub mod span;
pub mod wire;

pub use encoded::{EncodedValue, TokenWriter};
pub use json::JsonError;
pub use json_wire::JsonTextError;
pub use print::{format_float, pr_str, pr_str_capped, print_str};
pub use span::{Span, SpanItems};

/// Deepest nesting any `Value` may have when it crosses a boundary.
pub const MAX_DEPTH: usize = 512;

/// Insertion-ordered map with unordered equality.
pub type Map = IndexMap<Value, Value>;
/// Insertion-ordered set with unordered equality.
pub type Set = IndexSet<Value>;

/// A PTC-Lisp data value.
#[derive(Debug, Clone, Default)]
pub enum Value {
    #[default]
    Nil,
    Bool(bool),
    /// 64-bit integer; arithmetic overflow is an error, never a wrap.
    Int(i64),
    Float(f64),
    Str(String),
    /// A keyword, stored without its leading `:` (namespace included: `"a/b"`).
    Keyword(String),
    Vector(Vec<Value>),
    /// A sequence (Clojure list or realized lazy seq); equal to a vector with the same elements.
    List(Vec<Value>),
    Map(Box<Map>),
    Set(Box<Set>),
}

impl Value {
    /// A keyword value from its name (without `:`).
    pub fn keyword(name: impl Into<String>) -> Value {
        Value::Keyword(name.into())
    }

    /// A string value.
    pub fn string(s: impl Into<String>) -> Value {
        Value::Str(s.into())
    }

    /// Clojure truthiness: everything but `nil` and `false` is true.
    pub fn truthy(&self) -> bool {
        !matches!(self, Value::Nil | Value::Bool(false))
    }

    /// The elements of a vector or list.
    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::Vector(v) | Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// Looks a key up in a map, finding a string key `"k"` when asked for keyword `:k` (and the
    /// other way round), because context and tool data arrive as JSON with string keys.
    pub fn get_key(&self, key: &Value) -> Option<&Value> {
        let Value::Map(m) = self else { return None };
        if let Some(v) = m.get(key) {
            return Some(v);
        }
        match key {
            Value::Keyword(k) => m.get(&Value::Str(k.clone())),
            Value::Str(s) => m.get(&Value::Keyword(s.clone())),
            _ => None,
        }
    }

    /// A short type name for error messages (`"map"`, `"int"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Keyword(_) => "keyword",
            Value::Vector(_) => "vector",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
        }
    }

    /// Nesting depth (a scalar is 0); stops counting at `limit + 1`. Iterative: safe on any input.
    pub fn depth_exceeds(&self, limit: usize) -> bool {
        let mut stack: Vec<(&Value, usize)> = vec![(self, 0)];
        while let Some((v, d)) = stack.pop() {
            if d > limit {
                return true;
            }
            match v {
                Value::Vector(xs) | Value::List(xs) => stack.extend(xs.iter().map(|x| (x, d + 1))),
                Value::Set(xs) => stack.extend(xs.iter().map(|x| (x, d + 1))),
                Value::Map(m) => {
                    for (k, x) in m.iter() {
                        stack.push((k, d + 1));
                        stack.push((x, d + 1));
                    }
                }
                _ => {}
            }
        }
        false
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Nil, Nil) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            // Bitwise for hashing consistency, except that 0.0 and -0.0 are equal as in Clojure.
            (Float(a), Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Str(a), Str(b)) | (Keyword(a), Keyword(b)) => a == b,
            (Vector(a) | List(a), Vector(b) | List(b)) => a == b,
            (Map(a), Map(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v)),
            (Set(a), Set(b)) => a.len() == b.len() && a.iter().all(|k| b.contains(k)),
            _ => false,
        }
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(self, state);
    }
}

fn hash_value<H: Hasher>(v: &Value, state: &mut H) {
    match v {
        Value::Nil => 0u8.hash(state),
        Value::Bool(b) => b.hash(state),
        Value::Int(i) => i.hash(state),
        Value::Float(f) => {
            let f = if *f == 0.0 { 0.0 } else { *f };
            f.to_bits().hash(state)
        }
        Value::Str(s) => (1u8, s).hash(state),
        Value::Keyword(s) => (2u8, s).hash(state),
        Value::Vector(xs) | Value::List(xs) => {
            3u8.hash(state);
            xs.len().hash(state);
            // Hash a bounded prefix: equal values still hash equal, and nothing recurses deeply.
            for x in xs.iter().take(8) {
                shallow_hash(x).hash(state);
            }
        }
        Value::Map(m) => {
            4u8.hash(state);
            m.len().hash(state);
        }
        Value::Set(s) => {
            5u8.hash(state);
            s.len().hash(state);
        }
    }
}

/// A hash that looks one level deep only, so hashing never recurses into nested collections.
fn shallow_hash(v: &Value) -> u64 {
    use std::collections::hash_map::DefaultHasher;
    let mut h = DefaultHasher::new();
    match v {
        Value::Vector(xs) | Value::List(xs) => (3u8, xs.len()).hash(&mut h),
        Value::Map(m) => (4u8, m.len()).hash(&mut h),
        Value::Set(s) => (5u8, s.len()).hash(&mut h),
        scalar => hash_value(scalar, &mut h),
    }
    h.finish()
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Value {
        Value::Vector(v)
    }
}

impl std::fmt::Display for Value {
    /// Formats like Clojure's `pr-str`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&pr_str(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_and_float_differ_like_clojure() {
        assert_ne!(Value::Int(1), Value::Float(1.0));
        assert_eq!(Value::Float(0.0), Value::Float(-0.0));
    }

    #[test]
    fn maps_compare_unordered_and_list_equals_vector() {
        let mut a = Map::new();
        a.insert(Value::keyword("a"), Value::Int(1));
        a.insert(Value::keyword("b"), Value::Int(2));
        let mut b = Map::new();
        b.insert(Value::keyword("b"), Value::Int(2));
        b.insert(Value::keyword("a"), Value::Int(1));
        assert_eq!(Value::Map(Box::new(a)), Value::Map(Box::new(b)));
        assert_eq!(
            Value::List(vec![Value::Int(1)]),
            Value::Vector(vec![Value::Int(1)])
        );
    }

    #[test]
    fn get_key_falls_back_between_keyword_and_string() {
        let mut m = Map::new();
        m.insert(Value::string("status"), Value::string("open"));
        let m = Value::Map(Box::new(m));
        assert_eq!(
            m.get_key(&Value::keyword("status")),
            Some(&Value::string("open"))
        );
    }

    #[test]
    fn depth_check_is_iterative() {
        let mut v = Value::Nil;
        for _ in 0..100_000 {
            v = Value::Vector(vec![v]);
        }
        assert!(v.depth_exceeds(MAX_DEPTH));
        // Dismantle iteratively so the test itself does not overflow on drop.
        while let Value::Vector(mut xs) = v {
            v = xs.pop().unwrap_or_default();
        }
    }
}
