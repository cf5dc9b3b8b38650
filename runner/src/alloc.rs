//! Heap accounting behind the runner's `#[global_allocator]`.
//!
//! The `GlobalAlloc` impl itself lives in `harden.rs` (with `zygote.rs`, the only files allowed
//! `unsafe`); this module holds the safe bookkeeping it calls: live bytes, the peak, the budget,
//! and the pre-built `MemoryExceeded` frame.
//!
//! Invariants: nothing here allocates (atomics and a `OnceLock` read only), so it can run inside
//! the allocator. The runner is single-threaded, so relaxed ordering is enough. Until [`arm`] is
//! called the budget is unlimited: hardening itself is trusted and not counted against it.

use ptc_shared::codec::{CodecError, U64_FRAME_MAX, U64Frame};
use ptc_shared::protocol::RunnerToSupervisor;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
static BUDGET: AtomicU64 = AtomicU64::new(u64::MAX);
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
    BUDGET.store(budget, Relaxed);
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

/// The highest live byte count seen.
pub fn peak() -> u64 {
    PEAK.load(Relaxed)
}

/// Writes the `MemoryExceeded { peak_bytes }` frame into `out`; 0 if it was never prepared.
pub fn exceeded_frame(peak_bytes: u64, out: &mut [u8; U64_FRAME_MAX]) -> usize {
    EXCEEDED_FRAME.get().map_or(0, |f| f.write(peak_bytes, out))
}
