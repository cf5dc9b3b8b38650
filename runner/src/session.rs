//! One execution, start to finish: read → analyze → evaluate → build the Step.
//!
//! Invariants: on failure the Step is [`Step::failed`] (the input memory and history,
//! unchanged), keeping what ran (prints, usage); only plain data persists in memory (a `defn`'d function is reported in `warnings`, since functions cannot
//! leave the process); the result is converted to plain data and size-checked here. The
//! program's clock (deadline, steps) starts once its granted data is in (`ToolHost::imported`),
//! not before: importing the context is not its time (docs/ARCHITECTURE.md, "Granted data").

use crate::analyze::analyze_program;
use crate::api::{RunOptions, ToolHost};
use crate::convert::{from_shared, import, import_encoded, is_data, to_shared};
use crate::error::{ErrorBody, EvalError, Limit};
use crate::eval::Interp;
use crate::reader::read_all;
use ptc_shared::signature::check;
use ptc_shared::value::Map as SMap;
use ptc_shared::{Fail, FailReason, Step, Value as S};
use std::rc::Rc;
use std::time::Instant;

/// Runs `source` and returns its Step (success or failure).
pub fn execute(
    source: &str,
    opts: &mut RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Step {
    if let Some(previous) = &opts.request.context_signature {
        return match check::chained(previous, opts.request.signature.as_deref()) {
            Ok(text) => execute_signed(source, opts, &text, tool_names, host),
            Err(f) => failed_step(opts, f),
        };
    }
    match opts.request.signature.clone() {
        Some(text) => execute_signed(source, opts, &text, tool_names, host),
        None => execute_unsigned(source, opts, tool_names, host),
    }
}

/// A run with a signature: the context is checked and coerced first, the result after.
fn execute_signed(
    source: &str,
    opts: &mut RunOptions,
    text: &str,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Step {
    let mode = opts.request.validation;
    let with_sig = |mut step: Step| {
        step.signature = Some(text.to_string());
        step
    };
    let sig = match check::parse(text, "run") {
        Ok(s) => s,
        Err(f) => return with_sig(failed_step(opts, f)),
    };
    let (mut checked, mut warnings) = if sig.context_passes_unchanged(mode, map_or_nil(opts)) {
        (pass_context(opts), Vec::new())
    } else if opts.context_value.is_none() {
        match check_encoded(&sig, opts, mode) {
            Ok(checked) => checked,
            Err(f) => return with_sig(failed_step(opts, f)),
        }
    } else {
        let context = match shared_context(opts) {
            Ok(c) => c,
            Err(f) => return with_sig(failed_step(opts, f)),
        };
        let (context, warnings) = match check::context(&sig, context, mode) {
            Ok(c) => c,
            Err(f) => return with_sig(failed_step(opts, f)),
        };
        let mut checked = clone_opts(opts);
        checked.context_value = Some(import(context));
        (checked, warnings)
    };
    checked.request.signature = None;
    let mut step = with_sig(execute_unsigned(source, &mut checked, tool_names, host));
    if let Some(v) = step.return_value.take() {
        match check::result(&sig, v, mode) {
            Ok((v, w)) => {
                step.return_value = Some(v);
                warnings.extend(w);
            }
            Err(f) => {
                let mut failed = with_sig(failed_step(opts, f));
                failed.prints = std::mem::take(&mut step.prints);
                failed.usage = std::mem::take(&mut step.usage);
                return failed;
            }
        }
    }
    warnings.append(&mut step.warnings);
    step.warnings = warnings;
    step
}

/// Whether the run's context is a map or nil (what a signature without inputs accepts as is).
fn map_or_nil(opts: &RunOptions) -> bool {
    match &opts.context_value {
        Some(v) => matches!(v, crate::value::Value::Map(_) | crate::value::Value::Nil),
        None => opts.request.context.is_map() || opts.request.context.is_nil(),
    }
}

/// The options of the checked run for a context its signature leaves as it is: the context is
/// moved over untouched, to be imported as an unsigned run's is (from its encoding, rows in
/// order, no tree: a tree of rows takes ~17 times the encoding, more than the grant allows).
fn pass_context(opts: &mut RunOptions) -> RunOptions {
    let context = std::mem::take(&mut opts.request.context);
    let value = opts.context_value.take();
    let mut checked = clone_opts(opts);
    checked.request.context = context;
    checked.context_value = value;
    checked
}

/// The options of the checked run for a context still in its encoding: checked row by row in
/// it (no tree), then imported from the checked encoding as an unsigned run's is.
fn check_encoded(
    sig: &ptc_shared::signature::Signature,
    opts: &mut RunOptions,
    mode: ptc_shared::signature::Mode,
) -> Result<(RunOptions, Vec<String>), Fail> {
    let (new, warnings) = check::context_encoded(sig, &opts.request.context, mode)?;
    let mut checked = pass_context(opts);
    if let Some(new) = new {
        checked.request.context = new;
    }
    Ok((checked, warnings))
}

/// Takes the context out of `opts` as plain data, for the signature's check and coercion.
fn shared_context(opts: &mut RunOptions) -> Result<S, Fail> {
    match opts.context_value.take() {
        Some(v) => to_shared(&v).map_err(|m| {
            Fail::new(
                FailReason::InvalidRequest,
                format!("context is not data: {m}"),
            )
        }),
        // Taken, so that the options cloned for the checked run do not copy it.
        None => std::mem::take(&mut opts.request.context)
            .to_value()
            .map_err(|e| unreadable(&e)),
    }
}

/// Takes the context out of `opts` in interpreter values (moved, or decoded straight from its
/// encoding).
fn take_context(opts: &mut RunOptions) -> Result<crate::value::Value, Fail> {
    if let Some(v) = opts.context_value.take() {
        return Ok(v);
    }
    let encoded = std::mem::take(&mut opts.request.context);
    import_encoded(&encoded).map_err(|e| unreadable(&e))
}

/// A context whose encoding does not decode (it was checked where it was built or received).
fn unreadable(e: &dyn std::fmt::Display) -> Fail {
    Fail::new(
        FailReason::InvalidRequest,
        format!("context cannot be read: {e}"),
    )
}

/// The options of `opts` without its tools (closures are neither cloneable nor needed here)
/// and without a context signature (already chained).
fn clone_opts(opts: &RunOptions) -> RunOptions {
    let mut request = opts.request.clone();
    request.context_signature = None;
    RunOptions {
        request,
        tools: Vec::new(),
        limits: opts.limits,
        context_value: None,
    }
}

fn execute_unsigned(
    source: &str,
    opts: &mut RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Step {
    let span = tracing::debug_span!("ptc_run", bytes = source.len());
    let _enter = span.enter();
    let step = match run_inner(source, opts, tool_names, host) {
        Ok(step) => step,
        Err(fail) => failed_step(opts, fail),
    };
    tracing::debug!(
        outcome = step.reason().map_or("ok", FailReason::as_str),
        "run finished"
    );
    step
}

fn failed_step(opts: &RunOptions, fail: Fail) -> Step {
    Step::failed(
        fail,
        opts.request.memory.clone(),
        opts.request.history.clone(),
    )
}

/// The name a memory key stands for: keywords and strings alike.
fn memory_name(k: &S) -> Option<&str> {
    match k {
        S::Keyword(s) | S::Str(s) => Some(s),
        _ => None,
    }
}

/// A program read and analyzed against a run's memory names and tools, ready to evaluate.
#[derive(Debug)]
pub struct Compiled {
    program: crate::analyze::Program,
    memory: Vec<(Rc<str>, crate::value::Value)>,
}

/// Reads and analyzes `source` (nothing runs): parse and analysis errors come out here.
pub fn compile(source: &str, opts: &RunOptions, tool_names: &[String]) -> Result<Compiled, Fail> {
    let limits = opts.limits;
    let forms = read_all(source, limits.max_program_bytes, limits.max_nesting)
        .map_err(|e| Fail::new(FailReason::ParseError, e.to_string()))?;
    let memory: Vec<(Rc<str>, crate::value::Value)> = match &opts.request.memory {
        S::Map(m) => m
            .iter()
            .filter_map(|(k, v)| memory_name(k).map(|n| (Rc::from(n), from_shared(v))))
            .collect(),
        _ => Vec::new(),
    };
    let program = analyze_program(&forms, memory.iter().map(|(n, _)| n.clone()), tool_names)
        .map_err(|e| {
            let reason = if e.unknown_tool {
                FailReason::ToolNotFound
            } else {
                FailReason::AnalysisError
            };
            Fail::new(reason, e.to_string())
        })?;
    Ok(Compiled { program, memory })
}

/// Evaluates a compiled program with the run's context (copied: `opts` can be run again),
/// memory and tools.
pub fn run_compiled(
    compiled: &Compiled,
    opts: &RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Step {
    let context = match &opts.context_value {
        Some(v) => Ok(v.clone()),
        None => import_encoded(&opts.request.context).map_err(|e| unreadable(&e)),
    };
    match context.and_then(|c| evaluate(compiled, opts, c, tool_names, host)) {
        Ok(step) => step,
        Err(fail) => failed_step(opts, fail),
    }
}

fn run_inner(
    source: &str,
    opts: &mut RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Result<Step, Fail> {
    let compiled = compile(source, opts, tool_names)?;
    let context = take_context(opts)?;
    evaluate(&compiled, opts, context, tool_names, host)
}

fn evaluate(
    compiled: &Compiled,
    opts: &RunOptions,
    context: crate::value::Value,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Result<Step, Fail> {
    let limits = opts.limits;
    let input_memory = &compiled.memory;
    let program = &compiled.program;
    let mut interp = Interp::new(host, tool_names, limits);
    interp.context = context;
    interp.history = opts.request.history.iter().map(from_shared).collect();
    interp.globals.extend(input_memory.iter().cloned());
    interp.host.imported()?;
    // The program's clock starts here, not before: importing granted data is not its time.
    interp.started = Instant::now();
    let outcome = interp.run_program(&program.forms, program.frame_size);
    // A finite lazy seq in the result leaves as a list (an infinite one hits a limit here).
    let mut returned = false;
    let outcome = match outcome {
        Ok(v) => interp.realize_deep(v),
        Err(EvalError::Body(b)) => match *b {
            ErrorBody::Return(v) => {
                returned = true;
                interp.realize_deep(v)
            }
            other => Err(other.into()),
        },
        Err(e) => Err(e),
    };
    interp.host.done_with(std::mem::take(&mut interp.context));
    let mut step = Step::default();
    step.usage.eval_steps = interp.steps;
    step.prints = interp.take_prints();
    let value = match outcome {
        Ok(v) => v,
        Err(e) => {
            let mut s = failed_step(opts, e.to_fail());
            s.prints = step.prints;
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
    // Checked without printing past the limit: a huge result must not cost a huge string.
    let max = usize::try_from(limits.max_result_bytes).unwrap_or(usize::MAX);
    if ptc_shared::value::print::pr_str_exceeds(&result, max) {
        let message = format!(
            "result is over the limit of {} bytes (as printed)",
            limits.max_result_bytes
        );
        return Err(EvalError::limit(Limit::ResultSize, message).to_fail());
    }
    finish_memory(&mut step, &interp, input_memory);
    step.history = std::iter::once(result.clone())
        .chain(opts.request.history.iter().cloned())
        .take(3)
        .collect();
    step.return_value = Some(result);
    step.returned = returned;
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
        let sv = match to_shared(v) {
            Ok(sv) => sv,
            Err(why) => {
                step.warnings
                    .push(format!("`{name}` is not kept in memory: {why}"));
                continue;
            }
        };
        let changed = input
            .iter()
            .find(|(n, _)| n == name)
            .is_none_or(|(_, old)| old != v);
        if changed {
            delta.insert(S::Keyword(name.to_string()), sv.clone());
        }
        memory.insert(S::Keyword(name.to_string()), sv);
    }
    step.memory = S::Map(Box::new(memory));
    step.memory_delta = S::Map(Box::new(delta));
}
