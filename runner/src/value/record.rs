//! Record-shaped maps: a small map whose keys live once, in a shared [`Shape`], and whose values
//! sit in a plain vector beside it.
//!
//! Programs and their data make many maps with one key sequence: the rows of a JSON context, the
//! `{:id i :total t}` a `map` builds per element. A record holds one reference to its shape
//! instead of its own copy of every key, so making or dropping one touches one count, not one
//! per key, and a lookup at a known position (a call site's hint) compares one key of the shape.
//!
//! Invariants: a shape's keys are distinct scalars (no collection: dropping, hashing or comparing
//! them never recurses), at most [`RECORD_MAX`]; a record has exactly one value per key, in the
//! shape's order. A record *is* the small map with the same entries in the same order: every
//! `MapImpl` operation gives what it gives on that small map (the tests below check random
//! operation sequences against the plain small map). `assoc` of a present key keeps the shape;
//! of a new key, it moves to the shape with that key appended, which the old shape remembers so
//! that every row grown the same way shares it; any other change of the keys (`dissoc`, growing
//! past [`RECORD_MAX`]) makes the map a plain small map.

use super::{FixedState, Text, Value, same_key};
use std::rc::Rc;

/// Records hold at most this many entries (their values fit inside the map's own allocation).
pub const RECORD_MAX: usize = 7;

/// The values of a record, inline up to [`RECORD_MAX`] (so they never spill).
pub type RecordVals = smallvec::SmallVec<[Value; RECORD_MAX]>;

/// Shapes grown from one shape by `assoc` of a new key, remembered at most (the usual program
/// adds the same one or two keys to every row).
const MAX_GROWN: usize = 4;

/// The keys of a family of records, in insertion order.
#[derive(Debug)]
pub struct Shape {
    keys: Box<[Value]>,
    /// Whether any key is a keyword: when none is (JSON rows), a string key with a keyword's text
    /// is that keyword's lenient answer without looking further.
    keywords: bool,
    /// The shapes of these keys followed by one more, by that key, so that every record grown
    /// by the same `assoc` shares one shape. No cycle: a shape refers only to longer ones.
    grown: std::cell::RefCell<Vec<(Value, Rc<Shape>)>>,
}

impl Shape {
    /// The shape of `keys`, or `None` unless they are at most [`RECORD_MAX`] distinct scalars.
    pub fn new(keys: Vec<Value>) -> Option<Rc<Shape>> {
        if keys.is_empty() || keys.len() > RECORD_MAX || !keys.iter().all(Value::is_scalar) {
            return None;
        }
        for (i, k) in keys.iter().enumerate() {
            if keys.iter().skip(i + 1).any(|other| same_key(k, other)) {
                return None;
            }
        }
        let keywords = keys.iter().any(|k| matches!(k, Value::Keyword(_)));
        Some(Rc::new(Shape {
            keys: keys.into_boxed_slice(),
            keywords,
            grown: std::cell::RefCell::default(),
        }))
    }

    /// The shape of these keys followed by `k` (not one of them), or `None` when a record
    /// cannot hold that many or such a key.
    pub fn with_key(&self, k: &Value) -> Option<Rc<Shape>> {
        if self.keys.len() >= RECORD_MAX || !k.is_scalar() {
            return None;
        }
        let known = self.grown.try_borrow().ok().and_then(|grown| {
            grown
                .iter()
                .find(|(key, _)| same_key(key, k))
                .map(|(_, s)| s.clone())
        });
        if known.is_some() {
            return known;
        }
        let mut keys = self.keys.to_vec();
        keys.push(k.clone());
        let shape = Shape::new(keys)?;
        if let Ok(mut grown) = self.grown.try_borrow_mut()
            && grown.len() < MAX_GROWN
        {
            grown.push((k.clone(), shape.clone()));
        }
        Some(shape)
    }

