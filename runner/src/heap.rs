//! The runner's global allocator (issue 15: split out of `harden.rs`, whose hardening it
//! serves): the system allocator, counted against the heap budget (`alloc.rs`, the safe
//! bookkeeping), with free lists for small blocks in front of it. One of the three files of
//! `ptc-runner` with `unsafe` (with `harden.rs` and `zygote.rs`), each block with its `SAFETY`.
//!
//! Invariants: nothing here allocates; the free lists are used only once `alloc::arm`ed, when
//! the process is single threaded; a block goes back to `System` with the layout it came with
//! (a small one at its class's size, whether it passed through a list or not); an empty list is
//! refilled from `System` in a batch whose spare blocks wait on the list, inside its bound (so
//! the blocks of a class lie together); over budget, or when `System` returns null, the process
//! writes the pre-built `MemoryExceeded` frame and exits.
#![allow(unsafe_code)]

use crate::alloc;
use ptc_shared::codec::U64_FRAME_MAX;
use ptc_shared::protocol::{RUNNER_IPC_FD, exit_code};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering::Relaxed};

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
    /// How many times each class's list was refilled ([`FreeLists::refill`]): its next batch.
    refills: [AtomicU32; alloc::CLASSES],
}

impl FreeLists {
    const fn new() -> FreeLists {
        FreeLists {
            heads: [const { AtomicPtr::new(std::ptr::null_mut()) }; alloc::CLASSES],
            counts: [const { AtomicU32::new(0) }; alloc::CLASSES],
            refills: [const { AtomicU32::new(0) }; alloc::CLASSES],
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

    /// For an empty list of `class`: blocks of the class from `System` in a row, the first
    /// returned and the others kept, to be popped in the order they were allocated; null when
    /// `System` has not even one. Blocks asked for one at a time, as a program's allocations
    /// and frees interleave, come from wherever `System` has room: a vector's rows lay 0.7-2.2 KB
    /// apart, each row's strings and nested values between them. A batch puts the blocks of one
    /// class (the rows, mostly) next to each other, and the CPU's prefetchers follow them
    /// (BENCHMARKS.md, "Blocks of one class together"). The first [`SINGLE_REFILLS`] batches are
    /// one block, then each is twice the last, up to [`REFILL`]: a short run pays for no block
    /// and no page it never uses.
    ///
    /// # Safety
    /// Single-threaded use only; `class < alloc::CLASSES`; the list of `class` is empty.
    #[inline(never)]
    unsafe fn refill(&self, class: usize) -> *mut u8 {
        let Ok(layout) = Layout::from_size_align(alloc::class_bytes(class), 16) else {
            return std::ptr::null_mut();
        };
        let refills = self.refills[class].load(Relaxed);
        self.refills[class].store(refills.saturating_add(1), Relaxed);
        let want = 1usize
            << (refills.saturating_add(1))
                .saturating_sub(SINGLE_REFILLS)
                .min(REFILL_SHIFT);
        let mut got = [std::ptr::null_mut::<u8>(); REFILL];
        let mut n = 0;
        for slot in got.iter_mut().take(want) {
            // SAFETY: a non-zero layout. Alignment 16 is `malloc`'s own, which every request of a
            // small class (alignment at most 16) gets from `System` as well, so a block serves,
            // and is freed as, any of them (the lists have always relied on this).
            let p = unsafe { System.alloc(layout) };
            if p.is_null() {
                break;
            }
            *slot = p;
            n += 1;
        }
        // Pushed last first, so that pops go on in allocation order. The list was empty and a
        // class holds at least `REFILL` blocks (`alloc::CACHE_LIMITS`), so `push` takes them all;
        // one it refused would go back to `System`.
        for &p in got.iter().take(n).skip(1).rev() {
            // SAFETY: single threaded; `p` is a fresh `System` block of the class's size.
            if !unsafe { self.push(class, p) } {
                // SAFETY: `p` came from `System` with `layout` and was never used.
                unsafe { System.dealloc(p, layout) };
            }
        }
        got.first().copied().unwrap_or(std::ptr::null_mut())
    }

    /// A block of `class` from its list, or from a [`FreeLists::refill`] when the list is empty;
    /// null when `System` has none.
    ///
    /// # Safety
    /// As [`FreeLists::pop`].
    #[inline(always)]
    unsafe fn pop_or_refill(&self, class: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees are `pop`'s and `refill`'s; `refill` only on empty.
        unsafe {
            let p = self.pop(class);
            if p.is_null() { self.refill(class) } else { p }
        }
    }
}

/// The most blocks a [`FreeLists::refill`] asks `System` for at once: `1 << REFILL_SHIFT`.
const REFILL: usize = 1 << REFILL_SHIFT;
const REFILL_SHIFT: u32 = 7;
/// Refills of one block each, as before batches, before a class's batches start doubling: a
/// short run, which asks each class for a few blocks, allocates exactly what it did.
const SINGLE_REFILLS: u32 = 4;

// Every class's list holds a whole refill.
const _: () = {
    let mut c = 0;
    while c < alloc::CLASSES {
        assert!(alloc::CACHE_LIMITS[c] as usize >= REFILL);
        c += 1;
    }
};

static FREE_LISTS: FreeLists = FreeLists::new();

/// Charges `size` bytes, by plain loads and stores once armed (`alloc::reserve_armed`).
fn charge(size: usize) {
    if alloc::caching() {
        charge_armed(size);
    } else {
        charge_unarmed(size);
    }
}

#[inline(always)]
fn charge_armed(size: usize) {
    if let Err(would_be_live) = alloc::reserve_armed(size) {
        memory_exceeded(would_be_live);
    }
}

/// Before arming (hardening, trusted, perhaps not yet single threaded): out of the way of the
/// armed path, which is every allocation of a program.
#[cold]
#[inline(never)]
fn charge_unarmed(size: usize) {
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

/// Charges `layout` and, once armed, takes a block of its class from the free list (refilled in a
/// batch when empty): the whole of a small allocation in the usual case. `None`: the (charged)
/// block must come from `System`.
///
/// # Safety
/// Called only from `GlobalAlloc::alloc`/`alloc_zeroed` with their caller's `layout`.
#[inline(always)]
unsafe fn take_cached(layout: Layout) -> Option<*mut u8> {
    if !alloc::caching() {
        charge_unarmed(layout.size());
        return None;
    }
    charge_armed(layout.size());
    let c = alloc::class_of(layout.size(), layout.align())?;
    // SAFETY: armed, so single threaded; `c` is a valid class.
    let p = unsafe { FREE_LISTS.pop_or_refill(c) };
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
        if !alloc::caching() {
            alloc::release(layout.size());
        } else {
            alloc::release_armed(layout.size());
            if let Some(c) = alloc::class_of(layout.size(), layout.align())
                // SAFETY: armed, so single threaded; `ptr` came from this allocator with
                // `layout`, so it holds class `c`'s bytes (from a list, or from `System` at
                // that size).
                && unsafe { FREE_LISTS.push(c, ptr) }
            {
                return;
            }
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
                let q = unsafe { FREE_LISTS.pop_or_refill(n) };
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
            // Shrinking (`into_boxed_str`'s `shrink_to_fit`), by plain stores once armed.
            if alloc::caching() {
                alloc::release_armed(old - new_size);
            } else {
                alloc::release(old - new_size);
            }
        }
        p
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

    /// An empty list is refilled with one block `SINGLE_REFILLS` times, then with batches twice
    /// the last one's (2, 4, ... up to `REFILL`), of which the first block is handed out and the
    /// others are kept; every block is distinct, a whole block of the class, and goes back to
    /// `System` at the end.
    #[test]
    fn empty_lists_are_refilled_in_doubling_batches_up_to_the_cap() {
        let lists = FreeLists::new();
        let class = alloc::MAP_CLASS;
        let mut taken: Vec<*mut u8> = Vec::new();
        let mut batch: usize = 1;
        for round in 0..16 {
            assert_eq!(
                lists.counts[class].load(Relaxed),
                0,
                "refilled only when empty"
            );
            for left in (0..batch).rev() {
                // SAFETY: single threaded; a valid class.
                let p = unsafe { lists.pop_or_refill(class) };
                assert!(!p.is_null());
                assert_eq!(lists.counts[class].load(Relaxed) as usize, left);
                // SAFETY: `p` is a block of `class_bytes(class)` bytes, ours until freed below.
                unsafe { p.write_bytes(0xA5, alloc::class_bytes(class)) };
                taken.push(p);
            }
            if round + 1 >= SINGLE_REFILLS {
                batch = (batch * 2).min(REFILL);
            }
        }
        assert_eq!(batch, REFILL, "the batches reached the cap");
        let mut sorted = taken.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), taken.len(), "a block was handed out twice");
        for p in taken {
            // SAFETY: `p` came from `System` with the class's layout and is no longer used.
            unsafe { System.dealloc(p, class_layout(class)) };
        }
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
        for round in 0..640_000u32 {
            // Phases that mostly allocate, then mostly free, so lists fill up (past the smallest
            // class's limit too) and run dry.
            let grow = (round / 160_000) % 2 == 0;
            let r = next();
            if live.is_empty() || (r % 8 < 5) == grow {
                // Half the smallest class, a quarter each the map's and the largest: each
                // class's list fills past its limit in the growing phases.
                let pick = [0, 0, alloc::MAP_CLASS, alloc::CLASSES - 1];
                let class = pick[usize::try_from(r >> 8).unwrap_or(0) % pick.len()];
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
        let (first, map, last) = (
            refused[0],
            refused[alloc::MAP_CLASS],
            refused[alloc::CLASSES - 1],
        );
        assert!(
            reused > 0 && first > 0 && map > 0 && last > 0,
            "reused {reused}, refused {first}, {map} and {last}"
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
