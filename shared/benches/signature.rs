//! Validation throughput: a 10,000-element list of 5-field maps (target: under 5 ms), as the
//! output check of a run would do it, and as an input check that coerces one field per map.
//! The borrowed API has to copy the value it returns; the `_owned` variants do not.
#![allow(clippy::unwrap_used, missing_docs)]

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ptc_shared::Value;
use ptc_shared::signature::{Mode, Signature, validate};
use std::hint::black_box;

fn rows(n: usize, score: impl Fn(usize) -> Value) -> Value {
    let rows = (0..n)
        .map(|i| {
            let i64_i = i64::try_from(i).unwrap();
            let mut m = ptc_shared::value::Map::new();
            m.insert(Value::keyword("id"), Value::Int(i64_i));
            m.insert(Value::keyword("name"), Value::string(format!("user {i}")));
            m.insert(
                Value::keyword("email"),
                Value::string(format!("u{i}@example.com")),
            );
            m.insert(Value::keyword("active"), Value::Bool(i % 2 == 0));
            m.insert(Value::keyword("score"), score(i));
            Value::Map(Box::new(m))
        })
        .collect();
    Value::Vector(rows)
}

fn bench(c: &mut Criterion) {
    let sig =
        Signature::parse("[{id :int, name :string, email :string?, active :bool, score :float}]")
            .unwrap();
    #[allow(clippy::cast_precision_loss)]
    let clean = rows(10_000, |i| Value::Float(i as f64 / 3.0));
    assert!(sig.validate_output(&clean, Mode::Enabled).is_ok());
    let schema = sig.output().clone();
    c.bench_function("validate (errors only) 10k x 5-field maps", |b| {
        b.iter(|| assert!(validate(black_box(&schema), black_box(&clean)).is_empty()))
    });
    c.bench_function("clone 10k x 5-field maps", |b| {
        b.iter(|| black_box(&clean).clone())
    });
    c.bench_function(
        "validate_output (borrowed: includes the clone) 10k x 5-field maps",
        |b| {
            b.iter(|| {
                sig.validate_output(black_box(&clean), Mode::Enabled)
                    .unwrap()
            })
        },
    );
    c.bench_function("validate_output_owned 10k x 5-field maps", |b| {
        b.iter_batched(
            || clean.clone(),
            |v| sig.validate_output_owned(v, Mode::Enabled).unwrap(),
            BatchSize::LargeInput,
        )
    });

    let input = Signature::parse(
        "(rows [{id :int, name :string, email :string?, active :bool, score :float}]) -> :any",
    )
    .unwrap();
    let mut ctx = ptc_shared::value::Map::new();
    ctx.insert(
        Value::keyword("rows"),
        rows(10_000, |i| Value::string(format!("{i}.5"))),
    );
    let ctx = Value::Map(Box::new(ctx));
    assert_eq!(
        input
            .validate_input(&ctx, Mode::Enabled)
            .unwrap()
            .warnings
            .len(),
        10_000
    );
    c.bench_function(
        "validate_input_owned 10k x 5-field maps, 10k coercions",
        |b| {
            b.iter_batched(
                || ctx.clone(),
                |v| input.validate_input_owned(v, Mode::Enabled).unwrap(),
                BatchSize::LargeInput,
            )
        },
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