    pub fn keys(&self) -> &[Value] {
        &self.keys
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Where exact key `k` is; an interned keyword is found by identity first.
    pub fn position(&self, k: &Value) -> Option<usize> {
        if let Value::Keyword(want) = k
            && let Some(i) = self
                .keys
                .iter()
                .position(|key| matches!(key, Value::Keyword(s) if Text::ptr_eq(s, want)))
        {
            return Some(i);
        }
        self.keys.iter().position(|key| same_key(key, k))
    }

    /// Where keyword `want` is found leniently (`MapImpl::get_lenient`): the keyword key with its
    /// text, else the string key with its text.
    pub fn lenient_position(&self, want: &Text) -> Option<usize> {
        let same = |key: &Value| matches!(key, Value::Keyword(s) if Text::ptr_eq(s, want));
        if let Some(i) = self.keys.iter().position(same) {
            return Some(i);
        }
        let mut by_string = None;
        for (i, key) in self.keys.iter().enumerate() {
            match key {
                Value::Keyword(s) if **s == **want => return Some(i),
                Value::Str(s) if by_string.is_none() && **s == **want => by_string = Some(i),
                _ => {}
            }
        }
        by_string
    }

    /// Whether the key at `i` answers a lenient lookup of keyword `want` by itself: the keyword
    /// with that text, or the string with it when no key is a keyword.
    pub fn answers_at(&self, i: usize, want: &Text) -> bool {
        match self.keys.get(i) {
            Some(Value::Keyword(s)) => Text::ptr_eq(s, want) || **s == **want,
            Some(Value::Str(s)) => !self.keywords && **s == **want,
            _ => false,
        }
    }

    /// Where a record of `shape` holds keyword `want` by the lenient lookup, the call site's
    /// `hint` tried first and told where it was found ([`Record::get_hinted`]'s position; also
    /// how a record literal's values, not yet built into one, are read).
    #[inline]
    pub fn hinted_position(shape: &Rc<Shape>, want: &Text, hint: &KeyHint) -> Option<usize> {
        if hint.saw(shape, want) {
            return Some(hint.at());
        }
        let at = hint.at();
        let i = if shape.answers_at(at, want) {
            at
        } else {
            shape.lenient_position(want)?
        };
        hint.remember(i, shape, want);
        Some(i)
    }

    /// Whether the keys are `keys`, in order, compared as map keys.
    fn matches<'a>(&self, mut keys: impl Iterator<Item = &'a Value>) -> bool {
        self.keys
            .iter()
            .all(|k| keys.next().is_some_and(|x| same_key(k, x)))
            && keys.next().is_none()
    }
}

/// A map of one shape: the value of `shape.keys()[i]` is `vals[i]`.
#[derive(Debug, Clone)]
pub struct Record {
    shape: Rc<Shape>,
    vals: RecordVals,
}

impl Record {
    /// A record of `shape` with no values yet: the caller fills it with [`Record::push`], one
    /// value per key, before anyone else sees it (a map literal, built inside its `Rc`).
    pub fn empty(shape: Rc<Shape>) -> Record {
        Record {
            shape,
            vals: RecordVals::new(),
        }
    }

    /// A record of `shape` with `vals`, or `None` unless there is exactly one value per key.
    pub fn new(shape: Rc<Shape>, vals: RecordVals) -> Option<Record> {
        (vals.len() == shape.len()).then_some(Record { shape, vals })
    }

    /// Appends the value of the next key (the caller fills every key, in order).
    pub fn push(&mut self, v: Value) {
        self.vals.push(v);
    }

    pub fn shape(&self) -> &Rc<Shape> {
        &self.shape
    }

    pub fn vals(&self) -> &[Value] {
        &self.vals
    }

