//! Collections: access, update, construction. Updates use `Rc::make_mut`, so a collection that
//! is not shared is changed in place and one that is shared is copied structurally (imbl),
//! which keeps `(reduce conj [] xs)` and `(reduce #(assoc %1 %2 %2) {} xs)` linear.

pub use super::keyed::assoc;
use super::keyed::{
    assoc_in, assoc_many, assoc_stacked, dissoc, get_in, non_empty_path, update, update_in,
    update_stacked,
};
use super::{BuiltinDef, Fast, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::eval::seq::SeqIter;
use crate::value::{Coll, MapImpl, PVec, SetImpl, Value};

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "get",
        2,
        3,
        "Value at key (or index), else the default.",
        "(get {:a 1} :a) ;=> 1",
        |_, a| Ok(get(&a[0], &a[1])
            .or_else(|| a.get(2).cloned())
            .unwrap_or_default()),
        Fast::Two(|m, k| Some(Ok(get2(m, k))))
    ),
    def!(
        "get-in",
        2,
        3,
        "Value at a path of keys.",
        "(get-in {:a {:b 1}} [:a :b]) ;=> 1",
        get_in
    ),
    def!(
        "assoc",
        3,
        _,
        "Map with keys set (or vector with index set).",
        "(assoc {} :a 1) ;=> {:a 1}",
        assoc_many,
        Fast::Stacked(assoc_stacked)
    ),
    def!(
        "assoc-in",
        3,
        3,
        "Sets a value at a path, creating maps.",
        "(assoc-in {} [:a :b] 1) ;=> {:a {:b 1}}",
        |_, a| {
            let mut a = a.into_iter();
            let (m, p, v) = (
                a.next().unwrap_or_default(),
                a.next().unwrap_or_default(),
                a.next().unwrap_or_default(),
            );
            assoc_in(m, &non_empty_path(&p, "assoc-in")?, v)
        }
    ),
    def!(
        "dissoc",
        1,
        _,
        "Map without the keys.",
        "(dissoc {:a 1 :b 2} :a) ;=> {:b 2}",
        dissoc
    ),
    def!(
        "update",
        3,
        _,
        "Applies f to the value at key.",
        "(update {:a 1} :a inc) ;=> {:a 2}",
        update,
        Fast::Stacked(update_stacked)
    ),
    def!(
        "update-in",
        3,
        _,
        "Applies f to the value at a path.",
        "(update-in {:a {:b 1}} [:a :b] inc) ;=> {:a {:b 2}}",
        update_in
    ),
    def!(
        "conj",
        0,
        _,
        "Adds items: at the end of a vector, the front of a list, into a map or set.",
        "(conj [1] 2) ;=> [1 2]",
        |_, a| {
            let mut it = a.into_iter();
            let c = it.next().unwrap_or_else(|| Value::vector([]));
            it.try_fold(c, conj)
        }
    ),
    def!(
        "count",
        1,
        1,
        "Number of items.",
        "(count [1 2]) ;=> 2",
        count,
        Fast::One(|c| match c {
            Value::Vector(v) | Value::List(v) =>
                Some(Ok(Value::Int(i64::try_from(v.len()).unwrap_or(i64::MAX)))),
            _ => None,
        })
    ),
    def!(
        "first",
        1,
        1,
        "First item, or nil.",
        "(first [1 2]) ;=> 1",
        |i, a| nth_opt(i, &a[0], 0),
        Fast::One(|c| nth_of_list(c, 0))
    ),
    def!(
        "second",
        1,
        1,
        "Second item, or nil.",
        "(second [1 2]) ;=> 2",
        |i, a| nth_opt(i, &a[0], 1),
        Fast::One(|c| nth_of_list(c, 1))
    ),
    def!(
        "nth",
        2,
        3,
        "Item at index; an error when out of range unless a default is given.",
        "(nth [1 2] 1) ;=> 2",
        nth
    ),
    def!(
        "rest",
        1,
        1,
        "All but the first item, as a seq (never nil).",
        "(rest [1 2]) ;=> (2)",
        |i, a| {
            let r = rest_of(i, &a[0])?;
            Ok(if r.is_nil() { Value::list([]) } else { r })
        }
    ),
    def!(
        "next",
        1,
        1,
        "All but the first item, or nil when none remain.",
        "(next [1]) ;=> nil",
        rest_of_fn
    ),
    def!(
        "last",
        1,
        1,
        "Last item, or nil.",
        "(last [1 2]) ;=> 2",
        |i, a| Ok(i.seq_vec(&a[0])?.pop().unwrap_or_default())
    ),
    def!(
        "keys",
        1,
        1,
        "The keys of a map, or nil.",
        "(keys {:a 1}) ;=> (:a)",
        |_, a| map_part(&a[0], "keys", true)
    ),
    def!(
        "vals",
        1,
        1,
        "The values of a map, or nil.",
        "(vals {:a 1}) ;=> (1)",
        |_, a| map_part(&a[0], "vals", false)
    ),
    def!(
        "contains?",
        2,
        2,
        "True if the key (or index) is present.",
        "(contains? {:a 1} :a) ;=> true",
        |_, a| contains(&a[0], &a[1]).map(Value::Bool)
    ),
    def!(
        "vec",
        1,
        1,
        "A vector of the items.",
        "(vec '(1 2)) ;=> [1 2]",
        |i, a| Ok(Value::vector(i.seq_vec(&a[0])?))
    ),
    def!(
        "vector",
        0,
        _,
        "A vector of the arguments.",
        "(vector 1 2) ;=> [1 2]",
        |_, a| Ok(Value::vector(a))
    ),
    def!(
        "list",
        0,
        _,
        "A list of the arguments.",
        "(list 1 2) ;=> (1 2)",
        |_, a| Ok(Value::list(a))
    ),
    def!(
        "hash-map",
        0,
        _,
        "A map of key/value arguments.",
        "(hash-map :a 1) ;=> {:a 1}",
        |_, a| pairs_map(a, "hash-map")
    ),
    def!(
        "array-map",
        0,
        _,
        "A map of key/value arguments.",
        "(array-map :a 1) ;=> {:a 1}",
        |_, a| pairs_map(a, "array-map")
    ),
    def!(
        "hash-set",
        0,
        _,
        "A set of the arguments.",
        "(hash-set 1 2) ;=> #{1 2}",
        |_, a| Ok(Value::set(a))
    ),
    def!(
        "set",
        1,
        1,
        "A set of the items.",
        "(set [1 1 2]) ;=> #{1 2}",
        |i, a| Ok(Value::set(i.seq_vec(&a[0])?))
    ),
    def!(
        "seq",
        1,
        1,
        "A seq of the items, or nil when empty.",
        "(seq []) ;=> nil",
        seq
    ),
    def!(
        "empty?",
        1,
        1,
        "True if there are no items.",
        "(empty? []) ;=> true",
        |i, a| Ok(Value::Bool(
            nth_opt(i, &a[0], 0)?.is_nil() && is_empty(i, &a[0])?
        ))
    ),
    def!(
        "into",
        0,
        3,
        "Adds all items of from into to (through an optional transducer-free map fn).",
        "(into [] '(1 2)) ;=> [1 2]",
        into
    ),
    def!(
        "concat",
        0,
        _,
        "All items of the collections in order.",
        "(concat [1] [2]) ;=> (1 2)",
        concat
    ),
    def!(
        "cons",
        2,
        2,
        "A seq with x in front.",
        "(cons 1 [2]) ;=> (1 2)",
        |i, mut a| {
            let coll = a.pop().unwrap_or_default();
            let x = a.pop().unwrap_or_default();
            cons(i, x, &coll)
        }
    ),
];

