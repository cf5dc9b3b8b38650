//! The engine's side of the zygote (`ptc-runner --zygote`, see `runner/src/zygote.rs`): one fork
//! server per shard (see `spawner.rs`), started and owned by the shard's spawner thread,
//! restarted when it dies.
//!
//! Protocol (`ptc_shared::protocol::zygote`, one frame per `SOCK_SEQPACKET` packet): the
//! requesting thread sends `Fork { id }` with the runner's IPC socket (its `Setup` already written
//! into it) and stderr pipe attached ([`ForkLink::fork`]); the shard's reader thread receives
//! `Forked { id, pid }` with the runner's pidfd, `ForkFailed { id, errno }`, and
//! `Exited { pid, .. }` once the zygote has reaped it.
//!
//! Invariants:
//! - A request is registered (by id) before its packet is sent, and a pid's exit slot before the
//!   next report is read, so no reply can arrive for an unknown request, and since the zygote sends
//!   `Exited` for a pid only after that pid's `Forked`, no exit for an unknown pid.
//! - Kills go through the pidfd the zygote opened while the child was still unreaped, so they
//!   cannot reach a recycled pid even though the zygote reaps without asking us (the race analysis
//!   is in the runner's `zygote.rs`).
//! - When the control socket ends (the zygote died), every pending request fails with
//!   [`ProcessError::ZygoteDied`] and every running runner's slot becomes [`Ended::Lost`] (their
//!   PR_SET_PDEATHSIG killed them): in-flight executions end as `runner_crashed` with that message.
//!   The next spawn starts a new zygote; while none can be started, runners are spawned cold.

use super::process::{
    Ended, ExitSlot, ProcessError, Reaper, RunnerFds, RunnerProc, Spawned, above, io, os,
    spawn_process,
};
use super::spawner::{Reply, SpawnJob};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use ptc_shared::codec::{HEADER_LEN, decode_body, encode_frame};
use ptc_shared::protocol::zygote::{ARG, MAGIC, MAX_PACKET, Report, Request};
use ptc_shared::protocol::{PROTOCOL_VERSION, RUNNER_IPC_FD};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};
use std::collections::HashMap;
use std::ffi::CString;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const SIGKILL: i32 = 9;
/// How long a starting zygote may take to initialise and say `Hello`.
const HELLO_TIMEOUT: Duration = Duration::from_millis(500);
/// After a zygote failed to start, runners are spawned cold for this long before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// A fork request unanswered for this long means the zygote is hung (stopped, say): it is
/// killed and replaced when the next request comes. A healthy fork takes well under 1 ms.
const FORK_TIMEOUT: Duration = Duration::from_secs(2);

/// What a shard's spawner thread publishes for requesting threads: its live zygote's link (to
/// send `Fork` from their own thread) and pid.
#[derive(Debug, Default)]
pub(crate) struct Published {
    link: Mutex<Option<Arc<ForkLink>>>,
    /// The live zygote's pid or 0 (for [`super::Engine::zygote_pids`]).
    pid: Arc<AtomicI32>,
}

impl Published {
    /// The live zygote's link, if it is alive and answering (else the spawner thread must act).
    pub fn usable(&self) -> Option<Arc<ForkLink>> {
        let link = self.link.lock().ok()?.clone()?;
        (link.shared.alive() && !link.shared.stalled(FORK_TIMEOUT)).then_some(link)
    }

    pub fn pid(&self) -> Option<i32> {
        Some(self.pid.load(Ordering::Acquire)).filter(|p| *p > 0)
    }

    fn set(&self, link: Option<Arc<ForkLink>>) {
        if let Ok(mut l) = self.link.lock() {
            *l = link;
        }
    }
}

/// A shard's zygote as its spawner thread keeps it: the current one, if any, and when to try
/// starting another.
#[derive(Debug)]
pub(crate) struct ZygoteKeeper {
    /// The shard's number (names its reader thread).
    shard: usize,
    path: CString,
    reaper: Reaper,
    current: Option<Zygote>,
    retry_at: Instant,
    published: Arc<Published>,
}

impl ZygoteKeeper {
    /// Starts the first zygote right away, so the first request does not wait for it.
    pub fn new(
        shard: usize,
        path: CString,
        reaper: Reaper,
        published: Arc<Published>,
    ) -> ZygoteKeeper {
        let mut b = ZygoteKeeper {
            shard,
            path,
            reaper,
            current: None,
            retry_at: Instant::now(),
            published,
        };
        b.zygote();
        b
    }

    /// Hands `job` to the zygote (its reply comes from the reader thread), or gives it back
    /// when there is no live zygote, for a cold spawn.
    pub fn fork(&mut self, job: SpawnJob) -> Result<(), SpawnJob> {
        match self.zygote() {
            Some(z) => z.link.fork(job, true),
            None => Err(job),
        }
    }

