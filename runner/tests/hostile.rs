//! Programs written to crash the interpreter get their typed outcome in-process, where a stack
//! overflow or a panic would take the host down with them. The same cases run sandboxed in
//! supervisor/tests/engine_hostile.rs.

#[path = "support/hostile.rs"]
mod hostile;

use hostile::Outcome;
use ptc_runner::{RunOptions, run};
use ptc_shared::{Limits, Value};

fn outcome(src: &str) -> Outcome {
    let opts = RunOptions {
        // Debug builds are slow; the cases are about depth, not time.
        limits: Limits {
            timeout_ms: 60_000,
            cpu_ms: 60_000,
            ..Limits::default()
        },
        ..RunOptions::default()
    };
    match run(src, opts) {
        Ok(step) => Outcome::Ok(ptc_shared::value::pr_str(
            &step.return_value.unwrap_or_default(),
        )),
        Err(step) => {
            let f = step
                .fail
                .unwrap_or_else(|| panic!("a failed step without fail"));
            let limit = match f.details.get_key(&Value::string("limit")) {
                Some(Value::Str(s)) => Some(s.clone()),
                _ => None,
            };
            Outcome::Fail(f.reason, limit)
        }
    }
}

#[test]
fn every_hostile_program_gets_its_typed_outcome_in_process() {
    // Runs on a thread with a small stack on purpose: a library user's thread may be one.
    let t = std::thread::Builder::new().stack_size(1 << 20).spawn(|| {
        for (name, src, want) in hostile::cases() {
            eprintln!("case: {name}");
            assert_eq!(outcome(&src), want, "{name}");
        }
    });
    let r = t.map(|h| h.join());
    assert!(matches!(r, Ok(Ok(()))), "a case failed: {r:?}");
}
