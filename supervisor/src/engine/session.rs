//! One execution: the conversation with a runner, the deadline, and the classification of how the
//! runner ended into a Step.
//!
//! The conversation (send `Execute`; answer `ToolCall`s; receive `Finished` or `MemoryExceeded`)
//! runs under `timeout_at(kill_at)`, so a silent runner or a tool that never answers cannot hold
//! the execution past its deadline. Unless it ended with `Finished`, its process is then waited
//! for and reaped, and the Step is decided from what the supervisor observed (signal, exit code,
//! CPU time, its own clock) before the runner's word: see [`classify`].
//!
//! A `Finished` Step is complete when it arrives (the runner only `_exit`s afterwards), so it is
//! accepted at once with the CPU time read exactly from the still-unreaped process, and the exit
//! is left to the zygote or confirmed in the background ([`settle_finished`]): nothing after the final
//! frame can change the Step, and the process teardown is a large share of a warm execution.

use super::pool::{Pool, Warm};
use super::process::{ExitInfo, RunnerProc};
use super::tools::ToolSigs;
use super::{ExecRequest, ToolHandler};
use ptc_shared::codec::{CodecError, DEFAULT_MAX_FRAME, encode_frame, read_frame_async};
use ptc_shared::protocol::{
    Execute, PROTOCOL_VERSION, RunnerRlimits, RunnerToSupervisor, SupervisorToRunner,
    ToolResultError, exit_code,
};
use ptc_shared::{Fail, FailReason, Limits, Step, ToolCallRecord, Usage, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// Read buffer for a runner's frames (larger frames are read past it).
const RUNNER_READ_BUF: usize = 4096;
/// How long a runner may take to exit after its final frame (or after we killed it).
const EXIT_GRACE: Duration = Duration::from_millis(200);
const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;
const SIGSYS: i32 = 31;

/// What the supervisor keeps of the request for the Step (the rest goes to the runner).
pub(crate) struct Base {
    pub memory: Value,
    pub history: Vec<Value>,
    pub signature: Option<String>,
}

/// How the conversation ended.
#[derive(Debug)]
enum Ending {
    Finished(Box<Step>),
    Memory(u64),
    /// We killed the runner at the deadline.
    Deadline,
    /// The stream ended (or broke) without a final frame.
    Eof,
    /// The runner broke the protocol; we killed it.
    Protocol(String),
}

/// The margin past `timeout_ms` before the kill, so the interpreter's own deadline check usually
/// ends the run gracefully first.
fn kill_grace(timeout_ms: u64) -> Duration {
    Duration::from_millis((timeout_ms / 20).clamp(5, 25))
}

pub(crate) async fn run(
    pool: &Arc<Pool>,
    req: ExecRequest,
    limits: Limits,
    tools: Arc<dyn ToolHandler>,
    start: Instant,
) -> Step {
    let kill_at = start + Duration::from_millis(limits.timeout_ms) + kill_grace(limits.timeout_ms);
    let ExecRequest {
        program,
        context,
        memory,
        history,
        tools: decls,
        signature,
        validation,
        ..
    } = req;
    let sigs = match ToolSigs::new(&decls, validation) {
        Ok(s) => s,
        Err(fail) => {
            let base = Base {
                memory,
                history,
                signature,
            };
            return failed_step(base, fail, Vec::new(), start, 0);
        }
    };
    if program.len() as u64 > limits.max_program_bytes {
        let base = Base {
            memory,
            history,
            signature,
        };
        let msg = format!(
            "program is {} bytes, the limit is {}",
            program.len(),
            limits.max_program_bytes
        );
        return failed_step(
            base,
            limit_fail(msg, "max_program_bytes"),
            Vec::new(),
            start,
            0,
        );
    }
    let max_ctx = u32::try_from(limits.max_context_bytes).unwrap_or(u32::MAX);
    if let Err(e) = encode_frame(&context, max_ctx) {
        let base = Base {
            memory,
            history,
            signature,
        };
        let fail = match e {
            CodecError::TooLarge { len, max } => limit_fail(
                format!("context is {len} bytes, the limit is {max}"),
                "max_context_bytes",
            ),
            other => Fail::new(
                FailReason::InvalidRequest,
                format!("context cannot be sent: {other}"),
            ),
        };
        return failed_step(base, fail, Vec::new(), start, 0);
    }
    let exec = Execute {
        version: PROTOCOL_VERSION,
        program,
        context,
        memory,
        history,
        tools: decls,
        limits,
        signature: signature.clone(),
        validation,
    };
    let msg = SupervisorToRunner::Execute(Box::new(exec));
    let frame = encode_frame(&msg, DEFAULT_MAX_FRAME);
    // Take back what the Step needs; the encoded frame holds the rest.
    let (memory, history) = match msg {
        SupervisorToRunner::Execute(e) => (e.memory, e.history),
        _ => (Value::Nil, Vec::new()),
    };
    let base = Base {
        memory,
        history,
        signature,
    };
    let frame = match frame {
        Ok(f) => f,
        Err(e) => {
            let fail = Fail::new(
                FailReason::InvalidRequest,
                format!("request cannot be sent: {e}"),
            );
            return failed_step(base, fail, Vec::new(), start, 0);
        }
    };
    let runner = match tokio::time::timeout_at(kill_at.into(), pool.take(&limits)).await {
        Ok(Ok(w)) => w,
        Ok(Err(e)) => {
            return failed_step(
                base,
                crash(format!("could not start a runner: {e}")),
                Vec::new(),
                start,
                0,
            );
        }
        Err(_) => {
            let fail = timeout_fail(
                &limits,
                start,
                "no runner could be started before the deadline",
            );
            return failed_step(base, fail, Vec::new(), start, 0);
        }
    };
    tracing::Span::current().record("runner_pid", runner.proc.pid());
    let (step, release) = drive(runner, frame, &sigs, &limits, tools, base, start, kill_at).await;
    release_later(pool, release);
    step
}

/// What is let go only after the Step is on its way: closing the runner's socket, killing the
/// (exiting) runner and asking for its replacement are a handful of syscalls its client need
/// not wait for.
#[derive(Default)]
struct Release {
    _sock: Option<UnixStream>,
    _proc: Option<RunnerProc>,
}

/// Releases in a task of its own, which the runtime runs once the current task (the one
/// sending the Step) yields. If the runtime is shutting down, dropping the task still kills the
/// runner (its handle kills on drop).
fn release_later(pool: &Arc<Pool>, release: Release) {
    let pool = Arc::clone(pool);
    tokio::spawn(async move {
        drop(release);
        pool.refill();
    });
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    runner: Warm,
    frame: Vec<u8>,
    sigs: &ToolSigs,
    limits: &Limits,
    tools: Arc<dyn ToolHandler>,
    base: Base,
    start: Instant,
    kill_at: Instant,
) -> (Step, Release) {
    let Warm { proc, sock } = runner;
    // Sent before the socket is registered with the runtime: a fresh registration has no
    // readiness yet, so an async write would first wait a turn of the event loop.
    let sent = send_now(&sock, &frame);
    let sock = match UnixStream::from_std(sock) {
        Ok(s) => s,
        Err(e) => {
            let step = failed_step(
                base,
                crash(format!("runner socket: {e}")),
                Vec::new(),
                start,
                0,
            );
            return (step, Release::default());
        }
    };
    let mut conv = Conversation {
        // Buffered: a small frame (the usual `Finished`) is one read, not a header and a body.
        sock: BufReader::with_capacity(RUNNER_READ_BUF, sock),
        sigs,
        limits,
        tools,
        records: Vec::new(),
        pending: None,
        calls: 0,
    };
    let rest = frame.get(sent..).unwrap_or_default();
    let ending = match tokio::time::timeout_at(kill_at.into(), conv.converse(rest)).await {
        Ok(e) => e,
        Err(_) => Ending::Deadline,
    };
    if let Some((name, args, began)) = conv.pending.take() {
        conv.records.push(record(
            name,
            args,
            Err("the deadline passed while the tool ran".into()),
            began,
        ));
    }
    let records = std::mem::take(&mut conv.records);
    let sock = conv.sock.into_inner();
    if let Ending::Finished(step) = ending {
        let (cpu, proc) = settle_finished(proc).await;
        let step = match accept(*step, limits, &base, records, start, cpu) {
            Ok(s) => s,
            Err((msg, records)) => failed_step(base, crash(msg), records, start, cpu),
        };
        let release = Release {
            _sock: Some(sock),
            _proc: proc,
        };
        return (step, release);
    }
    drop(sock);
    let step = ended_otherwise(ending, proc, limits, base, records, start, kill_at).await;
    (step, Release::default())
}

/// The runner ended without `Finished`: make sure it is dead and reaped, then classify.
async fn ended_otherwise(
    ending: Ending,
    mut proc: RunnerProc,
    limits: &Limits,
    base: Base,
    records: Vec<ToolCallRecord>,
    start: Instant,
    kill_at: Instant,
) -> Step {
    let mut killed_late = false;
    if matches!(ending, Ending::Deadline | Ending::Protocol(_)) {
        proc.kill();
    }
    let wait_until = kill_at.max(Instant::now() + EXIT_GRACE);
    let exit = match tokio::time::timeout_at(wait_until.into(), proc.wait()).await {
        Ok(r) => r,
        Err(_) => {
            killed_late = true;
            proc.kill();
            tokio::time::timeout(EXIT_GRACE, proc.wait())
                .await
                .unwrap_or(Err(super::ProcessError::SpawnerGone))
        }
    };
    let exit = match exit {
        Ok(info) => info,
        Err(e) => {
            return failed_step(
                base,
                crash(format!("runner could not be reaped: {e}")),
                records,
                start,
                0,
            );
        }
    };
    classify(
        Observed {
            ending,
            exit,
            killed_late,
        },
        limits,
        base,
        records,
        start,
    )
}

/// The CPU time of a runner that sent `Finished`, without waiting for its exit when possible.
///
/// The runner `_exit`s right after `Finished`, and its teardown takes 100–200 µs, half of a warm
/// execution. Nothing after the final frame can change the Step, so the CPU time is read exactly
/// from the still-unreaped process and the runner is let go: a zygote's child is killed once the
/// Step is handed back (it is exiting anyway; the zygote reaps it and its reader logs an unclean
/// end, see `zygote.rs`), our own child's exit is confirmed in the background. If the exit was already
/// reported, its exact CPU time is used; if neither is available, the exit is awaited. An
/// unclean exit after `Finished` (a kernel signal, a non-zero code) is logged, not reported.
/// Returns the CPU time and, for a zygote's child, the handle to let go (kill) afterwards.
async fn settle_finished(mut proc: RunnerProc) -> (u64, Option<RunnerProc>) {
    match proc.try_reap() {
        Ok(Some(exit)) => {
            log_unclean(proc.pid(), &exit);
            return (exit.cpu_ms, None);
        }
        Ok(None) => {
            if let Some(cpu) = proc.cpu_ms_now() {
                if proc.reaped_by_zygote() {
                    return (cpu, Some(proc));
                }
                confirm_exit(proc);
                return (cpu, None);
            }
        }
        Err(_) => return (0, None),
    }
    match tokio::time::timeout(EXIT_GRACE, proc.wait()).await {
        Ok(Ok(exit)) => {
            log_unclean(proc.pid(), &exit);
            (exit.cpu_ms, None)
        }
        // Dropping the handle kills (and reaps) it.
        _ => (0, None),
    }
}

fn log_unclean(pid: i32, exit: &ExitInfo) {
    if exit.code != Some(0) {
        tracing::warn!(pid, ?exit, "runner ended uncleanly after Finished");
    }
}

/// Waits in the background for a runner that sent `Finished` to exit, killing it if it does not
/// within [`EXIT_GRACE`].
fn confirm_exit(mut proc: RunnerProc) {
    tokio::spawn(async move {
        let pid = proc.pid();
        match tokio::time::timeout(EXIT_GRACE, proc.wait()).await {
            Ok(Ok(exit)) => log_unclean(pid, &exit),
            Ok(Err(e)) => tracing::warn!(pid, error = %e, "runner exit after Finished unknown"),
            // Dropping the handle kills it.
            Err(_) => tracing::warn!(pid, "runner did not exit after Finished; killed"),
        }
    });
}

/// Writes what the (non-blocking) socket takes of `frame` right now; returns how much. An error
/// stops early: the async write of the rest then meets it and ends the conversation.
fn send_now(sock: &std::os::unix::net::UnixStream, frame: &[u8]) -> usize {
    let mut sent = 0;
    while let Some(rest) = frame.get(sent..).filter(|r| !r.is_empty()) {
        match rustix::net::send(sock, rest, rustix::net::SendFlags::NOSIGNAL) {
            Ok(0) => break,
            Ok(n) => sent += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    sent
}

struct Conversation<'a> {
    sock: BufReader<UnixStream>,
    sigs: &'a ToolSigs,
    limits: &'a Limits,
    tools: Arc<dyn ToolHandler>,
    records: Vec<ToolCallRecord>,
    /// The tool call in flight: if the deadline cuts it off, it is still recorded.
    pending: Option<(String, Value, Instant)>,
    calls: u32,
}

impl Conversation<'_> {
    /// `exec_rest`: what [`send_now`] could not write of the `Execute` frame.
    async fn converse(&mut self, exec_rest: &[u8]) -> Ending {
        if !exec_rest.is_empty() && self.sock.write_all(exec_rest).await.is_err() {
            return Ending::Eof;
        }
        loop {
            let frame =
                read_frame_async::<RunnerToSupervisor, _>(&mut self.sock, DEFAULT_MAX_FRAME).await;
            match frame {
                Ok(Some(RunnerToSupervisor::ToolCall { id, name, args })) => {
                    let result = self.tool_call(name, args).await;
                    if let Err(e) = self.reply(id, result).await {
                        return e;
                    }
                }
                Ok(Some(RunnerToSupervisor::Finished(step))) => return Ending::Finished(step),
                Ok(Some(RunnerToSupervisor::MemoryExceeded { peak_bytes })) => {
                    return Ending::Memory(peak_bytes);
                }
                Ok(Some(RunnerToSupervisor::Ready { .. })) => {
                    return Ending::Protocol("`Ready` after `Execute`".into());
                }
                Ok(None) | Err(CodecError::Io(_)) => return Ending::Eof,
                Err(e) => return Ending::Protocol(format!("bad frame from runner: {e}")),
            }
        }
    }

    /// Runs one tool call (limit, lookup, handler) and records it.
    async fn tool_call(&mut self, name: String, args: Value) -> Result<Value, ToolResultError> {
        self.calls = self.calls.saturating_add(1);
        let began = Instant::now();
        if self.calls > self.limits.max_tool_calls {
            let msg = format!("tool call limit of {} reached", self.limits.max_tool_calls);
            self.records
                .push(record(name, args, Err(msg.clone()), began));
            return Err(ToolResultError::Terminal(limit_fail(msg, "max_tool_calls")));
        }
        if !self.sigs.declared(&name) {
            self.records
                .push(record(name, args, Err("tool_not_found".into()), began));
            return Err(ToolResultError::NotFound);
        }
        let args = match self.sigs.check_args(&name, args.clone()) {
            Ok(a) => a,
            Err(fail) => {
                self.records
                    .push(record(name, args, Err(fail.message.clone()), began));
                return Err(ToolResultError::Terminal(fail));
            }
        };
        self.pending = Some((name.clone(), args.clone(), began));
        let out = self.tools.call(name.clone(), args.clone()).await;
        self.pending = None;
        let result = match out {
            Err(msg) => Err(ToolResultError::Error(msg)),
            Ok(v) => self
                .sigs
                .check_result(&name, v)
                .map_err(ToolResultError::Terminal),
        };
        let recorded = match &result {
            Ok(v) => Ok(v.clone()),
            Err(ToolResultError::Error(m)) => Err(m.clone()),
            Err(ToolResultError::Terminal(f)) => Err(f.message.clone()),
            Err(ToolResultError::NotFound) => Err("tool_not_found".into()),
        };
        self.records.push(record(name, args, recorded, began));
        result
    }

    /// Sends a tool result, replacing one over the size cap by a terminal `limit_exceeded`.
    async fn reply(
        &mut self,
        id: u64,
        result: Result<Value, ToolResultError>,
    ) -> Result<(), Ending> {
        let cap =
            u32::try_from(self.limits.max_tool_result_bytes.saturating_add(64)).unwrap_or(u32::MAX);
        let frame = match encode_frame(
            &SupervisorToRunner::ToolResult { id, result },
            cap.min(DEFAULT_MAX_FRAME),
        ) {
            Ok(f) => f,
            Err(e) => {
                let msg = match e {
                    CodecError::TooLarge { len, .. } => format!(
                        "tool result of {len} bytes exceeds the limit of {}",
                        self.limits.max_tool_result_bytes
                    ),
                    other => format!("tool result cannot be sent: {other}"),
                };
                if let Some(r) = self.records.last_mut() {
                    r.result = None;
                    r.error = Some(msg.clone());
                }
                let result = Err(ToolResultError::Terminal(limit_fail(
                    msg,
                    "max_tool_result_bytes",
                )));
                encode_frame(
                    &SupervisorToRunner::ToolResult { id, result },
                    DEFAULT_MAX_FRAME,
                )
                .map_err(|e| Ending::Protocol(e.to_string()))?
            }
        };
        self.sock.write_all(&frame).await.map_err(|_| Ending::Eof)
    }
}

fn record(name: String, args: Value, out: Result<Value, String>, began: Instant) -> ToolCallRecord {
    let duration_us = u64::try_from(began.elapsed().as_micros()).unwrap_or(u64::MAX);
    let (result, error) = match out {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    ToolCallRecord {
        name,
        args,
        result,
        error,
        duration_us,
    }
}

struct Observed {
    ending: Ending,
    exit: ExitInfo,
    /// The runner had to be killed after its final frame because it did not exit.
    killed_late: bool,
}

/// Decides the Step from what was observed. Order matters: the kernel's word (signals, CPU time)
/// and our own kill come before anything the runner said.
fn classify(
    o: Observed,
    limits: &Limits,
    base: Base,
    records: Vec<ToolCallRecord>,
    start: Instant,
) -> Step {
    let cpu = o.exit.cpu_ms;
    let fail = |f: Fail, base: Base, records| failed_step(base, f, records, start, cpu);
    if o.exit.signal == Some(SIGSYS) {
        let f = Fail::new(
            FailReason::SandboxViolation,
            "the program attempted a forbidden operation (killed by seccomp)",
        )
        .with_detail("signal", "SIGSYS");
        return fail(f, base, records);
    }
    if matches!(o.ending, Ending::Deadline) {
        return fail(
            timeout_fail(limits, start, "the runner was killed at the deadline"),
            base,
            records,
        );
    }
    let cpu_limit_ms = RunnerRlimits::for_limits(limits)
        .cpu_soft_secs
        .saturating_mul(1000);
    let cpu_kill = o.exit.signal == Some(SIGKILL) && cpu.saturating_add(20) >= cpu_limit_ms;
    if o.exit.signal == Some(SIGXCPU) || cpu_kill {
        let f = Fail::new(
            FailReason::Timeout,
            format!(
                "the program used its CPU time limit of {} ms",
                limits.cpu_ms
            ),
        )
        .with_detail("limit", "cpu")
        .with_detail("cpu_ms", i64::try_from(cpu).unwrap_or(i64::MAX));
        return fail(f, base, records);
    }
    let memory_code = o.exit.code == Some(exit_code::MEMORY);
    if let Ending::Memory(peak) = o.ending {
        return memory_step(limits, peak, base, records, start, cpu);
    }
    if memory_code {
        return memory_step(limits, limits.heap_bytes, base, records, start, cpu);
    }
    // `Finished` never gets here: it is accepted as it arrives (see `settle_finished`).
    match o.ending {
        Ending::Protocol(msg) => fail(exit_details(crash(msg), &o.exit), base, records),
        _ => {
            let f = crash(describe_exit(&o.exit, o.killed_late));
            fail(exit_details(f, &o.exit), base, records)
        }
    }
}

/// Adds what the kernel reported (exit code or signal). The runner's stderr (a panic message,
/// say) goes to the supervisor's log only: its text may quote the host's paths or memory, so the
/// client learns just how many bytes there were (`stderr_bytes`).
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

fn memory_step(
    limits: &Limits,
    peak: u64,
    base: Base,
    records: Vec<ToolCallRecord>,
    start: Instant,
    cpu: u64,
) -> Step {
    let f = Fail::new(
        FailReason::MemoryExceeded,
        format!(
            "the program exceeded its heap limit of {} bytes",
            limits.heap_bytes
        ),
    )
    .with_detail("limit", "heap_bytes");
    let mut step = failed_step(base, f, records, start, cpu);
    step.usage.memory_bytes = peak;
    step
}

/// Reasons only the supervisor may report: a runner claiming one is not believed.
fn supervisor_only(r: FailReason) -> bool {
    use FailReason::*;
    matches!(
        r,
        SandboxViolation | RunnerCrashed | Busy | Cancelled | PermissionDenied
    )
}

/// Checks a runner's `Finished` Step and overlays what the supervisor measured.
fn accept(
    mut step: Step,
    limits: &Limits,
    base: &Base,
    records: Vec<ToolCallRecord>,
    start: Instant,
    cpu: u64,
) -> Result<Step, (String, Vec<ToolCallRecord>)> {
    if step.return_value.is_some() == step.fail.is_some() {
        return Err((
            "the runner sent a Step with both or neither of return and fail".into(),
            records,
        ));
    }
    if let Some(r) = step.reason().filter(|r| supervisor_only(*r)) {
        return Err((
            format!("the runner reported `{r}`, which only the supervisor may report"),
            records,
        ));
    }
    cap_prints(&mut step.prints, limits.max_prints_bytes);
    step.usage.tool_calls = u32::try_from(records.len()).unwrap_or(u32::MAX);
    step.tool_calls = records;
    step.usage.duration_ms = elapsed_ms(start);
    step.usage.cpu_ms = cpu;
    step.signature.clone_from(&base.signature);
    Ok(step)
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

fn elapsed_ms(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn crash(message: String) -> Fail {
    Fail::new(FailReason::RunnerCrashed, message)
}

fn limit_fail(message: String, limit: &str) -> Fail {
    Fail::new(FailReason::LimitExceeded, message).with_detail("limit", limit)
}

fn timeout_fail(limits: &Limits, start: Instant, why: &str) -> Fail {
    let elapsed = elapsed_ms(start);
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

/// A failed Step built by the supervisor: memory and history unchanged, usage from our clock.
pub(crate) fn failed_step(
    base: Base,
    fail: Fail,
    records: Vec<ToolCallRecord>,
    start: Instant,
    cpu_ms: u64,
) -> Step {
    Step {
        return_value: None,
        fail: Some(fail),
        memory: base.memory,
        memory_delta: Value::Nil,
        history: base.history,
        signature: base.signature,
        prints: Vec::new(),
        warnings: Vec::new(),
        usage: Usage {
            duration_ms: elapsed_ms(start),
            cpu_ms,
            tool_calls: u32::try_from(records.len()).unwrap_or(u32::MAX),
            ..Usage::default()
        },
        tool_calls: records,
    }
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
    fn kill_grace_is_bounded() {
        assert_eq!(kill_grace(10), Duration::from_millis(5));
        assert_eq!(kill_grace(1000), Duration::from_millis(25));
    }
}
