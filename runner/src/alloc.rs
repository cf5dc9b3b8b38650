//! Heap accounting behind the runner's `#[global_allocator]`.
//!
//! The `GlobalAlloc` impl itself lives in `harden.rs` (with `zygote.rs`, the only files allowed
//! `unsafe`); this module holds the safe bookkeeping it calls: live bytes, the peak, the budget,
//! and the pre-built `MemoryExceeded` frame.
//!
//! Invariants: nothing here allocates (atomics and a `OnceLock` read only), so it can run inside
//! the allocator. The runner is single-threaded, so relaxed ordering is enough. Until [`arm`] is
//! called the budget is unlimited: hardening itself is trusted and not counted against it.
//!
//! Granted data (docs/ARCHITECTURE.md): while the `Execute` frame is read and its context,
//! memory and history imported, the budget is what was live plus the policy's grant
//! ([`open_grant`]); once imported, [`settle`] re-bases it to what is live then plus the program's
//! heap budget, and peaks are reported from that base. So the data a program is handed is not
//! billed as its own allocation, and every context the policy accepts leaves it the whole heap.

use ptc_shared::codec::{CodecError, U64_FRAME_MAX, U64Frame};
use ptc_shared::protocol::RunnerToSupervisor;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
static BUDGET: AtomicU64 = AtomicU64::new(u64::MAX);
/// The program's own budget, as armed (the grant comes on top while importing).
static HEAP: AtomicU64 = AtomicU64::new(u64::MAX);
/// Live bytes when the granted data was imported: peaks are reported above it.
static BASE: AtomicU64 = AtomicU64::new(0);
static EXCEEDED_FRAME: OnceLock<U64Frame> = OnceLock::new();

/// Pre-encodes the `MemoryExceeded` frame so that reporting it later needs no allocation.
pub fn prepare_frame() -> Result<(), CodecError> {
    let frame = U64Frame::new(&RunnerToSupervisor::MemoryExceeded { peak_bytes: 0 })?;
    // A second call keeps the first frame, which is identical.
    let _ = EXCEEDED_FRAME.set(frame);
    Ok(())
}

/// Starts enforcing `budget` live bytes from now on.
pub fn arm(budget: u64) {
    HEAP.store(budget, Relaxed);
    BUDGET.store(budget, Relaxed);
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
    PEAK.fetch_max(live, Relaxed);
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
