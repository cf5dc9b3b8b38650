//! Policies as data: one TOML file per named policy (`policies/NAME.toml`).
//!
//! A policy fixes the limits an execution runs under, how the runner is isolated, and how many warm
//! runners the engine keeps for it. Loading validates everything up front and fails closed: unknown
//! keys, bad values, a seccomp filter file that does not exist or does not compile are errors that
//! name the file and the field. The seccomp filter is compiled here, once per policy, into the BPF
//! bytes the runner installs (`Policy::seccomp_bpf`), from the filter named `runner`.
//!
//! Where policies come from ([`PolicySource`]): the shipped `policies/*.toml` and the seccomp filter
//! they name are compiled into the binary, so an installed `ptc` needs no files at all; an operator's
//! directory (`$PTC_POLICIES`, else `/etc/ptc/policies` when it exists, or the daemon's
//! `policies_dir`) replaces that set whole. An override never falls back: a directory that is
//! named but missing, unreadable, empty or holding one bad file is an error, not the built-ins.
//!
//! Invariant: a `Policy` value is always complete and valid; nothing downstream re-validates it.

use ptc_shared::{Limits, seccomp};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A policy file could not be used. `file` and `field` say where.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: PathBuf, message: String },
    #[error("{file}: field `{field}`: {message}")]
    Field {
        file: PathBuf,
        field: &'static str,
        message: String,
    },
}

/// How landlock is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LandlockMode {
    /// The policy is refused on a kernel without landlock.
    Required,
    /// Used where the kernel has it.
    BestEffort,
    Off,
}

/// A Linux namespace the runner may be put in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Namespace {
    User,
    Pid,
    Net,
    Mount,
    Ipc,
    Uts,
}

impl Namespace {
    /// All namespaces, in the order they must be entered (user first, so the rest work unprivileged).
    pub const ALL: [Namespace; 6] = [
        Namespace::User,
        Namespace::Pid,
        Namespace::Net,
        Namespace::Mount,
        Namespace::Ipc,
        Namespace::Uts,
    ];

    /// The runner's `Setup` bit for this namespace; 0 for `pid`, which a runner cannot use (it
    /// never has children) and the host check reports as unavailable.
    pub fn setup_bit(self) -> u32 {
        use ptc_shared::protocol::ns;
        match self {
            Namespace::User => ns::USER,
            Namespace::Net => ns::NET,
            Namespace::Ipc => ns::IPC,
            Namespace::Uts => ns::UTS,
            Namespace::Mount => ns::MOUNT,
            Namespace::Pid => 0,
        }
    }

    /// The name used in policy files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::User => "user",
            Namespace::Pid => "pid",
            Namespace::Net => "net",
            Namespace::Mount => "mount",
            Namespace::Ipc => "ipc",
            Namespace::Uts => "uts",
        }
    }
}

/// A uid/gid the runner switches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

/// The isolation part of a policy, resolved.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The seccomp filter file (absolute, or relative to the current directory if the policy's was).
    pub seccomp_path: PathBuf,
    pub landlock: LandlockMode,
    /// Sorted and deduplicated.
    pub namespaces: Vec<Namespace>,
    pub run_as: Option<RunAs>,
    /// Run with what the host offers when a mechanism above is unavailable, instead of refusing.
    pub best_effort: bool,
}

/// One named, validated policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub file: PathBuf,
    pub limits: Limits,
    pub isolation: Isolation,
    /// The floor of this policy's warm pool: runners kept ready when idle; under load the pool
    /// grows up to the engine's bound (`PoolBounds`). 0 = no pool, every runner spawned on demand.
    pub warm: usize,
    /// The compiled seccomp filter: `sock_filter` instructions, 8 bytes each, native endian.
    pub seccomp_bpf: Arc<[u8]>,
}

/// Smallest heap a policy may give a runner: below this the runtime cannot start.
pub const MIN_HEAP_BYTES: u64 = 4 << 20;
/// Most warm runners one policy may keep.
pub const MAX_WARM: usize = 256;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    limits: Limits,
    isolation: IsolationFile,
    #[serde(default)]
    pool: PoolFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IsolationFile {
    seccomp: PathBuf,
    #[serde(default = "landlock_default")]
    landlock: LandlockMode,
    #[serde(default)]
    namespaces: Vec<Namespace>,
    run_as: Option<RunAs>,
    #[serde(default)]
    best_effort: bool,
}

