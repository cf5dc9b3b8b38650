//! The one boundary between `ptc_shared::Value` (plain data that crosses processes) and the
//! interpreter's `Value`. Functions, regexes and lazy (infinite) seqs have no plain-data form:
//! converting one is an error that names what was found. Characters become one-char strings,
//! dates their ISO-8601 text, exceptions a map with `:message` and `:data`.

use crate::value::{ExInfo, MapImpl, Shapes, Text, Value};
use ptc_shared::value::EncodedValue;
use ptc_shared::value::encoded::decode_tokens;
use ptc_shared::value::wire::{Items, Kind, Token, TokenSink};
use ptc_shared::value::{MAX_DEPTH, Map as SMap, Value as S};

/// Plain data → interpreter value (a copy: `v` stays the caller's).
pub fn from_shared(v: &S) -> Value {
    Importer::default().value(v)
}

/// Plain data → interpreter value, consuming it: each collection of `v` is freed as soon as it
/// is converted, so importing a large context never holds both whole trees at once.
pub fn import(v: S) -> Value {
    Importer::default().owned(v)
}

/// Strings up to this length are interned while importing: JSON data repeats its keys (and many
/// values) on every row, and one shared `Rc` per distinct string saves an allocation each time.
const INTERN_MAX: usize = 64;

/// Converts plain data into interpreter values, sharing repeated short strings, the empty
/// collections (persistent values: sharing them is invisible to a program) and the key
/// sequences of small maps (records of one shape: the rows of a JSON array).
#[derive(Default)]
struct Importer {
    strings: std::collections::HashSet<Text, foldhash::fast::RandomState>,
    /// The string or keyword values last made, [`KNOWN_SLOTS`] of them, each in the slot its
    /// bytes pick: a token whose bytes are in their slot's value is that value again, found
    /// without checking its UTF-8 or hashing it (rows repeat their keys and many values).
    known: Vec<Value>,
    empty: [Option<Value>; 4],
    shapes: Shapes,
}

/// Slots of [`Importer::known`] (a power of two).
const KNOWN_SLOTS: usize = 256;