    /// The live zygote, (re)starting one if it is gone and the retry delay has passed.
    fn zygote(&mut self) -> Option<&mut Zygote> {
        if self
            .current
            .as_ref()
            .is_some_and(|z| !z.link.shared.alive())
        {
            tracing::warn!(shard = self.shard, "the zygote died; starting a new one");
            self.replace(None);
        }
        if self
            .current
            .as_ref()
            .is_some_and(|z| z.link.shared.stalled(FORK_TIMEOUT))
        {
            // Dropping it kills it; its reader then fails the pending requests.
            tracing::warn!(
                shard = self.shard,
                "the zygote does not answer; replacing it"
            );
            self.replace(None);
        }
        if self.current.is_none() && Instant::now() >= self.retry_at {
            match Zygote::start(self.shard, &self.path, &self.reaper, &self.published.pid) {
                Ok(z) => self.replace(Some(z)),
                Err(e) => {
                    tracing::warn!(shard = self.shard, error = %e, "zygote unavailable; spawning runners cold");
                    self.retry_at = Instant::now() + RETRY_AFTER;
                }
            }
        }
        self.current.as_mut()
    }

    /// Makes `z` the current zygote (dropping, so killing, the old one) and publishes its link.
    fn replace(&mut self, z: Option<Zygote>) {
        self.published.set(z.as_ref().map(|z| Arc::clone(&z.link)));
        self.current = z;
    }
}

/// One zygote process; its control socket is in the link (the reader thread holds a duplicate).
#[derive(Debug)]
struct Zygote {
    /// The zygote process itself: our child, killed and reaped when this is dropped.
    proc: RunnerProc,
    link: Arc<ForkLink>,
}

impl Zygote {
    fn start(
        shard: usize,
        path: &CString,
        reaper: &Reaper,
        pid_cell: &Arc<AtomicI32>,
    ) -> Result<Zygote, ProcessError> {
        let (ctl, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(os("zygote socketpair"))?;
        let theirs = above(theirs, RUNNER_IPC_FD)?;
        let arg = CString::new(ARG).map_err(|_| ProcessError::BadPath)?;
        let pid = spawn_process(path, &[arg.as_c_str()], &theirs, None)?;
        drop(theirs);
        let proc = RunnerProc::adopt(pid, reaper.clone())?;
        await_hello(&ctl)?;
        let shared = Arc::new(ZygoteLink {
            state: Mutex::default(),
            pid,
            pid_cell: Arc::clone(pid_cell),
        });
        pid_cell.store(pid, Ordering::Release);
        let reader_ctl = ctl.try_clone().map_err(io("dup"))?;
        let reader_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("ptc-zreader-{shard}"))
            .spawn(move || read_reports(&reader_ctl, &reader_shared))
            .map_err(io("starting the zygote reader thread"))?;
        tracing::debug!(shard, pid, "zygote started");
        Ok(Zygote {
            proc,
            link: Arc::new(ForkLink {
                ctl,
                shared,
                next_id: AtomicU64::new(0),
            }),
        })
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        // Killing the zygote kills its runners (PR_SET_PDEATHSIG); the reader then sees EOF.
        self.proc.kill();
    }
}

/// What any thread needs to have a live zygote fork a runner: our end of its control socket
/// (a `SOCK_SEQPACKET` send is one atomic packet, so threads may send at once), the state shared
/// with its reader thread, and the request ids.
#[derive(Debug)]
pub(crate) struct ForkLink {
    ctl: OwnedFd,
    shared: Arc<ZygoteLink>,
    next_id: AtomicU64,
}

