//! Serde for `Value` as a flat, pre-order token list.
//!
//! Derived serde would recurse once per nesting level while decoding, so a hostile frame of a
//! few megabytes of `[[[[...` could overflow the stack. Tokens are decoded with an explicit stack
//! instead, and nesting beyond [`MAX_DEPTH`] is refused.

use super::{MAX_DEPTH, Map, Set, Value};
use serde::de::Error as _;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Serialize, Deserialize)]
enum Token {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Keyword(String),
    /// Collection headers carry their element count; map counts are entries (2 values each).
    Vector(u32),
    List(u32),
    Map(u32),
    Set(u32),
}

#[derive(Serialize)]
enum TokenRef<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    Keyword(&'a str),
    Vector(u32),
    List(u32),
    Map(u32),
    Set(u32),
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Length-prefixed formats (bincode) need the token count up front.
        let mut seq = s.serialize_seq(Some(token_count(self)))?;
        let mut stack = vec![self];
        while let Some(v) = stack.pop() {
            let tok = match v {
                Value::Nil => TokenRef::Nil,
                Value::Bool(b) => TokenRef::Bool(*b),
                Value::Int(i) => TokenRef::Int(*i),
                Value::Float(f) => TokenRef::Float(*f),
                Value::Str(x) => TokenRef::Str(x),
                Value::Keyword(x) => TokenRef::Keyword(x),
                Value::Vector(xs) => {
                    stack.extend(xs.iter().rev());
                    TokenRef::Vector(count(xs.len()))
                }
                Value::List(xs) => {
                    stack.extend(xs.iter().rev());
                    TokenRef::List(count(xs.len()))
                }
                Value::Set(xs) => {
                    stack.extend(xs.iter().rev());
                    TokenRef::Set(count(xs.len()))
                }
                Value::Map(m) => {
                    for (k, x) in m.iter().rev() {
                        stack.push(x);
                        stack.push(k);
                    }
                    TokenRef::Map(count(m.len()))
                }
            };
            seq.serialize_element(&tok)?;
        }
        seq.end()
    }
}

/// The number of tokens `v` serializes to (one per value, map keys included). Iterative.
fn token_count(v: &Value) -> usize {
    let mut n = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        match v {
            Value::Vector(xs) | Value::List(xs) => stack.extend(xs.iter()),
            Value::Set(xs) => stack.extend(xs.iter()),
            Value::Map(m) => m.iter().for_each(|(k, x)| stack.extend([k, x])),
            _ => {}
        }
    }
    n
}

/// A collection being rebuilt: its kind, the items still expected, and those read so far.
struct Open {
    kind: Token,
    remaining: usize,
    items: Vec<Value>,
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let tokens = Vec::<Token>::deserialize(d)?;
        build(tokens).map_err(D::Error::custom)
    }
}

fn build(tokens: Vec<Token>) -> Result<Value, &'static str> {
    let mut stack: Vec<Open> = Vec::new();
    let mut tokens = tokens.into_iter();
    loop {
        let tok = tokens.next().ok_or("value token stream ended early")?;
        let mut done = match tok {
            Token::Nil => Value::Nil,
            Token::Bool(b) => Value::Bool(b),
            Token::Int(i) => Value::Int(i),
            Token::Float(f) => Value::Float(f),
            Token::Str(s) => Value::Str(s),
            Token::Keyword(s) => Value::Keyword(s),
            Token::Vector(n) | Token::List(n) | Token::Set(n) | Token::Map(n) => {
                let n = usize::try_from(n).map_err(|_| "collection too large")?;
                let remaining = if matches!(tok, Token::Map(_)) {
                    n * 2
                } else {
                    n
                };
                if stack.len() >= MAX_DEPTH {
                    return Err("value nested too deeply");
                }
                // Capacity is bounded by the tokens actually present, never by the header.
                let items = Vec::with_capacity(remaining.min(tokens.len()));
                stack.push(Open {
                    kind: tok,
                    remaining,
                    items,
                });
                match close_finished(&mut stack)? {
                    Some(v) => v,
                    None => continue,
                }
            }
        };
        loop {
            let Some(top) = stack.last_mut() else {
                return if tokens.next().is_some() {
                    Err("trailing value tokens")
                } else {
                    Ok(done)
                };
            };
            top.items.push(done);
            top.remaining -= 1;
            match close_finished(&mut stack)? {
                Some(v) => done = v,
                None => break,
            }
        }
    }
}

/// Pops the top collection if it has all its items, returning it as a value.
fn close_finished(stack: &mut Vec<Open>) -> Result<Option<Value>, &'static str> {
    match stack.last() {
        Some(top) if top.remaining == 0 => {}
        _ => return Ok(None),
    }
    let Some(open) = stack.pop() else {
        return Ok(None);
    };
    Ok(Some(match open.kind {
        Token::Vector(_) => Value::Vector(open.items),
        Token::List(_) => Value::List(open.items),
        Token::Set(_) => Value::Set(open.items.into_iter().collect::<Set>()),
        _ => {
            let mut m = Map::with_capacity(open.items.len() / 2);
            let mut it = open.items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                m.insert(k, v);
            }
            Value::Map(m)
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(v: &Value) -> Value {
        let json = serde_json::to_string(v).unwrap_or_default();
        serde_json::from_str(&json).unwrap_or_default()
    }

    #[test]
    fn nested_values_round_trip() {
        let mut m = Map::new();
        m.insert(
            Value::keyword("a"),
            Value::List(vec![Value::Int(1), Value::Float(2.5)]),
        );
        m.insert(
            Value::string("s"),
            Value::Set([Value::Nil].into_iter().collect()),
        );
        let v = Value::Vector(vec![
            Value::Map(m),
            Value::Vector(vec![]),
            Value::Bool(true),
        ]);
        assert_eq!(round_trip(&v), v);
        assert_eq!(
            crate::value::pr_str(&round_trip(&v)),
            crate::value::pr_str(&v)
        );
    }

    #[test]
    fn too_deep_and_truncated_streams_are_refused() {
        let deep = vec![Token::Vector(1); MAX_DEPTH + 2];
        assert!(build(deep).is_err());
        assert!(build(vec![Token::Vector(2), Token::Nil]).is_err());
        assert!(build(vec![Token::Nil, Token::Nil]).is_err());
        assert_eq!(build(vec![Token::Map(0)]), Ok(Value::Map(Map::new())));
    }
}