/// The slot of [`Importer::known`] for a text's bytes: a cheap mix of its length and three of
/// its bytes (a collision only costs the full lookup).
fn known_slot(bytes: &[u8]) -> usize {
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return 0;
    };
    let mid = bytes.get(bytes.len() / 2).copied().unwrap_or(0);
    let mix = u32::from(u8::try_from(bytes.len()).unwrap_or(u8::MAX))
        ^ u32::from(first) << 5
        ^ u32::from(mid) << 11
        ^ u32::from(last) << 17;
    (mix.wrapping_mul(0x9E37_79B1) >> 24) as usize % KNOWN_SLOTS
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

    /// Like [`Importer::text`], reusing `s`'s buffer when it is not interned.
    fn text_owned(&mut self, s: String) -> Text {
        if s.len() > INTERN_MAX {
            return Text::from(s);
        }
        self.text(&s)
    }

    /// A string borrowed from the frame (interned or copied once) or already owned.
    fn text_cow(&mut self, s: std::borrow::Cow<'_, str>) -> Text {
        match s {
            std::borrow::Cow::Borrowed(b) => self.text(b),
            std::borrow::Cow::Owned(o) => self.text_owned(o),
        }
    }

    /// A string or keyword value from the frame, remembered in its [`known_slot`] when short.
    fn text_value(&mut self, s: std::borrow::Cow<'_, str>, keyword: bool) -> Value {
        let text = self.text_cow(s);
        let slot = (text.len() <= INTERN_MAX).then(|| known_slot(text.as_bytes()));
        let v = if keyword {
            Value::Keyword(text)
        } else {
            Value::Str(text)
        };
        if let Some(slot) = slot {
            if self.known.is_empty() {
                self.known = vec![Value::Nil; KNOWN_SLOTS];
            }
            if let Some(known) = self.known.get_mut(slot) {
                *known = v.clone();
            }
        }
        v
    }

    /// The one shared empty collection of `kind`.
    fn empty(&mut self, kind: Kind) -> Value {
        self.empty[kind as usize]
            .get_or_insert_with(|| collection(kind, Vec::new().drain(..)))
            .clone()
    }

    /// A collection of `kind` from its items (map items alternate key, value).
    fn collection(&mut self, kind: Kind, mut items: Items<'_, Value>) -> Value {
        if items.len() == 0 {
            return self.empty(kind);
        }
        if matches!(kind, Kind::Map)
            && let Some(r) = self.shapes.record(&mut items)
        {
            return Value::map(MapImpl::Record(r));
        }
        collection(kind, items)
    }

    fn value(&mut self, v: &S) -> Value {
        match v {
            S::Nil => Value::Nil,
            S::Bool(b) => Value::Bool(*b),
            S::Int(i) => Value::Int(*i),
            S::Float(f) => Value::Float(*f),
            S::Str(s) => Value::Str(self.text(s)),
            S::Keyword(k) => Value::Keyword(self.text(k)),
            S::Vector(xs) => {
                let mut items: Vec<Value> = xs.iter().map(|x| self.value(x)).collect();
                self.collection(Kind::Vector, items.drain(..))
            }
            S::List(xs) => {
                let mut items: Vec<Value> = xs.iter().map(|x| self.value(x)).collect();
                self.collection(Kind::List, items.drain(..))
            }
            S::Set(xs) => {
                let mut items: Vec<Value> = xs.iter().map(|x| self.value(x)).collect();
                self.collection(Kind::Set, items.drain(..))
            }
            S::Map(m) => {
                let mut items = Vec::with_capacity(m.len() * 2);
                for (k, x) in m.iter() {
                    items.push(self.value(k));
                    items.push(self.value(x));
                }
                self.collection(Kind::Map, items.drain(..))
            }
        }
    }

    fn owned(&mut self, v: S) -> Value {
        match v {
            S::Str(s) => Value::Str(self.text_owned(s)),
            S::Keyword(k) => Value::Keyword(self.text_owned(k)),
            S::Vector(xs) => {
                let mut items: Vec<Value> = xs.into_iter().map(|x| self.owned(x)).collect();
                self.collection(Kind::Vector, items.drain(..))
            }
            S::List(xs) => {
                let mut items: Vec<Value> = xs.into_iter().map(|x| self.owned(x)).collect();
                self.collection(Kind::List, items.drain(..))
            }
            S::Set(xs) => {
                let mut items: Vec<Value> = xs.into_iter().map(|x| self.owned(x)).collect();
                self.collection(Kind::Set, items.drain(..))
            }
            S::Map(m) => {
                let mut items = Vec::with_capacity(m.len() * 2);
                for (k, x) in *m {
                    items.push(self.owned(k));
                    items.push(self.owned(x));
                }
                self.collection(Kind::Map, items.drain(..))
            }
            scalar => self.value(&scalar),
        }
    }
}

/// Builds a collection of `kind` from its items, taken from a tree's `Vec` or from the token
/// walk's stack without another buffer; map items alternate key and value. Keys are inserted with a
/// duplicate check, the later entry winning (as decoding plain data does).
fn collection(kind: Kind, mut items: Items<'_, Value>) -> Value {
    match kind {
        Kind::Vector => Value::vector(items),
        Kind::List => Value::list(items),
        Kind::Set => Value::set(items),
        Kind::Map => {
            let mut out = MapImpl::with_capacity(items.len() / 2);
            while let (Some(k), Some(x)) = (items.next(), items.next()) {
                out.insert(k, x);
            }
            Value::map(out)
        }
    }
}

/// An interpreter value decoded straight from the wire's value tokens (the runner's `Execute`
/// context): no `ptc_shared::Value` tree in between, repeated strings and empty collections
/// shared as in [`import`]. Nesting is bounded by [`MAX_DEPTH`]. Its memory is bounded by the
/// runner's allocator, under the grant for granted data (`Setup::grant_bytes`), not by the
/// codec's per-token decode budget: that budget (sized for plain `Value`s, 32 bytes a token)
/// refuses ordinary records well below `max_context_bytes`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported(pub Value);

impl<'de> serde::Deserialize<'de> for Imported {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Imported, D::Error> {
        d.deserialize_bytes(TokenImporter)
    }
}

