//! After the conversation: the Step, decided from what the engine itself observed.
//!
//! Order matters in [`classify`]: the kernel's word (signals, CPU time) and our own kill come
//! before anything the runner said. A runner's `Finished` Step is [`accept`]ed only after
//! checking it, and only its success is taken as sent: a failed one is rebuilt with
//! [`Step::failed`] from the request's memory and history, so a compromised runner cannot
//! change what a failure gives back.
//!
//! The engine owns a sandboxed run's clock and tool-call trace: every Step leaving here has
//! `usage.duration_ms` from the engine's clock and `tool_calls` from its [`ToolCalls`].
//!
//! [`ToolCalls`]: ptc_shared::tool_calls::ToolCalls

use super::process::ExitInfo;
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::protocol::{GRANT_PER_CONTEXT_BYTE, RunnerRlimits, exit_code, grant_bytes};
use ptc_shared::{Fail, FailReason, Limits, Step, ToolCallRecord, Value};
use std::time::Instant;

const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;
const SIGSYS: i32 = 31;

/// What the engine keeps of a request for its Step (the rest went to the runner).
#[derive(Debug, Default)]
pub(crate) struct Base {
    pub memory: Value,
    pub history: Vec<Value>,
    pub signature: Option<String>,
}

impl Base {
    pub fn of(req: RunRequest) -> Base {
        Base {
            memory: req.memory,
            history: req.history,
            signature: req.signature,
        }
    }

    /// A failed Step ([`Step::failed`]) with what the engine observed: its clock, the runner's
    /// CPU time and the tool calls made.
    pub fn fail(self, fail: Fail, records: Vec<ToolCallRecord>, start: Instant, cpu: u64) -> Step {
        let mut step = Step::failed(fail, self.memory, self.history);
        step.signature = self.signature;
        observed(&mut step, records, start, cpu);
        step
    }
}

/// Sets what the engine measured, the one place a sandboxed Step's usage is decided.
fn observed(step: &mut Step, records: Vec<ToolCallRecord>, start: Instant, cpu: u64) {
    step.usage.tool_calls = u32::try_from(records.len()).unwrap_or(u32::MAX);
    step.tool_calls = records;
    step.usage.duration_ms = elapsed_ms(start);
    step.usage.cpu_ms = cpu;
}

/// How the conversation ended.
#[derive(Debug)]
pub(crate) enum Ending {
    Finished(Box<Step>),
    Memory(u64),
    /// We killed the runner at the deadline.
    Deadline,
    /// The runner's data is in and its program starts (not an end: the conversation goes on
    /// under the program's deadline; never classified).
    Imported,
    /// The stream ended (or broke) without a final frame.
    Eof,
    /// The runner broke the protocol; we killed it.
    Protocol(String),
}

/// What the engine saw of a runner that ended without `Finished`.
pub(crate) struct Observed {
    pub ending: Ending,
    pub exit: ExitInfo,
    /// The runner had to be killed after its final frame because it did not exit.
    pub killed_late: bool,
}

/// The run's context for classification.
pub(crate) struct Outcome<'a> {
    pub limits: &'a Limits,
    pub base: Base,
    pub records: Vec<ToolCallRecord>,
    pub start: Instant,
    /// The clock before the program started: `timeout_ms` plus the import's allowance.
    pub import_allowance_ms: u64,
    /// When the program's clock started (the runner's `Imported`); `None` if it never did.
    pub started: Option<Started>,
}

/// The runner's `Imported`, as the engine saw it: when, and the runner's CPU time then (the
/// program's CPU limit counts from there; see `ptc_shared::protocol::program_cpu_secs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Started {
    pub at: Instant,
    pub cpu_ms: u64,
}

