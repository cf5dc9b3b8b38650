//! An installed `ptc` needs nothing from the source tree: the two binaries copied alone into an
//! empty directory, run from another empty directory with no `PTC_POLICIES`, find the runner next
//! to `ptc` and the policies (and seccomp filter) compiled into `ptc`, and run sandboxed.

use ptc_tests::bins::bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh, empty directory under the system temp dir, removed when dropped: each test copies two
/// debug binaries (hundreds of MB), which must not pile up in /tmp run after run.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("ptc-installed-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Scratch(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn empty_dir(tag: &str) -> Scratch {
    Scratch::new(tag)
}

/// `ptc` and `ptc-runner`, copied (not linked) into an empty directory.
fn install(tag: &str) -> Scratch {
    let dir = empty_dir(&format!("bin-{tag}"));
    for name in ["ptc", "ptc-runner"] {
        let to = dir.join(name);
        std::fs::copy(bin(name), &to).unwrap_or_else(|e| panic!("copying {name}: {e}"));
    }
    dir
}

/// Runs the installed `ptc` from `cwd` with none of the variables that point at files.
fn ptc(installed: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(installed.join("ptc"))
        .args(args)
        .current_dir(cwd)
        .env_remove("PTC_POLICIES")
        .env_remove("PTC_RUNNER")
        .output()
        .unwrap_or_else(|e| panic!("running ptc: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&text(&o.stdout))
        .unwrap_or_else(|e| panic!("{e}: {} / {}", text(&o.stdout), text(&o.stderr)))
}

#[test]
fn copied_binaries_run_sandboxed_from_an_empty_directory() {
    if Path::new("/etc/ptc/policies").exists() {
        // That directory would replace the built-in policies, which is not what this tests.
        ptc_tests::skip("/etc/ptc/policies exists on this host");
        return;
    }
    let installed = install("run");
    let cwd = empty_dir("cwd");

    let o = ptc(
        &installed,
        &cwd,
        &["run", "--format", "json", "-e", "(+ 1 2)"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let step = json(&o);
    assert_eq!(step["return"], 3, "{step}");
    // Only a runner process measures its heap: an in-process run reports 0.
    assert!(
        step["usage"]["memory_bytes"].as_u64().unwrap_or(0) > 0,
        "{step}"
    );

    let o = ptc(&installed, &cwd, &["check"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stdout).contains("seccomp"), "{}", text(&o.stdout));

    let o = ptc(&installed, &cwd, &["policies", "--format", "json"]);
    let listed = json(&o);
    assert_eq!(listed["source"], "the built-in policies", "{listed}");
    let rows = listed["policies"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["default", "strict"], "{listed}");

    // `strict` runs here exactly when this host can enforce it (landlock is required by it).
    let strict_ok = rows
        .iter()
        .any(|r| r["name"] == "strict" && r["enforceable"] == true);
    let o = ptc(
        &installed,
        &cwd,
        &["run", "--policy", "strict", "-e", "(* 6 7)"],
    );
    if strict_ok {
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout), "42");
    } else {
        assert_ne!(o.status.code(), Some(0), "{}", text(&o.stdout));
    }
    assert!(
        std::fs::read_dir(&cwd).is_ok_and(|mut d| d.next().is_none()),
        "cwd untouched"
    );
}

#[test]
fn the_runner_is_the_one_next_to_ptc() {
    if Path::new("/usr/local/bin/ptc-runner").exists() {
        ptc_tests::skip("/usr/local/bin/ptc-runner would be found as the fallback");
        return;
    }
    let installed = install("norunner");
    let cwd = empty_dir("norunner");
    std::fs::remove_file(installed.join("ptc-runner")).unwrap_or_else(|e| panic!("{e}"));
    let o = ptc(&installed, &cwd, &["run", "-e", "(+ 1 2)"]);
    assert_ne!(
        o.status.code(),
        Some(0),
        "ran without a runner: {}",
        text(&o.stdout)
    );
    assert!(
        text(&o.stderr).contains("ptc-runner"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_broken_policies_override_is_an_error_not_a_fallback() {
    let installed = install("override");
    let cwd = empty_dir("override");
    let o = Command::new(installed.join("ptc"))
        .args(["run", "-e", "(+ 1 2)"])
        .current_dir(&cwd)
        .env("PTC_POLICIES", cwd.join("missing"))
        .output()
        .unwrap_or_else(|e| panic!("running ptc: {e}"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("missing"), "{}", text(&o.stderr));
}
