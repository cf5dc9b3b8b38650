//! The interpreter's own value type.
//!
//! It extends the plain data of `ptc_shared::Value` with functions, regexes, characters, thrown
//! exceptions, dates and lazy sequences. Collections sit behind `Rc`: updated in place when not
//! shared (`Rc::make_mut`), else copied persistently, O(log n) with structural sharing. Vectors
//! and lists are plain `Vec`s until first copied while shared (`crate::pvec`), maps and sets are
//! `imbl`'s. Small maps keep insertion order like Clojure's
//! array-map; large maps use a fixed-seed hash order, so output stays deterministic.
//!
//! Equality is Clojure's `=`: integers never equal floats, a list equals a vector with the same
//! elements, maps and sets compare unordered. `Hash` agrees with that equality.

use crate::builtins::{BuiltinDef, NativeFn};
use crate::eval::Lambda;
use crate::eval::lazy::LazySeq;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// A fixed-seed hasher, so map and set order is the same on every run. (A program can only
/// slow itself down with colliding keys, within its own limits.)
pub type FixedState = foldhash::fast::FixedState;
pub use crate::pvec::PVec;
pub type PHashMap = imbl::GenericHashMap<Value, Value, FixedState, imbl::shared_ptr::RcK>;
pub type PSet = imbl::GenericHashSet<Value, FixedState, imbl::shared_ptr::RcK>;
pub type POrdMap = imbl::OrdMap<Value, Value>;

/// The text of a string, keyword or symbol: shared, immutable, and one pointer wide (the text
/// sits behind the count), so that a `Value` is two words and an `EvalResult` comes back in
/// registers.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(Rc<Box<str>>);

