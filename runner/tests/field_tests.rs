//! A field beside a constant (`(= "paid" (:status o))`, `(> (:total o) 250)`): the evaluator
//! decodes a string or integer constant at analysis (`eval::prim::Fixed`) and compares the field
//! with it inline, for prim nodes (in a body, in a `:when`) and for quick fns (`filter`'s
//! `#(...)`). Each case here is checked against `apply` of the builtin over `get` of the same
//! field, which takes none of those paths; and quick fns and `:when` tests, results, errors and
//! steps, against the same program written so that they are not quick.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::Limits;
use support::outcome;

/// Values a field may hold: integers and doubles at the edges of exactness, texts of the
/// constants' lengths and first letters, other scalars, collections.
const FIELDS: &str = r#"[1 250 -7 0 251 249.9 250.0 250.5 -0.0 ##NaN ##Inf ##-Inf
    9223372036854775807 -9223372036854775808 9007199254740993 9.007199254740992E15
    "paid" "pain" "Paid" "" "x" :paid \p nil true [1] {:a 1}]"#;

/// The constants beside the field: the decoded kinds (texts, integers) and others.
const CONSTS: [&str; 9] = [
    "250",
    "-7",
    "0",
    "9223372036854775807",
    "\"paid\"",
    "\"\"",
    "2.5",
    "nil",
    ":paid",
];

const OPS: [&str; 5] = ["=", "<", ">", "<=", ">="];

