//! A stable merge sort over a fallible comparator, for `sort` and `sort-by`.
//!
//! The standard library's sorts may panic when a comparator is not a total order (Rust ≥ 1.81
//! does so on purpose), and a program's comparator is untrusted. Here a merge only ever asks
//! "does the right head go before the left head?", so any answers, consistent or not, end in a
//! permutation of the input after O(n log n) calls, with the same result for the same answers.
//! The first error from the comparator stops the sort.
//!
//! [`native_order`] stands in for that merge when the comparator is one whose answers are
//! known without a call (`compare`, `<`, `>`, `:asc`, `:desc`, or none) and every key is of
//! one kind it orders totally: all integers, all numbers without NaN (integers within 2^53,
//! so converting them to doubles loses nothing, as `num_cmp` compares them), or, for
//! `compare`, all strings; or vectors of one length (up to four) whose every column is one
//! such kind (`(juxt (comp - val) key)`), which `compare` orders column by column. Then every
//! comparison of the general path would succeed and the order is total; with equal keys
//! ordered by position it is strict, so the standard library's unstable sort (no scratch
//! buffer) gives the merge's stable permutation and cannot panic. Any other keys (nil, NaN,
//! large integers beside doubles, mixed kinds or lengths, things that do not compare) take the
//! general path, which alone defines errors. [`native_order_untied`] also declines keys of which
//! two are equal: without ties the order does not depend on the items' positions.

use crate::value::Value;
use std::cmp::Ordering;

/// Sorts `items` stably by `cmp` (equal elements keep their order).
pub fn sort_by<T, E>(
    items: Vec<T>,
    mut cmp: impl FnMut(&T, &T) -> Result<Ordering, E>,
) -> Result<Vec<T>, E> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    let mut before = |a: usize, b: usize| match (items.get(a), items.get(b)) {
        (Some(x), Some(y)) => Ok(cmp(x, y)? == Ordering::Less),
        _ => Ok(false),
    };
    let mut width = 1;
    while width < order.len() {
        let mut next = Vec::with_capacity(order.len());
        for run in order.chunks(width.saturating_mul(2)) {
            let (left, right) = run.split_at(width.min(run.len()));
            merge(left, right, &mut next, &mut before)?;
        }
        order = next;
        width = width.saturating_mul(2);
    }
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    Ok(order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect())
}

/// The largest integer magnitude a double holds exactly, with every integer below it.
const EXACT_IN_F64: i64 = 1 << 53;

/// The kind of keys [`native_order`] sorts, each ordered as the general comparison orders it.
enum Keys {
    Ints(Vec<(i64, usize)>),
    Floats(Vec<(f64, usize)>),
    Strs,
}

/// The stable order (positions into `items`) of the `(key, item)` pairs under `cmp`, computed
/// without calling the comparator, or `None` when the general merge must decide (see the
/// module header). Numbers only for `<` and `>`, which reject anything else.
pub fn native_order(items: &[(Value, Value)], cmp: Option<&Value>) -> Option<Vec<usize>> {
    order_of(items, cmp, false)
}

/// [`native_order`] when no two keys are equal, else `None`: then the order does not depend on
/// the items' positions (`sort-by` of a map read in any order, `core::sort_flat_map`).
pub fn native_order_untied(items: &[(Value, Value)], cmp: Option<&Value>) -> Option<Vec<usize>> {
    order_of(items, cmp, true)
}

