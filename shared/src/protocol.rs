//! Supervisor ↔ runner messages, carried as [`crate::codec`] frames over one Unix stream socket
//! (the runner's fd [`RUNNER_IPC_FD`]).
//!
//! The conversation is fixed and short:
//! ```text
//! supervisor: Setup            (trusted, before any untrusted input; carries the seccomp program)
//! runner:     Ready{landlock}  (hardening done)
//! supervisor: Execute          (the untrusted program and its data)
//! runner:     Imported         (the data is in: the program's clock starts; at most once)
//! runner:     ToolCall{id,..}  ⇄ supervisor: ToolResult{id,..}   (zero or more, strictly alternating)
//! runner:     Finished(step) | MemoryExceeded{peak}   then exits
//! ```
//! `Setup` and `Execute` carry [`PROTOCOL_VERSION`] as their first field; a mismatch decodes as
//! [`CodecError::Version`](crate::codec::CodecError::Version) even when the layout changed.
//! An `Execute` carries everything a run needs: the runner reads nothing else.

use crate::client_protocol::RunRequest;
use crate::codec::{Message, peek_tag_and_u32};
use crate::tool_calls::ToolFailure;
use crate::value::EncodedValue;
use crate::{Limits, Step, Value};
use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

/// Bumped on every incompatible change to these messages (3: `Execute` carries the `RunRequest`;
/// `Step` gained `returned` and `trace`, `Fail` its `program_reason`, `Usage` its token, request
/// and turn counts; 4: `Setup.grant_bytes`, and `Execute` carries the context beside the request;
/// 5: `Imported`, which starts the program's clock; 6: the context is one byte string of value
/// tokens, `value::EncodedValue`).
pub const PROTOCOL_VERSION: u32 = 6;

/// The runner's IPC socket is always this file descriptor.
pub const RUNNER_IPC_FD: i32 = 3;

/// Process exit codes of `ptc-runner`, for the supervisor's classification of how a runner ended.
/// Exit status 0 means `Finished` was written. Signals (SIGSYS from seccomp, SIGXCPU/SIGKILL from
/// RLIMIT_CPU, SIGKILL at the deadline) are not exit codes.
pub mod exit_code {
    /// The heap budget was exceeded (or the allocator returned null); a `MemoryExceeded` frame was
    /// written first when the socket still accepted it.
    pub const MEMORY: i32 = 91;
    /// `Setup` was missing or malformed, or a hardening step failed.
    pub const SETUP: i32 = 92;
    /// A frame after `Setup` was malformed, unexpected, or the stream ended early.
    pub const PROTOCOL: i32 = 93;
    /// No usable seccomp program: the runner refuses to run unfiltered (fail closed).
    pub const NO_SECCOMP: i32 = 94;
    /// The parent died before PR_SET_PDEATHSIG took effect.
    pub const PARENT_GONE: i32 = 95;
    /// The Rust runtime's exit code after an unwinding panic in `main` (an interpreter bug).
    pub const PANIC: i32 = 101;

    /// A short name for an exit code, for logs and `details`.
    pub fn describe(code: i32) -> Option<&'static str> {
        Some(match code {
            0 => "finished",
            MEMORY => "memory_exceeded",
            SETUP => "setup_failed",
            PROTOCOL => "protocol_error",
            NO_SECCOMP => "no_seccomp_filter",
            PARENT_GONE => "parent_gone",
            PANIC => "panic",
            _ => return None,
        })
    }
}

