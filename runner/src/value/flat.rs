//! Hash maps built fresh and held by one owner: a plain vector of entries and a hash index,
//! standing in for the persistent `imbl` map until the map is shared and updated, or read in
//! order.
//!
//! Programs build large maps one key at a time (`into {}`, `zipmap`, `reduce` with `assoc` or
//! `update` into an accumulator only the reduction holds) and then mostly look keys up. While
//! the map's `Rc` is unique, an insert into `imbl`'s hash trie costs a path of node updates
//! (about 390 instructions a key here) and a lookup a walk of its nodes (about 260); a flat
//! vector with a `hashbrown` index of positions does either with one hash (integers and texts
//! hashed directly) and one probe.
//!
//! The order is the one thing a flat map cannot keep by itself. A persistent map's seq and print
//! order is its trie's, and the trie's leaves place a key in the first free slot of its group,
//! so the order depends on the history of inserts and removals, not on the keys alone. A flat
//! map therefore never removes (a `dissoc` of a present key makes it the trie first) and keeps
//! its entries in first-insertion order, replacing values in place; the trie of the same history
//! is then the trie built by inserting the entries in that order, and that is what every ordered
//! read walks ([`FlatMap::tree`], built once and kept). (A `sort-by` whose result cannot depend
//! on the order, pure keys none of which tie, reads the entries as they are:
//! `builtins::core::sort_flat_map`.) Invariants:
//!
//! - `entries` holds distinct keys, in the order they were first inserted since the map was
//!   made (empty, or from a small map's entries in their order, exactly as a small map that
//!   outgrows [`super::SMALL_MAP`] becomes a trie); `index` holds each entry's position once.
//! - `tree`, when present, has exactly the entries and the order of that history. An update of a
//!   flat map whose tree was built makes it that tree (a persistent map from then on), so an
//!   ordered read costs O(n) once per map, never once per update.
//! - Copying one for an update while shared (`Rc::make_mut` calls `MapImpl`'s `Clone`) gives the
//!   tree, which the shared original keeps: the conversion happens at most once per map.
//!
//! Keys that are all integers close together (ids, indexes: `(into {} (map (fn [c] [(:id c) c])
//! customers))`) are found without hashing: while every key is an integer and the keys span at
//! most [`DENSE_SLACK`] slots per key (plus [`DENSE_MIN`]), the index is a table of positions by
//! key ([`Dense`]), one subtraction and one load a lookup where hashing and probing took about
//! 80 instructions. The first key that breaks this hashes every entry once, and the map keeps the
//! hash index from then on. An integer equals only an integer (`=`), so while the index is dense
//! no other key can be present.
//!
//! Equality and hashing do not depend on order and read the entries directly. A replaced value
//! keeps the key already there, as a small map and Clojure's maps do (`imbl`'s insert stores the
//! key it is given; the two differ only for equal keys that print differently, a vector and a
//! list of the same items).

use super::{FixedState, PHashMap, Text, Value};
use hashbrown::HashTable;
use std::cell::OnceCell;
use std::hash::BuildHasher;

/// A hash map held by one owner; see the module header.
#[derive(Default)]
pub struct FlatMap {
    entries: Vec<(Value, Value)>,
    /// Where each key's entry is in `entries`.
    index: Index,
    /// The persistent map of the same history: the order of every ordered read.
    tree: OnceCell<PHashMap>,
}

/// A flat map's index of positions; see the module header.
enum Index {
    /// Every key is an integer, and the keys are dense.
    Dense(Dense),
    /// Positions in `entries`, hashed by their keys.
    Hashed(HashTable<usize>),
}

impl Default for Index {
    /// No keys yet: all of them (none) are integers.
    fn default() -> Index {
        Index::Dense(Dense::default())
    }
}

/// A dense index holds at most this many slots per key (plus [`DENSE_MIN`]): four bytes each, no
/// more than a hash index's buckets take.
const DENSE_SLACK: usize = 4;
const DENSE_MIN: usize = 32;

/// Positions of integer keys by value: key `k` at `up[k - lo]` from the first key `lo` upward,
/// at `down[lo - 1 - k]` below it, each the entry's position plus one (0: no such key). Both
/// sides grow only at their far end, so keys inserted in any order cost amortized O(1).
#[derive(Default)]
struct Dense {
    lo: i64,
    up: Vec<u32>,
    down: Vec<u32>,
}

impl Dense {
    /// The side and slot of key `k`, if it is within an `i64` distance of `lo`.
    #[inline]
    fn place(&self, k: i64) -> Option<(bool, usize)> {
        let d = k.checked_sub(self.lo)?;
        match u64::try_from(d) {
            Ok(up) => Some((true, usize::try_from(up).ok()?)),
            // `-1 - d` is at most `i64::MAX`: no overflow.
            Err(_) => Some((false, usize::try_from(-1 - d).ok()?)),
        }
    }

