//! Builtins that take their arguments on the value stack (`Fast::Stacked`: `assoc`, `update`,
//! `str`), called by name in the source, against the same builtin called as a value (`(let [g
//! assoc] (g ...))`, which passes an argument vector to its general entry), through the public
//! `run`: random calls of every arity (arity errors included), with arguments that print, fail
//! part way through the list or are lazy, and fns that print, fail or take rest arguments. The
//! result or error, the printed lines and the steps charged must match, and so must the ends at
//! one step short of the count and at the count. Each call sits between two locals of its
//! frame, inside a `try`, so a call that left the value stack longer or shorter than it found
//! it would show in what those locals read.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;
use support::{assert_same_at_budget, outcome_printed};

#[path = "support/rng.rs"]
mod rng;
use ptc_shared::Limits;
use rng::Rng;

/// What is updated: maps small, flat (past eight keys) and sorted, vectors, nil, non-maps.
const COLLS: &[&str] = &[
    "{}",
    "{:a 1 :b 2}",
    "(into {} (map (fn [i] [(str \"k\" i) i]) (range 12)))",
    "(into {} (map (fn [i] [i (* i i)]) (range 10)))",
    "(sorted-map :a 1 :c 3)",
    "nil",
    "[1 2 3]",
    "\"ab\"",
    "(range 3)",
    "(do (println \"coll\") {:p 0})",
];

const KEYS: &[&str] = &[
    ":a",
    ":b",
    "\"k3\"",
    "0",
    "3",
    "5",
    "nil",
    "[1 2]",
    "(do (println \"key\") :c)",
    "(/ 1 0)",
];

/// `update`'s fn: builtins (with and without fast entries), folded fn builders, lambdas that
/// print or throw, a keyword, a map, something not callable.
const FNS: &[&str] = &[
    "inc",
    "+",
    "(fnil + 0)",
    "str",
    "(fn [o] (println \"f\" o) o)",
    "(fn [o x] (+ (or o 0) x))",
    "(fn [o & xs] (println \"rest\" xs) (count xs))",
    "(fn [o] (throw (ex-info \"boom\" {:o o})))",
    ":a",
    "{:a 9}",
    "7",
    "(partial + 1)",
];

const VALS: &[&str] = &[
    "1",
    "2.5",
    "\"s\"",
    "nil",
    "[1]",
    "{:x 1}",
    "(map inc [1 2])",
    "(do (println \"val\") 4)",
    "(/ 1 0)",
    "9223372036854775807",
];

/// `str`'s parts: the plain kinds (texts, integers, nil) and every other kind.
const PARTS: &[&str] = &[
    "1",
    "-20",
    "\"ab\"",
    "\"\"",
    "nil",
    "2.5",
    "##NaN",
    ":kw",
    "[1 \"a\"]",
    "{:a 1}",
    "(range 3)",
    "\\c",
    "true",
    "(map inc [1 2])",
    "(println \"side\")",
    "(/ 1 0)",
];

/// A random call: the builtin's name and its arguments.
fn call(rng: &mut Rng) -> (&'static str, Vec<&'static str>) {
    match rng.below(3) {
        0 => {
            let n = rng.below(7);
            let args = (0..n)
                .map(|i| match i {
                    0 => rng.pick(COLLS),
                    _ if i % 2 == 1 => rng.pick(KEYS),
                    _ => rng.pick(VALS),
                })
                .collect();
            ("assoc", args)
        }
        1 => {
            let n = rng.below(7);
            let args = (0..n)
                .map(|i| match i {
                    0 => rng.pick(COLLS),
                    1 => rng.pick(KEYS),
                    2 => rng.pick(FNS),
                    _ => rng.pick(VALS),
                })
                .collect();
            ("update", args)
        }
        _ => {
            let n = rng.below(6);
            ("str", (0..n).map(|_| rng.pick(PARTS)).collect())
        }
    }
}

/// The call inside a frame: locals on either side, the call's error caught.
fn framed(call: &str) -> String {
    format!(
        "(let [before [:b 1] r (try {call} (catch Exception e (str \"caught \" (ex-message e))))
               after (count before)]
           [before (pr-str r) after (:b (apply hash-map before))])"
    )
}

fn free() -> Limits {
    Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    }
}

#[test]
fn stacked_builtins_answer_as_their_general_entries() {
    let mut answered = 0;
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (op, args) = call(&mut rng);
        let args = args.join(" ");
        // A local as long as the name, bound alike on both sides, so positions match.
        let (local, digits) = ("g".repeat(op.len()), "1".repeat(op.len()));
        let fast = format!("(let [{local} {digits}] ({op} {args}))");
        let general = format!("(let [{local} {op}] ({local} {args}))");
        for (fast, general) in [
            (framed(&fast), framed(&general)),
            // Unframed, an error is the run's: its kind, message and position must match too.
            (fast.clone(), general.clone()),
        ] {
            let (out, steps) =
                support::assert_same_outcome(&fast, &general, free(), outcome_printed);
            if !out.starts_with("failed") && !out.contains("caught") {
                answered += 1;
            }
            assert_same_at_budget(&fast, &general, steps, outcome_printed);
        }
    }
    assert!(answered > 150, "{answered} calls answered");
}

/// Arguments pushed before one that fails are dropped, and the frame around the call reads
/// as before: nested stacked calls whose inner ones fail or call fns that call more of them.
#[test]
fn a_failed_argument_leaves_the_frame_as_it_was() {
    let src = "(defn g [m k] (update m k (fn [o] (assoc {} :o (str o \"-\" (update {} :z (fnil inc 0)))))))
               (let [a 1
                     r1 (try (assoc {} :x (str \"p\" (/ 1 0))) (catch Exception e :e1))
                     b 2
                     r2 (try (update {:k 1} :k (fn [o] (assoc {} o (/ o 0)))) (catch Exception e :e2))
                     c 3
                     r3 (g {:k 1} :k)
                     r4 (try (str a b (assoc [] 5 c) c) (catch Exception e :e4))]
                 [a b c r1 r2 r3 r4])";
    let (out, _) = outcome_printed(src, free());
    assert_eq!(
        out, "[1 2 3 :e1 :e2 {:k {:o \"1-{:z 1}\"}} :e4] printed []",
        "{src}"
    );
}
