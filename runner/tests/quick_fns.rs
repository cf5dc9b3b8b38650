//! Quick fns (`eval::prim::Quick`): a one-parameter fn whose body reads a keyword of its
//! parameter, alone or compared with a constant or a captured value, is answered by the
//! sequence builtins without being entered. Each case here runs that fn and the same fn with
//! its body behind a `(do nil ...)` (which the quick form does not recognise, and which charges
//! no step of its own), through the public `run`, and asserts the same printed result or error
//! and the same steps charged; then that the step budget and the depth limit fire at the same
//! boundaries on both paths.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::Limits;
use support::VALUES;

/// Elements the fns see: maps holding each value under `:k` (small maps and records), a map
/// without `:k`, and things that are not maps (`(:k x)` of them is `get`'s answer).
fn elements() -> String {
    let mut xs: Vec<String> = VALUES.iter().map(|v| format!("{{:k {v}}}")).collect();
    xs.extend(VALUES.iter().map(|v| format!("{{:a 0 :k {v} :z 1}}")));
    xs.extend(["{:j 1}", "nil", "[1 2]", "#{:k}", "\"k\"", "7"].map(String::from));
    format!("[{}]", xs.join(" "))
}

/// Runs the program both ways under `limits`, asserts the same outcome, and gives it.
fn same(src: &str, limits: Limits) -> (String, u64) {
    support::same_both_ways(src, "(fn [m]", limits)
}

#[test]
fn quick_fns_answer_and_charge_as_the_general_path() {
    let xs = elements();
    let ops = [
        "=", "<", ">", "<=", ">=", "+", "-", "*", "mod", "rem", "quot",
    ];
    let hofs = ["map", "filter", "remove", "keep", "group-by", "sort-by"];
    let (mut cases, mut failed) = (0, 0);
    for op in ops {
        for c in VALUES {
            for hof in hofs {
                // One element at a time, so one error does not hide the other answers.
                let body = [
                    format!("({op} (:k m) {c})"),
                    format!("({op} {c} (:k m))"),
                    format!("({op} (:k m) c)"),
                    format!("({op} c (:k m))"),
                ];
                for b in body {
                    let src = format!(
                        "(let [c {c}] (mapv (fn [x] (try ({hof} (fn [m] {b} #_end) [x]) \
                         (catch Exception e (str \"error: \" (ex-message e))))) {xs}))"
                    );
                    let (text, _) = same(&src, Limits::default());
                    cases += 1;
                    failed += usize::from(text.starts_with("failed"));
                }
            }
        }
    }
    assert_eq!(failed, 0, "every case is caught per element");
    assert_eq!(cases, 11 * 16 * 6 * 4);
}

#[test]
fn quick_field_reads_answer_and_charge_as_the_general_path() {
    let xs = elements();
    for hof in ["map", "filter", "remove", "keep", "group-by", "some"] {
        let src = format!("({hof} (fn [m] (:k m) #_end) {xs})");
        same(&src, Limits::default());
        // Lazy sources reach the fn through the lazy generators.
        let src = format!("(doall ({hof} (fn [m] (:k m) #_end) (map identity {xs})))");
        same(&src, Limits::default());
    }
    let (text, steps) = same(
        r#"(->> [{:s "paid" :t 300} {:s "new" :t 900} {:s "paid" :t 100} {:s "paid" :t 700}]
                (filter (fn [m] (= "paid" (:s m)) #_end))
                (filter (fn [m] (> (:t m) 250) #_end))
                (map (fn [m] (:t m) #_end)))"#,
        Limits::default(),
    );
    assert_eq!(text, "(300 700)");
    assert!(steps > 10, "{steps}");
}

#[test]
fn the_step_budget_ends_quick_and_general_fns_at_the_same_step() {
    // Long enough that the quick path crosses several of the deadline checks it leaves to the
    // general path (one every 1024 steps).
    let rows = "(mapv (fn [i] {:k (mod i 3) :t i}) (range 1500))";
    for src in [
        format!("(count (filter (fn [m] (= 1 (:k m)) #_end) {rows}))"),
        format!("(let [n 700] (count (filter (fn [m] (> (:t m) n) #_end) {rows})))"),
        format!("(reduce + (map (fn [m] (:t m) #_end) {rows}))"),
        format!("(first (sort-by (fn [m] (:t m) #_end) > {rows}))"),
    ] {
        let quick = support::same_step_boundary(&src, "(fn [m]");
        assert!(quick > 1500 * 2, "{src}: {quick}");
    }
}

#[test]
fn the_depth_limit_ends_quick_and_general_fns_at_the_same_depth() {
    let src = "(defn f [n] (if (= n 0) (count (filter (fn [m] (= 1 (:k m)) #_end) [{:k 1}])) \
               (f (dec n)))) (f 20)";
    support::same_depth_boundary(src, "(fn [m]");
}
