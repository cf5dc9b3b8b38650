//! Serde for `Value` as a flat, pre-order token list.
//!
//! Derived serde would recurse once per nesting level while decoding, so a hostile frame of a
//! few megabytes of `[[[[...` could overflow the stack. Tokens are decoded with an explicit stack
//! instead, and nesting beyond [`MAX_DEPTH`] is refused.

use super::{MAX_DEPTH, Map, Set, Value};
use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::cell::Cell;

/// One wire token. Public so that another value type can be decoded from the same stream
/// (the runner builds its interpreter values straight from an `Execute`'s context tokens).
/// Strings borrow from the frame where the format allows (bincode from a slice does): a
/// string that is interned or copied anyway costs no allocation of its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Token<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(#[serde(borrow)] Cow<'a, str>),
    Keyword(#[serde(borrow)] Cow<'a, str>),
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

thread_local! {
    /// Bytes that decoding values may still cost on this thread; `None` is unlimited.
    static BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
}

/// What decoding a frame body of `len` bytes may cost: [`DECODE_AMPLIFICATION`] times the frame
/// (with a 16 MiB floor). Each token costs at most one `Value` (32 bytes) plus its text, and takes
/// at least one byte on the wire (a `nil`, the costliest shape), so every well-formed frame
/// decodes within this budget whatever its shape (`a_vector_of_small_ints_decodes` pins the case
/// that failed when `Value` was 80 bytes: a result or a `def` of 200,000 small ints came back as
/// `runner_crashed`). The budget is what bounds memory: a daemon bounds how many large frames
/// decode at once (`daemon::conn`), so the sum stays bounded too; a caller may also pass a
/// smaller budget of its own to [`with_budget`].
pub fn decode_budget(len: usize) -> usize {
    len.saturating_mul(DECODE_AMPLIFICATION).max(16 << 20)
}

/// How many times its wire size a frame's values may cost in memory (see [`decode_budget`]).
pub const DECODE_AMPLIFICATION: usize = 32;

// The invariant above: one token of one byte costs one `Value`, so `Value` must fit the factor.
// `Map` and `Set` are boxed in `Value` for this (an `IndexMap` inline made every value 80 bytes).
const _: () = assert!(std::mem::size_of::<Value>() <= DECODE_AMPLIFICATION);

/// Runs `f` (a decode) with values charged against `budget` bytes: past it, decoding fails with
/// "value larger in memory than its frame allows" before allocating more.
pub fn with_budget<R>(budget: usize, f: impl FnOnce() -> R) -> R {
    let saved = BUDGET.with(|b| b.replace(Some(budget)));
    let r = f();
    BUDGET.with(|b| b.set(saved));
    r
}

/// Charges one value of `extra` heap bytes against the budget.
fn charge(extra: usize) -> Result<(), &'static str> {
    BUDGET.with(|b| match b.get() {
        None => Ok(()),
        Some(left) => {
            let cost = std::mem::size_of::<Value>().saturating_add(extra);
            match left.checked_sub(cost) {
                Some(left) => {
                    b.set(Some(left));
                    Ok(())
                }
                None => Err("value larger in memory than its frame allows"),
            }
        }
    })
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_seq(TokenVisitor)
    }
}

/// Builds the value token by token as they are decoded: no token vector is ever held.
struct TokenVisitor;

impl<'de> Visitor<'de> for TokenVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a sequence of value tokens")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        assemble_seq(seq, Plain)
    }
}

/// A collection's kind, as its header token opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Vector,
    List,
    Set,
    Map,
}

