//! Every interpreter limit at its boundary: a program that needs exactly N passes under a limit
//! of N and fails under N−1 with `limit_exceeded` and the exact `details.limit`. N is found by
//! bisection over the limit (so the check and the charge are tested together), then compared
//! with values written here literally or with the program's own size, so a limit that lets
//! twice its value through, or a counter that stops charging, fails a test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ptc_runner::{RunOptions, Tool, run};
use ptc_shared::{FailReason, Limits, Step, Value};

type Set = fn(&mut Limits, u64);

fn run_with(src: &str, limits: Limits) -> Result<Step, Step> {
    let tool = Tool::new("t", |_| Ok(Value::Int(1)));
    run(
        src,
        RunOptions {
            limits,
            tools: vec![tool],
            ..RunOptions::default()
        },
    )
}

fn limits_with(set: Set, n: u64) -> Limits {
    let mut l = Limits::default();
    set(&mut l, n);
    l
}

/// The smallest value of the limit `field` under which `src` succeeds (searched in `0..=hi`),
/// after checking that one less fails with `limit_exceeded` naming `field`.
fn boundary(src: &str, field: &str, set: Set, hi: u64) -> u64 {
    assert!(
        run_with(src, limits_with(set, hi)).is_ok(),
        "{src} must pass under {field} = {hi}"
    );
    let (mut lo, mut hi) = (0u64, hi);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if run_with(src, limits_with(set, mid)).is_ok() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    assert!(lo > 0, "{src} passes even with {field} = 0");
    let step = run_with(src, limits_with(set, lo - 1)).expect_err("one less must fail");
    let fail = step.fail.expect("a failed step has a fail");
    assert_eq!(
        fail.reason,
        FailReason::LimitExceeded,
        "{src}: {}",
        fail.message
    );
    assert_eq!(
        fail.details.get_key(&Value::string("limit")),
        Some(&Value::string(field)),
        "{src}"
    );
    lo
}

#[test]
fn steps_boundary_is_the_reported_usage_and_grows_with_the_work() {
    let set: Set = |l, n| l.max_steps = n;
    let prog = |k: u64| format!("(loop [i 0] (if (< i {k}) (recur (inc i)) i))");
    let needed: Vec<u64> = [100, 200, 300]
        .iter()
        .map(|&k| boundary(&prog(k), "max_steps", set, 1_000_000))
        .collect();
    for (&k, &n) in [100u64, 200, 300].iter().zip(&needed) {
        let used = run_with(&prog(k), Limits::default())
            .unwrap()
            .usage
            .eval_steps;
        assert_eq!(
            n, used,
            "the budget must stop exactly at the steps it reports"
        );
    }
    // Each iteration costs the same, pinned: three steps (the `if`, the `<` call and the `inc`
    // call; `recur` and literals are free). A counter that stops charging, or charges half,
    // fails here; a deliberate change of the cost model edits this number.
    assert_eq!(needed[1] - needed[0], 300);
    assert_eq!(needed[2] - needed[1], 300);
}

#[test]
fn iterations_boundary_is_the_number_of_elements() {
    let set: Set = |l, n| l.max_iterations = n;
    for k in [10u64, 1000] {
        assert_eq!(
            boundary(
                &format!("(count (range {k}))"),
                "max_iterations",
                set,
                100_000
            ),
            k
        );
        assert_eq!(
            boundary(
                &format!("(count (vec (for [x (range {k})] x)))"),
                "max_iterations",
                set,
                100_000
            ),
            k
        );
    }
}

#[test]
fn depth_boundary_grows_by_one_per_nested_call() {
    let set: Set = |l, n| l.max_depth = u32::try_from(n).unwrap_or(u32::MAX);
    let prog = |k: u64| format!("(defn f [n] (if (= n 0) 0 (inc (f (dec n))))) (f {k})");
    let d10 = boundary(&prog(10), "max_depth", set, 1000);
    let d30 = boundary(&prog(30), "max_depth", set, 1000);
    assert_eq!(d30 - d10, 20, "one depth level per call");
    assert!(d10 >= 10);
}

/// A function value made by a native (`comp` here) takes one depth level while it runs and gives
/// it back after: 5,000 calls in a row need one level more than a single call (the `reduce`'s
/// own function), not 5,000 (mutation testing: `Interp::nested`'s check and its decrement were
/// unchecked by the limit tests).
#[test]
fn native_function_values_take_one_depth_level_and_give_it_back() {
    let set: Set = |l, n| l.max_depth = u32::try_from(n).unwrap_or(u32::MAX);
    let once = boundary("(def f (comp inc inc)) (f 0)", "max_depth", set, 1000);
    let many = boundary(
        "(def f (comp inc inc)) (reduce (fn [acc _] (f acc)) 0 (range 5000))",
        "max_depth",
        set,
        1000,
    );
    assert_eq!((once, many), (1, 2));
}

#[test]
fn tool_call_boundary_is_the_number_of_calls() {
    let set: Set = |l, n| l.max_tool_calls = u32::try_from(n).unwrap_or(u32::MAX);
    for k in [1u64, 7] {
        assert_eq!(
            boundary(
                &format!("(dotimes [i {k}] (tool/t {{}}))"),
                "max_tool_calls",
                set,
                1000
            ),
            k
        );
    }
}

#[test]
fn result_boundary_is_the_printed_size() {
    let set: Set = |l, n| l.max_result_bytes = n;
    // A string of k characters prints as k + 2 bytes (its quotes); a vector of k small ints as
    // k digits, k − 1 spaces and two brackets.
    assert_eq!(
        boundary(
            "(apply str (repeat 100 \"a\"))",
            "max_result_bytes",
            set,
            10_000
        ),
        102
    );
    assert_eq!(
        boundary("(vec (range 10))", "max_result_bytes", set, 10_000),
        21
    );
}

#[test]
fn program_size_and_nesting_boundaries() {
    // These are parse errors, not limit_exceeded: checked at the exact boundary by hand.
    let src = "(+ 1 2 3 4 5 6)";
    let len = src.len() as u64;
    let with_bytes = |n| Limits {
        max_program_bytes: n,
        ..Limits::default()
    };
    assert!(run_with(src, with_bytes(len)).is_ok());
    let step = run_with(src, with_bytes(len - 1)).unwrap_err();
    assert_eq!(step.reason(), Some(FailReason::ParseError));

    let nested = format!("{}1{}", "[".repeat(8), "]".repeat(8));
    let with_nesting = |n| Limits {
        max_nesting: n,
        ..Limits::default()
    };
    assert!(run_with(&nested, with_nesting(8)).is_ok());
    let step = run_with(&nested, with_nesting(7)).unwrap_err();
    assert_eq!(step.reason(), Some(FailReason::ParseError));
}

#[test]
fn prints_are_cut_at_exactly_the_limit() {
    // Prints past the limit are truncated and marked, not failed: 10 prints of 9 bytes each
    // (an entry holds the line without its newline) fit in 90 bytes exactly, and not in 89.
    let src = "(dotimes [i 10] (println \"123456789\")) :done";
    let with = |n| Limits {
        max_prints_bytes: n,
        ..Limits::default()
    };
    let truncated = |s: &Step| s.prints.iter().any(|p| p.contains("truncated"));
    let fits = run_with(src, with(90)).unwrap();
    assert!(!truncated(&fits), "{:?}", fits.prints);
    let cut = run_with(src, with(89)).unwrap();
    assert!(truncated(&cut), "{:?}", cut.prints);
}
