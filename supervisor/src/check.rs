//! The host check (`ptc check`): which isolation mechanisms this kernel and these privileges allow.
//!
//! Every probe observes instead of assuming: seccomp from the kernel's list of filter actions,
//! landlock by creating (never applying) rulesets that hard-require each ABI, namespaces by running
//! `unshare(1)` with each flag where it is installed, cgroup v2 delegation from the mount table and
//! the writability of our own cgroup. Nothing here changes the calling process.
//!
//! [`HostReport::enforce`] turns a policy into what will actually be applied, or refuses it when it
//! asks for something the host cannot do and does not say `best_effort`.

use crate::policy::{LandlockMode, Namespace, Policy};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// What the host offers, for humans (`Display`) and scripts (serde).
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub kernel: String,
    pub euid: u32,
    /// seccomp filters with the `kill_process` action are available.
    pub seccomp: bool,
    pub seccomp_actions: Vec<String>,
    /// Highest landlock ABI whose filesystem rights the kernel fully supports (0 = none). ABIs that
    /// added no filesystem right (4: network, 7+: logging) read as the level below.
    pub landlock_abi: u32,
    /// Each namespace and whether a process started from here can enter it.
    pub namespaces: Vec<NamespaceProbe>,
    pub cgroup_v2: CgroupReport,
    /// The supervisor's own limits; runners can always lower theirs.
    pub rlimits: Vec<RlimitReport>,
}

/// One namespace probe.
#[derive(Debug, Clone, Serialize)]
pub struct NamespaceProbe {
    pub namespace: Namespace,
    pub available: bool,
    /// How it was decided (`unshare(1)`, or why it could not be tested).
    pub how: String,
}

/// cgroup v2 state of the supervisor's own cgroup.
#[derive(Debug, Clone, Serialize)]
pub struct CgroupReport {
    pub mounted: bool,
    pub path: Option<PathBuf>,
    /// Our cgroup directory is writable and has controllers to hand down.
    pub delegated: bool,
    pub controllers: Vec<String>,
}

/// One resource limit of the supervisor process.
#[derive(Debug, Clone, Serialize)]
pub struct RlimitReport {
    pub name: &'static str,
    /// `None` is unlimited.
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

/// The uid/gid (`nobody`/`nogroup` on Debian and most distributions) runners of a root
/// supervisor become when their policy names no `run_as`: setuid away from root clears every
/// capability, so a runner never holds root's, whatever the policy says.
pub const DEFAULT_RUN_AS: (u32, u32) = (65534, 65534);

/// What the engine will actually apply for a policy on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforcement {
    pub landlock: bool,
    pub namespaces: Vec<Namespace>,
    /// The user runners become: the policy's `run_as`, or [`DEFAULT_RUN_AS`] when the supervisor
    /// is root and the policy names none (a runner never keeps root's capabilities); `None`
    /// when the supervisor is not root (runners keep its uid, which has no capabilities).
    pub run_as: Option<(u32, u32)>,
    /// What the policy asked for and will not get (only non-empty for best-effort policies).
    pub skipped: Vec<String>,
}

/// Probes the host. Takes a few milliseconds (it runs `unshare(1)` once per namespace).
pub fn host_report() -> HostReport {
    host_report_for(&Namespace::ALL)
}

/// Probes the host, testing only the namespaces in `namespaces` (each probe forks and execs
/// `unshare(1)`; an engine needs only those its policies enter). The rest are reported as not
/// available, with `how` saying they were not probed.
pub fn host_report_for(namespaces: &[Namespace]) -> HostReport {
    let seccomp_actions = read_trim("/proc/sys/kernel/seccomp/actions_avail")
        .map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .unwrap_or_default();
    HostReport {
        kernel: nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default(),
        euid: nix::unistd::geteuid().as_raw(),
        seccomp: kills_process(&seccomp_actions),
        seccomp_actions,
        landlock_abi: landlock_abi(),
        namespaces: probe_namespaces(namespaces),
        cgroup_v2: cgroup_report(
            &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
            &read_trim("/proc/self/cgroup").unwrap_or_default(),
        ),
        rlimits: rlimits(),
    }
}

