//! systemd's notification protocol, implemented directly: one datagram of `KEY=VALUE` lines to the
//! `AF_UNIX` socket named by `$NOTIFY_SOCKET` (a path, or an abstract name written with a leading
//! `@`). Without `$NOTIFY_SOCKET` (not started by systemd) every call does nothing.
//!
//! The watchdog interval comes from `$WATCHDOG_USEC` (when `$WATCHDOG_PID` is absent or ours);
//! we ping at half of it, as sd_watchdog_enabled(3) recommends.

use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::time::Duration;

/// Where notifications go, if anywhere.
#[derive(Debug, Clone)]
pub struct Notifier {
    target: Option<Target>,
}

#[derive(Debug, Clone)]
enum Target {
    Path(PathBuf),
    Abstract(Vec<u8>),
}

impl Notifier {
    /// Reads `$NOTIFY_SOCKET`.
    pub fn from_env() -> Notifier {
        let target = std::env::var_os("NOTIFY_SOCKET").and_then(|v| {
            let bytes = std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str()).to_vec();
            match bytes.split_first() {
                Some((b'@', name)) => Some(Target::Abstract(name.to_vec())),
                Some((b'/', _)) => Some(Target::Path(PathBuf::from(v))),
                _ => None,
            }
        });
        Notifier { target }
    }

    /// Sends one notification (e.g. `"READY=1\nSTATUS=serving"`); errors are logged, not fatal.
    pub fn notify(&self, state: &str) {
        let Some(target) = &self.target else {
            return;
        };
        if let Err(e) = send(target, state.as_bytes()) {
            tracing::warn!(error = %e, "sd_notify failed");
        }
    }

    /// The watchdog ping interval, if systemd asked for one.
    pub fn watchdog_interval() -> Option<Duration> {
        let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
        if let Ok(pid) = std::env::var("WATCHDOG_PID")
            && pid.parse::<u32>().ok() != Some(std::process::id())
        {
            return None;
        }
        (usec > 0).then(|| Duration::from_micros(usec / 2))
    }
}

fn send(target: &Target, msg: &[u8]) -> std::io::Result<usize> {
    let sock = UnixDatagram::unbound()?;
    match target {
        Target::Path(p) => sock.send_to(msg, p),
        Target::Abstract(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(msg, &addr)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn datagram_arrives_at_a_path_socket() {
        let dir = std::env::temp_dir().join(format!("ptc-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("n.sock");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        let n = Notifier {
            target: Some(Target::Path(path)),
        };
        n.notify("READY=1\nSTATUS=ok");
        let mut buf = [0u8; 64];
        let len = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=ok");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