/// Resource limits the runner applies to itself (setrlimit) before reading untrusted input.
/// Each value is the soft limit; hard limits equal soft, except CPU (hard = soft + 1 s, so the
/// kernel sends SIGXCPU first and SIGKILL one second later).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerRlimits {
    /// RLIMIT_DATA: heap + private writable mappings, a little above `heap_budget_bytes`.
    pub data_bytes: u64,
    /// RLIMIT_CPU soft limit in whole seconds while the runner starts and imports its data:
    /// `ceil((cpu_ms + import_allowance_ms(max_context_bytes)) / 1000)`, at least 1. Lowered to
    /// [`program_cpu_secs`] once the data is in (`Imported`).
    pub cpu_soft_secs: u64,
    /// RLIMIT_NOFILE: highest fd number + 1 the runner may hold (needs ≥ 5: fds 0–3 + landlock's).
    pub nofile: u64,
    /// RLIMIT_FSIZE: 0, writing any file is refused (SIGXFSZ).
    pub fsize_bytes: u64,
    /// RLIMIT_CORE: 0, no core dumps.
    pub core_bytes: u64,
    /// RLIMIT_STACK: [`RUNNER_STACK_BYTES`], the same for every policy (see there).
    pub stack_bytes: u64,
}

/// A runner's main-thread stack (RLIMIT_STACK). Fixed, because forked runners inherit the stack
/// bounds `stacker` cached in the zygote. Deep interpreter recursion (calls up to `max_depth`,
/// nested expressions, reader and analyzer nesting) runs on segments `stacker` maps on demand:
/// private writable memory, so under RLIMIT_DATA with the heap. The main stack itself is counted
/// in the memory budget by [`Setup::for_limits`]: the allocator's budget is `heap_bytes` less
/// the part of this stack the policy pays for (at most a quarter of `heap_bytes`).
///
/// Not 8 MiB, the usual default a runner starts with: std computes the main thread's guard page
/// from the starting limit, and on a fault in it prints and calls `abort`, whose syscalls the
/// seccomp filter kills (SIGSYS, mistaken for a sandbox violation). With a different limit a
/// bug's stack overflow stays a plain SIGSEGV, classified as `runner_crashed`.
pub const RUNNER_STACK_BYTES: u64 = 16 << 20;

/// In-memory bytes the granted data may take per byte of context the policy accepts
/// (`max_context_bytes`, as encoded): the runner's `Execute` frame and the interpreter values
/// decoded from it. Records of numbers and short strings take about 6 bytes per encoded byte
/// while decoding (the frame itself, plus the values); see docs/ARCHITECTURE.md, "Granted data".
pub const GRANT_PER_CONTEXT_BYTE: u64 = 8;

/// What granted data may take in a runner under `limits` (see [`GRANT_PER_CONTEXT_BYTE`]).
pub fn grant_bytes(limits: &Limits) -> u64 {
    limits
        .max_context_bytes
        .saturating_mul(GRANT_PER_CONTEXT_BYTE)
}

