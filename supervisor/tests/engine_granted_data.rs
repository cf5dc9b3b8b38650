//! Granted data (docs/ARCHITECTURE.md): the context a run is handed is billed to the grant, not
//! to the program's heap, so a context of the default policy's `max_context_bytes` runs
//! sandboxed under that policy's memory limits with the whole heap left to work in; the program's
//! own allocations stay bounded by `heap_bytes`; and a context that outgrows its grant in memory
//! ends `memory_exceeded` before the program starts. Its time is billed to the grant too: the
//! program's deadline, CPU limit and step budget start once the data is in, so the default
//! policy's one second is the program's, however long a context of `max_context_bytes` takes to
//! import (a debug build imports 16 MiB far slower than a release one), and the import's
//! allowance is never the program's.
//!
//! Every run here is a real, hardened runner under the shipped default policy, its clock included,
//! except where a test is about the program's memory only ([`memory_only`]): there a debug
//! build's evaluation of 60 MB of vectors may outlast the program's one second on a loaded
//! machine, so that program gets a longer clock (which says nothing about the import).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::codec::encoded_len;
use ptc_shared::value::Map;
use ptc_shared::{FailReason, Limits, Step, Value};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, RunRequest};
use ptc_supervisor::policy::load_dir;
use std::sync::Arc;

/// The shipped policies with no warm pool; `edit` may change the limits.
fn engine_with(edit: impl Fn(&mut Limits)) -> Engine {
    let mut policies = load_dir(&shipped_policies()).unwrap();
    for p in policies.values_mut() {
        p.warm = 0;
        edit(&mut p.limits);
    }
    Engine::new(EngineConfig::new(real_runner(), policies)).unwrap()
}

/// `{"rows" [{"id" i "cat" "c<i%17>" "amount" x "tags" ["t<i%5>" "x"]} ...]}`, as from JSON.
fn rows(n: i64) -> Value {
    let row = |i: i64| {
        let mut m = Map::new();
        m.insert(Value::string("id"), Value::Int(i));
        m.insert(Value::string("cat"), Value::string(format!("c{}", i % 17)));
        m.insert(Value::string("amount"), Value::Float(amount(i)));
        let tags = vec![Value::string(format!("t{}", i % 5)), Value::string("x")];
        m.insert(Value::string("tags"), Value::Vector(tags));
        Value::Map(Box::new(m))
    };
    let mut ctx = Map::new();
    ctx.insert(
        Value::string("rows"),
        Value::Vector((0..n).map(row).collect()),
    );
    Value::Map(Box::new(ctx))
}

fn amount(i: i64) -> f64 {
    (i % 1000) as f64 * 0.5 + 0.25
}

/// The most rows whose context still fits `max` encoded bytes (and comes within 1 % of it).
fn rows_filling(max: u64) -> (i64, Value) {
    let sample = encoded_len(&rows(10_000)).unwrap();
    let mut n = i64::try_from(max * 10_000 / sample).unwrap();
    loop {
        let ctx = rows(n);
        let len = encoded_len(&ctx).unwrap();
        if len <= max {
            assert!(len * 100 >= max * 99, "{len} of {max}");
            return (n, ctx);
        }
        n -= n / 200;
    }
}

/// The default policy with a longer program clock, for tests about memory alone.
fn memory_only(l: &mut Limits) {
    l.timeout_ms = 60_000;
    l.cpu_ms = 60_000;
}

async fn run(engine: &Engine, program: &str, context: Value) -> Step {
    let req = RunRequest {
        program: program.into(),
        context: context.into(),
        ..RunRequest::default()
    };
    engine.execute(req, Arc::new(NoTools)).await
}

#[tokio::test]
async fn a_context_of_max_context_bytes_fits_the_default_policys_memory() {
    // Memory alone: a debug build imports 16 MiB more slowly than the default import allowance
    // on a loaded host (17 s against 16 s measured), so the clock is lifted.
    let engine = engine_with(memory_only);
    let defaults = Limits::default();
    let (n, ctx) = rows_filling(defaults.max_context_bytes);

    let step = run(&engine, "(count data/rows)", ctx.clone()).await;
    assert_eq!(step.return_value, Some(Value::Int(n)), "{:?}", step.fail);
    // The program's peak is counted above the granted data: counting allocates next to nothing.
    assert!(
        step.usage.memory_bytes < 1 << 20,
        "{}",
        step.usage.memory_bytes
    );

    // The aggregation reads the first 20,000 of the imported rows: the whole 230,000 take a debug
    // build's interpreter about the program's one second on a loaded machine (that is evaluation
    // speed, measured in release in BENCHMARKS.md, not what this test is about).
    let program = "(->> data/rows (take 20000) (group-by :cat) (map (fn [[k v]] [k (sum-by :amount v)])) (sort-by second >))";
    let step = run(&engine, program, ctx).await;
    let mut sums: Vec<(String, f64)> = (0..17).map(|c| (format!("c{c}"), 0.0)).collect();
    for i in 0..20_000 {
        sums[usize::try_from(i % 17).unwrap()].1 += amount(i);
    }
    // `sort-by` is stable: equal sums keep the order of first appearance (c0, c1, ...).
    sums.sort_by(|a, b| b.1.total_cmp(&a.1));
    let expected: Vec<Value> = sums
        .into_iter()
        .map(|(k, s)| Value::List(vec![Value::string(k), Value::Float(s)]))
        .collect();
    assert_eq!(
        step.return_value,
        Some(Value::List(expected)),
        "{:?}",
        step.fail
    );
}

