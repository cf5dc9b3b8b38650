//! Record-shaped maps (`value::record`) through the evaluator: rows imported from a JSON context
//! and map literals with constant keys are records, and every operation on one must print and
//! compare exactly as on the plain small map of the same entries (built here with `into`, which
//! never makes a record). The unit tests in `value::record` check the same against the model
//! under random updates; these check the builtins and the printer on top.
#![allow(clippy::unwrap_used)]

#[path = "support/outcome.rs"]
mod support;

use ptc_runner::convert::import;
use ptc_shared::Value;

/// Operations applied to a record and to its plain copy; each must give the same.
const OPS: &[&str] = &[
    "identity",
    "keys",
    "vals",
    "seq",
    "count",
    "#(get {% 1} (into {} (map vec %)))",
    "#(into [] %)",
    "#(assoc % \"id\" 0)",
    "#(assoc % :new 1)",
    "#(assoc (assoc % :new 1) \"id\" 2)",
    "#(-> % (assoc :new 1) (assoc :new2 2) (dissoc :new))",
    "#(assoc % :a 1 :b 2 :c 3 :d 4 :e 5)",
    "#(dissoc % \"id\")",
    "#(dissoc % \"absent\")",
    "#(merge % {\"id\" 5 :z 1})",
    "#(merge {:z 1} %)",
    "#(select-keys % [\"cat\" \"id\" :missing])",
    "#(update % \"id\" inc)",
    "#(get % \"cat\")",
    "#(:cat %)",
    "#(:id % :none)",
    "#(find % \"id\")",
    "#(contains? % \"tags\")",
    "#(reduce-kv (fn [a k v] (conj a k v)) [] %)",
    "#(update-vals % str)",
    "#(update-keys % str)",
    "#(zipmap (keys %) (vals %))",
    "#(conj % [\"extra\" 1])",
    "#(= % (into {} (map vec %)))",
    "#(into (sorted-map) (map (fn [[k v]] [(str k) v]) %))",
];

fn context() -> ptc_runner::value::Value {
    let rows: Vec<serde_json::Value> = (0..12)
        .map(|i| match i % 3 {
            0 => serde_json::json!({"id": i, "cat": format!("c{}", i % 2), "amount": 1.5, "tags": ["a"]}),
            1 => serde_json::json!({"cat": "c1", "id": i, "amount": i}),
            _ => serde_json::json!({"id": i, "cat": "c0", "a": 1, "b": 2, "c": 3, "d": 4, "e": 5}),
        })
        .collect();
    import(Value::from_json(&serde_json::json!({ "rows": rows })).unwrap())
}

fn run(src: &str) -> String {
    support::result_of(src, Some(context()))
}

#[test]
fn imported_rows_behave_as_plain_maps_under_every_operation() {
    for op in OPS {
        let src = format!(
            "(let [f {op}]
               (vec (for [r data/rows :let [p (into {{}} (map vec r))]]
                      [(= (f r) (f p)) (= (pr-str (f r)) (pr-str (f p))) (= r p) (= p r)
                       (contains? (set [p]) r) (= (set [r]) (set [p]))])))"
        );
        let got = run(&src);
        assert!(!got.contains("false"), "{op}: {got}");
        assert_eq!(got.matches("true").count(), 12 * 6, "{op}: {got}");
    }
}

#[test]
fn record_literals_behave_as_plain_maps_under_every_operation() {
    for op in OPS {
        let src = format!(
            "(let [f {op}]
               (vec (for [i (range 6)
                          :let [r (if (even? i) {{\"id\" i \"cat\" \"c0\" \"tags\" [i]}} {{:cat i \"id\" i}})
                                p (into {{}} (map vec r))]]
                      [(= (f r) (f p)) (= (pr-str (f r)) (pr-str (f p))) (= r p)
                       (contains? (set [p]) r)])))"
        );
        let got = run(&src);
        assert!(!got.contains("false"), "{op}: {got}");
        assert_eq!(got.matches("true").count(), 6 * 4, "{op}: {got}");
    }
}

/// Printing keeps insertion order, through growth by `assoc` and past eight keys (hash order
/// then, as for any map), and a record's `=` ignores order as Clojure's does.
#[test]
fn records_print_in_insertion_order() {
    assert_eq!(
        run("(let [r (first data/rows)] [r (assoc r :x 1) (dissoc r \"cat\") (assoc r \"id\" 9)])"),
        r#"[{"id" 0, "cat" "c0", "amount" 1.5, "tags" ["a"]} {"id" 0, "cat" "c0", "amount" 1.5, "tags" ["a"], :x 1} {"id" 0, "amount" 1.5, "tags" ["a"]} {"id" 9, "cat" "c0", "amount" 1.5, "tags" ["a"]}]"#
    );
    assert_eq!(
        run(
            "(let [r (second data/rows)] [r (= r {\"id\" 1 \"amount\" 1 \"cat\" \"c1\"}) (:amount r)])"
        ),
        r#"[{"cat" "c1", "id" 1, "amount" 1} true 1]"#
    );
}
