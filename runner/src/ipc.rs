//! The runner's side of the IPC socket: framed messages, and a `ToolHost` that forwards every
//! tool call to the supervisor as a `ToolCall` RPC and blocks for its `ToolResult`.
//!
//! Invariants: strictly one request in flight (the interpreter is single-threaded); a reply whose
//! id or kind is not the expected one, or a lost connection, ends the run as terminal and marks
//! the channel broken, after which the runner exits with `exit_code::PROTOCOL` without writing
//! `Finished` (the supervisor reports `runner_crashed` from what it observed).

use ptc_runner::api::{RunOptions, ToolFailure, ToolHost, run_with_host};
use ptc_runner::convert::Imported;
use ptc_shared::codec::{self, CodecError, DEFAULT_MAX_FRAME};
use ptc_shared::protocol::{Execute, RunnerToSupervisor, SupervisorToRunner, SupervisorToRunnerOf};
use ptc_shared::value::EncodedValue;
use ptc_shared::{Fail, FailReason, Step, Value};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::os::unix::net::UnixStream;

/// Why the conversation with the supervisor broke down.
#[derive(Debug, thiserror::Error)]
pub enum IpcError {
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error("the supervisor closed the connection")]
    Closed,
    #[error("unexpected message from the supervisor: {0}")]
    Unexpected(&'static str),
}

/// The framed connection to the supervisor (fd 3).
#[derive(Debug)]
pub struct Ipc {
    stream: UnixStream,
}

impl Ipc {
    pub fn new(stream: UnixStream) -> Ipc {
        Ipc { stream }
    }

    /// Writes one frame.
    pub fn send(&mut self, msg: &RunnerToSupervisor) -> Result<(), IpcError> {
        Ok(codec::write_frame(
            &mut self.stream,
            msg,
            DEFAULT_MAX_FRAME,
        )?)
    }

    /// Reads one frame; the end of the stream is an error here (a reply was due).
    pub fn recv(&mut self) -> Result<SupervisorToRunner, IpcError> {
        self.recv_as()
    }

    /// Reads the one `Execute`. Its context is decoded straight into interpreter values, except
    /// a signed run's, which stays encoded: the signature checks it there, row by row, before it
    /// is imported (`Signature::validate_input_encoded`; a tree of rows would not fit the
    /// grant). The request is read first on its own, the context skipped, to know which.
    pub fn recv_execute(&mut self) -> Result<Execute<Granted>, IpcError> {
        let body = codec::read_frame_bytes(&mut self.stream, DEFAULT_MAX_FRAME)?
            .ok_or(IpcError::Closed)?;
        let signed = match codec::decode_body(&body, DEFAULT_MAX_FRAME)? {
            SupervisorToRunnerOf::<Skipped>::Execute(e) => {
                e.request.signature.is_some() || e.request.context_signature.is_some()
            }
            _ => return Err(IpcError::Unexpected("a frame other than Execute")),
        };
        let exec = if signed {
            execute_of(
                codec::decode_body(&body, DEFAULT_MAX_FRAME)?,
                Granted::Encoded,
            )
        } else {
            execute_of(
                codec::decode_body(&body, DEFAULT_MAX_FRAME)?,
                Granted::Imported,
            )
        };
        exec.ok_or(IpcError::Unexpected("a frame other than Execute"))
    }

    /// Reads one frame, an `Execute`'s context decoded as `C`.
    pub fn recv_as<C: Serialize + DeserializeOwned>(
        &mut self,
    ) -> Result<SupervisorToRunnerOf<C>, IpcError> {
        codec::read_frame(&mut self.stream, DEFAULT_MAX_FRAME)?.ok_or(IpcError::Closed)
    }

    /// Sends the final Step; one too large to frame is replaced by a `limit_exceeded` failure.
    pub fn send_finished(&mut self, step: Step) -> Result<(), IpcError> {
        let usage = step.usage.clone();
        match self.send(&RunnerToSupervisor::Finished(Box::new(step))) {
            Err(IpcError::Codec(CodecError::TooLarge { len, max })) => {
                let msg = format!("the result is too large to return ({len} bytes, at most {max})");
                let fail = Fail::new(FailReason::LimitExceeded, msg)
                    .with_detail("limit", "max_frame_bytes");
                // The engine gives a failed Step the request's memory back (`Step::failed`).
                let step = Step {
                    usage,
                    ..Step::failed(fail, Value::Nil, Vec::new())
                };
                self.send(&RunnerToSupervisor::Finished(Box::new(step)))
            }
            other => other,
        }
    }
}

/// An `Execute`'s context as the runner reads it ([`Ipc::recv_execute`]).
#[derive(Debug)]
pub enum Granted {
    Imported(Imported),
    Encoded(EncodedValue),
}

