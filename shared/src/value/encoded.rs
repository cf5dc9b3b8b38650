//! A value already in the wire encoding: the token stream `Value`'s `Serialize` writes (see
//! [`super::wire`]), held as bytes.
//!
//! A request's context is carried this way from where it enters (a JSON file, a client's
//! `Value`, a client's frame) to the runner, which decodes it straight into its own values: a
//! multi-megabyte context is never a `Value` tree in the client, the daemon or the engine, and
//! its size (what `max_context_bytes` counts) is the length of its bytes, known without a walk.
//!
//! On the wire an [`EncodedValue`] is one byte string (its length, then the tokens), so a frame
//! carries it with one copy. Invariants: the bytes are always one complete, well-formed token
//! stream no deeper than [`super::MAX_DEPTH`], exactly as [`TokenWriter`] or bincode would write it
//! (an encoding is built by [`TokenWriter`], or checked by decoding when it comes from a peer);
//! equal values written the same way have equal bytes.

use super::wire::{Assembler, Items, Kind, Token, TokenSink};
use super::{Value, print::pr_str};
use crate::codec::{CodecError, raw};
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

/// A value in the wire encoding (see the module header).
#[derive(Clone)]
pub struct EncodedValue {
    /// [`PREFIX`] bytes of room, the token count right-aligned in them from `start`, then the
    /// tokens: the count is known only at the end, and this way it costs no copy.
    buf: Vec<u8>,
    start: usize,
}

/// Room for the longest varint token count.
const PREFIX: usize = 9;

impl EncodedValue {
    /// Encodes `v` (an iterative walk: no recursion, whatever its depth).
    pub fn encode(v: &Value) -> EncodedValue {
        let mut w = TokenWriter::new();
        w.value(v);
        w.finish()
    }

    /// The tokens, without the count in front (what a [`super::span::Span`] cuts), and that
    /// count.
    pub(super) fn tokens(&self) -> (&[u8], u64) {
        let bytes = self.as_bytes();
        let (count, count_width) = varint_at(bytes, 0);
        (bytes.get(count_width..).unwrap_or_default(), count)
    }

    /// Checks that `bytes` are one well-formed token stream (as a peer's frame must be) and
    /// keeps them.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<EncodedValue, CodecError> {
        decode_tokens(&bytes, Check)?;
        Ok(EncodedValue {
            buf: bytes,
            start: 0,
        })
    }

    /// The encoding: what a frame carries, and what the runner decodes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }

    /// Encoded bytes: the size `max_context_bytes` counts (`codec::encoded_len` of the value).
    pub fn encoded_len(&self) -> u64 {
        self.as_bytes().len() as u64
    }

    /// Whether this is `nil` (an absent context).
    pub fn is_nil(&self) -> bool {
        self.as_bytes() == NIL
    }

    /// Whether this is a map (what a context must be): the first token's tag, after the count.
    pub fn is_map(&self) -> bool {
        let bytes = self.as_bytes();
        let (_, count_width) = varint_at(bytes, 0);
        bytes.get(count_width) == Some(&kind_tag(Kind::Map))
    }

    /// Decodes into whatever `sink` builds (the runner: interpreter values).
    pub fn decode_with<S: TokenSink>(&self, sink: S) -> Result<S::Out, CodecError> {
        decode_tokens(self.as_bytes(), sink)
    }

    /// Decodes into a [`Value`] tree.
    pub fn to_value(&self) -> Result<Value, CodecError> {
        decode_tokens(self.as_bytes(), Plain)
    }
}

/// `nil`: one token, the `Nil` tag.
const NIL: &[u8] = &[1, 0];

/// Equal encodings, wherever their bytes sit in the buffer.
impl PartialEq for EncodedValue {
    fn eq(&self, other: &EncodedValue) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for EncodedValue {}

impl Default for EncodedValue {
    fn default() -> EncodedValue {
        EncodedValue::encode(&Value::Nil)
    }
}

impl From<&Value> for EncodedValue {
    fn from(v: &Value) -> EncodedValue {
        EncodedValue::encode(v)
    }
}

impl From<Value> for EncodedValue {
    fn from(v: Value) -> EncodedValue {
        EncodedValue::encode(&v)
    }
}

impl fmt::Debug for EncodedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A context may be megabytes: small ones are shown, large ones sized.
        match self.to_value() {
            Ok(v) if self.encoded_len() <= 4096 => {
                write!(f, "EncodedValue({})", pr_str(&v))
            }
            _ => write!(f, "EncodedValue({} bytes)", self.encoded_len()),
        }
    }
}

impl Serialize for EncodedValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.as_bytes())
    }
}

