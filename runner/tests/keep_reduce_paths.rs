//! `keep` over a vector or list walks it in place; any other source goes through the sequence
//! generator (`eval::lazy::Gen::Keep`). Each case here runs the same `keep` over the same
//! elements from a vector literal `[[0 x0] [1 x1] ...]` and from a sorted map
//! `(sorted-map 0 x0 1 x1 ...)`, whose entries are those very pairs in that order, through the
//! public `run`: the printed result or error, the order in which the fn saw the elements
//! (printed), and the steps the `keep` itself charged (the program's steps less those of the same
//! program returning its source) must be equal; then the step budget and `max_iterations` must
//! fire at the same boundaries on both paths.
//!
//! `reduce`, `into`, `group-by` and `frequencies` over a vector or list that they alone hold
//! take the elements out instead of copying them (`into` a map takes a `[k v]` pair it alone
//! holds apart): the same program reading the collection last (moved into the call) and before
//! its last read (shared) must give the same result, printed lines and steps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/rng.rs"]
mod rng;

#[path = "support/outcome.rs"]
mod support;

use support::outcome_printed as outcome;

use ptc_shared::{FailReason, Limits};
use rng::Rng;

/// Values an element may carry: nil and false (kept only when not nil), numbers, texts,
/// collections, and a zero that makes the dividing fn fail.
const VALUES: [&str; 12] = [
    "nil", "false", "true", "0", "1", "-3", "2.5", "\"a\"", ":k", "[1 2]", "{:k 1}", "{:k nil}",
];

/// Fns over an `[i x]` pair: lambdas (destructuring, a plain parameter), a builtin, a
/// keyword (nil of a vector), and ones that fail on some elements.
const FNS: [&str; 9] = [
    "(fn [[i x]] x)",
    "(fn [[i x]] (when (odd? i) x))",
    "(fn [p] (second p))",
    "second",
    ":k",
    "(fn [[_ x]] (:k x))",
    "(fn [[_ x]] (if (number? x) (/ 10 x) x))",
    "(fn [[i x]] (when (> i 2) (throw (ex-info \"stop\" {:i i}))))",
    "(fn [[i _]] (when (even? i) [i]))",
];

/// The same elements as a vector literal and as a sorted map.
fn sources(xs: &[&str]) -> (String, String) {
    let pairs: Vec<String> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| format!("[{i} {x}]"))
        .collect();
    let flat: Vec<String> = xs
        .iter()
        .enumerate()
        .map(|(i, x)| format!("{i} {x}"))
        .collect();
    (
        format!("[{}]", pairs.join(" ")),
        format!("(sorted-map {})", flat.join(" ")),
    )
}

/// `keep` of `f` over `src`, printing each element `f` sees (the order of the calls); and the
/// program that only builds the source (its steps are subtracted).
fn programs(f: &str, src: &str) -> (String, String) {
    let keep = format!("(let [g {f} s {src}] (vec (keep (fn [p] (println p) (g p)) s)))");
    let base = format!("(let [g {f} s {src}] [])");
    (keep, base)
}

/// What `keep` answered and charged over `src`: (result, steps of the keep alone).
fn keep_outcome(f: &str, src: &str, limits: &Limits) -> (String, u64) {
    let (keep, base) = programs(f, src);
    let (text, steps) = outcome(&keep, *limits);
    let (_, base_steps) = outcome(&base, *limits);
    (text, steps.saturating_sub(base_steps))
}

#[test]
fn keep_over_a_vector_answers_and_charges_as_the_generator() {
    let mut rng = Rng(15);
    let mut cases = 0;
    for round in 0..60 {
        let n = rng.below(9);
        let xs: Vec<&str> = (0..n).map(|_| rng.pick(&VALUES)).collect();
        let (vector, sorted) = sources(&xs);
        for f in FNS {
            let fast = keep_outcome(f, &vector, &Limits::default());
            let general = keep_outcome(f, &sorted, &Limits::default());
            assert_eq!(fast, general, "round {round}: (keep {f} {vector})");
            cases += 1;
        }
    }
    assert_eq!(cases, 60 * FNS.len());
}