    #[inline]
    fn find(&self, k: i64) -> Option<usize> {
        let (up, i) = self.place(k)?;
        let side = if up { &self.up } else { &self.down };
        let at = side.get(i)?.checked_sub(1)?;
        usize::try_from(at).ok()
    }

    /// Records absent key `k` at position `at` (the map's `at + 1`-th key); `false`, changing
    /// nothing, when the keys would no longer be dense.
    fn add(&mut self, k: i64, at: usize) -> bool {
        let Some(slot) = at.checked_add(1).and_then(|n| u32::try_from(n).ok()) else {
            return false;
        };
        if at == 0 {
            self.lo = k;
        }
        let Some((up, i)) = self.place(k) else {
            return false;
        };
        let (side, other) = if up {
            (&mut self.up, self.down.len())
        } else {
            (&mut self.down, self.up.len())
        };
        if i >= side.len() {
            let limit = DENSE_SLACK.saturating_mul(at + 1).saturating_add(DENSE_MIN);
            if i.saturating_add(1).saturating_add(other) > limit {
                return false;
            }
            side.resize(i + 1, 0);
        }
        match side.get_mut(i) {
            Some(s) => {
                *s = slot;
                true
            }
            None => false,
        }
    }
}

/// The index's hash of a key. It only has to agree with `=` on keys (equal keys hash equally):
/// an integer equals only the same integer, so it is hashed as one directly, as texts are; the
/// rest go through `Value`'s own hash.
pub(crate) fn key_hash(k: &Value) -> u64 {
    let s = FixedState::default();
    match k {
        Value::Int(i) => s.hash_one(*i),
        Value::Str(t) => s.hash_one((1u8, &**t)),
        Value::Keyword(t) => s.hash_one((2u8, &**t)),
        other => s.hash_one(other),
    }
}

/// `=` on keys, the usual kinds compared directly.
pub(crate) fn same_key(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Str(x), Value::Str(y)) | (Value::Keyword(x), Value::Keyword(y)) => {
            Text::ptr_eq(x, y) || **x == **y
        }
        _ => a == b,
    }
}