    pub fn len(&self) -> usize {
        self.vals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    pub fn get(&self, k: &Value) -> Option<&Value> {
        self.vals.get(self.shape.position(k)?)
    }

    pub fn get_lenient(&self, want: &Text) -> Option<&Value> {
        self.vals.get(self.shape.lenient_position(want)?)
    }

    /// The value of keyword `want` when `hint` last found it in a record of this very shape:
    /// its position, without comparing a key.
    #[inline(always)]
    pub fn get_seen(&self, want: &Text, hint: &KeyHint) -> Option<&Value> {
        if hint.saw(&self.shape, want) {
            self.vals.get(hint.at())
        } else {
            None
        }
    }

    /// The lenient lookup of keyword `want`, trying the call site's `hint` first and
    /// remembering where it was found (see `MapImpl::get_keyword_hinted`). When the hint last
    /// found this very keyword in a record of this very shape, its position is the answer
    /// without comparing a key (a JSON row's string keys would cost a text comparison each).
    #[inline]
    pub fn get_hinted(&self, want: &Text, hint: &KeyHint) -> Option<&Value> {
        self.vals
            .get(Shape::hinted_position(&self.shape, want, hint)?)
    }

    /// Adds key `k` (not present) with value `v`, moving to the grown shape; gives both back
    /// when the record cannot hold it.
    pub fn grow(&mut self, k: Value, v: Value) -> Result<(), (Value, Value)> {
        match self.shape.with_key(&k) {
            Some(shape) => {
                self.shape = shape;
                self.vals.push(v);
                Ok(())
            }
            None => Err((k, v)),
        }
    }

    /// The value of exact key `k`, to change in place (the shape stays).
    pub fn get_mut(&mut self, k: &Value) -> Option<&mut Value> {
        self.vals.get_mut(self.shape.position(k)?)
    }

    /// Replaces the value of key `k` if present (the shape stays); gives `v` back if not.
    pub fn replace(&mut self, k: &Value, v: Value) -> Result<(), Value> {
        match self.shape.position(k) {
            Some(i) => match self.vals.get_mut(i) {
                Some(slot) => {
                    *slot = v;
                    Ok(())
                }
                None => Err(v),
            },
            None => Err(v),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.shape.keys.iter().zip(self.vals.iter())
    }

    /// The entries, in order, as owned pairs (keys cloned from the shape).
    pub fn into_entries(mut self) -> impl Iterator<Item = (Value, Value)> {
        let vals = std::mem::take(&mut self.vals);
        let keys: Vec<Value> = self.shape.keys.to_vec();
        keys.into_iter().zip(vals)
    }

    /// Whether both records hold one shape (then their keys are the same, in the same order).
    pub fn same_shape(&self, other: &Record) -> bool {
        Rc::ptr_eq(&self.shape, &other.shape)
    }
}

/// A record of numbers and texts (`{:id i :cat c :amount a}` rows, `{:customer name :total
/// t}`) gives its values back here ([`super::release_inline`]) rather than through its
/// vector's drop glue, which calls `Value`'s out-of-line drop for each value. A value that may
/// hold others stops the walk, and the glue drops what is left.
impl Drop for Record {
    fn drop(&mut self) {
        super::release_inline(&mut self.vals);
    }
}

/// Where a call site (`(:k m)`, or the keyword fn of one `map`/`group-by`/`sort-by`) found its
/// keyword last: a position, tried first in the next small map, and the record shape and
/// keyword it was found for.
///
/// The test on every read compares two addresses held in plain cells (no reference count
/// taken or put back); `kept` holds counted references to that very shape and keyword text,
/// so neither can be freed and another take its address while the hint remembers it. A
/// keyword is known by the address of its text's bytes: two live texts share it only when
/// both are empty, and then they are the same keyword text, which is all the answer needs.
#[derive(Default)]
pub struct KeyHint {
    at: std::cell::Cell<u32>,
    /// `Rc::as_ptr` of the shape last seen, 0 for none.
    shape: std::cell::Cell<usize>,
    /// The address of the keyword text's bytes last seen.
    key: std::cell::Cell<usize>,
    kept: std::cell::Cell<Option<(Rc<Shape>, Text)>>,
}

impl std::fmt::Debug for KeyHint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyHint({})", self.at())
    }
}

impl KeyHint {
    /// A hint that tries position `at` first.
    pub fn starting_at(at: usize) -> KeyHint {
        let hint = KeyHint::default();
        hint.set_at(at);
        hint
    }

    pub fn at(&self) -> usize {
        self.at.get() as usize
    }

    /// Tries `at` first from now on; forgets the record it saw (its position is no longer `at`).
    pub fn set_at(&self, at: usize) {
        self.at.set(u32::try_from(at).unwrap_or(u32::MAX));
        self.shape.set(0);
        self.kept.set(None);
    }

    /// Whether `want` was last found in a record of `shape` (at [`KeyHint::at`]): two
    /// address compares.
    #[inline(always)]
    fn saw(&self, shape: &Rc<Shape>, want: &Text) -> bool {
        self.shape.get() == Rc::as_ptr(shape) as usize && self.key.get() == text_addr(want)
    }

    fn remember(&self, at: usize, shape: &Rc<Shape>, want: &Text) {
        self.at.set(u32::try_from(at).unwrap_or(u32::MAX));
        self.shape.set(Rc::as_ptr(shape) as usize);
        self.key.set(text_addr(want));
        // The old pair is dropped only after the new addresses are set: both are alive now.
        self.kept.set(Some((shape.clone(), want.clone())));
    }
}