impl ForkLink {
    /// Makes the runner's descriptors on this thread and asks the zygote to fork it; the reply
    /// comes from the reader thread. Gives the job back when the zygote is gone, or, without
    /// `wait`, when its socket is full (the caller then hands it to the spawner thread, which
    /// waits).
    pub fn fork(&self, job: SpawnJob, wait: bool) -> Result<(), SpawnJob> {
        let fds = match RunnerFds::new(&job.preamble) {
            Ok(f) => f,
            Err(e) => {
                (job.reply)(Err(e));
                return Ok(());
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let RunnerFds {
            ours,
            theirs,
            err_r,
            err_w,
        } = fds;
        let pending = Pending {
            since: Instant::now(),
            sock: ours,
            stderr: err_r,
            reply: job.reply,
        };
        if let Err(p) = self.shared.register(id, pending) {
            return Err(SpawnJob {
                preamble: job.preamble,
                reply: p.reply,
            });
        }
        let sent = send_packet(
            &self.ctl,
            &Request::Fork { id },
            &[theirs.as_fd(), err_w.as_fd()],
            wait,
        );
        let give_back = |p: Option<Pending>| match p {
            Some(p) => Err(SpawnJob {
                preamble: job.preamble,
                reply: p.reply,
            }),
            // The reader already failed it with a clear error.
            None => Ok(()),
        };
        match sent {
            Ok(()) => {}
            Err(SendFailed::Full) => return give_back(self.shared.unregister(id)),
            Err(SendFailed::Broken(e)) => {
                tracing::warn!(error = %e, "zygote control socket failed; spawning elsewhere");
                self.shared.die();
                return give_back(self.shared.unregister(id));
            }
        }
        Ok(())
    }
}

/// A fork request waiting for the zygote's answer.
struct Pending {
    since: Instant,
    sock: std::os::unix::net::UnixStream,
    stderr: std::fs::File,
    reply: Reply,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("since", &self.since)
            .finish_non_exhaustive()
    }
}

/// State shared by the spawner thread and the reader thread.
#[derive(Debug)]
struct ZygoteLink {
    state: Mutex<State>,
    /// This zygote's pid, cleared from `pid_cell` when it dies.
    pid: i32,
    pid_cell: Arc<AtomicI32>,
}

#[derive(Debug, Default)]
struct State {
    dead: bool,
    pending: HashMap<u64, Pending>,
    running: HashMap<i32, Arc<ExitSlot>>,
}

impl ZygoteLink {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the maps inconsistent (single inserts and
        // removes), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn alive(&self) -> bool {
        !self.lock().dead
    }

    fn register(&self, id: u64, p: Pending) -> Result<(), Pending> {
        let mut st = self.lock();
        if st.dead {
            return Err(p);
        }
        st.pending.insert(id, p);
        Ok(())
    }

    /// Whether a request has waited longer than `max` for its answer.
    fn stalled(&self, max: Duration) -> bool {
        self.lock()
            .pending
            .values()
            .any(|p| p.since.elapsed() > max)
    }

    fn unregister(&self, id: u64) -> Option<Pending> {
        self.lock().pending.remove(&id)
    }

    fn forked(&self, id: u64, pid: i32, pidfd: OwnedFd) {
        let slot = Arc::new(ExitSlot::default());
        let pending = {
            let mut st = self.lock();
            st.running.insert(pid, Arc::clone(&slot));
            st.pending.remove(&id)
        };
        match pending {
            Some(p) => {
                let proc = RunnerProc::forked(pid, pidfd, slot, p.stderr);
                // If the requester gave up, the runner is dropped here, which kills it.
                (p.reply)(Ok(Spawned { proc, sock: p.sock }));
            }
            None => {
                let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
            }
        }
    }

    fn failed(&self, id: u64, errno: i32) {
        if let Some(p) = self.unregister(id) {
            let err = std::io::Error::from_raw_os_error(errno);
            (p.reply)(Err(ProcessError::ForkFailed(err)));
        }
    }

    fn exited(&self, pid: i32, ended: Ended) {
        let Some(slot) = self.lock().running.remove(&pid) else {
            return;
        };
        // Nobody holds its handle: it was let go after its final frame (and killed then), or
        // dropped on a cancel or deadline (killed too). Anything but a clean exit or that kill
        // means the runner misbehaved after its Step was taken.
        if Arc::strong_count(&slot) == 1
            && let Ended::Exited { code, signal, .. } = ended
            && code != Some(0)
            && signal != Some(SIGKILL)
        {
            tracing::warn!(
                pid,
                ?code,
                ?signal,
                "runner ended uncleanly after its handle was released"
            );
        }
        slot.set(ended);
    }

    /// The zygote is gone: fail what waits for it.
    fn die(&self) {
        let _ = self
            .pid_cell
            .compare_exchange(self.pid, 0, Ordering::AcqRel, Ordering::Acquire);
        let (pending, running) = {
            let mut st = self.lock();
            st.dead = true;
            (
                std::mem::take(&mut st.pending),
                std::mem::take(&mut st.running),
            )
        };
        for (_, p) in pending {
            (p.reply)(Err(ProcessError::ZygoteDied));
        }
        for (_, slot) in running {
            slot.set(Ended::Lost);
        }
    }
}

/// The reader thread: dispatches reports until the control socket ends, then fails the rest.
fn read_reports(ctl: &OwnedFd, shared: &ZygoteLink) {
    loop {
        match recv_packet(ctl) {
            Ok(Some((Report::Forked { id, pid }, Some(pidfd)))) => shared.forked(id, pid, pidfd),
            Ok(Some((Report::Forked { id, .. }, None))) => {
                // Cannot happen with our zygote; without a pidfd the runner could not be killed.
                tracing::error!(id, "zygote sent Forked without a pidfd");
                break;
            }
            Ok(Some((Report::ForkFailed { id, errno }, _))) => shared.failed(id, errno),
            Ok(Some((
                Report::Exited {
                    pid,
                    code,
                    signal,
                    cpu_us,
                },
                _,
            ))) => shared.exited(
                pid,
                Ended::Exited {
                    code,
                    signal,
                    cpu_ms: cpu_us / 1000,
                },
            ),
            Ok(Some((Report::Hello { .. }, _))) => {}
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(error = %e, "zygote control socket");
                break;
            }
        }
    }
    shared.die();
}

