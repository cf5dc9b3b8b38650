//! `apply` moves the elements of a last argument that is a vector or list held only by the call
//! (`(apply max (map :total rows))`) instead of copying them (`builtins::hof::apply`). Checked
//! through the public `run` against the general path, the same collection also held by a second
//! `let` binding (so it is shared and copied): random sources (fresh lists, fresh vectors, lazy
//! seqs), fns (numbers, text, collections, a variadic lambda that prints, fns that fail) and
//! leading arguments must give the same printed result or error, prints and steps, and budgets
//! at steps-1 and steps end alike.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;

use ptc_shared::Limits;
use rng::Rng;
use support::{assert_same_at_budget, assert_same_outcome, outcome_printed};

const ITEMS: [&str; 9] = ["0", "1", "-3", "2.5", "-0.0", "7", "\"a\"", "nil", "[1 2]"];

const SOURCES: [&str; 4] = [
    "(map identity [{}])",
    "(mapv identity [{}])",
    "(filter some? [{}])",
    "(take 40 (concat [{}]))",
];

const FNS: [&str; 9] = [
    "max",
    "min",
    "+",
    "str",
    "vector",
    "list",
    "(fn [& xs] (println (count xs)) (vec (reverse xs)))",
    "hash-set",
    "(fn [a & xs] [a (count xs)])",
];

#[test]
fn apply_answers_as_with_a_shared_collection() {
    let mut rng = Rng(0x5eed_a991);
    let free = Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    };
    for round in 0..300 {
        let numbers = round % 2 == 0;
        let n = rng.below(25);
        let items: Vec<&str> = (0..n)
            .map(|_| {
                if numbers {
                    ITEMS[rng.below(6)]
                } else {
                    rng.pick(&ITEMS)
                }
            })
            .collect();
        let src = rng.pick(&SOURCES).replace("{}", &items.join(" "));
        let f = rng.pick(&FNS);
        let lead = ["", "1 ", "1 2.5 "][rng.below(3)];
        let program = |other: &str| {
            format!(
                "(let [xs {src} other {other}] \
                 (try (apply {f} {lead}xs) (catch Exception e (ex-message e))))"
            )
        };
        // `other` 0: `xs` is held only by the call at its last use; `other` xs: shared.
        let (moved, shared) = (program("0"), program("xs"));
        let (_, steps) = assert_same_outcome(&moved, &shared, free, outcome_printed);
        if round % 8 == 0 {
            assert_same_at_budget(&moved, &shared, steps, outcome_printed);
        }
    }
}