/// Decides the Step of a runner that ended without `Finished`.
pub(crate) fn classify(o: Observed, run: Outcome<'_>) -> Step {
    let cpu = o.exit.cpu_ms;
    let limits = run.limits;
    let fail = |f: Fail| run.base.fail(f, run.records, run.start, cpu);
    if o.exit.signal == Some(SIGSYS) {
        let f = Fail::new(
            FailReason::SandboxViolation,
            "the program attempted a forbidden operation (killed by seccomp)",
        )
        .with_detail("signal", "SIGSYS");
        return fail(f);
    }
    if matches!(o.ending, Ending::Deadline) {
        let why = "the runner was killed at the deadline";
        return fail(match run.started {
            Some(s) => timeout_fail(limits, s.at, why),
            None => import_fail(limits, run.import_allowance_ms, run.start),
        });
    }
    if let Some(f) = cpu_fail(&o.exit, limits, run.started) {
        return fail(f);
    }
    let peak = match o.ending {
        Ending::Memory(peak) => Some(peak),
        _ if o.exit.code == Some(exit_code::MEMORY) => Some(limits.heap_bytes),
        _ => None,
    };
    if let Some(peak) = peak {
        let mut step = fail(memory_fail(limits, run.started.is_some()));
        step.usage.memory_bytes = peak;
        return step;
    }
    // `Finished` never gets here: it is accepted as it arrives (see `converse`).
    match o.ending {
        Ending::Protocol(msg) => fail(exit_details(crash(msg), &o.exit)),
        _ => {
            let f = crash(describe_exit(&o.exit, o.killed_late));
            fail(exit_details(f, &o.exit))
        }
    }
}

/// A runner the kernel stopped for CPU time: the program's own limit (counted from its
/// `Imported`), or, before that, the import's allowance (RLIMIT_CPU as hardening set it).
fn cpu_fail(exit: &ExitInfo, limits: &Limits, started: Option<Started>) -> Option<Fail> {
    let cpu = exit.cpu_ms;
    let (from, limit_ms) = match started {
        Some(s) => (s.cpu_ms, s.cpu_ms.saturating_add(limits.cpu_ms)),
        None => {
            let secs = RunnerRlimits::for_limits(limits).cpu_soft_secs;
            (0, secs.saturating_mul(1000))
        }
    };
    // RLIMIT_CPU's hard limit (one second past the soft one) ends in SIGKILL.
    let cpu_kill = exit.signal == Some(SIGKILL) && cpu.saturating_add(20) >= limit_ms;
    if exit.signal != Some(SIGXCPU) && !cpu_kill {
        return None;
    }
    let used = i64::try_from(cpu.saturating_sub(from)).unwrap_or(i64::MAX);
    let f = match started {
        Some(_) => Fail::new(
            FailReason::Timeout,
            format!(
                "the program used its CPU time limit of {} ms",
                limits.cpu_ms
            ),
        )
        .with_detail("limit", "cpu"),
        None => Fail::new(
            FailReason::Timeout,
            "the runner used its CPU time limit (with the allowance for importing the context) \
             before the program started",
        )
        .with_detail("limit", "cpu"),
    };
    Some(f.with_detail("cpu_ms", used))
}

/// Memory ran out: the program's heap once it has started (`Imported`); before that, the
/// granted data's grant, which the context's import (and a signature's check of it) took.
fn memory_fail(limits: &Limits, started: bool) -> Fail {
    if started {
        let msg = format!(
            "the program exceeded its heap limit of {} bytes",
            limits.heap_bytes
        );
        return Fail::new(FailReason::MemoryExceeded, msg).with_detail("limit", "heap_bytes");
    }
    let grant = grant_bytes(limits);
    let msg = format!(
        "the context did not fit in memory before the program started: importing it needed \
         more than its grant of {grant} bytes ({GRANT_PER_CONTEXT_BYTE} per byte of \
         max_context_bytes)"
    );
    Fail::new(FailReason::MemoryExceeded, msg)
        .with_detail("limit", "grant_bytes")
        .with_detail("grant_bytes", i64::try_from(grant).unwrap_or(i64::MAX))
}

/// Adds what the kernel reported (exit code or signal). The runner's stderr after a crash (a
/// panic message, say) goes to the supervisor's log only: its text may quote the host's paths or
/// memory, so the client learns just how many bytes there were (`stderr_bytes`). A runner that
/// failed its *setup* is different: its one line names the hardening step (see `converse`).
fn exit_details(mut f: Fail, exit: &ExitInfo) -> Fail {
    if let Some(code) = exit.code {
        f = f.with_detail("exit_code", i64::from(code));
    }
    if let Some(sig) = exit.signal {
        f = f.with_detail("signal", i64::from(sig));
    }
    if let Some(text) = &exit.stderr {
        tracing::warn!(stderr = %text, message = %f.message, "runner crashed");
        f = f.with_detail(
            "stderr_bytes",
            i64::try_from(text.len()).unwrap_or(i64::MAX),
        );
    }
    f
}