/// Wall-clock (and CPU) milliseconds the granted data of `context_bytes` encoded bytes may take
/// to arrive and be imported before the program starts: the policy's `timeout_ms` per MiB.
/// The one owner of the import's bound (docs/ARCHITECTURE.md, "Granted data: the clock").
///
/// The program's own clock (`timeout_ms`, `cpu_ms`, `max_steps`) starts when the runner says
/// `Imported`; until then the engine kills it at `timeout_ms` plus this allowance after the
/// request arrived, and RLIMIT_CPU allows `cpu_ms` plus the allowance for `max_context_bytes`.
/// A release build imports a MiB of records in about 30 ms, so the bound is loose by design: it
/// only ends a runner that hangs; it grants the program nothing.
pub fn import_allowance_ms(limits: &Limits, context_bytes: u64) -> u64 {
    let per_mib = u128::from(limits.timeout_ms);
    let ms = (per_mib * u128::from(context_bytes)).div_ceil(1 << 20);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// The RLIMIT_CPU soft limit, in whole seconds, a runner sets itself when its data is in, having
/// used `used_ms` of CPU so far: the program's `cpu_ms` from now (the hard limit is one more).
pub fn program_cpu_secs(limits: &Limits, used_ms: u64) -> u64 {
    used_ms.saturating_add(limits.cpu_ms).div_ceil(1000).max(1)
}

impl RunnerRlimits {
    /// The rlimits for one execution's `Limits`: RLIMIT_DATA is the heap budget plus a quarter
    /// (at least 32 MiB) of slack for allocator overhead, the binary's data and fragmentation,
    /// plus the grant for the data the run is handed ([`grant_bytes`]).
    pub fn for_limits(limits: &Limits) -> RunnerRlimits {
        let slack = (limits.heap_bytes / 4).max(32 << 20);
        RunnerRlimits {
            data_bytes: limits
                .heap_bytes
                .saturating_add(slack)
                .saturating_add(grant_bytes(limits)),
            cpu_soft_secs: limits
                .cpu_ms
                .saturating_add(import_allowance_ms(limits, limits.max_context_bytes))
                .div_ceil(1000)
                .max(1),
            nofile: 8,
            fsize_bytes: 0,
            core_bytes: 0,
            stack_bytes: RUNNER_STACK_BYTES,
        }
    }
}

/// The first frame: how the runner hardens itself. Trusted (sent before any untrusted input).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setup {
    /// Must be [`PROTOCOL_VERSION`]; first field so a mismatch is recognisable.
    pub version: u32,
    /// Live heap bytes past which the runner writes `MemoryExceeded` and exits [`exit_code::MEMORY`].
    pub heap_budget_bytes: u64,
    /// Live heap bytes the granted data may add while the runner reads and imports its `Execute`
    /// (context, memory, history). Once imported, the budget is re-based: the program may
    /// allocate `heap_budget_bytes` on top of what is live then ([`grant_bytes`]).
    pub grant_bytes: u64,
    pub rlimits: RunnerRlimits,
    /// Restrict the filesystem to nothing with landlock (best effort on kernels without it).
    pub landlock: bool,
    /// The compiled seccomp BPF program: `struct sock_filter` records (8 bytes each, native
    /// endian) as produced by seccompiler from `policies/seccomp/runner.json`. Empty → the runner
    /// exits [`exit_code::NO_SECCOMP`].
    pub seccomp_bpf: ByteBuf,
    /// Namespaces the runner enters before anything else ([`ns`] bits); 0 for none.
    pub namespaces: u32,
    /// `(uid, gid)` the runner switches to first (supplementary groups dropped); needs a root
    /// supervisor. `None` keeps the supervisor's.
    pub run_as: Option<(u32, u32)>,
}

/// Namespace bits of [`Setup::namespaces`]. The runner enters `USER` first (so the others need
/// no privileges on the host), then the rest. There is no pid bit: a runner never has children,
/// so a pid namespace of its own would contain nothing.
pub mod ns {
    pub const USER: u32 = 1;
    pub const NET: u32 = 2;
    pub const IPC: u32 = 4;
    pub const UTS: u32 = 8;
    pub const MOUNT: u32 = 16;
}

impl Setup {
    /// A Setup for `limits` with the given compiled filter: the heap budget is `limits.heap_bytes`
    /// less the main stack's share (see [`RUNNER_STACK_BYTES`]), so heap and stack together stay
    /// within what the policy grants.
    pub fn for_limits(limits: &Limits, seccomp_bpf: Vec<u8>, landlock: bool) -> Setup {
        let stack_share = RUNNER_STACK_BYTES.min(limits.heap_bytes / 4);
        Setup {
            version: PROTOCOL_VERSION,
            heap_budget_bytes: limits.heap_bytes.saturating_sub(stack_share),
            grant_bytes: grant_bytes(limits),
            rlimits: RunnerRlimits::for_limits(limits),
            landlock,
            seccomp_bpf: ByteBuf::from(seccomp_bpf),
            namespaces: 0,
            run_as: None,
        }
    }
}

/// A tool the program may call, as declared by the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDecl {
    pub name: String,
    /// Signature text, e.g. `"(status :string) -> [{total :int}]"`.
    pub signature: Option<String>,
    pub description: Option<String>,
}

impl ToolDecl {
    /// A declaration with an optional signature and no description.
    pub fn new(name: impl Into<String>, signature: Option<&str>) -> ToolDecl {
        ToolDecl {
            name: name.into(),
            signature: signature.map(str::to_string),
            description: None,
        }
    }
}

