//! Two shortcuts of the evaluator's call path, each against the general path it stands for,
//! through the public `run`:
//!
//! - a captured local as the first argument of a builtin with a two-argument fast entry
//!   (`get`, `not=`, `re-find`, `split`; `by-id` in `(fn [o] (get by-id (:customer_id o)))`)
//!   is read in place, not copied. Random calls of those
//!   builtins over values of every kind, the first argument captured, must answer, print and
//!   charge steps as the same call over a parameter (a local) does, errors included, and end at
//!   the same step budget;
//! - `(- x)` (one argument: the builtin's fast entry is the two-argument prim) negates integers
//!   and doubles without an argument vector; it must answer as `apply` of `-` does over every
//!   kind of value (overflow, -0.0, NaN, non-numbers), written in the source, called through a
//!   local, through `comp` and through `map`;
//! - a `for` binding of a plain name over a vector writes a map over the map in its slot; it
//!   must bind what a destructuring pattern (the general bind) binds, at the same step budget.
//! - a field of a local, `(:a o)`, as the operand of any call is read in place (its step, then
//!   the keyword's read) without the node dispatch; it must answer, print, fail and charge steps
//!   as a keyword held in a local, `(ka o)`, called through the general call path does.
//! - an `if` (`when`, `if-not`) whose test is a prim evaluates it without a node of its own; it
//!   must answer, print, fail (at the prim's position) and charge steps as the same builtin held
//!   in a local and called through the general call path does.
//! - a builtin call whose operands are leaves or fields of locals, as a `let`/`:let` value, a
//!   literal's element or an `if` test, runs without a node of its own; it must answer, print,
//!   fail and charge steps as the same call wrapped in `(do ...)` (a node) does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;
use ptc_shared::Limits;
use rng::Rng;

const FIRSTS: [&str; 14] = [
    "{:a 1 :b \"x\"}",
    "{1 :one 2 :two}",
    "{\"k\" [1 2]}",
    "[10 20 30]",
    "[]",
    "#{1 :a \"s\"}",
    "\"hello world\"",
    "\"a,b,,c\"",
    "nil",
    "1",
    "2.5",
    ":a",
    "'(1 2)",
    "(range 3)",
];

const SECONDS: [&str; 14] = [
    ":a",
    ":b",
    "1",
    "2",
    "0",
    "-1",
    "\"k\"",
    "\"s\"",
    "nil",
    "#\"o\"",
    "#\",\"",
    "#\"(\\w)o\"",
    "2.5",
    "[1]",
];

const OPS: [&str; 6] = ["get", "not=", "re-find", "str/split", "get", "not="];

/// Limits with the budget out of reach, or the given one.
fn limits(max_steps: u64) -> Limits {
    Limits {
        max_steps,
        timeout_ms: 60_000,
        ..Limits::default()
    }
}

/// Runs `fast` and `general` with the step budget out of reach and asserts the same result,
/// prints and steps; with `at_budget`, also the same end one step short of that count and at it.
fn assert_same_runs(fast: &str, general: &str, at_budget: bool) {
    let (want, want_step) = support::outcome_step(general, limits(u64::MAX / 2));
    let (got, got_step) = support::outcome_step(fast, limits(u64::MAX / 2));
    assert_eq!(got, want, "{fast}\n{general}");
    assert_eq!(got_step.prints, want_step.prints, "{fast}");
    let steps = want_step.usage.eval_steps;
    assert_eq!(got_step.usage.eval_steps, steps, "{fast}");
    if at_budget {
        for budget in [steps - 1, steps] {
            assert_eq!(
                support::outcome(fast, limits(budget)),
                support::outcome(general, limits(budget)),
                "{fast} under {budget} steps"
            );
        }
    }
}

#[test]
fn a_captured_first_argument_answers_as_a_local_one() {
    let mut rng = Rng(0x5eed_0026);
    for case in 0..300 {
        let (a, k, op) = (rng.pick(&FIRSTS), rng.pick(&SECONDS), rng.pick(&OPS));
        // The second argument prints first, so evaluation order is compared too. Both texts
        // have the same length, so that errors name the same positions.
        let key = format!("(do (println \"k\") {k})");
        let captured = format!(
            "(let [c {a} f (fn [_] [({op} c {key}) ({op} c {k}) (count [c])])] [(f c) (f c)])"
        );
        let local = format!(
            "(let [c {a} f (fn [d] [({op} d {key}) ({op} d {k}) (count [d])])] [(f c) (f c)])"
        );
        assert_same_runs(&captured, &local, case % 8 == 0);
    }
}

