//! The zygote: `ptc-runner --zygote`, a fork server for runners. Part of the runner's hardening
//! code with `harden.rs` (with `heap.rs`, the only three files of `ptc-runner` with `unsafe`).
//!
//! Started by the engine's spawner thread with `posix_spawn`, exactly like a runner (empty
//! environment, fds 0–2 on /dev/null, its own session), but with a `SOCK_SEQPACKET` control socket
//! on fd 3. It does the expensive, trusted start-up once — the runtime priming and warm-up program of
//! `harden::prime_runtime` — then serves `ptc_shared::protocol::zygote` requests, one packet each:
//! `Fork { id }` carries two fds (the child's IPC socket, with its `Setup` frame already queued,
//! and its stderr pipe). For each it forks; the child puts them on fds 3 and 2, closes every other
//! fd, calls `setsid`, and continues into `harden::run_forked`: read `Setup`, rlimits, landlock,
//! no_new_privs, seccomp, `Ready`, one `Execute`, `Finished`, `_exit` — the path of an exec'd runner
//! from its first read on. The zygote never reads a runner's `Setup` or anything untrusted.
//!
//! Invariants:
//! - Single-threaded for its whole life (nothing here or in priming starts a thread), so `fork` is
//!   sound: the child's memory is a consistent copy, no lock is held by a thread that is gone.
//! - It dies with the spawner thread (PR_SET_PDEATHSIG=SIGKILL, then a `getppid` check), and every
//!   child sets PR_SET_PDEATHSIG against the zygote: engine gone → zygote gone → runners gone.
//! - The serving loop never touches the heap (stack buffers, raw `recvmsg`/`sendmsg`): after
//!   each fork every page the zygote writes is a copy-on-write fault, so it writes only the top
//!   of its stack (3–4 faults per fork, against 7–9 when it allocated).
//! - SIGCHLD is blocked and read from a signalfd; the mask is cleared again in every child by
//!   `harden`'s `reset_inherited_state`, and the signalfd is closed by the child's `close_range`.
//! - Per-run work that depends on nothing in `Setup` is done here once: the landlock ruleset
//!   (created at start on fd 4, `harden::prepare_ruleset`; the zygote itself is not restricted)
//!   is duplicated by each child that applies it, and closed by every child before `Ready`.
//!
//! Pid reuse — why kills cannot hit the wrong process. The engine is not the runners' parent, so it
//! cannot wait for them, and a plain pid could be recycled once the zygote reaps. So the zygote,
//! right after `fork` and before it could possibly reap that child (reaping happens only in a later
//! turn of its loop), opens a pidfd for it — race-free, because an unreaped child's pid cannot be
//! reused — and sends it with `Forked`. The engine signals only through that pidfd: after the
//! zygote has reaped, `pidfd_send_signal` fails with ESRCH instead of reaching a new process with
//! the old number. So the zygote may reap as soon as a child exits, with no acknowledgement round
//! trip: `wait4` gives the exact status and rusage (CPU time), reported in `Exited`, which is sent
//! on the same ordered socket after the `Forked` of that pid, so the engine always knows a pid
//! before it hears that it ended. (Holding zombies until the engine acked would have worked too,
//! but costs a message per execution and leaks zombies whenever the engine is slow.)
//!
//! Known trade-off of every fork server: children share the zygote's address-space layout (ASLR
//! offsets) and std's per-thread hash seeds. Seccomp (no exec mappings, no new processes) and the
//! per-execution limits are the defence; nothing secret lives in the zygote.
#![allow(unsafe_code)]

use crate::harden::{self, Exit};
use crate::setup_error::{SetupError, step};
use landlock::RulesetCreated;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::ForkResult;
use ptc_shared::Limits;
use ptc_shared::codec::{HEADER_LEN, decode_body, encode_frame_into};
use ptc_shared::protocol::zygote::{FORK_FDS, MAGIC, MAX_PACKET, Report, Request};
use ptc_shared::protocol::{PROTOCOL_VERSION, RUNNER_IPC_FD, RunnerRlimits};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The control socket: the zygote's fd 3 (the runner's IPC fd number).
const CONTROL: RawFd = RUNNER_IPC_FD;

/// What a forked child runs instead of a program (the test probe); `None` in production.
pub type ProbeFactory = dyn Fn() -> Option<harden::Probe>;