impl<'de> Deserialize<'de> for EncodedValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EncodedValue, D::Error> {
        d.deserialize_byte_buf(BytesVisitor)
    }
}

/// Takes a byte string (or, from formats without one, a sequence of bytes) and checks it.
struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = EncodedValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an encoded value (bytes)")
    }

    fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<EncodedValue, E> {
        self.visit_byte_buf(b.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<EncodedValue, E> {
        EncodedValue::from_bytes(b).map_err(|e| E::custom(e.into_detail()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<EncodedValue, A::Error> {
        let mut b = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(x) = seq.next_element::<u8>()? {
            b.push(x);
        }
        self.visit_byte_buf(b)
    }
}

/// Decodes one token stream `bytes` (all of them) into what `sink` builds: the one reader of
/// an encoded value, for [`EncodedValue`] and for the runner's `Execute` context alike. It
/// reads the tokens by hand ([`raw::Reader`], with bincode's checks; `encoded_tests` pins it
/// to bincode's decoder, malformed input included): a context is millions of tokens, and
/// serde's enum visitor per token was most of the runner's import.
pub fn decode_tokens<S: TokenSink>(bytes: &[u8], sink: S) -> Result<S::Out, CodecError> {
    read_tokens(bytes, sink).map_err(|m| CodecError::Decode(m.to_string()))
}

fn read_tokens<S: TokenSink>(bytes: &[u8], sink: S) -> Result<S::Out, &'static str> {
    let mut r = raw::Reader::new(bytes);
    let claimed = r.varint()?;
    read_counted(r, claimed, sink)
}

/// Decodes the `tokens` tokens of one value in `bytes` (no count in front: a [`super::span::Span`]).
pub(super) fn decode_span(bytes: &[u8], tokens: u64) -> Result<Value, CodecError> {
    read_counted(raw::Reader::new(bytes), tokens, Plain)
        .map_err(|m| CodecError::Decode(m.to_string()))
}

/// Reads `claimed` tokens from `r`, which must end with them.
fn read_counted<S: TokenSink>(
    mut r: raw::Reader<'_>,
    claimed: u64,
    sink: S,
) -> Result<S::Out, &'static str> {
    let mut assembler = Assembler::new(sink);
    // The count is a claim: every token read consumes a byte, so the loop ends with the bytes.
    for _ in 0..claimed {
        match r.u32()? {
            tag @ (STR | KEYWORD) => {
                let bytes = r.bytes()?;
                let keyword = tag == KEYWORD;
                if !assembler.push_known_text(bytes, keyword)? {
                    let s = Cow::Borrowed(raw::utf8(bytes)?);
                    assembler.push(if keyword {
                        Token::Keyword(s)
                    } else {
                        Token::Str(s)
                    })?;
                }
            }
            tag => assembler.push(read_token_body(tag, &mut r)?)?,
        }
    }
    if !r.is_empty() {
        return Err("trailing bytes after the value");
    }
    assembler.finish()
}

/// The tags of `wire::Token`'s string and keyword variants, as bincode writes them.
const STR: u32 = 4;
const KEYWORD: u32 = 5;

/// One token after its tag, as `wire::Token`'s derived serde reads it from bincode.
#[inline]
fn read_token_body<'a>(tag: u32, r: &mut raw::Reader<'a>) -> Result<Token<'a>, &'static str> {
    Ok(match tag {
        0 => Token::Nil,
        1 => Token::Bool(r.bool()?),
        2 => Token::Int(r.i64()?),
        3 => Token::Float(r.f64()?),
        STR => Token::Str(Cow::Borrowed(r.str()?)),
        KEYWORD => Token::Keyword(Cow::Borrowed(r.str()?)),
        6 => Token::Vector(r.u32()?),
        7 => Token::List(r.u32()?),
        8 => Token::Map(r.u32()?),
        9 => Token::Set(r.u32()?),
        _ => return Err("a token tag this encoding never writes"),
    })
}

/// Builds nothing: the walk alone checks the stream (counts, depth, trailing tokens).
struct Check;

impl TokenSink for Check {
    type Out = ();
    fn scalar(&mut self, _tok: Token<'_>) {}
    fn collection(&mut self, _kind: Kind, _items: Items<'_, ()>) {}
}

/// Plain [`Value`]s (the same as `Value`'s own `Deserialize`, without its decode budget: an
/// encoded value is already bounded by whoever built or checked it).
struct Plain;

impl TokenSink for Plain {
    type Out = Value;
    fn scalar(&mut self, tok: Token<'_>) -> Value {
        super::wire::plain_scalar(tok)
    }
    fn collection(&mut self, kind: Kind, items: Items<'_, Value>) -> Value {
        super::wire::plain_collection(kind, items)
    }
}

/// Writes a value's tokens as they are found, into an [`EncodedValue`]: for values that are
/// not in memory as a tree (a JSON text being read). Collections whose length is known up
/// front take [`TokenWriter::header`]; others [`TokenWriter::open`], then
/// [`TokenWriter::close`] with the count (their header's count is written then).
#[derive(Debug)]
pub struct TokenWriter {
    buf: Vec<u8>,
    tokens: u64,
}

/// A collection opened with [`TokenWriter::open`]: where its count goes.
#[derive(Debug, Clone, Copy)]
pub struct OpenHeader {
    at: usize,
}

impl Default for TokenWriter {
    fn default() -> TokenWriter {
        TokenWriter::new()
    }
}

impl TokenWriter {
    pub fn new() -> TokenWriter {
        TokenWriter::with_capacity(0)
    }

    /// A writer with room for about `bytes` of tokens.
    pub fn with_capacity(bytes: usize) -> TokenWriter {
        let mut buf = Vec::with_capacity(PREFIX + bytes);
        buf.resize(PREFIX, 0);
        TokenWriter { buf, tokens: 0 }
    }

    /// Writes `v`'s tokens (an iterative walk: no recursion, whatever its depth).
    pub fn value(&mut self, v: &Value) {
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v {
                Value::Nil => self.nil(),
                Value::Bool(b) => self.bool(*b),
                Value::Int(i) => self.int(*i),
                Value::Float(f) => self.float(*f),
                Value::Str(s) => self.str(s),
                Value::Keyword(s) => self.keyword(s),
                Value::Vector(xs) | Value::List(xs) => {
                    let kind = match v {
                        Value::List(_) => Kind::List,
                        _ => Kind::Vector,
                    };
                    self.header(kind, xs.len());
                    stack.extend(xs.iter().rev());
                }
                Value::Set(xs) => {
                    self.header(Kind::Set, xs.len());
                    stack.extend(xs.iter().rev());
                }
                Value::Map(m) => {
                    self.header(Kind::Map, m.len());
                    for (k, x) in m.iter().rev() {
                        stack.push(x);
                        stack.push(k);
                    }
                }
            }
        }
    }

    /// Writes a value's tokens as they are, from another encoding.
    pub fn span(&mut self, s: super::span::Span<'_>) {
        self.buf.extend_from_slice(s.bytes());
        self.tokens += s.tokens();
    }

    /// The encoded size so far (what [`EncodedValue::encoded_len`] would say now).
    pub fn encoded_len(&self) -> usize {
        self.buf.len() - PREFIX + raw::varint_len(self.tokens)
    }

    /// Where the next token goes (positions for [`TokenWriter::move_into`]).
    pub fn position(&self) -> usize {
        self.buf.len()
    }

    /// The bytes written since `at`.
    pub fn written_since(&self, at: usize) -> &[u8] {
        self.buf.get(at..).unwrap_or_default()
    }

    /// The bytes written between `at` and `end`.
    pub fn written(&self, at: usize, end: usize) -> &[u8] {
        self.buf.get(at..end).unwrap_or_default()
    }

    fn tag(&mut self, tag: u8) {
        self.tokens += 1;
        self.buf.push(tag);
    }

    pub fn nil(&mut self) {
        self.tag(TAG_NIL);
    }

    pub fn bool(&mut self, b: bool) {
        self.tag(TAG_BOOL);
        self.buf.push(u8::from(b));
    }

    pub fn int(&mut self, i: i64) {
        self.tag(TAG_INT);
        raw::put_i64(&mut self.buf, i);
    }

    pub fn float(&mut self, f: f64) {
        self.tag(TAG_FLOAT);
        raw::put_f64(&mut self.buf, f);
    }

    pub fn str(&mut self, s: &str) {
        self.tag(TAG_STR);
        raw::put_str(&mut self.buf, s);
    }

    pub fn keyword(&mut self, s: &str) {
        self.tag(TAG_KEYWORD);
        raw::put_str(&mut self.buf, s);
    }

    /// A collection of `n` items (map: entries) whose items follow.
    pub fn header(&mut self, kind: Kind, n: usize) {
        self.tag(kind_tag(kind));
        raw::put_varint(&mut self.buf, u64::from(count(n)));
    }

    /// A collection whose items follow and whose count is given to [`TokenWriter::close`].
    pub fn open(&mut self, kind: Kind) -> OpenHeader {
        self.tag(kind_tag(kind));
        let at = self.buf.len();
        // One byte holds counts up to 250, most collections': larger ones widen it on close.
        self.buf.push(0);
        OpenHeader { at }
    }

    /// Writes the count of the collection `h` opened: `n` items (map: entries).
    pub fn close(&mut self, h: OpenHeader, n: usize) {
        let mut count_bytes = Vec::with_capacity(9);
        raw::put_varint(&mut count_bytes, u64::from(count(n)));
        match count_bytes.as_slice() {
            [one] => {
                if let Some(b) = self.buf.get_mut(h.at) {
                    *b = *one;
                }
            }
            wide => {
                let end = (h.at + 1).min(self.buf.len());
                self.buf.splice(h.at.min(end)..end, wide.iter().copied());
            }
        }
    }

    /// Moves the tokens written since `from` (one whole value) over the value at `at..end`,
    /// which they replace (`end <= from`): a repeated JSON key's later value, which keeps its
    /// first position. Returns how far the tokens after `end` moved (new length minus old).
    pub fn move_into(&mut self, from: usize, at: usize, end: usize) -> isize {
        let end = end.min(from);
        let at = at.clamp(PREFIX.min(end), end);
        let new = self.buf.split_off(from.min(self.buf.len()));
        // The new tokens are counted already; the old ones go.
        let old_tokens = token_count_of(self.buf.get(at..end).unwrap_or_default());
        let delta = new.len().cast_signed() - (end - at).cast_signed();
        self.buf.splice(at..end, new);
        self.tokens = self.tokens.saturating_sub(old_tokens);
        delta
    }

    /// Removes everything written since `from` (tokens included).
    pub fn truncate(&mut self, from: usize) {
        let from = from.max(PREFIX);
        let gone = token_count_of(self.buf.get(from..).unwrap_or_default());
        self.buf.truncate(from);
        self.tokens = self.tokens.saturating_sub(gone);
    }

    /// The finished value: the token count goes in front.
    pub fn finish(mut self) -> EncodedValue {
        let mut count_bytes = Vec::with_capacity(9);
        raw::put_varint(&mut count_bytes, self.tokens);
        let start = PREFIX - count_bytes.len();
        if let Some(room) = self.buf.get_mut(start..PREFIX) {
            room.copy_from_slice(&count_bytes);
        }
        EncodedValue {
            buf: self.buf,
            start,
        }
    }
}

/// The tokens in `bytes`, a run of whole tokens this writer wrote (read back by their tags).
fn token_count_of(bytes: &[u8]) -> u64 {
    let mut n = 0u64;
    let mut i = 0usize;
    while let Some(width) = token_width(bytes, i) {
        n += 1;
        i += 1 + width;
    }
    n
}

/// The width of the body of the token whose tag is at `at` (what follows the tag); `None` when
/// there is no tag there or the body runs past the end.
pub(super) fn token_width(bytes: &[u8], at: usize) -> Option<usize> {
    let tag = *bytes.get(at)?;
    let body = at + 1;
    let width = match tag {
        TAG_NIL => 0,
        TAG_BOOL => 1,
        TAG_FLOAT => 8,
        TAG_STR | TAG_KEYWORD => {
            let (len, w) = varint_at(bytes, body);
            w.checked_add(usize::try_from(len).ok()?)?
        }
        // An integer (zigzag varint) or a collection's count.
        _ => varint_at(bytes, body).1,
    };
    (body.checked_add(width)? <= bytes.len()).then_some(width)
}

/// The collection a token's tag opens ([`kind_tag`]'s inverse); `None` for a scalar's tag.
pub(super) fn kind_of_tag(tag: u8) -> Option<Kind> {
    [Kind::Vector, Kind::List, Kind::Map, Kind::Set]
        .into_iter()
        .find(|k| kind_tag(*k) == tag)
}

/// The varint at `i`: its value and its width.
pub(super) fn varint_at(bytes: &[u8], i: usize) -> (u64, usize) {
    let le = |w: usize| {
        let mut b = [0u8; 8];
        if let (Some(dst), Some(src)) = (b.get_mut(..w), bytes.get(i + 1..i + 1 + w)) {
            dst.copy_from_slice(src);
        }
        u64::from_le_bytes(b)
    };
    match bytes.get(i).copied().unwrap_or(0) {
        251 => (le(2), 3),
        252 => (le(4), 5),
        253 => (le(8), 9),
        small => (u64::from(small), 1),
    }
}

// The variant numbers of `wire::Token` (bincode writes an enum's variant index).
const TAG_NIL: u8 = 0;
const TAG_BOOL: u8 = 1;
const TAG_INT: u8 = 2;
const TAG_FLOAT: u8 = 3;
const TAG_STR: u8 = 4;
const TAG_KEYWORD: u8 = 5;

fn kind_tag(kind: Kind) -> u8 {
    match kind {
        Kind::Vector => 6,
        Kind::List => 7,
        Kind::Map => 8,
        Kind::Set => 9,
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "encoded_tests.rs"]
mod tests;