/// [`native_order`], or `None` on a tie when `untied`: each kind's own comparison tells.
fn order_of(items: &[(Value, Value)], cmp: Option<&Value>, untied: bool) -> Option<Vec<usize>> {
    let (desc, numbers_only) = match cmp {
        None => (false, false),
        Some(Value::Keyword(k)) if &**k == "asc" => (false, false),
        Some(Value::Keyword(k)) if &**k == "desc" => (true, false),
        Some(Value::Builtin(b)) if b.name == "compare" => (false, false),
        Some(Value::Builtin(b)) if b.name == "<" => (false, true),
        Some(Value::Builtin(b)) if b.name == ">" => (true, true),
        _ => return None,
    };
    if !numbers_only && let Some(order) = tuple_order(items, desc, untied) {
        return order;
    }
    let keys = items.iter().map(|(k, _)| k);
    let mut order: Vec<usize> = match classify(keys, numbers_only)? {
        // Equal keys ordered by position: a strict total order, so the unstable sort (no
        // scratch buffer) gives the stable sort's permutation.
        Keys::Ints(mut ks) => {
            if desc {
                ks.sort_unstable_by_key(|k| (std::cmp::Reverse(k.0), k.1));
            } else {
                ks.sort_unstable();
            }
            if untied && ks.windows(2).any(|w| matches!(w, [a, b] if a.0 == b.0)) {
                return None;
            }
            return Some(ks.into_iter().map(|(_, i)| i).collect());
        }
        Keys::Floats(mut ks) => {
            // No NaN among them: `partial_cmp` always answers, and -0.0 equals 0.0 as in `==`.
            let by = |a: &(f64, usize), b: &(f64, usize)| {
                a.0.partial_cmp(&b.0).unwrap_or(Ordering::Equal)
            };
            if desc {
                ks.sort_unstable_by(|a, b| by(b, a).then(a.1.cmp(&b.1)));
            } else {
                ks.sort_unstable_by(|a, b| by(a, b).then(a.1.cmp(&b.1)));
            }
            if untied
                && ks
                    .windows(2)
                    .any(|w| matches!(w, [a, b] if by(a, b).is_eq()))
            {
                return None;
            }
            return Some(ks.into_iter().map(|(_, i)| i).collect());
        }
        Keys::Strs => (0..items.len()).collect(),
    };
    // `compare` of two texts never fails (UTF-16 code units, as Java's `compareTo`).
    let by = |a: usize, b: usize| match (items.get(a), items.get(b)) {
        (Some((x, _)), Some((y, _))) => super::math::compare(x, y).unwrap_or(0).cmp(&0),
        _ => Ordering::Equal,
    };
    if desc {
        order.sort_unstable_by(|&a, &b| by(b, a).then(a.cmp(&b)));
    } else {
        order.sort_unstable_by(|&a, &b| by(a, b).then(a.cmp(&b)));
    }
    if untied
        && order
            .windows(2)
            .any(|w| matches!(w, [a, b] if by(*a, *b).is_eq()))
    {
        return None;
    }
    Some(order)
}

/// The longest vector key [`tuple_order`] takes.
const MAX_TUPLE: usize = 4;

/// One element of a vector key, as its column orders it: integers exactly, numbers as
/// doubles (no NaN; integers within 2^53), texts by `compare`.
#[derive(Clone, Copy)]
enum Cell<'a> {
    I(i64),
    F(f64),
    S(&'a Value),
}