/// Initialises once, then forks runners on request until the engine closes the control socket.
pub fn serve(probe: &ProbeFactory) -> ! {
    let code = match init().and_then(|(sfd, ruleset)| serve_loop(&sfd, ruleset.as_ref(), probe)) {
        Ok(()) => 0,
        Err(e) => e.report(),
    };
    harden::exit_now(code)
}

/// The zygote's start-up: its own hardening, the runtime priming, the landlock ruleset its
/// children restrict themselves with (`harden::prepare_ruleset`, on fd 4 when there is one),
/// the SIGCHLD signalfd, then `Hello`.
fn init() -> Result<(SignalFd, Option<RulesetCreated>), Exit> {
    let parent = std::os::unix::process::parent_id();
    harden::prepare_frame()?;
    harden::ipc_fd_is_socket()?;
    // Whatever the spawner's process leaked past fd 3 (a daemon inherits fds from its own
    // parent) is closed before anything else: the zygote holds only 0–3 and its signalfd.
    harden::close_other_fds()?;
    harden::die_with_parent(parent)?;
    harden::not_dumpable()?;
    // stacker caches the main thread's stack bounds, computed from RLIMIT_STACK, when priming:
    // give the zygote the runners' stack limit first, so its children inherit the right bounds.
    let stack = RunnerRlimits::for_limits(&Limits::default()).stack_bytes;
    harden::set_limit(
        rlimit::Resource::STACK,
        (stack, u64::MAX),
        SetupError::RlimitStack,
    )?;
    harden::prime_runtime();
    // Whatever priming opened is closed, so the ruleset's descriptor lands on fd 4.
    harden::close_other_fds()?;
    let ruleset = harden::prepare_ruleset();
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    step(
        sigprocmask(SigmaskHow::SIG_BLOCK, Some(&chld), None),
        SetupError::Sigprocmask,
    )?;
    let sfd = step(
        SignalFd::with_flags(&chld, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC),
        SetupError::Signalfd,
    )?;
    report(
        &Report::Hello {
            magic: MAGIC,
            version: PROTOCOL_VERSION,
        },
        None,
    )?;
    Ok((sfd, ruleset))
}