impl Text {
    pub fn ptr_eq(a: &Text, b: &Text) -> bool {
        Rc::ptr_eq(&a.0, &b.0)
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(Rc::new(Box::from(s)))
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(Rc::new(s.into_boxed_str()))
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::from(s.as_str())
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self.0, f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A shared, persistent collection. Cloning shares; `make_mut` copies only when shared.
///
/// Its `Drop` exists for one reason: the compiler's drop glue recurses once per nesting level,
/// so dropping 100k-deep data (easy to build with `loop`) would overflow the stack. When the
/// last owner drops, the contents are dropped on a stack that `stacker` grows on demand.
#[derive(Debug, Default)]
pub struct Coll<T: Contents>(Rc<T>);

impl<T: Contents> Coll<T> {
    pub fn new(t: T) -> Coll<T> {
        Coll(Rc::new(t))
    }

    /// Mutable access, copying (structurally, for imbl) only if the collection is shared.
    pub fn make_mut(&mut self) -> &mut T
    where
        T: Clone,
    {
        Rc::make_mut(&mut self.0)
    }

    pub fn ptr_eq(a: &Coll<T>, b: &Coll<T>) -> bool {
        Rc::ptr_eq(&a.0, &b.0)
    }
}

impl<T: Contents> Clone for Coll<T> {
    fn clone(&self) -> Coll<T> {
        Coll(self.0.clone())
    }
}

impl<T: Contents> std::ops::Deref for Coll<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Contents> Drop for Coll<T> {
    fn drop(&mut self) {
        if let Some(inner) = Rc::get_mut(&mut self.0)
            && !inner.is_flat()
        {
            drop_nested(std::mem::take(inner), |c, out| c.drain_into(out));
        }
    }
}

/// Nesting levels dropped by plain recursion before deeper contents are deferred.
const DROP_DEFER_DEPTH: u32 = 128;

thread_local! {
    /// How many [`drop_nested`] calls are active on this thread.
    static DROP_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// Values whose drop was deferred by a too-deep [`drop_nested`]; the outermost one drains it.
    static DEFERRED: std::cell::RefCell<Vec<Value>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Drops the contents of a collection, closure or native that may nest. The compiler's drop
/// glue recurses once per nesting level, and data 200,000 levels deep is one `loop` away; so up
/// to [`DROP_DEFER_DEPTH`] levels drop as usual (no cost for ordinary data), and deeper contents
/// are moved (`drain`) to a thread-local list that the outermost call empties, one value at a
/// time. The list holds at most the values the data had: no stack, no growth beyond the heap.
pub(crate) fn drop_nested<T>(contents: T, drain: impl FnOnce(T, &mut Vec<Value>)) {
    let depth = DROP_DEPTH.with(std::cell::Cell::get);
    if depth >= DROP_DEFER_DEPTH {
        // Moving values out drops none of them, so the list is never borrowed twice.
        let deferred = DEFERRED.with(|d| match d.try_borrow_mut() {
            Ok(mut list) => {
                drain(contents, &mut list);
                None
            }
            Err(_) => Some(contents),
        });
        drop(deferred);
        return;
    }
    DROP_DEPTH.with(|d| d.set(depth + 1));
    drop(contents);
    if depth == 0 {
        while let Some(v) = DEFERRED.with(|d| d.try_borrow_mut().ok().and_then(|mut l| l.pop())) {
            drop(v);
        }
    }
    DROP_DEPTH.with(|d| d.set(depth));
}

/// What a [`Coll`] holds.
pub trait Contents: Default {
    /// True when no element can hold a collection, so dropping cannot recurse and needs no
    /// work list (and no move out of the `Rc`). Checked only on small collections.
    fn is_flat(&self) -> bool;
    /// Moves every element (keys and values of a map) to `out`.
    fn drain_into(self, out: &mut Vec<Value>);
}

/// Collections up to this length are checked for flatness when dropped.
const FLAT_CHECK: usize = 16;

impl Contents for PVec {
    fn is_flat(&self) -> bool {
        self.len() <= FLAT_CHECK && self.iter().all(Value::is_scalar)
    }
    fn drain_into(self, out: &mut Vec<Value>) {
        out.extend(self);
    }
}

impl Contents for MapImpl {
    fn is_flat(&self) -> bool {
        match self {
            MapImpl::Small(entries) => entries.iter().all(|(k, v)| k.is_scalar() && v.is_scalar()),
            _ => false,
        }
    }
    fn drain_into(self, out: &mut Vec<Value>) {
        let pairs: Box<dyn Iterator<Item = (Value, Value)>> = match self {
            MapImpl::Small(entries) => Box::new(entries.into_iter()),
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

/// An exception value, as thrown by `throw` / `ex-info` or produced by a caught error.
#[derive(Debug, Clone, PartialEq)]
pub struct ExInfo {
    pub message: String,
    pub data: Value,
    /// The error kind for caught runtime errors (`"type_error"`, ...); `None` for `ex-info`.
    pub kind: Option<&'static str>,
}

/// A date-time value of the bounded java.time interop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Temporal {
    /// Days since 1970-01-01.
    LocalDate(i64),
    /// Milliseconds since the epoch, UTC.
    Instant(i64),
    /// A duration in milliseconds.
    Duration(i64),
}

/// A PTC-Lisp value inside the interpreter.
#[derive(Clone, Default)]
pub enum Value {
    #[default]
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Char(char),
    Str(Text),
    Keyword(Text),
    Symbol(Text),
    Vector(Coll<PVec>),
    /// A list or a realized sequence.
    List(Coll<PVec>),
    Map(Coll<MapImpl>),
    Set(Coll<SetImpl>),
    /// A possibly infinite lazy sequence, realized on demand.
    Lazy(Rc<LazySeq>),
    Fn(Rc<Lambda>),
    Builtin(&'static BuiltinDef),
    Native(Rc<NativeFn>),
    Regex(Rc<regex::Regex>),
    Error(Rc<ExInfo>),
    Temporal(Temporal),
}

/// A map: small insertion-ordered, large hashed, or sorted (`sorted-map`).
#[derive(Clone, Debug)]
pub enum MapImpl {
    Small(SmallEntries),
    Hash(PHashMap),
    Sorted(POrdMap),
}

/// A set: hashed, or sorted (`sorted-set`).
#[derive(Clone, Debug)]
pub enum SetImpl {
    Hash(PSet),
    Sorted(imbl::OrdSet<Value>),
}

// Two words: every evaluation step moves values, and results travel in registers (error.rs).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Value>() == 16);

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(crate::value::Text::from(s))
    }
    pub fn kw(s: &str) -> Value {
        Value::Keyword(crate::value::Text::from(s))
    }
    pub fn vector(items: impl IntoIterator<Item = Value>) -> Value {
        Value::Vector(Coll::new(items.into_iter().collect()))
    }
    pub fn list(items: impl IntoIterator<Item = Value>) -> Value {
        Value::List(Coll::new(items.into_iter().collect()))
    }
    pub fn map(m: MapImpl) -> Value {
        Value::Map(Coll::new(m))
    }
    pub fn empty_map() -> Value {
        Value::Map(Coll::new(MapImpl::Small(SmallEntries::new())))
    }
    pub fn set(items: impl IntoIterator<Item = Value>) -> Value {
        Value::Set(Coll::new(SetImpl::Hash(items.into_iter().collect())))
    }

    /// Whether the value can hold no other value (so dropping it cannot recurse).
    pub fn is_scalar(&self) -> bool {
        matches!(
            self,
            Value::Nil
                | Value::Bool(_)
                | Value::Int(_)
                | Value::Float(_)
                | Value::Char(_)
                | Value::Str(_)
                | Value::Keyword(_)
                | Value::Symbol(_)
                | Value::Builtin(_)
                | Value::Regex(_)
                | Value::Temporal(_)
        )
    }

    /// Clojure truthiness.
    pub fn truthy(&self) -> bool {
        !matches!(self, Value::Nil | Value::Bool(false))
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Whether the value can be called as a function.
    pub fn is_fn(&self) -> bool {
        matches!(self, Value::Fn(_) | Value::Builtin(_) | Value::Native(_))
    }

    /// Type name for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Char(_) => "char",
            Value::Str(_) => "string",
            Value::Keyword(_) => "keyword",
            Value::Symbol(_) => "symbol",
            Value::Vector(_) => "vector",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
            Value::Lazy(_) => "lazy-seq",
            Value::Fn(_) | Value::Builtin(_) | Value::Native(_) => "function",
            Value::Regex(_) => "regex",
            Value::Error(_) => "exception",
            Value::Temporal(Temporal::LocalDate(_)) => "LocalDate",
            Value::Temporal(Temporal::Instant(_)) => "Instant",
            Value::Temporal(Temporal::Duration(_)) => "Duration",
        }
    }
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
            other => other.insert(k, v),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            MapImpl::Small(v) => v.len(),
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
            MapImpl::Hash(m) => m.get(k),
            MapImpl::Sorted(m) => m.get(k),
        }
    }

    /// Lookup that finds string key `"k"` for keyword `:k` when there is no keyword key, because
    /// context and tool results arrive as JSON with string keys.
    pub fn get_lenient(&self, k: &Value) -> Option<&Value> {
        match (self, k) {
            (MapImpl::Small(entries), Value::Keyword(want)) => small_get_lenient(entries, want),
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

    /// Inserts or replaces, promoting a small map to a hashed one when it grows.
    pub fn insert(&mut self, k: Value, v: Value) {
        match self {
            MapImpl::Small(entries) => {
                if let Some(slot) = entries.iter_mut().find(|(key, _)| *key == k) {
                    slot.1 = v;
                } else if entries.len() < SMALL_MAP {
                    entries.push((k, v));
                } else {
                    let mut m: PHashMap = entries.drain(..).collect();
                    m.insert(k, v);
                    *self = MapImpl::Hash(m);
                }
            }
            MapImpl::Hash(m) => {
                m.insert(k, v);
            }
            MapImpl::Sorted(m) => {
                m.insert(k, v);
            }
        }
    }

    pub fn remove(&mut self, k: &Value) {
        match self {
            MapImpl::Small(entries) => entries.retain(|(key, _)| key != k),
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
            MapImpl::Hash(m) => Box::new(m.iter()),
            MapImpl::Sorted(m) => Box::new(m.iter()),
        }
    }

    /// An empty map of the same kind (sorted stays sorted).
    pub fn empty_like(&self) -> MapImpl {
        match self {
            MapImpl::Sorted(_) => MapImpl::Sorted(POrdMap::new()),
            _ => MapImpl::Small(SmallEntries::new()),
        }
    }
}

impl MapImpl {
    /// [`MapImpl::get_lenient`] of keyword `want`, trying first the entry at `hint`, where the
    /// same call site found its key last time: records of one shape (the rows of a JSON context)
    /// keep their keys in one order, so one comparison usually finds it. A string key found
    /// there is the answer only if no keyword key has the same text (a keyword key wins, as in
    /// `get_lenient`); a miss looks the key up as usual and remembers where it was.
    pub fn get_keyword_hinted(&self, want: &Text, hint: &std::cell::Cell<u32>) -> Option<&Value> {
        let MapImpl::Small(entries) = self else {
            return self.get_lenient_general(&Value::Keyword(want.clone()));
        };
        if let Some((key, x)) = entries.get(hint.get() as usize) {
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
            hint.set(u32::try_from(i).unwrap_or(0));
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

/// Runs a walk one nesting level deeper on a stack that `stacker` grows on demand. Equality and
/// hashing are trait methods (no error to return), and data may nest as deep as the heap budget
/// allows, so they grow the stack instead of counting: the stack used is proportional to the
/// depth, which the value's own heap already paid for.
fn deeper<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

impl PartialEq for Value {
    /// Sequences compare with a work list (data nests 200,000 levels deep in one `loop`); maps
    /// and sets look their elements up, which recurses only through collections used as keys.
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        if !matches!(self, Vector(_) | List(_)) {
            return self.eq_one(other);
        }
        // Nested sequences wait in `todo` (which allocates only if there are any).
        let mut todo: Vec<(&Value, &Value)> = Vec::new();
        let mut pair = (self, other);
        loop {
            match pair {
                (Vector(x) | List(x), Vector(y) | List(y)) => {
                    if x.len() != y.len() {
                        return false;
                    }
                    if !Coll::ptr_eq(x, y) {
                        for (a, b) in x.iter().zip(y.iter()) {
                            if matches!(a, Vector(_) | List(_)) {
                                todo.push((a, b));
                            } else if !a.eq_one(b) {
                                return false;
                            }
                        }
                    }
                }
                (a, b) if !a.eq_one(b) => return false,
                _ => {}
            }
            match todo.pop() {
                Some(next) => pair = next,
                None => return true,
            }
        }
    }
}

impl Value {
    /// Equality of one level: maps and sets by lookup (on a stack `stacker` grows, for
    /// collections used as keys), anything else but sequences directly.
    fn eq_one(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Map(a), Map(b)) => {
                deeper(|| a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v)))
            }
            (Set(a), Set(b)) => deeper(|| a.len() == b.len() && a.iter().all(|k| b.contains(k))),
            _ => self.eq_flat(other),
        }
    }
}

impl Value {
    /// Equality of everything but the collections.
    fn eq_flat(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Nil, Nil) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a == b,
            (Char(a), Char(b)) => a == b,
            // Keywords of one program are interned by the reader: pointer equality is the fast path.
            (Str(a), Str(b)) | (Keyword(a), Keyword(b)) | (Symbol(a), Symbol(b)) => {
                Text::ptr_eq(a, b) || a == b
            }
            (Lazy(a), Lazy(b)) => Rc::ptr_eq(a, b),
            (Fn(a), Fn(b)) => Rc::ptr_eq(a, b),
            (Builtin(a), Builtin(b)) => std::ptr::eq(*a, *b),
            (Native(a), Native(b)) => Rc::ptr_eq(a, b),
            (Regex(a), Regex(b)) => Rc::ptr_eq(a, b),
            (Error(a), Error(b)) => a == b,
            (Temporal(a), Temporal(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

/// How many levels of nesting a hash looks at. Deeper levels do not contribute: equal values
/// still hash equally (the cut is by structure), and hashing never recurses without bound.
const HASH_DEPTH: u32 = 64;

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.hash_at(state, 0);
    }
}

impl Value {
    fn hash_at<H: Hasher>(&self, state: &mut H, depth: u32) {
        if depth >= HASH_DEPTH {
            return self.type_name().hash(state);
        }
        let depth = depth + 1;
        match self {
            Value::Nil => 0u8.hash(state),
            Value::Bool(b) => b.hash(state),
            Value::Int(i) => i.hash(state),
            Value::Float(f) => (if *f == 0.0 { 0.0f64 } else { *f }).to_bits().hash(state),
            Value::Char(c) => c.hash(state),
            Value::Str(s) => (1u8, &**s).hash(state),
            Value::Keyword(s) => (2u8, &**s).hash(state),
            Value::Symbol(s) => (3u8, &**s).hash(state),
            Value::Vector(v) | Value::List(v) => {
                4u8.hash(state);
                v.len().hash(state);
                for x in v.iter() {
                    x.hash_at(state, depth);
                }
            }
            Value::Map(m) => {
                5u8.hash(state);
                // Order-independent: sum of per-entry hashes.
                let sum = m.iter().fold(0u64, |acc, (k, v)| {
                    acc.wrapping_add(hash_one(|h| {
                        k.hash_at(h, depth);
                        v.hash_at(h, depth);
                    }))
                });
                sum.hash(state);
            }
            Value::Set(s) => {
                6u8.hash(state);
                let sum = s.iter().fold(0u64, |acc, k| {
                    acc.wrapping_add(hash_one(|h| k.hash_at(h, depth)))
                });
                sum.hash(state);
            }
            Value::Temporal(t) => t.hash(state),
            Value::Error(e) => e.message.hash(state),
            // Identity-compared values: hash their kind only (equal values share a kind).
            other => other.type_name().hash(state),
        }
    }
}

/// The hasher of one map entry or set element (summed, so the order does not matter).
type EntryHasher = <FixedState as std::hash::BuildHasher>::Hasher;

fn hash_one(f: impl FnOnce(&mut EntryHasher)) -> u64 {
    let mut h = std::hash::BuildHasher::build_hasher(&FixedState::default());
    f(&mut h);
    h.finish()
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::print::pr_str(self))
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Value) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    /// A total order for sorted collections; `compare` uses [`crate::builtins::compare`].
    fn cmp(&self, other: &Value) -> std::cmp::Ordering {
        crate::builtins::compare_total(self, other)
    }
}
