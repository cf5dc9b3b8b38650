//! PTC-Lisp helpers that are not in Clojure but that prompts use: aggregation (`sum avg sum-by
//! avg-by min-by max-by distinct-by`), `describe` (a value's shape, for an LLM exploring data)
//! and `pmap`/`pcalls`.
//!
//! Aggregates skip nil values (data from tools is often incomplete); a sum of integers stays an
//! integer (overflow is an error, as with `+`), an average is always a float, and an aggregate
//! over nothing is 0 (`sum`) or nil (`avg`, `min-by`, `max-by`). The runner is single-threaded,
//! so `pmap` is `map` and `pcalls` calls its fns in order: same results, no parallelism.

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::EvalResult;
use crate::eval::Interp;
use crate::value::{MapImpl, Value};

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "sum",
        1,
        1,
        "Sum of the numbers in coll, nils skipped; 0 if none.",
        "(sum [1 nil 2]) ;=> 3",
        |i, a| {
            let xs = i.seq_vec(&a[0])?;
            sum(&xs, "sum")
        }
    ),
    def!(
        "avg",
        1,
        1,
        "Mean of the numbers in coll as a float, nils skipped; nil if none.",
        "(avg [1 2]) ;=> 1.5",
        |i, a| {
            let xs = i.seq_vec(&a[0])?;
            avg(&xs, "avg")
        }
    ),
    def!(
        "sum-by",
        2,
        2,
        "Sum of (f x) over coll, nils skipped; f is often a keyword.",
        "(sum-by :amount [{:amount 2} {:amount 3}]) ;=> 5",
        |i, a| {
            let xs = mapped(i, &a[0], &a[1])?;
            sum(&xs, "sum-by")
        }
    ),
    def!(
        "avg-by",
        2,
        2,
        "Mean of (f x) over coll as a float, nils skipped; nil if none.",
        "(avg-by :n [{:n 1} {:n 2}]) ;=> 1.5",
        |i, a| {
            let xs = mapped(i, &a[0], &a[1])?;
            avg(&xs, "avg-by")
        }
    ),
    def!(
        "min-by",
        2,
        2,
        "The item with the smallest (f item) (nil keys skipped; first on ties), or nil.",
        "(min-by :n [{:n 2} {:n 1}]) ;=> {:n 1}",
        |i, a| extreme_by(i, &a[0], &a[1], true)
    ),
    def!(
        "max-by",
        2,
        2,
        "The item with the largest (f item) (nil keys skipped; first on ties), or nil.",
        "(max-by :n [{:n 2} {:n 1}]) ;=> {:n 2}",
        |i, a| extreme_by(i, &a[0], &a[1], false)
    ),
    def!(
        "distinct-by",
        2,
        2,
        "The items whose (f item) was not seen before, in order, as a vector.",
        "(distinct-by :k [{:k 1 :v 1} {:k 1 :v 2}]) ;=> [{:k 1 :v 1}]",
        |i, a| {
            let items = i.seq_vec(&a[1])?;
            let mut seen = crate::value::PSet::default();
            let mut out = Vec::new();
            for x in items {
                if seen.insert(i.apply1(&a[0], x.clone())?).is_none() {
                    out.push(x);
                }
            }
            Ok(Value::vector(out))
        }
    ),
    def!(
        "describe",
        1,
        1,
        "Shape of a value: :type, :count, :item-types, :keys (items having each key; for a map, each value's type), :example.",
        "(describe [{:a 1} {:a 2 :b 3}]) ;=> {:type :vector :count 2 :keys {:a 2 :b 1} ...}",
        |i, a| describe(i, &a[0])
    ),
    def!(
        "pmap",
        2,
        _,
        "Same as map (the runner is single-threaded: no real parallelism).",
        "(pmap inc [1 2]) ;=> (2 3)",
        |i, a| match super::lookup(None, "map").found() {
            Some(map) => super::call(i, map, a),
            None => Err(expected("pmap", "the map builtin", &Value::Nil)),
        }
    ),
    def!(
        "pcalls",
        0,
        _,
        "Calls each fn in order and returns their results (single-threaded: no parallelism).",
        "(pcalls #(+ 1 1) #(* 2 3)) ;=> (2 6)",
        |i, a| {
            let mut out = Vec::with_capacity(a.len());
            for f in &a {
                out.push(i.apply(f, Vec::new())?);
            }
            Ok(Value::list(out))
        }
    ),
];