/// For every field value, the prim over a local record's field (each operand order, and the
/// map moved on its last read), and over a local beside the constant, answers as `apply`.
#[test]
fn a_field_beside_a_constant_answers_as_apply() {
    for op in OPS {
        for c in CONSTS {
            let src = format!(
                r#"(defn safe [f] (try (pr-str (f)) (catch Exception e (str "error: " (ex-message e)))))
                   (vec (for [v {FIELDS}
                              :let [m {{:a v :b 0}}
                                    s {{"a" v}}
                                    fast [(safe #({op} (:a m) {c})) (safe #({op} {c} (:a m)))
                                          (safe #({op} (:a s) {c}))
                                          (safe (fn [] (let [n {{:b 1 :a v}}] ({op} {c} (:a n)))))
                                          (safe (fn [] (let [z v] [({op} z {c}) z])))]
                                    slow [(safe #(apply {op} [(get m :a) {c}]))
                                          (safe #(apply {op} [{c} (get m :a)]))
                                          (safe #(apply {op} [(get s :a) {c}]))
                                          (safe #(apply {op} [{c} (get m :a)]))
                                          (safe (fn [] [(apply {op} [v {c}]) v]))]]
                              :when (not= fast slow)]
                          [v fast slow]))"#
            );
            let (text, _) = outcome(&src, Limits::default());
            assert_eq!(text, "[]", "({op} field {c})");
        }
    }
}

/// The same tests as quick fns and as `:when`s, over rows of several shapes and key kinds:
/// results and steps against the same fn or test behind `(do nil ...)`, which is not quick and
/// not a `:when` prim (its answers are checked against `apply` above).
#[test]
fn quick_fns_and_when_tests_answer_and_charge_as_the_general_path() {
    for op in OPS {
        for c in CONSTS {
            let rows = format!(
                r#"(vec (mapcat (fn [v] [{{:a v}} {{:b 0 :a v}} {{"a" v}} {{:a v :c 1 :d 2}}]) {FIELDS}))"#
            );
            let fast = format!(
                r#"(let [rows {rows}]
                     [(try (count (filter #({op} (:a %) {c}) rows)) (catch Exception e (ex-message e)))
                      (try (count (remove #({op} {c} (:a %)) rows)) (catch Exception e (ex-message e)))
                      (try (count (for [r rows :when ({op} (:a r) {c})] r)) (catch Exception e (ex-message e)))])"#
            );
            let slow = fast
                .replace(
                    &format!("#({op} (:a %) {c})"),
                    &format!("#(do nil ({op} (:a %) {c}))"),
                )
                .replace(
                    &format!("#({op} {c} (:a %))"),
                    &format!("#(do nil ({op} {c} (:a %)))"),
                )
                .replace(
                    &format!(":when ({op} (:a r) {c})"),
                    &format!(":when (do nil ({op} (:a r) {c}))"),
                );
            assert_ne!(fast, slow);
            let quick = outcome(&fast, Limits::default());
            let general = outcome(&slow, Limits::default());
            assert_eq!(quick, general, "({op} field {c})");
        }
    }
}

/// Literal elements that are prims are evaluated without `eval`'s dispatch, so without its
/// nesting count: vectors of prims of vectors, nested as deep as the reader allows, still run
/// on a thread with a small stack (the count of the levels between grows it in time).
#[test]
fn literals_of_prims_nested_deep_run_on_a_small_stack() {
    let counted = format!("{}[0]{}", "[(+ 1 (first ".repeat(80), "))]".repeat(80));
    let alternating = format!("{}0{}", "[(+ 1 ".repeat(120), ")]".repeat(120));
    let out = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let limits = Limits::default();
            (outcome(&counted, limits).0, outcome(&alternating, limits).0)
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(out.0, "[80]");
    assert!(out.1.starts_with("failed: "), "{}", out.1);
}

/// Vector and record literals whose elements are fields of locals or prims, and `let` and
/// `:let` values of those kinds: results, errors
/// (with their positions) and steps as the same literals with each element behind
/// `(do nil ...)` (evaluated through `eval`'s dispatch), under every step budget up to past
/// the end, so that a budget runs out at the same element on both.
#[test]
fn literal_elements_answer_and_charge_as_the_general_path() {
    let shapes = [
        "[(:a m) (:b m) (+ (:a m) 1)]",
        "[(:a m) n (* n 2)]",
        "{:x (:a m) :y (mod n 7) :z (+ (:b m) n)}",
        "[(:a m) (:b m)]",
        "[(:a m) (+ (:b m) (:a m)) (:c m) (:a m)]",
    ];
    let mut cases: Vec<(String, String)> = shapes
        .iter()
        .map(|s| {
            (
                format!(":let [m M]] {s}"),
                format!(":let [m M]] {}", wrap_elements(s)),
            )
        })
        .collect();
    // `let` and `:let` values are evaluated the same way.
    cases.push((
        ":let [m M]] (let [a (:a m) b (+ (:b m) n)] [a b])".into(),
        ":let [m M]] (let [a (do nil (:a m)) b (do nil (+ (:b m) n))] [a b])".into(),
    ));
    cases.push((
        ":let [m M x (:a m) y (* (:b m) n)]] [x y]".into(),
        ":let [m M x (do nil (:a m)) y (do nil (* (:b m) n))]] [x y]".into(),
    ));
    for (fast_body, slow_body) in &cases {
        for m in [
            "{:a 1 :b 2}",
            "{\"a\" 1.5 \"b\" 2}",
            "{:a \"x\" :b 2}",
            "nil",
            "[1 2]",
        ] {
            let fast = format!("(vec (for [n [3 4] {}))", fast_body.replace('M', m));
            let slow = format!("(vec (for [n [3 4] {}))", slow_body.replace('M', m));
            let (text, steps) = placed(&fast, Limits::default());
            assert_eq!((text, steps), placed(&slow, Limits::default()), "{fast}");
            for budget in 1..=steps + 1 {
                let limits = Limits {
                    max_steps: budget,
                    ..Limits::default()
                };
                assert_eq!(
                    placed(&fast, limits),
                    placed(&slow, limits),
                    "{fast} {budget}"
                );
            }
        }
    }
}

/// [`outcome`], with an error's position `(at 1:C)` replaced by the start of the form there
/// (the two programs' texts differ, so their columns do; the forms must not).
fn placed(src: &str, limits: Limits) -> (String, u64) {
    let (text, steps) = outcome(src, limits);
    let Some((head, at)) = text.split_once(" (at 1:") else {
        return (text, steps);
    };
    let col: usize = at.trim_end_matches(')').parse().unwrap();
    let form: String = src.chars().skip(col - 1).take(6).collect();
    (format!("{head} at `{form}`"), steps)
}

/// `shape` with every top-level element that is a form written as `(do nil FORM)`.
fn wrap_elements(shape: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for ch in shape.chars() {
        match ch {
            '(' if depth == 1 => {
                out.push_str("(do nil (");
                depth += 1;
                continue;
            }
            ')' if depth == 2 => {
                out.push_str("))");
                depth -= 1;
                continue;
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        out.push(ch);
    }
    out
}
