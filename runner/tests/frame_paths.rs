//! The lambda call path's shortcuts (`eval::enter_lambda` and what surrounds it), each against a
//! general path or a model through the public `run`:
//!
//! - a lambda's entry checks the stack only every `CALL_CHECK`th call level: recursion through
//!   the builtins that call fns (`map`, `keep`, `filter`, `reduce`, `sort-by`, `group-by`,
//!   `some`) still ends at `max_depth` with its limit, never with the thread's stack, on a thread
//!   of 1 MiB (a debug build's frames are kilobytes);
//! - a builtin's loop hands each element to its fn shared in place (`hofseq::share`): random
//!   elements of every kind and fns that read, return, print or throw on them give what a
//!   `loop` calling the same fn gives (results, prints, errors);
//! - an `if` takes its test value apart without dropping a boolean or nil (`special::truthy`),
//!   and a `when` answers its nil branch without the constant's clone: tests of every kind give
//!   the branch Clojure's truthiness picks, with the steps of the same `if` whose else is a
//!   local holding nil, at the budgets steps-1 and steps;
//! - a binding writes over its slot letting the old value go with one tag test
//!   (`eval::forget_or_drop`): `let`s rebound in a `loop`, from values of every kind to every
//!   kind, give the `reduce` model's answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/rng.rs"]
mod rng;

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::{FailReason, Limits};
use rng::Rng;
use support::{assert_same_at_budget, outcome, outcome_printed, outcome_step};

/// Values of every kind: both falsey ones, ones that hold nothing, ones that do.
const VALUES: [&str; 16] = [
    "nil",
    "false",
    "true",
    "0",
    "-7",
    "2.5",
    "\\a",
    "\"paid\"",
    "\"\"",
    ":k",
    "[]",
    "[1 [2]]",
    "{:k 1}",
    "{:k {:j \"x\"}}",
    "#{1}",
    "(list 1 2)",
];

/// Recursion `depth` levels deep, each level entered from the builtin `hof`'s loop.
fn recursion_through(hof: &str, depth: u32) -> String {
    let call = match hof {
        "map" => "(first (map f [(dec n)]))",
        "keep" => "(first (keep f [(dec n)]))",
        "filter" => "(do (vec (filter (fn [x] (f x)) [(dec n)])) (dec n))",
        "reduce" => "(reduce (fn [_ x] (f x)) 0 [(dec n)])",
        "sort-by" => "(do (vec (sort-by f [(dec n) -1])) (dec n))",
        "group-by" => "(first (keys (group-by f [(dec n)])))",
        _ => "(some f [(dec n)])",
    };
    format!("(defn f [n] (if (<= n 0) 0 (inc {call}))) (f {depth})")
}

#[test]
fn recursion_through_the_builtins_ends_at_max_depth_not_on_the_stack() {
    // A thread with a small stack on purpose, as hostile.rs runs: a library user's may be one.
    let t = std::thread::Builder::new().stack_size(1 << 20).spawn(|| {
        let limits = Limits {
            max_depth: 3_000,
            timeout_ms: 60_000,
            cpu_ms: 60_000,
            ..Limits::default()
        };
        for hof in [
            "map", "keep", "filter", "reduce", "sort-by", "group-by", "some",
        ] {
            // Well past the limit: the depth error, not an overflow of the thread's stack.
            let (text, step) = outcome_step(&recursion_through(hof, 5_000), limits);
            let fail = step.fail.expect(hof);
            assert_eq!(fail.reason, FailReason::LimitExceeded, "{hof}: {text}");
            assert!(text.contains("recursion deeper than 3000"), "{hof}: {text}");
            // Well within it: the answer.
            let (text, _) = outcome(&recursion_through(hof, 400), limits);
            assert_eq!(text, "400", "{hof}");
        }
    });
    let r = t.map(|h| h.join());
    assert!(matches!(r, Ok(Ok(()))), "a case failed: {r:?}");
}