impl HostReport {
    /// Whether `ns` can be entered.
    pub fn namespace_available(&self, ns: Namespace) -> bool {
        self.namespaces
            .iter()
            .any(|p| p.namespace == ns && p.available)
    }

    /// What will be enforced for `policy`, or every unmet requirement when the policy is refused.
    pub fn enforce(&self, policy: &Policy) -> Result<Enforcement, Vec<String>> {
        let mut fatal = Vec::new();
        let mut skipped = Vec::new();
        if !self.seccomp {
            // Never optional: seccomp is what stops new processes, files and sockets.
            fatal.push("seccomp filters (kill_process) are not available".to_string());
        }
        let landlock = match policy.isolation.landlock {
            LandlockMode::Off => false,
            _ if self.landlock_abi > 0 => true,
            LandlockMode::Required => {
                fatal.push("landlock is required but the kernel does not support it".to_string());
                false
            }
            LandlockMode::BestEffort => {
                skipped.push("landlock (not supported by the kernel)".to_string());
                false
            }
        };
        let mut unmet = Vec::new();
        let namespaces: Vec<Namespace> = policy
            .isolation
            .namespaces
            .iter()
            .copied()
            .filter(|ns| {
                // A runner never has children, so a pid namespace would contain nothing.
                let usable = ns.setup_bit() != 0;
                let ok = usable && self.namespace_available(*ns);
                if !usable {
                    unmet.push("pid namespace (a runner has no children to contain)".to_string());
                } else if !ok {
                    unmet.push(format!("{} namespace", ns.as_str()));
                }
                ok
            })
            .collect();
        let run_as = policy.isolation.run_as.map(|r| (r.uid, r.gid));
        if run_as.is_some() && self.euid != 0 {
            unmet.push("run_as (the supervisor is not root)".to_string());
        }
        let run_as = match run_as {
            _ if self.euid != 0 => None,
            Some(r) => Some(r),
            None => Some(DEFAULT_RUN_AS),
        };
        if policy.isolation.best_effort {
            skipped.extend(unmet);
        } else {
            fatal.extend(unmet.into_iter().map(|u| format!("{u} is not available")));
        }
        if fatal.is_empty() {
            Ok(Enforcement {
                landlock,
                namespaces,
                run_as,
                skipped,
            })
        } else {
            Err(fatal)
        }
    }
}

/// Whether the kernel's list of seccomp actions has the one every runner filter relies on.
fn kills_process(actions: &[String]) -> bool {
    actions.iter().any(|a| a == "kill_process")
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The highest ABI for which creating a ruleset that hard-requires all of its access rights works.
fn landlock_abi() -> u32 {
    use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};
    let abis = [ABI::V1, ABI::V2, ABI::V3, ABI::V5, ABI::V6];
    let numbers = [1u32, 2, 3, 5, 6];
    let mut best = 0;
    for (abi, n) in abis.into_iter().zip(numbers) {
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|r| r.create());
        if created.is_ok() {
            best = n;
        }
    }
    best
}

/// `unshare(1)` binaries we trust to probe with (absolute paths: no PATH lookup).
const UNSHARE: [&str; 2] = ["/usr/bin/unshare", "/bin/unshare"];

fn probe_namespaces(wanted: &[Namespace]) -> Vec<NamespaceProbe> {
    if wanted.is_empty() {
        return Namespace::ALL
            .iter()
            .map(|&namespace| NamespaceProbe {
                namespace,
                available: false,
                how: "not probed: no policy enters it".to_string(),
            })
            .collect();
    }
    let Some(tool) = UNSHARE.iter().find(|p| Path::new(p).exists()) else {
        return Namespace::ALL
            .iter()
            .map(|&namespace| NamespaceProbe {
                namespace,
                available: false,
                how: "not tested: unshare(1) is not installed".to_string(),
            })
            .collect();
    };
    probe_with(&[tool], nix::unistd::geteuid().is_root(), wanted)
}

