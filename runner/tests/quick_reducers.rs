//! Quick reducers (`eval::reducer`): a two-parameter fn whose body is one `assoc` or `update`
//! of its first parameter is answered by `apply2` without being entered. Each case here runs
//! such a fn and the same fn with its body behind a `(do nil ...)` (which the quick form does not
//! recognise, and which charges no step of its own), through the public `run`. It asserts the
//! same printed result or error and the same steps charged. Then it checks that the step budget
//! and the depth limit fire at the same boundaries on both paths.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::Limits;
use support::{VALUES, outcome};

/// Runs the program both ways under `limits`, asserts the same outcome, and gives it.
fn same(src: &str, limits: Limits) -> (String, u64) {
    support::same_both_ways(src, "(fn [acc o]", limits)
}

/// Accumulators: empty and filled small maps, a record, a grown (flat) map, nil, and what
/// `assoc`/`update` take differently or refuse (a sorted map, a vector, a text, a number).
const ACCS: [&str; 11] = [
    "{}",
    "{\"a\" 1 :b 2}",
    // A string key that a keyword key finds (`update` reads it; `assoc` adds the keyword).
    "{\"ab\" 5 \"n\" 1 \"last\" 0}",
    "{:k 1.5 :n 0}",
    "(zipmap (range 40) (range 40))",
    "nil",
    "(sorted-map :a 1)",
    "(sorted-map 1 1)",
    "[1 2]",
    "\"s\"",
    "7",
];

/// Elements: maps holding each value under `:k` and `:v` (small maps and records), a map with
/// a string key `"k"` (which a keyword read finds), and things that are not maps.
fn elements() -> Vec<String> {
    let mut xs: Vec<String> = VALUES
        .iter()
        .map(|v| format!("{{:k {v} :v {v}}}"))
        .collect();
    xs.extend(VALUES.iter().map(|v| format!("{{:a 0 :k :x :v {v} :z 1}}")));
    xs.extend(
        [
            "{:k :ab :v 2.5}",
            "{\"k\" :s :v 1}",
            "{:j 1}",
            "nil",
            "[1 2]",
            "\"k\"",
            "7",
        ]
        .map(String::from),
    );
    xs
}

/// The reducer bodies the quick form takes.
const BODIES: [&str; 11] = [
    "(update acc (:k o) (fnil + 0) (:v o))",
    "(update acc (:k o) (fnil - 0.5) (:v o))",
    "(update acc (:k o) (fnil * 1 2) (:v o))",
    "(update acc (:k o) (fnil < 0) (:v o))",
    "(update acc (:k o) + (:v o))",
    "(update acc (:k o) mod (:v o))",
    "(update acc :n (fnil + 0) (:v o))",
    "(update acc (:k o) inc)",
    "(update acc o (fnil inc 0))",
    "(assoc acc (:k o) o)",
    "(assoc acc :last (:v o))",
];

#[test]
fn quick_reducers_answer_and_charge_as_the_general_path() {
    let xs = elements();
    let (mut cases, mut failed) = (0, 0);
    for body in BODIES {
        for acc in ACCS {
            // One element at a time, so one error does not hide the other answers.
            for x in &xs {
                let src = format!(
                    "(try (reduce (fn [acc o] {body} #_end) {acc} [{x} {x}]) \
                     (catch Exception e (str \"error: \" (ex-message e))))"
                );
                let (text, _) = same(&src, Limits::default());
                cases += 1;
                failed += usize::from(text.starts_with("failed"));
            }
        }
    }
    assert_eq!(failed, 0, "every case is caught per element");
    assert_eq!(cases, BODIES.len() * ACCS.len() * xs.len());
}

