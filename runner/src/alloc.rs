//! Heap accounting behind the runner's `#[global_allocator]`.
//!
//! The `GlobalAlloc` impl itself lives in `heap.rs` (with `harden.rs` and `zygote.rs`, the only
//! files allowed `unsafe`); this module holds the safe bookkeeping it calls: live bytes, the
//! peak, the budget, and the pre-built `MemoryExceeded` frame.
//!
//! Invariants: nothing here allocates (atomics and a `OnceLock` read only), so it can run inside
//! the allocator. The runner is single-threaded, so relaxed ordering is enough; once [`arm`]ed
//! the counts are updated by plain loads and stores ([`reserve_armed`], [`release_armed`]), no
//! locked read-modify-write per allocation. Until [`arm`] is called the budget is unlimited:
//! hardening itself is trusted and not counted against it.
//!
//! Granted data (docs/ARCHITECTURE.md): while the `Execute` frame is read and its context,
//! memory and history imported, the budget is what was live plus the policy's grant
//! ([`open_grant`]); once imported, [`settle`] re-bases it to what is live then plus the program's
//! heap budget, and peaks are reported from that base. So the data a program is handed is not
//! billed as its own allocation, and every context the policy accepts leaves it the whole heap.
//!
//! Small blocks (issue 15): requests of at most [`SMALL_MAX`] bytes (alignment at most 16) are
//! rounded up to one of [`CLASSES`] size classes, `16k + 8` bytes: exactly what a glibc chunk of
//! `16k + 16` holds, so the rounding costs no memory. Once [`arm`]ed (the runner is single
//! threaded from then on), a freed small block goes onto its class's free list in `heap.rs`
//! instead of back to glibc, at most 512 KiB of glibc chunks for each of the two smallest
//! classes, 1 MiB for a map's class ([`MAP_CLASS`]) and [`CACHE_BYTES_PER_CLASS`] (about
//! 158 KiB) for each other ([`CACHE_LIMITS`]: 16,384 blocks of the smallest class, 5,957 of the
//! map's, 593 of the largest, so the small blocks a program makes most are kept in proportion), and the next request of the class takes
//! it back in a few instructions (glibc's own cache holds 7 per size, and most of a pipeline's
//! frees missed it). An empty list is refilled from glibc in a batch (`heap.rs`, `refill`),
//! whose spare blocks are on the list like freed ones. The budget still counts **requested** bytes, live ones only: the peaks and
//! the `memory_exceeded` point are exactly what they were. Blocks waiting on a free list are not
//! counted; there are at most [`CACHE_BOUND_BYTES`] of them (4 MiB), inside the slack
//! RLIMIT_DATA leaves above the budget for allocator overhead (at least 32 MiB, of which the
//! lists may take an eighth), so the lists cannot make the kernel refuse memory before the
//! budget trips.

use ptc_shared::codec::{CodecError, U64_FRAME_MAX, U64Frame};
use ptc_shared::protocol::RunnerToSupervisor;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The largest request served from a size class.
pub const SMALL_MAX: usize = CLASSES * 16 + 8;
/// Size classes `16k + 8` bytes, `k = 1..=CLASSES`.
pub const CLASSES: usize = 16;
/// The glibc chunk bytes each of the two smallest classes' free lists may hold at most: their
/// blocks (up to 40 bytes: a string's bytes and its counted header, pairs, list cells) are the
/// ones a program holds by the ten thousand (a mapped seq of strings before `frequencies`), and a
/// list that cannot hold them all sends the rest back to glibc and asks it again next time.
pub const SMALLEST_CACHE_BYTES: u64 = 512 << 10;
/// The class of a map's block (a map's counted `MapImpl`, 168 bytes): every map, record and
/// row a program builds. A pipeline holds thousands at once (`keep` of 3,340 records in
/// pipeline p3, whose frees overflowed a 219 KiB list back into glibc: 4 % of its instructions
/// and 6 % of its CPU), so its list may hold [`MAP_CACHE_BYTES`].
pub const MAP_CLASS: usize = 9;
/// The glibc chunk bytes the map class's free list may hold at most (5,957 blocks).
pub const MAP_CACHE_BYTES: u64 = 1 << 20;
/// The glibc chunk bytes each other class's free list may hold at most: the other 13 share
/// 2 MiB, so all of them hold 4 MiB as before.
pub const CACHE_BYTES_PER_CLASS: u64 = (2 << 20) / (CLASSES as u64 - 3);
/// Freed blocks kept per class at most: [`SMALLEST_CACHE_BYTES`] or [`CACHE_BYTES_PER_CLASS`]
/// in chunks of the class.
pub const CACHE_LIMITS: [u32; CLASSES] = {
    let mut limits = [0; CLASSES];
    let mut c = 0;
    while c < CLASSES {
        let bytes = if c < 2 {
            SMALLEST_CACHE_BYTES
        } else if c == MAP_CLASS {
            MAP_CACHE_BYTES
        } else {
            CACHE_BYTES_PER_CLASS
        };
        // At most 16,384 (the smallest class): no truncation.
        #[allow(clippy::cast_possible_truncation)]
        let limit = (bytes / chunk_bytes(c)) as u32;
        limits[c] = limit;
        c += 1;
    }
    limits
};
/// The most memory the free lists can hold, glibc's chunk headers included.
pub const CACHE_BOUND_BYTES: u64 = {
    let mut c = 0;
    let mut sum = 0;
    while c < CLASSES {
        sum += chunk_bytes(c) * CACHE_LIMITS[c] as u64;
        c += 1;
    }
    sum
};