fn describe_exit(exit: &ExitInfo, killed_late: bool) -> String {
    if killed_late {
        return "the runner did not exit after its final frame".to_string();
    }
    match (exit.code, exit.signal) {
        (Some(code), _) => {
            let name = exit_code::describe(code).unwrap_or("unknown");
            format!("the runner exited with code {code} ({name}) without a result")
        }
        (None, Some(sig)) => format!("the runner was killed by signal {sig}"),
        (None, None) => "the runner ended abnormally".to_string(),
    }
}

/// Reasons only the supervisor may report: a runner claiming one is not believed.
fn supervisor_only(r: FailReason) -> bool {
    use FailReason::*;
    matches!(
        r,
        SandboxViolation | RunnerCrashed | Busy | Cancelled | PermissionDenied
    ) || r.is_agent()
}

/// Checks a runner's `Finished` Step and sets what the engine measured.
pub(crate) fn accept(step: Step, run: Outcome<'_>, cpu: u64) -> Step {
    let Outcome {
        limits,
        base,
        records,
        start,
        ..
    } = run;
    if step.return_value.is_some() == step.fail.is_some() {
        let msg = "the runner sent a Step with both or neither of return and fail";
        return base.fail(crash(msg.into()), records, start, cpu);
    }
    let mut step = match step.fail {
        Some(f) if supervisor_only(f.reason) => {
            let msg = format!(
                "the runner reported `{}`, which only the supervisor may report",
                f.reason
            );
            return base.fail(crash(msg), records, start, cpu);
        }
        Some(f) => Step {
            prints: step.prints,
            warnings: step.warnings,
            signature: step.signature.or(base.signature),
            usage: step.usage,
            ..Step::failed(f, base.memory, base.history)
        },
        None => step,
    };
    cap_prints(&mut step.prints, limits.max_prints_bytes);
    observed(&mut step, records, start, cpu);
    step
}

/// Marker appended when the supervisor has to cut prints the runner should have capped.
const PRINTS_CUT: &str = "…[prints truncated by the supervisor]";

/// Enforces the prints budget (with room for the runner's own truncation marker).
fn cap_prints(prints: &mut Vec<String>, max: u64) {
    let budget = usize::try_from(max.saturating_add(256)).unwrap_or(usize::MAX);
    let mut used = 0usize;
    for (i, p) in prints.iter_mut().enumerate() {
        if used.saturating_add(p.len()) > budget {
            let mut cut = budget.saturating_sub(used);
            while cut > 0 && !p.is_char_boundary(cut) {
                cut -= 1;
            }
            p.truncate(cut);
            p.push_str(PRINTS_CUT);
            prints.truncate(i + 1);
            return;
        }
        used += p.len();
    }
}

pub(crate) fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

pub(crate) fn crash(message: String) -> Fail {
    Fail::new(FailReason::RunnerCrashed, message)
}

pub(crate) fn limit_fail(message: String, limit: &str) -> Fail {
    Fail::new(FailReason::LimitExceeded, message).with_detail("limit", limit)
}

/// The program's deadline, counted from `since`: the request's arrival until its program
/// starts (a runner could not be had), then the program's start (`Imported`).
pub(crate) fn timeout_fail(limits: &Limits, since: Instant, why: &str) -> Fail {
    let elapsed = elapsed_ms(since);
    Fail::new(
        FailReason::Timeout,
        format!(
            "execution exceeded its {} ms deadline: {why} after {elapsed} ms",
            limits.timeout_ms
        ),
    )
    .with_detail("limit", "timeout_ms")
    .with_detail("elapsed_ms", i64::try_from(elapsed).unwrap_or(i64::MAX))
}

