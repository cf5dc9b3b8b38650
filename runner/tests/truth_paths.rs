//! Two fast paths of the sequence builtins, each checked against a general path or a model
//! through the public `run`:
//!
//! - `filter` and `remove` over a vector or list take a quick fn's boolean answer apart in their
//!   loop (`hofseq::test1`: a boolean or nil is not dropped through `Value`'s drop). Random
//!   elements and fns (quick tests, quick field reads of every kind of value, general fns that
//!   answer collections, fns that fail) must give the same printed result or error and the same
//!   steps as the same fn behind a `(do nil ...)` (not quick), and the same elements as a
//!   `reduce` model.
//! - `group-by` fills each group's plain `Vec` and hands it to the group's vector at the end.
//!   Random elements and key fns (few and many groups, keys of every kind) must give a map equal
//!   to the `reduce`/`update`/`conj` model, in the same order, with vectors that still grow and
//!   compare as vectors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/rng.rs"]
mod rng;

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::Limits;
use rng::Rng;
use support::outcome;

/// What a field may hold: both falsey values, truthy values that hold nothing to drop, and
/// values that do (texts, collections).
const FIELDS: [&str; 14] = [
    "nil", "false", "true", "0", "1", "-3", "2.5", "##NaN", "\"paid\"", "\"\"", ":k", "[]",
    "[1 2]", "{:k nil}",
];

/// Fns over an element `m`, written `(fn [m] BODY #_end)` so that `general` can hide the body.
const FNS: [&str; 10] = [
    "(fn [m] (:k m) #_end)",
    "(fn [m] (= \"paid\" (:k m)) #_end)",
    "(fn [m] (> (:k m) 0) #_end)",
    "(fn [m] (<= c (:k m)) #_end)",
    "(fn [m] (= c (:k m)) #_end)",
    "(fn [m] (:j m) #_end)",
    "(fn [m] (get m :k) #_end)",
    "(fn [m] (when (:k m) [(:k m)]) #_end)",
    "(fn [m] (if (map? m) (:k m) (throw (ex-info \"not a map\" {}))) #_end)",
    "(fn [m] (mod (:k m) 2) #_end)",
];

/// The same program with each `(fn [m] BODY #_end)` given a body the quick form declines.
fn general(src: &str) -> String {
    src.replace("(fn [m] ", "(fn [m] (do nil ")
        .replace(" #_end", ")")
}

/// A random element: mostly records `{:k v}` (some with a second key), sometimes not a map.
fn element(rng: &mut Rng) -> String {
    let v = rng.pick(&FIELDS);
    match rng.below(10) {
        0 => rng.pick(&["nil", "7", "\"k\"", "[1]"]).to_string(),
        1 => format!("{{:a 1 :k {v} :j {}}}", rng.pick(&FIELDS)),
        _ => format!("{{:k {v}}}"),
    }
}

#[test]
fn filter_and_remove_answer_as_the_general_path_and_the_model() {
    let mut rng = Rng(0x5eed_0026);
    let mut checked = 0;
    for round in 0..300 {
        let n = rng.below(40);
        let xs: Vec<String> = (0..n).map(|_| element(&mut rng)).collect();
        let xs = format!("[{}]", xs.join(" "));
        let f = rng.pick(&FNS);
        let c = rng.pick(&["0", "1", "\"paid\"", "nil", "2.5"]);
        let source = if round % 3 == 0 {
            format!("(apply list {xs})")
        } else {
            xs
        };
        for (hof, model_test) in [("filter", "(f x)"), ("remove", "(not (f x))")] {
            let src = format!(
                "(let [c {c} xs {source}] (try (vec ({hof} {f} xs)) \
                 (catch Exception e (str \"error: \" (ex-message e)))))"
            );
            let quick = outcome(&src, Limits::default());
            let slow = outcome(&general(&src), Limits::default());
            assert_eq!(quick, slow, "round {round}: {src}");
            let model = format!(
                "(let [c {c} xs {source} f {f}] (try (reduce (fn [acc x] (if {model_test} \
                 (conj acc x) acc)) [] xs) (catch Exception e (str \"error: \" (ex-message e)))))"
            );
            let (expected, _) = outcome(&model, Limits::default());
            assert_eq!(quick.0, expected, "round {round}: {src}");
            checked += 1;
        }
    }
    assert_eq!(checked, 600);
}

#[test]
fn a_quick_filter_ends_on_the_step_budget_where_the_general_one_does() {
    let src = "(let [c 1] (count (filter (fn [m] (= c (:k m)) #_end) \
               (mapv (fn [i] {:k (mod i 3)}) (range 300)))))";
    let at = |steps| Limits {
        max_steps: steps,
        ..Limits::default()
    };
    // The run's full cost, then every budget around it, both ways.
    let (text, steps) = outcome(src, Limits::default());
    assert_eq!(text, "100");
    assert!(steps > 600, "{steps}");
    for n in steps - 40..=steps + 2 {
        let quick = outcome(src, at(n));
        assert_eq!(quick, outcome(&general(src), at(n)), "{n}");
        assert_eq!(quick.0 == "100", n >= steps, "{n}: {quick:?}");
    }
}

/// Key fns over an element `x`: few groups, many groups, keys of every kind (nil, false,
/// texts, keywords, collections, doubles equal to no integer). NaN is left out of the keys: a
/// map holding it is equal to no map, so the model could not be compared with `=`.
const KEYS: [&str; 7] = [
    "(fn [x] (:k x))",
    ":k",
    "(fn [x] (mod (:n x) 3))",
    "(fn [x] (:n x))",
    "(fn [x] [(:k x) (odd? (:n x))])",
    "(fn [x] (str (:n x)))",
    "(fn [x] (when (even? (:n x)) (/ (:n x) 4)))",
];

#[test]
fn group_by_answers_as_the_update_conj_model() {
    let mut rng = Rng(0x9_0b7);
    let keys: Vec<&str> = FIELDS.into_iter().filter(|v| *v != "##NaN").collect();
    for round in 0..200 {
        let n = rng.below(60);
        let xs: Vec<String> = (0..n)
            .map(|_| {
                format!(
                    "{{:k {} :n {}}}",
                    rng.pick(&keys),
                    rng.below(if round % 2 == 0 { 5 } else { 40 })
                )
            })
            .collect();
        let xs = format!("[{}]", xs.join(" "));
        let f = rng.pick(&KEYS);
        // Equal, in the same order, every group a vector that still grows as one.
        let src = format!(
            "(let [xs {xs} f {f} g (group-by f xs) \
                   m (reduce (fn [acc x] (update acc (f x) (fnil conj []) x)) {{}} xs)] \
               [(= g m) (= (keys g) (keys m)) (every? vector? (vals g)) \
                (= (map #(conj % :end) (vals g)) (map #(conj % :end) (vals m))) \
                (map count (vals g))])"
        );
        let (text, _) = outcome(&src, Limits::default());
        assert!(
            text.starts_with("[true true true true"),
            "round {round}: {src} -> {text}"
        );
    }
}
