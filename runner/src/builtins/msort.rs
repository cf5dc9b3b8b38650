//! A stable merge sort over a fallible comparator, for `sort` and `sort-by`.
//!
//! The standard library's sorts may panic when a comparator is not a total order (Rust ≥ 1.81
//! does so on purpose), and a program's comparator is untrusted. Here a merge only ever asks
//! "does the right head go before the left head?", so any answers, consistent or not, end in a
//! permutation of the input after O(n log n) calls, with the same result for the same answers.
//! The first error from the comparator stops the sort.

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
