//! clojure.set (under `clojure.set/` and `set/`); core `disj` lives with the collections.
//!
//! Each function follows the Clojure 1.11 source, including its edges: `union` grows the larger
//! argument (so `(union nil nil)` is nil), `intersection`/`difference` test membership with
//! `contains?` (so a vector argument is tested by index, as in Clojure), and relations (`select
//! project rename index join`) are sets of maps whose keys are compared exactly (no
//! keyword/string-key leniency here).

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::EvalResult;
use crate::eval::Interp;
use crate::value::{Coll, MapImpl, SetImpl, Value};

/// clojure.set.
pub static TABLE: &[BuiltinDef] = &[
    def!(
        "union",
        0,
        _,
        "Elements in any of the sets.",
        "(set/union #{1} #{2}) ;=> #{1 2}",
        union
    ),
    def!(
        "intersection",
        1,
        _,
        "Elements in all of the sets.",
        "(set/intersection #{1 2} #{2 3}) ;=> #{2}",
        intersection
    ),
    def!(
        "difference",
        1,
        _,
        "Elements of the first set in none of the others.",
        "(set/difference #{1 2} #{2}) ;=> #{1}",
        difference
    ),
    def!(
        "subset?",
        2,
        2,
        "True if every element of s1 is in s2.",
        "(set/subset? #{1} #{1 2}) ;=> true",
        |i, a| subset(i, &a[0], &a[1])
    ),
    def!(
        "superset?",
        2,
        2,
        "True if every element of s2 is in s1.",
        "(set/superset? #{1 2} #{1}) ;=> true",
        |i, a| subset(i, &a[1], &a[0])
    ),
    def!(
        "select",
        2,
        2,
        "The elements of the set for which pred is truthy.",
        "(set/select even? #{1 2}) ;=> #{2}",
        select
    ),
    def!(
        "project",
        2,
        2,
        "The relation (set of maps) with only the given keys.",
        "(set/project #{{:a 1 :b 2}} [:a]) ;=> #{{:a 1}}",
        |i, a| {
            let ks = i.seq_vec(&a[1])?;
            let rows = i.seq_vec(&a[0])?;
            let out: EvalResult<Vec<Value>> = rows.iter().map(|r| select_keys(r, &ks)).collect();
            Ok(Value::set(out?))
        }
    ),
    def!(
        "rename-keys",
        2,
        2,
        "The map with keys renamed by kmap {old new}.",
        "(set/rename-keys {:a 1} {:a :b}) ;=> {:b 1}",
        |_, a| rename_keys(&a[0], &a[1])
    ),
    def!(
        "rename",
        2,
        2,
        "The relation with every map's keys renamed by kmap.",
        "(set/rename #{{:a 1}} {:a :b}) ;=> #{{:b 1}}",
        |i, a| {
            let rows = i.seq_vec(&a[0])?;
            let out: EvalResult<Vec<Value>> = rows.iter().map(|r| rename_keys(r, &a[1])).collect();
            Ok(Value::set(out?))
        }
    ),
    def!(
        "index",
        2,
        2,
        "A map from each distinct (select-keys x ks) to the set of maps x having it.",
        "(set/index #{{:k 1}} [:k]) ;=> {{:k 1} #{{:k 1}}}",
        |i, a| {
            let ks = i.seq_vec(&a[1])?;
            index(i, &a[0], &ks)
        }
    ),
    def!(
        "map-invert",
        1,
        1,
        "The map with keys and values swapped.",
        "(set/map-invert {:a 1}) ;=> {1 :a}",
        |_, a| {
            let m = map_arg(&a[0], "map-invert")?;
            Ok(Value::map(
                m.iter().map(|(k, v)| (v.clone(), k.clone())).collect(),
            ))
        }
    ),
    def!(
        "join",
        2,
        3,
        "Natural join of two relations on their shared keys (or on a key map {xk yk}).",
        "(set/join #{{:id 1 :a 1}} #{{:id 1 :b 2}}) ;=> #{{:id 1 :a 1 :b 2}}",
        join
    ),
];

