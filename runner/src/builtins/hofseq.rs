//! Higher-order sequence functions: `map filter remove keep mapcat reduce reductions some
//! every?` and their variants. Over a lazy (possibly infinite) source they return lazy seqs;
//! over finite data they are eager, sharing the generator code of `eval::lazy` where there is
//! one. Called without a collection, the ones Clojure allows return a transducer.
//!
//! `reduce` moves its accumulator into each call, so `(reduce conj [] xs)` updates one vector
//! in place (linear overall), and it stops at a `reduced` value.

use super::hof::unreduced;
use super::xform::{XStep, xform};
use super::{BuiltinDef, expected};
use crate::def;
use crate::error::EvalResult;
use crate::eval::lazy::{Gen, LazySeq, lazy_or_list, too_long};
use crate::eval::seq::SeqIter;
use crate::eval::{Interp, Lambda};
use crate::value::{PVec, Value};
use std::rc::Rc;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "map",
        1,
        _,
        "Applies f to each item (of several collections in step).",
        "(map inc [1 2]) ;=> (2 3)",
        map
    ),
    def!(
        "mapv",
        2,
        _,
        "Like map, into a vector.",
        "(mapv inc [1 2]) ;=> [2 3]",
        |i, a| {
            let m = map(i, a)?;
            Ok(Value::vector(i.seq_vec(&m)?))
        }
    ),
    def!(
        "map-indexed",
        1,
        2,
        "Applies f to each index and item.",
        "(map-indexed vector [:a :b]) ;=> ([0 :a] [1 :b])",
        indexed
    ),
    def!(
        "mapcat",
        1,
        _,
        "Concatenates the results of mapping f.",
        "(mapcat reverse [[1 2] [3]]) ;=> (2 1 3)",
        mapcat
    ),
    def!(
        "filter",
        1,
        2,
        "Items for which pred is truthy.",
        "(filter odd? [1 2 3]) ;=> (1 3)",
        |i, a| filter(i, a, true)
    ),
    def!(
        "remove",
        1,
        2,
        "Items for which pred is falsy.",
        "(remove odd? [1 2 3]) ;=> (2)",
        |i, a| filter(i, a, false)
    ),
    def!(
        "filterv",
        2,
        2,
        "Like filter, into a vector.",
        "(filterv odd? [1 2 3]) ;=> [1 3]",
        |i, a| {
            let m = filter(i, a, true)?;
            Ok(Value::vector(i.seq_vec(&m)?))
        }
    ),
    def!(
        "keep",
        1,
        2,
        "The non-nil results of (f x).",
        "(keep :a [{:a 1} {}]) ;=> (1)",
        |i, a| keep(i, a, false)
    ),
    def!(
        "keep-indexed",
        1,
        2,
        "The non-nil results of (f index x).",
        "(keep-indexed #(when (odd? %1) %2) [:a :b]) ;=> (:b)",
        |i, a| keep(i, a, true)
    ),
    def!(
        "reduce",
        2,
        3,
        "Folds f over the items, with an optional initial value; stops at reduced.",
        "(reduce + 0 [1 2]) ;=> 3",
        reduce
    ),
    def!(
        "reduce-kv",
        3,
        3,
        "Folds f over the keys and values of a map (indexes and items of a vector).",
        "(reduce-kv (fn [a k v] (+ a v)) 0 {:a 1}) ;=> 1",
        reduce_kv
    ),
    def!(
        "reductions",
        2,
        3,
        "The intermediate values of reduce.",
        "(reductions + [1 2 3]) ;=> (1 3 6)",
        reductions
    ),
    def!(
        "some",
        2,
        2,
        "First truthy (pred x), or nil.",
        "(some even? [1 2]) ;=> true",
        |i, a| find(i, &a[0], &a[1], true)
    ),
    def!(
        "every?",
        2,
        2,
        "True if pred holds for every item.",
        "(every? odd? [1 3]) ;=> true",
        |i, a| Ok(Value::Bool(!find(i, &a[0], &a[1], false)?.truthy()))
    ),
    def!(
        "not-every?",
        2,
        2,
        "True if pred fails for some item.",
        "(not-every? odd? [1 2]) ;=> true",
        |i, a| Ok(Value::Bool(find(i, &a[0], &a[1], false)?.truthy()))
    ),
    def!(
        "not-any?",
        2,
        2,
        "True if pred holds for no item.",
        "(not-any? odd? [2 4]) ;=> true",
        |i, a| Ok(Value::Bool(!find(i, &a[0], &a[1], true)?.truthy()))
    ),
];

