//! Hardening of the single-use runner process. One of the two files of `ptc-runner` with `unsafe`
//! (the other is `zygote.rs`, the fork server); the interpreter library forbids it.
//!
//! [`run`] is one linear sequence of named steps, in this order and for these reasons:
//!
//! 1. `prepare_frame`: pre-encode `MemoryExceeded`, so the allocator can report an overrun later
//!    without allocating.
//! 2. `take_ipc_fd`: fd 3 must be an open socket; it becomes the only channel to the supervisor.
//! 3. `read_setup`: the first frame is trusted (the supervisor sends it before any untrusted
//!    input); it carries the rlimits, the heap budget and the compiled seccomp program.
//! 4. `die_with_parent`: PR_SET_PDEATHSIG=SIGKILL, then `getppid()` is compared with the parent
//!    seen at start: if the parent died before the prctl, no signal would ever come.
//! 5. `not_dumpable`: PR_SET_DUMPABLE=0 — no core dumps, no ptrace or /proc peeking by same-uid
//!    processes.
//! 6. `reset_inherited_state`: no blocked signals, SIGXCPU/SIGXFSZ at their default (killing)
//!    action, cwd `/` — whatever the spawner's thread had must not weaken the limits below.
//!    Then `switch_user`: the policy's `run_as` uid/gid (groups dropped first), before
//!    namespaces so an unprivileged user namespace still works; the credential change clears
//!    PDEATHSIG and dumpability, so steps 4 and 5 run again right after it.
//!    Then `enter_namespaces`: the user namespace first (it grants what the others need without
//!    host privileges), then net, ipc, uts, mount, as the Setup asks; before the rlimits and
//!    filters, which forbid `unshare`.
//! 7. `apply_rlimits`: DATA (heap), CPU (soft = ceil(s), hard = soft + 1: SIGXCPU then SIGKILL),
//!    NOFILE, FSIZE 0, CORE 0, STACK (`RUNNER_STACK_BYTES`, fixed; deeper recursion runs on stacker
//!    segments, which RLIMIT_DATA counts). Then the
//!    counting allocator's budget is armed (a little below RLIMIT_DATA, so the budget trips first
//!    and is reported; RLIMIT_DATA is the kernel's backstop).
//! 8. `close_other_fds`: close_range(4, ∞) — whatever the spawner leaked is gone before landlock
//!    (an fd opened earlier would bypass landlock's path checks; a forked runner keeps only fd 4,
//!    the zygote's landlock ruleset, until step 10 and then closes it too), and fd numbers are
//!    free for:
//! 9. `prime_runtime`: lazy initialisations that read /proc (stacker's stack bounds, regex's pool
//!    size, std's hash seeds) run now, while they still can, instead of dying mid-run; and a
//!    fixed warm-up program runs so a warm-pool runner starts `Execute` with its code paged in.
//! 10. `restrict_filesystem`: a landlock ruleset that handles every filesystem and network right
//!     and scopes signals and abstract sockets, with no rule allowing anything. Best effort: an
//!     older kernel enforces what it knows, and the status goes back in `Ready`. A forked runner
//!     restricts itself with a duplicate of the ruleset the zygote created once
//!     ([`prepare_ruleset`]): the same rights, without a ruleset created and released per run.
//! 11. `no_new_privs` then `install_seccomp`: the allowlist compiled from
//!     `policies/seccomp/runner.json`. Last, because it forbids the syscalls of the steps above.
//!     Fail closed: without a valid program the runner exits `NO_SECCOMP` and never runs input.
//! 12. `Ready`, then read one `Execute` and import its data; then `Imported`, after lowering
//!     RLIMIT_CPU to the program's own limit (`start_program_cpu`); evaluate (tool calls go over
//!     the socket), write `Finished`, exit 0.
//!
//! A runner forked by the zygote (`zygote.rs`, the other file of the runner's hardening code) takes
//! the same path from step 2 via [`run_forked`], without step 9: the lazy state was built once in
//! the zygote, and is inherited. (It used to rerun the warm-up program to take its copy-on-write
//! faults before `Ready`: 6–10 % of an execution's CPU over all processes, for a latency gain
//! this machine's noise hides; the faults now come during `Execute`, BENCHMARKS.md.) Either way
//! the process `_exit`s right after its last frame.
//!
//! A failing step is a [`SetupError`] naming the step and its errno: the runner writes
//! `setup failed at <step>: <ERRNO>` to stderr and exits with its code from
//! `ptc_shared::protocol::exit_code` (see `setup_error.rs`). Invariants: single threaded
//! throughout (seccomp forbids clone); nothing untrusted is read before step 12.
#![allow(unsafe_code)]