#[test]
fn the_usual_pipelines_give_the_same_answers() {
    let rows = "(mapv (fn [i] {:name (str \"n\" (mod i 7)) :cat (mod i 3) :total (* i 1.5) :id i}) \
                (range 300))";
    for body in [
        "(update acc (:name o) (fnil + 0) (:total o))",
        "(update acc (:cat o) (fnil inc 0))",
        "(update acc (:cat o) (fnil conj []) (:id o))",
        "(assoc acc (:id o) o)",
        "(assoc acc (:name o) (:total o))",
    ] {
        // A vector, a lazy seq, and a kept sequence reach `reduce` by different loops.
        for src in [
            format!("(reduce (fn [acc o] {body} #_end) {{}} {rows})"),
            format!("(reduce (fn [acc o] {body} #_end) {{}} (map identity {rows}))"),
            format!("(reduce (fn [acc o] {body} #_end) {{}} (filter #(odd? (:id %)) {rows}))"),
            format!(
                "(let [m (reduce (fn [acc o] {body} #_end) {{}} {rows})] [(count m) (get m 2)])"
            ),
        ] {
            let (text, steps) = same(&src, Limits::default());
            assert!(!text.starts_with("failed"), "{src}: {text}");
            assert!(steps > 300, "{src}: {steps}");
        }
    }
}

#[test]
fn the_step_budget_ends_quick_and_general_reducers_at_the_same_step() {
    // Long enough to cross several of the deadline checks the quick path leaves to the general
    // one (one every 1024 steps).
    let rows = "(mapv (fn [i] {:k (mod i 5) :v i}) (range 1500))";
    for body in [
        "(update acc (:k o) (fnil + 0) (:v o))",
        "(update acc (:k o) (fnil inc 0))",
        "(assoc acc (:v o) (:k o))",
    ] {
        let src = format!("(count (reduce (fn [acc o] {body} #_end) {{}} {rows}))");
        let quick = support::same_step_boundary(&src, "(fn [acc o]");
        assert!(quick > 1500 * 3, "{src}: {quick}");
    }
}

#[test]
fn a_deadline_check_is_never_jumped_over() {
    // Under a deadline already passed, the general path fails at the first check it reaches
    // (every 1024 steps): the quick path must leave those steps to it, not count past them.
    // The rows are written out, so that the first check falls inside the `reduce`.
    let rows: Vec<String> = (0..1500)
        .map(|i| format!("{{:k {} :v {i}}}", i % 5))
        .collect();
    let rows = format!("[{}]", rows.join(" "));
    let limits = Limits {
        timeout_ms: 0,
        ..Limits::default()
    };
    for body in [
        "(update acc (:k o) (fnil + 0) (:v o))",
        "(update acc (:k o) (fnil inc 0))",
        "(assoc acc (:v o) (:k o))",
    ] {
        let src = format!("(count (reduce (fn [acc o] {body} #_end) {{}} {rows}))");
        let (text, steps) = same(&src, limits);
        assert!(
            text.contains("Timeout") || text.contains("timeout"),
            "{text}"
        );
        assert_eq!(steps, 1024, "{body}");
    }
}

#[test]
fn the_depth_limit_ends_quick_and_general_reducers_at_the_same_depth() {
    // `fnil`'s native is called one level below the body: its check is the tighter one.
    for body in [
        "(update acc (:k o) (fnil + 0) (:v o))",
        "(update acc (:k o) + (:v o))",
    ] {
        let src = format!(
            "(defn f [n] (if (= n 0) (reduce (fn [acc o] {body} #_end) {{1 0}} [{{:k 1 :v 2}}]) \
             (f (dec n)))) (f 20)"
        );
        let at = |depth| Limits {
            max_depth: depth,
            ..Limits::default()
        };
        let mut passed_at = None;
        for d in 15..30 {
            let (text, _) = same(&src, at(d));
            if passed_at.is_none() && !text.starts_with("failed") {
                passed_at = Some(d);
            }
        }
        let d = passed_at.expect("passes under some depth");
        let (below, _) = outcome(&src, at(d - 1));
        assert!(below.contains("LimitExceeded"), "{below}");
    }
}