/// The one execution a runner performs: the client's request as the engine normalised it, and
/// the limits the engine resolved from it and its policy (the request's own `policy`,
/// `limits`, `timeout_ms` and `max_steps` are not read by the runner). Built in exactly one
/// place, the engine's `prepare`.
///
/// The request's context travels beside it, in `context` (the engine moves it out of
/// `request`, whose `context` is then nil): one byte string of value tokens ([`EncodedValue`]),
/// which the runner decodes as `C`, straight into its own values, with no `Value` tree in
/// between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Execute<C = EncodedValue> {
    /// Must be [`PROTOCOL_VERSION`]; first field so a mismatch is recognisable.
    pub version: u32,
    pub limits: Limits,
    /// The program's signature is the runner's to check (context before, result after), as in
    /// an in-process run; tool signatures and tool-call limits are the engine's, around each
    /// `ToolCall` (see [`crate::tool_calls`]).
    pub request: RunRequest,
    /// The request's context (see above).
    pub context: C,
}

/// Frames the supervisor sends to a runner.
pub type SupervisorToRunner = SupervisorToRunnerOf<EncodedValue>;

/// [`SupervisorToRunner`] with `Execute`'s context decoded as `C` (the runner's own values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SupervisorToRunnerOf<C> {
    Setup(Setup),
    Execute(Box<Execute<C>>),
    /// The answer to the runner's `ToolCall` with the same `id`.
    ToolResult {
        id: u64,
        result: Result<Value, ToolFailure>,
    },
}

/// Whether the runner's landlock restriction is in force, as reported in `Ready`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LandlockStatus {
    /// `Setup.landlock` was false.
    NotRequested,
    /// Every filesystem access right this kernel's ABI knows is denied.
    Enforced,
    /// The kernel's landlock ABI is older than the one we asked for: only some rights are denied.
    Partial,
    /// The kernel has no landlock (or it is disabled): not restricted.
    Unsupported,
}

/// Frames a runner sends to the supervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunnerToSupervisor {
    /// Hardening is complete (rlimits, fds closed, landlock, seccomp); send `Execute`.
    Ready { landlock: LandlockStatus },
    /// The program called a tool; answer with `ToolResult { id, .. }`.
    ToolCall { id: u64, name: String, args: Value },
    /// The run ended (success or failure); the runner exits 0 after this.
    Finished(Box<Step>),
    /// The heap budget was exceeded; the runner exits [`exit_code::MEMORY`] after this.
    MemoryExceeded { peak_bytes: u64 },
    /// The granted data (context, memory, history) is imported and the program's CPU limit set
    /// ([`program_cpu_secs`]): the program's clock starts now. Sent at most once, before any
    /// `ToolCall`; a run that fails before its program starts sends none.
    Imported,
}

/// The zygote (`ptc-runner --zygote`): a pre-initialised, single-threaded runner that forks one
/// child per runner the engine asks for. Its control socket is [`RUNNER_IPC_FD`], an `AF_UNIX`
/// `SOCK_SEQPACKET` socket: one message per packet, each packet one frame (header + body).
///
/// ```text
/// zygote: Hello{magic,version}                   once, when initialised
/// engine: Fork{id}      + SCM_RIGHTS [ipc socket, stderr pipe]   (Setup already queued in the socket)
/// zygote: Forked{id,pid} + SCM_RIGHTS [pidfd]  |  ForkFailed{id,errno}
/// zygote: Exited{pid,..}                        after reaping the child (always after its Forked)
/// ```
/// The zygote never reads the runner's `Setup`: the child reads it from its own socket, exactly as
/// an exec'd runner does.
pub mod zygote {
    use serde::{Deserialize, Serialize};