use crate::alloc;
use crate::ipc::{self, Ipc};
use crate::setup_error::{SetupError, errno_in, step};
use landlock::{
    ABI, Access, AccessFs, AccessNet, RulesetAttr, RulesetCreated, RulesetStatus, Scope,
};
use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, signal, sigprocmask};
use ptc_shared::codec::U64_FRAME_MAX;
use ptc_shared::protocol::{
    LandlockStatus, RUNNER_IPC_FD, RunnerRlimits, RunnerToSupervisor, Setup, SupervisorToRunner,
    SupervisorToRunnerOf, exit_code, program_cpu_secs,
};
use ptc_shared::{Step, seccomp};
use rlimit::Resource;
use std::alloc::{GlobalAlloc, Layout, System};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering::Relaxed};

/// What the test probe does instead of executing a program (see `probe.rs`).
pub type Probe = Box<dyn FnOnce(&mut Ipc) -> Step>;

/// Landlock ABI whose rights we ask for; older kernels get the subset they know.
const LANDLOCK_ABI: ABI = ABI::V6;

/// The way hardening or the conversation failed: each maps to one exit code.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Exit {
    /// A hardening step failed (it is reported on stderr by [`Exit::report`]).
    Setup(SetupError),
    /// A frame after `Ready` was unexpected, or the socket failed.
    Protocol,
    /// The zygote's engine is gone (its control socket failed).
    ParentGone,
}

impl From<SetupError> for Exit {
    fn from(e: SetupError) -> Exit {
        Exit::Setup(e)
    }
}

impl Exit {
    pub(crate) fn code(self) -> i32 {
        match self {
            Exit::Setup(e) => e.code(),
            Exit::Protocol => exit_code::PROTOCOL,
            Exit::ParentGone => exit_code::PARENT_GONE,
        }
    }

    /// Says on stderr which step failed, then gives the exit code.
    pub(crate) fn report(self) -> i32 {
        if let Exit::Setup(e) = self {
            e.report();
        }
        self.code()
    }
}

/// How this runner process came to be: exec'd by the supervisor, or forked by the zygote (whose
/// runtime was primed before the fork, so the child must not redo it).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start<'z> {
    Exec,
    /// Forked, with the zygote's landlock ruleset when it prepared one.
    Forked(Option<&'z RulesetCreated>),
}

/// Hardens this process, serves one execution (or runs `probe`), and exits.
pub fn run(probe: Option<Probe>) -> ! {
    let code = match harden_and_serve(probe, Start::Exec) {
        Ok(()) => 0,
        Err(e) => e.report(),
    };
    exit_now(code)
}

/// The entry of a child forked by the zygote, once fds 2 and 3 are in place: the same hardening
/// and conversation as [`run`]. A panic is caught here and exits `PANIC`, like an exec'd runner's
/// panic leaving `main`, without unwinding into the zygote's frames (whose fds are not ours).
/// `ruleset` is the zygote's prepared landlock ruleset, open on [`RULESET_FD`] (see
/// [`prepare_ruleset`]).
pub(crate) fn run_forked(probe: Option<Probe>, ruleset: Option<&RulesetCreated>) -> ! {
    let serve = std::panic::AssertUnwindSafe(|| harden_and_serve(probe, Start::Forked(ruleset)));
    let served = std::panic::catch_unwind(serve);
    let code = match served {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => e.report(),
        Err(_) => exit_code::PANIC,
    };
    exit_now(code)
}

/// Ends the process at once: the supervisor waits for this exit after `Finished`, and nothing is
/// left to flush (no stdio is used), so destructors and libc teardown would only add latency.
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit ends the process immediately; it runs no destructors and touches no memory.
    unsafe { libc::_exit(code) }
}

fn harden_and_serve(probe: Option<Probe>, start: Start<'_>) -> Result<(), Exit> {
    let parent = std::os::unix::process::parent_id();
    prepare_frame()?;
    let mut ipc = take_ipc_fd()?;
    let setup = read_setup(&mut ipc)?;
    die_with_parent(parent)?;
    not_dumpable()?;
    reset_inherited_state()?;
    switch_user(setup.run_as)?;
    // Changing credentials clears the parent-death signal and resets dumpability (credentials(7)):
    // set both again, or a runner of a dead zygote would outlive it under `run_as`.
    die_with_parent(parent)?;
    not_dumpable()?;
    enter_namespaces(setup.namespaces)?;
    apply_rlimits(&setup.rlimits)?;
    alloc::arm(setup.heap_budget_bytes);
    let prepared = match start {
        Start::Exec => None,
        Start::Forked(ruleset) => ruleset,
    };
    // The zygote's ruleset stays open until landlock is applied, then goes with the rest.
    close_fds_from(RULESET_FD + i32::from(prepared.is_some()))?;
    // A forked runner inherits the zygote's primed runtime (see `prime_runtime`).
    if let Start::Exec = start {
        prime_runtime();
    }
    let landlock = restrict_filesystem(setup.landlock, prepared)?;
    if prepared.is_some() {
        close_other_fds()?;
    }
    no_new_privs()?;
    install_seccomp(&setup.seccomp_bpf)?;
    let grant = setup.grant_bytes;
    drop(setup);
    ipc.send(&RunnerToSupervisor::Ready { landlock })
        .map_err(|_| Exit::Protocol)?;
    let mut step = match probe {
        Some(probe) => probe(&mut ipc),
        None => serve(&mut ipc, grant)?,
    };
    step.usage.memory_bytes = alloc::peak();
    ipc.send_finished(step).map_err(|_| Exit::Protocol)
}

