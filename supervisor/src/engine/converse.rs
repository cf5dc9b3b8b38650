//! One execution's conversation with its runner, and the deadline.
//!
//! The conversation (send `Execute`; receive `Imported`; answer `ToolCall`s; receive `Finished`
//! or `MemoryExceeded`) runs under `timeout_at`, so a silent runner or a tool that never answers
//! cannot hold the execution past its deadline. Two deadlines, one after the other: until the
//! runner says `Imported` (its data is in, the program starts), `timeout_ms` plus the import's
//! allowance from the request's arrival (`prepare`); from `Imported` on, the program's own
//! `timeout_ms`. `Imported` is accepted once, and before any `ToolCall`: a second one, or a tool
//! call before it, is a protocol error, so a runner cannot restart its clock nor spend the
//! import's allowance on tools. Unless it ended with `Finished`, its process is then waited
//! for and reaped, and [`classify`] decides the Step from what the engine observed.
//!
//! Each `ToolCall` passes the run's [`ToolCalls`] (the one owner of the tool-call limit, the
//! signature checks and the trace) before the caller's handler sees it; the runner keeps no
//! count or trace of its own.
//!
//! A `Finished` Step is complete when it arrives (the runner only `_exit`s afterwards), so it is
//! accepted at once with the CPU time read exactly from the still-unreaped process, and the exit
//! is left to the zygote or confirmed in the background ([`settle_finished`]): nothing after the
//! final frame can change the Step, and the process teardown is a large share of a warm
//! execution.