fn landlock_default() -> LandlockMode {
    LandlockMode::Required
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolFile {
    #[serde(default = "warm_default")]
    warm: usize,
}

impl Default for PoolFile {
    fn default() -> PoolFile {
        PoolFile {
            warm: warm_default(),
        }
    }
}

fn warm_default() -> usize {
    2
}

/// The set of policies to use: the one compiled into the binary, or a directory that replaces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    BuiltIn,
    Dir(PathBuf),
}

/// The shipped policies, compiled in: (name, TOML text).
const BUILT_IN: [(&str, &str); 2] = [
    ("default", include_str!("../../policies/default.toml")),
    ("strict", include_str!("../../policies/strict.toml")),
];

/// The files the shipped policies name, compiled in: (path relative to `policies/`, contents).
const BUILT_IN_FILES: [(&str, &str); 1] = [(
    "seccomp/runner.json",
    include_str!("../../policies/seccomp/runner.json"),
)];

/// How the built-in policies show where they came from (in `file` and in errors).
const BUILT_IN_DIR: &str = "(built-in)";

/// Where a policy's seccomp file is read from.
#[derive(Clone, Copy)]
enum Files {
    Disk,
    BuiltIn,
}

impl PolicySource {
    /// `$PTC_POLICIES` if set, else `/etc/ptc/policies` if it exists, else the built-in set.
    pub fn from_env() -> PolicySource {
        if let Some(p) = std::env::var_os("PTC_POLICIES") {
            return PolicySource::Dir(PathBuf::from(p));
        }
        let etc = PathBuf::from("/etc/ptc/policies");
        if etc.is_dir() {
            return PolicySource::Dir(etc);
        }
        PolicySource::BuiltIn
    }

    /// Loads and validates every policy of this source. A directory with no policy in it is an
    /// error too: it never falls back to the built-in set.
    pub fn load(&self) -> Result<BTreeMap<String, Policy>, PolicyError> {
        match self {
            PolicySource::BuiltIn => built_in(),
            PolicySource::Dir(dir) => {
                let all = load_dir(dir)?;
                if all.is_empty() {
                    return Err(PolicyError::Parse {
                        file: dir.clone(),
                        message: "no policy files (*.toml) in this directory".into(),
                    });
                }
                Ok(all)
            }
        }
    }
}

impl std::fmt::Display for PolicySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicySource::BuiltIn => f.write_str("the built-in policies"),
            PolicySource::Dir(dir) => write!(f, "{}", dir.display()),
        }
    }
}

/// The shipped policies, from the text compiled into this binary.
pub fn built_in() -> Result<BTreeMap<String, Policy>, PolicyError> {
    let mut out = BTreeMap::new();
    for (name, text) in BUILT_IN {
        let file = Path::new(BUILT_IN_DIR).join(format!("{name}.toml"));
        let p = Policy::parse(name, &file, text, Files::BuiltIn)?;
        out.insert(p.name.clone(), p);
    }
    Ok(out)
}