/// The address of a text's bytes (see [`KeyHint`]).
#[inline(always)]
fn text_addr(t: &Text) -> usize {
    let s: &str = t;
    s.as_ptr() as usize
}

/// Shapes met while making many maps (importing a context), so that maps with one key sequence
/// share one shape. The last few shapes are tried first (a JSON array of rows, and the rows'
/// nested records, alternate between a handful), then a table of all of them.
#[derive(Debug, Default)]
pub struct Shapes {
    recent: Vec<Rc<Shape>>,
    table: std::collections::HashMap<Box<[Value]>, Rc<Shape>, FixedState>,
}

/// How many recent shapes are tried before the table.
const RECENT: usize = 4;

/// Distinct shapes remembered at most: past this, maps of new key sequences stay plain small
/// maps (the table cannot grow by one entry per map of adversarial data).
const MAX_SHAPES: usize = 4096;

impl Shapes {
    /// A record from `items` (keys and values alternating, still on the token walk's stack):
    /// when they make one (not too many, scalar keys without duplicates, room in the table)
    /// they are taken from `items`; else `items` is left as it was.
    pub fn record(&mut self, items: &mut std::vec::Drain<'_, Value>) -> Option<Record> {
        let all = items.as_slice();
        let n = all.len() / 2;
        if n == 0 || n > RECORD_MAX || !all.len().is_multiple_of(2) {
            return None;
        }
        let shape = self.shape_of(all)?;
        let mut vals = RecordVals::new();
        while let (Some(_key), Some(v)) = (items.next(), items.next()) {
            vals.push(v);
        }
        Some(Record { shape, vals })
    }

