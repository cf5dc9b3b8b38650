//! Every interpreter limit, hit on purpose, with the exact fail reason and `details.limit`.
//! (The process limits — heap, CPU, the deadline kill, context and tool-result sizes — are hit
//! through the engine in supervisor/tests.)

use ptc_runner::{RunOptions, Tool, run};
use ptc_shared::{FailReason, Limits, Step, Value};

fn fail_of(src: &str, limits: Limits, tools: Vec<Tool>) -> (FailReason, String, Value) {
    let step: Step = match run(
        src,
        RunOptions {
            limits,
            tools,
            ..RunOptions::default()
        },
    ) {
        Ok(s) => panic!("expected {src} to fail, got {:?}", s.return_value),
        Err(s) => s,
    };
    let f = step.fail.unwrap_or_else(|| panic!("no fail"));
    let limit = f
        .details
        .get_key(&Value::string("limit"))
        .cloned()
        .unwrap_or_default();
    (f.reason, f.message, limit)
}

fn limit(src: &str, limits: Limits) -> (FailReason, Value) {
    let (reason, _, limit) = fail_of(src, limits, Vec::new());
    (reason, limit)
}

fn name(s: &str) -> Value {
    Value::string(s)
}

#[test]
fn deadline_is_timeout() {
    let l = Limits {
        timeout_ms: 30,
        max_steps: u64::MAX,
        ..Limits::default()
    };
    assert_eq!(
        limit("(loop [] (recur))", l),
        (FailReason::Timeout, name("timeout_ms"))
    );
}

#[test]
fn step_budget() {
    let l = Limits {
        max_steps: 1000,
        ..Limits::default()
    };
    assert_eq!(
        limit("(loop [i 0] (recur (inc i)))", l),
        (FailReason::LimitExceeded, name("max_steps"))
    );
}

#[test]
fn recursion_depth_long_before_the_native_stack() {
    let l = Limits {
        max_depth: 50,
        ..Limits::default()
    };
    assert_eq!(
        limit("(defn f [n] (f (inc n))) (f 0)", l),
        (FailReason::LimitExceeded, name("max_depth"))
    );
    // The default depth is reached cleanly too (no stack overflow on a 2 MiB test thread).
    assert_eq!(
        limit("(defn f [n] (inc (f (inc n)))) (f 0)", Limits::default()).1,
        name("max_depth")
    );
}

#[test]
fn iteration_cap_on_realizing_an_infinite_seq() {
    let l = Limits {
        max_iterations: 10_000,
        ..Limits::default()
    };
    assert_eq!(
        limit("(count (range))", l),
        (FailReason::LimitExceeded, name("max_iterations"))
    );
    assert_eq!(
        limit("(vec (for [x (range)] x))", l),
        (FailReason::LimitExceeded, name("max_iterations"))
    );
}

#[test]
fn issue_16_looping_builtins_are_bounded() {
    // trampoline, bounded-count, run!, subseq and memoize loop or recurse on the program's
    // behalf: each charges steps (or realizes through the iteration cap) and `try` cannot
    // catch the limit.
    let few_steps = Limits {
        max_steps: 1_000,
        ..Limits::default()
    };
    for src in [
        "(trampoline (fn f [] f))",
        "(try (bounded-count 1000000 (range)) (catch Exception e :caught))",
        "(count (subseq (apply sorted-set (range 900)) > 1))",
    ] {
        assert_eq!(
            limit(src, few_steps),
            (FailReason::LimitExceeded, name("max_steps")),
            "{src}"
        );
    }
    // Recursion through a memoized function nests a native call per level, and natives count
    // against the depth limit: the depth limit ends it before the step budget does.
    assert_eq!(
        limit(
            "(def f (memoize (fn [n] (if (zero? n) 0 (inc (f (dec n))))))) (f 350) (f 900)",
            few_steps
        ),
        (FailReason::LimitExceeded, name("max_depth"))
    );
    let few_iterations = Limits {
        max_iterations: 1_000,
        ..Limits::default()
    };
    assert_eq!(
        limit("(run! inc (range))", few_iterations),
        (FailReason::LimitExceeded, name("max_iterations"))
    );
}

