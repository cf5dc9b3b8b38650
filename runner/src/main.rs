//! `ptc-runner`: the single-use sandboxed process that runs one PTC-Lisp program.
//!
//! Started by the supervisor with an empty environment, fds 0–2 on /dev/null (or stderr on a
//! capped pipe) and the IPC socket on fd 3. Everything happens in [`harden::run`]: hardening,
//! then one `Execute`, then exit. The process is single-threaded and never reused.

mod alloc;
mod harden;
mod ipc;

/// Every allocation is counted against the heap budget from `Setup`.
#[global_allocator]
static GLOBAL: harden::CountingAlloc = harden::CountingAlloc;

fn main() {
    harden::run(None)
}
