//! `sort-by` answers a key fn that is a `juxt` or `comp` of keywords and builtins' one-operand
//! fast entries (`(juxt (comp - val) key)`) without entering each native's level
//! (`builtins::hof::pure1`). Checked through the public `run` against the general path, the same
//! fn inside three `comp`s with `identity` (deeper than `pure1` looks: it declines, and the
//! `comp`s add three levels and nothing else): random entries, key fns and comparators must give
//! the same printed result or error and the same steps, budgets at steps-1 and steps end alike,
//! and with the sort `n` calls deep the outcome must be the general path's `n - 3` calls deep
//! (where `max_depth` fires is unchanged). Over a flat map (`value::flat`) such a sort reads
//! the entries in insertion order when no two keys tie (`core::sort_flat_map`): random maps,
//! with and without ties, must give the general path's result and steps.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;

use ptc_shared::Limits;
use rng::Rng;
use support::{assert_same_at_budget, assert_same_outcome, outcome};

/// What an entry's key or value mostly is: numbers of both kinds.
const NUMS: [&str; 7] = ["0", "1", "-3", "7", "2.5", "-0.5", "9"];

/// And now and then: values that `-` or the comparison refuse, or that sort apart.
const ODD: [&str; 5] = ["##NaN", "\"a\"", "\"b\"", "nil", ":k"];

fn part(rng: &mut Rng) -> &'static str {
    if rng.below(12) == 0 {
        rng.pick(&ODD)
    } else {
        rng.pick(&NUMS)
    }
}

/// Key fns `pure1` answers (some of whose parts decline or fail on some elements).
const KEYS: [&str; 10] = [
    "(juxt (comp - val) key)",
    "(juxt val key)",
    "(comp - val)",
    "(juxt (comp - key) (comp inc val))",
    "(juxt :a (comp - :b))",
    "(comp :a val)",
    "(juxt first val)",
    "(juxt (comp - (comp - val)) key)",
    "(juxt (juxt val) key)",
    "(juxt (comp - val) (fn [e] (key e)))",
];

const CMPS: [&str; 4] = ["", ">", "<", "compare"];

/// A random element: mostly a map entry (`(first {k v})`), sometimes a record or a number.
fn element(rng: &mut Rng) -> String {
    let (k, v) = (part(rng), part(rng));
    match rng.below(30) {
        0 => format!("{{:a {k} :b {v}}}"),
        1 => k.to_string(),
        _ => format!("(first {{{k} {v}}})"),
    }
}

/// The program over the key fn, both forms bound before the sort so both paths charge the same
/// steps.
fn program(key: &str, cmp: &str, xs: &str, fast: bool) -> String {
    let f = if fast { "k" } else { "g" };
    format!(
        "(let [k {key} g (comp (comp (comp k identity) identity) identity) xs [{xs}]] (try (vec (sort-by {f} {cmp} xs)) (catch Exception e (ex-message e))))"
    )
}

#[test]
fn native_sort_keys_answer_as_the_general_path() {
    let mut rng = Rng(0x5eed_50f7);
    let free = Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    };
    let mut sorted = 0;
    for round in 0..400 {
        let n = rng.below(12);
        let xs: Vec<String> = (0..n).map(|_| element(&mut rng)).collect();
        let xs = xs.join(" ");
        let (key, cmp) = (rng.pick(&KEYS), rng.pick(&CMPS));
        let (fast, general) = (program(key, cmp, &xs, true), program(key, cmp, &xs, false));
        let (want, steps) = assert_same_outcome(&fast, &general, free, outcome);
        sorted += usize::from(want.starts_with('['));
        if round % 8 == 0 {
            assert_same_at_budget(&fast, &general, steps, outcome);
        }
    }
    assert!(sorted > 100, "too few rounds sorted: {sorted}");
}

#[test]
fn the_depth_limit_fires_where_the_general_path_fires() {
    let limits = Limits {
        max_depth: 12,
        max_steps: u64::MAX / 2,
        ..Limits::default()
    };
    let xs = "(first {1 2.5}) (first {2 -1}) (first {3 2.5})";
    for key in ["(juxt (comp - val) key)", "(comp - val)", "(juxt val key)"] {
        let at = |n: usize, fast: bool| {
            let f = if fast { "k" } else { "g" };
            let src = format!(
                "(let [k {key} g (comp (comp (comp k identity) identity) identity)] \
                 (defn down [n] (if (pos? n) (down (dec n)) (vec (sort-by {f} [{xs}])))) \
                 (down {n}))"
            );
            outcome(&src, limits).0
        };
        let mut failed = 0;
        for n in 3..16 {
            let (fast, general) = (at(n, true), at(n - 3, false));
            assert_eq!(fast, general, "{key} {n} calls deep");
            failed += usize::from(fast.starts_with("failed"));
        }
        assert!(failed > 0 && failed < 13, "{key}: the limit was crossed");
    }
}

/// A flat map's entries sorted without reading the map in order, against the general path
/// (the same map, the key fn behind `comp`s that `pure1` declines).
#[test]
fn flat_maps_sort_as_the_general_path() {
    let mut rng = Rng(0x5eed_f1a7);
    let free = Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    };
    let keys = [
        "(juxt (comp - val) key)",
        "(comp - val)",
        "(juxt val key)",
        "(juxt (comp - val))",
        "(juxt (comp inc val) key)",
    ];
    let (mut sorted, mut tied) = (0, 0);
    for round in 0..300 {
        let n = 9 + rng.below(30);
        let spread = 1 + rng.below(60);
        let entries: Vec<String> = (0..n)
            .map(|j| {
                let k = if round % 2 == 0 {
                    j.to_string()
                } else {
                    format!("\"s{}\"", rng.below(1000))
                };
                let odd = if round % 3 == 0 { 40 } else { 4000 };
                let v = match rng.below(odd) {
                    0 => "##NaN".to_string(),
                    1 => "\"x\"".to_string(),
                    2 => "nil".to_string(),
                    _ if round % 4 == 1 => rng.below(spread).to_string(),
                    _ => format!("{}.5", rng.below(spread)),
                };
                format!("[{k} {v}]")
            })
            .collect();
        let (key, cmp) = (rng.pick(&keys), rng.pick(&CMPS));
        let program = |fast: bool| {
            let f = if fast { "k" } else { "g" };
            format!(
                "(let [k {key} g (comp (comp (comp k identity) identity) identity) \
                 m (into {{}} [{}])] \
                 (try (vec (sort-by {f} {cmp} m)) (catch Exception e (ex-message e))))",
                entries.join(" ")
            )
        };
        let (fast, general) = (program(true), program(false));
        let (want, steps) = assert_same_outcome(&fast, &general, free, outcome);
        sorted += usize::from(want.starts_with('['));
        tied += usize::from(spread < n);
        if round % 6 == 0 {
            assert_same_at_budget(&fast, &general, steps, outcome);
        }
    }
    assert!(
        sorted > 100 && tied > 50,
        "sorted {sorted}, with ties {tied}"
    );
}