    /// The runner's command-line argument that selects zygote mode.
    pub const ARG: &str = "--zygote";
    /// The largest control packet either side sends or accepts.
    pub const MAX_PACKET: u32 = 256;
    /// Number of fds a `Fork` request carries: the child's IPC socket, then its stderr.
    pub const FORK_FDS: usize = 2;
    /// `Hello.magic`: "ptczygot". A binary that is no zygote cannot produce it by accident.
    pub const MAGIC: u64 = 0x7074_637a_7967_6f74;

    /// Engine → zygote.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Request {
        /// Fork one runner whose fd 3 and fd 2 are the two fds passed with this packet.
        Fork { id: u64 },
    }

    /// Zygote → engine.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Report {
        /// The zygote is initialised ([`MAGIC`]) and speaks `version`
        /// ([`super::PROTOCOL_VERSION`]).
        Hello { magic: u64, version: u32 },
        /// Request `id` became process `pid`; its pidfd travels with this packet.
        Forked { id: u64, pid: i32 },
        /// Request `id` produced no process (`errno` from fork, pidfd_open or a malformed request).
        ForkFailed { id: u64, errno: i32 },
        /// Process `pid` ended and was reaped: its wait status, split, and its rusage CPU time.
        Exited {
            pid: i32,
            code: Option<i32>,
            signal: Option<i32>,
            cpu_us: u64,
        },
    }
}

impl Message for zygote::Request {}
impl Message for zygote::Report {}

/// Enum tags of the variants whose first field is the protocol version.
const TAG_SETUP: u32 = 0;
const TAG_EXECUTE: u32 = 1;

impl<C: Serialize + serde::de::DeserializeOwned> Message for SupervisorToRunnerOf<C> {
    fn version(&self) -> Option<u32> {
        match self {
            SupervisorToRunnerOf::Setup(s) => Some(s.version),
            SupervisorToRunnerOf::Execute(e) => Some(e.version),
            SupervisorToRunnerOf::ToolResult { .. } => None,
        }
    }

    fn peek_version(body: &[u8]) -> Option<u32> {
        match peek_tag_and_u32(body)? {
            (TAG_SETUP | TAG_EXECUTE, version) => Some(version),
            _ => None,
        }
    }
}

impl Message for RunnerToSupervisor {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::codec::{CodecError, DEFAULT_MAX_FRAME, decode_body, encode_frame};

    fn body(frame: &[u8]) -> &[u8] {
        &frame[crate::codec::HEADER_LEN..]
    }

    #[test]
    fn the_main_stack_is_fixed_and_paid_from_the_heap_budget() {
        let d = Limits::default();
        let s = Setup::for_limits(&d, Vec::new(), true);
        assert_eq!(s.rlimits.stack_bytes, RUNNER_STACK_BYTES);
        assert_eq!(s.heap_budget_bytes + RUNNER_STACK_BYTES, d.heap_bytes);
        let small = Limits {
            heap_bytes: 16 << 20,
            ..Limits::default()
        };
        let s = Setup::for_limits(&small, Vec::new(), true);
        assert_eq!(s.rlimits.stack_bytes, RUNNER_STACK_BYTES);
        assert_eq!(s.heap_budget_bytes, 12 << 20);
        assert_ne!(RUNNER_STACK_BYTES, 8 << 20, "see RUNNER_STACK_BYTES");
    }

    #[test]
    fn setup_and_execute_round_trip() {
        let setup = SupervisorToRunner::Setup(Setup::for_limits(
            &Limits::default(),
            vec![1, 2, 3, 4],
            true,
        ));
        let frame = encode_frame(&setup, DEFAULT_MAX_FRAME).unwrap();
        assert_eq!(
            decode_body::<SupervisorToRunner>(body(&frame), DEFAULT_MAX_FRAME).unwrap(),
            setup
        );

        let exec = SupervisorToRunner::Execute(Box::new(Execute {
            version: PROTOCOL_VERSION,
            limits: Limits::default(),
            context: Value::Vector(vec![Value::Int(1), Value::string("x")]).into(),
            request: RunRequest {
                program: "(+ 1 2)".into(),
                history: vec![Value::Float(1.5)],
                tools: vec![ToolDecl {
                    name: "t".into(),
                    signature: Some("() -> :int".into()),
                    description: None,
                }],
                signature: Some("{x :int} -> :int".into()),
                validation: crate::signature::Mode::Strict,
                ..RunRequest::default()
            },
        }));
        let frame = encode_frame(&exec, DEFAULT_MAX_FRAME).unwrap();
        assert_eq!(
            decode_body::<SupervisorToRunner>(body(&frame), DEFAULT_MAX_FRAME).unwrap(),
            exec
        );
    }

