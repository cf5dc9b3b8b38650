//! One value's tokens inside an encoding, read without decoding them: a large context is taken
//! apart row by row (a signature checks each row on its own, `signature::stream`) while the
//! rows stay bytes.
//!
//! A [`Span`] is the bytes of one whole value (a scalar, or a collection's header and all its
//! items), with their token count. Invariant: a span is only ever cut from an
//! [`EncodedValue`], which is well-formed (see its module), so every span is a well-formed
//! value; reading malformed bytes here can only end an iteration early, never read out of
//! bounds or loop. The walk that finds a value's end is a counter, not a recursion.

use super::Value;
use super::encoded::{EncodedValue, decode_span, kind_of_tag, token_width};
use super::wire::Kind;
use crate::codec::CodecError;

/// One whole value's tokens (see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span<'a> {
    bytes: &'a [u8],
    tokens: u64,
}

impl<'a> Span<'a> {
    /// The whole value of `e`.
    pub fn of(e: &'a EncodedValue) -> Span<'a> {
        let (bytes, tokens) = e.tokens();
        Span { bytes, tokens }
    }

    /// The value's bytes (its tokens, without a count in front).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// How many tokens the value has.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Whether the value is `nil`.
    pub fn is_nil(&self) -> bool {
        self.bytes.first() == Some(&0)
    }

    /// The collection the value is, with its items in order (a map's keys and values
    /// alternate); `None` for a scalar.
    pub fn items(&self) -> Option<(Kind, SpanItems<'a>)> {
        let tag = *self.bytes.first()?;
        let kind = kind_of_tag(tag)?;
        let (n, width) = super::encoded::varint_at(self.bytes, 1);
        let items = if kind == Kind::Map { n * 2 } else { n };
        Some((
            kind,
            SpanItems {
                rest: self.bytes.get(1 + width..).unwrap_or_default(),
                left: items,
            },
        ))
    }

    /// Decodes the value into a [`Value`] tree.
    pub fn to_value(&self) -> Result<Value, CodecError> {
        decode_span(self.bytes, self.tokens)
    }
}

/// The items of a collection's [`Span`], each a span, in order.
#[derive(Debug, Clone)]
pub struct SpanItems<'a> {
    rest: &'a [u8],
    left: u64,
}

impl SpanItems<'_> {
    /// How many items are left (a map's keys and values counted apart).
    pub fn remaining(&self) -> usize {
        usize::try_from(self.left).unwrap_or(usize::MAX)
    }
}

impl<'a> Iterator for SpanItems<'a> {
    type Item = Span<'a>;

    fn next(&mut self) -> Option<Span<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (len, tokens) = value_end(self.rest)?;
        let (bytes, rest) = self.rest.split_at_checked(len)?;
        self.rest = rest;
        Some(Span { bytes, tokens })
    }
}

/// The length in bytes and the token count of the one value `bytes` start with; `None` when
/// the bytes end first. Collections add their items to the values still to read.
fn value_end(bytes: &[u8]) -> Option<(usize, u64)> {
    let mut at = 0usize;
    let mut tokens = 0u64;
    let mut pending = 1u64;
    while pending > 0 {
        let tag = *bytes.get(at)?;
        let width = token_width(bytes, at)?;
        if let Some(kind) = kind_of_tag(tag) {
            let (n, _) = super::encoded::varint_at(bytes, at + 1);
            pending = pending.checked_add(if kind == Kind::Map {
                n.checked_mul(2)?
            } else {
                n
            })?;
        }
        pending -= 1;
        tokens += 1;
        at = at.checked_add(1 + width)?;
    }
    (at <= bytes.len()).then_some((at, tokens))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::value::Map;

    fn sample() -> Value {
        let row = |i: i64| {
            let mut m = Map::new();
            m.insert(Value::Keyword("id".into()), Value::Int(i));
            m.insert(
                Value::Str("tags".into()),
                Value::Vector(vec![Value::Str("a".into()), Value::Nil, Value::Float(1.5)]),
            );
            Value::Map(Box::new(m))
        };
        let mut top = Map::new();
        top.insert(
            Value::Str("rows".into()),
            Value::Vector((0..300).map(row).collect()),
        );
        top.insert(Value::Keyword("n".into()), Value::Int(-70_000));
        top.insert(Value::Nil, Value::List(vec![Value::Bool(true)]));
        Value::Map(Box::new(top))
    }

    /// Every span decodes to the item it stands for, and the spans of a collection cover its
    /// bytes exactly.
    #[test]
    fn spans_decode_to_the_items_they_cut() {
        let v = sample();
        let e = EncodedValue::encode(&v);
        let whole = Span::of(&e);
        assert_eq!(whole.to_value().unwrap(), v);
        let (kind, items) = whole.items().unwrap();
        assert_eq!(kind, Kind::Map);
        let spans: Vec<Span<'_>> = items.collect();
        let Value::Map(m) = &v else { panic!() };
        assert_eq!(spans.len(), m.len() * 2);
        for ((k, x), pair) in m.iter().zip(spans.chunks(2)) {
            assert_eq!(&pair[0].to_value().unwrap(), k);
            assert_eq!(&pair[1].to_value().unwrap(), x);
        }
        let covered: usize = spans.iter().map(|s| s.bytes().len()).sum();
        let tokens: u64 = spans.iter().map(Span::tokens).sum();
        assert_eq!(tokens + 1, whole.tokens());
        assert!(covered < whole.bytes().len());
        let rows = spans[1];
        let (kind, rows) = rows.items().unwrap();
        assert_eq!(kind, Kind::Vector);
        assert_eq!(rows.count(), 300);
        assert!(spans[5].items().is_some());
        assert!(spans[3].items().is_none() && !spans[3].is_nil() && spans[4].is_nil());
    }

    /// Bytes cut short end the iteration; they are never read past.
    #[test]
    fn a_truncated_collection_ends_its_items() {
        let e = EncodedValue::encode(&sample());
        let whole = Span::of(&e);
        for cut in [1, 2, 5, 40, whole.bytes().len() - 1] {
            let short = Span {
                bytes: &whole.bytes()[..cut],
                tokens: whole.tokens(),
            };
            if let Some((_, items)) = short.items() {
                let read: usize = items.map(|s| s.bytes().len()).sum();
                assert!(read < cut);
            }
            assert!(short.to_value().is_err());
        }
    }
}
