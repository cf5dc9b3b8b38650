//! In-process interpreter benchmarks (issues 2 and 3).
//!
//! - `run/pN`: parse + analyze + eval of the five reference programs; `eval/pN`: eval alone.
//! - `aggregate/100k`: group-by + sum-by over a 100,000-row context, with Python (plain dicts,
//!   same computation) timed by `group_by_baseline.py` in the same run as the baseline.
//! - `build/*`: the O(n) collection-update cases and 100k-element sort/frequencies/distinct.
//!
//! Figures and ratios go to BENCHMARKS.md; nothing here asserts a time.

use criterion::{Criterion, criterion_group, criterion_main};
use ptc_runner::session::{compile, run_compiled};
use ptc_runner::{Limits, RunOptions, ToolFailure, ToolHost, run};
use ptc_shared::Value;
use ptc_shared::client_protocol::RunRequest;
use std::hint::black_box;

const PROGRAMS: [(&str, &str); 5] = [
    ("p1", "(+ 1 (* 2 3) (- 10 4) (* (+ 1 1) 5))"),
    (
        "p2",
        "(reduce + 0 (map (fn [x] (* x x)) (filter odd? (range 0 40))))",
    ),
    (
        "p3",
        "(let [m {:a \"alpha\" :b \"beta\" :c \"gamma\"}] (clojure.string/join \",\" (map clojure.string/upper-case [(:a m) (:b m) (:c m)])))",
    ),
    (
        "p4",
        "(let [mk (fn [x] (fn [y] (+ x y)))] (reduce + 0 (map (mk 10) [1 2 3 4 5])))",
    ),
    (
        "p5",
        "(->> (range 1000) (map (fn [i] {:id i :cat (mod i 7) :amount (* i 3)})) (group-by :cat) (map (fn [[k v]] [k (reduce + (map :amount v))])) (sort-by second >) (take 3))",
    ),
];

const AGGREGATE: &str =
    "(->> data/rows (group-by :cat) (map (fn [[k v]] [k (sum-by :amount v)])) (sort-by second >))";

struct NoTools;
impl ToolHost for NoTools {
    fn call(&mut self, _: &str, _: Value) -> Result<Value, ToolFailure> {
        Err(ToolFailure::NotFound)
    }
}

fn generous() -> Limits {
    Limits {
        timeout_ms: 60_000,
        max_steps: u64::MAX / 2,
        max_result_bytes: u64::MAX / 2,
        ..Limits::default()
    }
}

fn programs(c: &mut Criterion) {
    for (name, src) in PROGRAMS {
        let ok = run(src, RunOptions::default());
        assert!(ok.is_ok(), "{name} failed: {ok:?}");
        c.bench_function(&format!("run/{name}"), |b| {
            b.iter(|| run(black_box(src), RunOptions::default()))
        });
        let opts = RunOptions::default();
        let compiled = compile(src, &opts, &[]).unwrap_or_else(|f| panic!("{name}: {f:?}"));
        c.bench_function(&format!("eval/{name}"), |b| {
            b.iter(|| run_compiled(black_box(&compiled), &opts, &[], &mut NoTools))
        });
    }
}

/// `{"rows" [{"id" 1 "cat" "c3" "amount" 12.5 "tags" ["t1" "t2"]} ...]}` with 100,000 rows.
fn rows_context(n: usize) -> Value {
    let rows: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"id": i, "cat": format!("c{}", i % 17), "amount": (i % 1000) as f64 * 0.5 + 0.25, "tags": [format!("t{}", i % 5), "x"]}))
        .collect();
    Value::from_json(&serde_json::json!({ "rows": rows })).unwrap_or_default()
}

fn python_baseline() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/group_by_baseline.py");
    match std::process::Command::new("python3").arg(script).output() {
        Ok(out) => eprintln!(
            "python3 baseline (same run): {}",
            String::from_utf8_lossy(&out.stdout).trim()
        ),
        Err(e) => eprintln!("python3 baseline unavailable: {e}"),
    }
}

fn aggregate(c: &mut Criterion) {
    python_baseline();
    let opts = RunOptions {
        request: RunRequest {
            context: rows_context(100_000).into(),
            ..RunRequest::default()
        },
        limits: generous(),
        ..RunOptions::default()
    };
    let compiled = compile(AGGREGATE, &opts, &[]).unwrap_or_else(|f| panic!("aggregate: {f:?}"));
    let check = run_compiled(&compiled, &opts, &[], &mut NoTools);
    assert!(check.fail.is_none(), "aggregate failed: {:?}", check.fail);
    let mut g = c.benchmark_group("aggregate");
    g.sample_size(20);
    g.bench_function("100k", |b| {
        b.iter(|| run_compiled(black_box(&compiled), &opts, &[], &mut NoTools))
    });
    g.finish();
}

fn build(c: &mut Criterion) {
    let cases = [
        ("conj-100k", "(count (reduce conj [] (range 100000)))"),
        (
            "assoc-100k",
            "(count (reduce #(assoc %1 %2 %2) {} (range 100000)))",
        ),
        (
            "sort-100k",
            "(count (sort (map #(mod (* % 7919) 100003) (range 100000))))",
        ),
        (
            "frequencies-100k",
            "(count (frequencies (map #(mod % 1000) (range 100000))))",
        ),
        (
            "distinct-100k",
            "(count (distinct (map #(mod % 5000) (range 100000))))",
        ),
        ("str-100k", "(count (apply str (map str (range 100000))))"),
    ];
    let mut g = c.benchmark_group("build");
    g.sample_size(10);
    for (name, src) in cases {
        let opts = RunOptions {
            limits: generous(),
            ..RunOptions::default()
        };
        let compiled = compile(src, &opts, &[]).unwrap_or_else(|f| panic!("{name}: {f:?}"));
        let check = run_compiled(&compiled, &opts, &[], &mut NoTools);
        assert!(check.fail.is_none(), "{name} failed: {:?}", check.fail);
        g.bench_function(name, |b| {
            b.iter(|| run_compiled(black_box(&compiled), &opts, &[], &mut NoTools))
        });
    }
    g.finish();
}

criterion_group!(benches, programs, build, aggregate);
criterion_main!(benches);