impl Policy {
    /// Loads and validates one policy file; the policy's name is the file stem.
    pub fn load(file: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(file).map_err(|source| PolicyError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        let name = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("policy")
            .to_string();
        Policy::from_toml(&name, file, &text)
    }

    /// Parses policy text as if read from `file` (which anchors the relative seccomp path).
    pub fn from_toml(name: &str, file: &Path, text: &str) -> Result<Policy, PolicyError> {
        Policy::parse(name, file, text, Files::Disk)
    }

    fn parse(name: &str, file: &Path, text: &str, files: Files) -> Result<Policy, PolicyError> {
        let parsed: PolicyFile = toml::from_str(text).map_err(|e| PolicyError::Parse {
            file: file.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        // Omitted fields take the defaults; unknown ones are errors naming the key.
        let limits = parsed.limits;
        validate_limits(file, &limits)?;
        if parsed.pool.warm > MAX_WARM {
            return Err(field_err(file, "pool.warm", format!("at most {MAX_WARM}")));
        }
        let dir = file.parent().unwrap_or(Path::new("."));
        let seccomp_path = dir.join(&parsed.isolation.seccomp);
        let seccomp_bpf = compile_seccomp(file, &seccomp_path, &parsed.isolation.seccomp, files)?;
        let mut namespaces = parsed.isolation.namespaces;
        namespaces.sort();
        namespaces.dedup();
        let isolation = Isolation {
            seccomp_path,
            landlock: parsed.isolation.landlock,
            namespaces,
            run_as: parsed.isolation.run_as,
            best_effort: parsed.isolation.best_effort,
        };
        Ok(Policy {
            name: name.to_string(),
            file: file.to_path_buf(),
            limits,
            isolation,
            warm: parsed.pool.warm,
            seccomp_bpf,
        })
    }
}

/// Loads every `*.toml` in `dir`, keyed by policy name. Any bad file fails the whole load.
pub fn load_dir(dir: &Path) -> Result<BTreeMap<String, Policy>, PolicyError> {
    let read_err = |source| PolicyError::Read {
        file: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = BTreeMap::new();
    for f in files {
        let p = Policy::load(&f)?;
        out.insert(p.name.clone(), p);
    }
    Ok(out)
}

fn field_err(file: &Path, field: &'static str, message: impl Into<String>) -> PolicyError {
    PolicyError::Field {
        file: file.to_path_buf(),
        field,
        message: message.into(),
    }
}

fn validate_limits(file: &Path, l: &Limits) -> Result<(), PolicyError> {
    let positive: [(&'static str, u64); 6] = [
        ("limits.timeout_ms", l.timeout_ms),
        ("limits.cpu_ms", l.cpu_ms),
        ("limits.max_steps", l.max_steps),
        ("limits.max_depth", u64::from(l.max_depth)),
        ("limits.max_program_bytes", l.max_program_bytes),
        ("limits.max_nesting", u64::from(l.max_nesting)),
    ];
    for (field, v) in positive {
        if v == 0 {
            return Err(field_err(file, field, "must be greater than 0"));
        }
    }
    if l.heap_bytes < MIN_HEAP_BYTES {
        return Err(field_err(
            file,
            "limits.heap_bytes",
            format!("must be at least {MIN_HEAP_BYTES}"),
        ));
    }
    // Beyond a day a deadline is a typo; it would also overflow rlimit arithmetic nowhere, but keep it sane.
    if l.timeout_ms > 86_400_000 || l.cpu_ms > 86_400_000 {
        let field = if l.timeout_ms > 86_400_000 {
            "limits.timeout_ms"
        } else {
            "limits.cpu_ms"
        };
        return Err(field_err(file, field, "must be at most 86400000 (one day)"));
    }
    Ok(())
}

/// Compiles the seccomp JSON at `path` (`named` as the policy wrote it) for this machine's
/// architecture into BPF bytes. A built-in policy may name only a built-in file.
fn compile_seccomp(
    file: &Path,
    path: &Path,
    named: &Path,
    files: Files,
) -> Result<Arc<[u8]>, PolicyError> {
    let field = "isolation.seccomp";
    let json = match files {
        Files::Disk => std::fs::read(path)
            .map_err(|e| field_err(file, field, format!("{}: {e}", path.display())))?,
        Files::BuiltIn => BUILT_IN_FILES
            .iter()
            .find(|(rel, _)| Path::new(rel) == named)
            .map(|(_, text)| text.as_bytes().to_vec())
            .ok_or_else(|| field_err(file, field, format!("{}: not built in", path.display())))?,
    };
    seccomp::compile_filter(&json, seccomp::RUNNER_FILTER)
        .map(Arc::from)
        .map_err(|e| field_err(file, field, format!("{}: {e}", path.display())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const FILTER: &str = r#"{"runner": {"mismatch_action": "kill_process", "match_action": "allow",
        "filter": [{"syscall": "read"}, {"syscall": "write"}, {"syscall": "exit_group"}]}}"#;

    /// A test directory, removed with what it holds when dropped.
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn dir_with_filter() -> Scratch {
        // One directory per call: tests run in parallel and rewrite the filter file.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("ptc-policy-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("f.json"), FILTER).unwrap();
        Scratch(d)
    }

    #[test]
    fn loads_defaults_and_compiles_filter() {
        let d = dir_with_filter();
        let p = Policy::from_toml(
            "t",
            &d.join("t.toml"),
            "[isolation]\nseccomp = \"f.json\"\n",
        )
        .unwrap();
        assert_eq!(p.limits, Limits::default());
        assert_eq!(p.warm, 2);
        assert_eq!(p.isolation.landlock, LandlockMode::Required);
        assert!(!p.seccomp_bpf.is_empty() && p.seccomp_bpf.len().is_multiple_of(8));
    }

    #[test]
    fn a_pid_namespace_is_never_enforceable() {
        let d = dir_with_filter();
        let strict = "[isolation]\nseccomp = \"f.json\"\nnamespaces = [\"pid\", \"net\"]\n";
        let p = Policy::from_toml("t", &d.join("t.toml"), strict).unwrap();
        let err = crate::check::host_report().enforce(&p).unwrap_err();
        assert!(err.iter().any(|e| e.contains("pid namespace")), "{err:?}");
        let lenient = format!("{strict}best_effort = true\n");
        let p = Policy::from_toml("t", &d.join("t.toml"), &lenient).unwrap();
        let e = crate::check::host_report().enforce(&p).unwrap();
        assert!(!e.namespaces.contains(&Namespace::Pid));
        assert!(
            e.skipped.iter().any(|s| s.contains("pid namespace")),
            "{:?}",
            e.skipped
        );
        assert_eq!(Namespace::Pid.setup_bit(), 0);
    }

    #[test]
    fn unknown_key_names_file_and_field() {
        let d = dir_with_filter();
        let text = "[limits]\ntimeout_msec = 5\n[isolation]\nseccomp = \"f.json\"\n";
        let err = Policy::from_toml("t", &d.join("bad.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.toml") && err.contains("timeout_msec"),
            "{err}"
        );
    }

    #[test]
    fn bad_values_are_named() {
        let d = dir_with_filter();
        let f = d.join("bad.toml");
        let zero = "[limits]\ntimeout_ms = 0\n[isolation]\nseccomp = \"f.json\"\n";
        let err = Policy::from_toml("t", &f, zero).unwrap_err().to_string();
        assert!(err.contains("limits.timeout_ms"), "{err}");
        let ns = "[isolation]\nseccomp = \"f.json\"\nnamespaces = [\"time\"]\n";
        let err = Policy::from_toml("t", &f, ns).unwrap_err().to_string();
        assert!(err.contains("time") && err.contains("bad.toml"), "{err}");
        let ll = "[isolation]\nseccomp = \"f.json\"\nlandlock = \"maybe\"\n";
        assert!(
            Policy::from_toml("t", &f, ll)
                .unwrap_err()
                .to_string()
                .contains("maybe")
        );
    }

    #[test]
    fn filter_that_does_not_compile_is_refused() {
        let d = dir_with_filter();
        std::fs::write(
            d.join("broken.json"),
            r#"{"runner": {"filter": [{"syscall": "nope_call"}]}}"#,
        )
        .unwrap();
        let text = "[isolation]\nseccomp = \"broken.json\"\n";
        let err = Policy::from_toml("t", &d.join("t.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("isolation.seccomp"), "{err}");
        let missing = "[isolation]\nseccomp = \"absent.json\"\n";
        let err = Policy::from_toml("t", &d.join("t.toml"), missing)
            .unwrap_err()
            .to_string();
        assert!(err.contains("absent.json"), "{err}");
    }

    #[test]
    fn shipped_policies_load_and_are_the_built_in_ones() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies");
        let all = load_dir(&dir).unwrap();
        let built_in = PolicySource::BuiltIn.load().unwrap();
        assert_eq!(
            built_in.keys().collect::<Vec<_>>(),
            all.keys().collect::<Vec<_>>(),
            "every file in policies/ is compiled in"
        );
        for (name, p) in &built_in {
            assert_eq!(p.seccomp_bpf, all[name].seccomp_bpf, "{name}");
            assert_eq!(p.limits, all[name].limits, "{name}");
            assert!(p.file.starts_with(BUILT_IN_DIR), "{}", p.file.display());
        }
        let d = &all["default"];
        assert_eq!(
            (d.limits.timeout_ms, d.limits.heap_bytes, d.warm),
            (1000, 64 << 20, 2)
        );
        let s = &all["strict"];
        assert!(s.limits.timeout_ms < d.limits.timeout_ms && !s.isolation.namespaces.is_empty());
    }

    #[test]
    fn a_broken_override_never_falls_back() {
        let missing = PolicySource::Dir(std::env::temp_dir().join("ptc-no-such-policies-dir"));
        let err = missing.load().unwrap_err().to_string();
        assert!(err.contains("ptc-no-such-policies-dir"), "{err}");
        let d = dir_with_filter();
        let err = PolicySource::Dir(d.to_path_buf())
            .load()
            .unwrap_err()
            .to_string();
        assert!(err.contains("no policy files"), "{err}");
        std::fs::write(
            d.join("bad.toml"),
            "[isolation]\nseccomp = \"absent.json\"\n",
        )
        .unwrap();
        std::fs::write(d.join("good.toml"), "[isolation]\nseccomp = \"f.json\"\n").unwrap();
        let err = PolicySource::Dir(d.to_path_buf())
            .load()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.toml") && err.contains("absent.json"),
            "{err}"
        );
        std::fs::remove_file(d.join("bad.toml")).unwrap();
        let only = PolicySource::Dir(d.to_path_buf()).load().unwrap();
        assert_eq!(
            only.keys().collect::<Vec<_>>(),
            ["good"],
            "a directory replaces the set"
        );
    }

    #[test]
    fn a_built_in_policy_names_only_built_in_files() {
        let file = Path::new(BUILT_IN_DIR).join("x.toml");
        let text = "[isolation]\nseccomp = \"/etc/passwd\"\n";
        let err = Policy::parse("x", &file, text, Files::BuiltIn).unwrap_err();
        assert!(err.to_string().contains("not built in"), "{err}");
    }

    /// The smallest heap a policy may give is 4 MiB exactly, and the source of a load names
    /// itself in errors (mutation testing: `4 << 20` → `4 >> 20` and `Display` were unchecked).
    #[test]
    fn a_heap_one_byte_under_4_mib_is_refused_and_4_mib_is_not() {
        let d = dir_with_filter();
        let with = |heap: u64| {
            let text =
                format!("[limits]\nheap_bytes = {heap}\n[isolation]\nseccomp = \"f.json\"\n");
            Policy::from_toml("t", &d.join("t.toml"), &text)
        };
        assert_eq!(with(4_194_304).unwrap().limits.heap_bytes, 4_194_304);
        let err = with(4_194_303).unwrap_err().to_string();
        assert!(
            err.contains("heap_bytes") && err.contains("at least 4194304"),
            "{err}"
        );
        assert_eq!(PolicySource::BuiltIn.to_string(), "the built-in policies");
        let dir = PolicySource::Dir(PathBuf::from("/etc/ptc/policies"));
        assert_eq!(dir.to_string(), "/etc/ptc/policies");
    }

    /// `pool.warm` may be 256 (`MAX_WARM`) but not 257.
    #[test]
    fn a_warm_pool_of_256_is_accepted_and_257_is_refused() {
        let d = dir_with_filter();
        let with = |warm: usize| {
            let text = format!("[pool]\nwarm = {warm}\n[isolation]\nseccomp = \"f.json\"\n");
            Policy::from_toml("t", &d.join("t.toml"), &text)
        };
        assert_eq!(with(256).unwrap().warm, 256);
        let err = with(257).unwrap_err().to_string();
        assert!(
            err.contains("pool.warm") && err.contains("at most 256"),
            "{err}"
        );
    }

    /// A deadline or CPU time of one day is accepted, a millisecond more is refused, and the
    /// error names the field that was over.
    #[test]
    fn a_day_of_time_is_the_most_and_the_error_names_the_field() {
        let d = dir_with_filter();
        let with = |limits: &str| {
            let text = format!("[limits]\n{limits}\n[isolation]\nseccomp = \"f.json\"\n");
            Policy::from_toml("t", &d.join("t.toml"), &text)
        };
        let day = with("timeout_ms = 86400000\ncpu_ms = 86400000").unwrap();
        assert_eq!(
            (day.limits.timeout_ms, day.limits.cpu_ms),
            (86_400_000, 86_400_000)
        );
        for (limits, field) in [
            ("timeout_ms = 86400001\ncpu_ms = 1000", "limits.timeout_ms"),
            ("timeout_ms = 1000\ncpu_ms = 86400001", "limits.cpu_ms"),
            ("timeout_ms = 86400000\ncpu_ms = 86400001", "limits.cpu_ms"),
            (
                "timeout_ms = 86400001\ncpu_ms = 86400001",
                "limits.timeout_ms",
            ),
        ] {
            let err = with(limits).unwrap_err().to_string();
            assert!(
                err.contains(field) && err.contains("at most 86400000"),
                "{err}"
            );
        }
    }
}