fn serve_loop(
    sfd: &SignalFd,
    ruleset: Option<&RulesetCreated>,
    probe: &ProbeFactory,
) -> Result<(), Exit> {
    // SAFETY: fd 3 is open for the zygote's whole life (checked in `init`, never closed here).
    let control = unsafe { BorrowedFd::borrow_raw(CONTROL) };
    loop {
        let mut fds = [
            PollFd::new(control, PollFlags::POLLIN),
            PollFd::new(sfd.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return Err(Exit::Protocol),
        }
        let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
        let (control_ready, chld_ready) = (ready(&fds[0]), ready(&fds[1]));
        if chld_ready {
            while let Ok(Some(_)) = sfd.read_signal() {}
            reap_all()?;
        }
        if control_ready && !handle_request(ruleset, probe)? {
            return Ok(());
        }
    }
}

/// Room for the control message of one request (`CMSG_SPACE` of two fds is 24 bytes), aligned
/// for `cmsghdr`.
#[repr(C, align(8))]
struct CmsgSpace([u8; 64]);

/// Reads and serves one request; `false` when the engine has closed the socket.
///
/// Nothing here or in [`fork_runner`] and [`report`] touches the heap (so raw `recvmsg` and
/// `sendmsg`: nix's allocate for control messages): right after each fork every page the zygote
/// writes is a copy-on-write fault, so the loop keeps its buffers on the stack, whose top pages
/// it writes anyway.
fn handle_request(ruleset: Option<&RulesetCreated>, probe: &ProbeFactory) -> Result<bool, Exit> {
    let mut buf = [0u8; MAX_PACKET as usize + HEADER_LEN];
    let (len, fds) = match recv_request(&mut buf) {
        Ok(got) => got,
        Err(Errno::EINTR | Errno::EAGAIN) => return Ok(true),
        Err(_) => return Ok(false),
    };
    if len == 0 {
        return Ok(false);
    }
    let Some(Request::Fork { id }) = parse(&buf, len) else {
        // Not a request we understand: the engine speaks another protocol; stop serving it.
        return Err(Exit::Protocol);
    };
    let Some([ipc, err]) = fds else {
        return report(
            &Report::ForkFailed {
                id,
                errno: Errno::EINVAL as i32,
            },
            None,
        )
        .map(|()| true);
    };
    fork_runner(id, [&ipc, &err], ruleset, probe)?;
    Ok(true)
}

/// One packet into `buf`, and the fds that came with it (each a new descriptor of ours): the
/// request's two, or `None` (every fd closed) when there were not exactly two.
fn recv_request(buf: &mut [u8]) -> Result<(usize, Option<[OwnedFd; FORK_FDS]>), Errno> {
    let mut space = CmsgSpace([0; 64]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control buffer).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.0.as_mut_ptr().cast();
    msg.msg_controllen = space.0.len();
    // SAFETY: `msg` points at `iov` (over `buf`) and `space`, both alive across the call; the
    // kernel writes at most their lengths.
    let n = unsafe { libc::recvmsg(CONTROL, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    let len = usize::try_from(n).map_err(|_| Errno::last())?;
    let mut got: [Option<OwnedFd>; FORK_FDS] = [None, None];
    let mut count = 0usize;
    // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR walk the control buffer the kernel just filled, checking
    // each header against `msg_controllen`; they return null past the end.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !c.is_null() {
        // SAFETY: `c` is a complete, aligned cmsghdr inside `space` (see above).
        let hdr = unsafe { &*c };
        if hdr.cmsg_level == libc::SOL_SOCKET && hdr.cmsg_type == libc::SCM_RIGHTS {
            // SAFETY: CMSG_LEN only computes a length.
            let head = unsafe { libc::CMSG_LEN(0) } as usize;
            let n_fds = hdr.cmsg_len.saturating_sub(head) / std::mem::size_of::<RawFd>();
            // SAFETY: the data of an SCM_RIGHTS header is `n_fds` ints inside `space`.
            let data = unsafe { libc::CMSG_DATA(c) }.cast::<RawFd>();
            for i in 0..n_fds {
                // SAFETY: `i < n_fds`, within the header's data (read unaligned to be safe);
                // SCM_RIGHTS installed each fd in this process just now, so we are its only
                // owner (a surplus one is dropped, so closed).
                let owned = unsafe { OwnedFd::from_raw_fd(data.add(i).read_unaligned()) };
                if let Some(slot) = got.get_mut(count) {
                    *slot = Some(owned);
                }
                count += 1;
            }
        }
        // SAFETY: as for CMSG_FIRSTHDR.
        c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
    }
    let truncated = msg.msg_flags & libc::MSG_CTRUNC != 0;
    let fds = match (count, got) {
        (FORK_FDS, [Some(a), Some(b)]) if !truncated => Some([a, b]),
        _ => None,
    };
    Ok((len, fds))
}

fn parse(buf: &[u8], len: usize) -> Option<Request> {
    let packet = buf.get(..len)?;
    let (header, body) = packet.split_at_checked(HEADER_LEN)?;
    let declared = u32::from_be_bytes(header.try_into().ok()?);
    if usize::try_from(declared).ok()? != body.len() {
        return None;
    }
    decode_body::<Request>(body, MAX_PACKET).ok()
}

/// Forks one runner and reports it (with a pidfd) or the failure.
fn fork_runner(
    id: u64,
    [ipc, err]: [&OwnedFd; FORK_FDS],
    ruleset: Option<&RulesetCreated>,
    probe: &ProbeFactory,
) -> Result<(), Exit> {
    // SAFETY: the zygote is single-threaded (module invariant), so the child is a consistent copy
    // of it; the child only calls `become_runner`, which never returns into the zygote's loop.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Child) => become_runner(ipc.as_raw_fd(), err.as_raw_fd(), ruleset, probe),
        Ok(ForkResult::Parent { child }) => match pidfd_open(child.as_raw()) {
            Ok(pidfd) => report(
                &Report::Forked {
                    id,
                    pid: child.as_raw(),
                },
                Some(pidfd.as_raw_fd()),
            ),
            Err(errno) => {
                // Without a pidfd the engine could not kill it safely: it is our unreaped child,
                // so killing it by pid cannot hit another process; the reap reports nothing
                // the engine knows, and it is ignored there.
                let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
                report(
                    &Report::ForkFailed {
                        id,
                        errno: errno as i32,
                    },
                    None,
                )
            }
        },
        Err(errno) => report(
            &Report::ForkFailed {
                id,
                errno: errno as i32,
            },
            None,
        ),
    }
}

/// The child: fd 3 ← `ipc`, fd 2 ← `err`, every other fd above 3 closed (but the zygote's
/// landlock ruleset on fd 4, closed once applied), a new session, then the runner's hardening
/// exactly as after an exec. A failure here is reported like any hardening step's (on the new
/// fd 2 when it got that far).
fn become_runner(
    ipc: RawFd,
    err: RawFd,
    ruleset: Option<&RulesetCreated>,
    probe: &ProbeFactory,
) -> ! {
    let probe = probe();
    if let Err(e) = place_fds(ipc, err, ruleset.is_some()) {
        harden::exit_now(Exit::Setup(e).report());
    }
    harden::run_forked(probe, ruleset)
}

fn place_fds(ipc: RawFd, err: RawFd, keep_ruleset: bool) -> Result<(), SetupError> {
    // SAFETY: dup2 onto fixed numbers in this single-threaded child. Rust objects that owned fds
    // 2 and 3 (the zygote's control socket) belong to frames this child never returns to.
    let placed = unsafe { libc::dup2(ipc, RUNNER_IPC_FD) >= 0 && libc::dup2(err, 2) >= 0 };
    step(
        if placed { Ok(()) } else { Err(Errno::last()) },
        SetupError::Dup2,
    )?;
    harden::close_fds_from(harden::RULESET_FD + i32::from(keep_ruleset))?;
    step(nix::unistd::setsid().map(drop), SetupError::Setsid)
}

fn pidfd_open(pid: libc::pid_t) -> Result<OwnedFd, Errno> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1; it touches no memory.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) };
    let fd = RawFd::try_from(fd).map_err(|_| Errno::EBADF)?;
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: the kernel just returned this new descriptor; we are its only owner.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reaps every exited child (WNOHANG) and reports each with its status and CPU time.
fn reap_all() -> Result<(), Exit> {
    loop {
        let mut status: libc::c_int = 0;
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: wait4 writes only the status int and the rusage struct we own.
        let pid = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, usage.as_mut_ptr()) };
        if pid <= 0 {
            // 0: children remain but none has exited; -1: ECHILD (none at all).
            return Ok(());
        }
        // SAFETY: zero-initialised, and wait4 filled it in for the child it returned.
        let usage = unsafe { usage.assume_init() };
        report(&exited(pid, status, &usage), None)?;
    }
}

