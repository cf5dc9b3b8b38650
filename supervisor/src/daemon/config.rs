//! The daemon's configuration file (TOML), with defaults that work out of the box.
//!
//! Every key is optional. Unknown keys and bad values are errors that name the file and the key.
//! A loaded [`Config`] is complete and validated; the daemon never re-checks it.
//!
//! ```toml
//! socket = "/run/ptc/ptc.sock"     # ignored under socket activation
//! socket_group = "ptc"             # group of the socket (mode is always 0660)
//! policies_dir = "/etc/ptc/policies"   # default: $PTC_POLICIES, /etc/ptc/policies, or built in
//! default_policy = "default"
//! runner = "/usr/local/bin/ptc-runner"
//! allowed_uids = [1000]            # both lists empty: anyone who can open the socket
//! allowed_gids = [1001]            # the peer's effective (primary) gid from SO_PEERCRED only;
//!                                  # for "members of group ptc", use socket_group instead
//! max_runners = 64                 # runners alive at once, over all clients
//! max_queue = 256                  # requests waiting for a runner, over all clients
//! per_uid_max = 16                 # concurrent executions per client uid
//! per_uid_queue = 64               # waiting requests per client uid
//! max_connections = 1024
//! per_uid_connections = 64         # connections one client uid may hold open (else `busy`)
//! idle_timeout_ms = 60000          # a connection with no request in flight and no frame for
//!                                  # this long is closed (Refused busy, "idle")
//! max_frame_bytes = 16777216
//! shutdown_grace_ms = 10000        # SIGTERM: how long running executions may finish
//! pool_max = 32                    # warm runners a policy's pool may grow to under load
//! pool_idle_ms = 5000              # idle this long, a pool shrinks back to its policy's `warm`
//! zygotes = 8                      # zygote shards forking runners (1-64; default: one per 2 cores)
//! log_format = "text"              # or "json"
//! [policies_by_uid]                # uids listed here may use only these policies
//! 1000 = ["default", "strict"]
//! ```

use crate::engine::{MAX_ZYGOTES, PoolBounds, default_zygotes};
use crate::policy::{MAX_WARM, PolicySource};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: PathBuf, message: String },
    #[error("{file}: key `{key}`: {message}")]
    Key {
        file: PathBuf,
        key: String,
        message: String,
    },
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}