/// `(get coll k)`: maps by key (keyword keys also find string keys), vectors and strings by
/// index, sets by membership; anything else is nil.
pub fn get(coll: &Value, k: &Value) -> Option<Value> {
    match coll {
        Value::Map(m) => m.get_lenient(k).cloned(),
        Value::Vector(v) => match k {
            Value::Int(i) => usize::try_from(*i).ok().and_then(|i| v.get(i).cloned()),
            _ => None,
        },
        Value::Str(s) => match k {
            Value::Int(i) => usize::try_from(*i)
                .ok()
                .and_then(|i| s.chars().nth(i))
                .map(Value::Char),
            _ => None,
        },
        Value::Set(s) => s.contains(k).then(|| k.clone()),
        _ => None,
    }
}

/// `(get m k)` for the fast entry: an integer key of a flat map (`(get by-id id)`, an index
/// `into {}` built) is found and its value shared inline, where `get` takes three calls
/// (`get_lenient`, the index, `Value`'s clone); anything else is `get`'s answer. An integer
/// key has no lenient second key, so the flat map's own lookup is `get_lenient`'s.
#[inline]
fn get2(m: &Value, k: &Value) -> Value {
    if let (Value::Map(map), Value::Int(_)) = (m, k)
        && let MapImpl::Flat(f) = &**map
    {
        return match f.get(k) {
            Some(Value::Map(v)) => Value::Map(v.clone()),
            Some(v) => v.clone(),
            None => Value::Nil,
        };
    }
    get(m, k).unwrap_or_default()
}

