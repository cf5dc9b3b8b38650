//! Maps and sets: what a `Value::Map` and a `Value::Set` hold, with their lookups.
//!
//! A map is small (at most [`SMALL_MAP`] entries in insertion order, as Clojure's array-map),
//! a record (a small map whose keys are a shared shape's, `value::record`), hashed (a fixed-seed
//! `imbl` hash map past that, or while built by one owner the flat map of `value::flat`, which
//! reads in that hash map's order), or sorted (`sorted-map`). Keys are distinct in every form. A record
//! and the small map of the same entries in the same order are one value: every operation here
//! gives the same answer for both. Keyword lookups try identity first: keywords of one program
//! are interned.

use super::flat::FlatMap;
use super::record::{KeyHint, Record};
use super::{Contents, PHashMap, POrdMap, PSet, Text, Value};

impl Contents for MapImpl {
    fn is_flat(&self) -> bool {
        match self {
            MapImpl::Small(entries) => entries.iter().all(|(k, v)| k.is_scalar() && v.is_scalar()),
            // A shape's keys are scalars.
            MapImpl::Record(r) => r.vals().iter().all(Value::is_scalar),
            _ => false,
        }
    }
    fn drain_into(self, out: &mut Vec<Value>) {
        let pairs: Box<dyn Iterator<Item = (Value, Value)>> = match self {
            MapImpl::Small(entries) => Box::new(entries.into_iter()),
            MapImpl::Record(r) => Box::new(r.into_entries()),
            MapImpl::Flat(f) => Box::new(f.into_entries()),
            MapImpl::Hash(m) => Box::new(m.into_iter()),
            MapImpl::Sorted(m) => Box::new(m.into_iter()),
        };
        for (k, v) in pairs {
            out.push(k);
            out.push(v);
        }
    }
}

impl Contents for SetImpl {
    fn is_flat(&self) -> bool {
        false
    }
    fn drain_into(self, out: &mut Vec<Value>) {
        match self {
            SetImpl::Hash(s) => out.extend(s),
            SetImpl::Sorted(s) => out.extend(s),
        }
    }
}

/// Maps with at most this many entries are kept as an insertion-ordered vector.
pub const SMALL_MAP: usize = 8;

/// The entries of a small map: up to four live inside the map itself, so the usual record-like
/// map literal (`{:id i :total t}`) costs one allocation, not two.
pub type SmallEntries = smallvec::SmallVec<[(Value, Value); 4]>;

/// A map: small insertion-ordered, a record of a shared shape, large hashed, or sorted
/// (`sorted-map`).
#[derive(Debug)]
pub enum MapImpl {
    Small(SmallEntries),
    /// A small map whose keys are a shared shape's (made by map literals with constant keys and
    /// by imported data); any update that changes its keys makes it `Small`.
    Record(Record),
    /// A large map grown from a small one by inserts while held by one owner: it reads as the
    /// `Hash` map of the same inserts would, and becomes that map when copied, read in order and
    /// then updated, or when a key is removed (`value::flat`).
    Flat(FlatMap),
    Hash(PHashMap),
    Sorted(POrdMap),
}

/// A copy is made to update a shared map (`Rc::make_mut`): a flat map's copy is its persistent
/// map, which the original keeps, so the copy and any later copy share structure.
impl Clone for MapImpl {
    fn clone(&self) -> MapImpl {
        match self {
            MapImpl::Small(e) => MapImpl::Small(e.clone()),
            MapImpl::Record(r) => MapImpl::Record(r.clone()),
            MapImpl::Flat(f) => MapImpl::Hash(f.tree().clone()),
            MapImpl::Hash(m) => MapImpl::Hash(m.clone()),
            MapImpl::Sorted(m) => MapImpl::Sorted(m.clone()),
        }
    }
}

/// A set: hashed, or sorted (`sorted-set`).
#[derive(Clone, Debug)]
pub enum SetImpl {
    Hash(PSet),
    Sorted(imbl::OrdSet<Value>),
}

impl Default for MapImpl {
    fn default() -> MapImpl {
        MapImpl::Small(SmallEntries::new())
    }
}

