//! Why hardening failed: one variant per step that can fail, each carrying the errno it failed
//! with (the model is Firecracker's jailer). Before exiting, the runner writes
//! `setup failed at <step>: <ERRNO>` to its stderr (see [`SetupError::report`]); the engine reads
//! that pipe after an abnormal exit and puts the line into the failed Step's `details.stderr`.
//! So an operator reads "landlock_restrict_self: EPERM", not "exit code 92".
//!
//! Step names are the syscall (or the check) that failed, in snake_case. Steps that fail without
//! an errno of their own carry the nearest one: `EPROTO` for a bad `Setup` frame, `EINVAL` for a
//! seccomp program or landlock ruleset that cannot be built, `ESRCH` when the parent is gone.
//!
//! The test probe (`probe.rs`) can make any step fail on purpose ([`fail_at`]); the production
//! runner never arms that, and nothing a program sends can (it runs before any input is read).

use nix::errno::Errno;
use ptc_shared::protocol::exit_code;
use std::sync::OnceLock;

macro_rules! setup_steps {
    ($($variant:ident => $name:literal,)*) => {
        /// A hardening step that failed, with its errno.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum SetupError {
            $($variant(Errno),)*
        }

        impl SetupError {
            /// Every step's name, in the order they run.
            pub(crate) const STEPS: &[&str] = &[$($name,)*];

            /// The step's name, as written in the report.
            pub(crate) fn step(self) -> &'static str {
                match self {
                    $(SetupError::$variant(_) => $name,)*
                }
            }

            pub(crate) fn errno(self) -> Errno {
                match self {
                    $(SetupError::$variant(e) => e,)*
                }
            }
        }
    };
}

setup_steps! {
    PrepareFrame => "prepare_frame",
    IpcFd => "fstat_ipc_fd",
    Dup2 => "dup2",
    Setsid => "setsid",
    ReadSetup => "read_setup",
    SetPdeathsig => "prctl_set_pdeathsig",
    ParentGone => "parent_alive",
    SetDumpable => "prctl_set_dumpable",
    Sigprocmask => "sigprocmask",
    SignalDefault => "signal_default",
    Signalfd => "signalfd",
    Chdir => "chdir_root",
    Setgroups => "setgroups",
    Setgid => "setgid",
    Setuid => "setuid",
    VerifyUser => "verify_user",
    UnshareUser => "unshare_user",
    UnshareNamespaces => "unshare_namespaces",
    RlimitData => "setrlimit_data",
    RlimitCpu => "setrlimit_cpu",
    RlimitNofile => "setrlimit_nofile",
    RlimitFsize => "setrlimit_fsize",
    RlimitCore => "setrlimit_core",
    RlimitStack => "setrlimit_stack",
    CloseRange => "close_range",
    LandlockRuleset => "landlock_ruleset",
    LandlockCreate => "landlock_create_ruleset",
    LandlockRestrict => "landlock_restrict_self",
    NoNewPrivs => "prctl_set_no_new_privs",
    SeccompProgram => "seccomp_program",
    SeccompInstall => "seccomp_set_mode_filter",
}

impl SetupError {
    /// The process exit code: `NO_SECCOMP` when the filter could not be installed (the runner
    /// never runs unfiltered), `PARENT_GONE` when the parent died early, else `SETUP`.
    pub(crate) fn code(self) -> i32 {
        match self {
            SetupError::SeccompProgram(_) | SetupError::SeccompInstall(_) => exit_code::NO_SECCOMP,
            SetupError::ParentGone(_) => exit_code::PARENT_GONE,
            _ => exit_code::SETUP,
        }
    }

    /// Writes `setup failed at <step>: <ERRNO>` to stderr (fd 2: the engine's capped pipe, or
    /// /dev/null). Best effort: there is nobody to tell if this write fails.
    pub(crate) fn report(self) {
        use std::io::Write;
        let line = format!("setup failed at {}: {:?}\n", self.step(), self.errno());
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// The step a test asked to fail (TEST-ONLY: armed by `probe.rs`, never by `ptc-runner`).
static FAIL_AT: OnceLock<&'static str> = OnceLock::new();

/// Makes the step named `step` fail with `EPERM` once it has run (TEST-ONLY: the probe calls this
/// from its argv before hardening). `false` if no step has that name.
#[allow(dead_code)]
pub(crate) fn fail_at(step: &str) -> bool {
    let Some(known) = SetupError::STEPS.iter().find(|s| **s == step) else {
        return false;
    };
    FAIL_AT.set(*known).is_ok()
}

/// One step's outcome: its own error mapped to its variant, or, when a test armed this step with
/// [`fail_at`], `EPERM` after it succeeded.
pub(crate) fn step<T>(
    result: Result<T, Errno>,
    variant: fn(Errno) -> SetupError,
) -> Result<T, SetupError> {
    let value = result.map_err(variant)?;
    let failed = variant(Errno::EPERM);
    match FAIL_AT.get() {
        Some(armed) if *armed == failed.step() => Err(failed),
        _ => Ok(value),
    }
}

/// The errno inside an error chain (the first `io::Error` with one), else `fallback`.
pub(crate) fn errno_in(err: &(dyn std::error::Error + 'static), fallback: Errno) -> Errno {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(code) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Errno::from_raw(code);
        }
        cur = e.source();
    }
    fallback
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_report_names_step_and_errno() {
        let mut names = SetupError::STEPS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SetupError::STEPS.len());
        let e = SetupError::LandlockRestrict(Errno::EPERM);
        assert_eq!(
            (e.step(), e.errno()),
            ("landlock_restrict_self", Errno::EPERM)
        );
        assert_eq!(e.code(), exit_code::SETUP);
        assert_eq!(
            SetupError::SeccompInstall(Errno::EINVAL).code(),
            exit_code::NO_SECCOMP
        );
    }
}