/// The key and value of a two-element vector: moved out when the vector is held only here.
/// A fresh `[k v]` keeps them inline: taken out in place, which leaves two nils for the
/// vector's drop to give back without a walk (`release_inline`), and no empty vector to make.
fn pair(mut kv: Coll<PVec>) -> (Value, Value) {
    if let Some(flat) = kv.unique_mut().and_then(PVec::inline_mut)
        && let [k, v] = flat.as_mut_slice()
    {
        return (std::mem::take(k), std::mem::take(v));
    }
    match kv.into_unique() {
        Ok(owned) => {
            let mut it = owned.into_iter();
            (it.next().unwrap_or_default(), it.next().unwrap_or_default())
        }
        Err(shared) => (
            shared.get(0).cloned().unwrap_or_default(),
            shared.get(1).cloned().unwrap_or_default(),
        ),
    }
}

/// `(conj coll x)`.
pub fn conj(coll: Value, x: Value) -> EvalResult {
    match coll {
        Value::Nil => Ok(Value::list([x])),
        Value::Vector(mut xs) => {
            xs.make_mut().push_back(x);
            Ok(Value::Vector(xs))
        }
        Value::List(mut xs) => {
            xs.make_mut().push_front(x);
            Ok(Value::List(xs))
        }
        Value::Set(mut s) => {
            if let SetImpl::Sorted(items) = &*s
                && let Some(first) = items.get_min()
            {
                super::math::compare(first, &x)?;
            }
            s.make_mut().insert(x);
            Ok(Value::Set(s))
        }
        Value::Map(mut m) => {
            match x {
                Value::Vector(kv) if kv.len() == 2 => {
                    let (k, v) = pair(kv);
                    sorted_key_check(&m, &k)?;
                    m.make_mut().insert(k, v);
                }
                Value::Map(other) => {
                    let mm = m.make_mut();
                    for (k, v) in other.iter() {
                        mm.insert(k.clone(), v.clone());
                    }
                }
                Value::Nil => {}
                other => {
                    return Err(expected(
                        "conj",
                        "a [key value] pair or a map to add to a map",
                        &other,
                    ));
                }
            }
            Ok(Value::Map(m))
        }
        Value::Lazy(_) => Ok(crate::eval::lazy::LazySeq::value(
            crate::eval::lazy::Gen::Concat {
                srcs: [
                    SeqIter::Items(std::rc::Rc::new(vec![x]), 0),
                    SeqIter::Lazy(
                        match coll {
                            Value::Lazy(l) => l,
                            _ => return Ok(Value::Nil),
                        },
                        0,
                    ),
                ]
                .into(),
            },
        )),
        other => Err(expected("conj", "a collection", &other)),
    }
}