impl Cell<'_> {
    /// A column holds one kind of cell, so only like cells are ever compared.
    fn cmp(&self, other: &Cell<'_>) -> Ordering {
        match (self, other) {
            (Cell::I(x), Cell::I(y)) => x.cmp(y),
            (Cell::F(x), Cell::F(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
            (Cell::S(x), Cell::S(y)) => super::math::compare(x, y).unwrap_or(0).cmp(&0),
            _ => Ordering::Equal,
        }
    }
}

/// The stable order of keys that are all vectors of one length (up to [`MAX_TUPLE`]) whose
/// every column is of one kind `classify` would sort natively (`(juxt (comp - val) key)`):
/// `compare` orders vectors of one length element by element, so this is the lexicographic
/// order of the columns, total, and the standard stable sort gives the merge's permutation.
/// `None` for any other keys (the general merge decides); `Some(None)` for a tie when `untied`.
fn tuple_order(items: &[(Value, Value)], desc: bool, untied: bool) -> Option<Option<Vec<usize>>> {
    let n = match items.first() {
        Some((Value::Vector(v), _)) if (1..=MAX_TUPLE).contains(&v.len()) => v.len(),
        _ => return None,
    };
    let mut rows: Vec<([Cell<'_>; MAX_TUPLE], usize)> = (0..items.len())
        .map(|i| ([Cell::I(0); MAX_TUPLE], i))
        .collect();
    for j in 0..n {
        let column: Vec<&Value> = items
            .iter()
            .map(|(k, _)| match k {
                Value::Vector(v) if v.len() == n => v.get(j),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let kind = classify(column.iter().copied(), false)?;
        for (r, ((row, _), elem)) in rows.iter_mut().zip(&column).enumerate() {
            *row.get_mut(j)? = match &kind {
                Keys::Ints(ks) => Cell::I(ks.get(r)?.0),
                Keys::Floats(ks) => Cell::F(ks.get(r)?.0),
                Keys::Strs => Cell::S(elem),
            };
        }
    }
    let by = |a: &[Cell<'_>; MAX_TUPLE], b: &[Cell<'_>; MAX_TUPLE]| {
        let pairs = a.iter().zip(b.iter()).take(n);
        pairs
            .map(|(x, y)| x.cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    if desc {
        rows.sort_unstable_by(|a, b| by(&b.0, &a.0).then(a.1.cmp(&b.1)));
    } else {
        rows.sort_unstable_by(|a, b| by(&a.0, &b.0).then(a.1.cmp(&b.1)));
    }
    if untied
        && rows
            .windows(2)
            .any(|w| matches!(w, [a, b] if by(&a.0, &b.0).is_eq()))
    {
        return Some(None);
    }
    Some(Some(rows.into_iter().map(|(_, i)| i).collect()))
}

/// The one kind all keys share, with the numbers extracted, or `None` (see [`native_order`]).
fn classify<'a>(keys: impl Iterator<Item = &'a Value> + Clone, numbers_only: bool) -> Option<Keys> {
    let (mut ints, mut floats, mut strs, mut wide) = (0usize, 0usize, 0usize, false);
    for k in keys.clone() {
        match k {
            Value::Int(n) => {
                ints += 1;
                wide |= !(-EXACT_IN_F64..=EXACT_IN_F64).contains(n);
            }
            Value::Float(f) if !f.is_nan() => floats += 1,
            Value::Str(_) if !numbers_only => strs += 1,
            _ => return None,
        }
    }
    let keyed = |f: fn(&Value) -> f64| keys.clone().enumerate().map(move |(i, k)| (f(k), i));
    match (ints, floats, strs) {
        (_, 0, 0) => Some(Keys::Ints(
            keys.clone()
                .enumerate()
                .map(|(i, k)| (if let Value::Int(n) = k { *n } else { 0 }, i))
                .collect(),
        )),
        (_, _, 0) if !wide => Some(Keys::Floats(
            keyed(|k| match k {
                Value::Int(n) => *n as f64,
                Value::Float(f) => *f,
                _ => 0.0,
            })
            .collect(),
        )),
        (0, 0, _) => Some(Keys::Strs),
        _ => None,
    }
}

/// Merges two sorted runs of indices; the left head wins ties (stability).
fn merge<E>(
    left: &[usize],
    right: &[usize],
    out: &mut Vec<usize>,
    before: &mut impl FnMut(usize, usize) -> Result<bool, E>,
) -> Result<(), E> {
    let (mut l, mut r) = (left.iter().peekable(), right.iter().peekable());
    loop {
        match (l.peek(), r.peek()) {
            (Some(&&a), Some(&&b)) => {
                if before(b, a)? {
                    out.push(b);
                    r.next();
                } else {
                    out.push(a);
                    l.next();
                }
            }
            (Some(_), None) => {
                out.extend(l);
                return Ok(());
            }
            (None, _) => {
                out.extend(r);
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(xs: Vec<i32>) -> Vec<i32> {
        sort_by(xs, |a, b| Ok::<_, ()>(a.cmp(b))).unwrap_or_default()
    }

    #[test]
    fn sorts_and_is_stable() {
        assert_eq!(sorted(vec![5, 3, 9, 1, 3, 0]), vec![0, 1, 3, 3, 5, 9]);
        assert_eq!(sorted(vec![]), Vec::<i32>::new());
        let pairs = vec![(1, 'a'), (0, 'b'), (1, 'c'), (0, 'd')];
        let out = sort_by(pairs, |x, y| Ok::<_, ()>(x.0.cmp(&y.0))).unwrap_or_default();
        assert_eq!(out, vec![(0, 'b'), (0, 'd'), (1, 'a'), (1, 'c')]);
    }

    #[test]
    fn an_inconsistent_comparator_gives_a_permutation() {
        let xs: Vec<i32> = (0..1000).collect();
        let mut calls = 0i32;
        let out = sort_by(xs.clone(), |a, b| {
            calls += 1;
            Ok::<_, ()>(if (a ^ b ^ calls) & 1 == 0 {
                Ordering::Less
            } else {
                Ordering::Greater
            })
        })
        .unwrap_or_default();
        let mut back = out.clone();
        back.sort();
        assert_eq!(back, xs);
    }

    #[test]
    fn the_first_error_stops_the_sort() {
        let mut calls = 0;
        let r = sort_by((0..100).collect::<Vec<i32>>(), |_, _| {
            calls += 1;
            if calls == 5 {
                Err("boom")
            } else {
                Ok(Ordering::Less)
            }
        });
        assert_eq!(r, Err("boom"));
        assert_eq!(calls, 5);
    }
}
