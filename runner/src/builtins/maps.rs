//! Maps and sets beyond the basics of `coll`: `merge merge-with select-keys zipmap find key val
//! update-keys update-vals sorted-map sorted-set disj`.
//!
//! Sorted collections order keys with `compare`; keys that `compare` cannot order (a keyword and
//! a string) are an error when they meet, as in Clojure. A map entry is a `[k v]` vector, so
//! `key`/`val` accept any two-element vector.

use super::coll::{conj, contains, get};
use super::math::compare;
use super::{BuiltinDef, Fast, expected};
use crate::def;
use crate::error::{EvalError, EvalResult};
use crate::eval::Interp;
use crate::eval::seq::SeqIter;
use crate::value::{Coll, MapImpl, POrdMap, SetImpl, Value};

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "merge",
        0,
        _,
        "Maps merged left to right; nil is skipped.",
        "(merge {:a 1} {:b 2}) ;=> {:a 1, :b 2}",
        merge
    ),
    def!(
        "select-keys",
        2,
        2,
        "Map of only the given keys.",
        "(select-keys {:a 1 :b 2} [:a]) ;=> {:a 1}",
        select_keys
    ),
    def!(
        "zipmap",
        2,
        2,
        "Map from keys to values, pairwise.",
        "(zipmap [:a :b] [1 2]) ;=> {:a 1, :b 2}",
        zipmap
    ),
    def!(
        "find",
        2,
        2,
        "The [key value] entry for key, or nil.",
        "(find {:a 1} :a) ;=> [:a 1]",
        |_, a| find(&a[0], &a[1])
    ),
    def!(
        "key",
        1,
        1,
        "The key of a map entry.",
        "(key (first {:a 1})) ;=> :a",
        |_, a| entry_part(&a[0], "key", 0),
        Fast::One(|e| Some(entry_part(e, "key", 0)))
    ),
    def!(
        "val",
        1,
        1,
        "The value of a map entry.",
        "(val (first {:a 1})) ;=> 1",
        |_, a| entry_part(&a[0], "val", 1),
        Fast::One(|e| Some(entry_part(e, "val", 1)))
    ),
    def!(
        "merge-with",
        1,
        _,
        "Merges maps; values of a key in several maps are combined with f.",
        "(merge-with + {:a 1} {:a 2}) ;=> {:a 3}",
        merge_with
    ),
    def!(
        "update-keys",
        2,
        2,
        "The map with f applied to every key.",
        "(update-keys {:a 1} name) ;=> {\"a\" 1}",
        |i, a| update_entries(i, &a[0], &a[1], true)
    ),
    def!(
        "update-vals",
        2,
        2,
        "The map with f applied to every value.",
        "(update-vals {:a 1} inc) ;=> {:a 2}",
        |i, a| update_entries(i, &a[0], &a[1], false)
    ),
    def!(
        "replace",
        2,
        2,
        "coll with every item that is a key of smap (a map, or a vector by index) replaced by its value.",
        "(replace {1 :one} [1 2 1]) ;=> [:one 2 :one]",
        replace
    ),
    def!(
        "sorted-map",
        0,
        _,
        "A map of key/value arguments kept sorted by key.",
        "(sorted-map :b 2 :a 1) ;=> {:a 1, :b 2}",
        sorted_map
    ),
    def!(
        "sorted-set",
        0,
        _,
        "A set of the arguments kept sorted.",
        "(sorted-set 3 1 2) ;=> #{1 2 3}",
        |_, a| {
            check_comparable(&a, "sorted-set")?;
            Ok(Value::Set(Coll::new(SetImpl::Sorted(
                a.into_iter().collect(),
            ))))
        }
    ),
    def!(
        "disj",
        1,
        _,
        "The set without the given items.",
        "(disj #{1 2} 1) ;=> #{2}",
        disj
    ),
];

fn find(coll: &Value, k: &Value) -> EvalResult {
    Ok(match coll {
        Value::Nil => Value::Nil,
        Value::Map(m) => m
            .get(k)
            .map(|v| Value::vector([k.clone(), v.clone()]))
            .unwrap_or_default(),
        Value::Vector(xs) => match k {
            Value::Int(n) => usize::try_from(*n)
                .ok()
                .and_then(|ix| xs.get(ix))
                .map(|v| Value::vector([k.clone(), v.clone()]))
                .unwrap_or_default(),
            _ => Value::Nil,
        },
        other => return Err(expected("find", "a map or vector", other)),
    })
}

fn entry_part(v: &Value, op: &str, ix: usize) -> EvalResult {
    match v {
        Value::Vector(xs) if xs.len() == 2 => Ok(xs.get(ix).cloned().unwrap_or_default()),
        other => Err(expected(op, "a map entry", other)),
    }
}

fn merge_with(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    let mut maps = a.into_iter().filter(|m| !m.is_nil());
    let Some(mut acc) = maps.next() else {
        return Ok(Value::Nil);
    };
    for m in maps {
        let Value::Map(m) = m else {
            return Err(expected("merge-with", "maps", &m));
        };
        for (k, v) in m.iter() {
            let merged = match super::coll::get(&acc, k) {
                Some(old) if contains_key(&acc, k) => i.apply2(&f, old, v.clone())?,
                _ => v.clone(),
            };
            acc = super::coll::assoc(acc, k.clone(), merged)?;
        }
    }
    Ok(acc)
}

