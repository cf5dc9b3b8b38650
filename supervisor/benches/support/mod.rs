//! Helpers shared by the benches and the integration tests (included with `#[path]`): bringing
//! binaries up to date in the caller's own profile, the shipped default policy, and percentiles.
//!
//! Builds always run (a no-op when current) so that a stale binary never skews a figure or a
//! test. The profile is read from the caller's own path, `target/<profile>/deps/<binary>`.
#![allow(dead_code, clippy::unwrap_used)]

use ptc_supervisor::policy::{Policy, load_dir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `target/<profile>` of the running bench or test binary.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// Runs `cargo build --quiet <args>` in the caller's profile; returns `target/<profile>`.
pub fn cargo_build(args: &[&str]) -> PathBuf {
    let dir = profile_dir();
    let mut cmd = std::process::Command::new(env!("CARGO"));
    cmd.arg("build").arg("--quiet").args(args);
    if dir.ends_with("release") {
        cmd.arg("--release");
    }
    let status = cmd
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(status.success(), "cargo build {args:?} failed");
    dir
}

/// `target/<profile>/<bin>` of the `ptc-runner` package, brought up to date.
pub fn runner_bin(bin: &str) -> PathBuf {
    cargo_build(&["-p", "ptc-runner", "--bin", bin]).join(bin)
}

/// The shipped policies directory.
pub fn shipped_policies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies")
}

/// The shipped `default` policy alone, with `warm` runners.
pub fn default_policy(warm: usize) -> BTreeMap<String, Policy> {
    let mut all = load_dir(&shipped_policies()).unwrap();
    all.retain(|name, _| name == "default");
    if let Some(p) = all.get_mut("default") {
        p.warm = warm;
    }
    all
}

/// The `pct`th (0-100) nearest-rank percentile of sorted times; zero when there are none.
pub fn percentile(sorted: &[Duration], pct: usize) -> Duration {
    let i = sorted.len().saturating_sub(1) * pct / 100;
    sorted.get(i).copied().unwrap_or_default()
}