fn sources(i: &mut Interp<'_>, colls: &[Value]) -> EvalResult<Vec<SeqIter>> {
    colls.iter().map(|c| SeqIter::new(i, c)).collect()
}

fn map(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    if a.is_empty() {
        return Ok(xform(vec![XStep::Map(f)]));
    }
    if let [Value::Vector(xs) | Value::List(xs)] = a.as_slice() {
        // The common case: one finite collection.
        i.tick_n(xs.len() as u64)?;
        // One result per element: room for all of them at once, not grown by doubling.
        let mut out = Vec::with_capacity(xs.len());
        // A fn is called with each element borrowed (a quick fn reads it in place).
        if let Value::Fn(l) = &f {
            for x in xs.iter() {
                out.push(i.apply1_fn(l, x)?);
            }
            return Ok(Value::list_of(out));
        }
        let hint = Default::default();
        // `(map :total rows)`: `apply1_ref`'s read of a map, the field copied by `share_field`
        // (inline for the usual numbers and maps) instead of `Value`'s out-of-line clone.
        if let Value::Keyword(k) = &f {
            for x in xs.iter() {
                out.push(match x {
                    // (Not `map_or(Value::Nil, ..)`: its unused nil is dropped out of line.)
                    Value::Map(m) => match m.get_keyword_hinted(k, &hint) {
                        Some(v) => share_field(v),
                        None => Value::Nil,
                    },
                    _ => i.apply1_ref(&f, x, &hint)?,
                });
            }
            return Ok(Value::list_of(out));
        }
        for x in xs.iter() {
            out.push(i.apply1_ref(&f, x, &hint)?);
        }
        return Ok(Value::list_of(out));
    }
    let srcs = sources(i, &a)?;
    let lazy = srcs.iter().all(SeqIter::is_lazy);
    let g = Gen::Map {
        f,
        srcs,
        index: None,
    };
    lazy_or_list(g, lazy, i)
}

