//! The one boundary between `ptc_shared::Value` (plain data that crosses processes) and the
//! interpreter's `Value`. Functions, regexes and lazy (infinite) seqs have no plain-data form:
//! converting one is an error that names what was found. Characters become one-char strings,
//! dates their ISO-8601 text, exceptions a map with `:message` and `:data`.

use crate::value::{ExInfo, MapImpl, Shapes, Text, Value};
use ptc_shared::value::EncodedValue;
use ptc_shared::value::encoded::decode_tokens;
use ptc_shared::value::wire::{Kind, Token, TokenSink};
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
    empty: [Option<Value>; 4],
    shapes: Shapes,
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

    /// The one shared empty collection of `kind`.
    fn empty(&mut self, kind: Kind) -> Value {
        self.empty[kind as usize]
            .get_or_insert_with(|| collection(kind, Vec::new()))
            .clone()
    }

    /// A collection of `kind` from its items (map items alternate key, value).
    fn collection(&mut self, kind: Kind, items: Vec<Value>) -> Value {
        if items.is_empty() {
            return self.empty(kind);
        }
        if matches!(kind, Kind::Map) {
            return match self.shapes.record(items) {
                Ok(r) => Value::map(MapImpl::Record(r)),
                Err(items) => collection(kind, items),
            };
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
                let items = xs.iter().map(|x| self.value(x)).collect();
                self.collection(Kind::Vector, items)
            }
            S::List(xs) => {
                let items = xs.iter().map(|x| self.value(x)).collect();
                self.collection(Kind::List, items)
            }
            S::Set(xs) => {
                let items = xs.iter().map(|x| self.value(x)).collect();
                self.collection(Kind::Set, items)
            }
            S::Map(m) => {
                let mut items = Vec::with_capacity(m.len() * 2);
                for (k, x) in m.iter() {
                    items.push(self.value(k));
                    items.push(self.value(x));
                }
                self.collection(Kind::Map, items)
            }
        }
    }

    fn owned(&mut self, v: S) -> Value {
        match v {
            S::Str(s) => Value::Str(self.text_owned(s)),
            S::Keyword(k) => Value::Keyword(self.text_owned(k)),
            S::Vector(xs) => {
                let items = xs.into_iter().map(|x| self.owned(x)).collect();
                self.collection(Kind::Vector, items)
            }
            S::List(xs) => {
                let items = xs.into_iter().map(|x| self.owned(x)).collect();
                self.collection(Kind::List, items)
            }
            S::Set(xs) => {
                let items = xs.into_iter().map(|x| self.owned(x)).collect();
                self.collection(Kind::Set, items)
            }
            S::Map(m) => {
                let mut items = Vec::with_capacity(m.len() * 2);
                for (k, x) in *m {
                    items.push(self.owned(k));
                    items.push(self.owned(x));
                }
                self.collection(Kind::Map, items)
            }
            scalar => self.value(&scalar),
        }
    }
}

/// Builds a collection of `kind`; map items alternate key and value. Keys are inserted with a
/// duplicate check, the later entry winning (as decoding plain data does).
fn collection(kind: Kind, items: Vec<Value>) -> Value {
    match kind {
        Kind::Vector => Value::vector(items),
        Kind::List => Value::list(items),
        Kind::Set => Value::set(items),
        Kind::Map => {
            let mut out = MapImpl::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(x)) = (it.next(), it.next()) {
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
            Token::Str(s) => Value::Str(self.text_cow(s)),
            Token::Keyword(s) => Value::Keyword(self.text_cow(s)),
            _ => Value::Nil,
        }
    }

    fn collection(&mut self, kind: Kind, items: Vec<Value>) -> Value {
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