/// What a value token stream is assembled into: plain [`Value`]s here, interpreter values in
/// the runner. The walk itself (an explicit stack, the depth bound, counts read as claims) is
/// [`Assembler`]'s, written once.
pub trait TokenSink {
    type Out;
    /// Sees every token before it is built: where a decode budget is charged.
    fn admit(&mut self, _tok: &Token<'_>) -> Result<(), &'static str> {
        Ok(())
    }
    /// A token that is not a collection header, as a value.
    fn scalar(&mut self, tok: Token<'_>) -> Self::Out;
    /// A string (or keyword) token's bytes, before the walk checks them as UTF-8: a sink that
    /// made a value of these very bytes before (so they were checked then) may answer with it
    /// again, and the token is neither checked nor [`admit`](TokenSink::admit)ted. A sink that
    /// charges in `admit` keeps the default: `None`, the token goes through `admit` and `scalar`.
    fn known_text(&mut self, _bytes: &[u8], _keyword: bool) -> Option<Self::Out> {
        None
    }
    /// A finished collection, its items drained from the walk's one item stack (a map's items
    /// alternate key, value): no buffer of its own per collection.
    fn collection(&mut self, kind: Kind, items: Items<'_, Self::Out>) -> Self::Out;
}

/// The items of a finished collection, in order, as [`TokenSink::collection`] receives them.
pub type Items<'a, T> = std::vec::Drain<'a, T>;

/// Plain values, each token charged against the thread's decode budget.
struct Plain;

impl TokenSink for Plain {
    type Out = Value;

    fn admit(&mut self, tok: &Token<'_>) -> Result<(), &'static str> {
        charge(match tok {
            Token::Str(s) | Token::Keyword(s) => s.len(),
            _ => 0,
        })
    }

    fn scalar(&mut self, tok: Token<'_>) -> Value {
        plain_scalar(tok)
    }

    fn collection(&mut self, kind: Kind, items: Items<'_, Value>) -> Value {
        plain_collection(kind, items)
    }
}

/// A token that is not a collection header, as a plain value.
pub(crate) fn plain_scalar(tok: Token<'_>) -> Value {
    match tok {
        Token::Bool(b) => Value::Bool(b),
        Token::Int(i) => Value::Int(i),
        Token::Float(f) => Value::Float(f),
        Token::Str(s) => Value::Str(s.into_owned()),
        Token::Keyword(s) => Value::Keyword(s.into_owned()),
        _ => Value::Nil,
    }
}

/// A finished collection as a plain value (a map's items alternate key, value; a repeated key
/// keeps its first position and its last value).
pub(crate) fn plain_collection(kind: Kind, mut items: Items<'_, Value>) -> Value {
    match kind {
        Kind::Vector => Value::Vector(items.collect()),
        Kind::List => Value::List(items.collect()),
        Kind::Set => Value::Set(Box::new(items.collect::<Set>())),
        Kind::Map => {
            let mut m = Map::with_capacity(items.len() / 2);
            while let (Some(k), Some(v)) = (items.next(), items.next()) {
                m.insert(k, v);
            }
            Value::Map(Box::new(m))
        }
    }
}

/// Reads a whole token sequence into one value of `sink`'s kind.
pub fn assemble_seq<'de, A: SeqAccess<'de>, S: TokenSink>(
    mut seq: A,
    sink: S,
) -> Result<S::Out, A::Error> {
    let mut b = Assembler::new(sink);
    while let Some(tok) = seq.next_element::<Token<'de>>()? {
        b.push(tok).map_err(A::Error::custom)?;
    }
    b.finish().map_err(A::Error::custom)
}

/// A collection being rebuilt: its kind, the items still expected, and where its items start
/// on the item stack.
struct Open {
    kind: Kind,
    remaining: usize,
    start: usize,
}

/// The open collections (an explicit stack: assembling never recurses), the items read so far
/// for all of them (one stack: the innermost collection's items are its top), and, once the
/// last one closes, the finished value.
pub struct Assembler<S: TokenSink> {
    sink: S,
    stack: Vec<Open>,
    items: Vec<S::Out>,
    done: Option<S::Out>,
}

impl<S: TokenSink> std::fmt::Debug for Assembler<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembler")
            .field("open", &self.stack.len())
            .field("done", &self.done.is_some())
            .finish()
    }
}

impl<S: TokenSink> Assembler<S> {
    pub fn new(sink: S) -> Assembler<S> {
        Assembler {
            sink,
            stack: Vec::new(),
            items: Vec::new(),
            done: None,
        }
    }

    /// Adds one token; every token becomes exactly one value.
    pub fn push(&mut self, tok: Token<'_>) -> Result<(), &'static str> {
        if self.done.is_some() {
            return Err("trailing value tokens");
        }
        self.sink.admit(&tok)?;
        let (kind, n, per) = match tok {
            Token::Vector(n) => (Kind::Vector, n, 1),
            Token::List(n) => (Kind::List, n, 1),
            Token::Set(n) => (Kind::Set, n, 1),
            Token::Map(n) => (Kind::Map, n, 2),
            scalar => {
                let v = self.sink.scalar(scalar);
                return self.push_value(v);
            }
        };
        let remaining = usize::try_from(n)
            .map_err(|_| "collection too large")?
            .saturating_mul(per);
        if self.stack.len() >= MAX_DEPTH {
            return Err("value nested too deeply");
        }
        let start = self.items.len();
        if remaining == 0 {
            let empty = self.sink.collection(kind, self.items.drain(start..));
            return self.push_value(empty);
        }
        // The header is a claim: the item stack grows with the items actually read.
        self.stack.push(Open {
            kind,
            remaining,
            start,
        });
        Ok(())
    }

    /// A string (`keyword` false) or keyword token given by its unchecked bytes, when the sink
    /// knows them ([`TokenSink::known_text`]): `Ok(false)` if it does not, and the caller checks
    /// the bytes and [`push`](Assembler::push)es the token.
    pub fn push_known_text(&mut self, bytes: &[u8], keyword: bool) -> Result<bool, &'static str> {
        if self.done.is_some() {
            return Err("trailing value tokens");
        }
        match self.sink.known_text(bytes, keyword) {
            Some(v) => self.push_value(v).map(|()| true),
            None => Ok(false),
        }
    }