/// What glibc takes for a block of `class`: its bytes and an 8-byte header, 16-aligned.
const fn chunk_bytes(class: usize) -> u64 {
    (16 * class + 32) as u64
}

// RLIMIT_DATA's slack above the budget is at least 32 MiB (`RunnerRlimits::for_limits`).
const _: () = assert!(CACHE_BOUND_BYTES <= (32 << 20) / 8);

/// The size class (0-based) of a request, or `None` when it is not a small block.
pub fn class_of(size: usize, align: usize) -> Option<usize> {
    if size > SMALL_MAX || align > 16 {
        return None;
    }
    Some(size.saturating_sub(9) / 16)
}

/// The bytes every block of `class` is allocated with (so any of them serves any request of it).
pub fn class_bytes(class: usize) -> usize {
    16 * class + 24
}

static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
static BUDGET: AtomicU64 = AtomicU64::new(u64::MAX);
/// The program's own budget, as armed (the grant comes on top while importing).
static HEAP: AtomicU64 = AtomicU64::new(u64::MAX);
/// Live bytes when the granted data was imported: peaks are reported above it.
static BASE: AtomicU64 = AtomicU64::new(0);
static EXCEEDED_FRAME: OnceLock<U64Frame> = OnceLock::new();
/// Whether freed small blocks are kept on free lists (from [`arm`] on: single threaded).
static CACHING: AtomicBool = AtomicBool::new(false);

/// Pre-encodes the `MemoryExceeded` frame so that reporting it later needs no allocation.
pub fn prepare_frame() -> Result<(), CodecError> {
    let frame = U64Frame::new(&RunnerToSupervisor::MemoryExceeded { peak_bytes: 0 })?;
    // A second call keeps the first frame, which is identical.
    let _ = EXCEEDED_FRAME.set(frame);
    Ok(())
}

/// Starts enforcing `budget` live bytes from now on, and keeping freed small blocks. Called by
/// the hardening path of a single-threaded process only: the free lists are not thread safe.
pub fn arm(budget: u64) {
    HEAP.store(budget, Relaxed);
    BUDGET.store(budget, Relaxed);
    CACHING.store(true, Relaxed);
}

/// Whether freed small blocks go onto the free lists (see the module header).
pub fn caching() -> bool {
    CACHING.load(Relaxed)
}

/// Before the `Execute` frame is read: granted data may take `grant` bytes over what is live.
pub fn open_grant(grant: u64) {
    BUDGET.store(LIVE.load(Relaxed).saturating_add(grant), Relaxed);
}

/// Once the granted data is imported: the program may allocate its heap budget on top of what
/// is live now, and its peak is counted from here.
pub fn settle() {
    let live = LIVE.load(Relaxed);
    BASE.store(live, Relaxed);
    BUDGET.store(live.saturating_add(HEAP.load(Relaxed)), Relaxed);
    PEAK.store(live, Relaxed);
}

/// Accounts `size` more live bytes; `Err(would_be_live)` when that would exceed the budget
/// (nothing is accounted then).
pub fn reserve(size: usize) -> Result<(), u64> {
    let size = size as u64;
    let live = LIVE.fetch_add(size, Relaxed).saturating_add(size);
    if live > BUDGET.load(Relaxed) {
        LIVE.fetch_sub(size, Relaxed);
        return Err(live);
    }
    // Most requests stay under the peak: a plain load spares them the locked `fetch_max`.
    if live > PEAK.load(Relaxed) {
        PEAK.fetch_max(live, Relaxed);
    }
    Ok(())
}

