//! The spawner: how a request for a runner becomes a process, spread over zygote shards so that
//! no single thread or process is on the path of every execution.
//!
//! There are `zygotes` shards (see [`default_zygotes`]). Each shard is one long-lived spawner
//! thread with, in [`SpawnMode::Zygote`], its own `ptc-runner --zygote` and that zygote's reader
//! thread (see `zygote.rs`). Requests are dealt to the shards in turn (one atomic add).
//!
//! Who does what per execution:
//! - The requesting thread (a tokio worker, or whichever thread refills a pool) makes the
//!   runner's socketpair and stderr pipe, writes the `Setup` frame, and sends `Fork` straight to
//!   its shard's live zygote: all of that runs in parallel on as many threads as ask.
//! - The shard's zygote forks; its reader thread hands the runner to the requester's reply.
//! - The shard's spawner thread does only what must stay on one thread: starting and replacing
//!   its zygote (the zygote's PR_SET_PDEATHSIG is tied to that thread), and cold spawns while no
//!   zygote can be started. A request goes there only when its shard has no usable zygote (dead,
//!   hung, or not started), so a shard whose zygote is killed recovers on its next request while
//!   the other shards go on serving.
//!
//! Invariants: the spawner threads live exactly as long as some [`Spawner`] handle does (their
//! exit fires the PDEATHSIG of their zygotes and cold runners); the reaper thread is shared.

use super::process::{ProcessError, Reaper, SpawnMode, Spawned, io, spawn_one};
use super::zygote::{Published, ZygoteKeeper};
use std::ffi::CString;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use tokio::sync::oneshot;

/// The most zygote shards an engine may run.
pub const MAX_ZYGOTES: usize = 64;
/// The default is one zygote shard per this many cores: a zygote spends about a fifth of a run's
/// CPU, so with one per two cores the zygotes have more than twice the capacity the cores can feed.
const CORES_PER_ZYGOTE: usize = 2;

/// One zygote shard per two of the host's cores (at least one, at most [`MAX_ZYGOTES`]).
pub fn default_zygotes() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    (cores / CORES_PER_ZYGOTE).clamp(1, MAX_ZYGOTES)
}

/// Receives a spawn's outcome, on whichever thread learns it (the requesting thread, a spawner
/// thread or a zygote's reader thread). Dropping a `Spawned` kills the runner.
pub(crate) type Reply = Box<dyn FnOnce(Result<Spawned, ProcessError>) + Send>;

pub(crate) struct SpawnJob {
    /// Bytes written to the socket before the child starts (the `Setup` frame).
    pub preamble: Vec<u8>,
    pub reply: Reply,
}

impl std::fmt::Debug for SpawnJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpawnJob")
            .field("preamble_len", &self.preamble.len())
            .finish()
    }
}

/// Handle to the shards (their threads own the zygotes; the reaper is shared). Cloning shares it.
#[derive(Debug, Clone)]
pub struct Spawner {
    inner: Arc<Shards>,
}

#[derive(Debug)]
struct Shards {
    shards: Vec<Shard>,
    next: AtomicUsize,
}

#[derive(Debug)]
struct Shard {
    /// Jobs its spawner thread must do: (re)start the zygote and fork there, or spawn cold.
    jobs: mpsc::Sender<SpawnJob>,
    /// The shard's live zygote, as its spawner thread publishes it.
    live: Arc<Published>,
}

impl Spawner {
    /// Starts `zygotes` shards for the runner binary at `path` (one spawner thread each, which in
    /// zygote mode starts its zygote before serving its first job) and the reaper thread.
    pub fn start(path: &Path, mode: SpawnMode, zygotes: usize) -> Result<Spawner, ProcessError> {
        let c_path =
            CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| ProcessError::BadPath)?;
        let reaper = Reaper::start()?;
        let shards = (0..zygotes.max(1))
            .map(|i| start_shard(i, &c_path, mode, &reaper))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Spawner {
            inner: Arc::new(Shards {
                shards,
                next: AtomicUsize::new(0),
            }),
        })
    }

    /// The pids of the live zygotes, one per shard that has one right now.
    pub fn zygote_pids(&self) -> Vec<i32> {
        self.inner
            .shards
            .iter()
            .filter_map(|s| s.live.pid())
            .collect()
    }

    /// Spawns one runner; `preamble` is already in its socket when it starts reading.
    pub async fn spawn(&self, preamble: Vec<u8>) -> Result<Spawned, ProcessError> {
        let (tx, rx) = oneshot::channel();
        // If the requester gave up (cancelled), the runner is dropped here, which kills it.
        self.spawn_then(
            preamble,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.await.map_err(|_| ProcessError::SpawnerGone)?
    }

    /// Spawns one runner and hands the outcome to `reply`, on the thread that learns it: no
    /// async task has to wake up for it (the warm pools are filled this way). The next shard in
    /// turn takes it: its live zygote is asked from this thread, else its spawner thread is.
    pub(crate) fn spawn_then(&self, preamble: Vec<u8>, reply: Reply) {
        let turn = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let Some(shard) = self.inner.shards.get(turn % self.inner.shards.len()) else {
            reply(Err(ProcessError::SpawnerGone));
            return;
        };
        let mut job = SpawnJob { preamble, reply };
        if let Some(link) = shard.live.usable() {
            match link.fork(job, false) {
                Ok(()) => return,
                Err(back) => job = back,
            }
        }
        if let Err(mpsc::SendError(job)) = shard.jobs.send(job) {
            (job.reply)(Err(ProcessError::SpawnerGone));
        }
    }
}

/// One shard's spawner thread: lives until every Spawner handle is dropped; its exit fires the
/// PDEATHSIG of its cold runners and of its zygote (whose runners then die with it).
fn start_shard(
    index: usize,
    path: &CString,
    mode: SpawnMode,
    reaper: &Reaper,
) -> Result<Shard, ProcessError> {
    let (jobs, rx) = mpsc::channel::<SpawnJob>();
    let live = Arc::new(Published::default());
    let (path, reaper, published) = (path.clone(), reaper.clone(), Arc::clone(&live));
    std::thread::Builder::new()
        .name(format!("ptc-spawner-{index}"))
        .spawn(move || {
            let mut zygote = (mode == SpawnMode::Zygote)
                .then(|| ZygoteKeeper::new(index, path.clone(), reaper.clone(), published));
            while let Ok(job) = rx.recv() {
                let job = match zygote.as_mut() {
                    Some(z) => match z.fork(job) {
                        Ok(()) => continue,
                        Err(job) => job,
                    },
                    None => job,
                };
                let out = spawn_one(&path, &job.preamble, &reaper);
                // The requester may have given up (cancelled); the runner is then dropped and reaped.
                (job.reply)(out);
            }
        })
        .map_err(io("starting a spawner thread"))?;
    Ok(Shard { jobs, live })
}
