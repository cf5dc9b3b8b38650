//! A builder of fns called on constants where a builtin only calls the fn (`(update m k (fnil +
//! 0))`, `(sort-by (juxt (comp - val) key) xs)`) is built once, at analysis
//! (`analyze::fold`). Each case here runs a random builder expression in a consumer's fn
//! position twice through the public `run`: once with its constants written in place (folded)
//! and once with each constant read from a local bound to it (a local is not a constant, so the
//! builder runs on every evaluation: the general path). The printed result or error, the lines
//! printed and the steps charged must be equal, and the step budget must fire at the same
//! boundary on both. Fns compare by identity, so a folded fn must never reach the program: the
//! builders whose result the program can see (`constantly`'s value, `partial`'s fixed
//! arguments) give a new fn on every evaluation, as in Clojure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/rng.rs"]
mod rng;

#[path = "support/outcome.rs"]
mod support;

use support::outcome_printed as outcome;
use support::{assert_same_at_budget, assert_same_outcome};

use ptc_shared::Limits;
use rng::Rng;

/// One-argument fns the builders combine (some fail on some values).
const ONE: [&str; 12] = [
    "inc",
    "dec",
    "-",
    "str",
    "count",
    "vector",
    "identity",
    "nil?",
    "first",
    "keyword?",
    "even?",
    "#(do (println \"saw\" %) %)",
];
/// Fns of two or more arguments, for `fnil`, `partial` and `reduce`.
const TWO: [&str; 7] = ["+", "str", "vector", "max", "=", "conj", "(fn [a b] [b a])"];
/// The constants: each becomes a literal (folded) or a local bound to it (general).
const CONSTS: [&str; 8] = ["0", "1", "\"x\"", "nil", "[1 2]", ":k", "2.5", "{:a 1}"];
/// What the fns are applied to.
const VALUES: [&str; 9] = ["0", "3", "-2", "nil", "\"ab\"", "[4 5]", "2.5", "[]", ":q"];

/// A random builder expression of one argument; constants are `{N}` holes into `consts`.
fn one(rng: &mut Rng, depth: u32, consts: &mut Vec<&'static str>) -> String {
    if depth == 0 {
        return rng.pick(&ONE).to_string();
    }
    let f = |rng: &mut Rng, consts: &mut Vec<&'static str>| one(rng, depth - 1, consts);
    match rng.below(9) {
        0 => format!("(comp {} {})", f(rng, consts), f(rng, consts)),
        1 => format!("(juxt {} {})", f(rng, consts), f(rng, consts)),
        2 => format!("(fnil {} {})", f(rng, consts), hole(rng, consts)),
        3 => format!(
            "(partial {} {})",
            two(rng, depth - 1, consts),
            hole(rng, consts)
        ),
        4 => format!("(complement {})", f(rng, consts)),
        5 => format!("(every-pred {} {})", f(rng, consts), f(rng, consts)),
        6 => format!("(some-fn {} {})", f(rng, consts), f(rng, consts)),
        7 => format!("(constantly {})", hole(rng, consts)),
        _ => rng.pick(&ONE).to_string(),
    }
}

/// A random builder expression of two arguments.
fn two(rng: &mut Rng, depth: u32, consts: &mut Vec<&'static str>) -> String {
    match (depth, rng.below(4)) {
        (0, _) | (_, 0) => rng.pick(&TWO).to_string(),
        (_, 1) => format!(
            "(fnil {} {})",
            two(rng, depth - 1, consts),
            hole(rng, consts)
        ),
        (_, 2) => format!(
            "(fnil {} {} {})",
            two(rng, depth - 1, consts),
            hole(rng, consts),
            hole(rng, consts)
        ),
        _ => format!(
            "(comp {} {})",
            one(rng, depth - 1, consts),
            two(rng, 0, consts)
        ),
    }
}

fn hole(rng: &mut Rng, consts: &mut Vec<&'static str>) -> String {
    consts.push(rng.pick(&CONSTS));
    format!("{{{}}}", consts.len() - 1)
}

/// `body` with its holes filled: by the literals, or by the locals `c0 c1 ...` bound to them,
/// each padded to the width of the other, so that errors name the same columns on both paths.
fn fill(body: &str, consts: &[&str], folded: bool) -> String {
    let bindings: Vec<String> = (0..consts.len())
        .map(|k| format!("c{k} {}", consts[k]))
        .collect();
    let mut out = body.to_string();
    for (k, c) in consts.iter().enumerate().rev() {
        let local = format!("c{k}");
        let width = local.len().max(c.len());
        let text = if folded { c } else { local.as_str() };
        out = out.replace(&format!("{{{k}}}"), &format!("{text:width$}"));
    }
    format!("(let [{}] {out})", bindings.join(" "))
}

