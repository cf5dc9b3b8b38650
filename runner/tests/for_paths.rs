//! Three shortcuts of the evaluator, each against its general path through the public `run`:
//!
//! - `for`/`doseq` walk a vector or list source in place (and bind a plain name straight into
//!   its slot); any other source goes through a seq. The same clauses over the same elements
//!   from a lazy source must give the same result, and the walk must stop at `max_iterations`
//!   exactly as the seq walk does;
//! - `(op (:j m) (:k n))` with both maps locals reads both fields in place: it must answer as
//!   `apply` of the builtin to the two `get`s, and charge what the two calls would, ending at
//!   every step budget as they do;
//! - the `:when`s right after a plain binding over a vector are tested in the binding's loop
//!   (an element they drop costs no call of the later clauses): they must answer, print, fail
//!   and charge as the same tests after an empty `:let`, which the general clause loop takes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;

use ptc_shared::{FailReason, Limits};
use support::outcome;

#[test]
fn for_over_a_vector_answers_as_over_a_lazy_seq() {
    let clauses = [
        "[x SRC] x",
        "[x SRC :when (odd? x)] (* x x)",
        "[x SRC :let [y (* 2 x)] :when (> y 10)] [x y]",
        "[x SRC :while (< x 7)] x",
        "[x SRC y SRC :when (< x y) :while (< y 5)] [x y]",
        "[[a b] (partition 2 SRC)] (+ a b)",
        "[{:keys [k]} (map (fn [i] {:k i}) SRC)] k",
        "[x SRC :when (= x 3) y [:a :b]] [x y]",
        // Several `:let`/`:when`/`:while` in a row, between two bindings.
        "[x SRC :let [y (inc x)] :when (odd? y) :let [z (* y y)] :while (< z 100) w [1 2 3] :when (< w x) :let [v (- x w)]] [x y z w v]",
    ];
    for c in clauses {
        let vector = format!("(vec (for {}))", c.replace("SRC", "(vec (range 12))"));
        let lazy = format!(
            "(vec (for {}))",
            c.replace("SRC", "(take 12 (iterate inc 0))")
        );
        let (v, _) = outcome(&vector, Limits::default());
        let (l, _) = outcome(&lazy, Limits::default());
        assert!(!v.starts_with("failed"), "{vector}: {v}");
        assert_eq!(v, l, "{c}");
    }
}

#[test]
fn a_when_prim_answers_and_charges_as_eval_does() {
    // The `:when` prim is evaluated without `eval`'s dispatch; behind a `(do nil ...)` it is not.
    for test in [
        "(> x 2)",
        "(= \"b\" x)",
        "(< (:k x) 3)",
        "(= (:k x) (:j x))",
        "(mod x 0)",
        "(> x nil)",
    ] {
        for src in ["[1 2 3 4]", "[{:k 1 :j 1} {:k 5 :j 2}]", "[\"a\" \"b\"]"] {
            // Padded so that the test stands at the same column in both (error positions).
            let fast = format!("(vec (for [x {src} :when         {test}] x))");
            let slow = format!("(vec (for [x {src} :when (do nil {test})] x))");
            assert_eq!(
                outcome(&fast, Limits::default()),
                outcome(&slow, Limits::default()),
                "{test} over {src}"
            );
        }
    }
}

#[test]
fn a_vector_walk_stops_at_max_iterations() {
    let elems: Vec<String> = (0..50).map(|i| i.to_string()).collect();
    let v = format!("[{}]", elems.join(" "));
    for src in [
        format!("(doseq [x {v}] nil)"),
        format!("(for [x {v} :when false] x)"),
        format!("(doseq [x (list* {v})] nil)"),
    ] {
        let at = |n| Limits {
            max_iterations: n,
            ..Limits::default()
        };
        let (ok, _) = outcome(&src, at(50));
        assert!(!ok.starts_with("failed"), "{src}: {ok}");
        let (fail, _) = outcome(&src, at(49));
        assert!(
            fail.starts_with(&format!("failed: {:?}", FailReason::LimitExceeded))
                && fail.contains("walked more than 49"),
            "{src}: {fail}"
        );
    }
}