/// Reads the one `Execute` under the grant for granted data, and runs it (the budget is re-based
/// once its data is imported: `ipc::execute`).
fn serve(ipc: &mut Ipc, grant: u64) -> Result<Step, Exit> {
    alloc::open_grant(grant);
    match ipc.recv_as() {
        Ok(SupervisorToRunnerOf::Execute(exec)) => {
            ipc::execute(ipc, *exec).map_err(|_| Exit::Protocol)
        }
        _ => Err(Exit::Protocol),
    }
}

/// Pre-encodes the allocator's `MemoryExceeded` frame (it cannot allocate when it needs it).
pub(crate) fn prepare_frame() -> Result<(), SetupError> {
    step(
        alloc::prepare_frame().map_err(|_| Errno::ENOMEM),
        SetupError::PrepareFrame,
    )
}

fn take_ipc_fd() -> Result<Ipc, SetupError> {
    ipc_fd_is_socket()?;
    // SAFETY: fd 3 is open (fstat succeeded) and inherited from the spawner; nothing else in
    // this process refers to it, so taking ownership once here is sound.
    let fd = unsafe { OwnedFd::from_raw_fd(RUNNER_IPC_FD) };
    Ok(Ipc::new(UnixStream::from(fd)))
}

/// Fails unless fd 3 is open and a socket (the runner's IPC socket, or the zygote's control one).
pub(crate) fn ipc_fd_is_socket() -> Result<(), SetupError> {
    step(fd3_socket(), SetupError::IpcFd)
}

fn fd3_socket() -> Result<(), Errno> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat only writes a `struct stat` into the buffer we own; a closed fd makes it
    // return -1 and write nothing.
    let rc = unsafe { libc::fstat(RUNNER_IPC_FD, st.as_mut_ptr()) };
    if rc != 0 {
        return Err(Errno::last());
    }
    // SAFETY: fstat returned 0, so it initialised the whole struct.
    let st = unsafe { st.assume_init() };
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(Errno::ENOTSOCK);
    }
    Ok(())
}

fn read_setup(ipc: &mut Ipc) -> Result<Setup, SetupError> {
    let setup = match ipc.recv() {
        Ok(SupervisorToRunner::Setup(setup)) => Ok(setup),
        Ok(_) => Err(Errno::EPROTO),
        Err(e) => Err(errno_in(&e, Errno::EPROTO)),
    };
    step(setup, SetupError::ReadSetup)
}

pub(crate) fn die_with_parent(parent_at_start: u32) -> Result<(), SetupError> {
    step(
        prctl::set_pdeathsig(Signal::SIGKILL),
        SetupError::SetPdeathsig,
    )?;
    let alive = if std::os::unix::process::parent_id() == parent_at_start {
        Ok(())
    } else {
        Err(Errno::ESRCH)
    };
    step(alive, SetupError::ParentGone)
}

pub(crate) fn not_dumpable() -> Result<(), SetupError> {
    step(prctl::set_dumpable(false), SetupError::SetDumpable)
}

/// Undoes what a spawner could have passed down by accident: a blocked signal mask or an ignored
/// SIGXCPU/SIGXFSZ would stop the CPU and file-size limits from ending the process, and the
/// working directory should name nothing of the host's.
fn reset_inherited_state() -> Result<(), SetupError> {
    step(
        sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None),
        SetupError::Sigprocmask,
    )?;
    for sig in [Signal::SIGXCPU, Signal::SIGXFSZ] {
        // SAFETY: installing the default disposition runs no code of ours in signal context.
        let reset = unsafe { signal(sig, SigHandler::SigDfl) };
        step(reset, SetupError::SignalDefault)?;
    }
    let chdir = std::env::set_current_dir("/").map_err(|e| errno_in(&e, Errno::EIO));
    step(chdir, SetupError::Chdir)
}

/// Becomes the policy's `run_as` user: supplementary groups dropped, then gid, then uid (in that
/// order: after `setuid` the process could no longer change its groups). Verified, not assumed.
fn switch_user(run_as: Option<(u32, u32)>) -> Result<(), SetupError> {
    use nix::unistd::{Gid, Uid, getegid, geteuid, setgid, setgroups, setuid};
    let Some((uid, gid)) = run_as else {
        return Ok(());
    };
    step(setgroups(&[]), SetupError::Setgroups)?;
    step(setgid(Gid::from_raw(gid)), SetupError::Setgid)?;
    step(setuid(Uid::from_raw(uid)), SetupError::Setuid)?;
    let verified = if geteuid().as_raw() == uid && getegid().as_raw() == gid {
        Ok(())
    } else {
        Err(Errno::EPERM)
    };
    step(verified, SetupError::VerifyUser)
}