/// A run whose signature declares no inputs (a mission's usual `{count :int}`) leaves its
/// context as it is, so it imports it as an unsigned run does, from its encoding: a context of
/// `max_context_bytes` fits the default policy's grant there too (checked as a tree it did not:
/// rows take ~17 times their encoding that way), and the result is still checked.
#[tokio::test]
async fn a_run_signed_on_its_result_only_takes_a_context_of_max_context_bytes() {
    let engine = engine_with(memory_only);
    let (n, ctx) = rows_filling(Limits::default().max_context_bytes);
    let signed = |signature: &str| RunRequest {
        program: "(count data/rows)".into(),
        context: ctx.clone().into(),
        signature: Some(signature.into()),
        ..RunRequest::default()
    };
    let step = engine
        .execute(signed("() -> :int"), Arc::new(NoTools))
        .await;
    assert_eq!(step.return_value, Some(Value::Int(n)), "{:?}", step.fail);
    assert_eq!(step.signature.as_deref(), Some("() -> :int"));
    let step = engine.execute(signed(":string"), Arc::new(NoTools)).await;
    assert_eq!(step.reason(), Some(FailReason::ValidationError), "{step:?}");
}

/// A run whose signature declares inputs checks its context in its encoding, row by row
/// (`Signature::validate_input_encoded`), and imports it from there: a context of
/// `max_context_bytes` fits the default policy's grant whether the check leaves it as it is or
/// coerces a row (which writes a checked copy of the encoding). Checked as a tree, 8 MiB of
/// rows outgrew the grant.
#[tokio::test]
async fn a_run_with_signed_inputs_takes_a_context_of_max_context_bytes() {
    let engine = engine_with(memory_only);
    let (n, mut ctx) = rows_filling(Limits::default().max_context_bytes);
    let signature = "(rows [{id :int, cat :string, amount :float}]) -> :int";
    let signed = |program: &str, signature: &str, ctx: &Value| {
        let req = RunRequest {
            program: program.into(),
            context: ctx.into(),
            signature: Some(signature.into()),
            ..RunRequest::default()
        };
        engine.execute(req, Arc::new(NoTools))
    };
    let step = signed("(count data/rows)", signature, &ctx).await;
    assert_eq!(step.return_value, Some(Value::Int(n)), "{:?}", step.fail);
    assert!(step.warnings.is_empty(), "{:?}", step.warnings);

    // One row's id as a string: coerced, so the program sees an integer there.
    let Value::Map(top) = &mut ctx else { panic!() };
    let Some(Value::Vector(rows)) = top.get_mut(&Value::string("rows")) else {
        panic!()
    };
    let Value::Map(row) = &mut rows[1] else {
        panic!()
    };
    row.insert(Value::string("id"), Value::string("1"));
    let program = r#"(+ (count data/rows) (get-in data/rows [1 "id"]))"#;
    let step = signed(program, signature, &ctx).await;
    assert_eq!(
        step.return_value,
        Some(Value::Int(n + 1)),
        "{:?}",
        step.fail
    );
    assert_eq!(step.warnings.len(), 1, "{:?}", step.warnings);
    assert!(
        step.warnings[0].starts_with("rows[1].id"),
        "{:?}",
        step.warnings
    );

    // Every row wrong: a validation error, its list capped, not the grant.
    let step = signed("(count data/rows)", "(rows [{id :string}]) -> :int", &ctx).await;
    assert_eq!(step.reason(), Some(FailReason::ValidationError), "{step:?}");
    // The rows where a scalar is declared: a validation error naming the kind, not the grant.
    let step = signed("(count data/rows)", "(rows :int) -> :int", &ctx).await;
    assert_eq!(step.reason(), Some(FailReason::ValidationError), "{step:?}");
    let message = &step.fail.as_ref().unwrap().message;
    assert!(
        message.contains("rows: expected int, got vector"),
        "{message}"
    );
}