#[test]
fn two_fields_of_locals_answer_and_charge_as_the_calls() {
    let values = [
        "1",
        "-7",
        "2.5",
        "##NaN",
        "9223372036854775807",
        "\"ab\"",
        ":k",
        "nil",
        "[1]",
    ];
    let ops = ["*", "+", "-", "<", ">=", "=", "mod"];
    for op in ops {
        for a in values {
            for b in values {
                let safe = |body: &str| {
                    format!(
                        "(let [m {{:j {a}}} n {{:k {b}}} s \"js\"] \
                         (try {body} (catch Exception e (str \"error: \" (ex-message e)))))"
                    )
                };
                // Both maps locals, one of them moved (its last use), a string (get of a
                // non-map), keys the maps lack, both maps captured, and the general call with
                // each field behind a `do`.
                let fast = safe(&format!(
                    "[({op} (:j m) (:k n)) ({op} (:j m) (:j m)) ({op} (:j s) (:k n)) \
                     ({op} (:k m) (:j n)) ((fn [] ({op} (:j m) (:k n)))) ({op} (:j s) (:k n))]"
                ));
                let slow = safe(&format!(
                    "[({op} (do nil (:j m)) (:k n)) ({op} (do nil (:j m)) (:j m)) ({op} (do nil (:j s)) (:k n)) \
                     ({op} (do nil (:k m)) (:j n)) ((fn [] ({op} (do nil (:j m)) (:k n)))) ({op} (do nil (:j s)) (:k n))]"
                ));
                let general = outcome(&slow, Limits::default());
                assert_eq!(outcome(&fast, Limits::default()), general, "{op} {a} {b}");
                // Both fields' steps are charged before either is read: at every budget from
                // one step short of the whole program, both ways end alike.
                support::assert_same_at_budget(&fast, &slow, general.1, outcome);
                let by_apply = safe(&format!("(apply {op} [(get m :j) (get n :k)])"));
                let (one, _) = outcome(&safe(&format!("({op} (:j m) (:k n))")), Limits::default());
                assert_eq!(one, outcome(&by_apply, Limits::default()).0, "{op} {a} {b}");
            }
        }
    }
}

/// Two fields of locals compare in place after both their steps are charged: a budget that
/// ends anywhere in the program, between the two fields' steps too, ends it as the two calls do
/// (the same reason and message, the same steps).
#[test]
fn two_fields_of_locals_end_at_every_budget_as_the_calls() {
    let fast = "(let [m {:j 3 :k 2.5} f (fn [] (* (:j m) (:k m)))] \
                [(+ (:j m) (:k m)) (f) (< (:k m) (:j m)) (= (:z m) (:j m))])";
    let slow = "(let [m {:j 3 :k 2.5} f (fn [] (* (do nil (:j m)) (:k m)))] \
                [(+ (do nil (:j m)) (:k m)) (f) (< (do nil (:k m)) (:j m)) (= (do nil (:z m)) (:j m))])";
    let (answer, steps) = support::assert_same_outcome(fast, slow, Limits::default(), outcome);
    assert_eq!(answer, "[5.5 7.5 true false]");
    support::assert_same_at_every_budget(fast, slow, steps, outcome);
}

/// `:when` tests: prims of every shape, a test that prints, one that fails for non-numbers,
/// one that is not a prim.
const WHENS: [&str; 8] = [
    "(odd? x)",
    "(> x 2)",
    "(= \"s\" (:a x))",
    "(do (println \"w\" x) (not= x 3))",
    "(< (:a x) 5)",
    "(not (nil? x))",
    "(>= x y)",
    "(map? x)",
];

const ITEMS: [&str; 9] = [
    "1",
    "2",
    "3",
    "4",
    "7",
    "nil",
    "\"s\"",
    "{:a 1}",
    "{:a \"s\"}",
];

#[test]
fn whens_after_a_binding_answer_as_whens_after_a_let() {
    // The `:when`s right after a plain binding over a vector are tested in the binding's loop;
    // after an empty `:let` (the same text length: seven spaces stand for it) they are tested
    // as every other clause. Results, errors, prints, steps and the exact budget agree.
    let mut rng = rng::Rng(0x4_0027);
    for case in 0..200 {
        let n = rng.below(6);
        let items: Vec<&str> = (0..n).map(|_| rng.pick(&ITEMS)).collect();
        let src = format!("[{}]", items.join(" "));
        let whens: Vec<String> = (0..1 + rng.below(3))
            .map(|_| format!(":when {}", rng.pick(&WHENS)))
            .collect();
        let whens = whens.join(" ");
        let clauses = match case % 3 {
            0 => format!("x {src} LET {whens}"),
            1 => format!("y [2 3] x {src} LET {whens}"),
            _ => format!("x {src} LET {whens} y [1 x] LET :when (= y x)"),
        };
        // `y` is bound before the tests only in the second shape.
        let clauses = if case % 3 == 1 {
            clauses
        } else {
            clauses.replace("(>= x y)", "(>= x 2)")
        };
        let general = format!("(vec (for [{}] [x]))", clauses.replace("LET", ":let []"));
        let fast = general.replace(":let []", "       ");
        let (want, want_step) = support::outcome_step(&general, Limits::default());
        let (got, got_step) = support::outcome_step(&fast, Limits::default());
        assert_eq!(got, want, "{fast}");
        assert_eq!(got_step.prints, want_step.prints, "{fast}");
        let steps = want_step.usage.eval_steps;
        assert_eq!(got_step.usage.eval_steps, steps, "{fast}");
        if case % 5 == 0 {
            for budget in [steps - 1, steps] {
                let limits = Limits {
                    max_steps: budget,
                    ..Limits::default()
                };
                assert_eq!(outcome(&fast, limits), outcome(&general, limits), "{fast}");
            }
        }
    }
}