/// Fns of one argument `x`: read it, hand it back, print it, answer nil, throw on some kinds.
const FNS: [&str; 7] = [
    "(fn [x] x)",
    "(fn [x] (when (map? x) (:k x)))",
    "(fn [x] (do (println (pr-str x)) (count (str x))))",
    "(fn [x] (if (number? x) nil [x]))",
    "(fn [x] (if (string? x) (throw (ex-info (str \"no \" x) {})) x))",
    "(fn [x] (let [y x z [y]] (when (seq z) (first z))))",
    "(fn [x] (count x))",
];

#[test]
fn a_builtins_fn_gets_each_element_as_a_loop_calling_it_would() {
    let mut rng = Rng(0x5eed_0029);
    for round in 0..200 {
        let n = rng.below(12);
        let xs: Vec<&str> = (0..n).map(|_| rng.pick(&VALUES)).collect();
        let xs = format!("[{}]", xs.join(" "));
        let f = rng.pick(&FNS);
        let source = if round % 2 == 0 {
            format!("(apply list {xs})")
        } else {
            xs
        };
        for (hof, model) in [
            ("map", "(conj acc (f x))"),
            ("keep", "(let [y (f x)] (if (nil? y) acc (conj acc y)))"),
            ("filter", "(if (f x) (conj acc x) acc)"),
            ("remove", "(if (f x) acc (conj acc x))"),
        ] {
            let fast = format!(
                "(let [f {f} xs {source}] (try (vec ({hof} f xs)) \
                 (catch Exception e (str \"error: \" (ex-message e)))))"
            );
            let looped = format!(
                "(let [f {f} xs {source}] (try (loop [acc [] s (seq xs)] (if s \
                 (let [x (first s)] (recur {model} (next s))) acc)) \
                 (catch Exception e (str \"error: \" (ex-message e)))))"
            );
            let (got, _) = outcome_printed(&fast, Limits::default());
            let (want, _) = outcome_printed(&looped, Limits::default());
            assert_eq!(got, want, "round {round}: {fast}");
        }
    }
}

#[test]
fn if_and_when_pick_the_branch_truthiness_picks_at_the_general_steps() {
    for t in VALUES {
        let truthy = !matches!(t, "nil" | "false");
        let pick = |yes: bool, other: &str| if yes { ":then" } else { other }.to_string();
        let read = format!("(let [z nil t (identity {t})] ");
        let (text, _) = outcome(&format!("{read}(if t :then :else))"), Limits::default());
        assert_eq!(text, pick(truthy, ":else"), "{t}");
        let general = format!("{read}(if (boolean t) :then :else))");
        assert_eq!(outcome(&general, Limits::default()).0, text, "{t}");
        for (test, yes) in [("t", truthy), ("(not t)", !truthy)] {
            let fast = format!("{read}(when {test} :then))");
            let (text, steps) = outcome(&fast, Limits::default());
            assert_eq!(text, pick(yes, "nil"), "{fast}");
            // The steps of the same `if` whose else is a local holding nil.
            let general = format!("{read}(if {test} :then z))");
            assert_same_at_budget(&fast, &general, steps, outcome);
        }
    }
}

#[test]
fn bindings_rebound_in_a_loop_give_the_reduce_models_answer() {
    let mut rng = Rng(0xb1d5);
    for round in 0..150 {
        let n = 1 + rng.below(10);
        let xs: Vec<&str> = (0..n).map(|_| rng.pick(&VALUES)).collect();
        let xs = format!("[{}]", xs.join(" "));
        let looped = format!(
            "(loop [i 0 acc []] (if (< i {n}) \
             (let [x (nth {xs} i) y (if (coll? x) (count x) x) z [y x]] \
               (recur (inc i) (conj acc (pr-str z)))) \
             acc))"
        );
        let model = format!(
            "(reduce (fn [acc x] (conj acc (pr-str [(if (coll? x) (count x) x) x]))) [] {xs})"
        );
        let (got, _) = outcome(&looped, Limits::default());
        let (want, _) = outcome(&model, Limits::default());
        assert_eq!(got, want, "round {round}: {looped}");
        assert!(!got.starts_with("failed"), "round {round}: {got}");
    }
}