/// Probes each wanted namespace by running `tool` (a command line: a binary and any leading
/// arguments) with unshare(1)'s flags, as root or not. Split out so a test can stand in a fake
/// unshare(1) for a host whose kernel refuses some namespaces.
fn probe_with(tool: &[&str], root: bool, wanted: &[Namespace]) -> Vec<NamespaceProbe> {
    let user_ok = run_unshare(tool, &["--user"]);
    let shown = tool.join(" ");
    Namespace::ALL
        .iter()
        .map(|&namespace| {
            let flag = format!("--{}", namespace.as_str());
            // Unprivileged, the runner enters its user namespace first; probe the same way.
            let available = match namespace {
                _ if !wanted.contains(&namespace) => {
                    return NamespaceProbe {
                        namespace,
                        available: false,
                        how: "not probed: no policy enters it".to_string(),
                    };
                }
                Namespace::User => user_ok,
                _ if root => run_unshare(tool, &[&flag]),
                _ => user_ok && run_unshare(tool, &["--user", &flag]),
            };
            NamespaceProbe {
                namespace,
                available,
                how: format!("{shown} {flag}"),
            }
        })
        .collect()
}

fn run_unshare(tool: &[&str], flags: &[&str]) -> bool {
    let Some((program, lead)) = tool.split_first() else {
        return false;
    };
    std::process::Command::new(program)
        .args(lead)
        .args(flags)
        .arg("/bin/true")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Our cgroup v2 directory from the texts of `/proc/self/mountinfo` and `/proc/self/cgroup`
/// (passed in so a test can describe a host it is not running on).
fn cgroup_report(mountinfo: &str, own_cgroup: &str) -> CgroupReport {
    let mount = mountinfo.lines().find_map(|l| {
        // Fields: id parent maj:min root mountpoint options ... - fstype source superoptions
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    });
    let own = own_cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string));
    let path = match (&mount, own) {
        (Some(m), Some(o)) => Some(m.join(o.trim_start_matches('/'))),
        _ => None,
    };
    let controllers: Vec<String> = path
        .as_ref()
        .and_then(|p| read_trim(p.join("cgroup.controllers")))
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    let writable = path
        .as_ref()
        .is_some_and(|p| nix::unistd::access(p.as_path(), nix::unistd::AccessFlags::W_OK).is_ok());
    CgroupReport {
        mounted: mount.is_some(),
        delegated: writable && !controllers.is_empty(),
        path,
        controllers,
    }
}