#[test]
fn finite_integer_ranges_count_like_the_generator() {
    // Integer ranges are built in one loop, other numbers by the generic generator: both must
    // charge the same steps and hit the same limits.
    let steps = |src: &str| run(src, RunOptions::default()).map(|s| s.usage.eval_steps);
    assert_eq!(
        steps("(count (range 5000))").ok(),
        steps("(count (range 0.0 5000))").ok()
    );
    let few_iterations = Limits {
        max_iterations: 1_000,
        ..Limits::default()
    };
    assert_eq!(
        limit("(count (range 5000))", few_iterations),
        (FailReason::LimitExceeded, name("max_iterations"))
    );
    let few_steps = Limits {
        max_steps: 1_000,
        ..Limits::default()
    };
    assert_eq!(
        limit("(count (range 5000))", few_steps),
        (FailReason::LimitExceeded, name("max_steps"))
    );
}

#[test]
fn tool_call_count() {
    let l = Limits {
        max_tool_calls: 3,
        ..Limits::default()
    };
    let (reason, _, lim) = fail_of(
        "(dotimes [i 10] (tool/t {}))",
        l,
        vec![Tool::new("t", |_| Ok(Value::Nil))],
    );
    assert_eq!(
        (reason, lim),
        (FailReason::LimitExceeded, name("max_tool_calls"))
    );
}

#[test]
fn program_size_and_nesting_are_parse_errors() {
    let l = Limits {
        max_program_bytes: 10,
        ..Limits::default()
    };
    assert_eq!(limit("(+ 1 2 3 4 5 6)", l).0, FailReason::ParseError);
    let l = Limits {
        max_nesting: 8,
        ..Limits::default()
    };
    assert_eq!(
        limit(&format!("{}1{}", "[".repeat(9), "]".repeat(9)), l).0,
        FailReason::ParseError
    );
    // The default caps a hostile 100k-deep literal without touching the native stack.
    assert_eq!(
        limit(&"(".repeat(100_000), Limits::default()).0,
        FailReason::ParseError
    );
}

#[test]
fn result_size() {
    let l = Limits {
        max_result_bytes: 1000,
        ..Limits::default()
    };
    assert_eq!(
        limit("(vec (range 1000))", l),
        (FailReason::LimitExceeded, name("max_result_bytes"))
    );
}

#[test]
fn prints_are_truncated_and_marked_not_failed() {
    let l = Limits {
        max_prints_bytes: 100,
        max_print_entry_bytes: 30,
        ..Limits::default()
    };
    let step = run(
        "(println (apply str (repeat 100 \"x\"))) (dotimes [i 20] (println \"line\" i)) :done",
        RunOptions {
            limits: l,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|s| panic!("{:?}", s.fail));
    assert_eq!(step.return_value, Some(Value::keyword("done")));
    let first = step.prints.first().cloned().unwrap_or_default();
    assert!(
        first.len() < 60 && first.ends_with("[truncated]"),
        "{first}"
    );
    let total: usize = step.prints.iter().map(String::len).sum();
    assert!(total < 200, "{total}");
    assert!(
        step.prints
            .last()
            .is_some_and(|p| p.contains("prints truncated")),
        "{:?}",
        step.prints
    );
}

#[test]
fn limits_are_not_caught_by_try() {
    let l = Limits {
        max_steps: 1000,
        ..Limits::default()
    };
    assert_eq!(
        limit("(try (loop [] (recur)) (catch Throwable e :caught))", l).0,
        FailReason::LimitExceeded
    );
    let l = Limits {
        max_depth: 20,
        ..Limits::default()
    };
    assert_eq!(
        limit(
            "(defn f [n] (f n)) (try (f 0) (catch Exception e :caught) (finally 1))",
            l
        )
        .0,
        FailReason::LimitExceeded
    );
}