/// Enters the namespaces the policy asks for: user first (it grants the capabilities the
/// others need when the supervisor is not root), then net, ipc, uts and mount together. The
/// runner is single-threaded, which `unshare(CLONE_NEWUSER)` requires.
fn enter_namespaces(bits: u32) -> Result<(), SetupError> {
    use nix::sched::{CloneFlags, unshare};
    use ptc_shared::protocol::ns;
    if bits & ns::USER != 0 {
        step(unshare(CloneFlags::CLONE_NEWUSER), SetupError::UnshareUser)?;
    }
    let mut rest = CloneFlags::empty();
    for (bit, flag) in [
        (ns::NET, CloneFlags::CLONE_NEWNET),
        (ns::IPC, CloneFlags::CLONE_NEWIPC),
        (ns::UTS, CloneFlags::CLONE_NEWUTS),
        (ns::MOUNT, CloneFlags::CLONE_NEWNS),
    ] {
        if bits & bit != 0 {
            rest |= flag;
        }
    }
    if !rest.is_empty() {
        step(unshare(rest), SetupError::UnshareNamespaces)?;
    }
    Ok(())
}

fn apply_rlimits(r: &RunnerRlimits) -> Result<(), SetupError> {
    let data = (r.data_bytes, r.data_bytes);
    set_limit(Resource::DATA, data, SetupError::RlimitData)?;
    let cpu = (r.cpu_soft_secs, r.cpu_soft_secs.saturating_add(1));
    set_limit(Resource::CPU, cpu, SetupError::RlimitCpu)?;
    set_limit(
        Resource::NOFILE,
        (r.nofile, r.nofile),
        SetupError::RlimitNofile,
    )?;
    let fsize = (r.fsize_bytes, r.fsize_bytes);
    set_limit(Resource::FSIZE, fsize, SetupError::RlimitFsize)?;
    let core = (r.core_bytes, r.core_bytes);
    set_limit(Resource::CORE, core, SetupError::RlimitCore)?;
    let stack = (r.stack_bytes, r.stack_bytes);
    set_limit(Resource::STACK, stack, SetupError::RlimitStack)
}

/// Starts the program's CPU limit once its data is in (`Imported`): RLIMIT_CPU becomes the
/// program's `cpu_ms` from the CPU used so far ([`program_cpu_secs`]), hard one second above.
/// Until now it allowed the import its allowance too ([`RunnerRlimits::for_limits`]). Only ever
/// lowers the limit (a runner is never privileged, and the new hard limit is clamped to the old):
/// the seccomp filter allows `prlimit64` on this process's RLIMIT_CPU alone.
pub(crate) fn start_program_cpu(limits: &ptc_shared::Limits) -> Result<(), Errno> {
    use nix::time::{ClockId, clock_gettime};
    let used = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID)?;
    let secs = u64::try_from(used.tv_sec()).unwrap_or(0);
    let nanos = u64::try_from(used.tv_nsec()).unwrap_or(0);
    let used_ms = secs.saturating_mul(1000).saturating_add(nanos / 1_000_000);
    let soft = program_cpu_secs(limits, used_ms);
    let os = |e: std::io::Error| errno_in(&e, Errno::EINVAL);
    let (mut old_soft, mut old_hard) = (0, 0);
    rlimit::prlimit(0, Resource::CPU, None, Some((&mut old_soft, &mut old_hard))).map_err(os)?;
    let hard = soft.saturating_add(1).min(old_hard);
    rlimit::prlimit(0, Resource::CPU, Some((soft.min(hard), hard)), None).map_err(os)
}

/// Sets a limit to `(soft, hard)`, never above the current hard limit (raising it would need
/// privileges).
pub(crate) fn set_limit(
    resource: Resource,
    (soft, hard): (u64, u64),
    variant: fn(Errno) -> SetupError,
) -> Result<(), SetupError> {
    let os = |e: std::io::Error| errno_in(&e, Errno::EINVAL);
    let set = rlimit::getrlimit(resource)
        .map_err(os)
        .and_then(|(_, current)| {
            let hard = hard.min(current);
            rlimit::setrlimit(resource, soft.min(hard), hard).map_err(os)
        });
    step(set, variant)
}

/// Closes every fd above the IPC socket (3).
pub(crate) fn close_other_fds() -> Result<(), SetupError> {
    close_fds_from(RUNNER_IPC_FD + 1)
}

