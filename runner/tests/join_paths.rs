//! Shortcuts on the path of a join by id (pipeline p3) and of sums over groups (p2, interp p5),
//! each checked against its general path through the public `run`:
//!
//! - `(get m k)`, `get`'s fast entry, finds an integer key of a flat map in place
//!   (`builtins::coll::get2`); `(get m k nil)` runs the general entry. Over maps of every form
//!   (dense and hashed integer keys, text keys found by a keyword, small maps, records, sorted
//!   maps, vectors, texts, sets, nil) and keys of every kind, both must give the same results and
//!   steps, and the step budget must fire at the same boundary.
//! - `reduce` with a number op over numbers forgets the numbers it is done with
//!   (`builtins::hofseq::reduce_coll`); the same op called from a fn, `(fn [a b] (op a b))`,
//!   is the general path, charging one step more per element (its body's node): the results,
//!   the errors and that count must agree.
//! - `update` with `(fnil op d)` over doubles answers in `hof::call_native2`, called straight
//!   from `update`; calling the fnil from a fn, `(fn [a b] ((fnil op d) a b))`, goes through
//!   the native's general entry, one step more per call.
//! - `(map :k xs)` over a vector or list reads each map's field in place and copies a number
//!   inline (`builtins::hofseq::map`); `(map (fn [x] (:k x)) xs)`, the general path, charges
//!   one step more per element (its body's node): the results and that count must agree.
//! - `(group-by :k xs)` reads a map's key in place and, among a few groups, puts the element in
//!   the group of that very key without copying it (`builtins::groups`); against
//!   `(group-by (fn [x] (:k x)) xs)`, one step more per element, the groups, their order and
//!   their elements' order must agree.
#![allow(clippy::unwrap_used)]

#[path = "support/rng.rs"]
mod rng;

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::Limits;
use rng::Rng;
use support::{assert_same_at_budget, assert_same_outcome, outcome_printed as outcome};

fn free() -> Limits {
    Limits {
        max_steps: u64::MAX / 2,
        ..Limits::default()
    }
}

/// `fast` against `general`, the same op called from a fn over `n` elements: the same answer
/// or error (its position aside: the fn's call is elsewhere in the text), and when it answers,
/// one step fewer per element. Gives back `fast`'s answer and steps when it answered.
fn assert_as_called_from_a_fn(fast: &str, general: &str, n: usize) -> Option<(String, u64)> {
    let (fast_out, fast_steps) = outcome(fast, free());
    let (general_out, general_steps) = outcome(general, free());
    assert_eq!(unplaced(&fast_out), unplaced(&general_out), "{fast}");
    if fast_out.starts_with("failed") {
        return None;
    }
    assert_eq!(general_steps, fast_steps + n as u64, "{fast}");
    Some((fast_out, fast_steps))
}

/// A fast path that charges fewer steps than its general form (one call less per element),
/// checked against its own count: one step short fails on the budget, the count finishes as
/// it did without a budget.
fn assert_ends_at_its_count(fast: &str, fast_out: &str, fast_steps: u64) {
    let at = |max_steps| {
        outcome(
            fast,
            Limits {
                max_steps,
                ..free()
            },
        )
        .0
    };
    assert!(at(fast_steps - 1).contains("step budget"), "{fast}");
    assert_eq!(at(fast_steps), fast_out, "{fast}");
}

/// Maps (and other collections) `get` reads, as expressions.
const COLLS: [&str; 11] = [
    // Dense integer keys, values of several kinds (records among them).
    "(into {} (map (fn [i] [i (case (mod i 4) 0 {:id i :n \"a\"} 1 (* i 1.5) 2 nil \"t\")]) (range 20)))",
    // Dense from a negative start, inserted downward.
    "(into {} (map (fn [i] [(- 5 i) [i]]) (range 16)))",
    // Integer keys spread far apart: the hash index.
    "(into {} (map (fn [i] [(* i 1000003) i]) (range 12)))",
    // A non-integer key among integers: the hash index for good.
    "(assoc (into {} (map (fn [i] [i (inc i)]) (range 12))) \"3\" :s 1.0 :f)",
    // Text keys: a keyword finds the text key with its name.
    "(into {} (map (fn [i] [(str \"k\" i) i]) (range 12)))",
    "{1 :one :k 2 \"k\" 3}",
    "{:id 7 :k 8}",
    "(sorted-map 1 :a 2 :b 3 :c)",
    "[10 20 30]",
    "\"abc\"",
    "#{1 2 :k}",
];

