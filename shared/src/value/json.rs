//! Conversion between `Value` and JSON.
//!
//! JSON objects become maps with string keys; keywords become strings on the way out. Map keys
//! that are not strings or keywords are printed with `pr-str` (JSON keys must be strings).
//! Non-finite floats have no JSON form: converting one is an error, because silently changing
//! data is worse than refusing it.
//!
//! [`Value::from_json_text`] reads JSON text straight into a `Value` (no `serde_json::Value`
//! tree in between) with exactly the rules of [`Value::from_json`]: the same numbers refused,
//! the same depth bound, a repeated key keeping its first position and its last value. Large
//! contexts arrive as text (`ptc mcp`, `--context FILE`), and the tree costs as much again.

use super::{MAX_DEPTH, Map, Value, print::pr_str};
use serde_json::Value as Json;

/// Why a value could not be converted to or from JSON.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum JsonError {
    #[error("float {0} has no JSON representation")]
    NonFinite(f64),
    #[error("value nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("JSON number {0} is out of range")]
    Number(String),
}

impl Value {
    /// Converts JSON to a value: objects become maps with string keys.
    pub fn from_json(j: &Json) -> Result<Value, JsonError> {
        from_json_at(j, 0)
    }

    /// Converts a value to JSON: keywords become strings, sets and lists become arrays.
    pub fn to_json(&self) -> Result<Json, JsonError> {
        to_json_at(self, 0)
    }
}

impl Value {
    /// Reads JSON text into a value, as `from_json(&serde_json::from_slice(text)?)` would,
    /// without the intermediate tree.
    pub fn from_json_text(text: &[u8]) -> Result<Value, serde_json::Error> {
        use serde::de::DeserializeSeed;
        let mut de = serde_json::Deserializer::from_slice(text);
        let v = Direct { depth: 0 }.deserialize(&mut de)?;
        de.end()?;
        Ok(v)
    }

    /// Reads one JSON value from any serde deserializer (a field of a larger message), with
    /// the rules of [`Value::from_json_text`].
    pub fn deserialize_json<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        use serde::de::DeserializeSeed;
        Direct { depth: 0 }.deserialize(d)
    }
}

/// Builds a `Value` from any JSON deserializer, `depth` levels down.
struct Direct {
    depth: usize,
}

impl<'de> serde::de::DeserializeSeed<'de> for Direct {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(serde::de::Error::custom(JsonError::TooDeep));
        }
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Direct {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::Int)
            .map_err(|_| E::custom(JsonError::Number(u.to_string())))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Str(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::Str(s))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let child = self.depth + 1;
        // The hint is what the peer claims: bounded, so it cannot reserve memory for it.
        let mut xs = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(x) = seq.next_element_seed(Direct { depth: child })? {
            xs.push(x);
        }
        Ok(Value::Vector(xs))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let child = self.depth + 1;
        let mut m = Map::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some(k) = map.next_key::<String>()? {
            let x = map.next_value_seed(Direct { depth: child })?;
            m.insert(Value::Str(k), x);
        }
        Ok(Value::Map(Box::new(m)))
    }
}

fn from_json_at(j: &Json, depth: usize) -> Result<Value, JsonError> {
    if depth > MAX_DEPTH {
        return Err(JsonError::TooDeep);
    }
    Ok(match j {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if n.is_u64() {
                return Err(JsonError::Number(n.to_string()));
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(xs) => Value::Vector(
            xs.iter()
                .map(|x| from_json_at(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(o) => {
            let mut m = Map::with_capacity(o.len());
            for (k, x) in o {
                m.insert(Value::Str(k.clone()), from_json_at(x, depth + 1)?);
            }
            Value::Map(Box::new(m))
        }
    })
}

fn to_json_at(v: &Value, depth: usize) -> Result<Json, JsonError> {
    if depth > MAX_DEPTH {
        return Err(JsonError::TooDeep);
    }
    Ok(match v {
        Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(f) => {
            Json::Number(serde_json::Number::from_f64(*f).ok_or(JsonError::NonFinite(*f))?)
        }
        Value::Str(s) | Value::Keyword(s) => Json::String(s.clone()),
        Value::Vector(xs) | Value::List(xs) => Json::Array(
            xs.iter()
                .map(|x| to_json_at(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Set(xs) => Json::Array(
            xs.iter()
                .map(|x| to_json_at(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(m) => {
            let mut o = serde_json::Map::with_capacity(m.len());
            for (k, x) in m.iter() {
                let key = match k {
                    Value::Str(s) | Value::Keyword(s) => s.clone(),
                    other => pr_str(other),
                };
                o.insert(key, to_json_at(x, depth + 1)?);
            }
            Json::Object(o)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_order_and_turns_keywords_into_strings() {
        let j: Json =
            serde_json::from_str(r#"{"b":1,"a":[true,null,2.5,"x"]}"#).unwrap_or_default();
        let v = Value::from_json(&j).unwrap_or_default();
        assert_eq!(
            super::super::pr_str(&v),
            r#"{"b" 1, "a" [true nil 2.5 "x"]}"#
        );
        assert_eq!(v.to_json(), Ok(j));
        assert_eq!(Value::keyword("k").to_json(), Ok(Json::String("k".into())));
    }

    #[test]
    fn text_reads_exactly_as_the_tree_does() {
        let cases = [
            r#"{"b":1,"a":[true,null,2.5,"x\u00e9\n"],"b":{"c":-9223372036854775808}}"#,
            r#"[1e2, 0.5, -0.0, 9223372036854775807, {}, [], ""]"#,
            "\"plain\"",
            "  [ {\"k\" : [ [ ] ] } ]  ",
        ];
        for text in cases {
            let tree: Json = serde_json::from_str(text).unwrap_or_default();
            assert_eq!(
                Value::from_json_text(text.as_bytes()).ok(),
                Value::from_json(&tree).ok(),
                "{text}"
            );
        }
    }

    #[test]
    fn text_refuses_what_the_tree_refuses() {
        let err = |t: &str| {
            Value::from_json_text(t.as_bytes())
                .err()
                .map(|e| e.to_string())
        };
        assert!(err("18446744073709551615").is_some_and(|e| e.contains("out of range")));
        assert!(err("[1] x").is_some());
        assert!(err("{\"a\":").is_some());
        // serde_json's parser stops at 128 levels; the bound itself, as in `from_json`, is met
        // through a tree (no recursion limit there): MAX_DEPTH levels pass, one more does not.
        use serde::de::DeserializeSeed;
        let nest = |n: usize| (0..n).fold(Json::Array(vec![]), |j, _| Json::Array(vec![j]));
        for (n, ok) in [(MAX_DEPTH, true), (MAX_DEPTH + 1, false)] {
            let j = nest(n);
            let direct = Direct { depth: 0 }.deserialize(&j).is_ok();
            assert_eq!((direct, Value::from_json(&j).is_ok()), (ok, ok), "{n}");
        }
    }

    #[test]
    fn non_finite_is_refused() {
        assert!(Value::Float(f64::NAN).to_json().is_err());
    }
}
