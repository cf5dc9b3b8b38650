//! One execution, start to finish: read → analyze → evaluate → build the Step.
//!
//! Invariants: on failure the Step's memory is the input memory, unchanged; only plain data
//! persists in memory (a `defn`'d function is reported in `warnings`, since functions cannot
//! leave the process); the result is converted to plain data and size-checked here.

use crate::analyze::analyze_program;
use crate::api::{RunOptions, ToolHost};
use crate::convert::{from_shared, is_data, to_shared};
use crate::error::{EvalError, Limit};
use crate::eval::Interp;
use crate::reader::read_all;
use ptc_shared::value::Map as SMap;
use ptc_shared::{Fail, FailReason, Step, Value as S};
use std::rc::Rc;
use std::time::Instant;

/// Runs `source` and returns its Step (success or failure).
pub fn execute(
    source: &str,
    opts: &RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Step {
    let started = Instant::now();
    let span = tracing::debug_span!("ptc_run", bytes = source.len());
    let _enter = span.enter();
    let mut step = match run_inner(source, opts, tool_names, host, started) {
        Ok(step) => step,
        Err(fail) => failed_step(opts, fail),
    };
    step.usage.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::debug!(
        outcome = step.reason().map_or("ok", FailReason::as_str),
        "run finished"
    );
    step
}

fn failed_step(opts: &RunOptions, fail: Fail) -> Step {
    let mut step = Step::failed(fail);
    step.memory = memory_or_empty(&opts.memory);
    step.memory_delta = S::Map(SMap::new());
    step.history = opts.history.clone();
    step
}

fn memory_or_empty(m: &S) -> S {
    match m {
        S::Map(_) => m.clone(),
        _ => S::Map(SMap::new()),
    }
}

/// The name a memory key stands for: keywords and strings alike.
fn memory_name(k: &S) -> Option<&str> {
    match k {
        S::Keyword(s) | S::Str(s) => Some(s),
        _ => None,
    }
}

fn run_inner(
    source: &str,
    opts: &RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
    started: Instant,
) -> Result<Step, Fail> {
    let limits = opts.limits;
    let forms = read_all(source, limits.max_program_bytes, limits.max_nesting)
        .map_err(|e| Fail::new(FailReason::ParseError, e.to_string()))?;
    let input_memory: Vec<(Rc<str>, crate::value::Value)> = match &opts.memory {
        S::Map(m) => m
            .iter()
            .filter_map(|(k, v)| memory_name(k).map(|n| (Rc::from(n), from_shared(v))))
            .collect(),
        _ => Vec::new(),
    };
    let program = analyze_program(
        &forms,
        input_memory.iter().map(|(n, _)| n.clone()),
        tool_names,
    )
    .map_err(|e| Fail::new(FailReason::AnalysisError, e.to_string()))?;
    let mut interp = Interp::new(host, tool_names, limits);
    interp.started = started;
    interp.context = from_shared(&opts.context);
    interp.history = opts.history.iter().map(from_shared).collect();
    interp.globals.extend(input_memory.iter().cloned());
    let outcome = interp.run_program(&program.forms, program.frame_size);
    // A finite lazy seq in the result leaves as a list (an infinite one hits a limit here).
    let outcome = match outcome {
        Ok(v) | Err(EvalError::Return(v)) => interp.realize_deep(v),
        Err(e) => Err(e),
    };
    let mut step = Step::default();
    step.usage.eval_steps = interp.steps;
    step.usage.tool_calls = u32::try_from(interp.tool_calls.len()).unwrap_or(u32::MAX);
    step.tool_calls = std::mem::take(&mut interp.tool_calls);
    step.prints = interp.take_prints();
    let value = match outcome {
        Ok(v) => v,
        Err(e) => {
            let mut s = failed_step(opts, e.to_fail());
            s.prints = step.prints;
            s.tool_calls = step.tool_calls;
            s.usage = step.usage;
            return Ok(s);
        }
    };
    let result = to_shared(&value).map_err(|m| {
        Fail::new(
            FailReason::EvalError,
            format!("the result is not data: {m}"),
        )
    })?;
    let printed = ptc_shared::value::pr_str(&result).len() as u64;
    if printed > limits.max_result_bytes {
        let e = EvalError::limit(
            Limit::ResultSize,
            format!(
                "result is {printed} bytes, over the limit of {}",
                limits.max_result_bytes
            ),
        );
        return Err(e.to_fail());
    }
    finish_memory(&mut step, &interp, &input_memory);
    step.history = std::iter::once(result.clone())
        .chain(opts.history.iter().cloned())
        .take(3)
        .collect();
    step.return_value = Some(result);
    Ok(step)
}

/// Fills `memory`, `memory_delta` and `warnings` from the user namespace after a successful run.
fn finish_memory(step: &mut Step, interp: &Interp<'_>, input: &[(Rc<str>, crate::value::Value)]) {
    let mut names: Vec<&Rc<str>> = interp.globals.keys().collect();
    names.sort();
    let (mut memory, mut delta) = (SMap::new(), SMap::new());
    for name in names {
        let Some(v) = interp.globals.get(name) else {
            continue;
        };
        if !is_data(v) {
            step.warnings.push(format!("`{name}` is a {}, not data: it is not kept in memory (define it again in the next program)", v.type_name()));
            continue;
        }
        let Ok(sv) = to_shared(v) else { continue };
        let changed = input
            .iter()
            .find(|(n, _)| n == name)
            .is_none_or(|(_, old)| old != v);
        if changed {
            delta.insert(S::Keyword(name.to_string()), sv.clone());
        }
        memory.insert(S::Keyword(name.to_string()), sv);
    }
    step.memory = S::Map(memory);
    step.memory_delta = S::Map(delta);
}
