//! What the fast-path tests compare between two ways of running a program: through the public
//! `run`, the printed result (or the failure's reason and message) and the run's Step, whose
//! steps charged and printed lines must match too. One helper for every `*_paths` test.

use ptc_runner::{RunOptions, run};
use ptc_shared::{Limits, Step};

/// The printed result, or `failed: REASON message`, and the run's Step.
#[allow(dead_code)]
pub fn outcome_step(src: &str, limits: Limits) -> (String, Step) {
    let opts = RunOptions {
        limits,
        ..RunOptions::default()
    };
    match run(src, opts) {
        Ok(step) => (
            step.return_value
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            step,
        ),
        Err(step) => {
            let f = step.fail.clone().expect("a failed step has a fail");
            (format!("failed: {:?} {}", f.reason, f.message), step)
        }
    }
}

/// The printed result, or `failed: REASON message`, and the steps charged.
#[allow(dead_code)]
pub fn outcome(src: &str, limits: Limits) -> (String, u64) {
    let (text, step) = outcome_step(src, limits);
    (text, step.usage.eval_steps)
}

/// [`outcome`] with the lines the program printed added to the text: for fast paths that run
/// the program's own fns, whose prints must come out in the same order on both paths.
#[allow(dead_code)]
pub fn outcome_printed(src: &str, limits: Limits) -> (String, u64) {
    let (text, step) = outcome_step(src, limits);
    (
        format!("{text} printed {:?}", step.prints),
        step.usage.eval_steps,
    )
}

/// The printed result of a program that must succeed, over `context` when given, with the
/// step budget and the deadline out of reach (only what the test checks can end it).
#[allow(dead_code)]
pub fn result_of(src: &str, context: Option<ptc_runner::value::Value>) -> String {
    let opts = RunOptions {
        context_value: context,
        limits: Limits {
            max_steps: u64::MAX / 2,
            timeout_ms: 60_000,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    let step = run(src, opts).expect("the program succeeds");
    assert!(step.fail.is_none(), "{src}: {:?}", step.fail);
    step.return_value.map(|v| v.to_string()).unwrap_or_default()
}

/// Asserts that `fast` and `general` end alike, as `see` reads them, under a step budget of
/// `steps - 1` and of `steps` (the count the general path charged): a fast path must charge the
/// same steps at the same points, so both fail at one step short and both finish at the count.
#[allow(dead_code)]
pub fn assert_same_at_budget(
    fast: &str,
    general: &str,
    steps: u64,
    see: fn(&str, Limits) -> (String, u64),
) {
    assert_same_at_budgets(fast, general, [steps - 1, steps], see);
}

/// [`assert_same_at_budget`] under every step budget from 1 to `steps`: for a fast path that
/// charges several steps of its own, so that a budget ending between two of them is tried too.
#[allow(dead_code)]
pub fn assert_same_at_every_budget(
    fast: &str,
    general: &str,
    steps: u64,
    see: fn(&str, Limits) -> (String, u64),
) {
    assert_same_at_budgets(fast, general, 1..=steps, see);
}

/// [`assert_same_at_budget`] under each of `budgets`.
#[allow(dead_code)]
pub fn assert_same_at_budgets(
    fast: &str,
    general: &str,
    budgets: impl IntoIterator<Item = u64>,
    see: fn(&str, Limits) -> (String, u64),
) {
    for max_steps in budgets {
        let tight = Limits {
            max_steps,
            ..Limits::default()
        };
        assert_eq!(
            see(fast, tight),
            see(general, tight),
            "at {max_steps} steps: {fast}"
        );
    }
}

/// Asserts that `fast` ends as `general` does under `limits`, as `see` reads them (the result
/// and the steps charged), and gives back the general path's reading for the test's own counts.
#[allow(dead_code)]
pub fn assert_same_outcome(
    fast: &str,
    general: &str,
    limits: Limits,
    see: fn(&str, Limits) -> (String, u64),
) -> (String, u64) {
    let want = see(general, limits);
    assert_eq!(see(fast, limits), want, "{fast}\nagainst {general}");
    want
}

/// `src` with each fn written `HEAD BODY #_end)` (`HEAD` its opening, `(fn [m]`) given a body
/// that its fast path does not take, `(do nil BODY)`, which charges no step of its own: the
/// general path's program, for a side-by-side test.
#[allow(dead_code)]
pub fn general_of(src: &str, head: &str) -> String {
    src.replace(&format!("{head} "), &format!("{head} (do nil "))
        .replace(" #_end", ")")
}

/// Runs `src` as written and as [`general_of`] under `limits`, asserts the same outcome (text
/// and steps), and gives it.
#[allow(dead_code)]
pub fn same_both_ways(src: &str, head: &str, limits: Limits) -> (String, u64) {
    let fast = outcome(src, limits);
    let slow = outcome(&general_of(src, head), limits);
    assert_eq!(fast, slow, "{src}");
    fast
}

/// Asserts that `src` and its [`general_of`] form end alike under every `max_depth` from 15 to
/// 29, that one of them lets `src` pass, and that the one below it ends on the limit: a fast
/// path must pass the depth check exactly where the general call would.
#[allow(dead_code)]
pub fn same_depth_boundary(src: &str, head: &str) {
    let at = |depth| Limits {
        max_depth: depth,
        ..Limits::default()
    };
    let mut passed_at = None;
    for d in 15..30 {
        let (text, _) = same_both_ways(src, head, at(d));
        if passed_at.is_none() && !text.starts_with("failed") {
            passed_at = Some(d);
        }
    }
    let d = passed_at.expect("passes under some depth");
    let (below, _) = outcome(src, at(d - 1));
    assert!(below.contains("LimitExceeded"), "{below}");
}

/// The smallest `max_steps` under which `src` passes (searched up to 100,000).
#[allow(dead_code)]
pub fn step_boundary(src: &str) -> u64 {
    let passes = |n| {
        let limits = Limits {
            max_steps: n,
            ..Limits::default()
        };
        !outcome(src, limits).0.starts_with("failed")
    };
    let (mut lo, mut hi) = (0u64, 100_000u64);
    assert!(passes(hi), "{src}");
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if passes(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Asserts that `src` and its [`general_of`] form pass from the same step budget on, fail on
/// the budget below it, and agree at every budget around it; gives that budget.
#[allow(dead_code)]
pub fn same_step_boundary(src: &str, head: &str) -> u64 {
    let fast = step_boundary(src);
    assert_eq!(fast, step_boundary(&general_of(src, head)), "{src}");
    for n in fast.saturating_sub(3)..=fast + 3 {
        let limits = Limits {
            max_steps: n,
            ..Limits::default()
        };
        let (text, _) = same_both_ways(src, head, limits);
        let limited = text.starts_with("failed: LimitExceeded");
        assert_eq!(limited, n < fast, "{src} at {n}: {text}");
    }
    fast
}

/// Values a field or a constant may hold: numbers of both kinds and their edges, texts,
/// keywords, nil, booleans and collections (which the inline prims decline).
#[allow(dead_code)]
pub const VALUES: [&str; 16] = [
    "1",
    "-7",
    "0",
    "2.5",
    "-0.0",
    "##NaN",
    "##Inf",
    "9223372036854775807",
    "\"paid\"",
    "\"ab\"",
    ":ab",
    "nil",
    "true",
    "[1 2]",
    "{:k 1}",
    "\\a",
];