/// An encoded value (a request's context) into interpreter values, as the runner imports its
/// `Execute` context: for in-process runs, whose context arrives encoded too.
pub fn import_encoded(e: &EncodedValue) -> Result<Value, String> {
    e.decode_with(Importer::default())
        .map_err(|e| e.to_string())
}

/// Written as plain data (what the supervisor sends); a value that is not data cannot be.
impl serde::Serialize for Imported {
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        let plain = to_shared(&self.0).map_err(serde::ser::Error::custom)?;
        EncodedValue::encode(&plain).serialize(s)
    }
}

struct TokenImporter;

impl<'de> serde::de::Visitor<'de> for TokenImporter {
    type Value = Imported;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an encoded value (a byte string of value tokens)")
    }

    fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Imported, E> {
        decode_tokens(b, Importer::default())
            .map(Imported)
            .map_err(|e| E::custom(e.into_detail()))
    }
}

/// The token walk is shared (`ptc_shared::value::wire::Assembler`); the importer makes the interpreter's values,
/// sharing strings and empty collections. Nothing is charged here: the allocator's grant
/// bounds the import.
impl TokenSink for Importer {
    type Out = Value;

    fn scalar(&mut self, tok: Token<'_>) -> Value {
        match tok {
            Token::Bool(b) => Value::Bool(b),
            Token::Int(i) => Value::Int(i),
            Token::Float(f) => Value::Float(f),
            Token::Str(s) => self.text_value(s, false),
            Token::Keyword(s) => self.text_value(s, true),
            _ => Value::Nil,
        }
    }

    fn known_text(&mut self, bytes: &[u8], keyword: bool) -> Option<Value> {
        let v = self.known.get(known_slot(bytes))?;
        let hit = match v {
            Value::Str(t) => !keyword && t.as_bytes() == bytes,
            Value::Keyword(t) => keyword && t.as_bytes() == bytes,
            _ => false,
        };
        hit.then(|| v.clone())
    }

