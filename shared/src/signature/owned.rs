//! The validator over an owned value: the same checks as [`Walker::check`], but the value is
//! consumed and changed in place, so a coercion or a respelled key costs only itself instead of
//! a copy of every map and list around it.
//!
//! Only the containers that commonly hold coerced data are walked here (maps, vectors, lists,
//! tuples, `:maybe`); every other schema is delegated to the borrowing walker and its result
//! used in place of the value. Invariant: same depth bound and same errors, warnings and result
//! as the borrowing walk (a unit test compares them).

use super::MAX_SCHEMA_DEPTH;
use super::malli::{Field, Schema};
use super::validate::{Seg, Walker, lookup, respell};
use crate::value::{Map, Value};

impl<'s> Walker<'s> {
    /// Checks `v`, returning it with any coercions and respellings applied.
    pub fn check_owned(&mut self, schema: &'s Schema, v: Value, depth: usize) -> Value {
        if depth > MAX_SCHEMA_DEPTH {
            return self.check(schema, &v, depth).unwrap_or(v);
        }
        match (schema, v) {
            (Schema::Vector(t), Value::Vector(xs)) | (Schema::Sequential(t), Value::Vector(xs)) => {
                Value::Vector(self.seq_owned(t, xs, depth))
            }
            (Schema::Sequential(t), Value::List(xs)) => Value::List(self.seq_owned(t, xs, depth)),
            (Schema::Maybe(t), v) if !matches!(v, Value::Nil) => self.check_owned(t, v, depth + 1),
            (Schema::Map(ms), Value::Map(m)) => {
                let closed = ms.closed || (self.opts.strict && !ms.fields.is_empty());
                Value::Map(Box::new(
                    self.fields_owned(&ms.fields, *m, closed, false, depth),
                ))
            }
            (Schema::Tuple(ts), Value::Vector(mut xs)) if xs.len() == ts.len() => {
                for (i, (t, x)) in ts.iter().zip(xs.iter_mut()).enumerate() {
                    self.path.push(Seg::Index(i));
                    *x = self.check_owned(t, std::mem::take(x), depth + 1);
                    self.path.pop();
                }
                Value::Vector(xs)
            }
            (schema, v) => self.check(schema, &v, depth).unwrap_or(v),
        }
    }

    fn seq_owned(&mut self, t: &'s Schema, mut xs: Vec<Value>, depth: usize) -> Vec<Value> {
        for (i, x) in xs.iter_mut().enumerate() {
            self.path.push(Seg::Index(i));
            *x = self.check_owned(t, std::mem::take(x), depth + 1);
            self.path.pop();
        }
        xs
    }

    /// [`fields`](Walker::fields) on an owned map: values are checked in place and keys
    /// respelled by moving the entries into a new map only when some key needs it.
    pub fn fields_owned(
        &mut self,
        fields: &'s [Field],
        mut m: Map,
        closed: bool,
        require_all: bool,
        depth: usize,
    ) -> Map {
        let shape = FieldShape {
            closed,
            require_all,
            depth,
        };
        let plan = self.fields_in_place(fields, &mut m, shape, |w, schema, m, i, depth| {
            if let Some((_, slot)) = m.get_index_mut(i) {
                *slot = w.check_owned(schema, std::mem::take(slot), depth);
            }
        });
        plan.apply(m)
    }

