//! `ptc-runner-probe`: a TEST-ONLY twin of `ptc-runner` for the hostile-probe tests.
//!
//! It compiles the very same `harden.rs`, `heap.rs`, `ipc.rs` and `alloc.rs` and hardens exactly like the
//! runner (same Setup, same seccomp program), then, instead of reading `Execute`, attempts the
//! one operation named by its first argument and reports in `Finished`:
//! `return` = `"allowed"` if the operation succeeded (a sandbox hole), or a failed Step whose
//! message is `denied: <os error>` (errno in `details.errno`) if the kernel refused it without
//! killing the process. A seccomp kill shows as SIGSYS to the parent. `fail-at=STEP` makes one
//! hardening step fail instead. Never ship or spawn it in production: it exists to prove the
//! hardening holds.

mod alloc;
mod harden;
mod heap;
mod ipc;
mod setup_error;
mod zygote;

use ipc::Ipc;
use ptc_shared::protocol::RunnerToSupervisor;
use ptc_shared::{Fail, FailReason, Step, Value};
use std::io;

#[global_allocator]
static GLOBAL: heap::CountingAlloc = heap::CountingAlloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next().unwrap_or_default();
    if first == ptc_shared::protocol::zygote::ARG {
        // `--zygote OP`: a probe fork server; every forked child attempts OP.
        let op = args.next().unwrap_or_default();
        zygote::serve(&move || Some(probe_for(op.clone())))
    }
    harden::run(Some(probe_for(first)))
}

/// The probe for `op`. `fail-at=STEP` instead makes hardening step STEP fail with EPERM (see
/// `setup_error::fail_at`), to test how a failed step is reported; an unknown STEP is a probe
/// that reports it.
fn probe_for(op: String) -> harden::Probe {
    if let Some(step) = op.strip_prefix("fail-at=")
        && !setup_error::fail_at(step)
    {
        let message = format!("no hardening step named {step:?}");
        return Box::new(move |_: &mut Ipc| {
            Step::failed(
                Fail::new(FailReason::InvalidRequest, message),
                Value::Nil,
                Vec::new(),
            )
        });
    }
    // Read before hardening: getppid is not in the filter, and calling it afterwards would kill
    // the probe before it reached the operation under test.
    let parent =
        nix::unistd::Pid::from_raw(i32::try_from(std::os::unix::process::parent_id()).unwrap_or(1));
    Box::new(move |ipc: &mut Ipc| attempt(&op, parent, ipc))
}

fn attempt(op: &str, parent: nix::unistd::Pid, ipc: &mut Ipc) -> Step {
    let outcome: io::Result<Value> = match op {
        "open" => std::fs::File::open("/etc/hostname").map(|_| Value::Nil),
        "create" => std::fs::File::create("/tmp/ptc-probe-created").map(|_| Value::Nil),
        "socket" => std::net::UdpSocket::bind("127.0.0.1:0").map(|_| Value::Nil),
        "unix-socket" => std::os::unix::net::UnixDatagram::unbound().map(|_| Value::Nil),
        "exec" => Err(std::os::unix::process::CommandExt::exec(
            &mut std::process::Command::new("/bin/true"),
        )),
        "spawn" => std::process::Command::new("/bin/true")
            .spawn()
            .map(|_| Value::Nil),
        "thread" => std::thread::Builder::new().spawn(|| ()).map(|_| Value::Nil),
        "fork" => harden::forbidden::fork().map(|()| Value::Nil),
        "ptrace" => nix::sys::ptrace::attach(parent)
            .map(|()| Value::Nil)
            .map_err(io::Error::from),
        "kill-parent" => nix::sys::signal::kill(parent, nix::sys::signal::Signal::SIGCONT)
            .map(|()| Value::Nil)
            .map_err(io::Error::from),
        "mmap-exec" => harden::forbidden::map_executable().map(|()| Value::Nil),
        "mmap-shared" => harden::forbidden::map_shared().map(|()| Value::Nil),
        "mprotect-exec" => harden::forbidden::protect_executable().map(|()| Value::Nil),
        sys if sys.starts_with("sys=") => raw_syscall(sys),
        // Not forbidden: these check that ordinary runner paths survive the filter.
        "env" => Ok(Value::Int(
            i64::try_from(std::env::vars_os().count()).unwrap_or(i64::MAX),
        )),
        "tool-call" => tool_call(ipc),
        "alloc-bomb" => alloc_bomb(),
        "churn" => Ok(churn()),
        "clock" => Ok(clock()),
        "spin" => start_program(ipc).map(|()| Value::Int(spin())),
        "stack-overflow" => Ok(Value::Int(recurse(0, [0; 64]))),
        "panic" => panic!("probe panic"),
        other => {
            let fail = Fail::new(
                FailReason::InvalidRequest,
                format!("unknown probe {other:?}"),
            );
            return Step::failed(fail, Value::Nil, Vec::new());
        }
    };
    report(outcome)
}