    fn collection(&mut self, kind: Kind, items: Items<'_, Value>) -> Value {
        Importer::collection(self, kind, items)
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
        Value::Set(s) => S::Set(Box::new(s.iter().map(conv).collect::<Result<_, _>>()?)),
        Value::Map(m) => {
            let mut out = SMap::with_capacity(m.len());
            for (k, x) in m.iter() {
                let k = match (string_keys, k) {
                    (true, Value::Keyword(s)) => S::Str(s.to_string()),
                    _ => conv(k)?,
                };
                out.insert(k, conv(x)?);
            }
            S::Map(Box::new(out))
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
    Ok(S::Map(Box::new(m)))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ptc_shared::codec::{DEFAULT_MAX_FRAME, HEADER_LEN, Message, decode_body, encode_frame};

    /// What the engine sends: the context's encoding.
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Plain(EncodedValue);
    impl Message for Plain {}
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Direct(Imported);
    impl Message for Direct {}

    fn via_tokens(v: &S) -> Result<Value, String> {
        let frame = encode_frame(&Plain(v.into()), DEFAULT_MAX_FRAME).unwrap();
        let direct = decode_body::<Direct>(&frame[HEADER_LEN..], DEFAULT_MAX_FRAME)
            .map(|d| d.0.0)
            .map_err(|e| e.to_string());
        // An in-process run decodes the same bytes with the same importer.
        let in_process = import_encoded(&v.into());
        assert_eq!(direct.as_ref().ok(), in_process.as_ref().ok());
        assert_eq!(direct.is_err(), in_process.is_err());
        direct
    }

    fn sample() -> S {
        let mut row = SMap::new();
        row.insert(S::string("id"), S::Int(-7));
        row.insert(S::keyword("k"), S::Float(2.5));
        row.insert(S::string("tags"), S::Vector(vec![S::string("a"), S::Nil]));
        row.insert(S::string("empty"), S::Map(Box::new(SMap::new())));
        let mut big = SMap::new();
        for i in 0..20 {
            big.insert(S::Int(i), S::Bool(i % 2 == 0));
        }
        S::Vector(vec![
            S::Map(Box::new(row.clone())),
            S::Map(Box::new(row)),
            S::Map(Box::new(big)),
            S::List(vec![
                S::Vector(vec![]),
                S::List(vec![]),
                S::Set(Default::default()),
            ]),
            S::Set(
                [S::Int(1), S::string("x".repeat(100))]
                    .into_iter()
                    .collect::<ptc_shared::value::Set>()
                    .into(),
            ),
            S::keyword("a/b"),
        ])
    }

    /// The direct decode (the runner's fast path) and both plain-data imports agree, and give
    /// back the same plain data.
    #[test]
    fn the_token_import_equals_the_plain_data_imports() {
        let v = sample();
        let direct = via_tokens(&v).unwrap();
        assert_eq!(direct, from_shared(&v));
        assert_eq!(direct, import(v.clone()));
        assert_eq!(to_shared(&direct).unwrap(), v);
        assert_eq!(
            crate::print::pr_str(&direct),
            crate::print::pr_str(&from_shared(&v))
        );
    }

    #[test]
    fn repeated_strings_and_empty_collections_are_shared() {
        let rows = S::Vector(vec![
            S::Vector(vec![S::string("key"), S::Map(Box::new(SMap::new()))]),
            S::Vector(vec![S::string("key"), S::Map(Box::new(SMap::new()))]),
        ]);
        for v in [via_tokens(&rows).unwrap(), import(rows.clone())] {
            let Value::Vector(xs) = v else { panic!() };
            let parts: Vec<Vec<Value>> = xs
                .iter()
                .map(|x| match x {
                    Value::Vector(p) => p.iter().cloned().collect(),
                    _ => Vec::new(),
                })
                .collect();
            match (&parts[0][..], &parts[1][..]) {
                ([Value::Str(a), Value::Map(m)], [Value::Str(b), Value::Map(n)]) => {
                    assert!(Text::ptr_eq(a, b) && crate::value::Coll::ptr_eq(m, n));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// Texts found again by their bytes (`Importer::known`) are the values the full path
    /// makes: a string is never taken for a keyword of the same text or the reverse, and texts
    /// that share a slot replace each other without being confused.
    #[test]
    fn texts_found_again_by_their_bytes_are_the_same_values() {
        let mut items = Vec::new();
        for i in 0..3_000u32 {
            let text = format!("t{}", i % 700);
            items.push(if i % 3 == 0 {
                S::keyword(text.clone())
            } else {
                S::string(text.clone())
            });
            items.push(S::string(text.repeat(1 + (i % 5) as usize)));
        }
        items.push(S::string(""));
        items.push(S::keyword(""));
        items.push(S::string(""));
        let v = S::Vector(items);
        let direct = via_tokens(&v).unwrap();
        assert_eq!(direct, from_shared(&v));
        assert_eq!(to_shared(&direct).unwrap(), v);
    }

    /// The bytes of a string already seen are only taken as that string when they are equal:
    /// bytes that are not UTF-8, of the same length and slot, are refused as before.
    #[test]
    fn bytes_that_are_not_utf8_are_refused_after_a_string_was_seen() {
        let v = S::Vector(vec![S::string("ab"), S::string("ab")]);
        let mut frame = encode_frame(&Plain((&v).into()), DEFAULT_MAX_FRAME).unwrap();
        let at = frame.windows(2).rposition(|w| w == b"ab").unwrap();
        frame[at] = 0xff;
        frame[at + 1] = 0xfe;
        let err = decode_body::<Direct>(&frame[HEADER_LEN..], DEFAULT_MAX_FRAME)
            .map(|_| ())
            .unwrap_err();
        assert!(err.to_string().contains("not UTF-8"), "{err}");
    }

    #[test]
    fn a_token_stream_nested_too_deeply_is_refused() {
        let mut v = S::Nil;
        for _ in 0..MAX_DEPTH + 1 {
            v = S::Vector(vec![v]);
        }
        // Encoding walks iteratively; the direct decode refuses past MAX_DEPTH.
        let err = via_tokens(&v).unwrap_err();
        assert!(err.contains("nested too deeply"), "{err}");
    }
}
