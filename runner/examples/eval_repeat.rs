//! A driver for instruction counts (`valgrind --tool=callgrind`): compiles one program and
//! evaluates it N times, optionally over a JSON context. Run it with N and 2N; the difference
//! divided by N is the cost of one evaluation, start-up and import cancelled.
//!
//! Usage: `eval_repeat PROGRAM N [CONTEXT.json]` (the context as the pipelines bench writes it).
//! The context is imported once, from its encoding, as a runner imports a request's context:
//! the import from a `Value` tree (`convert::import`) fills the holes the tree leaves as it is
//! freed and scatters the rows, which made p3 and p5 about 10 % slower than a run.
//! With `PTC_IMPORT_EACH=1` the context is handed over encoded, as a runner receives it, so
//! every evaluation also imports it (what the `aggregate/100k` bench measures).
//!
//! It allocates through the runner's own `#[global_allocator]` (the very `heap.rs` and
//! `alloc.rs` of `ptc-runner`, armed with an unlimited budget: counting and free lists on, as in
//! a runner), so its counts include what the runner process pays per allocation; the
//! criterion benches run on the system allocator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

include!("support/runner_heap.rs");

use ptc_runner::convert::import_encoded;
use ptc_runner::session::{compile, run_compiled};
use ptc_runner::{Limits, RunOptions, ToolFailure, ToolHost};
use ptc_shared::Value;
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::value::EncodedValue;

struct NoTools;
impl ToolHost for NoTools {
    fn call(&mut self, _: &str, _: Value) -> Result<Value, ToolFailure> {
        Err(ToolFailure::NotFound)
    }
}

fn main() {
    alloc::arm(u64::MAX);
    let args: Vec<String> = std::env::args().collect();
    let (src, n) = (&args[1], args[2].parse::<usize>().expect("N"));
    // The context as a run receives it: JSON text read straight into its encoding, then
    // imported from that (the layout of the rows in memory is the runner's, see module header).
    let context = args.get(3).map(|path| {
        let text = std::fs::read(path).expect("context file");
        EncodedValue::from_json_text(&text, usize::MAX).expect("context is JSON")
    });
    let each = std::env::var_os("PTC_IMPORT_EACH").is_some();
    let mut request = RunRequest::default();
    let mut context_value = None;
    match context {
        Some(e) if each => request.context = e,
        Some(e) => context_value = Some(import_encoded(&e).expect("context imports")),
        None => {}
    }
    let opts = RunOptions {
        request,
        context_value,
        limits: Limits {
            timeout_ms: 600_000,
            max_steps: u64::MAX / 2,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    let compiled = compile(src, &opts, &[]).unwrap_or_else(|f| panic!("{f:?}"));
    for _ in 0..n {
        let step = run_compiled(&compiled, &opts, &[], &mut NoTools);
        assert!(step.fail.is_none(), "{:?}", step.fail);
        std::hint::black_box(step);
    }
}