    fn shape_of(&mut self, items: &[Value]) -> Option<Rc<Shape>> {
        let keys = || items.iter().step_by(2);
        if let Some(i) = self.recent.iter().position(|s| s.matches(keys())) {
            // Most recent first; rows of one shape find theirs at 0 and move nothing.
            if i > 0 {
                let shape = self.recent.remove(i);
                self.recent.insert(0, shape);
            }
            return self.recent.first().cloned();
        }
        let owned: Vec<Value> = keys().cloned().collect();
        let shape = match self.table.get(owned.as_slice()) {
            Some(s) => s.clone(),
            None if self.table.len() >= MAX_SHAPES => return None,
            None => {
                let s = Shape::new(owned.clone())?;
                self.table.insert(owned.into_boxed_slice(), s.clone());
                s
            }
        };
        self.recent.truncate(RECENT - 1);
        self.recent.insert(0, shape.clone());
        Some(shape)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{KeyHint, RECORD_MAX, Record, Shape, Shapes};
    use crate::value::{Coll, MapImpl, Text, Value};
    use std::hash::BuildHasher;

    use crate::test_rng::Rng;

    /// A record of `items` as the importer makes one, from items on its stack.
    fn record_of(shapes: &mut Shapes, mut items: Vec<Value>) -> Option<Record> {
        shapes.record(&mut items.drain(..))
    }

    /// Keys that collide in every way a lookup can confuse: a keyword and a string of one
    /// text, texts that are prefixes of others, non-text scalars.
    fn pool() -> Vec<Value> {
        vec![
            Value::kw("a"),
            Value::str("a"),
            Value::kw("status"),
            Value::str("status"),
            Value::kw("ab"),
            Value::str("b"),
            Value::Int(1),
            Value::Nil,
            Value::kw("n/a"),
            Value::str(""),
        ]
    }

    fn hash(v: &Value) -> u64 {
        crate::value::FixedState::default().hash_one(v)
    }

    fn entries(m: &MapImpl) -> Vec<(Value, Value)> {
        m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Every read of `subject` gives what it gives on `model`. `carried` holds one hint per key
    /// of `pool`, carried from map to map (records and small maps of many shapes), as a call
    /// site's is.
    fn check(
        subject: &MapImpl,
        model: &MapImpl,
        pool: &[Value],
        carried: &[KeyHint],
        rng: &mut Rng,
    ) {
        assert_eq!(entries(subject), entries(model), "entries");
        assert_eq!(subject.len(), model.len());
        for (k, own) in pool.iter().zip(carried) {
            assert_eq!(subject.get(k), model.get(k), "get {k:?}");
            assert_eq!(
                subject.get_lenient(k),
                model.get_lenient_general(k),
                "lenient {k:?}"
            );
            if let Value::Keyword(t) = k {
                // The same text from another allocation: found by text, not identity.
                let other = Text::from(&**t);
                let hint = KeyHint::starting_at(rng.below(9));
                let want = model.get_lenient_general(k);
                assert_eq!(subject.get_keyword_hinted(t, &hint), want, "hinted {k:?}");
                assert_eq!(subject.get_keyword_hinted(&other, &hint), want, "again");
                assert_eq!(subject.get_keyword_hinted(t, own), want, "carried {k:?}");
                assert_eq!(subject.get_keyword_hinted(t, own), want, "carried again");
                // A hint is one call site's, but even one shared by two keywords answers right.
                let shared = &carried[0];
                assert_eq!(subject.get_keyword_hinted(t, shared), want, "shared {k:?}");
            }
        }
        let (s, m) = (Value::map(subject.clone()), Value::map(model.clone()));
        // Both ways: the record on either side of `=`.
        assert!(s == m, "= {s:?} {m:?}");
        assert!(m == s, "= {m:?} {s:?}");
        assert_eq!(hash(&s), hash(&m), "hash");
        assert_eq!(
            crate::print::pr_str(&s),
            crate::print::pr_str(&m),
            "printed"
        );
    }

    /// A random record (through the import's shape table) and the small map of its entries.
    fn random_pair(shapes: &mut Shapes, pool: &[Value], rng: &mut Rng) -> (MapImpl, MapImpl) {
        let n = 1 + rng.below(RECORD_MAX);
        let mut keys: Vec<Value> = Vec::new();
        while keys.len() < n {
            let k = pool[rng.below(pool.len())].clone();
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let mut items = Vec::new();
        let mut model = MapImpl::default();
        for (i, k) in keys.into_iter().enumerate() {
            items.push(k.clone());
            items.push(Value::Int(i64::try_from(i).unwrap()));
            model.insert(k, Value::Int(i64::try_from(i).unwrap()));
        }
        let record = record_of(shapes, items).unwrap();
        (MapImpl::Record(record), model)
    }

    #[test]
    fn records_agree_with_small_maps_under_random_updates() {
        let pool = pool();
        let mut shapes = Shapes::default();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut kept_shape = 0;
        let carried: Vec<KeyHint> = pool.iter().map(|_| KeyHint::default()).collect();
        for round in 0..400 {
            let (mut subject, mut model) = random_pair(&mut shapes, &pool, &mut rng);
            check(&subject, &model, &pool, &carried, &mut rng);
            for step in 0..12 {
                let k = pool[rng.below(pool.len())].clone();
                let v = Value::Int(i64::from(round * 100 + step));
                if rng.below(3) == 0 {
                    subject.remove(&k);
                    model.remove(&k);
                } else {
                    subject.insert(k.clone(), v.clone());
                    model.insert(k, v);
                }
                check(&subject, &model, &pool, &carried, &mut rng);
                kept_shape += usize::from(matches!(subject, MapImpl::Record(_)));
            }
        }
        // Both branches ran: updates that kept the shape and ones that left it.
        assert!(kept_shape > 200, "{kept_shape}");
    }

    #[test]
    fn records_of_one_shape_compare_by_values_and_equal_plain_maps() {
        let mut shapes = Shapes::default();
        let row = |shapes: &mut Shapes, status: &str, total: i64| {
            let items = vec![
                Value::str("status"),
                Value::str(status),
                Value::str("total"),
                Value::Int(total),
            ];
            Value::map(MapImpl::Record(record_of(shapes, items).unwrap()))
        };
        let (a, b, c) = (
            row(&mut shapes, "paid", 1),
            row(&mut shapes, "paid", 1),
            row(&mut shapes, "paid", 2),
        );
        match (&a, &c) {
            (Value::Map(x), Value::Map(y)) => match (&**x, &**y) {
                (MapImpl::Record(x), MapImpl::Record(y)) => assert!(x.same_shape(y)),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
        assert!(a == b && a != c && hash(&a) == hash(&b));
        let mut reversed = MapImpl::default();
        reversed.insert(Value::str("total"), Value::Int(1));
        reversed.insert(Value::str("status"), Value::str("paid"));
        assert_eq!(a, Value::map(reversed.clone()));
        assert_eq!(hash(&a), hash(&Value::map(reversed)));
    }

    #[test]
    fn shapes_refuse_what_a_record_cannot_hold() {
        let k = Value::kw;
        assert!(Shape::new(vec![]).is_none());
        assert!(Shape::new(vec![k("a"), k("a")]).is_none());
        assert!(Shape::new(vec![Value::vector([Value::Int(1)])]).is_none());
        assert!(Shape::new((0..8).map(Value::Int).collect()).is_none());
        assert!(Shape::new(vec![k("a"), Value::str("a")]).is_some());
        let mut shapes = Shapes::default();
        // A duplicate key in the data (the later entry wins elsewhere) makes no record.
        let dup = vec![k("a"), Value::Int(1), k("a"), Value::Int(2)];
        assert!(record_of(&mut shapes, dup).is_none());
        assert!(record_of(&mut shapes, vec![k("a")]).is_none());
        let shape = Shape::new(vec![k("a")]).unwrap();
        assert!(Record::new(shape, smallvec::smallvec![]).is_none());
    }

    /// A hint knows the shape and keyword it saw by their addresses: shapes and keyword texts
    /// made and freed one after another (the allocator hands the same addresses out again),
    /// with their keys in a different order each time, are still answered by position only
    /// for the very shape and text the hint holds.
    #[test]
    fn a_hint_is_never_fooled_by_a_freed_shape_or_keyword() {
        let hint = KeyHint::default();
        let mut rng = Rng(15);
        for round in 0..300 {
            let mut keys = vec!["status", "total", "id", "items"];
            let n = 1 + rng.below(keys.len());
            keys.truncate(n);
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.below(i + 1));
            }
            let shape = Shape::new(keys.iter().map(|k| Value::kw(k)).collect()).unwrap();
            let vals = keys.iter().map(|k| Value::str(k)).collect();
            let r = Record::new(shape, vals).unwrap();
            for want in ["status", "total", "id", "items"] {
                // A fresh text each time: an earlier one may have been freed where it lies.
                let t = Text::from(want);
                let expect = keys.contains(&want).then(|| Value::str(want));
                assert_eq!(r.get_hinted(&t, &hint).cloned(), expect, "{round} {want}");
                assert_eq!(
                    r.get_hinted(&t, &hint).cloned(),
                    expect,
                    "{round} {want} again"
                );
            }
        }
    }

    #[test]
    fn maps_with_one_key_sequence_share_one_shape() {
        let mut shapes = Shapes::default();
        let mut made = Vec::new();
        for i in 0..40 {
            // Three families interleaved, as rows and their nested records are.
            let keys: &[&str] = match i % 3 {
                0 => &["id", "items"],
                1 => &["sku", "qty"],
                _ => &["sku", "qty", "price"],
            };
            let items = keys
                .iter()
                .flat_map(|k| [Value::str(k), Value::Int(i)])
                .collect();
            made.push(record_of(&mut shapes, items).unwrap());
        }
        for (i, r) in made.iter().enumerate() {
            assert!(r.same_shape(&made[i % 3]), "{i}");
        }
        assert_eq!(shapes.table.len(), 3);
        // Rows grown by the same `assoc` share the grown shape; another key grows another one.
        let grown: Vec<MapImpl> = made
            .iter()
            .take(9)
            .enumerate()
            .map(|(i, r)| {
                let mut m = MapImpl::Record(r.clone());
                let key = if i < 6 { "total" } else { "tax" };
                m.insert(Value::kw(key), Value::Int(1));
                m
            })
            .collect();
        let shape_of = |m: &MapImpl| match m {
            MapImpl::Record(r) => r.shape().clone(),
            other => panic!("{other:?}"),
        };
        assert!(std::rc::Rc::ptr_eq(
            &shape_of(&grown[0]),
            &shape_of(&grown[3])
        ));
        assert!(!std::rc::Rc::ptr_eq(
            &shape_of(&grown[0]),
            &shape_of(&grown[6])
        ));
        assert_eq!(shape_of(&grown[0]).len(), 3);
        let _ = Coll::new(MapImpl::Record(made.remove(0)));
    }
}
