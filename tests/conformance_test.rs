//! The conformance suite: every case in `tests/conformance/` run in-process and judged against
//! Clojure's recorded answer (or the PTC expectation written in the case). Cases where we differ
//! from Clojure on purpose are listed in `conformance/overrides.edn` with their `DIV-n` id and
//! our own expectation (see docs/divergences.md).
//!
//! `CONFORMANCE_FILTER=core-arith` runs only ids containing that text; the summary lists every
//! failing case with its program, expected and actual outcome.

use ptc_runner::{RunOptions, Tool, run};
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::{Limits, Step, Value};
use ptc_tests::compare::matches;
use ptc_tests::corpus::{self, Case, Expect};

/// The case's limits. Cases that set none get a generous deadline: the suite runs unoptimized,
/// and only cases about the deadline should ever meet it.
fn limits_of(case: &Case) -> Limits {
    let relaxed = Limits {
        timeout_ms: 20_000,
        cpu_ms: 20_000,
        ..Limits::default()
    };
    match case.limits.to_json() {
        Ok(serde_json::Value::Object(mut o)) => {
            o.entry("timeout_ms")
                .or_insert(serde_json::json!(relaxed.timeout_ms));
            serde_json::from_value(serde_json::Value::Object(o)).unwrap_or(relaxed)
        }
        _ => relaxed,
    }
}

fn tools_of(case: &Case) -> Vec<Tool> {
    let Value::Map(m) = &case.tools else {
        return Vec::new();
    };
    m.iter()
        .map(|(name, behaviour)| {
            let name = match name {
                Value::Str(s) | Value::Keyword(s) => s.clone(),
                other => other.to_string(),
            };
            let behaviour = behaviour.clone();
            Tool::new(name, move |args| match &behaviour {
                Value::Keyword(k) if k == "ptc/echo" => Ok(args),
                Value::Keyword(k) if k == "ptc/error" => Err("boom".to_string()),
                fixed => Ok(fixed.clone()),
            })
        })
        .collect()
}

fn run_case(case: &Case) -> Step {
    let history = match &case.history {
        Value::Vector(h) | Value::List(h) => h.clone(),
        _ => Vec::new(),
    };
    let opts = RunOptions {
        request: RunRequest {
            context: (&case.context).into(),
            memory: case.memory.clone(),
            history,
            ..RunRequest::default()
        },
        tools: tools_of(case),
        limits: limits_of(case),
        context_value: None,
    };
    match run(&case.program, opts) {
        Ok(s) | Err(s) => s,
    }
}

/// Why a case failed, or `None` if it passed.
fn judge(case: &Case, expect: &Expect, step: &Step) -> Option<String> {
    let division = case.has_tag("division");
    let outcome = match (&step.fail, &step.return_value) {
        (Some(f), _) => format!("error {}: {}", f.reason, f.message),
        (None, Some(v)) => format!("value {v}"),
        (None, None) => "value nil".into(),
    };
    let bad = |what: String| Some(format!("{what}; got {outcome}"));
    match expect {
        Expect::Value(v) => {
            let got = step.return_value.clone().unwrap_or_default();
            if step.fail.is_some() || !matches(v, &got, division) {
                return bad(format!("expected value {v}"));
            }
        }
        Expect::Error(reason) => match &step.fail {
            None => return bad(format!("expected an error ({reason})")),
            Some(f) if f.reason.as_str() != reason => {
                return bad(format!("expected reason {reason}"));
            }
            Some(_) => {}
        },
    }
    for (label, want, got) in [
        ("memory", &case.expect_memory, &step.memory),
        ("memory_delta", &case.expect_delta, &step.memory_delta),
    ] {
        if let Some(w) = want
            && !matches(w, got, false)
        {
            return Some(format!("expected {label} {w}; got {got}"));
        }
    }
    if let Some(p) = &case.expect_prints {
        let got = Value::Vector(
            step.prints
                .iter()
                .map(|s| Value::string(s.clone()))
                .collect(),
        );
        if !matches(p, &got, false) {
            return Some(format!("expected prints {p}; got {got}"));
        }
    }
    None
}

#[test]
fn conformance_corpus() {
    let mut cases = corpus::clojure_cases().unwrap_or_else(|e| panic!("reading corpus: {e}"));
    cases.extend(corpus::ptc_cases().unwrap_or_else(|e| panic!("reading ptc corpus: {e}")));
    let filter = std::env::var("CONFORMANCE_FILTER").unwrap_or_default();
    let overrides = corpus::overrides().unwrap_or_else(|e| panic!("reading overrides: {e}"));
    let mut per_file: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    let mut failures = Vec::new();
    for case in cases.iter().filter(|c| c.id.contains(&filter)) {
        let expect = overrides
            .get(&case.id)
            .map(|(_, e)| e)
            .unwrap_or(&case.expect);
        let step = run_case(case);
        let entry = per_file.entry(case.file.clone()).or_default();
        entry.1 += 1;
        match judge(case, expect, &step) {
            None => entry.0 += 1,
            Some(why) => failures.push(format!(
                "{} [{}]\n    program: {}\n    {why}",
                case.id,
                case.file,
                case.program.replace('\n', "\n             ")
            )),
        }
    }
    let (passed, total) = per_file
        .values()
        .fold((0, 0), |(p, t), (a, b)| (p + a, t + b));
    for (file, (p, t)) in &per_file {
        eprintln!("{file:<28} {p:>4}/{t:<4}");
    }
    let show: usize = std::env::var("CONFORMANCE_SHOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    for f in failures.iter().take(show) {
        eprintln!("FAIL {f}");
    }
    eprintln!(
        "conformance: {passed} passed, {} failed ({} overrides)",
        total - passed,
        overrides.len()
    );
    assert!(total > 0, "no conformance case matched the filter");
    assert!(
        failures.is_empty(),
        "{} conformance case(s) failed (see the list above)",
        failures.len()
    );
}
