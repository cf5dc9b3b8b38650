//! Reader + analyzer + evaluator on arbitrary text: any input must end in a Step (success or a
//! typed failure), never a panic, a hang past the limits, or a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptc_runner::{Limits, RunOptions, Tool, run};
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::{FailReason, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let limits = Limits {
        timeout_ms: 200,
        max_steps: 200_000,
        max_iterations: 20_000,
        ..Limits::default()
    };
    let context =
        ptc_runner::edn::parse(r#"{"orders" [{"id" 1 "total" 5.5} {"id" 2 "total" 7}] "n" 3}"#)
            .unwrap_or(Value::Nil);
    let opts = RunOptions {
        request: RunRequest {
            context: (&context).into(),
            ..RunRequest::default()
        },
        limits,
        tools: vec![
            Tool::new("echo", Ok),
            Tool::new("boom", |_| Err("boom".into())),
        ],
        ..RunOptions::default()
    };
    // A panic aborts here (libfuzzer-sys's hook); a Step that says the interpreter itself
    // failed is a bug too, even if something upstream caught it.
    if let Err(step) = run(src, opts) {
        let reason = step.reason();
        assert_ne!(reason, Some(FailReason::RunnerCrashed), "{:?}", step.fail);
    }
});