/// Whether `merge-with` finds an entry for `k` in its accumulator (a map, or a vector by index).
/// `(replace smap coll)`: a vector stays a vector, anything else gives a list.
fn replace(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let smap = &a[0];
    let items = i.seq_vec(&a[1])?;
    let mut out = Vec::with_capacity(items.len());
    for x in items {
        let found = if super::coll::contains(smap, &x)? {
            super::coll::get(smap, &x)
        } else {
            None
        };
        out.push(found.unwrap_or(x));
    }
    Ok(if matches!(a[1], Value::Vector(_)) {
        Value::vector(out)
    } else {
        Value::list(out)
    })
}

fn contains_key(m: &Value, k: &Value) -> bool {
    match (m, k) {
        (Value::Map(m), k) => m.contains_key(k),
        (Value::Vector(v), Value::Int(i)) => usize::try_from(*i).is_ok_and(|i| i < v.len()),
        _ => false,
    }
}

fn update_entries(i: &mut Interp<'_>, m: &Value, f: &Value, keys: bool) -> EvalResult {
    let op = if keys { "update-keys" } else { "update-vals" };
    let m = match m {
        Value::Nil => return Ok(Value::empty_map()),
        Value::Map(m) => m,
        // Clojure walks a vector with reduce-kv: its indexes are the keys.
        Value::Vector(v) => return update_indexed(i, v, f, keys),
        other => return Err(expected(op, "a map", other)),
    };
    let mut out = if keys {
        MapImpl::default()
    } else {
        m.empty_like()
    };
    i.tick_n(m.len() as u64)?;
    for (k, v) in m.iter() {
        if keys {
            out.insert(i.apply1(f, k.clone())?, v.clone());
        } else {
            out.insert(k.clone(), i.apply1(f, v.clone())?);
        }
    }
    Ok(Value::map(out))
}

/// `update-vals` of a vector is a vector; `update-keys` of one is a map from `(f index)`.
fn update_indexed(i: &mut Interp<'_>, v: &crate::value::PVec, f: &Value, keys: bool) -> EvalResult {
    i.tick_n(v.len() as u64)?;
    if !keys {
        let mut out = Vec::with_capacity(v.len());
        for x in v.iter() {
            out.push(i.apply1(f, x.clone())?);
        }
        return Ok(Value::vector(out));
    }
    let mut out = MapImpl::default();
    for (k, x) in v.iter().enumerate() {
        let k = i64::try_from(k).unwrap_or(i64::MAX);
        out.insert(i.apply1(f, Value::Int(k))?, x.clone());
    }
    Ok(Value::map(out))
}

/// An error unless every item can be ordered against the first by `compare`.
pub fn check_comparable(items: &[Value], op: &str) -> EvalResult<()> {
    if let Some(first) = items.first() {
        for x in items {
            compare(first, x).map_err(|e| EvalError::type_err(op, e.to_string()))?;
        }
    }
    Ok(())
}

fn sorted_map(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    if !a.len().is_multiple_of(2) {
        return Err(EvalError::arg(
            "sorted-map",
            "sorted-map needs an even number of arguments",
        ));
    }
    let keys: Vec<Value> = a.iter().step_by(2).cloned().collect();
    check_comparable(&keys, "sorted-map")?;
    let mut m = POrdMap::new();
    let mut it = a.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        m.insert(k, v);
    }
    Ok(Value::map(MapImpl::Sorted(m)))
}

fn disj(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    match it.next().unwrap_or_default() {
        Value::Nil => Ok(Value::Nil),
        Value::Set(mut s) => {
            let items: Vec<Value> = it.collect();
            if !items.is_empty() {
                let sm = s.make_mut();
                for x in &items {
                    sm.remove(x);
                }
            }
            Ok(Value::Set(s))
        }
        other => Err(expected("disj", "a set", &other)),
    }
}

/// `merge`: conj of each later argument onto the first non-nil one (so maps merge, and a
/// `[k v]` pair is added, as in Clojure).
fn merge(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter().skip_while(Value::is_nil);
    let Some(first) = it.next() else {
        return Ok(Value::Nil);
    };
    it.try_fold(first, |acc, m| match m {
        Value::Nil => Ok(acc),
        other => conj(acc, other),
    })
}

fn select_keys(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let keys = i.seq_vec(&a[1])?;
    let mut out = match &a[0] {
        Value::Map(m) => m.empty_like(),
        _ => MapImpl::default(),
    };
    for k in keys {
        let found = match &a[0] {
            Value::Map(m) => m.get(&k).cloned(),
            Value::Vector(_) if contains(&a[0], &k)? => get(&a[0], &k),
            _ => None,
        };
        if let Some(v) = found {
            out.insert(k, v);
        }
    }
    Ok(Value::map(out))
}

fn zipmap(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut ks = SeqIter::new(i, &a[0])?;
    let mut vs = SeqIter::new(i, &a[1])?;
    let mut m = MapImpl::default();
    while let (Some(k), Some(v)) = (ks.next(i)?, vs.next(i)?) {
        i.tick()?;
        m.insert(k, v);
    }
    Ok(Value::map(m))
}
