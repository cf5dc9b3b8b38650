//! Programs written to crash the interpreter (deep prefixes, huge macro expansions, nested
//! natives, deep data), each with the exact outcome it must get instead. Shared by the in-process
//! tests (runner/tests/hostile.rs) and the sandboxed ones (supervisor/tests/engine_hostile.rs).

use ptc_shared::FailReason;

/// What a hostile program must end in.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Fails with this reason and, for limits, this `details.limit`.
    Fail(FailReason, Option<String>),
    /// Succeeds with this result, printed as `pr-str` prints it.
    Ok(String),
}

/// `(loop ...)` building `depth` levels of `wrap` around `nil`, bound to `x` for `body`.
fn deep(wrap: &str, depth: u32, body: &str) -> String {
    format!("(let [x (loop [x nil i 0] (if (< i {depth}) (recur {wrap} (inc i)) x))] {body})")
}

/// Every hostile program with its outcome and a name for messages.
pub fn cases() -> Vec<(&'static str, String, Outcome)> {
    use FailReason::*;
    use Outcome::*;
    let steps = |n: usize, step: &str| vec![step; n].join(" ");
    vec![
        (
            "quote prefixes",
            format!("{}x", "'".repeat(100_000)),
            Fail(ParseError, None),
        ),
        (
            "var prefixes",
            format!("{}x", "#'".repeat(100_000)),
            Fail(ParseError, None),
        ),
        (
            "discards",
            format!("{}1 2", "#_".repeat(100_000)),
            Fail(ParseError, None),
        ),
        (
            // Found by fuzzing: "did you mean" compared it with every name (minutes, in-process).
            "a 500 KB unresolved symbol",
            format!("(inc {})", "u".repeat(500_000)),
            Fail(AnalysisError, None),
        ),
        (
            "a 500 KB unresolved clojure.string name",
            format!("(clojure.string/{} \"a\")", "u".repeat(500_000)),
            Fail(AnalysisError, None),
        ),
        (
            "-> 50,000 deep",
            format!("(-> 1 {})", steps(50_000, "inc")),
            Fail(AnalysisError, None),
        ),
        (
            "->> 1,500 deep",
            format!("(->> 1 {})", steps(1_500, "inc")),
            Fail(AnalysisError, None),
        ),
        (
            "cond 50,000 deep",
            format!("(cond {} :else 2)", steps(50_000, "false 1")),
            Fail(AnalysisError, None),
        ),
        (
            "-> 1,000 deep runs",
            format!("(-> 1 {})", steps(1_000, "inc")),
            Ok("1001".into()),
        ),
        (
            "100,000 nested juxts",
            "(loop [f identity i 0] (if (< i 100000) (recur (juxt f) (inc i)) (f 1)))".into(),
            Fail(LimitExceeded, Some("max_depth".into())),
        ),
        (
            "100,000 nested closures, dropped",
            "(loop [f identity i 0] (if (< i 100000) (recur (fn [y] (f y)) (inc i)) 7))".into(),
            Ok("7".into()),
        ),
        (
            "printing a 200,000-deep list",
            deep("(list x)", 200_000, "(count (pr-str x))"),
            Ok("400003".into()),
        ),
        (
            "str of a 200,000-deep map",
            deep("{:a x}", 200_000, "(count (str x))"),
            Ok("1000003".into()),
        ),
        (
            "hashing a 200,000-deep vector",
            deep("[x]", 200_000, "(count (hash-set x [x]))"),
            Ok("2".into()),
        ),
        (
            "= on 200,000-deep vectors",
            deep("[x]", 200_000, "(= x (first [x]))"),
            Ok("true".into()),
        ),
        (
            "a 200,000-deep result",
            deep("[x]", 200_000, "x"),
            Fail(EvalError, None),
        ),
        (
            // Each step was a native stack frame: SIGSEGV in the runner, an abort in-process.
            "100,000 composed transducers",
            "(into [] (apply comp (repeat 100000 (map inc))) [1 2])".into(),
            Ok("[100001 100002]".into()),
        ),
        (
            "100,000 composed transducers, lazily",
            "(sequence (apply comp (repeat 100000 (filter odd?))) [1 2 3])".into(),
            Ok("(1 3)".into()),
        ),
        (
            // Two bytes a value on the wire, 80 in the supervisor while `Value` was 80 bytes:
            // refused on decode, the run ended `runner_crashed`.
            "a result of 200,000 small ints",
            "(vec (repeat 200000 2))".into(),
            Ok(format!("[{}]", vec!["2"; 200_000].join(" "))),
        ),
        (
            "a def of 200,000 small ints",
            "(do (def xs (vec (repeat 200000 2))) (count xs))".into(),
            Ok("200000".into()),
        ),
        (
            // Each link of a lazy chain was a native frame to read and to drop: an abort
            // in-process, the runner's heap limit sandboxed.
            "100,000 nested lazy maps, dropped",
            "(do (nth (iterate #(map inc %) (range)) 100000) 1)".into(),
            Ok("1".into()),
        ),
        (
            "100,000 nested lazy maps, read",
            "(first (nth (iterate #(map inc %) (range)) 100000))".into(),
            Fail(LimitExceeded, Some("max_depth".into())),
        ),
        (
            // `rest` of `rest` of ...: one level over the range, as in Clojure.
            "rest 100,000 times",
            "(first (reduce (fn [s _] (rest s)) (range 200000) (range 100000)))".into(),
            Ok("100000".into()),
        ),
        (
            "an inconsistent comparator",
            "(count (sort (fn [a b] (even? (+ a (* 7 b)))) (range 3000)))".into(),
            Ok("3000".into()),
        ),
        (
            "a comparator answering true always",
            "(sort (fn [a b] true) [3 1 2])".into(),
            Ok("(2 1 3)".into()),
        ),
    ]
}