fn exited(pid: libc::pid_t, status: libc::c_int, usage: &libc::rusage) -> Report {
    let micros = |t: libc::timeval| {
        let s = u64::try_from(t.tv_sec).unwrap_or(0);
        let us = u64::try_from(t.tv_usec).unwrap_or(0);
        s.saturating_mul(1_000_000).saturating_add(us)
    };
    Report::Exited {
        pid,
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        cpu_us: micros(usage.ru_utime).saturating_add(micros(usage.ru_stime)),
    }
}

/// Sends one report, with `fd` attached when given. A failed send means the engine is gone.
fn report(msg: &Report, fd: Option<RawFd>) -> Result<(), Exit> {
    let mut frame = [0u8; MAX_PACKET as usize + HEADER_LEN];
    let len = encode_frame_into(msg, MAX_PACKET, &mut frame).map_err(|_| Exit::Protocol)?;
    let mut iov = libc::iovec {
        iov_base: frame.as_mut_ptr().cast(),
        iov_len: len,
    };
    let mut space = CmsgSpace([0; 64]);
    // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control buffer).
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = &mut iov;
    hdr.msg_iovlen = 1;
    if let Some(fd) = fd {
        let one = u32::try_from(std::mem::size_of::<RawFd>()).map_err(|_| Exit::Protocol)?;
        // SAFETY: CMSG_SPACE/CMSG_LEN only compute lengths.
        let (room, used) =
            unsafe { (libc::CMSG_SPACE(one) as usize, libc::CMSG_LEN(one) as usize) };
        hdr.msg_control = space.0.as_mut_ptr().cast();
        hdr.msg_controllen = room.min(space.0.len());
        // SAFETY: the control buffer holds one header and one fd (24 of its 64 bytes), aligned
        // for cmsghdr; CMSG_FIRSTHDR is non-null for a buffer that large.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&hdr);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = used;
            libc::CMSG_DATA(c).cast::<RawFd>().write_unaligned(fd);
        }
    }
    loop {
        // SAFETY: `hdr` points at `iov` (over `frame`) and `space`, alive across the call.
        let sent = unsafe { libc::sendmsg(CONTROL, &hdr, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        if Errno::last() != Errno::EINTR {
            return Err(Exit::ParentGone);
        }
    }
}