/// A consumer calling fn expression `f` (one argument) or `g` (two), run from a lambda twice so
/// that a fn built once serves two evaluations.
fn consumer(rng: &mut Rng, f: &str, g: &str, xs: &str) -> String {
    let call = match rng.below(11) {
        0 => format!("(mapv {f} xs)"),
        1 => format!("(filterv {f} xs)"),
        2 => format!("(vec (keep {f} xs))"),
        3 => format!("(vec (remove {f} xs))"),
        4 => format!("(group-by {f} xs)"),
        5 => format!("(sort-by {f} xs)"),
        6 => format!("(update {{:a (first xs)}} :a {f})"),
        7 => format!("(update {{:a (first xs)}} :a {g} (second xs))"),
        8 => format!("(reduce {g} xs)"),
        9 => format!("[(some {f} xs) (every? {f} xs)]"),
        _ => format!("(sort-by {f} compare xs)"),
    };
    format!("(let [run (fn [xs] {call})] [(run {xs}) (run (reverse {xs}))])")
}

#[test]
fn folded_builders_answer_and_charge_as_the_general_path() {
    let mut rng = Rng(26);
    let mut folded_some = 0;
    for case in 0..400 {
        let mut consts = Vec::new();
        let depth = 1 + u32::try_from(rng.below(3)).unwrap();
        let f = one(&mut rng, depth, &mut consts);
        let g = two(&mut rng, depth, &mut consts);
        let n = rng.below(6);
        let xs: Vec<&str> = (0..n).map(|_| rng.pick(&VALUES)).collect();
        let body = consumer(&mut rng, &f, &g, &format!("[{}]", xs.join(" ")));
        let (folded, general) = (fill(&body, &consts, true), fill(&body, &consts, false));
        let free = Limits {
            max_steps: u64::MAX / 2,
            ..Limits::default()
        };
        let (want, steps) = assert_same_outcome(&folded, &general, free, outcome);
        if !want.starts_with("failed") {
            folded_some += 1;
        }
        // The budget fires at the same step on both paths.
        if case % 8 == 0 {
            assert_same_at_budget(&folded, &general, steps, outcome);
        }
    }
    assert!(folded_some > 100, "too few cases ran to a result");
}

#[test]
fn the_built_fn_is_used_and_nested_builders_run_once_per_evaluation() {
    // `(fnil + 0)` over a reduce's accumulator, as pipeline p3 writes it; the sort key of p3.
    let src = r#"(->> [[:a 1] [:b 2] [:a 3] [:c 4] [:b 5]]
                      (reduce (fn [acc [k v]] (update acc k (fnil + 0) v)) {})
                      (sort-by (juxt (comp - val) key))
                      (map vec))"#;
    assert_eq!(support::result_of(src, None), "([:b 7] [:a 4] [:c 4])");
}

#[test]
fn a_fn_the_program_can_see_is_new_on_every_evaluation() {
    // Clojure: each evaluation of `(fnil + 0)` is a new fn, unequal to the last one.
    for src in [
        "(let [g (fn [] (fnil + 0))] (= (g) (g)))",
        "(let [g (fn [] (ffirst (mapv (partial vector (fnil + 0)) [1])))] (= (g) (g)))",
        "(let [g (fn [] (first (mapv (constantly (fnil + 0)) [1])))] (= (g) (g)))",
        "(let [g (fn [] (second (first (mapv (juxt identity (constantly (comp inc dec))) [1]))))]
           (= (g) (g)))",
        "(let [g (fn [] (:a (update {:a 1} :a (constantly (partial + 1)))))] (= (g) (g)))",
    ] {
        assert_eq!(support::result_of(src, None), "false", "{src}");
    }
    // Within one evaluation the one fn is itself, as in Clojure.
    let src = "(let [g (fn [] (mapv (constantly (fnil + 0)) [1 2]))] (apply = (g)))";
    assert_eq!(support::result_of(src, None), "true");
}

#[test]
fn a_builder_call_that_fails_fails_when_it_runs() {
    // Arity errors are not folded away: the call stays, and fails only if it is reached.
    let limits = Limits::default();
    assert_eq!(
        outcome("(if false (mapv (fnil) [1]) :skipped)", limits).0,
        ":skipped printed []"
    );
    let (text, _) = outcome("(mapv (fnil) [1])", limits);
    assert!(text.starts_with("failed"), "{text}");
    let (text, _) = outcome("(mapv (complement inc dec) [1])", limits);
    assert!(text.contains("wrong number of args"), "{text}");
}
