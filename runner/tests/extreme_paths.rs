//! `max` and `min` find the winner among arguments that are all doubles without NaN, or all
//! integers, by comparing them in place (`math::plain_extreme`). Checked through the public
//! `run` against the general path: the same arguments after one more of the other kind (an
//! integer before doubles, a double before integers, far below or above them so that it never
//! wins), which `plain_extreme` declines. Random arguments with ties, `0.0` beside `-0.0` (the
//! later of equal arguments wins, and they print apart) and, in some rounds, a NaN, a string or
//! nil (both paths general): the same printed result or error, the same steps, and budgets at
//! steps-1 and steps end alike. Results are also checked against a `reduce` model.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;

use ptc_shared::Limits;
use rng::Rng;
use support::{assert_same_at_budget, assert_same_outcome, outcome};

const FLOATS: [&str; 8] = ["0.0", "-0.0", "1.5", "-2.25", "7.0", "1.5", "3.75", "-0.0"];
const INTS: [&str; 7] = ["0", "-1", "5", "12", "5", "-40", "3"];
const ODD: [&str; 3] = ["##NaN", "\"a\"", "nil"];

#[test]
fn max_and_min_answer_as_the_general_path_and_the_model() {
    let mut rng = Rng(0x5eed_e87e);
    let free = Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    };
    let mut plain = 0;
    for round in 0..400 {
        let floats = round % 2 == 0;
        let n = 1 + rng.below(30);
        let mut xs: Vec<&str> = (0..n)
            .map(|_| {
                if floats {
                    rng.pick(&FLOATS)
                } else {
                    rng.pick(&INTS)
                }
            })
            .collect();
        if round % 5 == 0 {
            let at = rng.below(xs.len());
            xs[at] = rng.pick(&ODD);
        }
        let xs = xs.join(" ");
        let (op, model_lose) = if round % 4 < 2 {
            ("max", "<")
        } else {
            ("min", ">")
        };
        // One more argument that never wins: same kind (stays plain) or the other (general).
        let far = |same: bool| match (floats == same, op) {
            (true, "max") => "-1.0E9",
            (true, _) => "1.0E9",
            (false, "max") => "-1000000000",
            (false, _) => "1000000000",
        };
        let program = |extra: &str| {
            format!(
                "(let [xs [{xs}]] (try [(apply {op} {extra} xs) (apply {op} xs) \
                 (reduce (fn [b x] (if ({model_lose} x b) b x)) xs)] \
                 (catch Exception e (ex-message e))))"
            )
        };
        let (fast, general) = (program(far(true)), program(far(false)));
        let (want, steps) = assert_same_outcome(&fast, &general, free, outcome);
        if round % 5 != 0 {
            plain += 1;
            // Model: the later of equal arguments wins; the far argument never does.
            let parts: Vec<&str> = want
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(' ')
                .collect();
            assert_eq!(parts.len(), 3, "round {round}: {want}");
            assert!(
                parts[0] == parts[1] && parts[1] == parts[2],
                "round {round}: {want}"
            );
        }
        if round % 8 == 0 {
            assert_same_at_budget(&fast, &general, steps, outcome);
        }
    }
    assert!(plain > 300, "plain rounds: {plain}");
}