/// The runner did not say `Imported` by `timeout_ms` plus the import's allowance after the
/// request arrived (waiting for a runner, sending the request, importing its data, reading the
/// program): still the deadline (`limit = timeout_ms`), with the allowance it had beside it.
pub(crate) fn import_fail(limits: &Limits, allowance_ms: u64, start: Instant) -> Fail {
    let elapsed = elapsed_ms(start);
    let msg = format!(
        "execution exceeded its {} ms deadline (plus {allowance_ms} ms for importing the \
         context) before the program started: the runner was killed after {elapsed} ms",
        limits.timeout_ms
    );
    Fail::new(FailReason::Timeout, msg)
        .with_detail("limit", "timeout_ms")
        .with_detail(
            "allowance_ms",
            i64::try_from(allowance_ms).unwrap_or(i64::MAX),
        )
        .with_detail("elapsed_ms", i64::try_from(elapsed).unwrap_or(i64::MAX))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn prints_are_capped_on_a_char_boundary() {
        let mut p = vec!["é".repeat(400), "x".repeat(10)];
        cap_prints(&mut p, 100);
        assert_eq!(p.len(), 1);
        assert!(p[0].ends_with(PRINTS_CUT));
        assert!(p[0].len() <= 356 + PRINTS_CUT.len());
        let mut small = vec!["a".into(), "b".into()];
        cap_prints(&mut small, 100);
        assert_eq!(small, vec!["a".to_string(), "b".to_string()]);
    }

    #[test]
    fn a_failed_runner_step_gives_back_the_request_memory() {
        let mut memory = ptc_shared::value::Map::new();
        memory.insert(Value::Keyword("x".into()), Value::Int(1));
        let base = Base {
            memory: Value::Map(Box::new(memory.clone())),
            history: vec![Value::Int(7)],
            signature: None,
        };
        let claimed = Step {
            memory: Value::Nil,
            ..Step::failed(
                Fail::new(FailReason::EvalError, "e"),
                Value::Nil,
                Vec::new(),
            )
        };
        let run = Outcome {
            limits: &Limits::default(),
            base,
            records: Vec::new(),
            start: Instant::now(),
            import_allowance_ms: 0,
            started: None,
        };
        let step = accept(claimed, run, 3);
        assert_eq!(step.memory, Value::Map(Box::new(memory)));
        assert_eq!(step.history, vec![Value::Int(7)]);
        assert_eq!(step.usage.cpu_ms, 3);
    }

    /// A run whose program has started (its `Imported` came at CPU 0).
    fn outcome(limits: &Limits) -> Outcome<'_> {
        Outcome {
            limits,
            base: Base::default(),
            records: Vec::new(),
            start: Instant::now(),
            import_allowance_ms: 0,
            started: Some(Started {
                at: Instant::now(),
                cpu_ms: 0,
            }),
        }
    }

    fn ended(ending: Ending, code: Option<i32>, signal: Option<i32>, cpu_ms: u64) -> Observed {
        Observed {
            ending,
            exit: ExitInfo {
                code,
                signal,
                cpu_ms,
                stderr: None,
            },
            killed_late: false,
        }
    }

    fn detail(f: &Fail, key: &str) -> Option<Value> {
        match &f.details {
            Value::Map(m) => m.get(&Value::string(key)).cloned(),
            _ => None,
        }
    }

    /// A SIGKILL is the CPU limit's only when the runner used its CPU seconds (within 20 ms);
    /// SIGXCPU always is; a runner that used much CPU and then exited is a crash (mutation
    /// testing: each operator of the `cpu_kill` rule was unchecked).
    #[test]
    fn cpu_limit_endings_are_told_from_crashes() {
        let limits = Limits {
            cpu_ms: 1000,
            ..Limits::default()
        };
        let cases = [
            (None, Some(SIGKILL), 980, FailReason::Timeout),
            (None, Some(SIGKILL), 979, FailReason::RunnerCrashed),
            (None, Some(SIGXCPU), 5, FailReason::Timeout),
            (Some(0), None, 5000, FailReason::RunnerCrashed),
        ];
        for (code, signal, cpu, want) in cases {
            let step = classify(ended(Ending::Eof, code, signal, cpu), outcome(&limits));
            let fail = step.fail.unwrap();
            assert_eq!(fail.reason, want, "{code:?} {signal:?} {cpu}");
            let limit = detail(&fail, "limit");
            if want == FailReason::Timeout {
                assert_eq!(limit, Some(Value::string("cpu")));
                assert_eq!(
                    detail(&fail, "cpu_ms"),
                    Some(Value::Int(i64::try_from(cpu).unwrap()))
                );
            } else {
                assert_eq!(limit, None);
            }
            assert_eq!(step.usage.cpu_ms, cpu);
        }
    }

    /// Memory that ran out before the runner said `Imported` was the grant's (the context's
    /// import), after it the program's heap: each names its own limit and size.
    #[test]
    fn memory_before_the_program_started_names_the_grant() {
        let limits = Limits::default();
        let after = classify(ended(Ending::Memory(9), None, None, 5), outcome(&limits));
        let fail = after.fail.unwrap();
        assert_eq!(fail.reason, FailReason::MemoryExceeded);
        assert_eq!(detail(&fail, "limit"), Some(Value::string("heap_bytes")));
        assert!(fail.message.contains(&limits.heap_bytes.to_string()));
        assert_eq!(after.usage.memory_bytes, 9);

        let before = Outcome {
            started: None,
            ..outcome(&limits)
        };
        let step = classify(ended(Ending::Memory(9), None, None, 5), before);
        let fail = step.fail.unwrap();
        assert_eq!(fail.reason, FailReason::MemoryExceeded);
        assert_eq!(detail(&fail, "limit"), Some(Value::string("grant_bytes")));
        let grant = limits.max_context_bytes * 8;
        assert_eq!(
            detail(&fail, "grant_bytes"),
            Some(Value::Int(i64::try_from(grant).unwrap()))
        );
        assert!(
            fail.message.contains(&grant.to_string()),
            "{}",
            fail.message
        );
        assert_eq!(step.usage.memory_bytes, 9);
    }

    /// A runner's failed Step keeps its prints, warnings, signature and counted usage; only the
    /// engine's own measures (clock, CPU, tool calls) replace what it sent.
    #[test]
    fn a_failed_runner_step_keeps_its_prints_warnings_and_usage() {
        let mut claimed = Step::failed(
            Fail::new(FailReason::EvalError, "e"),
            Value::Nil,
            Vec::new(),
        );
        claimed.prints = vec!["p".into()];
        claimed.warnings = vec!["w".into()];
        claimed.signature = Some("-> :int".into());
        claimed.usage.eval_steps = 42;
        claimed.usage.memory_bytes = 4096;
        let limits = Limits::default();
        let step = accept(claimed, outcome(&limits), 3);
        assert_eq!(step.fail.unwrap().reason, FailReason::EvalError);
        assert_eq!(
            (step.prints, step.warnings),
            (vec!["p".to_string()], vec!["w".to_string()])
        );
        assert_eq!(step.signature.as_deref(), Some("-> :int"));
        assert_eq!((step.usage.eval_steps, step.usage.memory_bytes), (42, 4096));
        assert_eq!(step.usage.cpu_ms, 3);
    }

    /// The supervisor's cap is `max_prints_bytes + 256` bytes exactly, counted over all prints,
    /// and cuts back to a char boundary (mutation testing: each operator of the loop survived the
    /// one loose test above).
    #[test]
    fn prints_are_capped_at_exactly_the_budget() {
        let exact = vec!["a".repeat(100), "b".repeat(156)];
        let mut p = exact.clone();
        cap_prints(&mut p, 0);
        assert_eq!(p, exact, "256 bytes fit a budget of 0 + 256");

        let mut p = vec![
            "a".repeat(100),
            "b".repeat(100),
            "c".repeat(100),
            "d".into(),
        ];
        cap_prints(&mut p, 0);
        let cut = format!("{}{PRINTS_CUT}", "c".repeat(56));
        assert_eq!(p, vec!["a".repeat(100), "b".repeat(100), cut]);

        // Byte 256 falls inside a two-byte "é": the cut steps back one byte, not to zero.
        let mut p = vec![format!("a{}", "é".repeat(200))];
        cap_prints(&mut p, 0);
        assert_eq!(p, vec![format!("a{}{PRINTS_CUT}", "é".repeat(127))]);
    }
}
