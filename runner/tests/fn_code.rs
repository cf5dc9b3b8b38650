//! Register code (`eval::code`): a one-parameter fn whose body only reads fields, looks keys up
//! with `get`, compares, branches, binds and builds records and vectors is run by the sequence
//! builtins as register ops over the borrowed element. Each case runs such a fn and the same fn
//! with its body behind a `(do nil ...)` (which the compiler does not take, and which charges no
//! step of its own), through the public `run`, and asserts the same printed result or error and
//! the same steps charged; then that the step budget and the depth limit end both at the same
//! point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::Limits;
use support::VALUES;

/// Elements the fns see: records and small maps holding each value under `:k`, with an `:id`
/// that by-id may or may not hold, a map without `:k`, and things that are not maps.
fn elements() -> String {
    let mut xs: Vec<String> = VALUES
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{{:id {i} :k {v}}}"))
        .collect();
    xs.extend(VALUES.iter().map(|v| format!("{{:a 0 :k {v} :z 1}}")));
    xs.extend(
        [
            "{:j 1}",
            "{:id \"3\" :k {:k 2}}",
            "nil",
            "[1 2]",
            "#{:k}",
            "\"k\"",
            "7",
        ]
        .map(String::from),
    );
    format!("[{}]", xs.join(" "))
}

/// Runs the program both ways under `limits`, asserts the same outcome, and gives it.
fn same(src: &str, limits: Limits) -> (String, u64) {
    support::same_both_ways(src, "(fn [m]", limits)
}

/// Bodies over `m` (the element), `by` (a map of customers by id, captured) and `n` (a
/// captured number): every op of the code, and operands that make each op decline.
const BODIES: [&str; 24] = [
    "(let [c (get by (:id m))] (when (= \"gold\" (:tier c)) {:customer (:name c) :total (:k m)}))",
    "(get by (:id m))",
    "(let [x (:k m)] (when x [x (:id m)]))",
    "(if (:k m) {:a (:k m) :b 1} [m])",
    "(let [v (:k m)] (if (= 1 v) :one (< v 2)))",
    "[(:id m) m]",
    "(let [a (get m :k) b (get by a)] [a b (:name b)])",
    "(when (> (:k m) 0) (:k m))",
    "(if (:k m) (:k (:k m)) :none)",
    "(get (:k m) 0)",
    "{:x (+ (:k m) 1) :y (:k m)}",
    "(let [m2 m] (:k m2))",
    "(let [v (:k m)] (if (> v n) [v n] (= v n)))",
    "(if (get by (:id m)) (:tier (get by (:id m))) (:k m))",
    "[(:k m) (:k m) (:k m)]",
    "(let [c (get by (:id m)) t (:tier c)] (if t {:t t :k (:k m) :c c} (:k m)))",
    "(inc (:k m))",
    "[(count (:k m)) (first (:k m)) (second (:k m))]",
    "(when (not= (:k m) 1) (not (:k m)))",
    "(let [s (:k m)] (if (string? s) (str/upper-case s) (str/lower-case (:name (get by (:id m))))))",
    "(first (str/split (:k m) #\"a\"))",
    "(and (:k m) (> (:k m) 0) [(:k m)])",
    "(or (:j m) (:k m) (get by (:id m)))",
    "(let [x (:k m)] [(and) (or) (and x) (or x nil) (and (= x 1) (or (:z m) :none))])",
];

/// The context the bodies capture: `by` keyed by integers (a flat map, as `into {}` builds) and
/// one string key, and `n`.
const BINDINGS: &str = "[by (assoc (into {} (map (fn [i] [i {:tier (if (even? i) \"gold\" \"x\") \
                        :name (str \"n\" i)}]) (range 12))) \"3\" {:tier \"gold\" :name \"s\"}) n 1]";