fn indexed(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    let Some(coll) = a.first() else {
        return Ok(xform(vec![XStep::MapIndexed(f, 0)]));
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = Gen::Map {
        f,
        srcs: vec![src],
        index: Some(0),
    };
    lazy_or_list(g, lazy, i)
}

fn mapcat(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    if a.is_empty() {
        return Ok(xform(vec![XStep::MapCat(f)]));
    }
    let srcs = sources(i, &a)?;
    let lazy = srcs.iter().all(SeqIter::is_lazy);
    let g = Gen::MapCat { f, srcs, cur: None };
    lazy_or_list(g, lazy, i)
}

fn filter(i: &mut Interp<'_>, mut a: Vec<Value>, keep: bool) -> EvalResult {
    let pred = a.remove(0);
    let Some(coll) = a.first() else {
        return Ok(xform(vec![XStep::Filter(pred, keep)]));
    };
    if let Value::Lazy(_) = coll {
        let src = SeqIter::new(i, coll)?;
        return Ok(LazySeq::value(Gen::Filter { pred, src, keep }));
    }
    let mut out = Vec::new();
    if let Value::Vector(xs) | Value::List(xs) = coll {
        // Walked in place: no copy of the source's elements first.
        i.tick_n(xs.len() as u64)?;
        if let Value::Fn(l) = &pred {
            for x in xs.iter() {
                if test1(i, l, x)? == keep {
                    out.push(share(x));
                }
            }
            return Ok(Value::list_of(out));
        }
        let hint = Default::default();
        for x in xs.iter() {
            if i.apply1_ref(&pred, x, &hint)?.truthy() == keep {
                out.push(x.clone());
            }
        }
        return Ok(Value::list_of(out));
    }
    for x in i.seq_vec(coll)? {
        if i.apply1(&pred, x.clone())?.truthy() == keep {
            out.push(x);
        }
    }
    Ok(Value::list_of(out))
}

/// Whether `(l x)` is truthy. A quick test answers a boolean, taken apart here (inlined
/// into the loop): a boolean or nil holds nothing, so it is forgotten rather than passed to
/// `Value`'s out-of-line drop (~14 instructions an element in p1's `filter`s).
#[inline(always)]
fn test1(i: &mut Interp<'_>, l: &Rc<Lambda>, x: &Value) -> EvalResult<bool> {
    Ok(crate::eval::special::truthy(i.apply1_fn(l, x)?))
}

/// A copy of `x` for a result or an argument: a map (the usual element of a filtered seq, the
/// usual argument of a fn) shares its `Rc` inline; anything else goes to `Value`'s clone (out
/// of line).
#[inline(always)]
pub(crate) fn share(x: &Value) -> Value {
    match x {
        Value::Map(m) => Value::Map(m.clone()),
        _ => x.clone(),
    }
}

/// A copy of a field for a result: a number (the usual field summed or compared) copied
/// inline, anything else as [`share`] copies it. (`share` itself with these arms measured
/// 1.6 % more instructions on p1's `filter`s.)
#[inline(always)]
fn share_field(x: &Value) -> Value {
    match x {
        Value::Float(f) => Value::Float(*f),
        Value::Int(n) => Value::Int(*n),
        _ => share(x),
    }
}

fn keep(i: &mut Interp<'_>, mut a: Vec<Value>, indexed: bool) -> EvalResult {
    let f = a.remove(0);
    let Some(coll) = a.first() else {
        return Ok(xform(vec![if indexed {
            XStep::KeepIndexed(f, 0)
        } else {
            XStep::Keep(f)
        }]));
    };
    if let (Value::Vector(xs) | Value::List(xs), false) = (coll, indexed) {
        return keep_coll(i, &f, xs);
    }
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = Gen::Keep {
        f,
        src,
        index: indexed.then_some(0),
    };
    lazy_or_list(g, lazy, i)
}

/// `keep` over a vector or list, walked in place with each element borrowed (a fn is called as
/// `map` calls it), where the generator would copy each element out of a cursor. It charges what
/// draining `Gen::Keep` charges, in the same order: a step before each element and one at the
/// end (each kept element ends one generator step, each nil is one more step), and the same
/// `max_iterations` check before each kept element.
fn keep_coll(i: &mut Interp<'_>, f: &Value, xs: &PVec) -> EvalResult {
    i.tick()?;
    let mut out = Vec::new();
    let hint = Default::default();
    for x in xs.iter() {
        let y = match f {
            Value::Fn(l) => i.apply1_fn(l, x)?,
            _ => i.apply1_ref(f, x, &hint)?,
        };
        if let Value::Nil = y {
            // Nothing to give back: not passed to `Value`'s out-of-line drop.
            std::mem::forget(y);
        } else {
            if out.len() as u64 >= i.limits.max_iterations {
                return Err(too_long(i));
            }
            out.push(y);
        }
        i.tick()?;
    }
    Ok(Value::list_of(out))
}

/// `reduce`'s entry (also the fused `(reduce g init (keep f xs))`'s, `eval::fused`).
pub(crate) fn reduce(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut a = a.into_iter();
    let f = a.next().unwrap_or_default();
    let (init, coll) = match (a.next(), a.next()) {
        (Some(coll), None) => (None, coll),
        (Some(init), Some(coll)) => (Some(init), coll),
        _ => return Ok(Value::Nil),
    };
    let (init, coll) = match (init, coll) {
        // A collection held only here (a fresh `map`, `filter` or `keep` threaded in) gives up
        // its elements, each dropped as soon as `f` is done with it; a shared one is read.
        (init, Value::Vector(xs) | Value::List(xs)) => {
            return match xs.into_unique() {
                Ok(owned) => reduce_coll(i, &f, init, owned.into_iter()),
                Err(shared) => reduce_coll(i, &f, init, shared.iter().cloned()),
            };
        }
        other => other,
    };
    let mut it = SeqIter::new(i, &coll)?;
    // Drop our handle, so an unshared source is not kept alive twice.
    drop(coll);
    let mut acc = match init {
        Some(v) => v,
        None => match it.next(i)? {
            Some(first) => first,
            None => return i.apply(&f, vec![]),
        },
    };
    while let Some(x) = it.next(i)? {
        i.tick()?;
        // Move the accumulator in, so builtins like conj can update it in place.
        acc = i.apply2(&f, acc, x)?;
        if let Some(v) = unreduced(&acc) {
            return Ok(v);
        }
    }
    Ok(acc)
}

/// `reduce` over the elements of a vector or list: the collection's own iterator, no index
/// lookups.
fn reduce_coll(
    i: &mut Interp<'_>,
    f: &Value,
    init: Option<Value>,
    mut it: impl Iterator<Item = Value>,
) -> EvalResult {
    let mut acc = match init {
        Some(v) => v,
        None => match it.next() {
            Some(first) => first,
            None => return i.apply(f, vec![]),
        },
    };
    // The callee is resolved once, not per element: `(reduce + xs)` steps numbers inline.
    let prim = match f {
        Value::Builtin(b) => match b.fast {
            super::Fast::Prim(op) => Some(op),
            _ => None,
        },
        _ => None,
    };
    for x in it {
        i.tick()?;
        if let Some(op) = prim {
            // Two numbers hold nothing: the old accumulator and the element are forgotten, not
            // passed to `Value`'s out-of-line drop (two calls an element of `(reduce + xs)`).
            if number(&acc) && number(&x) {
                // The prim's answer, as `call2` would take it (never a `reduced`): integers
                // inline (an overflow through `apply`), doubles (`:total`s) inline too.
                let r = match (&acc, &x) {
                    (Value::Int(a), Value::Int(b)) => match op.ints(*a, *b) {
                        Some(v) => Some(Ok(v)),
                        None => op.apply(&acc, &x),
                    },
                    _ => op.apply_inline(&acc, &x),
                };
                if let Some(r) = r {
                    std::mem::forget(std::mem::replace(&mut acc, r?));
                    std::mem::forget(x);
                    continue;
                }
            } else if let Some(r) = op.apply(&acc, &x) {
                acc = r?;
                continue;
            }
        }
        // Move the accumulator in, so builtins like conj can update it in place.
        acc = i.apply2(f, acc, x)?;
        if let Some(v) = unreduced(&acc) {
            return Ok(v);
        }
    }
    Ok(acc)
}

/// Whether `v` is a number (which holds nothing to drop).
#[inline(always)]
fn number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_))
}

