//! `(reduce g init (keep f xs))` and `(into to (map f xs))` run as one pass (`eval::fused`)
//! where `f` has register code (and `g` is a quick reducer). Each case runs the call as written
//! and with the inner builtin called through a local, `(let [keep* keep] (reduce g init (keep* f
//! xs)))`, which the analyzer does not fuse and which charges what the builtin's call charges,
//! in the same order, through the public `run`, and asserts the same printed result or error
//! and the same steps; then that the step budget, `max_iterations` and the depth limit end both
//! at the same point, and that the deadline ends a long pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/outcome.rs"]
mod support;

use ptc_runner::convert::import_encoded;
use ptc_runner::{RunOptions, run};
use ptc_shared::Limits;
use ptc_shared::step::FailReason;
use ptc_shared::value::EncodedValue;
use support::{VALUES, outcome};

/// The `keep` fns: a record literal answered (the usual join), records of two shapes or a
/// record and a value on two branches, a vector, the element itself, `false`, and bodies that
/// decline or fail on some elements (a field of what is not a map, `inc` of nil).
const KEEPS: [&str; 8] = [
    "(fn [m] (let [c (get by (:id m))] (when (= \"gold\" (:tier c)) {:customer (:name c) :total (:k m)})))",
    "(fn [m] (if (= 0 (mod (:id m) 2)) {:customer (:k m) :total 1} {:total 2 :customer \"odd\"}))",
    "(fn [m] (if (:k m) {:customer (:k m) :total (:id m)} :kept))",
    "(fn [m] [(:k m) (:id m)])",
    "(fn [m] (when (:k m) m))",
    "(fn [m] (= 1 (:k m)))",
    "(fn [m] {:customer (:k (:k m)) :total (inc (:id m))})",
    "(fn [m] {:customer (:name (get by (:id m))) :total (inc (:k m))})",
];

/// The reducers: sums by a field (with and without `fnil`), counts by the whole element,
/// indexes by a field, keeps a constant key, and the other number prims.
const REDUCES: [&str; 8] = [
    "(fn [acc r] (update acc (:customer r) (fnil + 0) (:total r)))",
    "(fn [acc r] (update acc (:customer r) + (:total r)))",
    "(fn [acc r] (update acc r (fnil inc 0)))",
    "(fn [acc r] (assoc acc (:total r) r))",
    "(fn [acc r] (assoc acc :last (:customer r)))",
    "(fn [acc r] (update acc (:customer r) (fnil * 1 2) (:total r)))",
    "(fn [acc r] (update acc (:customer r) (fnil - 0.5) (:total r)))",
    "(fn [acc r] (update acc (:customer r) (fnil < 0) (:total r)))",
];

/// Starting accumulators: an empty map, nil, a map already holding a key, a sorted map and a
/// vector (which the reducer's shortcut declines), and a map bound outside (shared).
const INITS: [&str; 6] = ["{}", "nil", "{\"n1\" 10}", "(sorted-map)", "[]", "shared"];

/// `by` (customers by id, captured by the `keep` fns) and `shared`, a map the program also
/// holds.
const BINDINGS: &str = "[by (into {} (map (fn [i] [i {:tier (if (even? i) \"gold\" \"x\") \
                        :name (str \"n\" (mod i 3))}]) (range 12))) shared {\"n0\" 1}]";

/// Elements: records with an `:id` by-id may hold and each of the values under `:k`.
fn elements() -> String {
    let xs: Vec<String> = VALUES
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{{:id {i} :k {v}}}"))
        .collect();
    format!("[{}]", xs.join(" "))
}

/// `(reduce g init (keep f xs))` and its unfused form, each inside `wrap` (`HOLE` for the call).
fn both(wrap: &str, f: &str, g: &str, init: &str, xs: &str) -> (String, String) {
    let call = format!("(reduce {g} {init} (keep {f} {xs}))");
    through_local(wrap, &call, "keep")
}

/// `call` and `call` with its inner builtin `inner` called through a local, in `wrap`.
fn through_local(wrap: &str, call: &str, inner: &str) -> (String, String) {
    let through = format!(
        "(let [{inner}* {inner}] {})",
        call.replacen(&format!("({inner} "), &format!("({inner}* "), 1)
    );
    (wrap.replace("HOLE", call), wrap.replace("HOLE", &through))
}

/// Runs both forms under `limits`, asserts the same outcome, and gives it.
fn same(wrap: &str, f: &str, g: &str, init: &str, xs: &str, limits: Limits) -> (String, u64) {
    let (fused, unfused) = both(wrap, f, g, init, xs);
    support::assert_same_outcome(&fused, &unfused, limits, outcome)
}