    #[test]
    fn runner_messages_round_trip() {
        let fail = crate::Fail::new(crate::FailReason::ToolError, "boom").with_detail("k", 1i64);
        let msgs = vec![
            RunnerToSupervisor::Ready {
                landlock: LandlockStatus::Partial,
            },
            RunnerToSupervisor::ToolCall {
                id: 7,
                name: "get".into(),
                args: Value::Nil,
            },
            RunnerToSupervisor::Finished(Box::new(Step::failed(fail, Value::Nil, Vec::new()))),
            RunnerToSupervisor::MemoryExceeded {
                peak_bytes: 1 << 30,
            },
        ];
        for m in msgs {
            let frame = encode_frame(&m, DEFAULT_MAX_FRAME).unwrap();
            assert_eq!(
                decode_body::<RunnerToSupervisor>(body(&frame), DEFAULT_MAX_FRAME).unwrap(),
                m
            );
        }
    }

    #[test]
    fn version_mismatch_is_named() {
        let mut s = Setup::for_limits(&Limits::default(), vec![], false);
        s.version = PROTOCOL_VERSION + 1;
        let frame = encode_frame(&SupervisorToRunner::Setup(s), DEFAULT_MAX_FRAME).unwrap();
        let err = decode_body::<SupervisorToRunner>(body(&frame), DEFAULT_MAX_FRAME).unwrap_err();
        assert!(
            matches!(err, CodecError::Version { ours: PROTOCOL_VERSION, theirs } if theirs == PROTOCOL_VERSION + 1)
        );
    }