/// Clojure's `count`, which fails on non-collections (`count not supported on this type`).
fn count(v: &Value, op: &str) -> EvalResult<usize> {
    Ok(match v {
        Value::Nil => 0,
        Value::Set(s) => s.len(),
        Value::Map(m) => m.len(),
        Value::Vector(x) | Value::List(x) => x.len(),
        Value::Str(s) => s.chars().count(),
        other => return Err(expected(op, "a set or collection", other)),
    })
}

/// Clojure's `contains?`: keys of maps, members of sets, indexes of vectors and strings.
fn contains(coll: &Value, k: &Value) -> bool {
    let index_in =
        |n: usize| matches!(k, Value::Int(i) if usize::try_from(*i).is_ok_and(|i| i < n));
    match coll {
        Value::Set(s) => s.contains(k),
        Value::Map(m) => m.contains_key(k),
        Value::Vector(v) => index_in(v.len()),
        Value::Str(s) => index_in(s.chars().count()),
        _ => false,
    }
}

fn disj(s: Value, k: &Value) -> EvalResult {
    match s {
        Value::Nil => Ok(Value::Nil),
        Value::Set(mut set) => {
            if set.contains(k) {
                set.make_mut().remove(k);
            }
            Ok(Value::Set(set))
        }
        other => Err(expected("disj", "a set", &other)),
    }
}

fn map_arg<'v>(v: &'v Value, op: &str) -> EvalResult<&'v MapImpl> {
    match v {
        Value::Map(m) => Ok(m),
        other => Err(expected(op, "a map", other)),
    }
}

/// `(reduce conj base items)`.
fn conj_all(mut base: Value, items: Vec<Value>) -> EvalResult {
    if let Value::Set(s) = &mut base {
        let s = s.make_mut();
        for x in items {
            s.insert(x);
        }
        return Ok(base);
    }
    for x in items {
        base = super::coll::conj(base, x)?;
    }
    Ok(base)
}

fn union(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    if a.is_empty() {
        return Ok(Value::set([]));
    }
    // Grow the largest argument (Clojure's bubble-max-key count); the first on ties.
    let mut best = 0;
    let mut best_n = 0;
    for (k, s) in a.iter().enumerate() {
        let n = count(s, "union")?;
        if k == 0 || n > best_n {
            (best, best_n) = (k, n);
        }
    }
    let mut sets = a;
    let mut acc = sets.remove(best);
    for s in &sets {
        let items = i.seq_vec(s)?;
        acc = conj_all(acc, items)?;
    }
    Ok(acc)
}

fn intersection(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    let mut acc = it.next().unwrap_or_default();
    for s2 in it {
        let (small, big) = if count(&s2, "intersection")? < count(&acc, "intersection")? {
            (s2, acc)
        } else {
            (acc, s2)
        };
        let mut out = small.clone();
        for x in i.seq_vec(&small)? {
            if !contains(&big, &x) {
                out = disj(out, &x)?;
            }
        }
        acc = out;
    }
    Ok(acc)
}

fn difference(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    let mut acc = it.next().unwrap_or_default();
    for s2 in it {
        if count(&acc, "difference")? < count(&s2, "difference")? {
            for x in i.seq_vec(&acc.clone())? {
                if contains(&s2, &x) {
                    acc = disj(acc, &x)?;
                }
            }
        } else {
            for x in i.seq_vec(&s2)? {
                acc = disj(acc, &x)?;
            }
        }
    }
    Ok(acc)
}

fn subset(i: &mut Interp<'_>, s1: &Value, s2: &Value) -> EvalResult {
    if count(s1, "subset?")? > count(s2, "subset?")? {
        return Ok(Value::Bool(false));
    }
    let items = i.seq_vec(s1)?;
    Ok(Value::Bool(items.iter().all(|x| contains(s2, x))))
}

fn select(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut out = a[1].clone();
    for x in i.seq_vec(&a[1])? {
        if !i.apply1(&a[0], x.clone())?.truthy() {
            out = disj(out, &x)?;
        }
    }
    Ok(out)
}

