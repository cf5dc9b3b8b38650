//! Where the installed pieces are: the `ptc-runner` binary (the policies are built in, or come
//! from `policy::PolicySource`).
//!
//! Below both the daemon and the client library (each reads these defaults; neither imports
//! the other), so the layers point one way.

use std::path::PathBuf;

/// The `ptc-runner` binary: `$PTC_RUNNER`, else next to the current executable (also one level
/// up, for test and bench binaries in `target/*/deps`), else `ptc-runner` in `/usr/local/bin`.
pub fn default_runner() -> PathBuf {
    if let Some(p) = std::env::var_os("PTC_RUNNER") {
        return PathBuf::from(p);
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            let p = dir.join("ptc-runner");
            if p.is_file() {
                return p;
            }
        }
    }
    PathBuf::from("/usr/local/bin/ptc-runner")
}
