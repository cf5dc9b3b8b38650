//! clojure.walk (under `clojure.walk/` and `walk/`): `walk prewalk postwalk keywordize-keys
//! stringify-keys prewalk-replace postwalk-replace`.
//!
//! `rebuild` is Clojure's `walk`: it maps a function over a form's children and rebuilds a form
//! of the same kind (a list stays a list, a lazy seq becomes a list, a sorted map stays sorted,
//! a map's children are its `[k v]` entries). The recursive walks tick the step budget once per
//! node and grow the Rust stack on demand, so deeply nested data cannot overflow it.

use super::BuiltinDef;
use crate::def;
use crate::error::EvalResult;
use crate::eval::Interp;
use crate::value::{Coll, MapImpl, SetImpl, Value};

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "walk",
        3,
        3,
        "Applies inner to each child of form, rebuilds the form, then applies outer to it.",
        "(walk/walk inc #(apply + %) [1 2]) ;=> 5",
        |i, a| {
            let (inner, outer) = (a[0].clone(), a[1].clone());
            let built = rebuild(i, a[2].clone(), &mut |i, c| i.apply1(&inner, c))?;
            i.apply1(&outer, built)
        }
    ),
    def!(
        "postwalk",
        2,
        2,
        "Depth-first, bottom-up: f is applied to each child before its parent.",
        "(walk/postwalk #(if (number? %) (inc %) %) [1 [2]]) ;=> [2 [3]]",
        |i, a| {
            let f = a[0].clone();
            postwalk(i, a[1].clone(), &mut |i, x| i.apply1(&f, x))
        }
    ),
    def!(
        "prewalk",
        2,
        2,
        "Top-down: f is applied to a form, then the walk descends into the result.",
        "(walk/prewalk #(if (number? %) (inc %) %) [1 [2]]) ;=> [2 [3]]",
        |i, a| {
            let f = a[0].clone();
            prewalk(i, a[1].clone(), &mut |i, x| i.apply1(&f, x))
        }
    ),
    def!(
        "keywordize-keys",
        1,
        1,
        "Turns string map keys into keywords, at every depth.",
        "(walk/keywordize-keys {\"a\" 1}) ;=> {:a 1}",
        |i, a| postwalk(i, a[0].clone(), &mut |_, x| Ok(rekey(x, true)))
    ),
    def!(
        "stringify-keys",
        1,
        1,
        "Turns keyword map keys into strings (their name), at every depth.",
        "(walk/stringify-keys {:a 1}) ;=> {\"a\" 1}",
        |i, a| postwalk(i, a[0].clone(), &mut |_, x| Ok(rekey(x, false)))
    ),
    def!(
        "prewalk-replace",
        2,
        2,
        "Replaces, top-down, every form that is a key of smap by its value.",
        "(walk/prewalk-replace {:a 1} [:a :b]) ;=> [1 :b]",
        |i, a| {
            let smap = a[0].clone();
            prewalk(i, a[1].clone(), &mut |_, x| Ok(replace(&smap, x)))
        }
    ),
    def!(
        "postwalk-replace",
        2,
        2,
        "Replaces, bottom-up, every form that is a key of smap by its value.",
        "(walk/postwalk-replace {:a 1} [:a :b]) ;=> [1 :b]",
        |i, a| {
            let smap = a[0].clone();
            postwalk(i, a[1].clone(), &mut |_, x| Ok(replace(&smap, x)))
        }
    ),
];

type Step<'s, 'h> = dyn FnMut(&mut Interp<'h>, Value) -> EvalResult + 's;

/// Clojure's `walk` without `outer`: `g` over the children, rebuilt into the same kind.
fn rebuild<'h>(i: &mut Interp<'h>, form: Value, g: &mut Step<'_, 'h>) -> EvalResult {
    Ok(match form {
        Value::Vector(xs) => Value::vector(map_all(i, xs.iter().cloned(), g)?),
        Value::List(xs) => Value::list(map_all(i, xs.iter().cloned(), g)?),
        lazy @ Value::Lazy(_) => {
            let items = i.seq_vec(&lazy)?;
            Value::list(map_all(i, items, g)?)
        }
        Value::Map(m) => {
            let entries = m.iter().map(|(k, v)| Value::vector([k.clone(), v.clone()]));
            let mut out = Value::map(m.empty_like());
            for e in map_all(i, entries, g)? {
                out = super::coll::conj(out, e)?;
            }
            out
        }
        Value::Set(s) => {
            let mut out = match &*s {
                SetImpl::Sorted(_) => SetImpl::Sorted(Default::default()),
                SetImpl::Hash(_) => SetImpl::default(),
            };
            for x in map_all(i, s.iter().cloned(), g)? {
                out.insert(x);
            }
            Value::Set(Coll::new(out))
        }
        leaf => leaf,
    })
}

fn map_all<'h>(
    i: &mut Interp<'h>,
    items: impl IntoIterator<Item = Value>,
    g: &mut Step<'_, 'h>,
) -> EvalResult<Vec<Value>> {
    items.into_iter().map(|x| g(i, x)).collect()
}

fn postwalk<'h>(i: &mut Interp<'h>, form: Value, f: &mut Step<'_, 'h>) -> EvalResult {
    i.tick()?;
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let built = rebuild(i, form, &mut |i, c| postwalk(i, c, f))?;
        f(i, built)
    })
}

fn prewalk<'h>(i: &mut Interp<'h>, form: Value, f: &mut Step<'_, 'h>) -> EvalResult {
    i.tick()?;
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let x = f(i, form)?;
        rebuild(i, x, &mut |i, c| prewalk(i, c, f))
    })
}

/// A map with string keys made keywords (or keyword keys made strings); other forms unchanged.
fn rekey(x: Value, to_keyword: bool) -> Value {
    let Value::Map(m) = &x else { return x };
    let out: MapImpl = m
        .iter()
        .map(|(k, v)| {
            let k = match k {
                Value::Str(s) if to_keyword => Value::Keyword(s.clone()),
                Value::Keyword(s) if !to_keyword => {
                    Value::str(s.rsplit_once('/').map_or(&**s, |(_, n)| n))
                }
                k => k.clone(),
            };
            (k, v.clone())
        })
        .collect();
    Value::map(out)
}

fn replace(smap: &Value, x: Value) -> Value {
    match smap {
        Value::Map(m) => m.get(&x).cloned().unwrap_or(x),
        _ => x,
    }
}
