//! A hardening step that fails names itself: the runner writes `setup failed at <step>: <ERRNO>`
//! to stderr, and the engine puts that line into the failed Step's `details.stderr`, for a runner
//! exec'd by the engine and for one forked by the zygote alike. The failures are forced with the
//! TEST-ONLY probe's `fail-at=STEP` (the step runs, then reports EPERM), once for every step the
//! default isolation runs.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use ptc_shared::{FailReason, Step, Value};
use ptc_supervisor::engine::{Engine, EngineConfig, NoTools, SpawnMode};
use ptc_supervisor::policy::load_dir;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The steps every runner takes under a policy without namespaces or run_as, in order.
const COMMON_STEPS: [&str; 17] = [
    "prepare_frame",
    "fstat_ipc_fd",
    "read_setup",
    "prctl_set_pdeathsig",
    "parent_alive",
    "prctl_set_dumpable",
    "sigprocmask",
    "signal_default",
    "chdir_root",
    "setrlimit_data",
    "setrlimit_cpu",
    "setrlimit_nofile",
    "setrlimit_fsize",
    "setrlimit_core",
    "setrlimit_stack",
    "close_range",
    "prctl_set_no_new_privs",
];

/// Run only where the kernel has landlock (the policy asks for it best effort).
const LANDLOCK_STEPS: [&str; 3] = [
    "landlock_ruleset",
    "landlock_create_ruleset",
    "landlock_restrict_self",
];

/// Their failure exits `NO_SECCOMP` rather than `SETUP`.
const SECCOMP_STEPS: [&str; 2] = ["seccomp_program", "seccomp_set_mode_filter"];

/// Only a runner forked by the zygote places its own fds and session.
const FORKED_STEPS: [&str; 2] = ["dup2", "setsid"];

/// Done by the zygote, once, for every runner it forks: building the landlock ruleset's rights
/// (its children only duplicate the created ruleset, under `landlock_create_ruleset`). The probe
/// arms its failing step in the child, after the fork, so it cannot fail there; a real failure
/// in the zygote leaves each child to build its own ruleset, and name the step itself.
const ZYGOTE_ONCE_STEPS: [&str; 1] = ["landlock_ruleset"];

fn policy_dir(tag: &str) -> common::TempDir {
    shipped_filter_dir(tag, "", 0)
}

/// A runner path that is the probe failing at `step` (the engine passes `--zygote` before it).
fn failing_runner(dir: &Path, step: &str) -> PathBuf {
    let path = dir.join(format!("probe-{step}"));
    let script = format!(
        "#!/bin/sh\nexec {} \"$@\" fail-at={step}\n",
        probe_binary().display()
    );
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn run_failing_at(dir: &Path, step: &str, spawn: SpawnMode) -> Step {
    let mut config = EngineConfig::new(failing_runner(dir, step), load_dir(dir).unwrap());
    config.spawn = spawn;
    let engine = Engine::new(config).unwrap();
    engine.execute(request("(+ 1 2)"), Arc::new(NoTools)).await
}

fn stderr_of(step: &Step) -> String {
    let details = step.fail.as_ref().map(|f| &f.details);
    match details.and_then(|d| d.get_key(&Value::string("stderr"))) {
        Some(Value::Str(s)) => s.to_string(),
        other => panic!("no details.stderr in {step:?}: {other:?}"),
    }
}

async fn every_step_names_itself(spawn: SpawnMode, tag: &str) {
    let dir = policy_dir(tag);
    let mut steps: Vec<&str> = COMMON_STEPS.into_iter().chain(SECCOMP_STEPS).collect();
    if ptc_supervisor::check::host_report().landlock_abi > 0 {
        steps.extend(LANDLOCK_STEPS);
    } else {
        common::skip("the landlock steps: this kernel has no landlock");
    }
    if spawn == SpawnMode::Zygote {
        steps.extend(FORKED_STEPS);
        steps.retain(|s| !ZYGOTE_ONCE_STEPS.contains(s));
    }
    for name in steps {
        let step = run_failing_at(&dir, name, spawn).await;
        assert_eq!(
            step.reason(),
            Some(FailReason::RunnerCrashed),
            "{name}: {step:?}"
        );
        assert_eq!(stderr_of(&step), format!("setup failed at {name}: EPERM"));
        let fail = step.fail.as_ref().unwrap();
        let code = if SECCOMP_STEPS.contains(&name) {
            "no_seccomp_filter"
        } else if name == "parent_alive" {
            "parent_gone"
        } else {
            "setup_failed"
        };
        assert!(
            fail.message.contains("during setup")
                && fail.message.contains(code)
                && fail
                    .message
                    .ends_with(&format!("setup failed at {name}: EPERM")),
            "{name}: {}",
            fail.message
        );
    }
}

#[tokio::test]
async fn a_failed_step_of_an_execd_runner_names_itself_in_details() {
    every_step_names_itself(SpawnMode::Cold, "setup-cold").await;
}

#[tokio::test]
async fn a_failed_step_of_a_forked_runner_names_itself_in_details() {
    every_step_names_itself(SpawnMode::Zygote, "setup-zygote").await;
}

#[tokio::test]
async fn the_same_probe_without_a_failure_gets_through_setup() {
    // The control: `fail-at` of a step that does not exist arms nothing, and the probe gets past
    // `Ready` (it then answers without waiting for `Execute`, which the engine does not accept):
    // so the failures above come from the steps named, not from the probe.
    let dir = policy_dir("setup-control");
    let step = run_failing_at(&dir, "no_such_step", SpawnMode::Cold).await;
    let fail = step.fail.as_ref().unwrap();
    assert!(!fail.message.contains("during setup"), "{step:?}");
    assert!(
        fail.details.get_key(&Value::string("stderr")).is_none(),
        "{step:?}"
    );
}