use super::ToolHandler;
use super::classify::{
    Ending, Observed, Outcome, Started, accept, classify, crash, limit_fail, timeout_fail,
};
use super::pool::{Pool, Warm};
use super::prepare::{Execution, program_kill_at};
use super::process::{ExitInfo, RunnerProc};
use ptc_shared::codec::{CodecError, DEFAULT_MAX_FRAME, encode_frame, read_frame_async};
use ptc_shared::protocol::{RunnerToSupervisor, SupervisorToRunner};
use ptc_shared::tool_calls::{ToolCalls, ToolFailure};
use ptc_shared::{Limits, Step, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// Read buffer for a runner's frames (larger frames are read past it).
const RUNNER_READ_BUF: usize = 4096;
/// How long a runner may take to exit after its final frame (or after we killed it).
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// Takes a runner for `exec` and runs the conversation; always returns the Step.
pub(crate) async fn run(exec: Execution, tools: Arc<dyn ToolHandler>) -> Step {
    let taken = tokio::time::timeout_at(exec.kill_at.into(), exec.pool.take(&exec.limits)).await;
    let runner = match taken {
        Ok(Ok(w)) => w,
        Ok(Err(e)) => {
            let mut fail = crash(format!("could not start a runner: {e}"));
            if let Some(text) = e.stderr() {
                fail = fail.with_detail("stderr", text);
            }
            return exec.base.fail(fail, Vec::new(), exec.start, 0);
        }
        Err(_) => {
            let why = "no runner could be started before the deadline";
            let fail = timeout_fail(&exec.limits, exec.start, why);
            return exec.base.fail(fail, Vec::new(), exec.start, 0);
        }
    };
    tracing::Span::current().record("runner_pid", runner.proc.pid());
    let pool = Arc::clone(&exec.pool);
    let (step, release) = drive(runner, exec, tools).await;
    release_later(&pool, release);
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

/// Sends `Execute`, answers tool calls until the runner ends, and builds the Step.
async fn drive(runner: Warm, exec: Execution, tools: Arc<dyn ToolHandler>) -> (Step, Release) {
    let Warm { proc, sock } = runner;
    let Execution {
        limits,
        frame,
        calls,
        base,
        start,
        kill_at,
        import_allowance_ms,
        ..
    } = exec;
    // Sent before the socket is registered with the runtime: a fresh registration has no
    // readiness yet, so an async write would first wait a turn of the event loop.
    let sent = send_now(&sock, &frame);
    let sock = match UnixStream::from_std(sock) {
        Ok(s) => s,
        Err(e) => {
            let step = base.fail(crash(format!("runner socket: {e}")), Vec::new(), start, 0);
            return (step, Release::default());
        }
    };
    let mut conv = Conversation {
        // Buffered: a small frame (the usual `Finished`) is one read, not a header and a body.
        sock: BufReader::with_capacity(RUNNER_READ_BUF, sock),
        limits: &limits,
        tools,
        calls,
        imported: false,
    };
    let rest = frame.get(sent..).unwrap_or_default();
    let (ending, started, kill_at) = conv.timed(&proc, kill_at, rest).await;
    let Conversation { sock, calls, .. } = conv;
    let mut calls = calls;
    calls.abandon("the deadline passed while the tool ran");
    let run = Outcome {
        limits: &limits,
        base,
        records: calls.into_records(),
        start,
        import_allowance_ms,
        started,
    };
    if let Ending::Finished(step) = ending {
        let (cpu, proc) = settle_finished(proc).await;
        let release = Release {
            _sock: Some(sock.into_inner()),
            _proc: proc,
        };
        return (accept(*step, run, cpu), release);
    }
    drop(sock);
    let step = ended_otherwise(ending, proc, run, kill_at).await;
    (step, Release::default())
}

/// The runner ended without `Finished`: make sure it is dead and reaped, then classify.
async fn ended_otherwise(
    ending: Ending,
    mut proc: RunnerProc,
    run: Outcome<'_>,
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
    match exit {
        Ok(exit) => classify(
            Observed {
                ending,
                exit,
                killed_late,
            },
            run,
        ),
        Err(e) => {
            let fail = crash(format!("runner could not be reaped: {e}"));
            run.base.fail(fail, run.records, run.start, 0)
        }
    }
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
    limits: &'a Limits,
    tools: Arc<dyn ToolHandler>,
    /// Checks and records every call (a call cut off by the deadline is still recorded).
    calls: ToolCalls,
    /// The runner has said `Imported` (the program's clock runs).
    imported: bool,
}

impl Conversation<'_> {
    /// Converses under the import's deadline (`kill_at`), then, once the runner says
    /// `Imported`, under the program's own from that moment. Returns how it ended, when the
    /// program started (and the runner's CPU time then), and the deadline last in force.
    async fn timed(
        &mut self,
        proc: &RunnerProc,
        kill_at: Instant,
        exec_rest: &[u8],
    ) -> (Ending, Option<Started>, Instant) {
        let ending = self.until(kill_at, exec_rest).await;
        if !matches!(ending, Ending::Imported) {
            return (ending, None, kill_at);
        }
        let at = Instant::now();
        let started = Started {
            at,
            cpu_ms: proc.cpu_ms_now().unwrap_or(0),
        };
        let kill_at = program_kill_at(self.limits, at);
        (self.until(kill_at, &[]).await, Some(started), kill_at)
    }

    /// Converses until the runner ends, says `Imported`, or `kill_at` passes.
    async fn until(&mut self, kill_at: Instant, exec_rest: &[u8]) -> Ending {
        tokio::time::timeout_at(kill_at.into(), self.converse(exec_rest))
            .await
            .unwrap_or(Ending::Deadline)
    }

    /// `exec_rest`: what [`send_now`] could not write of the `Execute` frame.
    async fn converse(&mut self, exec_rest: &[u8]) -> Ending {
        if !exec_rest.is_empty() && self.sock.write_all(exec_rest).await.is_err() {
            return Ending::Eof;
        }
        loop {
            let frame =
                read_frame_async::<RunnerToSupervisor, _>(&mut self.sock, DEFAULT_MAX_FRAME).await;
            match frame {
                Ok(Some(RunnerToSupervisor::Imported)) if !self.imported => {
                    self.imported = true;
                    return Ending::Imported;
                }
                Ok(Some(RunnerToSupervisor::Imported)) => {
                    return Ending::Protocol("`Imported` twice".into());
                }
                Ok(Some(RunnerToSupervisor::ToolCall { .. })) if !self.imported => {
                    return Ending::Protocol("`ToolCall` before `Imported`".into());
                }
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

    /// Runs one tool call: checked and recorded by [`ToolCalls`], answered by the handler.
    async fn tool_call(&mut self, name: String, args: Value) -> Result<Value, ToolFailure> {
        let args = self.calls.begin(&name, args)?;
        let out = self.tools.call(name, args).await;
        self.calls.finish(out.map_err(ToolFailure::Error))
    }

    /// Sends a tool result, replacing one over the size cap by a terminal `limit_exceeded`.
    async fn reply(&mut self, id: u64, result: Result<Value, ToolFailure>) -> Result<(), Ending> {
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
                self.calls.amend_last(msg.clone());
                let result = Err(ToolFailure::Terminal(limit_fail(
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
