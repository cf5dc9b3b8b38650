//! clojure.core basics: equality and predicates, `str`, sequence shaping (`range take drop
//! sort sort-by group-by frequencies distinct reverse`), exceptions, `return`/`fail`.
//!
//! Sorting is stable and O(n log n); `group-by`, `frequencies` (their code in `groups.rs`) and
//! `distinct` hash, O(n).

use super::xform::{XStep, xform};
use super::{BuiltinDef, Fast, expected};
use crate::def;
use crate::error::{ErrorBody, EvalResult};
use crate::eval::Interp;
use crate::eval::lazy::{Gen, LazySeq, lazy_or_list};
use crate::eval::seq::SeqIter;
use crate::value::{Coll, ExInfo, FixedState, Value};
use std::rc::Rc;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "=",
        1,
        _,
        "Equality of values (1 and 1.0 differ).",
        "(= [1 2] '(1 2)) ;=> true",
        |i, a| all_equal(i, a).map(Value::Bool),
        Fast::Prim(crate::eval::prim::Prim::Eq)
    ),
    def!(
        "not=",
        1,
        _,
        "Not equal.",
        "(not= 1 2) ;=> true",
        |i, a| all_equal(i, a).map(|b| Value::Bool(!b)),
        Fast::Two(|a, b| crate::eval::prim::scalars_equal(a, b).map(|e| Ok(Value::Bool(!e))))
    ),
    def!(
        "not",
        1,
        1,
        "Logical not.",
        "(not nil) ;=> true",
        |_, a| Ok(Value::Bool(!a[0].truthy())),
        Fast::One(|a| Some(Ok(Value::Bool(!a.truthy()))))
    ),
    super::hof::IDENTITY_ENTRY,
    def!(
        "nil?",
        1,
        1,
        "True if nil.",
        "(nil? nil) ;=> true",
        |_, a| Ok(Value::Bool(a[0].is_nil()))
    ),
    def!(
        "some?",
        1,
        1,
        "True if not nil.",
        "(some? 0) ;=> true",
        |_, a| Ok(Value::Bool(!a[0].is_nil()))
    ),
    def!(
        "str",
        0,
        _,
        "Concatenates the string forms of the arguments (nil is empty).",
        "(str \"a\" 1 nil) ;=> \"a1\"",
        |i, a| match plain_str(&a) {
            Some(s) => str_done(i, s, a.len()),
            None => str_general(i, a),
        },
        Fast::Stacked(str_stacked)
    ),
    def!(
        "range",
        0,
        3,
        "Numbers from start (0) below end by step (1); infinite without end.",
        "(range 3) ;=> (0 1 2)",
        range
    ),
    def!(
        "take",
        1,
        2,
        "The first n items.",
        "(take 2 [1 2 3]) ;=> (1 2)",
        take
    ),
    def!(
        "drop",
        1,
        2,
        "All but the first n items.",
        "(drop 1 [1 2 3]) ;=> (2 3)",
        drop
    ),
    def!(
        "take-while",
        1,
        2,
        "Items while pred holds.",
        "(take-while odd? [1 3 4 5]) ;=> (1 3)",
        take_while
    ),
    def!(
        "drop-while",
        1,
        2,
        "Items after pred first fails.",
        "(drop-while odd? [1 3 4 5]) ;=> (4 5)",
        drop_while
    ),
    def!(
        "reverse",
        1,
        1,
        "Items in reverse order.",
        "(reverse [1 2]) ;=> (2 1)",
        |i, a| {
            let mut v = i.seq_vec(&a[0])?;
            v.reverse();
            Ok(Value::list(v))
        }
    ),
    def!(
        "sort",
        1,
        2,
        "Items sorted by compare, a comparator fn, or :asc/:desc (stable).",
        "(sort [3 1 2]) ;=> (1 2 3)",
        sort
    ),
    def!(
        "sort-by",
        2,
        3,
        "Items sorted by (keyfn x), with an optional comparator or :asc/:desc (stable).",
        "(sort-by :n [{:n 2} {:n 1}]) ;=> ({:n 1} {:n 2})",
        sort_by
    ),
    def!(
        "group-by",
        2,
        2,
        "Map from (f x) to the vector of items with that result, in order.",
        "(group-by odd? [1 2 3]) ;=> {true [1 3], false [2]}",
        super::groups::group_by
    ),
    def!(
        "frequencies",
        1,
        1,
        "Map from item to the number of times it occurs.",
        "(frequencies [:a :a :b]) ;=> {:a 2, :b 1}",
        super::groups::frequencies
    ),
    def!(
        "distinct",
        0,
        1,
        "Items with duplicates removed, first occurrence kept.",
        "(distinct [1 2 1]) ;=> (1 2)",
        distinct
    ),
    def!(
        "ex-info",
        2,
        3,
        "An exception with a message and a data map.",
        "(ex-message (ex-info \"boom\" {})) ;=> \"boom\"",
        |_, a| ex_info(a)
    ),
    def!(
        "ex-message",
        1,
        1,
        "The message of an exception.",
        "(ex-message (ex-info \"x\" {})) ;=> \"x\"",
        |_, a| Ok(match &a[0] {
            Value::Error(e) => Value::str(&e.message),
            _ => Value::Nil,
        })
    ),
    def!(
        "ex-data",
        1,
        1,
        "The data map of an exception.",
        "(ex-data (ex-info \"x\" {:a 1})) ;=> {:a 1}",
        |_, a| Ok(match &a[0] {
            Value::Error(e) => e.data.clone(),
            _ => Value::Nil,
        })
    ),
    def!(
        "return",
        0,
        1,
        "Ends the run successfully with v.",
        "(return 42)",
        |_, a| Err(ErrorBody::Return(a.into_iter().next().unwrap_or_default()).into())
    ),
    def!(
        "fail",
        0,
        1,
        "Ends the run with reason `failed` (message from v or its :message/:reason).",
        "(fail {:reason \"no data\"})",
        |_, a| Err(ErrorBody::Fail(a.into_iter().next().unwrap_or_default()).into())
    ),
    def!(
        "keyword",
        1,
        2,
        "A keyword from a string (or ns and name).",
        "(keyword \"a\") ;=> :a",
        keyword
    ),
    def!(
        "name",
        1,
        1,
        "The name of a keyword, symbol or string.",
        "(name :a) ;=> \"a\"",
        |_, a| match &a[0] {
            Value::Keyword(k) | Value::Symbol(k) =>
                Ok(Value::str(k.rsplit('/').next().unwrap_or(k))),
            Value::Str(s) => Ok(Value::Str(s.clone())),
            other => Err(expected("name", "a keyword, symbol or string", other)),
        }
    ),
];

