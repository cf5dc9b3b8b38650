//! Locating the workspace's binaries from a test: `target/<profile>/NAME`, next to the test
//! executable's `deps/` directory. If a binary is missing (a test run that built only this
//! crate), it is built once with the same cargo and profile.

use std::path::PathBuf;
use std::sync::Mutex;

static BUILD: Mutex<()> = Mutex::new(());

/// Path of workspace binary `name` (`ptc`, `ptc-runner`), building it if needed.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe
        .parent()
        .and_then(|d| {
            if d.ends_with("deps") {
                d.parent()
            } else {
                Some(d)
            }
        })
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = dir.join(name);
    if path.exists() {
        return path;
    }
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if !path.exists() {
        let release = dir.ends_with("release");
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.args(["build", "--bins", "--workspace"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "building the workspace binaries failed"
        );
    }
    path
}