fn mapped(i: &mut Interp<'_>, f: &Value, coll: &Value) -> EvalResult<Vec<Value>> {
    let items = i.seq_vec(coll)?;
    items.into_iter().map(|x| i.apply1(f, x)).collect()
}

fn sum(xs: &[Value], op: &str) -> EvalResult {
    let mut acc = Value::Int(0);
    for x in xs {
        match x {
            Value::Nil => {}
            Value::Int(_) | Value::Float(_) => acc = super::add2(&acc, x)?,
            other => return Err(expected(op, "numbers (or nil)", other)),
        }
    }
    Ok(acc)
}

fn avg(xs: &[Value], op: &str) -> EvalResult {
    let mut total = 0.0;
    let mut n = 0u64;
    for x in xs {
        match x {
            Value::Nil => {}
            Value::Int(v) => {
                total += *v as f64;
                n += 1;
            }
            Value::Float(v) => {
                total += v;
                n += 1;
            }
            other => return Err(expected(op, "numbers (or nil)", other)),
        }
    }
    Ok(if n == 0 {
        Value::Nil
    } else {
        Value::Float(total / n as f64)
    })
}

fn extreme_by(i: &mut Interp<'_>, f: &Value, coll: &Value, min: bool) -> EvalResult {
    let mut best: Option<(Value, Value)> = None;
    for x in i.seq_vec(coll)? {
        let k = i.apply1(f, x.clone())?;
        if k.is_nil() {
            continue;
        }
        let better = match &best {
            None => true,
            Some((bk, _)) => {
                let c = super::math::compare(&k, bk)?;
                if min { c < 0 } else { c > 0 }
            }
        };
        if better {
            best = Some((k, x));
        }
    }
    Ok(best.map(|(_, x)| x).unwrap_or_default())
}

/// The `:type` keyword of a value.
fn type_kw(v: &Value) -> Value {
    Value::kw(match v {
        Value::Lazy(_) => "seq",
        v => v.type_name(),
    })
}

fn describe(i: &mut Interp<'_>, v: &Value) -> EvalResult {
    let mut out = MapImpl::default();
    out.insert(Value::kw("type"), type_kw(v));
    match v {
        Value::Map(m) => {
            out.insert(Value::kw("count"), count_of(m.len()));
            let keys: MapImpl = m.iter().map(|(k, x)| (k.clone(), type_kw(x))).collect();
            out.insert(Value::kw("keys"), Value::map(keys));
        }
        Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Lazy(_) => {
            let items = i.seq_vec(v)?;
            out.insert(Value::kw("count"), count_of(items.len()));
            describe_items(i, &items, &mut out)?;
        }
        Value::Str(s) => {
            out.insert(Value::kw("count"), count_of(s.chars().count()));
            out.insert(
                Value::kw("example"),
                Value::str(&s.chars().take(80).collect::<String>()),
            );
        }
        Value::Nil => {}
        other => {
            out.insert(Value::kw("example"), other.clone());
        }
    }
    Ok(Value::map(out))
}

/// For a collection: the item types, key coverage when items are maps, and the first item.
fn describe_items(i: &mut Interp<'_>, items: &[Value], out: &mut MapImpl) -> EvalResult<()> {
    let mut types = MapImpl::default();
    let mut keys = MapImpl::default();
    for x in items {
        i.tick()?;
        bump(&mut types, type_kw(x));
        if let Value::Map(m) = x {
            for (k, _) in m.iter() {
                bump(&mut keys, k.clone());
            }
        }
    }
    out.insert(Value::kw("item-types"), Value::map(types));
    if !keys.is_empty() {
        out.insert(Value::kw("keys"), Value::map(keys));
    }
    if let Some(first) = items.first() {
        out.insert(Value::kw("example"), first.clone());
    }
    Ok(())
}

fn bump(m: &mut MapImpl, k: Value) {
    let n = match m.get(&k) {
        Some(Value::Int(n)) => n + 1,
        _ => 1,
    };
    m.insert(k, Value::Int(n));
}

fn count_of(n: usize) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}