fn count_arg(v: &Value, op: &str) -> EvalResult<usize> {
    match v {
        Value::Int(n) => Ok(usize::try_from(*n).unwrap_or(0)),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Value::Float(f) => Ok(if *f <= 0.0 { 0 } else { f.ceil() as usize }),
        other => Err(expected(op, "a number", other)),
    }
}

/// Ranges longer than this are lazy, so `(first (filter p (range 1 1e12)))` is cheap; shorter
/// ones are plain lists (they compare, print and persist in memory like any list).
const EAGER_RANGE: f64 = 100_000.0;

fn range(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (start, end, step) = match a.as_slice() {
        [] => {
            return Ok(LazySeq::value(Gen::Range {
                next: Value::Int(0),
                step: Value::Int(1),
                end: None,
            }));
        }
        [end] => (Value::Int(0), end.clone(), Value::Int(1)),
        [s, e] => (s.clone(), e.clone(), Value::Int(1)),
        [s, e, st] => (s.clone(), e.clone(), st.clone()),
        _ => return Ok(Value::Nil),
    };
    let (s, e, st) = (
        super::math::to_f64(&start, "range")?,
        super::math::to_f64(&end, "range")?,
        super::math::to_f64(&step, "range")?,
    );
    if st == 0.0 {
        // Clojure: a zero step repeats start forever (unless start = end).
        if s == e {
            return Ok(Value::list([]));
        }
        return Ok(LazySeq::value(Gen::Repeat {
            x: start,
            left: None,
        }));
    }
    let lazy = ((e - s) / st).is_nan() || (e - s) / st > EAGER_RANGE;
    if let (false, Value::Int(s), Value::Int(e), Value::Int(st)) = (lazy, &start, &end, &step) {
        return crate::eval::lazy::int_range_list(i, *s, *e, *st);
    }
    let g = Gen::Range {
        next: start,
        step,
        end: Some(end),
    };
    lazy_or_list(g, lazy, i)
}