/// `sys=NR:A0:A1:...`: the raw syscall NR with up to six integer arguments (missing ones 0).
fn raw_syscall(op: &str) -> io::Result<Value> {
    let mut parts = op.trim_start_matches("sys=").split(':');
    let parse = |s: Option<&str>| s.map_or(Ok(0), str::parse::<libc::c_long>);
    let bad = |_| io::Error::from_raw_os_error(libc::EINVAL);
    let nr = parse(parts.next()).map_err(bad)?;
    let mut args = [0; 6];
    for a in &mut args {
        *a = parse(parts.next()).map_err(bad)?;
    }
    harden::forbidden::raw_syscall(nr, args).map(Value::Int)
}

fn report(outcome: io::Result<Value>) -> Step {
    match outcome {
        Ok(v) => Step {
            return_value: Some(Value::Vector(vec![Value::string("allowed"), v])),
            ..Step::default()
        },
        Err(e) => {
            let errno = i64::from(e.raw_os_error().unwrap_or(0));
            let fail = Fail::new(FailReason::SandboxViolation, format!("denied: {e}"))
                .with_detail("errno", errno);
            Step::failed(fail, Value::Nil, Vec::new())
        }
    }
}

/// One tool call round trip through the real IPC host path.
fn tool_call(ipc: &mut Ipc) -> io::Result<Value> {
    let call = RunnerToSupervisor::ToolCall {
        id: 1,
        name: "echo".into(),
        args: Value::Int(41),
    };
    ipc.send(&call).map_err(io::Error::other)?;
    match ipc.recv().map_err(io::Error::other)? {
        ptc_shared::protocol::SupervisorToRunner::ToolResult {
            id: 1,
            result: Ok(v),
        } => Ok(v),
        _ => Err(io::Error::other("unexpected reply")),
    }
}

/// The allocation patterns an interpreter produces: many small objects, a vector doubling into
/// the mmap range (realloc → mremap), hash maps (seeded from getrandom), frees and shrinks.
fn churn() -> Value {
    let mut small: Vec<String> = (0..50_000).map(|i| format!("item-{i}")).collect();
    let mut big: Vec<u64> = Vec::new();
    for i in 0..(1u64 << 20) {
        big.push(i);
    }
    let map: std::collections::HashMap<u64, usize> = big
        .iter()
        .step_by(4096)
        .map(|&k| (k, small.len()))
        .collect();
    small.truncate(10);
    small.shrink_to_fit();
    big.truncate(1000);
    big.shrink_to_fit();
    drop(map);
    let huge = vec![0u8; 8 << 20];
    Value::Int(i64::try_from(huge.len() + big.len() + small.len()).unwrap_or(0))
}

/// Deadline checks read the monotonic and wall clocks.
fn clock() -> Value {
    let start = std::time::Instant::now();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Value::Vector(vec![
        Value::Int(i64::try_from(start.elapsed().as_nanos()).unwrap_or(0)),
        Value::Int(i64::try_from(wall).unwrap_or(i64::MAX)),
    ])
}

/// What a runner does once its data is in (`ipc::IpcHost::imported`): the program's CPU limit
/// (under the default limits: one second from now), then `Imported`.
fn start_program(ipc: &mut Ipc) -> io::Result<()> {
    harden::start_program_cpu(&ptc_shared::Limits::default()).map_err(io::Error::from)?;
    ipc.send(&RunnerToSupervisor::Imported)
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Burns CPU until RLIMIT_CPU ends the process.
fn spin() -> i64 {
    let mut x = 1i64;
    loop {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
}

/// Unbounded recursion, to observe how a stack overflow ends under the filter.
fn recurse(depth: i64, pad: [u8; 64]) -> i64 {
    let next = std::hint::black_box(pad);
    if depth == i64::MAX {
        0
    } else {
        recurse(depth + 1, next) + i64::from(next[0])
    }
}

/// Allocates and touches memory until the heap budget stops the process.
fn alloc_bomb() -> io::Result<Value> {
    let mut keep: Vec<Vec<u8>> = Vec::new();
    loop {
        keep.push(vec![1u8; 1 << 20]);
        if keep.len() > 1 << 16 {
            return Ok(Value::Int(i64::try_from(keep.len()).unwrap_or(0)));
        }
    }
}
