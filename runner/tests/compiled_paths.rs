//! Compiled fn bodies (`eval::compile`) against the tree walker they stand for, through the
//! public `run`: every program is run with compilation on and off (`compile::set_enabled`), and
//! must answer, print, fail (reason, message, position) and charge steps alike, and end alike
//! at one step short of its count and at its count.
//!
//! - every case of the conformance corpus (`tests/conformance/cases` and `ptc`), with its
//!   context, memory and history;
//! - random fns over the compiled node kinds (`if`, `let`, `do`, prims, builtin, keyword and
//!   lambda calls, leaves) nested past the compiled levels, over values of every kind, errors
//!   included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/rng.rs"]
mod rng;

use ptc_runner::eval::compile::set_enabled;
use ptc_runner::{RunOptions, run};
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::{Limits, Value};
use rng::Rng;

/// A run's whole report: the result or the failure, the prints, the steps charged.
fn report(src: &str, request: &RunRequest, compiled: bool, max_steps: u64) -> (String, u64) {
    let opts = RunOptions {
        request: request.clone(),
        limits: Limits {
            max_steps,
            timeout_ms: 60_000,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    set_enabled(compiled);
    let r = run(src, opts);
    set_enabled(false);
    let step = match r {
        Ok(s) | Err(s) => s,
    };
    let text = format!(
        "{:?} {:?} {:?}",
        step.return_value.map(|v| v.to_string()),
        step.fail.map(|f| (f.reason, f.message)),
        step.prints
    );
    (text, step.usage.eval_steps)
}

/// Asserts that compiled and walked runs of `src` report alike, under the default budget (a
/// case that loops for ever ends there) and at one step short of the count and at it.
fn assert_same(src: &str, opts: &RunRequest) {
    let far = Limits::default().max_steps;
    let walked = report(src, opts, false, far);
    assert_eq!(report(src, opts, true, far), walked, "{src}");
    let steps = walked.1;
    for max in [steps.saturating_sub(1), steps] {
        assert_eq!(
            report(src, opts, true, max),
            report(src, opts, false, max),
            "at {max} steps: {src}"
        );
    }
}

/// The request of a corpus case: its context, memory and history.
fn request(case: &Value) -> RunRequest {
    let get = |k: &str| case.get_key(&Value::keyword(k)).cloned();
    let mut request = RunRequest::default();
    if let Some(c) = get("context") {
        request.context = (&c).into();
    }
    if let Some(m) = get("memory") {
        request.memory = m;
    }
    if let Some(Value::Vector(h)) = get("history") {
        request.history = h;
    }
    request
}

#[test]
fn the_corpus_runs_alike_compiled_and_walked() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance");
    let mut n = 0;
    for dir in ["cases", "ptc"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let body = std::fs::read_to_string(&path).unwrap();
            for line in body.lines().filter(|l| l.trim_start().starts_with('{')) {
                let case = ptc_runner::edn::parse(line).unwrap();
                let Some(Value::Str(src)) = case.get_key(&Value::keyword("program")).cloned()
                else {
                    continue;
                };
                assert_same(&src, &request(&case));
                n += 1;
            }
        }
    }
    assert!(n > 1000, "only {n} cases read");
}

const LEAVES: [&str; 12] = [
    "x",
    "y",
    "c",
    "1",
    "-2",
    "2.5",
    "nil",
    "\"s\"",
    ":a",
    "[1 2]",
    "{:a 1 :b \"s\"}",
    "true",
];
const PRIMS: [&str; 8] = ["+", "-", "*", "<", ">=", "=", "mod", "quot"];
const CALLS: [&str; 8] = [
    "inc", "str", "get", "count", "first", "not", "conj", "vector",
];

/// A random expression over locals `x`, `y` and capture `c`, `depth` levels deep at most.
fn expr(r: &mut Rng, depth: usize) -> String {
    if depth == 0 {
        return r.pick(&LEAVES).to_string();
    }
    let d = depth - 1;
    match r.below(9) {
        0 => format!("(if {} {} {})", expr(r, d), expr(r, d), expr(r, d)),
        1 => format!("(let [x {} z {}] {})", expr(r, d), expr(r, d), expr(r, d)),
        2 => format!("(do {} {})", expr(r, d), expr(r, d)),
        3 => format!("({} {} {})", r.pick(&PRIMS), expr(r, d), expr(r, d)),
        4 => format!("({} {})", r.pick(&CALLS), expr(r, d)),
        5 => format!("({} {} {})", r.pick(&CALLS), expr(r, d), expr(r, d)),
        6 => format!("({} {})", r.pick(&[":a", ":b"]), expr(r, d)),
        7 => format!("(f {} {})", expr(r, d), expr(r, d)),
        _ => format!(
            "(when {} (println {}) {})",
            expr(r, d),
            expr(r, d),
            expr(r, d)
        ),
    }
}

#[test]
fn random_fns_run_alike_compiled_and_walked() {
    let mut r = Rng(0x5eed_c0de);
    for _ in 0..400 {
        let depth = 1 + r.below(10);
        let body = expr(&mut r, depth);
        let src = format!(
            "(let [c {} f (fn [a b] [a b])] \
             (map (fn [x] (let [y {}] {})) [1 \"s\" nil {{:a 2 :b 3}} 2.5 [4]]))",
            r.pick(&LEAVES),
            r.pick(&LEAVES),
            body
        );
        assert_same(&src, &RunRequest::default());
    }
}