/// `(select-keys m ks)` with exact key lookup; nil is the empty map.
pub fn select_keys(m: &Value, ks: &[Value]) -> EvalResult {
    let mut out = MapImpl::default();
    match m {
        Value::Nil => {}
        Value::Map(m) => {
            for k in ks {
                if let Some(v) = m.get(k) {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        other => return Err(expected("select-keys", "a map", other)),
    }
    Ok(Value::map(out))
}

fn rename_keys(m: &Value, kmap: &Value) -> EvalResult {
    let src = match m {
        Value::Nil => return Ok(Value::Nil),
        other => map_arg(other, "rename-keys")?,
    };
    let kmap = map_arg(kmap, "rename-keys")?;
    let mut out = (*src).clone();
    for (old, _) in kmap.iter() {
        out.remove(old);
    }
    for (old, new) in kmap.iter() {
        if let Some(v) = src.get(old) {
            out.insert(new.clone(), v.clone());
        }
    }
    Ok(Value::Map(Coll::new(out)))
}

fn index(i: &mut Interp<'_>, xrel: &Value, ks: &[Value]) -> EvalResult {
    let mut out = MapImpl::default();
    for x in i.seq_vec(xrel)? {
        let ik = select_keys(&x, ks)?;
        let mut group = match out.get(&ik) {
            Some(Value::Set(s)) => (**s).clone(),
            _ => SetImpl::default(),
        };
        group.insert(x);
        out.insert(ik, Value::Set(Coll::new(group)));
    }
    Ok(Value::map(out))
}

/// `(merge a b)` of two maps: b's entries win.
fn merge2(a: &Value, b: &Value) -> EvalResult {
    let mut out = map_arg(a, "join")?.clone();
    for (k, v) in map_arg(b, "join")?.iter() {
        out.insert(k.clone(), v.clone());
    }
    Ok(Value::map(out))
}

fn join(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (xrel, yrel) = (i.seq_vec(&a[0])?, i.seq_vec(&a[1])?);
    // As in Clojure, index the smaller relation and probe it with each row of the other.
    let x_smaller = xrel.len() <= yrel.len();
    let (r, s) = if x_smaller {
        (&a[0], &yrel)
    } else {
        (&a[1], &xrel)
    };
    let Some(pairs) = join_keys(a.get(2), &xrel, &yrel, x_smaller)? else {
        return Ok(Value::set([]));
    };
    let r_keys: Vec<Value> = pairs.iter().map(|(_, rk)| rk.clone()).collect();
    let Value::Map(idx) = index(i, r, &r_keys)? else {
        return Ok(Value::set([]));
    };
    let mut out = SetImpl::default();
    for x in s {
        i.tick()?;
        let mut probe = MapImpl::default();
        if let Value::Map(xm) = x {
            for (sk, rk) in &pairs {
                if let Some(v) = xm.get(sk) {
                    probe.insert(rk.clone(), v.clone());
                }
            }
        }
        if let Some(Value::Set(found)) = idx.get(&Value::map(probe)) {
            for f in found.iter() {
                out.insert(merge2(f, x)?);
            }
        }
    }
    Ok(Value::Set(Coll::new(out)))
}

/// The key pairs (key in the probing relation, key in the indexed one) that must agree: from
/// the key map `{xk yk}`, or the keys shared by the first rows (None: nothing to join).
fn join_keys(
    km: Option<&Value>,
    xrel: &[Value],
    yrel: &[Value],
    x_smaller: bool,
) -> EvalResult<Option<Vec<(Value, Value)>>> {
    if let Some(km) = km {
        let km = map_arg(km, "join")?;
        let flip = |(xk, yk): (&Value, &Value)| {
            if x_smaller {
                (yk.clone(), xk.clone())
            } else {
                (xk.clone(), yk.clone())
            }
        };
        return Ok(Some(km.iter().map(flip).collect()));
    }
    let (Some(Value::Map(x0)), Some(Value::Map(y0))) = (xrel.first(), yrel.first()) else {
        return Ok(None);
    };
    Ok(Some(
        x0.iter()
            .filter(|(k, _)| y0.contains_key(k))
            .map(|(k, _)| (k.clone(), k.clone()))
            .collect(),
    ))
}
