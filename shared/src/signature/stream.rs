//! A context checked in its encoding: [`Signature::validate_input_encoded`] gives what
//! [`Signature::validate_input_owned`] gives for the decoded context (the same errors and
//! warnings, in the same order, and the same value, entries in the same order), without ever
//! holding the context as a tree. A tree of rows takes about ten times their encoding; a
//! signed run's context would otherwise need that much of the runner's grant.
//!
//! - The top-level map is read as its keys beside the spans of its values. Its fields are
//!   walked by the owned walk itself (`Walker::fields_in_place`), so looking fields up,
//!   respelling keys, defaults, and missing and unexpected keys have one owner.
//! - A field whose schema is a list of T (`[T]`, `[:vector T]`, under `:maybe` or not) and
//!   whose value is a vector (or a list, for `[:sequential T]`) is checked one item at a time:
//!   each item is decoded, checked by the borrowing walk (which agrees with the owned one, a
//!   tested invariant), and dropped. Its new encoding is written only where it changed; the
//!   field's output starts at the first item that changed, with the bytes of those before it.
//! - A collection where a scalar type is declared gets its error from an empty stand-in of
//!   its kind (the message names the kind only).
//! - Every other field value, a context that is not a map, and a map whose respelled keys
//!   would merge, is decoded and checked whole, as the owned walk does, and written back.
//!
//! So a check holds the input encoding, at most one output encoding and one item's tree at a
//! time. Bytes that do not decode are left as they are, for the import to refuse (an encoding
//! is well-formed by construction; see `value::encoded`).

use super::malli::Schema;
use super::owned::FieldShape;
use super::validate::{Opts, Seg, Walker};
use super::{MAX_SCHEMA_DEPTH, Mode, Signature, ValidationError, finish_with};
use crate::value::wire::Kind;
use crate::value::{EncodedValue, Map, Span, SpanItems, TokenWriter, Value};

/// A context checked in its encoding.
#[derive(Debug)]
pub struct CheckedEncoded {
    /// The checked context; `None` when it is the input, unchanged.
    pub value: Option<EncodedValue>,
    /// As [`super::Checked::warnings`].
    pub warnings: Vec<String>,
}

impl Signature {
    /// [`validate_input_owned`](Signature::validate_input_owned) of the value `context`
    /// encodes, done on the encoding (see the module header).
    pub fn validate_input_encoded(
        &self,
        context: &EncodedValue,
        mode: Mode,
    ) -> Result<CheckedEncoded, Vec<ValidationError>> {
        if mode == Mode::Disabled {
            return Ok(unchanged(Vec::new()));
        }
        let Some(top) = TopMap::read(Span::of(context)) else {
            return self.validate_whole(context, mode);
        };
        let strict = mode == Mode::Strict;
        let mut w = Walker::new(Opts {
            coerce: true,
            strict,
        });
        let shape = FieldShape {
            closed: strict,
            require_all: strict,
            depth: 1,
        };
        let mut keys = top.keys;
        let mut changed: Vec<Option<EncodedValue>> = vec![None; keys.len()];
        let plan = w.fields_in_place(&self.params, &mut keys, shape, |w, schema, _, i, depth| {
            if let (Some(span), Some(slot)) = (top.values.get(i), changed.get_mut(i)) {
                *slot = w.check_span(schema, *span, depth);
            }
        });
        if plan.keeps_keys() && changed.iter().all(Option::is_none) {
            return finish_with(w, || (), mode).map(|((), warnings)| unchanged(warnings));
        }
        let original = keys.len();
        let added = plan.added.len();
        let keys = plan.apply(keys);
        if keys.len() != original + added {
            // A respelled key equal to another key: the owned walk's map merges them.
            return self.validate_whole(context, mode);
        }
        let write = || {
            let mut out = TokenWriter::with_capacity(context.as_bytes().len());
            out.header(Kind::Map, keys.len());
            for (i, (k, v)) in keys.iter().enumerate() {
                out.value(k);
                match (changed.get(i), top.values.get(i)) {
                    (Some(Some(new)), _) => out.span(Span::of(new)),
                    (Some(None), Some(span)) => out.span(*span),
                    // A default added after the context's own entries.
                    _ => out.value(v),
                }
            }
            Some(out.finish())
        };
        finish_with(w, write, mode).map(|(value, warnings)| CheckedEncoded { value, warnings })
    }

    /// The owned walk on the decoded context, written back.
    fn validate_whole(
        &self,
        context: &EncodedValue,
        mode: Mode,
    ) -> Result<CheckedEncoded, Vec<ValidationError>> {
        let Ok(v) = context.to_value() else {
            return Ok(unchanged(Vec::new()));
        };
        let checked = self.validate_input_owned(v, mode)?;
        Ok(CheckedEncoded {
            value: Some(EncodedValue::encode(&checked.value)),
            warnings: checked.warnings,
        })
    }
}

