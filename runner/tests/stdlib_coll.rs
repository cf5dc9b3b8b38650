//! Collection-library properties the conformance corpus cannot reach: in-place updates that
//! keep big reductions linear, O(n log n) sorting and hashing on 100k elements, laziness of
//! infinite generators, and the limit (never a hang) when one is realized fully.
//!
//! Each run has a step budget sized for a linear algorithm and a timeout generous enough for
//! an unoptimized build, so a quadratic implementation (billions of element copies at 100k)
//! fails by hitting one of them.

use ptc_runner::{RunOptions, run};
use ptc_shared::{Limits, Step, Value};

fn run_with(src: &str, max_steps: u64) -> Step {
    let limits = Limits {
        max_steps,
        timeout_ms: 30_000,
        ..Limits::default()
    };
    let opts = RunOptions {
        limits,
        ..RunOptions::default()
    };
    match run(src, opts) {
        Ok(s) | Err(s) => s,
    }
}

fn value(src: &str, max_steps: u64) -> Value {
    let step = run_with(src, max_steps);
    if let Some(f) = &step.fail {
        panic!("{src} failed: {} {}", f.reason, f.message);
    }
    step.return_value.unwrap_or_default()
}

fn reason(src: &str) -> String {
    let step = run_with(src, Limits::default().max_steps);
    step.fail.map(|f| f.reason.to_string()).unwrap_or_default()
}

#[test]
fn reduce_conj_into_vector_is_linear() {
    let v = value("(count (reduce conj [] (range 100000)))", 1_000_000);
    assert_eq!(v, Value::Int(100_000));
}

#[test]
fn reduce_assoc_through_a_lambda_is_linear() {
    let v = value(
        "(let [m (reduce #(assoc %1 %2 %2) {} (range 100000))] [(count m) (get m 99999)])",
        1_500_000,
    );
    assert_eq!(
        v,
        Value::Vector(vec![Value::Int(100_000), Value::Int(99_999)])
    );
}

#[test]
fn sorting_and_hashing_100k_elements_fit_the_budget() {
    let src = "(let [xs (mapv #(mod (* % 7919) 100003) (range 100000))]
                 [(first (sort xs)) (first (sort-by - xs)) (count (frequencies xs))
                  (count (distinct xs)) (count (group-by #(mod % 10) xs))])";
    let v = value(src, 3_000_000);
    let Value::Vector(items) = v else {
        panic!("expected a vector, got {v}");
    };
    assert_eq!(items.first(), Some(&Value::Int(0)));
    assert!(matches!(items.get(1), Some(Value::Int(n)) if *n >= 99_990));
    assert_eq!(items.get(2), Some(&Value::Int(100_000)));
    assert_eq!(items.get(3), Some(&Value::Int(100_000)));
    assert_eq!(items.get(4), Some(&Value::Int(10)));
}

#[test]
fn infinite_generators_stay_lazy() {
    let v = value(
        "[(first (filter #(> % 1000) (map #(* % %) (range))))
          (nth (iterate inc 0) 5000)
          (take 2 (partition 2 (interleave (range) (repeat :x))))
          (first (drop-while #(< % 10) (cycle [1 5 20])))
          (first (filter #(zero? (mod % 7)) (range 1 1000000000000)))]",
        1_000_000,
    );
    let pair = |n: i64| Value::List(vec![Value::Int(n), Value::Keyword("x".into())]);
    let expected = Value::Vector(vec![
        Value::Int(1024),
        Value::Int(5000),
        Value::List(vec![pair(0), pair(1)]),
        Value::Int(20),
        Value::Int(7),
    ]);
    assert_eq!(v, expected);
}

#[test]
fn realizing_an_infinite_seq_is_a_limit_not_a_hang() {
    for src in [
        "(count (range))",
        "(vec (iterate inc 0))",
        "(last (cycle [1 2]))",
        "(reduce + (repeat 1))",
        "(doall (map inc (range)))",
        "(range)",
    ] {
        let r = reason(src);
        assert!(
            r == "limit_exceeded" || r == "timeout",
            "{src}: expected a limit, got {r:?}"
        );
    }
}

#[test]
fn a_finite_lazy_result_leaves_as_a_list() {
    // Over 100,000 elements a range is lazy; what is left after the drop is returned as data.
    let v = value("(drop 199998 (range 200000))", 2_000_000);
    assert_eq!(
        v,
        Value::List(vec![Value::Int(199_998), Value::Int(199_999)])
    );
}

#[test]
fn a_failure_inside_a_lazy_seq_surfaces_when_read_and_stays() {
    // The walk realizes nodes ahead; the error at node 3 must not hide nodes 0..2.
    let v = value(
        "(take 3 (tree-seq (constantly true) (fn [n] (if (= n 3) (throw (ex-info \"deep\" {})) [(inc n)])) 0))",
        1_000_000,
    );
    assert_eq!(
        v,
        Value::List(vec![Value::Int(0), Value::Int(1), Value::Int(2)])
    );
    let r = reason(
        "(let [s (map #(if (= % 5) (throw (ex-info \"five\" {})) %) (range))]
           [(try (nth s 6) (catch Exception e :caught)) (nth s 7)])",
    );
    assert_eq!(
        r, "eval_error",
        "a failed element fails every later read too"
    );
}

#[test]
fn equality_and_compare_of_deeply_nested_values_do_not_overflow() {
    let v = value(
        "(let [deep (fn [x] (reduce (fn [acc _] [acc]) x (range 100000)))]
           [(= (deep []) (deep [])) (= (deep []) (deep [1])) (compare (deep []) (deep []))
            (count (flatten (deep [1 2])))])",
        2_000_000,
    );
    assert_eq!(
        v,
        Value::Vector(vec![
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(2),
        ])
    );
}

/// Dropping data nested 100,000 levels deep defers the deeper levels instead of recursing, also
/// for pairs that hold a scalar beside the nested vector and for copies of a shared vector
/// (`assoc`): a drop-time flatness check that asked whether *any* element is scalar, instead of
/// every one, would recurse and overflow the stack here.
#[test]
fn deep_nests_of_pairs_and_tree_vectors_drop_without_overflow() {
    let v = value(
        "(let [base [0 0]
               pairs (reduce (fn [acc _] [1 acc]) [] (range 100000))
               trees (reduce (fn [acc _] (assoc base 1 acc)) [] (range 100000))]
           [(count pairs) (count trees) (first (second trees))])",
        2_000_000,
    );
    assert_eq!(
        v,
        Value::Vector(vec![Value::Int(2), Value::Int(2), Value::Int(0)])
    );
}