    /// The walk of [`fields_owned`](Walker::fields_owned) with the check of each present
    /// field's value left to `each` (given the field's schema, `m`, the entry's index in it and
    /// the depth to check at): what it finds of the keys (respellings, defaults to add,
    /// missing and unexpected keys, reported as it goes) comes back as a [`FieldsPlan`]. Only
    /// `m`'s keys are read, so `m`'s values may stand in for values held elsewhere
    /// (`stream.rs`: a context's rows, still encoded).
    pub(super) fn fields_in_place(
        &mut self,
        fields: &'s [Field],
        m: &mut Map,
        shape: FieldShape,
        mut each: impl FnMut(&mut Self, &'s Schema, &mut Map, usize, usize),
    ) -> FieldsPlan {
        let mut plan = FieldsPlan::default();
        let mut matched: Vec<usize> = Vec::new();
        for (n, f) in fields.iter().enumerate() {
            self.path.push(Seg::Field(&f.name));
            match lookup(m, f, n).map(|(i, k, _)| (i, respell(k, f))) {
                Some((i, new_key)) => {
                    each(self, &f.schema, m, i, shape.depth + 1);
                    plan.renames.extend(new_key.map(|k| (i, k)));
                    if shape.closed {
                        matched.push(i);
                    }
                }
                None => plan.added.extend(self.missing(f, m, shape.require_all)),
            }
            self.path.pop();
        }
        if shape.closed && matched.len() < m.len() {
            self.extras(m, &matched);
        }
        plan
    }
}

/// How a map's fields are walked: `closed` reports undeclared keys, `require_all` optional
/// fields that are missing; `depth` is the map's own.
#[derive(Debug, Clone, Copy)]
pub(super) struct FieldShape {
    pub closed: bool,
    pub require_all: bool,
    pub depth: usize,
}

/// What a walk of a map's fields changes in its keys: entries whose key is respelled (by
/// index), and defaults added at the end.
#[derive(Debug, Default)]
pub(super) struct FieldsPlan {
    pub renames: Vec<(usize, Value)>,
    pub added: Vec<(Value, Value)>,
}

impl FieldsPlan {
    /// Whether the keys stay as they are.
    pub fn keeps_keys(&self) -> bool {
        self.renames.is_empty() && self.added.is_empty()
    }

    /// `m` with the plan applied.
    pub fn apply(self, mut m: Map) -> Map {
        if !self.renames.is_empty() {
            m = rename_keys(m, self.renames);
        }
        m.extend(self.added);
        m
    }
}

/// Replaces the keys at the given indices, keeping order, by moving every entry.
fn rename_keys(m: Map, renames: Vec<(usize, Value)>) -> Map {
    let mut new_keys: Vec<Option<Value>> = vec![None; m.len()];
    for (i, k) in renames {
        if let Some(slot) = new_keys.get_mut(i) {
            *slot = Some(k);
        }
    }
    m.into_iter()
        .zip(new_keys)
        .map(|((k, v), nk)| (nk.unwrap_or(k), v))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::validate::Opts;
    use super::*;

    /// The owned and the borrowing walks agree on result, errors and warnings.
    fn same(schema_text: &str, json: serde_json::Value, coerce: bool, strict: bool) {
        let schema = Schema::parse(schema_text).unwrap();
        let v = Value::from_json(&json).unwrap();
        let opts = Opts { coerce, strict };
        let mut a = Walker::new(opts);
        let by_ref = a.check(&schema, &v, 1).unwrap_or_else(|| v.clone());
        let mut b = Walker::new(opts);
        let owned = b.check_owned(&schema, v, 1);
        assert_eq!(by_ref, owned, "{schema_text}");
        assert_eq!(a.into_errors(), b.into_errors(), "{schema_text}");
    }

    #[test]
    fn owned_walk_matches_the_borrowing_walk() {
        use serde_json::json;
        let rows = json!([{"id": "1", "user-name": "a", "x": 1}, {"id": 2}, {"id": "z", "tags": ["a", 1]}]);
        for coerce in [false, true] {
            for strict in [false, true] {
                same(
                    "[{id :int, user_name :string, tags [:keyword]?}]",
                    rows.clone(),
                    coerce,
                    strict,
                );
                same(
                    "[:tuple :int [:map [:a :double]]]",
                    json!(["1", {"a": 2}]),
                    coerce,
                    strict,
                );
                same(
                    "{a [:or :int [:vector :string]], b [:maybe [:map [:c :boolean]]]}",
                    json!({"a": ["x"], "b": {"c": "true"}}),
                    coerce,
                    strict,
                );
                same(
                    "[:map {:closed true} [:a {:default 3} :int]]",
                    json!({"b": 1}),
                    coerce,
                    strict,
                );
                same("[:set :int]", json!([1]), coerce, strict);
            }
        }
    }
}