fn unchanged(warnings: Vec<String>) -> CheckedEncoded {
    CheckedEncoded {
        value: None,
        warnings,
    }
}

/// A top-level map read as its keys (with placeholder values) and its values' spans, in order.
struct TopMap<'a> {
    keys: Map,
    values: Vec<Span<'a>>,
}

impl<'a> TopMap<'a> {
    /// `None` for anything but a map with distinct keys that decode.
    fn read(whole: Span<'a>) -> Option<TopMap<'a>> {
        let (Kind::Map, mut items) = whole.items()? else {
            return None;
        };
        let mut keys = Map::new();
        let mut values = Vec::new();
        while let (Some(k), Some(v)) = (items.next(), items.next()) {
            keys.insert(k.to_value().ok()?, Value::Nil);
            values.push(v);
        }
        (keys.len() == values.len()).then_some(TopMap { keys, values })
    }
}

impl<'s> Walker<'s> {
    /// Checks the value `span` holds against `schema` at `depth`; its new encoding where it
    /// changed. Lists are checked item by item; anything else is decoded whole.
    fn check_span(
        &mut self,
        schema: &'s Schema,
        span: Span<'_>,
        depth: usize,
    ) -> Option<EncodedValue> {
        if depth < MAX_SCHEMA_DEPTH {
            match (schema, span.items()) {
                (Schema::Maybe(t), _) if !span.is_nil() => {
                    return self.check_span(t, span, depth + 1);
                }
                (Schema::Vector(t), Some((kind @ Kind::Vector, items)))
                | (Schema::Sequential(t), Some((kind @ (Kind::Vector | Kind::List), items))) => {
                    return self.items_span(t, kind, items, depth);
                }
                _ => {}
            }
        }
        if let (true, Some((kind, _))) = (scalar(schema), span.items()) {
            // A scalar schema reads a collection's kind only (no coercion takes a collection):
            // its empty stand-in gets the same error, without decoding a context-sized tree.
            return self
                .check(schema, &empty(kind), depth)
                .map(|new| EncodedValue::encode(&new));
        }
        let v = span.to_value().ok()?;
        self.check(schema, &v, depth)
            .map(|new| EncodedValue::encode(&new))
    }

    /// The items of a list, each checked against `t` in turn (as [`Walker::check`] walks a
    /// list); the list's new encoding if any item changed.
    fn items_span(
        &mut self,
        t: &'s Schema,
        kind: Kind,
        items: SpanItems<'_>,
        depth: usize,
    ) -> Option<EncodedValue> {
        let all = items.clone();
        let count = items.remaining();
        let mut out: Option<TokenWriter> = None;
        for (i, item) in items.enumerate() {
            self.path.push(Seg::Index(i));
            let new = match item.to_value() {
                Ok(v) => self.check(t, &v, depth + 1),
                Err(_) => None,
            };
            self.path.pop();
            match (new, &mut out) {
                (Some(new), None) => {
                    let mut w = TokenWriter::new();
                    w.header(kind, count);
                    all.clone().take(i).for_each(|before| w.span(before));
                    w.value(&new);
                    out = Some(w);
                }
                (Some(new), Some(w)) => w.value(&new),
                (None, Some(w)) => w.span(item),
                (None, None) => {}
            }
        }
        out.map(TokenWriter::finish)
    }
}

/// The schemas that accept scalars of one type only.
fn scalar(schema: &Schema) -> bool {
    matches!(
        schema,
        Schema::Nil
            | Schema::String
            | Schema::Int
            | Schema::Double
            | Schema::Boolean
            | Schema::Keyword
            | Schema::Datetime
    )
}

/// An empty collection of `kind`.
fn empty(kind: Kind) -> Value {
    match kind {
        Kind::Vector => Value::Vector(Vec::new()),
        Kind::List => Value::List(Vec::new()),
        Kind::Map => Value::Map(Box::default()),
        Kind::Set => Value::Set(Default::default()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Collections where scalars are declared fail as the tree walk fails them, kind named.
    #[test]
    fn a_collection_for_a_scalar_gets_the_tree_walks_error() {
        let sig = Signature::parse("(a :int, b :string, c :boolean?, d :keyword) -> :any").unwrap();
        let ctx = Value::from_json(&serde_json::json!({
            "a": [1, 2], "b": {"x": 1}, "c": [], "d": "k"
        }))
        .unwrap();
        let Value::Map(mut m) = ctx.clone() else {
            panic!()
        };
        m.insert(Value::Str("d".into()), Value::List(vec![Value::Int(1)]));
        for ctx in [ctx, Value::Map(m)] {
            let tree = sig
                .validate_input_owned(ctx.clone(), Mode::Enabled)
                .unwrap_err();
            let encoded = sig
                .validate_input_encoded(&EncodedValue::encode(&ctx), Mode::Enabled)
                .unwrap_err();
            assert_eq!(tree, encoded);
            assert!(
                encoded.iter().any(|e| e.message.ends_with("got vector")),
                "{encoded:?}"
            );
        }
    }
}
