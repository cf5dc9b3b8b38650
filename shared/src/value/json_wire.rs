//! JSON text straight into the wire encoding: [`EncodedValue::from_json_text`].
//!
//! A JSON context (`ptc run --context FILE`, a client's JSON) is read token by token into a
//! [`TokenWriter`]: no `Value` tree and no `serde_json::Value` tree is ever built, so a
//! multi-megabyte file costs its text and its encoding, about three quarters of the text.
//!
//! The result is byte for byte what encoding [`Value::from_json_text`]'s value gives, error for
//! error: the same parser (serde_json, so the same numbers refused and the same recursion
//! bound), the same depth bound, object keys as strings, and a repeated key keeping its first
//! position and its last value (`json_wire_tests` checks this against that path). What differs
//! is the error: typed, naming the byte offset where reading stopped. The encoding is bounded
//! (`max_bytes`): past it, reading stops with [`JsonTextError::TooLarge`].

use super::encoded::{EncodedValue, TokenWriter};
use super::wire::Kind;
use super::{JsonError, MAX_DEPTH};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::collections::HashMap;
use std::fmt;

/// Why JSON text could not be read into an encoded value; `offset` is the byte of the text
/// where reading stopped.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum JsonTextError {
    #[error("invalid JSON at byte {offset} (line {line}, column {column}): {message}")]
    Syntax {
        offset: usize,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "JSON nested too deeply at byte {offset} (at most {MAX_DEPTH} levels, 128 in JSON text)"
    )]
    TooDeep { offset: usize },
    #[error("JSON number {number} at byte {offset} is out of range (integers are 64-bit signed)")]
    Number { number: String, offset: usize },
    #[error("JSON data larger than {max} bytes encoded (reading stopped at byte {offset})")]
    TooLarge { max: usize, offset: usize },
}

impl EncodedValue {
    /// Reads JSON text into its wire encoding, as `EncodedValue::encode(&Value::from_json_text
    /// (text)?)` would, without either tree; an encoding over `max_bytes` is refused.
    pub fn from_json_text(text: &[u8], max_bytes: usize) -> Result<EncodedValue, JsonTextError> {
        // Text is the larger: this one reservation is all the buffer needs, and its untouched
        // tail is never resident.
        let room = text.len().min(max_bytes).saturating_add(64);
        let mut out = Out {
            w: TokenWriter::with_capacity(room),
            max: max_bytes,
            failure: None,
        };
        let mut de = serde_json::Deserializer::from_slice(text);
        let read = ValueSeed {
            out: &mut out,
            depth: 0,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end());
        match read {
            Ok(()) => Ok(out.w.finish()),
            Err(e) => Err(typed(text, &e, out.failure, max_bytes)),
        }
    }
}

impl EncodedValue {
    /// Reads one JSON value from any serde deserializer (a field of a larger message, a
    /// `serde_json::Value`) into its wire encoding, with the rules of
    /// [`EncodedValue::from_json_text`] and no tree in between; an encoding over `max_bytes`
    /// is refused. The error is the deserializer's, carrying the same messages.
    pub fn deserialize_json<'de, D: serde::Deserializer<'de>>(
        d: D,
        max_bytes: usize,
    ) -> Result<EncodedValue, D::Error> {
        let mut out = Out {
            w: TokenWriter::new(),
            max: max_bytes,
            failure: None,
        };
        ValueSeed {
            out: &mut out,
            depth: 0,
        }
        .deserialize(d)?;
        Ok(out.w.finish())
    }
}

/// What stopped the read, beyond serde_json's own errors.
enum Failure {
    TooDeep,
    Number(String),
    TooLarge,
}

/// The writer, its bound, and why it stopped (serde_json carries only a message).
struct Out {
    w: TokenWriter,
    max: usize,
    failure: Option<Failure>,
}

impl Out {
    fn fail<E: serde::de::Error>(&mut self, f: Failure) -> E {
        let msg = match &f {
            Failure::TooDeep => JsonError::TooDeep.to_string(),
            Failure::Number(n) => JsonError::Number(n.clone()).to_string(),
            Failure::TooLarge => format!("encoded data over {} bytes", self.max),
        };
        self.failure = Some(f);
        E::custom(msg)
    }

    /// Checked after every token: the encoding never grows far past its bound.
    fn check<E: serde::de::Error>(&mut self) -> Result<(), E> {
        if self.w.encoded_len() > self.max {
            return Err(self.fail(Failure::TooLarge));
        }
        Ok(())
    }
}