    /// Adds a finished value to the innermost open collection, closing those it completes.
    fn push_value(&mut self, mut done: S::Out) -> Result<(), &'static str> {
        loop {
            let Some(top) = self.stack.last_mut() else {
                self.done = Some(done);
                return Ok(());
            };
            self.items.push(done);
            top.remaining -= 1;
            if top.remaining > 0 {
                return Ok(());
            }
            let Some(open) = self.stack.pop() else {
                return Ok(());
            };
            done = self
                .sink
                .collection(open.kind, self.items.drain(open.start..));
        }
    }

    /// The finished value, or an error if the stream ended inside one.
    pub fn finish(self) -> Result<S::Out, &'static str> {
        self.done.ok_or("value token stream ended early")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(tokens: Vec<Token>) -> Result<Value, &'static str> {
        let mut b = Assembler::new(Plain);
        for t in tokens {
            b.push(t)?;
        }
        b.finish()
    }

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
            Value::Set([Value::Nil].into_iter().collect::<Set>().into()),
        );
        let v = Value::Vector(vec![
            Value::Map(Box::new(m)),
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
        assert_eq!(
            build(vec![Token::Map(0)]),
            Ok(Value::Map(Box::new(Map::new())))
        );
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;
    use bincode::Options;

    /// The tokens of a vector of `n` nils, serialized lazily (as a client could send them).
    struct NilTokens(u32);

    impl Serialize for NilTokens {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.0 as usize + 1))?;
            seq.serialize_element(&Token::Vector(self.0))?;
            for _ in 0..self.0 {
                seq.serialize_element(&Token::Nil)?;
            }
            seq.end()
        }
    }

    fn decode(n: u32, budget: Option<usize>) -> (usize, Result<Value, String>) {
        let opts = bincode::DefaultOptions::new().with_varint_encoding();
        let body = opts.serialize(&NilTokens(n)).unwrap_or_default();
        let budget = budget.unwrap_or(decode_budget(body.len()));
        let v = with_budget(budget, || opts.deserialize::<Value>(&body));
        (body.len(), v.map_err(|e| e.to_string()))
    }

    #[test]
    fn a_frame_of_nils_costs_at_most_its_budget() {
        let (_, small) = decode(1000, None);
        assert!(matches!(small, Ok(Value::Vector(ref xs)) if xs.len() == 1000));
        // One byte per nil on the wire, a whole Value each in memory: refused at the budget.
        let (len, big) = decode(4 << 20, Some(4 << 20));
        assert!(len < (4 << 20) + 16);
        let err = big.err().unwrap_or_default();
        assert!(
            err.contains("larger in memory than its frame allows"),
            "{err}"
        );
        // The floor lets ordinary small frames through whatever their shape.
        let (_, ok) = decode(100_000, None);
        assert!(ok.is_ok());
    }

    /// Decodes `v`'s encoding under a budget of `factor` times its length (no floor).
    fn decodes_within(v: &Value, factor: usize) -> (usize, bool) {
        let opts = bincode::DefaultOptions::new().with_varint_encoding();
        let body = opts.serialize(v).unwrap_or_default();
        let ok = with_budget(body.len() * factor, || {
            opts.deserialize::<Value>(&body).is_ok()
        });
        (body.len(), ok)
    }

    /// Four-field records as LLM tools return them fit the budget, and are charged for real: a
    /// budget of twice their wire size refuses them.
    #[test]
    fn ordinary_rows_fit_the_budget() {
        let rows: Vec<Value> = (0..60_000_i64)
            .map(|i| {
                let mut m = Map::new();
                m.insert(Value::string("id"), Value::Int(i));
                m.insert(Value::string("cat"), Value::string(format!("c{}", i % 7)));
                m.insert(Value::string("amount"), Value::Float(i as f64 / 8.0));
                let tags = vec![Value::string("a"), Value::string("b")];
                m.insert(Value::string("tags"), Value::Vector(tags));
                Value::Map(Box::new(m))
            })
            .collect();
        let rows = Value::Vector(rows);
        let (len, ok) = decodes_within(&rows, DECODE_AMPLIFICATION);
        assert!(len * DECODE_AMPLIFICATION > 16 << 20, "{len}");
        assert!(ok);
        assert!(!decodes_within(&rows, 2).1);
    }

    /// Two bytes a value on the wire: a result (or a `def`) of 200,000 small ints was refused
    /// as "larger in memory than its frame allows" while `Value` was 80 bytes, and the run
    /// ended `runner_crashed`. It fits now, and a budget of a quarter of the factor refuses it.
    #[test]
    fn a_vector_of_small_ints_decodes() {
        let ints = Value::Vector(vec![Value::Int(2); 1 << 20]);
        let (len, ok) = decodes_within(&ints, DECODE_AMPLIFICATION);
        assert!(len <= (2 << 20) + 16, "{len}");
        assert!(ok);
        assert!(!decodes_within(&ints, DECODE_AMPLIFICATION / 4).1);
    }
}