fn take(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let n = count_arg(&a[0], "take")?;
    let Some(coll) = a.get(1) else {
        return Ok(xform(vec![XStep::Take(n as u64)]));
    };
    if let Value::Vector(xs) | Value::List(xs) = coll {
        return Ok(Value::List(Coll::new(xs.take(n.min(xs.len())))));
    }
    let mut it = SeqIter::new(i, coll)?;
    let mut out = Vec::new();
    while out.len() < n {
        match it.next(i)? {
            Some(x) => out.push(x),
            None => break,
        }
    }
    Ok(Value::list(out))
}

fn drop(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let n = count_arg(&a[0], "drop")?;
    let Some(coll) = a.get(1) else {
        return Ok(xform(vec![XStep::Drop(n as u64)]));
    };
    if let Value::Vector(xs) | Value::List(xs) = coll {
        return Ok(Value::List(Coll::new(xs.skip(n.min(xs.len())))));
    }
    let mut it = SeqIter::new(i, coll)?;
    for _ in 0..n {
        if it.next(i)?.is_none() {
            break;
        }
    }
    let rest = it.rest_value(i)?;
    Ok(if rest.is_nil() { Value::list([]) } else { rest })
}

fn take_while(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let Some(coll) = a.get(1) else {
        return Ok(xform(vec![XStep::TakeWhile(a[0].clone())]));
    };
    let mut it = SeqIter::new(i, coll)?;
    let mut out = Vec::new();
    while let Some(x) = it.next(i)? {
        i.tick()?;
        if !i.apply1(&a[0], x.clone())?.truthy() {
            break;
        }
        out.push(x);
    }
    Ok(Value::list(out))
}

