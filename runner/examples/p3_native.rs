//! The pipelines bench's p3 (join by id) written in Rust over the interpreter's own values: the
//! same imported context, the same maps (`MapImpl::insert`, `get`), the same hinted keyword reads
//! (`get_keyword_hinted`), no walker. What it costs is the floor for any execution model that
//! keeps today's values: the rest of the walker's cost is the walker's own (BENCHMARKS.md, issue
//! 15, session 32).
//!
//! It is fused as a compiler would fuse it: no `keep` sequence, no intermediate record, `fnil +`
//! written out. Usage: `p3_native N CONTEXT.json` (the context `pipelines_baseline.py` writes);
//! it runs p3 N times, then prints its answer, to compare with p3's through `ptc run` (the same
//! five names and totals at this stop). Counted as `eval_repeat` is: N and 2N under callgrind
//! (toggle `p3_native::p3_native*`), or CPU time. It allocates through the runner's own
//! allocator, as `eval_repeat` does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

include!("support/runner_heap.rs");
include!("support/p3_parts.rs");

use ptc_runner::value::MapImpl;

fn key_of<'a>(m: &'a Value, k: &Value) -> &'a Value {
    match m {
        Value::Map(map) => map.get(k).unwrap_or(&Value::Nil),
        _ => &Value::Nil,
    }
}

/// p3 without the walker: the same maps, lookups and updates, called from Rust.
#[inline(never)]
fn p3_native(ctx: &Value) -> Vec<(Value, Value)> {
    let (k_customers, k_orders, k_id, k_cid, k_tier, k_name, k_total) = (
        kw("customers"),
        kw("orders"),
        kw("id"),
        kw("customer_id"),
        kw("tier"),
        kw("name"),
        kw("total"),
    );
    let mut by_id = Value::map(MapImpl::Small(Default::default()));
    if let Value::Vector(cs) = field(ctx, &k_customers) {
        for c in cs.iter() {
            if let Value::Map(m) = &mut by_id {
                m.make_mut().insert(field(c, &k_id).clone(), c.clone());
            }
        }
    }
    let gold = Value::str("gold");
    let mut acc = Value::map(MapImpl::Small(Default::default()));
    if let Value::Vector(os) = field(ctx, &k_orders) {
        for o in os.iter() {
            let c = key_of(&by_id, field(o, &k_cid)).clone();
            if *field(&c, &k_tier) == gold {
                let name = field(&c, &k_name).clone();
                let old = key_of(&acc, &name).clone();
                let t = field(o, &k_total);
                let new = match (old, t) {
                    (Value::Nil, Value::Float(t)) => Value::Float(*t),
                    (Value::Float(a), Value::Float(t)) => Value::Float(a + t),
                    (Value::Int(a), Value::Float(t)) => Value::Float(a as f64 + t),
                    (_, t) => t.clone(),
                };
                if let Value::Map(m) = &mut acc {
                    m.make_mut().insert(name, new);
                }
            }
        }
    }
    top_five(&acc)
}

fn main() {
    alloc::arm(u64::MAX);
    let args: Vec<String> = std::env::args().collect();
    let n = args[1].parse::<usize>().expect("N");
    let ctx = load_context(&args[2]);
    for _ in 0..n {
        std::hint::black_box(p3_native(&ctx));
    }
    println!("{:?}", p3_native(&ctx));
}
