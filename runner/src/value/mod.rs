//! The interpreter's own value type.
//!
//! It extends the plain data of `ptc_shared::Value` with functions, regexes, characters, thrown
//! exceptions, dates and lazy sequences. Collections sit behind `Rc`: updated in place when not
//! shared (`Rc::make_mut`), else copied persistently, O(log n) with structural sharing. Vectors
//! and lists are plain `Vec`s until first copied while shared (`crate::pvec`), large maps and
//! sets are `imbl`'s (`map`). Small maps keep insertion order like Clojure's array-map, and those
//! of a shared key sequence hold their keys once (`record`); large maps use a fixed-seed hash
//! order, so output stays deterministic.
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
pub use flat::FlatMap;
pub(crate) use flat::{key_hash, same_key};
pub use map::{MapImpl, SMALL_MAP, SetImpl, SmallEntries};
pub use record::{KeyHint, Record, Shape, Shapes};

mod flat;
mod map;
mod record;
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

impl From<Box<str>> for Text {
    fn from(s: Box<str>) -> Text {
        Text(Rc::new(s))
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

    /// The contents to change in place when this is their only owner; `None` when shared.
    pub fn unique_mut(&mut self) -> Option<&mut T> {
        Rc::get_mut(&mut self.0)
    }

    /// The contents, moved out when this is their only owner (so a consumer can take the
    /// elements instead of copying them); the collection back when it is shared.
    pub fn into_unique(mut self) -> Result<T, Coll<T>> {
        match Rc::get_mut(&mut self.0) {
            Some(inner) => Ok(std::mem::take(inner)),
            None => Err(self),
        }
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

/// Most drops are of a shared collection (a count to decrement): that test is inlined where
/// values are dropped, and only the last owner's drop calls out.
impl<T: Contents> Drop for Coll<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(inner) = Rc::get_mut(&mut self.0) {
            drop_contents(inner);
        }
    }
}

/// The contents of a collection its last owner drops: nested values through a work list.
#[inline(never)]
fn drop_contents<T: Contents>(inner: &mut T) {
    if !inner.release_flat() {
        drop_nested(std::mem::take(inner), |c, out| c.drain_into(out));
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
    /// For the last owner's drop: true when nothing that may nest is left, after giving back
    /// in place what can be (see [`release_inline`]); false leaves the rest to the work list.
    fn release_flat(&mut self) -> bool {
        self.is_flat()
    }
}

/// Gives back the values of a small vector kept inline (not spilled) for their last owner, a
/// record's or a vector's: a string's count inline, a number nothing, so `Value`'s out-of-line
/// drop is not called once per value; the emptied buffer, which owns no heap memory, is then
/// forgotten. At the first other value (a collection; also a keyword, rare here: one arm per
/// kind measured 1 % more on interp p5's records) it stops with false: the values met so far
/// are nil, the rest are dropped as usual by whoever holds the vector.
#[inline(always)]
pub(crate) fn release_inline<A: smallvec::Array<Item = Value>>(
    vals: &mut smallvec::SmallVec<A>,
) -> bool {
    if vals.spilled() {
        return false;
    }
    // All numbers (a row of `{:id i :cat c :amount a}`): one tight test, no walk.
    if !vals.iter().all(Value::holds_nothing) {
        for v in vals.iter_mut() {
            match v {
                Value::Str(_) => {
                    if let Value::Str(t) = std::mem::take(v) {
                        drop(t);
                    }
                }
                v if v.holds_nothing() => {}
                _ => return false,
            }
        }
    }
    std::mem::forget(std::mem::take(vals));
    true
}

/// Collections up to this length are checked for flatness when dropped.
const FLAT_CHECK: usize = 16;

impl Contents for PVec {
    /// A flat form is read as a slice: the usual pair or tuple is two or three tag tests, with
    /// no iterator over the two forms and no registers saved for the tree's walk.
    #[inline]
    fn is_flat(&self) -> bool {
        match self.as_slice() {
            Some(xs) => xs.len() <= FLAT_CHECK && xs.iter().all(Value::is_scalar),
            None => tree_is_flat(self),
        }
    }
    fn drain_into(self, out: &mut Vec<Value>) {
        out.extend(self);
    }
    /// A pair or tuple held inline (`[id sku amt]`, a split's pieces) gives its values back in
    /// place; anything else is checked by [`Contents::is_flat`].
    #[inline]
    fn release_flat(&mut self) -> bool {
        match self.inline_mut() {
            Some(vals) => release_inline(vals),
            None => self.is_flat(),
        }
    }
}

/// [`Contents::is_flat`] of a vector in the persistent form (rarely dropped small).
#[inline(never)]
fn tree_is_flat(v: &PVec) -> bool {
    v.len() <= FLAT_CHECK && v.iter().all(Value::is_scalar)
}

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
    /// A list of the elements a builder pushed to a plain `Vec` (a push there is a few
    /// instructions, where `PVec::push_back` checks its form each time): a long one's buffer
    /// becomes the list's, not copied as [`Value::list`] copies what it collects.
    pub fn list_of(items: Vec<Value>) -> Value {
        Value::List(Coll::new(PVec::from_vec(items)))
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

    /// Whether dropping the value gives nothing back (no count, no allocation), so that it may
    /// be forgotten instead of passed to its out-of-line drop.
    #[inline(always)]
    pub fn holds_nothing(&self) -> bool {
        matches!(
            self,
            Value::Nil | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Char(_)
        )
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
            (Map(a), Map(b)) => deeper(|| a.same_entries(b)),
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
                let sum = m.iter_unordered().fold(0u64, |acc, (k, v)| {
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
