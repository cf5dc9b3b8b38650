//! Hardening of the single-use runner process. One of the three files of `ptc-runner` with
//! `unsafe` (the others are `zygote.rs`, the fork server, and `heap.rs`, the counting allocator);
//! the interpreter library forbids it.
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
use ptc_shared::protocol::{
    LandlockStatus, RUNNER_IPC_FD, RunnerRlimits, RunnerToSupervisor, Setup, SupervisorToRunner,
    exit_code, program_cpu_secs,
};
use ptc_shared::{Step, seccomp};
use rlimit::Resource;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

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
    match ipc.recv_execute() {
        Ok(exec) => ipc::execute(ipc, exec).map_err(|_| Exit::Protocol),
        Err(_) => Err(Exit::Protocol),
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