#[test]
fn the_step_budget_stops_both_paths_at_the_same_step() {
    let xs = ["1", "nil", "2", "nil", "nil", "3", "false", "4"];
    let (vector, sorted) = sources(&xs);
    for f in [
        "(fn [[i x]] x)",
        "second",
        "(fn [[i x]] (when (odd? i) [x]))",
    ] {
        let mut boundaries = Vec::new();
        for src in [&vector, &sorted] {
            let (keep, _) = programs(f, src);
            let (ok, total) = outcome(&keep, Limits::default());
            assert!(!ok.starts_with("failed"), "{keep}: {ok}");
            let at = |max_steps| Limits {
                max_steps,
                ..Limits::default()
            };
            let (short, _) = outcome(&keep, at(total - 1));
            assert!(
                short.starts_with(&format!("failed: {:?}", FailReason::LimitExceeded)),
                "{keep} with {} steps: {short}",
                total - 1
            );
            assert_eq!(outcome(&keep, at(total)).0, ok);
            // Where the budget stops it, counted from the source's own steps.
            let (_, base) = programs(f, src);
            boundaries.push(total - outcome(&base, Limits::default()).1);
        }
        assert_eq!(boundaries[0], boundaries[1], "{f}");
    }
}

#[test]
fn max_iterations_stops_both_paths_at_the_same_length() {
    // Nine elements, `kept` of them not nil: literal sources are not limited by
    // `max_iterations`, the keep's result is.
    for kept in [3, 4, 5] {
        let xs: Vec<&str> = (0..9).map(|i| if i < kept { "1" } else { "nil" }).collect();
        let (vector, sorted) = sources(&xs);
        let limits = Limits {
            max_iterations: 4,
            ..Limits::default()
        };
        let fast = keep_outcome("second", &vector, &limits);
        let general = keep_outcome("second", &sorted, &limits);
        assert_eq!(fast, general, "{kept} kept");
        let limited = fast.0.contains(&format!("{:?}", FailReason::LimitExceeded));
        assert_eq!(limited, kept > 4, "{kept} kept: {}", fast.0);
    }
}

/// Reducing fns: lambdas, builtins (the inline integer prim among them), `reduced`, `conj`
/// into the accumulator, and ones that fail.
const REDUCERS: [&str; 8] = [
    "+",
    "(fn [a x] (+ a x))",
    "conj",
    "(fn [a x] (if (> a 5) (reduced [:stop a]) (+ a x)))",
    "(fn [a x] (println a x) (max a x))",
    "str",
    "(fn [a x] (/ a x))",
    "(fnil + 0)",
];

/// The message with its source positions cut out (the two forms place the call differently).
fn without_positions(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find(" (at ") {
        out.push_str(&rest[..at]);
        rest = rest[at..].find(')').map_or("", |end| &rest[at + end + 1..]);
    }
    out.push_str(rest);
    out
}

/// Runs `call` (which reads `xs`, bound to `src`, and may use `f`) where `xs` is read for the
/// last time (so moved into the call, which then holds it alone) and where it is read again
/// after the call (shared): the results, printed lines and steps must be equal.
fn assert_owned_as_shared(call: &str, f: &str, src: &str, case: &str) {
    let owned = format!("(let [f {f} xs {src}] (let [n (count xs) r {call}] [r n]))");
    let shared = format!("(let [f {f} xs {src}] (let [r {call} n (count xs)] [r n]))");
    let (o, o_steps) = outcome(&owned, Limits::default());
    let (s, s_steps) = outcome(&shared, Limits::default());
    let case = format!("{case}: {owned}");
    assert_eq!(without_positions(&o), without_positions(&s), "{case}");
    // A failing call stops the shared form before its `count`.
    if !s.starts_with("failed") {
        assert_eq!(o_steps, s_steps, "{case}");
    }
}

/// Random elements from `pool`, as a vector literal.
fn random_vector(rng: &mut Rng, pool: &[&str], max: usize) -> String {
    let n = rng.below(max + 1);
    let xs: Vec<&str> = (0..n).map(|_| rng.pick(pool)).collect();
    format!("[{}]", xs.join(" "))
}

/// Fresh collections of `v`'s elements (a list and a vector), each vector element copied, so
/// that the collection and the pairs in it are held only by it.
fn fresh_sources(v: &str) -> [String; 2] {
    let copy = "(fn [x] (if (vector? x) (apply vector x) x))";
    [format!("(map {copy} {v})"), format!("(mapv {copy} {v})")]
}