#[test]
fn a_captured_operand_anywhere_reads_as_a_local_one() {
    // Captures as operands of prims, of lambdas, of builtins of other fast entries and of
    // the general entry (three arguments), errors included.
    let body = "[(+ c 1) (count c) ((fn [x] x) c) (get c 0 :d) (str c c) (nth [c] 0) (inc c)]";
    for v in ["1", "2.5", "\"s\"", "[1 2]", "nil", "{:a 1}"] {
        let captured = format!(
            "(let [c {v} f (fn [_] {body})] (try (f c) (catch Exception e (ex-message e))))"
        );
        let local = format!(
            "(let [c {v} f (fn [c] {body})] (try (f c) (catch Exception e (ex-message e))))"
        );
        assert_eq!(
            support::outcome(&captured, limits(u64::MAX / 2)),
            support::outcome(&local, limits(u64::MAX / 2)),
            "{captured}"
        );
    }
}

const VALUES: [&str; 17] = [
    "0",
    "1",
    "-7",
    "9223372036854775807",
    "-9223372036854775808",
    "0.0",
    "-0.0",
    "2.5",
    "##NaN",
    "##Inf",
    "##-Inf",
    "nil",
    "\"s\"",
    ":k",
    "[1]",
    "true",
    "\\c",
];

#[test]
fn negation_of_one_argument_answers_as_the_general_entry() {
    let values = VALUES.join(" ");
    let src = format!(
        r#"(defn safe [f] (try (pr-str (f)) (catch Exception e (str "error: " (ex-message e)))))
           (let [neg -]
             (vec (for [x [{values}]
                        :let [general (safe #(apply - [x]))
                              mapped (safe #(first (map - [x])))]
                        [form got] [["source" (safe #(- x))] ["local" (safe #(neg x))]
                                    ["comp" (safe #((comp - identity) x))] ["map" mapped]
                                    ["sort key" (if (= general mapped) general
                                                  (safe #(ffirst (sort-by (comp - val) [[x x]]))))]]
                        :when (not= got general)]
                    [form x got general])))"#
    );
    assert_eq!(support::result_of(&src, None), "[]");
    // Every kind was met: numbers answered, the rest failed as the general entry does.
    let answers = support::result_of(
        &format!("(vec (map #(try (- %) (catch Exception e :error)) [{values}]))"),
        None,
    );
    assert_eq!(
        answers,
        "[0 -1 7 -9223372036854775807 :error -0.0 0.0 -2.5 ##NaN ##-Inf ##Inf :error :error :error :error :error :error]"
    );
}

#[test]
fn negation_of_one_argument_is_one_step_and_its_errors_are_the_general_ones() {
    // One call, one step: as a prim node of two arguments.
    let one = support::outcome("(let [x 3] [(- x) (- x)])", limits(u64::MAX / 2));
    let two = support::outcome("(let [x 3] [(- x 0) (- x 0)])", limits(u64::MAX / 2));
    assert_eq!(one.0, "[-3 -3]");
    assert_eq!(one.1, two.1);
    for (budget, want) in [(1, "failed"), (2, "[-3 -3]")] {
        let (got, _) = support::outcome("(let [x 3] [(- x) (- x)])", limits(budget));
        assert!(got.starts_with(want), "{budget}: {got}");
    }
    for v in ["-9223372036854775808", "\"s\"", "nil"] {
        let (fast, _) = support::outcome(&format!("(- {v})"), limits(u64::MAX / 2));
        let (general, _) = support::outcome(&format!("(apply - [{v}])"), limits(u64::MAX / 2));
        assert!(fast.starts_with("failed:"), "{v}: {fast}");
        assert_eq!(fast, general, "{v}");
    }
}

#[test]
fn a_for_binding_over_maps_answers_as_a_destructured_one() {
    // A plain name bound from a vector or list source is written over its slot (a map over a
    // map without the general clone and drop). A destructuring pattern (`[x]` over one-element
    // vectors) binds through the general path: both must bind the same values. Elements of
    // every kind, maps beside maps and beside other values, kept in the result or dropped.
    let mut rng = Rng(0xf0_0026);
    let kinds = [
        "{:a 1 :b 2}",
        "{:a 2}",
        "{\"a\" 3}",
        "{}",
        "1",
        "nil",
        "[1 {:a 5}]",
        "\"s\"",
        "{:a {:a 7}}",
    ];
    let bodies = [
        "[X] x",
        "[X :when (map? x)] (get x :a)",
        "[X Y :when (= x y)] [x y]",
        "[X :let [z x] x [1 2]] [x z]",
        "[X :while (not= x nil)] (count (str x))",
        "[X] (for [Y] [x y])",
    ];
    for case in 0..120 {
        let n = rng.below(7);
        let items: Vec<&str> = (0..n).map(|_| rng.pick(&kinds)).collect();
        let src = format!("[{}]", items.join(" "));
        let body = bodies[case % bodies.len()];
        let fast = body
            .replace('X', &format!("x {src}"))
            .replace('Y', &format!("y {src}"));
        let general = body
            .replace('X', &format!("[x] (mapv vector {src})"))
            .replace('Y', &format!("[y] (mapv vector {src})"));
        let fast = format!("(vec (for {fast}))");
        let general = format!("(vec (for {general}))");
        let (want, _) = support::outcome(&general, limits(u64::MAX / 2));
        let (got, steps) = support::outcome(&fast, limits(u64::MAX / 2));
        assert_eq!(got, want, "{fast}");
        let again = support::outcome(&fast, limits(steps));
        assert_eq!(again, (got.clone(), steps), "{fast}");
        let (short, _) = support::outcome(&fast, limits(steps - 1));
        assert!(short.starts_with("failed:"), "{fast}: {short}");
    }
}

/// Maps that have the keys, lack them, or are not maps at all (a keyword reads nil there).
const RECORDS: [&str; 12] = [
    "{:a 1 :b \"x\"}",
    "{:a \"s\" :b :k}",
    "{:b 2}",
    "{\"a\" 1}",
    "nil",
    "[1 2]",
    "\"str\"",
    "#{:a}",
    "{:a [1 2] :b nil}",
    "{:a 2.5 :b \"Q\"}",
    "{:a nil :c 3 :d 4 :e 5 :f 6 :g 7 :h 8 :i 9 :b 1}",
    "7",
];

/// Operands of every kind of call: a builtin's one- and two-argument fast entries, its general
/// entry, a lambda's arguments, a prim's operand, a capture read inside a nested fn, a print.
const FIELD_FORMS: [&str; 12] = [
    "(str (:a o))",
    "(inc (:a o))",
    "(get (:a o) 0)",
    "(str/upper-case (:b o))",
    "(+ 1 (count (:a o)))",
    "((fn [x y] [y x]) (:a o) (:b o))",
    "(assoc {} (:a o) (:b o))",
    "(do (println (:a o)) (:b o))",
    "((fn [] (str (:a o) (:b o))))",
    "(vector (:a o) (:b o) (:a o) (:b o))",
    "(max (:a o) 2)",
    "(conj [(:a o)] (:b o))",
];

#[test]
fn a_field_of_a_local_as_an_operand_answers_as_a_keyword_call() {
    // `(:a o)` as an operand is read in place with the call's step, not dispatched as a node;
    // `(ka o)`, a keyword in a local, is the general call path (one step too). Same text
    // lengths, so errors name the same positions; results, prints, steps and budgets agree.
    let mut rng = Rng(0xf1e1_0027);
    for case in 0..240 {
        let n = 1 + rng.below(3);
        let body: Vec<&str> = (0..n).map(|_| rng.pick(&FIELD_FORMS)).collect();
        let body = body.join(" ");
        let (x, y) = (rng.pick(&RECORDS), rng.pick(&RECORDS));
        let fast = format!("(let [ka :a kb :b f (fn [o] [{body}])] [(f {x}) (f {y})])");
        let general = fast.replace("(:a o)", "(ka o)").replace("(:b o)", "(kb o)");
        assert_same_runs(&fast, &general, case % 6 == 0);
    }
}

/// Prim tests of every shape (a field beside a constant, two fields, a local, a constant) and
/// every kind of operand (numbers, overflow, text, nil, collections, a zero divisor).
const PRIM_TESTS: [&str; 12] = [
    "(> (:a o) 1)",
    "(= \"s\" (:a o))",
    "(< (:a o) (:b o))",
    "(>= o 2)",
    "(= o (:b o))",
    "(+ (:a o) 1)",
    "(- 9223372036854775807 (:a o))",
    "(mod (:a o) (:b o))",
    "(quot 7 (:b o))",
    "(<= 1 (:a o))",
    "(* (:a o) 2.5)",
    "(= (:a o) (:b o))",
];

const PRIM_ARGS: [&str; 10] = [
    "{:a 1 :b 2}",
    "{:a 5 :b 0}",
    "{:a -3 :b 3}",
    "{:a 2.5 :b 2}",
    "{:a \"s\" :b \"s\"}",
    "{:a nil :b 1}",
    "{:a [1] :b [1]}",
    "{:a -9223372036854775808 :b -1}",
    "3",
    "nil",
];

#[test]
fn an_if_over_a_prim_test_answers_as_the_prim_called_through_a_local() {
    // `(if (op x y) ...)` evaluates its prim test without a node of its own; the same builtin
    // held in a local (`q`, one letter as every prim's name is not) takes the general call
    // path. Same positions for errors; results, prints, steps and budgets agree.
    let mut rng = Rng(0x1f_0027);
    for case in 0..240 {
        let test = rng.pick(&PRIM_TESTS);
        let op = test
            .trim_start_matches('(')
            .split(' ')
            .next()
            .unwrap_or_default();
        let (x, y) = (rng.pick(&PRIM_ARGS), rng.pick(&PRIM_ARGS));
        let form = match case % 3 {
            0 => format!("(if {test} (do (println \"t\") 1) (do (println \"e\") 2))"),
            1 => format!("(when {test} (println \"w\") o)"),
            _ => format!("(if-not {test} :no (if {test} :yes :never))"),
        };
        // The local's name is as long as the prim's, so positions match.
        let q = "q".repeat(op.len());
        let fast = format!("(let [{q} {op} f (fn [o] {form})] [(f {x}) (f {y})])");
        let general = fast.replace(&format!("({op} "), &format!("({q} "));
        assert_ne!(fast, general);
        assert_same_runs(&fast, &general, case % 6 == 0);
    }
}

/// Builtin calls whose operands are leaves or fields of locals: fast entries, the general
/// entry, a lambda called by the builtin (printing), errors, and calls that are not eligible.
const LEAF_CALLS: [&str; 12] = [
    "(get m :a)",
    "(count s)",
    "(inc (:a m))",
    "(str/upper-case s)",
    "(nth v 5)",
    "(subs s 1)",
    "(conj v (:a m))",
    "(mapv f v)",
    "(assoc m :b s)",
    "(str s (:a m) v)",
    "(get-in m [:a])",
    "(reduce f 0 v)",
];

const LEAF_ENVS: [&str; 5] = [
    "m {:a 1} s \"ab\" v [1 2]",
    "m {:a \"x\"} s \"\" v []",
    "m nil s nil v nil",
    "m {:b 2} s \"abc\" v [1 2 3 4 5 6]",
    "m [1] s 5 v \"str\"",
];

#[test]
fn a_builtin_call_of_leaves_as_a_literal_item_answers_as_a_node() {
    // In a `let` value, a literal's element, an `if` test or a `:let` value, a builtin call
    // whose operands are leaves runs without a node of its own; wrapped in `(do ...)` it runs
    // as a node. Four spaces before and one after stand for the `(do ` and `)`, so positions
    // match; results, errors, prints, steps and budgets agree.
    let mut rng = Rng(0x1eaf_0027);
    for case in 0..200 {
        let (call, bound) = (rng.pick(&LEAF_CALLS), rng.pick(&LEAF_ENVS));
        let form = match case % 5 {
            0 => "(let [r CALL] r)".to_string(),
            1 => "{:r CALL :k 1}".to_string(),
            2 => "[CALL CALL]".to_string(),
            3 => "(if CALL :t :f)".to_string(),
            _ => "(vec (for [i [1 2] :let [r CALL]] [i r]))".to_string(),
        };
        let wrapped = format!("(do {call})");
        let padded = format!("    {call} ");
        let program = |c: &str| {
            format!(
                "(let [{bound} f (fn [a x] (println \"f\" a) (if (number? a) (+ a 1) a))] {})",
                form.replace("CALL", c)
            )
        };
        let (fast, general) = (program(&padded), program(&wrapped));
        assert_same_runs(&fast, &general, case % 4 == 0);
    }
}