fn count(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let n = match &a[0] {
        Value::Nil => 0,
        Value::Vector(v) | Value::List(v) => v.len(),
        Value::Map(m) => m.len(),
        Value::Set(s) => s.len(),
        Value::Str(s) => s.chars().count(),
        v @ Value::Lazy(_) => i.seq_vec(v)?.len(),
        other => return Err(expected("count", "a collection", other)),
    };
    Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// For fast paths: element `n` of a vector or list (nil when out of range), `None` for other
/// types.
fn nth_of_list(c: &Value, n: usize) -> Option<EvalResult> {
    match c {
        Value::Vector(xs) | Value::List(xs) => Some(Ok(xs.get(n).cloned().unwrap_or_default())),
        _ => None,
    }
}

/// Element `n` of any seqable, or nil.
pub fn nth_opt(i: &mut Interp<'_>, v: &Value, n: usize) -> EvalResult {
    match v {
        Value::Vector(xs) | Value::List(xs) => Ok(xs.get(n).cloned().unwrap_or_default()),
        Value::Lazy(l) => Ok(l.nth(i, n)?.unwrap_or_default()),
        Value::Str(s) => Ok(s.chars().nth(n).map(Value::Char).unwrap_or_default()),
        Value::Map(m) => Ok(m
            .iter()
            .nth(n)
            .map(|(k, x)| Value::vector([k.clone(), x.clone()]))
            .unwrap_or_default()),
        Value::Set(s) => Ok(s.iter().nth(n).cloned().unwrap_or_default()),
        other => {
            let mut it = SeqIter::new(i, other)?;
            for _ in 0..n {
                it.next(i)?;
            }
            Ok(it.next(i)?.unwrap_or_default())
        }
    }
}

fn nth(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let idx = super::math::int_arg(&a[1], "nth")?;
    let default = a.get(2).cloned();
    let out_of_range = || {
        EvalError::new(
            ErrorKind::IndexOutOfBounds,
            "nth",
            format!("index {idx} out of bounds"),
        )
    };
    let Ok(n) = usize::try_from(idx) else {
        return default.ok_or_else(out_of_range);
    };
    if a[0].is_nil() {
        return Ok(default.unwrap_or_default());
    }
    if let Value::Map(_) | Value::Set(_) = &a[0] {
        return Err(EvalError::type_err(
            "nth",
            format!("nth not supported on {}s", a[0].type_name()),
        ));
    }
    let mut it = SeqIter::new(i, &a[0])?;
    for _ in 0..n {
        if it.next(i)?.is_none() {
            return default.ok_or_else(out_of_range);
        }
    }
    match it.next(i)? {
        Some(v) => Ok(v),
        None => default.ok_or_else(out_of_range),
    }
}

/// All but the first element: a list, a lazy seq, or nil when nothing is left.
pub fn rest_of(i: &mut Interp<'_>, v: &Value) -> EvalResult {
    match v {
        Value::Vector(xs) | Value::List(xs) => Ok(if xs.len() <= 1 {
            Value::Nil
        } else {
            Value::List(Coll::new(xs.skip(1)))
        }),
        other => {
            let mut it = SeqIter::new(i, other)?;
            it.next(i)?;
            it.rest_value(i)
        }
    }
}

fn rest_of_fn(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    rest_of(i, &a[0])
}

fn map_part(v: &Value, op: &str, keys: bool) -> EvalResult {
    match v {
        Value::Nil => Ok(Value::Nil),
        Value::Map(m) if m.is_empty() => Ok(Value::Nil),
        Value::Map(m) => Ok(Value::list(
            m.iter()
                .map(|(k, x)| if keys { k.clone() } else { x.clone() }),
        )),
        other => Err(expected(op, "a map", other)),
    }
}

pub(super) fn contains(coll: &Value, k: &Value) -> EvalResult<bool> {
    Ok(match coll {
        Value::Nil => false,
        Value::Map(m) => m.contains_key(k),
        Value::Set(s) => s.contains(k),
        Value::Vector(v) => {
            matches!(k, Value::Int(i) if usize::try_from(*i).is_ok_and(|i| i < v.len()))
        }
        Value::Str(s) => {
            // Clojure takes any number's `intValue` as a string index (`1.9` is index 1).
            #[allow(clippy::cast_possible_truncation)]
            let i = match k {
                Value::Int(i) => *i,
                Value::Float(x) => i64::from(*x as i32),
                _ => return Ok(false),
            };
            usize::try_from(i).is_ok_and(|i| i < s.chars().count())
        }
        other => {
            return Err(EvalError::arg(
                "contains?",
                format!("contains? not supported on {}", other.type_name()),
            ));
        }
    })
}

fn pairs_map(a: Vec<Value>, op: &str) -> EvalResult {
    if !a.len().is_multiple_of(2) {
        return Err(EvalError::arg(
            op,
            format!("{op} needs an even number of arguments"),
        ));
    }
    let mut m = MapImpl::default();
    let mut it = a.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        m.insert(k, v);
    }
    Ok(Value::map(m))
}