#[test]
fn reduce_over_a_collection_it_alone_holds_answers_as_over_a_shared_one() {
    let mut rng = Rng(16);
    for round in 0..40 {
        let v = random_vector(&mut rng, &["0", "1", "2", "-4", "7", "nil", "2.5"], 6);
        for f in REDUCERS {
            for init in ["", "0", "1"] {
                for src in fresh_sources(&v) {
                    let call = format!("(reduce f {init} xs)");
                    assert_owned_as_shared(&call, f, &src, &format!("round {round}"));
                }
            }
        }
    }
}

#[test]
fn into_from_a_collection_it_alone_holds_answers_as_from_a_shared_one() {
    let pool = [
        "[1 :a]",
        "[2 :b]",
        "[1 :c]",
        "[\"k\" [1 2]]",
        "[nil nil]",
        "{:m 1}",
        "nil",
        "[1 2 3]",
        "5",
        "[:k {:z 0}]",
    ];
    let mut rng = Rng(17);
    for round in 0..60 {
        let v = random_vector(&mut rng, &pool, 7);
        for to in ["{}", "{:a 1}", "(sorted-map)", "[]", "#{}", "'()", "nil"] {
            for src in fresh_sources(&v) {
                let call = format!("(into {to} xs)");
                assert_owned_as_shared(&call, "nil", &src, &format!("round {round}"));
            }
        }
    }
}

#[test]
fn group_by_over_a_collection_it_alone_holds_answers_as_over_a_shared_one() {
    let pool = [
        "{:k 1}",
        "{:k 2 :j 0}",
        "{:k nil}",
        "{:j 1}",
        "[1 2]",
        "3",
        "4",
        "nil",
    ];
    let fns = [
        ":k",
        "(fn [x] (:k x))",
        "odd?",
        "count",
        "identity",
        "(fn [x] (/ 1 x))",
    ];
    let mut rng = Rng(18);
    for round in 0..60 {
        let v = random_vector(&mut rng, &pool, 8);
        for f in fns {
            for src in fresh_sources(&v) {
                assert_owned_as_shared("(group-by f xs)", f, &src, &format!("round {round}"));
            }
        }
    }
}

#[test]
fn frequencies_of_a_collection_it_alone_holds_answer_as_of_a_shared_one() {
    let pool = [
        "1", "2", "1.0", "\"a\"", ":a", "[1 2]", "'(1 2)", "nil", "{:k 1}", "##NaN",
    ];
    let mut rng = Rng(19);
    for round in 0..80 {
        let v = random_vector(&mut rng, &pool, 9);
        for src in fresh_sources(&v) {
            assert_owned_as_shared("(frequencies xs)", "nil", &src, &format!("round {round}"));
        }
    }
}

/// `reduce` with a builtin prim steps numbers inline (integers, then any pair the prim
/// answers); it must give what the same builtin called from a lambda gives, errors included
/// (overflow, division by zero, a comparison's boolean fed back in, a string).
#[test]
fn reduce_with_a_prim_answers_as_the_prim_called_from_a_lambda() {
    let ops = [
        "+", "-", "*", "quot", "rem", "mod", "<", ">", "<=", ">=", "=",
    ];
    let pool = [
        "0",
        "1",
        "-2",
        "7",
        "2.5",
        "-0.5",
        "##NaN",
        "1e300",
        "9223372036854775807",
        "-9223372036854775808",
        "nil",
        "\"s\"",
        "true",
    ];
    let mut rng = Rng(20);
    for round in 0..60 {
        let v = random_vector(&mut rng, &pool, 5);
        for op in ops {
            for init in ["", "0", "1.5", "3"] {
                let fast = format!("(reduce {op} {init} {v})");
                let lambda = format!("(reduce (fn ([] ({op})) ([a x] ({op} a x))) {init} {v})");
                let (f, _) = outcome(&fast, Limits::default());
                let (l, _) = outcome(&lambda, Limits::default());
                let case = format!("round {round}: {fast}");
                assert_eq!(without_positions(&f), without_positions(&l), "{case}");
            }
        }
    }
}