#[test]
fn the_fused_pass_answers_and_charges_as_the_two_calls() {
    let wrap =
        format!("(let {BINDINGS} (try HOLE (catch Exception e (str \"error: \" (ex-message e)))))");
    let (xs, mut answered) = (elements(), 0);
    for f in KEEPS {
        for g in REDUCES {
            for init in INITS {
                let (text, _) = same(&wrap, f, g, init, &xs, Limits::default());
                answered += usize::from(!text.starts_with("\"error"));
            }
        }
    }
    // Most combinations answer; the rest end in the same caught error both ways.
    assert!(answered > KEEPS.len() * REDUCES.len(), "{answered}");
}

#[test]
fn the_fused_pass_over_other_collections_answers_as_the_two_calls() {
    let wrap = format!("(let {BINDINGS} HOLE)");
    let rows = "(mapv (fn [i] {:id i :k (mod i 5)}) (range 40))";
    let (f, g) = (KEEPS[0], REDUCES[0]);
    for xs in [
        rows.to_string(),
        format!("(apply list {rows})"),
        format!("(map identity {rows})"),
        "[]".to_string(),
        "()".to_string(),
        "nil".to_string(),
        "{:id 0 :k 1}".to_string(),
    ] {
        same(&wrap, f, g, "{}", &xs, Limits::default());
    }
    // A fn with no code, a builtin, a reducer with no shortcut: the two calls as written.
    for (f, g) in [
        ("(fn [m] (do nil {:customer (:k m) :total 1}))", REDUCES[0]),
        (":k", "(fn [acc r] (assoc acc r 1))"),
        (KEEPS[3], "conj"),
        (
            KEEPS[0],
            "(fn [acc r] (do nil (assoc acc (:customer r) 1)))",
        ),
    ] {
        same(&wrap, f, g, "{}", rows, Limits::default());
    }
}

/// The join and sum of the pipelines bench, over `n` orders.
fn join(n: u32) -> String {
    format!(
        "(let [by (into {{}} (map (fn [c] [(:id c) c]) (mapv (fn [i] {{:id i :tier (if (= 0 (mod \
         i 3)) \"gold\" \"x\") :name (str \"c\" (mod i 7))}}) (range 30)))) \
         orders (mapv (fn [i] {{:customer_id (mod (* i 7) 31) :total (* 1.5 i)}}) (range {n}))] \
         HOLE)"
    )
}

const JOIN_KEEP: &str = "(fn [o] (let [c (get by (:customer_id o))] (when (= \"gold\" (:tier c)) \
                         {:customer (:name c) :total (:total o)})))";

#[test]
fn the_step_budget_ends_the_fused_and_the_unfused_calls_at_the_same_step() {
    // Long enough to cross several deadline checks (one every 1024 steps).
    let (fused, unfused) = both(&join(1500), JOIN_KEEP, REDUCES[0], "{}", "orders");
    let at = support::step_boundary(&fused);
    assert_eq!(at, support::step_boundary(&unfused));
    assert!(at > 1500 * 4, "{at}");
    support::assert_same_at_budgets(&fused, &unfused, at - 3..=at + 3, outcome);
}

#[test]
fn max_iterations_ends_the_fused_and_the_unfused_calls_alike() {
    let (fused, unfused) = both(&join(200), JOIN_KEEP, REDUCES[0], "{}", "orders");
    for max_iterations in [10, 60, 70, 1000] {
        let limits = Limits {
            max_iterations,
            ..Limits::default()
        };
        let (text, _) = support::assert_same_outcome(&fused, &unfused, limits, outcome);
        // 200 orders keep 68 (their customer's id a multiple of 3), under 200 iterations.
        assert_eq!(
            text.contains("LimitExceeded"),
            max_iterations < 200,
            "{max_iterations}: {text}"
        );
    }
}

#[test]
fn the_depth_limit_ends_the_fused_and_the_unfused_calls_alike() {
    let wrap = "(defn f [n] (if (= n 0) HOLE (f (dec n)))) (f 20)";
    let g = "(fn [acc r] (update acc (:customer r) (fnil + 0) (:total r)))";
    let xs = "[{:k 1} {:k 2}]";
    let f = "(fn [m] {:customer (:k m) :total 1})";
    let (fused, unfused) = both(wrap, f, g, "{}", xs);
    same_depth_boundary(&fused, &unfused);
}