/// Closes every fd from `first` up (`first` > 3).
pub(crate) fn close_fds_from(first: i32) -> Result<(), SetupError> {
    let from = first;
    let first = step(
        libc::c_uint::try_from(first).map_err(|_| Errno::EBADF),
        SetupError::CloseRange,
    )?;
    // SAFETY: no Rust object in this process owns an fd above 3 at this point (std opens none
    // at startup and the steps before keep none), so closing them cannot invalidate an owner.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    // Kernels before 5.9 lack close_range: close one by one up to a generous bound.
    for fd in from..(1 << 16) {
        // SAFETY: as above; EBADF for fds that are not open is expected and ignored.
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// Runs, once, the lazy initialisations that read /proc and would otherwise happen mid-run,
/// where landlock denies them and seccomp kills the `openat`: stacker's stack bounds (from
/// /proc/self/maps, cached per thread; without them it would mmap a new stack on every call) and
/// regex's pool size (std's available_parallelism reads /proc/self/cgroup; cached in a static).
pub(crate) fn prime_runtime() {
    let _ = stacker::remaining_stack();
    let _ = regex::Regex::new("a+").map(|re| re.is_match("a"));
    let _ = std::collections::hash_map::RandomState::new();
    // A fixed, trusted warm-up run: the interpreter's lazy tables are built and its code pages
    // faulted in now, off the critical path of a warm-pool execution (halves Execute→Finished).
    let warm = ptc_runner::api::RunOptions::default();
    let _ = ptc_runner::api::run(WARM_UP, warm);
    alloc::reset_peak();
}

/// The warm-up program: a little of reading, collections, higher-order calls and printing.
const WARM_UP: &str = "(let [m {:a [1 2.5 \"s\"]}] (str (get m :a) (count (map inc [1 2]))))";

/// Where a forked runner finds the zygote's prepared landlock ruleset.
pub(crate) const RULESET_FD: i32 = RUNNER_IPC_FD + 1;

/// The ruleset every runner restricts itself with: every filesystem and network right handled,
/// signals and abstract sockets scoped, no rule allowing anything.
fn ruleset() -> Result<landlock::RulesetCreated, SetupError> {
    let os = |e: landlock::RulesetError| errno_in(&e, Errno::EINVAL);
    let ruleset = landlock::Ruleset::default()
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))
        .and_then(|r| r.handle_access(AccessNet::from_all(LANDLOCK_ABI)))
        .and_then(|r| r.scope(Scope::from_all(LANDLOCK_ABI)))
        .map_err(os);
    let ruleset = step(ruleset, SetupError::LandlockRuleset)?;
    step(ruleset.create().map_err(os), SetupError::LandlockCreate)
}

/// The zygote's half of landlock, done once: the ruleset created (two syscalls, and its release
/// after restricting, that each forked runner no longer pays), open on [`RULESET_FD`]. `None`
/// (each runner then creates its own) unless fds 0–3 are open and [`RULESET_FD`] is free, so the
/// new descriptor is known to land on it. The zygote itself is not restricted.
pub(crate) fn prepare_ruleset() -> Option<RulesetCreated> {
    let open = |fd: i32| {
        // SAFETY: F_GETFD only reads the descriptor's flags; a closed fd gives -1 (EBADF).
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    };
    if !(0..=RUNNER_IPC_FD).all(open) || open(RULESET_FD) {
        return None;
    }
    let created = ruleset().ok()?;
    // Single-threaded: the only descriptor made since the check is the ruleset's (none at all
    // where the kernel has no landlock, and then each runner reports it unsupported itself).
    open(RULESET_FD).then_some(created)
}

/// Three named steps: the ruleset's rights (`landlock_ruleset`, no syscall), then
/// `landlock_create_ruleset` (or, forked, a duplicate of the zygote's prepared ruleset), then
/// `landlock_restrict_self`.
fn restrict_filesystem(
    wanted: bool,
    prepared: Option<&RulesetCreated>,
) -> Result<LandlockStatus, SetupError> {
    if !wanted {
        return Ok(LandlockStatus::NotRequested);
    }
    let os = |e: landlock::RulesetError| errno_in(&e, Errno::EINVAL);
    let created = match prepared {
        Some(zygotes) => {
            let dup = zygotes.try_clone().map_err(|e| errno_in(&e, Errno::EMFILE));
            step(dup, SetupError::LandlockCreate)?
        }
        None => ruleset()?,
    };
    let status = step(
        created.restrict_self().map_err(os),
        SetupError::LandlockRestrict,
    )?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockStatus::Enforced,
        RulesetStatus::PartiallyEnforced => LandlockStatus::Partial,
        RulesetStatus::NotEnforced => LandlockStatus::Unsupported,
    })
}

fn no_new_privs() -> Result<(), SetupError> {
    step(prctl::set_no_new_privs(), SetupError::NoNewPrivs)
}