    #[test]
    fn version_mismatch_is_named_even_when_the_layout_changed() {
        // A future Setup: tag 0, version 9, then fields we do not know.
        let frame = encode_frame(&(0u32, 9u32, "something new"), DEFAULT_MAX_FRAME).unwrap();
        let err = decode_body::<SupervisorToRunner>(body(&frame), DEFAULT_MAX_FRAME).unwrap_err();
        assert!(
            matches!(err, CodecError::Version { theirs: 9, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn rlimits_follow_limits() {
        let l = Limits {
            cpu_ms: 1001,
            heap_bytes: 256 << 20,
            ..Limits::default()
        };
        let r = RunnerRlimits::for_limits(&l);
        // The program's second and a bit, plus 16 × the deadline for importing 16 MiB.
        assert_eq!(r.cpu_soft_secs, 18);
        let no_context = Limits {
            max_context_bytes: 0,
            ..l
        };
        assert_eq!(RunnerRlimits::for_limits(&no_context).cpu_soft_secs, 2);
        assert!(r.data_bytes > l.heap_bytes);
        // The grant for granted data comes on top of the heap and its slack.
        assert!(r.data_bytes >= l.heap_bytes + GRANT_PER_CONTEXT_BYTE * l.max_context_bytes);
        assert_eq!(
            Setup::for_limits(&l, Vec::new(), true).grant_bytes,
            GRANT_PER_CONTEXT_BYTE * l.max_context_bytes
        );
        assert_eq!((r.fsize_bytes, r.core_bytes), (0, 0));
        let none = Limits {
            cpu_ms: 0,
            max_context_bytes: 0,
            ..l
        };
        assert_eq!(RunnerRlimits::for_limits(&none).cpu_soft_secs, 1);
    }

    #[test]
    fn the_import_allowance_is_the_deadline_per_mib() {
        let l = Limits::default();
        assert_eq!(import_allowance_ms(&l, 0), 0);
        assert_eq!(import_allowance_ms(&l, 1), 1);
        assert_eq!(import_allowance_ms(&l, 1 << 20), l.timeout_ms);
        assert_eq!(import_allowance_ms(&l, 16 << 20), 16 * l.timeout_ms);
        let huge = Limits {
            timeout_ms: u64::MAX,
            ..l
        };
        assert_eq!(import_allowance_ms(&huge, u64::MAX), u64::MAX);
        // The program's CPU limit counts from what the import used, in whole seconds.
        assert_eq!(program_cpu_secs(&l, 0), 1);
        assert_eq!(program_cpu_secs(&l, 1), 2);
        assert_eq!(program_cpu_secs(&l, 3_000), 4);
        assert_eq!(program_cpu_secs(&Limits { cpu_ms: 0, ..l }, 0), 1);
    }

    #[test]
    fn zygote_messages_fit_a_packet() {
        use zygote::{MAX_PACKET, Report, Request};
        let req = Request::Fork { id: u64::MAX };
        let frame = encode_frame(&req, MAX_PACKET).unwrap();
        assert_eq!(
            decode_body::<Request>(body(&frame), MAX_PACKET).unwrap(),
            req
        );
        let rep = Report::Exited {
            pid: i32::MAX,
            code: None,
            signal: Some(31),
            cpu_us: u64::MAX,
        };
        let frame = encode_frame(&rep, MAX_PACKET).unwrap();
        assert!(frame.len() <= MAX_PACKET as usize);
        assert_eq!(
            decode_body::<Report>(body(&frame), MAX_PACKET).unwrap(),
            rep
        );
    }

    #[test]
    fn a_runner_frame_is_never_taken_for_a_zygote_hello() {
        use zygote::{MAGIC, MAX_PACKET, Report};
        let ready = RunnerToSupervisor::Ready {
            landlock: LandlockStatus::Enforced,
        };
        let frame = encode_frame(&ready, MAX_PACKET).unwrap();
        let decoded = decode_body::<Report>(body(&frame), MAX_PACKET);
        assert!(
            !matches!(decoded, Ok(Report::Hello { magic, .. }) if magic == MAGIC),
            "{decoded:?}"
        );
    }

    #[test]
    fn exit_codes_are_distinct_and_named() {
        use exit_code::*;
        let codes = [MEMORY, SETUP, PROTOCOL, NO_SECCOMP, PARENT_GONE, PANIC];
        for (i, a) in codes.iter().enumerate() {
            assert!(describe(*a).is_some());
            assert!(codes.iter().skip(i + 1).all(|b| a != b));
        }
    }

    /// Literal values for given limits, not the formula again (mutation testing: the slack's
    /// `/ 4` turned into `% 4` or `* 4`, and `describe`'s names, passed the formula's tests).
    #[test]
    fn rlimits_and_exit_names_are_these_literal_values() {
        const MIB: u64 = 1 << 20;
        // RLIMIT_DATA = heap + max(heap / 4, 32 MiB) + 8 × max_context_bytes (16 MiB by default).
        for (heap, data) in [(32, 192), (256, 448), (1024, 1408)] {
            let l = Limits {
                heap_bytes: heap * MIB,
                ..Limits::default()
            };
            assert_eq!(
                RunnerRlimits::for_limits(&l).data_bytes,
                data * MIB,
                "{heap} MiB"
            );
            assert_eq!(grant_bytes(&l), 128 * MIB);
        }
        use exit_code::describe;
        let names = [
            (0, "finished"),
            (91, "memory_exceeded"),
            (92, "setup_failed"),
            (93, "protocol_error"),
            (94, "no_seccomp_filter"),
            (95, "parent_gone"),
            (101, "panic"),
        ];
        for (code, name) in names {
            assert_eq!(describe(code), Some(name), "{code}");
        }
        assert_eq!(
            (describe(1), describe(90), describe(-1)),
            (None, None, None)
        );
    }
}