fn rlimits() -> Vec<RlimitReport> {
    use nix::sys::resource::{Resource, getrlimit};
    let list = [
        ("data", Resource::RLIMIT_DATA),
        ("as", Resource::RLIMIT_AS),
        ("cpu", Resource::RLIMIT_CPU),
        ("nofile", Resource::RLIMIT_NOFILE),
        ("fsize", Resource::RLIMIT_FSIZE),
        ("core", Resource::RLIMIT_CORE),
        ("nproc", Resource::RLIMIT_NPROC),
    ];
    let finite = |v: u64| (v != nix::sys::resource::RLIM_INFINITY).then_some(v);
    list.into_iter()
        .filter_map(|(name, r)| {
            let (soft, hard) = getrlimit(r).ok()?;
            Some(RlimitReport {
                name,
                soft: finite(soft),
                hard: finite(hard),
            })
        })
        .collect()
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

impl fmt::Display for HostReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel            {} (euid {})", self.kernel, self.euid)?;
        if self.euid == 0 {
            let (uid, gid) = DEFAULT_RUN_AS;
            writeln!(
                f,
                "runner user       policy run_as, else uid {uid} gid {gid} (nobody): no capabilities"
            )?;
        } else {
            writeln!(
                f,
                "runner user       uid {} (not root: run_as cannot apply; no capabilities to drop)",
                self.euid
            )?;
        }
        writeln!(
            f,
            "seccomp           {} ({})",
            yes(self.seccomp),
            self.seccomp_actions.join(" ")
        )?;
        match self.landlock_abi {
            0 => writeln!(f, "landlock          no")?,
            n => writeln!(f, "landlock          yes (ABI {n})")?,
        }
        for p in &self.namespaces {
            writeln!(
                f,
                "namespace {:<7} {} ({})",
                p.namespace.as_str(),
                yes(p.available),
                p.how
            )?;
        }
        let cg = &self.cgroup_v2;
        let where_ = cg
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "-".into());
        writeln!(
            f,
            "cgroup v2         {} (delegated: {}, {where_}, controllers: {})",
            yes(cg.mounted),
            yes(cg.delegated),
            cg.controllers.join(" ")
        )?;
        for r in &self.rlimits {
            let show = |v: Option<u64>| v.map_or("unlimited".to_string(), |v| v.to_string());
            writeln!(
                f,
                "rlimit {:<10} soft {} hard {}",
                r.name,
                show(r.soft),
                show(r.hard)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn report_is_complete_and_serializes() {
        let r = host_report();
        assert_eq!(r.namespaces.len(), Namespace::ALL.len());
        assert!(r.rlimits.iter().any(|l| l.name == "cpu"));
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.get("landlock_abi").is_some() && json.get("seccomp").is_some());
        let text = r.to_string();
        assert!(text.contains("seccomp") && text.contains("namespace user"));
    }

    /// A host with seccomp, without landlock, where only the user namespace works.
    fn poor_host() -> HostReport {
        let mut r = host_report();
        r.seccomp = true;
        r.landlock_abi = 0;
        r.euid = 1000;
        for p in &mut r.namespaces {
            p.available = p.namespace == Namespace::User;
        }
        r
    }

    fn policy(isolation: &str) -> Policy {
        // One directory per call: tests run in parallel threads of one process.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("ptc-check-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let filter = r#"{"runner": {"mismatch_action": "kill_process", "match_action": "allow",
            "filter": [{"syscall": "read"}]}}"#;
        std::fs::write(d.join("f.json"), filter).unwrap();
        let text = format!("[isolation]\nseccomp = \"f.json\"\n{isolation}");
        let policy = Policy::from_toml("p", &d.join("p.toml"), &text).unwrap();
        // The filter is compiled into the policy: the directory is not needed any more.
        let _ = std::fs::remove_dir_all(&d);
        policy
    }

    #[test]
    fn required_mechanisms_refuse_and_best_effort_skips() {
        let host = poor_host();
        let err = host
            .enforce(&policy("landlock = \"required\"\n"))
            .unwrap_err();
        assert!(err[0].contains("landlock"), "{err:?}");
        let e = host
            .enforce(&policy("landlock = \"best_effort\"\n"))
            .unwrap();
        assert!(!e.landlock && e.skipped.iter().any(|s| s.contains("landlock")));
        let ns = "landlock = \"off\"\nnamespaces = [\"user\", \"net\"]\n";
        let err = host.enforce(&policy(ns)).unwrap_err();
        assert!(err.iter().any(|e| e.contains("net namespace")), "{err:?}");
        let e = host
            .enforce(&policy(&format!("{ns}best_effort = true\n")))
            .unwrap();
        assert_eq!(e.namespaces, vec![Namespace::User]);
        let run_as = "landlock = \"off\"\nrun_as = { uid = 1, gid = 1 }\n";
        assert!(host.enforce(&policy(run_as)).is_err(), "run_as needs root");
        let mut no_seccomp = poor_host();
        no_seccomp.seccomp = false;
        let best = "landlock = \"off\"\nbest_effort = true\n";
        assert!(
            no_seccomp.enforce(&policy(best)).is_err(),
            "seccomp is never optional"
        );
    }

    /// A stand-in for unshare(1) (run by `sh -c`, so no file is executed while another test
    /// thread may hold it open): succeeds only for the flag lists in `works`.
    fn fake_unshare(works: &str) -> String {
        format!("case \"$*\" in {works}) exit 0;; esac; exit 1")
    }

    fn probed(tool: &[&str], root: bool, wanted: &[Namespace]) -> Vec<(String, bool)> {
        probe_with(tool, root, wanted)
            .into_iter()
            .map(|p| (format!("{} {}", p.namespace.as_str(), p.how), p.available))
            .collect()
    }

    #[test]
    fn unprivileged_namespaces_are_probed_inside_a_user_namespace() {
        // A kernel that lets a user namespace hold a net namespace but not an ipc one, and
        // refuses `--net` to an unprivileged caller outside one.
        let script = fake_unshare("'--user /bin/true'|'--user --net /bin/true'");
        let tool = ["/bin/sh", "-c", &script, "unshare"];
        let got = probed(
            &tool,
            false,
            &[Namespace::User, Namespace::Net, Namespace::Ipc],
        );
        let how = |f: &str| format!("/bin/sh -c {script} unshare --{f}");
        let skipped = "not probed: no policy enters it";
        let want = [
            (format!("user {}", how("user")), true),
            (format!("pid {skipped}"), false),
            (format!("net {}", how("net")), true),
            (format!("mount {skipped}"), false),
            (format!("ipc {}", how("ipc")), false),
            (format!("uts {skipped}"), false),
        ];
        assert_eq!(got, want);
        // Without a user namespace nothing else is tried.
        let none = fake_unshare("'--net /bin/true'|'--user --net /bin/true'");
        let tool = ["/bin/sh", "-c", &none, "unshare"];
        let got = probed(&tool, false, &[Namespace::Net]);
        assert!(!got[2].1, "{got:?}");
    }

    #[test]
    fn root_probes_each_namespace_on_its_own() {
        // Root needs no user namespace; this kernel refuses a net namespace inside one.
        let script = fake_unshare("'--user /bin/true'|'--net /bin/true'");
        let tool = ["/bin/sh", "-c", &script, "unshare"];
        let got = probed(&tool, true, &[Namespace::User, Namespace::Net]);
        assert_eq!((got[0].1, got[2].1), (true, true), "{got:?}");
        assert!(probed(&[], true, &[Namespace::Net]).iter().all(|p| !p.1));
    }

    #[test]
    fn this_hosts_namespaces_are_probed_with_unshare() {
        let r = host_report_for(&[Namespace::Net]);
        let net = &r.namespaces[2];
        assert_eq!(net.namespace, Namespace::Net);
        let Some(tool) = UNSHARE.iter().find(|p| Path::new(p).exists()) else {
            assert_eq!(net.how, "not tested: unshare(1) is not installed");
            return;
        };
        assert_eq!(net.how, format!("{tool} --net"));
        // Root (as under CI) can always make a net namespace; the test asks the kernel itself.
        let direct = std::process::Command::new(tool)
            .args(["--net", "/bin/true"])
            .status()
            .is_ok_and(|s| s.success());
        if r.euid == 0 {
            assert_eq!(net.available, direct);
        }
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci || net.available, "CI runs as root on a full kernel");
        assert!(!r.namespaces[0].available, "user was not asked for");
    }

    #[test]
    fn seccomp_needs_the_kill_process_action() {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!kills_process(&list(&[
            "kill_thread",
            "trap",
            "errno",
            "allow"
        ])));
        assert!(kills_process(&list(&["kill_process"])));
        assert!(!kills_process(&[]));
    }

    #[test]
    fn landlock_abi_is_what_this_kernel_version_shipped() {
        // Landlock's ABI grew with the kernel: 1 in 5.13, 2 in 5.19, 3 in 6.2, 5 in 6.10 (4
        // only added network rights), 6 in 6.12. Backports can only raise it.
        let r = host_report();
        let mut v = r.kernel.split(|c: char| !c.is_ascii_digit());
        let major: u32 = v.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        let minor: u32 = v.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        let shipped = [
            ((6, 12), 6),
            ((6, 10), 5),
            ((6, 2), 3),
            ((5, 19), 2),
            ((5, 13), 1),
        ]
        .into_iter()
        .find(|(at, _)| (major, minor) >= *at)
        .map_or(0, |(_, abi)| abi);
        assert!(
            r.landlock_abi == 0 || r.landlock_abi >= shipped,
            "kernel {} reports landlock ABI {}",
            r.kernel,
            r.landlock_abi
        );
        assert!([0, 1, 2, 3, 5, 6].contains(&r.landlock_abi));
    }

    #[test]
    fn the_cgroup_is_found_from_the_mount_table_and_our_membership() {
        let d = std::env::temp_dir().join(format!("ptc-check-cg-{}", std::process::id()));
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        let mountinfo = format!(
            "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n\
             41 31 0:38 / {} rw,nosuid - cgroup2 cgroup2 rw\n",
            d.display()
        );
        let own = "4:memory:/elsewhere\n0::/a/b";
        let cg = cgroup_report(&mountinfo, own);
        assert_eq!(cg.path, Some(d.join("a/b")));
        assert!(
            cg.mounted && cg.controllers.is_empty() && !cg.delegated,
            "{cg:?}"
        );
        std::fs::write(d.join("a/b/cgroup.controllers"), "cpu memory pids\n").unwrap();
        let cg = cgroup_report(&mountinfo, own);
        assert_eq!(cg.controllers, ["cpu", "memory", "pids"]);
        assert!(cg.delegated, "our own directory is writable: {cg:?}");
        let v1 = cgroup_report(&mountinfo, "4:memory:/elsewhere");
        assert!(v1.mounted && v1.path.is_none() && !v1.delegated);
        let none = cgroup_report("22 1 8:1 / / rw - ext4 /dev/sda1 rw", own);
        assert!(!none.mounted && none.path.is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn rlimits_are_read_as_proc_shows_them() {
        let proc = std::fs::read_to_string("/proc/self/limits").unwrap();
        let shown = |title: &str| -> (Option<u64>, Option<u64>) {
            let line = proc.lines().find(|l| l.starts_with(title)).unwrap();
            let mut v = line[title.len()..]
                .split_whitespace()
                .map(|x| x.parse().ok());
            (v.next().flatten(), v.next().flatten())
        };
        let titles = [
            ("data", "Max data size"),
            ("as", "Max address space"),
            ("cpu", "Max cpu time"),
            ("nofile", "Max open files"),
            ("fsize", "Max file size"),
            ("core", "Max core file size"),
            ("nproc", "Max processes"),
        ];
        let got = rlimits();
        assert_eq!(got.len(), titles.len());
        for (r, (name, title)) in got.iter().zip(titles) {
            assert_eq!((r.name, (r.soft, r.hard)), (name, shown(title)));
        }
        // Every test process has a finite number of files.
        assert!(got[3].hard.is_some(), "{:?}", got[3]);
    }

    #[test]
    fn the_report_reads_as_written() {
        let r = HostReport {
            kernel: "6.1.0".into(),
            euid: 1000,
            seccomp: true,
            seccomp_actions: vec!["kill_process".into(), "allow".into()],
            landlock_abi: 0,
            namespaces: vec![NamespaceProbe {
                namespace: Namespace::Net,
                available: false,
                how: "x".into(),
            }],
            cgroup_v2: CgroupReport {
                mounted: true,
                path: None,
                delegated: false,
                controllers: vec![],
            },
            rlimits: vec![RlimitReport {
                name: "cpu",
                soft: Some(5),
                hard: None,
            }],
        };
        let want = "kernel            6.1.0 (euid 1000)\n\
            runner user       uid 1000 (not root: run_as cannot apply; no capabilities to drop)\n\
            seccomp           yes (kill_process allow)\n\
            landlock          no\n\
            namespace net     no (x)\n\
            cgroup v2         yes (delegated: no, -, controllers: )\n\
            rlimit cpu        soft 5 hard unlimited\n";
        assert_eq!(r.to_string(), want);
    }

    #[test]
    fn a_root_supervisor_never_leaves_runners_root() {
        let mut root = poor_host();
        root.euid = 0;
        let off = "landlock = \"off\"\n";
        assert_eq!(
            root.enforce(&policy(off)).unwrap().run_as,
            Some(DEFAULT_RUN_AS)
        );
        let named = "landlock = \"off\"\nrun_as = { uid = 1234, gid = 99 }\n";
        assert_eq!(
            root.enforce(&policy(named)).unwrap().run_as,
            Some((1234, 99))
        );
        // Not root: nothing to drop, nothing to switch to.
        assert_eq!(poor_host().enforce(&policy(off)).unwrap().run_as, None);
        assert!(root.to_string().contains("uid 65534"));
    }
}
