//! A `lisp_eval` call's context, from JSON to its wire encoding, as `ptc mcp` reads it: before
//! (through a `Value` tree, then encoded) and after (`EncodedValue::deserialize_json`, tokens
//! written as they are read), both in this run, on the bench's 1,000 records
//! (`{"rows": [{"id": i, "v": i}, ...]}`). Two sources: a field of the request line (the fast
//! path's `serde_json::Deserializer`) and a `serde_json` object (rmcp's general path). The sides
//! take turns in blocks, so load changes fall on both; printed: the p50 per conversion and
//! the ratio. Run with `cargo bench -p ptc-shared --bench context_encode`.
#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

use ptc_shared::Value;
use ptc_shared::value::EncodedValue;
use std::hint::black_box;
use std::time::{Duration, Instant};

const BLOCK: usize = 20;
const ROUNDS: usize = 150;
const MAX: usize = 8 << 20;

fn p50(mut xs: Vec<Duration>) -> f64 {
    xs.sort();
    xs[xs.len() / 2].as_secs_f64() * 1e6
}

fn time(f: &mut impl FnMut() -> usize, out: &mut Vec<Duration>) {
    for _ in 0..BLOCK {
        let t = Instant::now();
        black_box(f());
        out.push(t.elapsed());
    }
}

fn compare(name: &str, before: &mut impl FnMut() -> usize, after: &mut impl FnMut() -> usize) {
    assert_eq!(before(), after(), "{name}: the encodings differ in size");
    let (mut b, mut a) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        time(before, &mut b);
        time(after, &mut a);
    }
    let (b, a) = (p50(b), p50(a));
    println!("| {name} | {b:.1} µs | {a:.1} µs | {:.2} |", a / b);
}

fn main() {
    let rows: Vec<serde_json::Value> = (0..1000)
        .map(|i| serde_json::json!({"id": i, "v": i}))
        .collect();
    let context = serde_json::json!({ "rows": rows });
    let text = serde_json::to_vec(&context).unwrap();
    println!(
        "| source | before (Value, then encode) | after (straight to the encoding) | after / before |"
    );
    println!("|---|---|---|---|");
    compare(
        "request-line field (fast path)",
        &mut || {
            let mut de = serde_json::Deserializer::from_slice(&text);
            let v = Value::deserialize_json(&mut de).unwrap();
            EncodedValue::encode(&v).as_bytes().len()
        },
        &mut || {
            let mut de = serde_json::Deserializer::from_slice(&text);
            let e = EncodedValue::deserialize_json(&mut de, MAX).unwrap();
            e.as_bytes().len()
        },
    );
    compare(
        "serde_json object (general path)",
        &mut || {
            let v = Value::from_json(&context).unwrap();
            EncodedValue::encode(&v).as_bytes().len()
        },
        &mut || {
            let e = EncodedValue::deserialize_json(context.clone(), MAX).unwrap();
            e.as_bytes().len()
        },
    );
    // The general path owns its object (rmcp's arguments move in): the clone above is the
    // bench's, so it is timed alone as well.
    compare(
        "(the clone the general path's after side includes)",
        &mut || context.clone().as_object().map_or(0, serde_json::Map::len),
        &mut || context.clone().as_object().map_or(0, serde_json::Map::len),
    );
}