/// The validated daemon configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub socket: PathBuf,
    /// Group id the socket is chowned to (`None`: the daemon's group).
    pub socket_gid: Option<u32>,
    /// The policies: a directory (`policies_dir`), else [`PolicySource::from_env`].
    pub policies: PolicySource,
    pub default_policy: String,
    pub runner: PathBuf,
    pub allowed_uids: BTreeSet<u32>,
    pub allowed_gids: BTreeSet<u32>,
    pub policies_by_uid: BTreeMap<u32, BTreeSet<String>>,
    pub max_runners: usize,
    pub max_queue: usize,
    pub per_uid_max: usize,
    pub per_uid_queue: usize,
    pub max_connections: usize,
    pub per_uid_connections: usize,
    pub idle_timeout_ms: u64,
    pub max_frame_bytes: u32,
    pub shutdown_grace_ms: u64,
    pub log_format: LogFormat,
    /// Warm pools: the bound they grow to under load, and the idle time before they shrink.
    pub pool: PoolBounds,
    /// Zygote shards (each a fork server with its own threads); runs are dealt to them in turn.
    pub zygotes: usize,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    socket: Option<PathBuf>,
    socket_group: Option<String>,
    policies_dir: Option<PathBuf>,
    default_policy: Option<String>,
    runner: Option<PathBuf>,
    allowed_uids: Option<Vec<u32>>,
    allowed_gids: Option<Vec<u32>>,
    policies_by_uid: Option<BTreeMap<String, Vec<String>>>,
    max_runners: Option<usize>,
    max_queue: Option<usize>,
    per_uid_max: Option<usize>,
    per_uid_queue: Option<usize>,
    max_connections: Option<usize>,
    per_uid_connections: Option<usize>,
    idle_timeout_ms: Option<u64>,
    max_frame_bytes: Option<u32>,
    shutdown_grace_ms: Option<u64>,
    log_format: Option<LogFormat>,
    pool_max: Option<usize>,
    pool_idle_ms: Option<u64>,
    zygotes: Option<usize>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            socket: default_socket(),
            socket_gid: None,
            policies: PolicySource::from_env(),
            default_policy: "default".into(),
            runner: default_runner(),
            allowed_uids: BTreeSet::new(),
            allowed_gids: BTreeSet::new(),
            policies_by_uid: BTreeMap::new(),
            max_runners: 64,
            max_queue: 256,
            per_uid_max: 16,
            per_uid_queue: 64,
            max_connections: 1024,
            per_uid_connections: 64,
            idle_timeout_ms: 60_000,
            max_frame_bytes: ptc_shared::client_protocol::CLIENT_MAX_FRAME,
            shutdown_grace_ms: 10_000,
            log_format: LogFormat::Text,
            pool: PoolBounds::DEFAULT,
            zygotes: default_zygotes(),
        }
    }
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(file: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        Config::from_toml(file, &text)
    }

    /// Parses and validates config text; `file` is only used in errors and for relative paths.
    pub fn from_toml(file: &Path, text: &str) -> Result<Config, ConfigError> {
        let f: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            file: file.to_path_buf(),
            message: e.to_string().trim_end().replace('\n', " "),
        })?;
        let base = file.parent().unwrap_or(Path::new("."));
        let key = |key: &str, message: String| ConfigError::Key {
            file: file.to_path_buf(),
            key: key.to_string(),
            message,
        };
        let d = Config::default();
        let c = Config {
            socket: f.socket.map_or(d.socket, |p| base.join(p)),
            socket_gid: match f.socket_group {
                Some(g) => Some(resolve_group(&g).map_err(|m| key("socket_group", m))?),
                None => None,
            },
            policies: f
                .policies_dir
                .map_or(d.policies, |p| PolicySource::Dir(base.join(p))),
            default_policy: f.default_policy.unwrap_or(d.default_policy),
            runner: f.runner.map_or(d.runner, |p| base.join(p)),
            allowed_uids: f.allowed_uids.unwrap_or_default().into_iter().collect(),
            allowed_gids: f.allowed_gids.unwrap_or_default().into_iter().collect(),
            policies_by_uid: parse_policy_map(f.policies_by_uid.unwrap_or_default())
                .map_err(|(k, m)| key(&k, m))?,
            max_runners: f.max_runners.unwrap_or(d.max_runners),
            max_queue: f.max_queue.unwrap_or(d.max_queue),
            per_uid_max: f.per_uid_max.unwrap_or(d.per_uid_max),
            per_uid_queue: f.per_uid_queue.unwrap_or(d.per_uid_queue),
            max_connections: f.max_connections.unwrap_or(d.max_connections),
            per_uid_connections: f.per_uid_connections.unwrap_or(d.per_uid_connections),
            idle_timeout_ms: f.idle_timeout_ms.unwrap_or(d.idle_timeout_ms),
            max_frame_bytes: f.max_frame_bytes.unwrap_or(d.max_frame_bytes),
            shutdown_grace_ms: f.shutdown_grace_ms.unwrap_or(d.shutdown_grace_ms),
            log_format: f.log_format.unwrap_or(d.log_format),
            pool: PoolBounds {
                max: f.pool_max.unwrap_or(d.pool.max),
                idle: f
                    .pool_idle_ms
                    .map_or(d.pool.idle, std::time::Duration::from_millis),
            },
            zygotes: f.zygotes.unwrap_or(d.zygotes),
        };
        c.validate().map_err(|(k, m)| key(k, m))?;
        Ok(c)
    }

    /// Range checks; the error names the key.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        let at_least_one = [
            ("max_runners", self.max_runners),
            ("per_uid_max", self.per_uid_max),
            ("max_connections", self.max_connections),
            ("per_uid_connections", self.per_uid_connections),
            (
                "idle_timeout_ms",
                usize::try_from(self.idle_timeout_ms).unwrap_or(usize::MAX),
            ),
        ];
        for (k, v) in at_least_one {
            if v == 0 {
                return Err((k, "must be at least 1".into()));
            }
        }
        if self.pool.max > MAX_WARM {
            return Err(("pool_max", format!("must be at most {MAX_WARM}")));
        }
        if !(1..=MAX_ZYGOTES).contains(&self.zygotes) {
            return Err(("zygotes", format!("must be between 1 and {MAX_ZYGOTES}")));
        }
        if self.pool.idle < std::time::Duration::from_millis(10) {
            return Err(("pool_idle_ms", "must be at least 10".into()));
        }
        if self.max_frame_bytes < 4096 {
            return Err(("max_frame_bytes", "must be at least 4096".into()));
        }
        if self.default_policy.is_empty() {
            return Err(("default_policy", "must not be empty".into()));
        }
        if self.socket.as_os_str().is_empty() {
            return Err(("socket", "must not be empty".into()));
        }
        Ok(())
    }

    /// Whether a peer with these credentials may connect.
    pub fn allows(&self, uid: u32, gid: u32) -> bool {
        (self.allowed_uids.is_empty() && self.allowed_gids.is_empty())
            || self.allowed_uids.contains(&uid)
            || self.allowed_gids.contains(&gid)
    }

    /// Whether `uid` may run under `policy`.
    pub fn policy_allowed(&self, uid: u32, policy: &str) -> bool {
        self.policies_by_uid
            .get(&uid)
            .is_none_or(|set| set.contains(policy))
    }
}

