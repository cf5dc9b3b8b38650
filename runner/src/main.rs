//! `ptc-runner`: the single-use sandboxed process that runs one PTC-Lisp program.
//!
//! Started by the supervisor with an empty environment, fds 0–2 on /dev/null (or stderr on a
//! capped pipe) and the IPC socket on fd 3. Everything happens in [`harden::run`]: hardening,
//! then one `Execute`, then exit. The process is single-threaded and never reused.
//!
//! With the single argument `--zygote` it is instead the engine's fork server ([`zygote::serve`]):
//! fd 3 is then a control socket, and each runner is a forked child that continues into the same
//! hardening path. No other argument is read.

mod alloc;
mod harden;
mod heap;
mod ipc;
mod setup_error;
mod zygote;

/// Every allocation is counted against the heap budget from `Setup`.
#[global_allocator]
static GLOBAL: heap::CountingAlloc = heap::CountingAlloc;

fn main() {
    let zygote_mode = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == ptc_shared::protocol::zygote::ARG);
    if zygote_mode {
        zygote::serve(&|| None)
    }
    harden::run(None)
}