/// [`reserve`] once [`arm`]ed: the process is single threaded then (the free lists rely on it
/// too), so the same accounting is done by plain loads and stores. A locked read-modify-write
/// (`fetch_add`) on every allocation and free cost p4 a fifth of its CPU time.
#[inline(always)]
pub fn reserve_armed(size: usize) -> Result<(), u64> {
    let live = LIVE.load(Relaxed).saturating_add(size as u64);
    if live > BUDGET.load(Relaxed) {
        return Err(live);
    }
    LIVE.store(live, Relaxed);
    if live > PEAK.load(Relaxed) {
        PEAK.store(live, Relaxed);
    }
    Ok(())
}

/// Restarts peak tracking from the current live bytes (after the trusted warm-up, so
/// `usage.memory_bytes` reflects the program's run).
pub fn reset_peak() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

/// Accounts `size` bytes freed.
pub fn release(size: usize) {
    LIVE.fetch_sub(size as u64, Relaxed);
}

/// [`release`] once [`arm`]ed (see [`reserve_armed`]).
#[inline(always)]
pub fn release_armed(size: usize) {
    LIVE.store(LIVE.load(Relaxed).wrapping_sub(size as u64), Relaxed);
}

/// Live bytes now.
pub fn live() -> u64 {
    LIVE.load(Relaxed)
}

/// The highest live byte count seen, above the granted data once [`settle`]d.
pub fn peak() -> u64 {
    PEAK.load(Relaxed).saturating_sub(BASE.load(Relaxed))
}

/// Writes the `MemoryExceeded { peak_bytes }` frame into `out` (`live_bytes` reported above the
/// granted data, like [`peak`]); 0 if it was never prepared.
pub fn exceeded_frame(live_bytes: u64, out: &mut [u8; U64_FRAME_MAX]) -> usize {
    let peak_bytes = live_bytes.saturating_sub(BASE.load(Relaxed));
    EXCEEDED_FRAME.get().map_or(0, |f| f.write(peak_bytes, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_small_request_fits_its_class_and_the_class_below_does_not() {
        for align in [1, 2, 4, 8, 16] {
            for size in 1..=SMALL_MAX {
                let class = class_of(size, align).expect("small");
                assert!(class < CLASSES);
                assert!(class_bytes(class) >= size, "{size}");
                assert!(class == 0 || class_bytes(class - 1) < size, "{size}");
                // A glibc chunk of class_bytes + 8 rounded to 16 has no slack past the class.
                assert_eq!((class_bytes(class) + 8) % 16, 0);
            }
        }
        assert_eq!(class_of(SMALL_MAX + 1, 8), None);
        assert_eq!(class_of(64, 32), None);
        assert_eq!(class_bytes(CLASSES - 1), SMALL_MAX);
    }

    #[test]
    fn the_free_lists_fit_in_the_slack_rlimit_data_leaves_above_the_budget() {
        let limits = ptc_shared::Limits {
            heap_bytes: 1 << 20,
            max_context_bytes: 0,
            ..ptc_shared::Limits::default()
        };
        let rl = ptc_shared::protocol::RunnerRlimits::for_limits(&limits);
        let slack = rl.data_bytes - limits.heap_bytes - ptc_shared::protocol::grant_bytes(&limits);
        assert!(
            CACHE_BOUND_BYTES <= slack / 8,
            "{CACHE_BOUND_BYTES} vs {slack}"
        );
        assert_eq!(CACHE_LIMITS[0], 16_384);
        assert_eq!(CACHE_LIMITS[1], 10_922);
        assert_eq!(CACHE_LIMITS[MAP_CLASS], 5_957);
        assert_eq!(CACHE_LIMITS[CLASSES - 1], 593);
        // The map class is where a map's counted block goes (two counts, then the map).
        let map_block = std::mem::size_of::<ptc_runner::value::MapImpl>() + 16;
        assert_eq!(class_of(map_block, 8), Some(MAP_CLASS), "{map_block}");
        for c in 0..CLASSES {
            // The chunk of a class is its block's bytes and glibc's 8-byte header.
            assert_eq!(chunk_bytes(c), class_bytes(c) as u64 + 8);
        }
    }
}