fn reduce_kv(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut a = a.into_iter();
    let (f, mut acc, coll) = (
        a.next().unwrap_or_default(),
        a.next().unwrap_or_default(),
        a.next().unwrap_or_default(),
    );
    let pairs: Vec<(Value, Value)> = match &coll {
        Value::Nil => Vec::new(),
        Value::Map(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Vector(xs) => xs
            .iter()
            .enumerate()
            .map(|(k, v)| (Value::Int(i64::try_from(k).unwrap_or(i64::MAX)), v.clone()))
            .collect(),
        other => return Err(expected("reduce-kv", "a map or vector", other)),
    };
    drop(coll);
    for (k, v) in pairs {
        i.tick()?;
        acc = i.apply(&f, vec![acc, k, v])?;
        if let Some(v) = unreduced(&acc) {
            return Ok(v);
        }
    }
    Ok(acc)
}

fn reductions(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (f, init, coll) = match a.as_slice() {
        [f, coll] => (f.clone(), None, coll),
        [f, init, coll] => (f.clone(), Some(init.clone()), coll),
        _ => return Ok(Value::Nil),
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = match init {
        None => Gen::Reductions {
            f,
            src,
            acc: None,
            ended: false,
        },
        Some(init) => {
            // With an init, it comes first; then the usual steps follow.
            let first = unreduced(&init);
            let ended = first.is_some();
            let start = first.unwrap_or(init);
            let rest = Gen::Reductions {
                f,
                src,
                acc: Some(start.clone()),
                ended,
            };
            let rest = if lazy {
                LazySeq::value(rest)
            } else {
                Value::list(crate::eval::lazy::drain(rest, i)?)
            };
            let srcs = [Value::list([start]), rest]
                .iter()
                .map(|v| SeqIter::new(i, v))
                .collect::<EvalResult<_>>()?;
            Gen::Concat { srcs }
        }
    };
    lazy_or_list(g, lazy, i)
}

/// The first item for which `(pred x)` is `want`-truthy: returns the pred's result (or true).
fn find(i: &mut Interp<'_>, pred: &Value, coll: &Value, want: bool) -> EvalResult {
    let mut it = SeqIter::new(i, coll)?;
    while let Some(x) = it.next(i)? {
        i.tick()?;
        let r = i.apply1(pred, x)?;
        if r.truthy() == want {
            return Ok(if want { r } else { Value::Bool(true) });
        }
    }
    Ok(Value::Nil)
}