fn seq(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    match &a[0] {
        Value::Lazy(l) => Ok(if l.nth(i, 0)?.is_none() {
            Value::Nil
        } else {
            a[0].clone()
        }),
        Value::List(xs) if !xs.is_empty() => Ok(a[0].clone()),
        Value::Vector(xs) if !xs.is_empty() => Ok(Value::List(xs.clone())),
        other => {
            let xs = i.seq_vec(other)?;
            Ok(if xs.is_empty() {
                Value::Nil
            } else {
                Value::list(xs)
            })
        }
    }
}

fn is_empty(i: &mut Interp<'_>, v: &Value) -> EvalResult<bool> {
    Ok(match v {
        Value::Nil => true,
        Value::Vector(x) | Value::List(x) => x.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Set(s) => s.is_empty(),
        Value::Str(s) => s.is_empty(),
        Value::Lazy(l) => l.nth(i, 0)?.is_none(),
        other => return Err(expected("empty?", "a collection", other)),
    })
}

/// `into`'s entry (also the fused `(into to (map f xs))`'s, `eval::fused`).
pub(crate) fn into(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    let Some(to) = it.next() else {
        return Ok(Value::vector([]));
    };
    let (xf, from) = match (it.next(), it.next()) {
        (Some(from), None) => (None, from),
        (Some(xf), Some(from)) => (Some(xf), from),
        (None, _) => return Ok(to),
    };
    if let Some(xf) = xf {
        return super::xform::into_with(i, to, &xf, &from);
    }
    // A vector or list held only here (a fresh `map` threaded in) gives up its elements, so a
    // `[k v]` pair it held alone is taken apart, not copied.
    if let Value::Vector(xs) | Value::List(xs) = from {
        return match xs.into_unique() {
            Ok(owned) => conj_all(i, to, owned.into_iter()),
            Err(shared) => conj_all(i, to, shared.iter().cloned()),
        };
    }
    let mut it = SeqIter::new(i, &from)?;
    drop(from);
    let mut acc = to;
    while let Some(x) = it.next(i)? {
        i.tick()?;
        acc = conj(acc, x)?;
    }
    Ok(acc)
}

/// `into`'s loop over the elements of a vector or list: a step and a `conj` each.
fn conj_all(i: &mut Interp<'_>, to: Value, xs: impl Iterator<Item = Value>) -> EvalResult {
    let mut acc = to;
    for x in xs {
        i.tick()?;
        acc = conj(acc, x)?;
    }
    Ok(acc)
}

fn concat(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    if a.iter().any(|x| matches!(x, Value::Lazy(_))) {
        let srcs = a
            .iter()
            .map(|x| SeqIter::new(i, x))
            .collect::<EvalResult<_>>()?;
        return Ok(crate::eval::lazy::LazySeq::value(
            crate::eval::lazy::Gen::Concat { srcs },
        ));
    }
    let mut out = PVec::new();
    for x in &a {
        out.extend(i.seq_vec(x)?);
    }
    Ok(Value::List(Coll::new(out)))
}

fn cons(i: &mut Interp<'_>, x: Value, coll: &Value) -> EvalResult {
    if let Value::Lazy(_) = coll {
        return conj(coll.clone(), x);
    }
    let mut out = match coll {
        Value::Vector(xs) | Value::List(xs) => (**xs).clone(),
        other => i.seq_vec(other)?.into_iter().collect(),
    };
    out.push_front(x);
    Ok(Value::List(Coll::new(out)))
}

/// Keys of a sorted map must be comparable with the keys already in it.
pub(super) fn sorted_key_check(m: &MapImpl, k: &Value) -> EvalResult<()> {
    if let MapImpl::Sorted(sm) = m
        && let Some((first, _)) = sm.get_min()
    {
        super::math::compare(first, k)?;
    }
    Ok(())
}

/// A set value from items, keeping a sorted set sorted.
pub fn set_like(template: &SetImpl, items: impl IntoIterator<Item = Value>) -> Value {
    let mut s = match template {
        SetImpl::Sorted(_) => SetImpl::Sorted(imbl::OrdSet::new()),
        SetImpl::Hash(_) => SetImpl::Hash(Default::default()),
    };
    for x in items {
        s.insert(x);
    }
    Value::Set(Coll::new(s))
}