/// Keys: integers in and out of range, ones that equal no integer, a keyword and nil.
const KEYS: [&str; 14] = [
    "0", "1", "2", "3", "7", "19", "-5", "-11", "3000009", "1.0", "\"3\"", ":k3", ":k", "nil",
];

#[test]
fn get_of_a_flat_map_answers_as_the_general_entry() {
    let mut rng = Rng(0x6e7_0123);
    for round in 0..120 {
        let coll = rng.pick(&COLLS);
        let keys: Vec<&str> = (0..1 + rng.below(6)).map(|_| rng.pick(&KEYS)).collect();
        let ks = keys.join(" ");
        // The map is a local read by `get` in place, and a capture (a fn's `(get by-id k)`).
        let fast = format!(
            "(let [m {coll}] [(mapv (fn [k] (get m k)) [{ks}]) (get m {k0})])",
            k0 = keys[0]
        );
        let general = format!(
            "(let [m {coll}] [(mapv (fn [k] (get m k nil)) [{ks}]) (get m {k0} nil)])",
            k0 = keys[0]
        );
        let (_, steps) = assert_same_outcome(&fast, &general, free(), outcome);
        if round % 8 == 0 {
            assert_same_at_budget(&fast, &general, steps, outcome);
        }
    }
}

/// The fast entry is the one taken: a flat map's values are found (not nil) by integer keys.
#[test]
fn get_of_a_flat_map_finds_its_integer_keys() {
    let src = "(let [m (into {} (map (fn [i] [i {:id i}]) (range 100)))] \
               [(:id (get m 42)) (get m 100) (count (keep (fn [i] (get m i)) (range -5 105)))])";
    assert_eq!(support::result_of(src, None), "[42 nil 100]");
}

/// An outcome without its error's position (` (at 1:19)`): the general path's error is raised
/// inside its fn, at another place in the source, with the same kind and message.
fn unplaced(out: &str) -> String {
    match (out.find(" (at "), out.find(") printed")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &out[..a], &out[b + 1..]),
        _ => out.to_string(),
    }
}

/// Numbers (integers near overflow, doubles, NaN, -0.0) and values that are errors to the ops.
const NUMS: [&str; 12] = [
    "0",
    "3",
    "-7",
    "2.5",
    "-0.0",
    "1e300",
    "9223372036854775807",
    "-9223372036854775808",
    "##NaN",
    "1.0",
    "nil",
    "\"a\"",
];

/// The number ops `reduce` and `update` answer inline.
const OPS: [&str; 7] = ["+", "-", "*", "<", "max", "mod", "="];

#[test]
fn reduce_of_a_number_op_answers_as_the_op_called_from_a_fn() {
    let mut rng = Rng(0x2ed_0ce5);
    for _ in 0..200 {
        let op = rng.pick(&OPS);
        let n = 1 + rng.below(6);
        // Mostly numbers, so the inline path runs for several elements before any error.
        let xs: Vec<&str> = (0..n)
            .map(|_| {
                let kinds = if rng.below(4) == 0 { 12 } else { 10 };
                NUMS[rng.below(kinds)]
            })
            .collect();
        let init = NUMS[rng.below(10)];
        let xs = xs.join(" ");
        let fast = format!("(reduce {op} {init} [{xs}])");
        let general = format!("(reduce (fn [a b] ({op} a b)) {init} [{xs}])");
        if let Some((fast_out, fast_steps)) = assert_as_called_from_a_fn(&fast, &general, n) {
            assert_ends_at_its_count(&fast, &fast_out, fast_steps);
        }
    }
}