fn drop_while(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let Some(coll) = a.get(1) else {
        return Ok(xform(vec![XStep::DropWhile(a[0].clone(), true)]));
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = Gen::DropWhile {
        pred: a[0].clone(),
        src,
        dropping: true,
    };
    lazy_or_list(g, lazy, i)
}

/// Clojure `=` over all arguments; lazy seqs in them are realized first (within the limits).
fn all_equal(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult<bool> {
    let mut vals = Vec::with_capacity(a.len());
    for x in a {
        vals.push(i.realize_deep(x)?);
    }
    Ok(vals.windows(2).all(|w| deep_equal(&w[0], &w[1])))
}

/// Clojure `=` without recursion on the Rust stack: nested vectors, lists and maps are compared
/// with an explicit work list, so a value nested 100k levels deep compares instead of
/// overflowing the stack. Shared (pointer-equal) collections are equal without a walk.
fn deep_equal(a: &Value, b: &Value) -> bool {
    // The usual case, two scalars: no work list to allocate.
    let walked = |v: &Value| matches!(v, Value::Vector(_) | Value::List(_) | Value::Map(_));
    if !walked(a) && !walked(b) {
        return a == b;
    }
    walk_equal(a, b)
}

/// [`deep_equal`] by its definition: a work list of pairs still to compare.
fn walk_equal(a: &Value, b: &Value) -> bool {
    let mut work = vec![(a, b)];
    while let Some((x, y)) = work.pop() {
        match (x, y) {
            (Value::Vector(p) | Value::List(p), Value::Vector(q) | Value::List(q)) => {
                if Coll::ptr_eq(p, q) {
                    continue;
                }
                if p.len() != q.len() {
                    return false;
                }
                work.extend(p.iter().zip(q.iter()));
            }
            (Value::Map(p), Value::Map(q)) => {
                if Coll::ptr_eq(p, q) {
                    continue;
                }
                if p.len() != q.len() {
                    return false;
                }
                for (k, v) in p.iter() {
                    match q.get(k) {
                        Some(w) => work.push((v, w)),
                        None => return false,
                    }
                }
            }
            _ => {
                if x != y {
                    return false;
                }
            }
        }
    }
    true
}

/// How to order two keys: `compare`, `:asc`/`:desc`, or a comparator fn (number or boolean).
fn ordering(
    i: &mut Interp<'_>,
    cmp: Option<&Value>,
    x: &Value,
    y: &Value,
) -> EvalResult<std::cmp::Ordering> {
    use std::cmp::Ordering::*;
    match cmp {
        None => Ok(super::math::compare(x, y)?.cmp(&0)),
        Some(Value::Keyword(k)) if &**k == "asc" => Ok(super::math::compare(x, y)?.cmp(&0)),
        Some(Value::Keyword(k)) if &**k == "desc" => Ok(super::math::compare(y, x)?.cmp(&0)),
        // The common comparators, without a call per comparison (same results and errors).
        Some(Value::Builtin(b)) if matches!(b.name, "<" | ">") => {
            super::math::to_f64(x, b.name)?;
            super::math::to_f64(y, b.name)?;
            let o = super::math::num_cmp(x, y)?;
            Ok(if b.name == "<" { o } else { o.reverse() })
        }
        Some(Value::Builtin(b)) if b.name == "compare" => Ok(super::math::compare(x, y)?.cmp(&0)),
        Some(f) => match i.apply2(f, x.clone(), y.clone())? {
            Value::Int(n) => Ok(n.cmp(&0)),
            Value::Float(n) => Ok(n.partial_cmp(&0.0).unwrap_or(Equal)),
            Value::Bool(true) => Ok(Less),
            Value::Bool(false) | Value::Nil => Ok(if i.apply2(f, y.clone(), x.clone())?.truthy() {
                Greater
            } else {
                Equal
            }),
            other => Err(expected(
                "sort",
                "a comparator returning a number or boolean",
                &other,
            )),
        },
    }
}

/// Stable merge sort calling back into the interpreter; the first error stops the sort.
fn sort_keyed(
    i: &mut Interp<'_>,
    items: Vec<(Value, Value)>,
    cmp: Option<&Value>,
) -> EvalResult<Vec<Value>> {
    i.tick_n(items.len() as u64)?;
    // Keys that order natively (numbers, texts under a builtin comparator): no call per pair.
    if let Some(order) = super::msort::native_order(&items, cmp) {
        return Ok(values_in_order(items, order));
    }
    // Not std's sort: it may panic on a comparator that is not a total order (see msort).
    let items = super::msort::sort_by(items, |(kx, _), (ky, _)| ordering(i, cmp, kx, ky))?;
    Ok(items.into_iter().map(|(_, v)| v).collect())
}

fn sort(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    // A nil comparator is the default order, as in Clojure.
    let (cmp, coll) = if a.len() == 2 {
        (Some(&a[0]).filter(|c| !c.is_nil()), &a[1])
    } else {
        (None, &a[0])
    };
    let items: Vec<(Value, Value)> = i
        .seq_vec(coll)?
        .into_iter()
        .map(|x| (x.clone(), x))
        .collect();
    Ok(Value::list(sort_keyed(i, items, cmp)?))
}

fn sort_by(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (keyfn, cmp, coll) = if a.len() == 3 {
        (&a[0], Some(&a[1]), &a[2])
    } else {
        (&a[0], None, &a[1])
    };
    if let Value::Native(_) = keyfn {
        if let Some(sorted) = sort_flat_map(i, keyfn, cmp, coll) {
            return Ok(Value::list(sorted?));
        }
        let xs = i.seq_vec(coll)?;
        let items = native_keys(i, keyfn, xs)?;
        return Ok(Value::list(sort_keyed(i, items, cmp)?));
    }
    let xs = i.seq_vec(coll)?;
    let mut items = Vec::with_capacity(xs.len());
    let hint = Default::default();
    for x in xs {
        let k = match keyfn {
            Value::Fn(l) => i.apply1_fn(l, &x)?,
            _ => i.apply1_ref(keyfn, &x, &hint)?,
        };
        items.push((k, x));
    }
    Ok(Value::list(sort_keyed(i, items, cmp)?))
}

/// The `sort-by` keys of `xs` through a native fn (`(juxt (comp - val) key)`): each its pure
/// answer where it has one, else the call. Its own loop, so that the keyword and lambda keys'
/// loop stays as it was.
#[inline(never)]
fn native_keys(
    i: &mut Interp<'_>,
    keyfn: &Value,
    xs: Vec<Value>,
) -> EvalResult<Vec<(Value, Value)>> {
    let mut items = Vec::with_capacity(xs.len());
    for x in xs {
        let k = match super::hof::pure1(i, keyfn, &x, 0) {
            Some(k) => k?,
            None => i.apply1(keyfn, x.clone())?,
        };
        items.push((k, x));
    }
    Ok(items)
}

/// The values of `items` at the positions `order` lists (each once: a sort's permutation),
/// moved out in that order.
fn values_in_order(mut items: Vec<(Value, Value)>, order: Vec<usize>) -> Vec<Value> {
    order
        .into_iter()
        .map(|k| {
            items
                .get_mut(k)
                .map(|(_, v)| std::mem::take(v))
                .unwrap_or_default()
        })
        .collect()
}

/// `sort-by` of a flat map (`value::flat`, a map grown by `reduce` or `into`) by a pure key fn
/// (`hof::pure1`) and a comparator `native_order` knows, without reading the map in order
/// (which builds its persistent tree: ~700 instructions an entry). When no two keys compare
/// equal, the sorted result does not depend on the order the entries were read in, so they
/// are read in insertion order. `None`, with nothing charged, when the general path must decide:
/// a key fn part that declines or fails, keys `native_order` does not take, or a tie (whose
/// order is the map's). Charged as the general path charges: a step per entry (`seq_vec`),
/// then `sort_keyed`'s; the keys cost none.
fn sort_flat_map(
    i: &mut Interp<'_>,
    keyfn: &Value,
    cmp: Option<&Value>,
    coll: &Value,
) -> Option<EvalResult<Vec<Value>>> {
    let Value::Map(m) = coll else { return None };
    let crate::value::MapImpl::Flat(flat) = &**m else {
        return None;
    };
    let mut items = Vec::with_capacity(flat.len());
    for (k, v) in flat.entries() {
        let entry = Value::vector([k.clone(), v.clone()]);
        let key = super::hof::pure1(i, keyfn, &entry, 0)?.ok()?;
        items.push((key, entry));
    }
    let order = super::msort::native_order_untied(&items, cmp)?;
    let charge = |i: &mut Interp<'_>, n: usize| -> EvalResult<()> {
        for _ in 0..n {
            i.tick()?;
        }
        i.tick_n(n as u64)
    };
    Some(charge(i, items.len()).map(|()| values_in_order(items, order)))
}

// Value hashes and compares without its lazy-seq cache, the only interior mutability.
#[allow(clippy::mutable_key_type)]
fn distinct(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let Some(coll) = a.first() else {
        return Ok(xform(vec![XStep::Distinct(Default::default())]));
    };
    if let Value::Lazy(_) = coll {
        let src = SeqIter::new(i, coll)?;
        return Ok(LazySeq::value(Gen::Distinct {
            src,
            seen: Default::default(),
        }));
    }
    let mut seen: std::collections::HashSet<Value, FixedState> = Default::default();
    let out: Vec<Value> = i
        .seq_vec(coll)?
        .into_iter()
        .filter(|x| seen.insert(x.clone()))
        .collect();
    Ok(Value::list(out))
}

fn ex_info(a: Vec<Value>) -> EvalResult {
    let message = match &a[0] {
        Value::Str(s) => s.to_string(),
        other => crate::print::str_of(other),
    };
    Ok(Value::Error(Rc::new(ExInfo {
        message,
        data: a.get(1).cloned().unwrap_or_default(),
        kind: None,
    })))
}

fn keyword(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    match a.as_slice() {
        [Value::Str(s)] => Ok(Value::Keyword(s.clone())),
        [k @ Value::Keyword(_)] => Ok(k.clone()),
        [Value::Symbol(s)] => Ok(Value::Keyword(s.clone())),
        [Value::Nil] => Ok(Value::Nil),
        [Value::Str(ns), Value::Str(n)] => Ok(Value::kw(&format!("{ns}/{n}"))),
        [Value::Nil, Value::Str(n)] => Ok(Value::Keyword(n.clone())),
        // Clojure's one-argument `keyword` answers nil for what it cannot name.
        [_] => Ok(Value::Nil),
        [other, ..] => Err(expected("keyword", "a string", other)),
        [] => Ok(Value::Nil),
    }
}

/// `str`'s stacked entry (`Fast::Stacked`): texts, integers and nils, the usual parts, are
/// written from where they lie on the value stack; anything else goes through the vector entry.
fn str_stacked(i: &mut Interp<'_>, base: usize) -> EvalResult {
    let parts = i.stack.get(base..).unwrap_or_default();
    match plain_str(parts) {
        Some(s) => {
            let n = parts.len();
            str_done(i, s, n)
        }
        None => {
            let a = super::stack_args(i, base);
            str_general(i, a)
        }
    }
}

/// The text of `n` parts: their steps, then the value.
fn str_done(i: &mut Interp<'_>, s: String, n: usize) -> EvalResult {
    i.tick_n(n as u64)?;
    Ok(Value::Str(crate::value::Text::from(s)))
}

/// `str` of parts that are not all texts, integers and nils.
fn str_general(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut s = String::new();
    for x in a.iter().cloned() {
        // A long lazy seq prints its items, as the eager seqs it stands for do (DIV-6).
        let x = i.realize_deep(x)?;
        match &x {
            // Java's Double.toString at the top level; inside collections it stays ##Inf.
            Value::Float(f) if f.is_nan() => s.push_str("NaN"),
            Value::Float(f) if f.is_infinite() && *f > 0.0 => s.push_str("Infinity"),
            Value::Float(f) if f.is_infinite() => s.push_str("-Infinity"),
            // A collection's string form is its printed (readable) form, as in Clojure.
            Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => {
                s.push_str(&crate::print::pr_str(&x));
            }
            // The usual parts, written in place (no string per part).
            Value::Str(t) => s.push_str(t),
            Value::Int(n) => {
                use std::fmt::Write;
                let _ = write!(s, "{n}");
            }
            _ => s.push_str(&crate::print::str_of(&x)),
        }
    }
    i.tick_n(a.len() as u64)?;
    Ok(Value::Str(crate::value::Text::from(s)))
}

/// `str` of the usual parts (strings, integers, nil) into one buffer of the exact length, so the
/// string is one allocation with no growth or final shrink; `None` when another kind of part
/// needs the general path.
fn plain_str(parts: &[Value]) -> Option<String> {
    let mut len = 0;
    for x in parts {
        len += match x {
            Value::Str(t) => t.len(),
            Value::Int(n) => decimal_len(*n),
            Value::Nil => 0,
            _ => return None,
        };
    }
    let mut s = String::with_capacity(len);
    for x in parts {
        match x {
            Value::Str(t) => s.push_str(t),
            Value::Int(n) => {
                use std::fmt::Write;
                let _ = write!(s, "{n}");
            }
            _ => {}
        }
    }
    Some(s)
}

/// The length of `n` written in decimal.
fn decimal_len(n: i64) -> usize {
    let digits = n
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as usize + 1);
    digits + usize::from(n < 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `str`'s exact-length path writes what the general path does, in one buffer that is
    /// never grown: the length it computes for every integer is the written one.
    #[test]
    fn plain_str_is_the_general_str_in_an_exact_buffer() {
        let mut ints = vec![
            0,
            1,
            -1,
            9,
            10,
            -10,
            99,
            100,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ];
        ints.extend(
            (0..19)
                .map(|k| 10i64.pow(k))
                .flat_map(|p| [p - 1, p, -p, 1 - p]),
        );
        for n in &ints {
            assert_eq!(decimal_len(*n), n.to_string().len(), "{n}");
        }
        let parts: Vec<Value> = ints
            .iter()
            .map(|n| Value::Int(*n))
            .chain([
                Value::Nil,
                Value::str(""),
                Value::str("é@"),
                Value::str("ADA"),
            ])
            .collect();
        for k in 0..parts.len() {
            let some = &parts[k..(k + 3).min(parts.len())];
            let fast = plain_str(some).unwrap_or_else(|| panic!("{some:?}"));
            let general: String = some.iter().map(crate::print::str_of).collect();
            assert_eq!(fast, general);
            assert_eq!(fast.capacity(), fast.len(), "{some:?}");
        }
        assert_eq!(plain_str(&[Value::str("a"), Value::Float(1.0)]), None);
        assert_eq!(plain_str(&[Value::Char('a')]), None);
    }

    /// `=`'s shortcut for two scalars answers as the work-list walk, over pairs of scalars,
    /// collections and mixes of the two.
    #[test]
    fn the_scalar_shortcut_of_equality_answers_as_the_walk() {
        let samples = [
            Value::Nil,
            Value::Bool(false),
            Value::Int(1),
            Value::Int(2),
            Value::Float(1.0),
            Value::Float(f64::NAN),
            Value::Char('a'),
            Value::str("gold"),
            Value::str("gold"),
            Value::str("paid"),
            Value::kw("gold"),
            Value::vector([Value::Int(1)]),
            Value::list([Value::Int(1)]),
            Value::set([Value::Int(1)]),
            Value::empty_map(),
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(deep_equal(a, b), walk_equal(a, b), "(= {a:?} {b:?})");
            }
        }
    }
}