fn parse_policy_map(
    raw: BTreeMap<String, Vec<String>>,
) -> Result<BTreeMap<u32, BTreeSet<String>>, (String, String)> {
    let mut out = BTreeMap::new();
    for (k, v) in raw {
        let uid: u32 = k.parse().map_err(|_| {
            (
                format!("policies_by_uid.{k}"),
                "keys must be numeric uids".to_string(),
            )
        })?;
        out.insert(uid, v.into_iter().collect());
    }
    Ok(out)
}

fn resolve_group(g: &str) -> Result<u32, String> {
    if let Ok(gid) = g.parse::<u32>() {
        return Ok(gid);
    }
    match nix::unistd::Group::from_name(g) {
        Ok(Some(grp)) => Ok(grp.gid.as_raw()),
        Ok(None) => Err(format!("no group named `{g}`")),
        Err(e) => Err(format!("cannot look up group `{g}`: {e}")),
    }
}

/// `/run/ptc/ptc.sock` for root; `$XDG_RUNTIME_DIR/ptc/ptc.sock` (or /tmp) for other users.
pub fn default_socket() -> PathBuf {
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/run/ptc/ptc.sock");
    }
    let base = std::env::var_os("XDG_RUNTIME_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    base.join("ptc").join("ptc.sock")
}

pub use crate::installed::default_runner;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml(Path::new("/etc/ptc/ptc.toml"), text)
    }

    #[test]
    fn empty_config_is_the_defaults() {
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_key_is_named() {
        let e = parse("max_runnerz = 3").unwrap_err().to_string();
        assert!(e.contains("max_runnerz"), "{e}");
        assert!(e.contains("/etc/ptc/ptc.toml"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = parse("max_runners = 0").unwrap_err().to_string();
        assert!(e.contains("`max_runners`"), "{e}");
        let e = parse("pool_max = 257").unwrap_err().to_string();
        assert!(e.contains("`pool_max`") && e.contains("at most 256"), "{e}");
        let e = parse("pool_idle_ms = 9").unwrap_err().to_string();
        assert!(
            e.contains("`pool_idle_ms`") && e.contains("at least 10"),
            "{e}"
        );
        for bad in ["zygotes = 0", "zygotes = 65"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("`zygotes`") && e.contains("between 1 and 64"),
                "{e}"
            );
        }
        assert_eq!(parse("zygotes = 64").unwrap().zygotes, 64);
        assert_eq!(parse("zygotes = 1").unwrap().zygotes, 1);
        let e = parse("max_queue = \"lots\"").unwrap_err().to_string();
        assert!(e.contains("max_queue"), "{e}");
        let e = parse("[policies_by_uid]\nbob = [\"default\"]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("policies_by_uid.bob"), "{e}");
        let e = parse("log_format = \"xml\"").unwrap_err().to_string();
        assert!(e.contains("log_format"), "{e}");
    }

    #[test]
    fn relative_paths_are_relative_to_the_file_and_access_rules_apply() {
        let c =
            parse("socket = \"s.sock\"\nallowed_uids = [5]\n[policies_by_uid]\n5 = [\"strict\"]")
                .unwrap();
        assert_eq!(c.socket, PathBuf::from("/etc/ptc/s.sock"));
        assert!(c.allows(5, 99) && !c.allows(6, 99));
        assert!(c.policy_allowed(5, "strict") && !c.policy_allowed(5, "default"));
        assert!(c.policy_allowed(6, "default"));
    }
}