#[test]
fn update_through_a_fnil_over_doubles_answers_as_the_fnil_called_from_a_fn() {
    let mut rng = Rng(0xf1_1d0b);
    for _ in 0..200 {
        let op = rng.pick(&["+", "-", "*", "<", "="]);
        let d = rng.pick(&["0", "0.5", "-0.0"]);
        let n = 1 + rng.below(8);
        // Updates of a few keys of an accumulator, each by a double (now and then another
        // value): the first update of a key finds nil and takes the default.
        let pairs: Vec<String> = (0..n)
            .map(|_| {
                let x = if rng.below(5) == 0 {
                    NUMS[rng.below(12)]
                } else {
                    NUMS[3 + rng.below(3)]
                };
                format!("[{} {x}]", rng.pick(&["\"a\"", "\"b\"", ":c"]))
            })
            .collect();
        let pairs = pairs.join(" ");
        let step =
            |f: &str| format!("(reduce (fn [acc [k x]] (update acc k {f} x)) {{}} [{pairs}])");
        let fast = step(&format!("(fnil {op} {d})"));
        let general = step(&format!("(fn [a b] ((fnil {op} {d}) a b))"));
        assert_as_called_from_a_fn(&fast, &general, n);
    }
}

/// Elements a keyword is mapped over: records, small and text-keyed maps (the keyword finds the
/// text key), maps without the key, and values that are not maps.
const ELEMS: [&str; 13] = [
    "{:k 1.5 :j 2}",
    "{:j 0 :k 7}",
    "{:k \"s\" :j nil}",
    "{:k {:k 1}}",
    "{:k nil}",
    "{\"k\" 2.5}",
    "{\"k\" 9 :k -1}",
    "{:j 1}",
    "(hash-map :k 9223372036854775807)",
    "nil",
    "[1 2]",
    "3",
    "\"k\"",
];

#[test]
fn map_of_a_keyword_answers_as_the_keyword_called_from_a_fn() {
    let mut rng = Rng(0x6e7_a11);
    for round in 0..150 {
        let n = rng.below(7);
        let xs: Vec<&str> = (0..n).map(|_| rng.pick(&ELEMS)).collect();
        let xs = xs.join(" ");
        let (open, close) = if rng.below(2) == 0 {
            ("[", "]")
        } else {
            ("(list ", ")")
        };
        let fast = format!("(map :k {open}{xs}{close})");
        let general = format!("(map (fn [x] (:k x)) {open}{xs}{close})");
        let (fast_out, fast_steps) = outcome(&fast, free());
        let (general_out, general_steps) = outcome(&general, free());
        assert_eq!(fast_out, general_out, "round {round}: {fast}");
        assert_eq!(general_steps, fast_steps + n as u64, "{fast}");
        assert_ends_at_its_count(&fast, &fast_out, fast_steps);
    }
}

#[test]
fn group_by_a_keyword_answers_as_the_keyword_called_from_a_fn() {
    // Keys shared by several elements (one text, integers, keywords), keys equal but not the
    // same text, missing keys and elements that are not maps.
    let elems = [
        "{:k s :n 1}",
        "{:n 2 :k s}",
        "{:k \"a\"}",
        "{:k 1}",
        "{:k 1.0}",
        "{:k :x :n 3}",
        "{\"k\" s}",
        "{:n 4}",
        "{:k nil}",
        "(hash-map :k 2)",
        "nil",
        "[1]",
    ];
    let mut rng = Rng(0x960_0b1);
    for round in 0..150 {
        let n = rng.below(12);
        let xs: Vec<&str> = (0..n).map(|_| rng.pick(&elems)).collect();
        let xs = xs.join(" ");
        let wrap = |g: &str| format!("(let [s (str \"a\")] (group-by {g} [{xs}]))");
        let fast = wrap(":k");
        let general = wrap("(fn [x] (:k x))");
        let (fast_out, fast_steps) = outcome(&fast, free());
        let (general_out, general_steps) = outcome(&general, free());
        assert_eq!(fast_out, general_out, "round {round}: {fast}");
        assert_eq!(general_steps, fast_steps + n as u64, "{fast}");
    }
}
