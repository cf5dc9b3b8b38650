// The runner's own allocator for a measurement driver (`include!`d at an example's root; the
// `#[path]`s below are relative to this file): the very `heap.rs` and `alloc.rs` of
// `ptc-runner`, with the modules they name, as the `#[global_allocator]`. The driver calls
// `alloc::arm(u64::MAX)` first: counting and free lists on, no budget, as in a runner.

#[allow(dead_code)]
#[path = "../../src/alloc.rs"]
mod alloc;
#[allow(dead_code)]
#[path = "../../src/harden.rs"]
mod harden;
#[allow(dead_code)]
#[path = "../../src/heap.rs"]
mod heap;
#[allow(dead_code)]
#[path = "../../src/ipc.rs"]
mod ipc;
#[allow(dead_code)]
#[path = "../../src/setup_error.rs"]
mod setup_error;
#[allow(dead_code)]
#[path = "../../src/zygote.rs"]
mod zygote;

#[global_allocator]
static GLOBAL: heap::CountingAlloc = heap::CountingAlloc;
