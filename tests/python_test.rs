//! Runs the Python test suites from `cargo test` (`scripts/test-python.sh`): `ptc mcp` through the
//! official MCP Python SDK, against this build's `ptc` and `ptc-runner`, and the `ptc_sandbox`
//! package (python/), which the script installs with `pip install ./python` as a user would.
//!
//! Without Python (or when its packages cannot be installed) the test is skipped with a note,
//! except under `CI=true`, where a missing dependency fails loudly.

use std::process::Command;

#[test]
fn python_package_and_mcp_server_from_python() {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let skip = |why: &str| {
        assert!(!ci, "CI=true but the Python tests cannot run: {why}");
        eprintln!("skipped: {why}");
    };
    if Command::new("python3").arg("--version").output().is_err() {
        return skip("python3 is not installed");
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let ptc = ptc_tests::bins::bin("ptc");
    let _ = ptc_tests::bins::bin("ptc-runner");
    let status = Command::new("bash")
        .arg(root.join("scripts/test-python.sh"))
        .env("PTC_BIN", &ptc)
        .current_dir(&root)
        .status();
    match status.map(|s| s.code()) {
        Ok(Some(0)) => {}
        Ok(Some(3)) => skip("the Python test dependencies cannot be installed"),
        other => panic!("scripts/test-python.sh failed: {other:?}"),
    }
}