/// Fail closed: without a program that decodes and installs, the runner never runs input.
fn install_seccomp(bpf: &[u8]) -> Result<(), SetupError> {
    let program = seccomp::decode_program(bpf).map_err(|_| Errno::EINVAL);
    let program = step(program, SetupError::SeccompProgram)?;
    let installed = seccompiler::apply_filter(&program).map_err(|e| errno_in(&e, Errno::EINVAL));
    step(installed, SetupError::SeccompInstall)
}

/// The runner's global allocator: the system allocator, counted against the heap budget, with
/// free lists for small blocks in front of it (`alloc.rs` header: size classes, what is counted).
/// Over budget, or when the system allocator returns null (RLIMIT_DATA), the process writes the
/// pre-built `MemoryExceeded` frame and exits `exit_code::MEMORY`: it never returns null.
#[derive(Debug)]
pub struct CountingAlloc;

/// Freed small blocks, one LIFO list per size class, linked through their first word. Every
/// block on list `c` was allocated from `System` with `alloc::class_bytes(c)` bytes, so it serves
/// any request of class `c`. Not thread safe: used only once `alloc::arm`ed (see there).
#[derive(Debug)]
struct FreeLists {
    heads: [AtomicPtr<u8>; alloc::CLASSES],
    counts: [AtomicU32; alloc::CLASSES],
}

impl FreeLists {
    const fn new() -> FreeLists {
        FreeLists {
            heads: [const { AtomicPtr::new(std::ptr::null_mut()) }; alloc::CLASSES],
            counts: [const { AtomicU32::new(0) }; alloc::CLASSES],
        }
    }

    /// A block of `class`, or null when its list is empty.
    ///
    /// # Safety
    /// Single-threaded use only; `class < alloc::CLASSES`.
    unsafe fn pop(&self, class: usize) -> *mut u8 {
        let head = self.heads[class].load(Relaxed);
        if !head.is_null() {
            // SAFETY: `head` is a free block of at least 24 bytes, 16-aligned, that `push` linked
            // by writing the next block's address into its first word.
            let next = unsafe { head.cast::<*mut u8>().read() };
            self.heads[class].store(next, Relaxed);
            let n = self.counts[class].load(Relaxed);
            self.counts[class].store(n.saturating_sub(1), Relaxed);
        }
        head
    }

    /// Keeps `block` (freed, of `class`) unless the list is full; false: the caller frees it.
    ///
    /// # Safety
    /// Single-threaded use only; `block` was allocated from `System` with
    /// `alloc::class_bytes(class)` bytes, is no longer used, and is not on a list.
    unsafe fn push(&self, class: usize, block: *mut u8) -> bool {
        let n = self.counts[class].load(Relaxed);
        if n >= alloc::CACHE_LIMITS[class] {
            return false;
        }
        // SAFETY: `block` is ours now, at least 24 bytes and 16-aligned (malloc's alignment).
        unsafe {
            block
                .cast::<*mut u8>()
                .write(self.heads[class].load(Relaxed))
        };
        self.heads[class].store(block, Relaxed);
        self.counts[class].store(n + 1, Relaxed);
        true
    }
}

static FREE_LISTS: FreeLists = FreeLists::new();

fn charge(size: usize) {
    if let Err(would_be_live) = alloc::reserve(size) {
        memory_exceeded(would_be_live);
    }
}

fn memory_exceeded(peak: u64) -> ! {
    let mut frame = [0u8; U64_FRAME_MAX];
    let len = alloc::exceeded_frame(peak, &mut frame);
    if len > 0 {
        // SAFETY: `frame` is a live stack buffer of at least `len` bytes. fd 3 is a plain number
        // here: if it is not open the write fails harmlessly.
        unsafe { libc::write(RUNNER_IPC_FD, frame.as_ptr().cast(), len) };
    }
    // SAFETY: _exit ends the process immediately, running no destructors and allocating nothing.
    unsafe { libc::_exit(exit_code::MEMORY) }
}

/// The layout a block is really allocated with: a small request at its class's size.
fn block_layout(layout: Layout) -> (Option<usize>, Layout) {
    match alloc::class_of(layout.size(), layout.align()) {
        // The class size is at least the request's and a multiple of 8, so this cannot fail.
        Some(c) => match Layout::from_size_align(alloc::class_bytes(c), layout.align()) {
            Ok(l) => (Some(c), l),
            Err(_) => (None, layout),
        },
        None => (None, layout),
    }
}

/// Charges `layout` and, once armed, takes a block of its class from the free list: the whole
/// of a small allocation in the usual case. `None`: the (charged) block must come from `System`.
///
/// # Safety
/// Called only from `GlobalAlloc::alloc`/`alloc_zeroed` with their caller's `layout`.
#[inline(always)]
unsafe fn take_cached(layout: Layout) -> Option<*mut u8> {
    charge(layout.size());
    if !alloc::caching() {
        return None;
    }
    let c = alloc::class_of(layout.size(), layout.align())?;
    // SAFETY: armed, so single threaded; `c` is a valid class.
    let p = unsafe { FREE_LISTS.pop(c) };
    (!p.is_null()).then_some(p)
}