impl FlatMap {
    /// The map made by inserting `entries` in order.
    pub fn from_entries(entries: impl IntoIterator<Item = (Value, Value)>) -> FlatMap {
        let mut m = FlatMap::default();
        for (k, v) in entries {
            m.insert(k, v);
        }
        m
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Where key `k`'s entry is. A dense lookup is a few instructions, inlined into the
    /// callers; hashing and probing are out of line.
    #[inline]
    fn position(&self, k: &Value) -> Option<usize> {
        match (&self.index, k) {
            (Index::Dense(d), Value::Int(i)) => d.find(*i),
            (Index::Dense(_), _) => None,
            (Index::Hashed(index), _) => self.hashed_position(index, k),
        }
    }

    #[inline(never)]
    fn hashed_position(&self, index: &HashTable<usize>, k: &Value) -> Option<usize> {
        let entries = &self.entries;
        index
            .find(key_hash(k), |&i| {
                entries.get(i).is_some_and(|(key, _)| same_key(key, k))
            })
            .copied()
    }

    /// The hash index of `entries`, each hashed once (a dense index is left for good).
    fn hash_index(entries: &[(Value, Value)]) -> HashTable<usize> {
        let mut index = HashTable::with_capacity(entries.len() + 1);
        for (i, (k, _)) in entries.iter().enumerate() {
            index.insert_unique(key_hash(k), i, |&j| {
                entries.get(j).map_or(0, |(key, _)| key_hash(key))
            });
        }
        index
    }

    #[inline]
    pub fn get(&self, k: &Value) -> Option<&Value> {
        self.position(k)
            .and_then(|i| self.entries.get(i))
            .map(|(_, v)| v)
    }

    /// The value of key `k`, to change in place. Only for a map whose tree has not been built
    /// (the tree would no longer have the entries).
    pub fn get_mut(&mut self, k: &Value) -> Option<&mut Value> {
        self.position(k)
            .and_then(|i| self.entries.get_mut(i))
            .map(|(_, v)| v)
    }

    /// Inserts or replaces (a replaced value keeps its key's position). Only for a map whose
    /// tree has not been built (see [`FlatMap::has_tree`]).
    pub fn insert(&mut self, k: Value, v: Value) {
        if let Index::Dense(d) = &mut self.index {
            if let Value::Int(i) = k {
                if let Some(at) = d.find(i) {
                    if let Some(slot) = self.entries.get_mut(at) {
                        slot.1 = v;
                    }
                    return;
                }
                if d.add(i, self.entries.len()) {
                    self.entries.push((k, v));
                    return;
                }
            }
            self.index = Index::Hashed(Self::hash_index(&self.entries));
        }
        let Index::Hashed(index) = &mut self.index else {
            return;
        };
        let h = key_hash(&k);
        let entries = &mut self.entries;
        match index.find(h, |&i| {
            entries.get(i).is_some_and(|(key, _)| same_key(key, &k))
        }) {
            Some(&i) => {
                if let Some(slot) = entries.get_mut(i) {
                    slot.1 = v;
                }
            }
            None => {
                let at = entries.len();
                index.insert_unique(h, at, |&i| {
                    entries.get(i).map_or(0, |(key, _)| key_hash(key))
                });
                entries.push((k, v));
            }
        }
    }

    /// Whether an ordered read has built the tree (then updates go to the tree instead).
    pub fn has_tree(&self) -> bool {
        self.tree.get().is_some()
    }

    /// The persistent map of this map's history, built on first use and kept.
    pub fn tree(&self) -> &PHashMap {
        self.tree
            .get_or_init(|| self.entries.iter().cloned().collect())
    }

    /// The persistent map of this map's history, taking the kept one if there is one.
    pub fn into_tree(self) -> PHashMap {
        let FlatMap { entries, tree, .. } = self;
        tree.into_inner()
            .unwrap_or_else(|| entries.into_iter().collect())
    }

    /// The entries in first-insertion order (not the map's order: for equality and hashing).
    pub fn entries(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The entries, moved out (the kept tree, if any, is dropped first: its values are then
    /// held by the entries alone, so dropping them later cannot recurse through it).
    pub fn into_entries(self) -> std::vec::IntoIter<(Value, Value)> {
        let FlatMap { entries, tree, .. } = self;
        drop(tree);
        entries.into_iter()
    }
}

impl std::fmt::Debug for FlatMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.entries()).finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::test_rng::Rng;
    use crate::value::{FixedState, MapImpl, PHashMap, SMALL_MAP, SmallEntries, Value};
    use std::hash::BuildHasher;

    /// A map as it was before flat maps, the reference: small up to [`SMALL_MAP`] entries, then
    /// the persistent map made by inserting the small map's entries and every later key.
    #[derive(Clone)]
    enum Model {
        Small(SmallEntries),
        Hash(PHashMap),
    }

    impl Model {
        fn insert(&mut self, k: Value, v: Value) {
            match self {
                Model::Small(e) => {
                    if let Some(slot) = e.iter_mut().find(|(key, _)| *key == k) {
                        slot.1 = v;
                    } else if e.len() < SMALL_MAP {
                        e.push((k, v));
                    } else {
                        let mut m: PHashMap = e.drain(..).collect();
                        m.insert(k, v);
                        *self = Model::Hash(m);
                    }
                }
                Model::Hash(m) => {
                    m.insert(k, v);
                }
            }
        }
        fn remove(&mut self, k: &Value) {
            match self {
                Model::Small(e) => e.retain(|(key, _)| key != k),
                Model::Hash(m) => {
                    m.remove(k);
                }
            }
        }
        fn entries(&self) -> Vec<(Value, Value)> {
            match self {
                Model::Small(e) => e.to_vec(),
                Model::Hash(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            }
        }
    }

    /// Keys of many kinds, some alike (an integer and a float of one value, a keyword and a
    /// string of one text), none equal to another (a vector and a list of the same items
    /// would be; see the module header on which key an update keeps).
    fn pool() -> Vec<Value> {
        let mut keys: Vec<Value> = (0..24).map(Value::Int).collect();
        keys.extend((0..8).map(|i| Value::str(&format!("name {i}"))));
        keys.extend((0..8).map(|i| Value::kw(&format!("name {i}"))));
        keys.extend([
            Value::Float(1.0),
            Value::Nil,
            Value::Bool(true),
            Value::str(""),
        ]);
        keys.push(Value::vector([Value::Int(1), Value::kw("a")]));
        keys.push(Value::set([Value::Int(3)]));
        keys
    }

    fn entries(m: &MapImpl) -> Vec<(Value, Value)> {
        m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    fn hash(m: &MapImpl) -> u64 {
        FixedState::default().hash_one(Value::map(m.clone()))
    }

    /// Every read of `subject` agrees with `model`: the entries in order (printing and seqs
    /// read them), every key's lookup, the size, `=` both ways and the hash.
    fn check(subject: &MapImpl, model: &Model, pool: &[Value], rng: &mut Rng, seed: u64) {
        let plain = model.entries();
        // Order is read only now and then: a read builds a flat map's tree, after which its
        // updates go to the tree, and both paths must be exercised.
        if rng.below(40) == 0 {
            assert_eq!(entries(subject), plain, "seed {seed}: order");
            let reference: MapImpl = match model {
                Model::Small(e) => MapImpl::Small(e.clone()),
                Model::Hash(m) => MapImpl::Hash(m.clone()),
            };
            assert!(subject.same_entries(&reference), "seed {seed}: =");
            assert!(
                reference.same_entries(subject),
                "seed {seed}: = (other way)"
            );
            assert_eq!(hash(subject), hash(&reference), "seed {seed}: hash");
        }
        assert_eq!(subject.len(), plain.len(), "seed {seed}: len");
        for k in pool {
            let want = plain.iter().find(|(key, _)| key == k).map(|(_, v)| v);
            assert_eq!(subject.get(k), want, "seed {seed}: get {k:?}");
            // The lenient lookup: a keyword also finds the string key of its text.
            let lenient = want.or_else(|| match k {
                Value::Keyword(t) => plain
                    .iter()
                    .find(|(key, _)| matches!(key, Value::Str(s) if **s == **t))
                    .map(|(_, v)| v),
                _ => None,
            });
            assert_eq!(
                subject.get_lenient(k),
                lenient,
                "seed {seed}: lenient {k:?}"
            );
        }
    }

    #[test]
    fn flat_maps_read_as_the_persistent_map_of_the_same_updates() {
        let pool = pool();
        let mut reached_flat = 0;
        for seed in 1..=200u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            // Maps that share history, as copies made for an update of a shared map.
            let mut maps = vec![(MapImpl::default(), Model::Small(SmallEntries::new()))];
            for step in 0..120 {
                let at = rng.below(maps.len());
                let k = pool[rng.below(pool.len())].clone();
                let n = maps.len();
                let (subject, model) = &mut maps[at];
                match rng.below(40) {
                    0 => {
                        subject.remove(&k);
                        model.remove(&k);
                    }
                    1 if n < 4 => {
                        let copy = (subject.clone(), model.clone());
                        maps.push(copy);
                    }
                    _ => {
                        let v = Value::Int(i64::from(step));
                        subject.insert(k.clone(), v.clone());
                        model.insert(k, v);
                    }
                }
                for (subject, model) in &maps {
                    reached_flat += usize::from(matches!(subject, MapImpl::Flat(_)));
                    check(subject, model, &pool, &mut rng, seed);
                }
            }
            for (subject, model) in &maps {
                assert_eq!(
                    entries(subject),
                    model.entries(),
                    "seed {seed}: final order"
                );
            }
        }
        assert!(
            reached_flat > 3_000,
            "flat maps were tested: {reached_flat}"
        );
    }

    #[test]
    fn a_flat_map_read_in_order_and_then_updated_becomes_the_persistent_map() {
        let mut m = MapImpl::default();
        for i in 0..20 {
            m.insert(Value::Int(i), Value::Int(i));
        }
        assert!(matches!(m, MapImpl::Flat(_)));
        let first = entries(&m);
        m.insert(Value::Int(3), Value::Int(-3));
        assert!(matches!(m, MapImpl::Hash(_)), "no rebuild per update");
        let mut want = first;
        if let Some(slot) = want.iter_mut().find(|(k, _)| *k == Value::Int(3)) {
            slot.1 = Value::Int(-3);
        }
        assert_eq!(entries(&m), want);
    }

    /// The dense index's bound, hit exactly: with `n` keys in, a new key `k` above them keeps
    /// the table while it needs at most `DENSE_SLACK * (n + 1) + DENSE_MIN` slots, and the first
    /// key past that moves the map to the hash index (for good), every key still found.
    #[test]
    fn the_dense_index_holds_its_slot_bound_and_leaves_at_it() {
        use super::{DENSE_MIN, DENSE_SLACK, FlatMap, Index};
        let dense = |m: &FlatMap| matches!(m.index, Index::Dense(_));
        let int = |k: usize| Value::Int(i64::try_from(k).unwrap_or(0));
        for n in [1usize, 9, 40] {
            let filled = |extra: usize| {
                let mut m = FlatMap::default();
                for k in 0..n {
                    m.insert(int(k), Value::Nil);
                }
                let last = DENSE_SLACK * (n + 1) + DENSE_MIN - 1 + extra;
                m.insert(int(last), Value::Int(1));
                (m, last)
            };
            let (within, last) = filled(0);
            assert!(dense(&within), "{n} keys and {last}");
            let (mut past, last) = filled(1);
            assert!(!dense(&past), "{n} keys and {last}");
            for m in [&within, &past] {
                assert_eq!(m.len(), n + 1);
                assert!(m.get(&int(0)).is_some() && m.get(&int(n - 1)).is_some());
            }
            assert_eq!(past.get(&int(last)), Some(&Value::Int(1)));
            past.insert(int(0), Value::Int(2));
            assert!(!dense(&past), "the hash index stays");
            assert_eq!(past.get(&int(0)), Some(&Value::Int(2)));
        }
    }
}