/// Waits up to [`HELLO_TIMEOUT`] for the zygote's `Hello` in our protocol version.
fn await_hello(ctl: &OwnedFd) -> Result<(), ProcessError> {
    let ms = u16::try_from(HELLO_TIMEOUT.as_millis()).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(ctl.as_fd(), PollFlags::POLLIN)];
    let ready = poll(&mut fds, PollTimeout::from(ms)).map_err(os("poll"))?;
    let not_ready = |why: String| ProcessError::Os {
        what: "starting the zygote",
        source: std::io::Error::other(why),
    };
    if ready == 0 {
        return Err(not_ready(format!("no Hello within {HELLO_TIMEOUT:?}")));
    }
    match recv_packet(ctl)? {
        Some((Report::Hello { magic, version }, None))
            if magic == MAGIC && version == PROTOCOL_VERSION =>
        {
            Ok(())
        }
        Some((other, _)) => Err(not_ready(format!("unexpected first report {other:?}"))),
        None => Err(not_ready("it exited during start-up".into())),
    }
}

/// Why a request was not sent.
enum SendFailed {
    /// The socket's buffer is full (only without `wait`): nothing was sent.
    Full,
    /// The socket failed: the zygote is gone.
    Broken(ProcessError),
}

/// Sends one request with `fds` attached; without `wait`, a full socket is [`SendFailed::Full`]
/// instead of a wait (a tokio worker must not block on a zygote that is behind).
fn send_packet(
    ctl: &OwnedFd,
    req: &Request,
    fds: &[BorrowedFd<'_>],
    wait: bool,
) -> Result<(), SendFailed> {
    let frame = encode_frame(req, MAX_PACKET).map_err(|e| {
        SendFailed::Broken(ProcessError::Os {
            what: "encoding a zygote request",
            source: std::io::Error::other(e.to_string()),
        })
    })?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(SendFailed::Broken(ProcessError::Os {
            what: "sending to the zygote",
            source: std::io::Error::other("too many fds for one request"),
        }));
    }
    let flags = if wait {
        SendFlags::NOSIGNAL
    } else {
        SendFlags::NOSIGNAL | SendFlags::DONTWAIT
    };
    loop {
        let iov = [IoSlice::new(&frame)];
        match sendmsg(ctl, &iov, &mut control, flags) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) if !wait => return Err(SendFailed::Full),
            Err(e) => return Err(SendFailed::Broken(io("sending to the zygote")(e.into()))),
        }
    }
}

/// One report and the fd attached to it; `None` at end of stream.
fn recv_packet(ctl: &OwnedFd) -> Result<Option<(Report, Option<OwnedFd>)>, ProcessError> {
    let mut buf = [0u8; MAX_PACKET as usize + HEADER_LEN];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let len = loop {
        let mut iov = [IoSliceMut::new(&mut buf)];
        match recvmsg(ctl, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC) {
            Ok(msg) => break msg.bytes,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(io("receiving from the zygote")(e.into())),
        }
    };
    // Every fd that came along is owned now; a well-behaved zygote attaches at most one.
    let mut fds: Vec<OwnedFd> = Vec::new();
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = msg {
            fds.extend(rights);
        }
    }
    if len == 0 {
        return Ok(None);
    }
    let bad = |why: String| ProcessError::Os {
        what: "zygote report",
        source: std::io::Error::other(why),
    };
    let (header, body) = buf
        .get(..len)
        .and_then(|p| p.split_at_checked(HEADER_LEN))
        .ok_or_else(|| bad("truncated packet".into()))?;
    let declared = <[u8; HEADER_LEN]>::try_from(header)
        .map(u32::from_be_bytes)
        .map_err(|_| bad("truncated header".into()))?;
    if usize::try_from(declared).ok() != Some(body.len()) {
        return Err(bad("length mismatch".into()));
    }
    let report = decode_body::<Report>(body, MAX_PACKET).map_err(|e| bad(e.to_string()))?;
    Ok(Some((report, fds.into_iter().next())))
}