#[test]
fn register_code_answers_and_charges_as_the_general_path() {
    let xs = elements();
    let hofs = ["map", "filter", "remove", "keep", "group-by", "sort-by"];
    let (mut cases, mut failed) = (0, 0);
    for body in BODIES {
        for hof in hofs {
            // One element at a time, so one error does not hide the other answers.
            let src = format!(
                "(let {BINDINGS} (mapv (fn [x] (try ({hof} (fn [m] {body} #_end) [x]) \
                 (catch Exception e (str \"error: \" (ex-message e))))) {xs}))"
            );
            let (text, _) = same(&src, Limits::default());
            cases += 1;
            failed += usize::from(text.starts_with("failed"));
        }
    }
    assert_eq!(failed, 0, "every case is caught per element");
    assert_eq!(cases, BODIES.len() * hofs.len());
}

/// A `catch` that gives the error's message (without its position).
const CATCH: &str = "(catch Exception e (str \"error: \" (ex-message e)))";

#[test]
fn register_code_over_whole_collections_and_lazy_sources() {
    let xs = "(mapv (fn [i] {:id i :k (mod i 5)}) (range 40))";
    for body in BODIES {
        // Errors caught: their positions move with the `(do nil` the general form adds.
        for src in [
            format!("(let {BINDINGS} (try (doall (keep (fn [m] {body} #_end) {xs})) {CATCH}))"),
            format!(
                "(let {BINDINGS} (try (doall (map (fn [m] {body} #_end) (map identity {xs}))) \
                 {CATCH}))"
            ),
        ] {
            same(&src, Limits::default());
        }
    }
}

#[test]
fn the_step_budget_ends_code_and_general_fns_at_the_same_step() {
    // Long enough to cross several of the deadline checks the code leaves to the general path
    // (one every 1024 steps).
    let rows = "(mapv (fn [i] {:id (mod i 12) :k i}) (range 1500))";
    for src in [
        format!(
            "(let {BINDINGS} (count (keep (fn [m] (let [c (get by (:id m))] \
             (when (= \"gold\" (:tier c)) {{:n (:name c) :k (:k m)}})) #_end) {rows})))"
        ),
        format!(
            "(let {BINDINGS} (count (filter (fn [m] (let [k (:k m)] (> k 700)) #_end) {rows})))"
        ),
        format!("(let {BINDINGS} (last (map (fn [m] [(:id m) (:k m)] #_end) {rows})))"),
    ] {
        let at = support::same_step_boundary(&src, "(fn [m]");
        assert!(at > 1500 * 2, "{src}: {at}");
    }
}

#[test]
fn the_depth_limit_ends_code_and_general_fns_at_the_same_depth() {
    let src = "(defn f [n] (if (= n 0) (count (keep (fn [m] (let [x (:k m)] (when x [x])) #_end) \
               [{:k 1}])) (f (dec n)))) (f 20)";
    support::same_depth_boundary(src, "(fn [m]");
}

#[test]
fn the_join_of_the_pipelines_bench_answers_as_the_general_path() {
    let src = "(let [customers (mapv (fn [i] {:id i :tier (if (= 0 (mod i 3)) \"gold\" \"x\") \
               :name (str \"c\" (mod i 7))}) (range 30)) \
               by-id (into {} (map (fn [m] [(:id m) m] #_end) customers))] \
               (->> (mapv (fn [i] {:customer_id (mod (* i 7) 31) :total (* 1.5 i)}) (range 200)) \
               (keep (fn [m] (let [c (get by-id (:customer_id m))] (when (= \"gold\" (:tier c)) \
               {:customer (:name c) :total (:total m)})) #_end)) \
               (reduce (fn [acc r] (update acc (:customer r) (fnil + 0) (:total r))) {}) \
               (sort-by (juxt (comp - val) key)) (take 5) (map vec)))";
    let (text, steps) = same(src, Limits::default());
    assert!(text.starts_with("([\"c"), "{text}");
    assert!(steps > 200 * 4, "{steps}");
}
