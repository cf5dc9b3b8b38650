//! Conversion between `Value` and JSON.
//!
//! JSON objects become maps with string keys; keywords become strings on the way out. Map keys
//! that are not strings or keywords are printed with `pr-str` (JSON keys must be strings).
//! Non-finite floats have no JSON form: converting one is an error, because silently changing
//! data is worse than refusing it.

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
            Value::Map(m)
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
            for (k, x) in m {
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
    fn non_finite_is_refused() {
        assert!(Value::Float(f64::NAN).to_json().is_err());
    }
}