/// Asserts that `fused` and `unfused` end alike under every `max_depth` from 15 to 29, and that
/// the shallowest they pass under is above 15 (the limit is reached below it).
fn same_depth_boundary(fused: &str, unfused: &str) {
    let mut passed = None;
    for depth in 15..30 {
        let limits = Limits {
            max_depth: depth,
            ..Limits::default()
        };
        let (text, _) = support::assert_same_outcome(fused, unfused, limits, outcome);
        if passed.is_none() && !text.starts_with("failed") {
            passed = Some(depth);
        }
    }
    assert!(passed.is_some_and(|d| d > 15), "{passed:?}");
}

#[test]
fn the_deadline_ends_a_long_fused_pass() {
    // 300,000 orders handed in as the context: the program itself is a few steps before the
    // pass, so only the pass's own checks can see the deadline.
    let orders: Vec<String> = (0..300_000)
        .map(|i| format!("{{\"customer_id\":{},\"total\":1.5}}", i % 31))
        .collect();
    let json = format!("{{\"orders\":[{}]}}", orders.join(","));
    let encoded = EncodedValue::from_json_text(json.as_bytes(), usize::MAX).expect("JSON");
    let context = import_encoded(&encoded).expect("the context imports");
    let src = format!(
        "(let [by (into {{}} (map (fn [i] [i {{:tier \"gold\" :name (str i)}}]) (range 31)))] \
         (count (reduce {} {{}} (keep {JOIN_KEEP} data/orders))))",
        REDUCES[0]
    );
    let opts = RunOptions {
        context_value: Some(context),
        limits: Limits {
            timeout_ms: 5,
            max_steps: u64::MAX / 2,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    let step = run(&src, opts).expect_err("the deadline ends the run");
    let fail = step.fail.expect("a fail");
    assert_eq!(fail.reason, FailReason::Timeout, "{}", fail.message);
}

/// The `map` fns `into` fuses with: a pair answered (the usual index), a record (merged), a pair
/// of any values, a map (merged), nil (nothing added), a pair or nil on two branches, and answers `conj` refuses
/// into a map (one value, three, a number).
const MAPS: [&str; 9] = [
    "(fn [m] [(:id m) m])",
    "(fn [m] {:a (:k m) :b (:id m)})",
    "(fn [m] [(:k m) (:id m)])",
    "(fn [m] {:a (:k m) (:id m) 1})",
    "(fn [m] (when (:k m) [(:k m) (get by (:id m))]))",
    "(fn [m] (if (:k m) [(:k m) 1] {}))",
    "(fn [m] [(:k m)])",
    "(fn [m] [(:k m) 1 2])",
    "(fn [m] (:k m))",
];

/// What `into` fills: maps (empty, holding a key, bound outside, sorted), and other
/// collections, which `conj` takes on its own terms.
const TOS: [&str; 8] = [
    "{}",
    "{:x 1}",
    "shared",
    "(sorted-map)",
    "[]",
    "nil",
    "#{}",
    "'()",
];

#[test]
fn the_fused_into_answers_and_charges_as_the_two_calls() {
    let wrap =
        format!("(let {BINDINGS} (try HOLE (catch Exception e (str \"error: \" (ex-message e)))))");
    let (xs, mut answered) = (elements(), 0);
    for f in MAPS {
        for to in TOS {
            for src in [xs.clone(), format!("(apply list {xs})"), "[]".into()] {
                let (fused, unfused) =
                    through_local(&wrap, &format!("(into {to} (map {f} {src}))"), "map");
                let (text, _) =
                    support::assert_same_outcome(&fused, &unfused, Limits::default(), outcome);
                answered += usize::from(!text.starts_with("\"error"));
            }
        }
    }
    assert!(answered > MAPS.len() * TOS.len(), "{answered}");
}

#[test]
fn limits_end_the_fused_and_the_unfused_into_alike() {
    let rows = "(mapv (fn [i] {:id i :k (mod i 5)}) (range 1500))";
    let call = format!("(count (into {{}} (map (fn [m] [(:id m) (:k m)]) {rows})))");
    let (fused, unfused) = through_local("HOLE", &call, "map");
    let at = support::step_boundary(&fused);
    assert_eq!(at, support::step_boundary(&unfused));
    assert!(at > 1500 * 3, "{at}");
    support::assert_same_at_budgets(&fused, &unfused, at - 3..=at + 3, outcome);
    let deep = "(defn f [n] (if (= n 0) HOLE (f (dec n)))) (f 20)";
    let call = "(into {} (map (fn [m] [(:k m) m]) [{:k 1} {:k 2}]))";
    let (fused, unfused) = through_local(deep, call, "map");
    same_depth_boundary(&fused, &unfused);
}