/// One JSON value, `depth` levels down, written as tokens.
struct ValueSeed<'a> {
    out: &'a mut Out,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(self.out.fail(Failure::TooDeep));
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.out.w.nil();
        self.out.check()
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<(), E> {
        self.out.w.bool(b);
        self.out.check()
    }
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<(), E> {
        self.out.w.int(i);
        self.out.check()
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<(), E> {
        match i64::try_from(u) {
            Ok(i) => self.visit_i64(i),
            Err(_) => Err(self.out.fail(Failure::Number(u.to_string()))),
        }
    }
    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<(), E> {
        self.out.w.float(f);
        self.out.check()
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        self.out.w.str(s);
        self.out.check()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let h = self.out.w.open(Kind::Vector);
        let mut n = 0usize;
        let depth = self.depth + 1;
        while seq
            .next_element_seed(ValueSeed {
                out: &mut *self.out,
                depth,
            })?
            .is_some()
        {
            n += 1;
        }
        self.out.w.close(h, n);
        self.out.check()
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let h = self.out.w.open(Kind::Map);
        let mut keys = Keys::default();
        let depth = self.depth + 1;
        loop {
            let key_at = self.out.w.position();
            if map.next_key_seed(KeySeed(&mut *self.out))?.is_none() {
                break;
            }
            let repeated = keys.find(&self.out.w, key_at);
            if repeated.is_some() {
                self.out.w.truncate(key_at);
            } else {
                keys.push(&self.out.w, key_at);
            }
            let value_at = self.out.w.position();
            let seed = ValueSeed {
                out: &mut *self.out,
                depth,
            };
            map.next_value_seed(seed)?;
            if let Some(j) = repeated {
                keys.replace_value(&mut self.out.w, j, value_at);
            }
        }
        self.out.w.close(h, keys.entries.len());
        self.out.check()
    }
}

/// An object key: always a string in JSON.
struct KeySeed<'a>(&'a mut Out);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        self.0.w.str(s);
        self.0.check()
    }
}

/// Objects with more keys than this find repeated keys through a hash index, not a scan.
const SCAN_KEYS: usize = 16;

/// The entries of one object being written: where each key and each value starts.
#[derive(Default)]
struct Keys {
    /// `(key_at, value_at)` for each distinct key, in first-seen order.
    entries: Vec<(usize, usize)>,
    /// Key encodings to entry numbers, once the object is large.
    index: Option<HashMap<Vec<u8>, usize>>,
}

impl Keys {
    /// The entry whose key is the one just written at `key_at`.
    fn find(&self, w: &TokenWriter, key_at: usize) -> Option<usize> {
        let key = w.written_since(key_at);
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self
                .entries
                .iter()
                .position(|&(k, v)| w.written(k, v) == key),
        }
    }

    /// Records the key just written at `key_at` as a new entry.
    fn push(&mut self, w: &TokenWriter, key_at: usize) {
        self.entries.push((key_at, w.position()));
        let n = self.entries.len() - 1;
        if let Some(index) = &mut self.index {
            index.insert(w.written_since(key_at).to_vec(), n);
        } else if self.entries.len() > SCAN_KEYS {
            let index = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, &(k, v))| (w.written(k, v).to_vec(), i))
                .collect();
            self.index = Some(index);
        }
    }

    /// A repeated key's value, just written at `from`, replaces entry `j`'s value (the key
    /// keeps its first position); later entries move with it.
    fn replace_value(&mut self, w: &mut TokenWriter, j: usize, from: usize) {
        let Some(&(_, at)) = self.entries.get(j) else {
            return;
        };
        let end = self.entries.get(j + 1).map_or(from, |&(k, _)| k);
        let delta = w.move_into(from, at, end);
        for e in self.entries.iter_mut().skip(j + 1) {
            e.0 = e.0.saturating_add_signed(delta);
            e.1 = e.1.saturating_add_signed(delta);
        }
    }
}

/// serde_json's error, typed, with the byte offset of its line and column.
fn typed(
    text: &[u8],
    e: &serde_json::Error,
    failure: Option<Failure>,
    max: usize,
) -> JsonTextError {
    let offset = offset_of(text, e.line(), e.column());
    match failure {
        Some(Failure::TooDeep) => JsonTextError::TooDeep { offset },
        Some(Failure::Number(number)) => JsonTextError::Number { number, offset },
        Some(Failure::TooLarge) => JsonTextError::TooLarge { max, offset },
        None => {
            let full = e.to_string();
            if full.starts_with("recursion limit exceeded") {
                return JsonTextError::TooDeep { offset };
            }
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            JsonTextError::Syntax {
                offset,
                line: e.line(),
                column: e.column(),
                message: full.strip_suffix(&suffix).unwrap_or(&full).to_string(),
            }
        }
    }
}

/// The byte at serde_json's `line` (1-based) and `column` (bytes into that line).
fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let start = match line {
        0 | 1 => 0,
        n => text
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(n - 2)
            .map_or(text.len(), |(i, _)| i + 1),
    };
    start.saturating_add(column).min(text.len())
}

#[cfg(test)]
#[path = "json_wire_tests.rs"]
mod tests;