/// The `Execute` of a frame, its context made a [`Granted`].
fn execute_of<C>(
    msg: SupervisorToRunnerOf<C>,
    granted: impl FnOnce(C) -> Granted,
) -> Option<Execute<Granted>> {
    let SupervisorToRunnerOf::Execute(e) = msg else {
        return None;
    };
    let Execute {
        version,
        limits,
        request,
        context,
    } = *e;
    Some(Execute {
        version,
        limits,
        request,
        context: granted(context),
    })
}

/// A context read past without a copy: the first read of an `Execute` wants its request only.
struct Skipped;

impl<'de> serde::Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skipped, D::Error> {
        d.deserialize_bytes(SkipBytes)
    }
}

/// Never written: a `Skipped` context is only read.
impl Serialize for Skipped {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&[])
    }
}

struct SkipBytes;

impl serde::de::Visitor<'_> for SkipBytes {
    type Value = Skipped;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an encoded value (bytes)")
    }

    fn visit_bytes<E: serde::de::Error>(self, _: &[u8]) -> Result<Skipped, E> {
        Ok(Skipped)
    }
}

/// Runs one `Execute` (its context decoded into interpreter values, or a signed run's still
/// encoded: [`Ipc::recv_execute`]) with tool calls
/// forwarded over `ipc`. `Err` when the channel broke. The engine checks and records each tool
/// call, and owns the clock: the Step sent back has no tool-call trace and no duration of its
/// own. When the run's data is imported, the heap budget is re-based (`alloc::settle`), the
/// program's CPU limit set and `Imported` sent, which starts the engine's program deadline.
pub fn execute(ipc: &mut Ipc, exec: Execute<Granted>) -> Result<Step, IpcError> {
    let (program, decls, mut opts) = RunOptions::from_request(exec.request, exec.limits);
    match exec.context {
        Granted::Imported(v) => opts.context_value = Some(v.0),
        Granted::Encoded(e) => opts.request.context = e,
    }
    let names: Vec<String> = decls.into_iter().map(|t| t.name).collect();
    let mut host = IpcHost {
        ipc,
        limits: exec.limits,
        next_id: 0,
        broken: None,
    };
    let step = run_with_host(&program, opts, &names, &mut host).unwrap_or_else(|failed| failed);
    match host.broken {
        Some(e) => Err(e),
        None => Ok(step),
    }
}

/// A `ToolHost` whose tools live in the supervisor.
struct IpcHost<'a> {
    ipc: &'a mut Ipc,
    /// The run's limits (the program's CPU limit is set from them once its data is in).
    limits: ptc_shared::Limits,
    next_id: u64,
    broken: Option<IpcError>,
}

impl IpcHost<'_> {
    fn round_trip(
        &mut self,
        name: &str,
        args: Value,
    ) -> Result<Result<Value, ToolFailure>, IpcError> {
        self.next_id += 1;
        let id = self.next_id;
        self.ipc.send(&RunnerToSupervisor::ToolCall {
            id,
            name: name.to_string(),
            args,
        })?;
        match self.ipc.recv()? {
            SupervisorToRunner::ToolResult { id: got, result } if got == id => Ok(result),
            SupervisorToRunner::ToolResult { .. } => {
                Err(IpcError::Unexpected("tool result for another call"))
            }
            _ => Err(IpcError::Unexpected("a message other than a tool result")),
        }
    }
}

impl ToolHost for IpcHost<'_> {
    /// The data is in: re-base the heap budget, start the program's CPU limit, and tell the
    /// engine to start the program's deadline (docs/ARCHITECTURE.md, "Granted data").
    fn imported(&mut self) -> Result<(), Fail> {
        crate::alloc::settle();
        crate::harden::start_program_cpu(&self.limits).map_err(|errno| {
            let msg = format!("could not set the program's CPU limit: {errno}");
            Fail::new(FailReason::RunnerCrashed, msg)
        })?;
        if let Err(e) = self.ipc.send(&RunnerToSupervisor::Imported) {
            self.broken = Some(e);
            return Err(lost_connection());
        }
        Ok(())
    }

    /// This process ends right after its Step is sent (`_exit`, no destructors): freeing a
    /// large context one value at a time first (100,000 rows: ~100 M instructions) would only
    /// delay the Step. Its memory stays billed, as it was all along.
    fn done_with(&mut self, context: ptc_runner::value::Value) {
        std::mem::forget(context);
    }

    fn call(&mut self, name: &str, args: Value) -> Result<Value, ToolFailure> {
        if self.broken.is_some() {
            return Err(ToolFailure::Terminal(lost_connection()));
        }
        match self.round_trip(name, args) {
            Ok(result) => result,
            Err(e) => {
                self.broken = Some(e);
                Err(ToolFailure::Terminal(lost_connection()))
            }
        }
    }
}

fn lost_connection() -> Fail {
    Fail::new(
        FailReason::RunnerCrashed,
        "lost the connection to the supervisor during a tool call",
    )
}