impl CountingAlloc {
    /// A block for `layout`, already charged, from `System`: the allocation its class's free
    /// list could not serve. Kept out of line, so the free-list path stays short.
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc`; `zeroed` asks for zeroed memory.
    #[inline(never)]
    unsafe fn fresh_block(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        let (_, real) = block_layout(layout);
        // SAFETY: `real` is `layout`, or a larger size with the same alignment.
        let p = unsafe {
            if zeroed {
                System.alloc_zeroed(real)
            } else {
                System.alloc(real)
            }
        };
        if p.is_null() {
            memory_exceeded(alloc::live());
        }
        p
    }
}

// SAFETY: every block comes from `System` (directly or through a free list that only holds
// `System` blocks of the class's size, see `FreeLists`) with at least the requested size and
// alignment, and goes back to `System` with the layout it was allocated with; the accounting
// never allocates. Instead of returning null the process exits, which `GlobalAlloc` permits.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `take_cached`'s; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe {
            match take_cached(layout) {
                Some(p) => p,
                None => self.fresh_block(layout, false),
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `take_cached`'s; the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        unsafe {
            match take_cached(layout) {
                Some(p) => {
                    p.write_bytes(0, layout.size());
                    p
                }
                None => self.fresh_block(layout, true),
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        alloc::release(layout.size());
        if alloc::caching()
            && let Some(c) = alloc::class_of(layout.size(), layout.align())
            // SAFETY: armed, so single threaded; `ptr` came from this allocator with `layout`,
            // so it holds class `c`'s bytes (from a list, or from `System` at that size).
            && unsafe { FREE_LISTS.push(c, ptr) }
        {
            return;
        }
        // SAFETY: `ptr` came from `System` with `layout`'s real layout.
        unsafe { System.dealloc(ptr, block_layout(layout).1) };
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old {
            charge(new_size - old);
        }
        // SAFETY: the caller guarantees `new_size`, rounded to `layout.align()`, is a valid size.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let ((class, real), (new_class, new_real)) =
            (block_layout(layout), block_layout(new_layout));
        let p = match (class, new_class) {
            // The block already holds the class's bytes.
            (Some(c), Some(n)) if c == n => ptr,
            // A small block moving to another class (a vector outgrowing its class): the new
            // block from that class's free list, the old one onto its own, as alloc and
            // dealloc would, where glibc's realloc would copy through its own bins.
            (Some(c), Some(n)) if alloc::caching() => {
                // SAFETY: armed, so single threaded; `n` is a valid class.
                let q = unsafe { FREE_LISTS.pop(n) };
                let q = if q.is_null() {
                    // SAFETY: `new_real` is class `n`'s layout, as every block of its list has.
                    unsafe { self.fresh_block(new_real, false) }
                } else {
                    q
                };
                // SAFETY: both blocks are ours and distinct; the old holds `old` bytes and the
                // new at least `new_size`. Then `ptr` (class `c`, no longer used) goes back.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr, q, old.min(new_size));
                    if !FREE_LISTS.push(c, ptr) {
                        System.dealloc(ptr, real);
                    }
                }
                q
            }
            _ => {
                // SAFETY: `ptr` came from `System` with `real`, and `new_real` is `new_layout`
                // or its class's larger size (so a small block again holds its whole class);
                // the caller upholds `realloc`'s contract.
                let p = unsafe { System.realloc(ptr, real, new_real.size()) };
                if p.is_null() {
                    memory_exceeded(alloc::live());
                }
                p
            }
        };
        if new_size < old {
            alloc::release(old - new_size);
        }
        p
    }
}

/// Forbidden operations for the `ptc-runner-probe` test binary, which shares this file. The
/// production runner never calls them (hence `dead_code` is allowed); they exist to prove that
/// the hardened process cannot do them. Each returns the OS error when denied without a kill.
#[allow(dead_code)]
pub mod forbidden {
    use std::io;

    fn check(rc: libc::c_long) -> io::Result<()> {
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// mmap(PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS): executable memory.
    pub fn map_executable() -> io::Result<()> {
        map(
            libc::PROT_READ | libc::PROT_EXEC,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        )
    }

    /// mmap(PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS): memory shared across processes.
    pub fn map_shared() -> io::Result<()> {
        map(
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
        )
    }

    fn map(prot: libc::c_int, flags: libc::c_int) -> io::Result<()> {
        // SAFETY: a fresh anonymous mapping at an address the kernel picks aliases nothing;
        // it is unmapped right away and never dereferenced.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), 4096, prot, flags, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `p` is the 4096-byte mapping created above and nothing refers to it.
        check(libc::c_long::from(unsafe { libc::munmap(p, 4096) }))
    }

    /// mmap read-write, then mprotect to read-execute: the W^X bypass.
    pub fn protect_executable() -> io::Result<()> {
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh private anonymous mapping aliases nothing and is never dereferenced.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                prot,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: changes the protection of our own unused mapping only.
        check(libc::c_long::from(unsafe {
            libc::mprotect(p, 4096, libc::PROT_READ | libc::PROT_EXEC)
        }))
    }

    /// A raw syscall with integer arguments (the probe's table of dangerous syscalls). The tests
    /// pass only small integers and null pointers, which the kernel checks (EFAULT, EINVAL) before
    /// acting, and arguments chosen to be harmless even if a broken filter let the call through.
    pub fn raw_syscall(nr: libc::c_long, a: [libc::c_long; 6]) -> io::Result<libc::c_long> {
        // SAFETY: test-only probe; no argument is a pointer into this process's memory (null or
        // an integer), so the kernel cannot write through one into live Rust objects.
        let rc = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
        check(rc).map(|()| rc)
    }

    /// fork(): a new process. The child, if one were ever created, exits at once.
    pub fn fork() -> io::Result<()> {
        // SAFETY: the process is single-threaded, so the child may run anything; it only _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: ends the child immediately without touching the parent's state.
            unsafe { libc::_exit(0) };
        }
        check(libc::c_long::from(pid))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_layout(class: usize) -> Layout {
        Layout::from_size_align(alloc::class_bytes(class), 8).expect("layout")
    }

    /// A block of `class` straight from `System`, as the allocator makes them.
    fn system_block(class: usize) -> *mut u8 {
        // SAFETY: a valid, non-zero layout.
        let p = unsafe { System.alloc(class_layout(class)) };
        assert!(!p.is_null());
        p
    }

    /// Random allocs and frees through one set of free lists against a model (a stack of addresses
    /// per class, bounded like the lists): every pop returns the model's block, a full list
    /// refuses, and live blocks never share memory (each keeps its own fill byte until freed).
    #[test]
    fn free_lists_follow_a_model_under_random_allocs_and_frees() {
        let lists = FreeLists::new();
        let mut model: Vec<Vec<usize>> = vec![Vec::new(); alloc::CLASSES];
        let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
        let (mut reused, mut refused) = (0, [0; alloc::CLASSES]);
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..320_000u32 {
            // Phases that mostly allocate, then mostly free, so lists fill up (past the smallest
            // class's limit too) and run dry.
            let grow = (round / 80_000) % 2 == 0;
            let r = next();
            if live.is_empty() || (r % 8 < 5) == grow {
                let class = usize::try_from(r >> 8).unwrap_or(0) % 2 * (alloc::CLASSES - 1);
                // SAFETY: single threaded; a valid class.
                let p = unsafe { lists.pop(class) };
                assert_eq!(p as usize, model[class].pop().unwrap_or(0));
                reused += usize::from(!p.is_null());
                let p = if p.is_null() { system_block(class) } else { p };
                let tag = (round % 251) as u8;
                // SAFETY: `p` is a block of `class_bytes(class)` bytes, ours.
                unsafe { p.write_bytes(tag, alloc::class_bytes(class)) };
                live.push((p, class, tag));
            } else {
                let i = usize::try_from(r >> 16).unwrap_or(0) % live.len();
                let (p, class, tag) = live.swap_remove(i);
                // SAFETY: `p` is live and holds `class_bytes(class)` bytes.
                let bytes = unsafe { std::slice::from_raw_parts(p, alloc::class_bytes(class)) };
                assert!(
                    bytes.iter().all(|&b| b == tag),
                    "a live block was overwritten"
                );
                let room = model[class].len() < alloc::CACHE_LIMITS[class] as usize;
                // SAFETY: single threaded; `p` is a freed `System` block of `class`.
                assert_eq!(unsafe { lists.push(class, p) }, room);
                if room {
                    model[class].push(p as usize);
                } else {
                    refused[class] += 1;
                    // SAFETY: `p` came from `System` with this layout.
                    unsafe { System.dealloc(p, class_layout(class)) };
                }
            }
        }
        let (first, last) = (refused[0], refused[alloc::CLASSES - 1]);
        assert!(
            reused > 0 && first > 0 && last > 0,
            "reused {reused}, refused {first} and {last}"
        );
        for (class, stack) in model.iter_mut().enumerate() {
            loop {
                // SAFETY: single threaded; a valid class.
                let p = unsafe { lists.pop(class) };
                assert_eq!(p as usize, stack.pop().unwrap_or(0));
                if p.is_null() {
                    break;
                }
                // SAFETY: `p` came from `System` with this layout and is no longer used.
                unsafe { System.dealloc(p, class_layout(class)) };
            }
        }
        for (p, class, _) in live {
            // SAFETY: `p` came from `System` with this layout and is no longer used.
            unsafe { System.dealloc(p, class_layout(class)) };
        }
    }
}