#[tokio::test]
async fn the_program_still_has_only_its_heap_beside_a_large_context() {
    let engine = engine_with(memory_only);
    let (n, ctx) = rows_filling(4 << 20);
    // Four vectors of 900,000 integers: about 60 MB, over the default 48 MiB heap budget.
    let program = "(let [v #(vec (range 900000)) a (v) b (v) c (v) d (v)] [(count data/rows) (+ (count a) (count b) (count c) (count d))])";
    let step = run(&engine, program, ctx.clone()).await;
    assert_eq!(step.reason(), Some(FailReason::MemoryExceeded), "{step:?}");
    let step = run(
        &engine,
        "[(count data/rows) (count (vec (range 400000)))]",
        ctx,
    )
    .await;
    let expected = Value::Vector(vec![Value::Int(n), Value::Int(400_000)]);
    assert_eq!(step.return_value, Some(expected), "{:?}", step.fail);
}

#[tokio::test]
async fn a_context_that_outgrows_its_grant_ends_memory_exceeded_before_the_program() {
    // 1 MiB of one-element vectors: ~4 bytes each encoded, ~120 bytes each in memory, far over
    // the grant of 8 × 1 MiB.
    // The clock is lifted: a debug build's import on a loaded host outlasted the allowance
    // (2.1 s) before the grant was outgrown.
    let engine = engine_with(|l| {
        l.max_context_bytes = 1 << 20;
        memory_only(l);
    });
    let ctx = |n: i64| {
        let items = (0..n).map(|i| Value::Vector(vec![Value::Int(i % 100)]));
        let mut m = Map::new();
        m.insert(Value::string("xs"), Value::Vector(items.collect()));
        Value::Map(Box::new(m))
    };
    let big = ctx(250_000);
    assert!(encoded_len(&big).unwrap() <= 1 << 20);
    let step = run(&engine, "(count data/xs)", big).await;
    assert_eq!(step.reason(), Some(FailReason::MemoryExceeded), "{step:?}");
    // It names the grant, not the program's heap: the program never started.
    assert_eq!(
        limit_of(&step),
        Some(Value::string("grant_bytes")),
        "{step:?}"
    );
    let fail = step.fail.as_ref().unwrap();
    assert!(fail.message.contains("8388608"), "{}", fail.message);
    assert_eq!(
        fail.details.get_key(&Value::string("grant_bytes")),
        Some(&Value::Int(8 << 20))
    );
    // The same shape, a tenth of it, fits.
    let step = run(&engine, "(count data/xs)", ctx(25_000)).await;
    assert_eq!(
        step.return_value,
        Some(Value::Int(25_000)),
        "{:?}",
        step.fail
    );
}

fn limit_of(step: &Step) -> Option<Value> {
    let fail = step.fail.as_ref()?;
    fail.details.get_key(&Value::string("limit")).cloned()
}

#[tokio::test]
async fn an_endless_program_after_a_large_import_ends_at_its_own_deadline() {
    // No step budget, so the wall clock is what ends the loop however fast the host is.
    let engine = engine_with(|l| l.max_steps = u64::MAX);
    let (_, ctx) = rows_filling(4 << 20);
    let step = run(&engine, "(count data/rows) (loop [] (recur))", ctx).await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    assert_eq!(
        limit_of(&step),
        Some(Value::string("timeout_ms")),
        "{step:?}"
    );
}

#[tokio::test]
async fn the_programs_cpu_limit_counts_from_the_end_of_its_import() {
    // A 20 s deadline, so only the CPU limit (1 s) can end the loop: before the import it allows
    // 1 s plus the import's allowance (20 s per MiB of the 16 MiB a context may have); once the
    // data is in, the program's second from there. Had the allowance stayed, the loop would
    // have run to the 20 s deadline. No step budget either: on a fast host ten million steps
    // take less than the CPU second.
    let engine = engine_with(|l| {
        l.timeout_ms = 20_000;
        l.max_steps = u64::MAX;
    });
    let (_, ctx) = rows_filling(4 << 20);
    let step = run(&engine, "(loop [] (recur))", ctx).await;
    assert_eq!(step.reason(), Some(FailReason::Timeout), "{step:?}");
    assert_eq!(limit_of(&step), Some(Value::string("cpu")), "{step:?}");
    let fail = step.fail.unwrap();
    let cpu = fail.details.get_key(&Value::string("cpu_ms"));
    assert!(matches!(cpu, Some(Value::Int(ms)) if *ms >= 900), "{cpu:?}");
}