impl Default for SetImpl {
    fn default() -> SetImpl {
        SetImpl::Hash(PSet::default())
    }
}

impl MapImpl {
    /// An empty map sized for `n` entries.
    pub fn with_capacity(n: usize) -> MapImpl {
        if n <= SMALL_MAP {
            MapImpl::Small(SmallEntries::with_capacity(n))
        } else {
            MapImpl::Hash(PHashMap::default())
        }
    }

    /// Inserts a key known not to be present (no duplicate scan for small maps).
    pub fn insert_new(&mut self, k: Value, v: Value) {
        match self {
            MapImpl::Small(entries) if entries.len() < SMALL_MAP => entries.push((k, v)),
            MapImpl::Record(r) => {
                if let Err((k, v)) = r.grow(k, v) {
                    self.unshape();
                    self.insert_new(k, v);
                }
            }
            other => other.insert(k, v),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            MapImpl::Small(v) => v.len(),
            MapImpl::Record(r) => r.len(),
            MapImpl::Flat(f) => f.len(),
            MapImpl::Hash(m) => m.len(),
            MapImpl::Sorted(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Exact-key lookup.
    pub fn get(&self, k: &Value) -> Option<&Value> {
        match self {
            MapImpl::Small(v) => {
                // Keywords of one program are interned: identity finds the usual hit cheaply.
                if let Value::Keyword(want) = k
                    && let Some((_, x)) = v
                        .iter()
                        .find(|(key, _)| matches!(key, Value::Keyword(s) if Text::ptr_eq(s, want)))
                {
                    return Some(x);
                }
                v.iter().find(|(key, _)| key == k).map(|(_, x)| x)
            }
            MapImpl::Record(r) => r.get(k),
            MapImpl::Flat(f) => f.get(k),
            MapImpl::Hash(m) => m.get(k),
            MapImpl::Sorted(m) => m.get(k),
        }
    }

    /// Lookup that finds string key `"k"` for keyword `:k` when there is no keyword key, because
    /// context and tool results arrive as JSON with string keys.
    pub fn get_lenient(&self, k: &Value) -> Option<&Value> {
        match (self, k) {
            (MapImpl::Small(entries), Value::Keyword(want)) => small_get_lenient(entries, want),
            (MapImpl::Record(r), Value::Keyword(want)) => r.get_lenient(want),
            // Only a keyword has a second key to try: any other key is looked up once.
            (MapImpl::Flat(f), _) if !matches!(k, Value::Keyword(_)) => f.get(k),
            _ => self.get_lenient_general(k),
        }
    }

    /// [`MapImpl::get_lenient`] by definition: the exact key, else the string key.
    pub fn get_lenient_general(&self, k: &Value) -> Option<&Value> {
        self.get(k).or_else(|| match k {
            Value::Keyword(s) => self.get(&Value::Str(s.clone())),
            _ => None,
        })
    }

    pub fn contains_key(&self, k: &Value) -> bool {
        self.get(k).is_some()
    }

    /// The value of exact key `k`, to replace in place, in the map forms whose update keeps the
    /// key found (small maps, records, flat maps not yet read in order); `None` for the others
    /// (a persistent hash map's insert stores the key it is given) and for a missing key: those
    /// go through [`MapImpl::insert`].
    pub fn get_mut(&mut self, k: &Value) -> Option<&mut Value> {
        match self {
            MapImpl::Small(entries) => entries.iter_mut().find(|(key, _)| key == k).map(|(_, v)| v),
            MapImpl::Record(r) => r.get_mut(k),
            MapImpl::Flat(f) if !f.has_tree() => f.get_mut(k),
            _ => None,
        }
    }

    /// Inserts or replaces, promoting a small map to a hashed one when it grows.
    pub fn insert(&mut self, k: Value, v: Value) {
        match self {
            MapImpl::Small(entries) => {
                if let Some(slot) = entries.iter_mut().find(|(key, _)| *key == k) {
                    slot.1 = v;
                } else if entries.len() < SMALL_MAP {
                    entries.push((k, v));
                } else {
                    // Grown past a small map by one owner: flat until shared (`value::flat`).
                    let mut m = FlatMap::from_entries(entries.drain(..));
                    m.insert(k, v);
                    *self = MapImpl::Flat(m);
                }
            }
            // A present key keeps the shape (and its position); a new one goes last, in the
            // grown shape while a record can hold it.
            MapImpl::Record(r) => {
                if let Err(v) = r.replace(&k, v)
                    && let Err((k, v)) = r.grow(k, v)
                {
                    self.unshape();
                    self.insert(k, v);
                }
            }
            MapImpl::Flat(f) if !f.has_tree() => f.insert(k, v),
            // Read in order since its last update: from now on the persistent map (an ordered
            // read after every update would otherwise rebuild the tree each time).
            MapImpl::Flat(_) => {
                self.persist();
                self.insert(k, v);
            }
            MapImpl::Hash(m) => {
                m.insert(k, v);
            }
            MapImpl::Sorted(m) => {
                m.insert(k, v);
            }
        }
    }

    /// A flat map becomes the persistent map of the same history.
    fn persist(&mut self) {
        if matches!(self, MapImpl::Flat(_))
            && let MapImpl::Flat(f) = std::mem::take(self)
        {
            *self = MapImpl::Hash(f.into_tree());
        }
    }

    pub fn remove(&mut self, k: &Value) {
        match self {
            MapImpl::Small(entries) => entries.retain(|(key, _)| key != k),
            MapImpl::Record(r) => {
                if r.get(k).is_some() {
                    self.unshape();
                    self.remove(k);
                }
            }
            // A flat map never removes (its order is its history of inserts).
            MapImpl::Flat(f) => {
                if f.get(k).is_some() {
                    self.persist();
                    self.remove(k);
                }
            }
            MapImpl::Hash(m) => {
                m.remove(k);
            }
            MapImpl::Sorted(m) => {
                m.remove(k);
            }
        }
    }

    /// Entries in the map's order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&Value, &Value)> + '_> {
        match self {
            MapImpl::Small(v) => Box::new(v.iter().map(|(k, x)| (k, x))),
            MapImpl::Record(r) => Box::new(r.iter()),
            MapImpl::Flat(f) => Box::new(f.tree().iter()),
            MapImpl::Hash(m) => Box::new(m.iter()),
            MapImpl::Sorted(m) => Box::new(m.iter()),
        }
    }

    /// Entries in some order (for reads where order cannot show: equality, hashing): a flat
    /// map's without building its tree.
    pub fn iter_unordered(&self) -> Box<dyn Iterator<Item = (&Value, &Value)> + '_> {
        match self {
            MapImpl::Flat(f) => Box::new(f.entries()),
            other => other.iter(),
        }
    }

    /// An empty map of the same kind (sorted stays sorted).
    pub fn empty_like(&self) -> MapImpl {
        match self {
            MapImpl::Sorted(_) => MapImpl::Sorted(POrdMap::new()),
            _ => MapImpl::Small(SmallEntries::new()),
        }
    }

    /// A record becomes the small map of its entries (before an update that changes its keys).
    fn unshape(&mut self) {
        if matches!(self, MapImpl::Record(_))
            && let MapImpl::Record(r) = std::mem::take(self)
        {
            *self = MapImpl::Small(r.into_entries().collect());
        }
    }

    /// Equality of the entries, in any order: two records of one shape compare their values
    /// pairwise (the keys are the same), anything else looks every entry up.
    pub fn same_entries(&self, other: &MapImpl) -> bool {
        if let (MapImpl::Record(a), MapImpl::Record(b)) = (self, other)
            && a.same_shape(b)
        {
            return a.vals() == b.vals();
        }
        self.len() == other.len() && self.iter_unordered().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl MapImpl {
    /// [`MapImpl::get_lenient`] of keyword `want`, trying first the entry at `hint`, where the
    /// same call site found its key last time: records of one shape (the rows of a JSON context)
    /// keep their keys in one order, so one comparison usually finds it. A string key found
    /// there is the answer only if no keyword key has the same text (a keyword key wins, as in
    /// `get_lenient`); a miss looks the key up as usual and remembers where it was.
    ///
    /// A record of the shape the hint last saw is answered inline, where the call site is (two
    /// address compares and a load); everything else goes to the out-of-line lookup, whose
    /// register saves the common case would otherwise pay on every read.
    #[inline(always)]
    pub fn get_keyword_hinted(&self, want: &Text, hint: &KeyHint) -> Option<&Value> {
        if let MapImpl::Record(r) = self
            && let Some(v) = r.get_seen(want, hint)
        {
            return Some(v);
        }
        self.get_keyword_looked_up(want, hint)
    }

    /// [`MapImpl::get_keyword_hinted`] when the hint has not seen this record's shape.
    #[inline(never)]
    fn get_keyword_looked_up(&self, want: &Text, hint: &KeyHint) -> Option<&Value> {
        let entries = match self {
            MapImpl::Small(entries) => entries,
            MapImpl::Record(r) => return r.get_hinted(want, hint),
            _ => return self.get_lenient_general(&Value::Keyword(want.clone())),
        };
        if let Some((key, x)) = entries.get(hint.at()) {
            match key {
                // Keys are distinct: a keyword key with this text is the exact key.
                Value::Keyword(s) if Text::ptr_eq(s, want) || **s == **want => return Some(x),
                Value::Str(s) if **s == **want && !has_keyword_text(entries, want) => {
                    return Some(x);
                }
                _ => {}
            }
        }
        let found = small_get_lenient(entries, want)?;
        if let Some(i) = entries.iter().position(|(_, x)| std::ptr::eq(x, found)) {
            hint.set_at(i);
        }
        Some(found)
    }
}

/// Whether a keyword key has text `want` (a JSON record has none: one tag test per key; a plain
/// loop, where `Iterator::any` with a closure cost 79 instructions a call on 7 keys, this 65).
fn has_keyword_text(entries: &SmallEntries, want: &str) -> bool {
    for (k, _) in entries {
        if let Value::Keyword(t) = k
            && **t == *want
        {
            return true;
        }
    }
    false
}

/// A keyword looked up in a small map, leniently: the identical keyword, else in one pass the
/// keyword key with its text wherever it is (keys are distinct, so at most one matches), else
/// the string key with its text. Record maps from JSON have string keys, so `(:status row)`
/// used to scan three times and clone the key.
fn small_get_lenient<'a>(entries: &'a SmallEntries, want: &Text) -> Option<&'a Value> {
    // Keywords of one program are interned: identity finds the usual hit cheaply.
    let same = |key: &Value| matches!(key, Value::Keyword(s) if Text::ptr_eq(s, want));
    if let Some((_, x)) = entries.iter().find(|(key, _)| same(key)) {
        return Some(x);
    }
    let mut by_string = None;
    for (key, x) in entries {
        match key {
            Value::Keyword(s) if **s == **want => return Some(x),
            Value::Str(s) if by_string.is_none() && **s == **want => by_string = Some(x),
            _ => {}
        }
    }
    by_string
}

impl FromIterator<(Value, Value)> for MapImpl {
    fn from_iter<I: IntoIterator<Item = (Value, Value)>>(iter: I) -> MapImpl {
        let mut m = MapImpl::Small(SmallEntries::new());
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl SetImpl {
    pub fn len(&self) -> usize {
        match self {
            SetImpl::Hash(s) => s.len(),
            SetImpl::Sorted(s) => s.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn contains(&self, v: &Value) -> bool {
        match self {
            SetImpl::Hash(s) => s.contains(v),
            SetImpl::Sorted(s) => s.contains(v),
        }
    }
    pub fn insert(&mut self, v: Value) {
        match self {
            SetImpl::Hash(s) => {
                s.insert(v);
            }
            SetImpl::Sorted(s) => {
                s.insert(v);
            }
        }
    }
    pub fn remove(&mut self, v: &Value) {
        match self {
            SetImpl::Hash(s) => {
                s.remove(v);
            }
            SetImpl::Sorted(s) => {
                s.remove(v);
            }
        }
    }
    pub fn iter(&self) -> Box<dyn Iterator<Item = &Value> + '_> {
        match self {
            SetImpl::Hash(s) => Box::new(s.iter()),
            SetImpl::Sorted(s) => Box::new(s.iter()),
        }
    }
}
