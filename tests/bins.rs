//! Locating the workspace's binaries from a test: `target/<profile>/NAME`, next to the test
//! executable's `deps/` directory. The first call in a test process runs `cargo build --bins
//! --workspace` with the same cargo and profile, so a test never runs a stale `ptc` left by an
//! earlier build (`cargo test -p ptc-tests` does not rebuild other packages' binaries itself);
//! when everything is fresh that build is a quick no-op.

use std::path::PathBuf;
use std::sync::OnceLock;

static BUILT: OnceLock<()> = OnceLock::new();

/// Path of workspace binary `name` (`ptc`, `ptc-runner`), freshly built.
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
    BUILT.get_or_init(|| {
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.args(["build", "--bins", "--workspace", "--quiet"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        let status = cmd.status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "building the workspace binaries failed"
        );
    });
    dir.join(name)
}
