//! Taking the daemon's socket: bind a filesystem socket, or adopt one systemd passed us.
//!
//! A bound socket gets mode 0660 explicitly after bind (whatever the umask) and, if configured,
//! the socket group. A socket file left by a dead daemon is replaced; one that still answers is
//! an error (two daemons must not share a path). An inherited socket is used as it is: its
//! permissions belong to the `.socket` unit.

use super::DaemonError;
use super::config::Config;
use interprocess::local_socket::{GenericFilePath, ListenerOptions, ToFsName};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// Where the listening socket comes from.
#[derive(Debug)]
pub enum ListenerSource {
    /// Bind `config.socket`.
    Bind,
    /// A listening socket passed by systemd socket activation (`LISTEN_FDS`).
    Inherited(UnixListener),
}

impl ListenerSource {
    /// The first socket passed by systemd, if this process was socket-activated. Call before
    /// starting any thread: it clears `LISTEN_PID`/`LISTEN_FDS` from the environment.
    pub fn from_systemd() -> Result<Option<UnixListener>, std::io::Error> {
        let mut fds = listenfd::ListenFd::from_env();
        if fds.len() == 0 {
            return Ok(None);
        }
        fds.take_unix_listener(0)
    }
}

fn sock_err(path: &Path, message: impl std::fmt::Display) -> DaemonError {
    DaemonError::Socket {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

pub(crate) fn listen(
    source: ListenerSource,
    config: &Config,
) -> Result<(interprocess::local_socket::tokio::Listener, PathBuf), DaemonError> {
    match source {
        ListenerSource::Inherited(l) => {
            let path = l
                .local_addr()
                .ok()
                .and_then(|a| a.as_pathname().map(Path::to_path_buf))
                .unwrap_or_default();
            let fd = std::os::fd::OwnedFd::from(l);
            let uds = interprocess::os::unix::uds_local_socket::tokio::Listener::try_from(fd)
                .map_err(|e| sock_err(&path, format!("inherited socket unusable: {e}")))?;
            Ok((uds.into(), path))
        }
        ListenerSource::Bind => bind(config).map(|l| (l, config.socket.clone())),
    }
}

fn bind(config: &Config) -> Result<interprocess::local_socket::tokio::Listener, DaemonError> {
    let path = &config.socket;
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| sock_err(path, format!("cannot create its directory: {e}")))?;
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(sock_err(path, "another daemon is listening on it"));
        }
        std::fs::remove_file(path)
            .map_err(|e| sock_err(path, format!("cannot remove the stale socket: {e}")))?;
    }
    let name = path
        .as_path()
        .to_fs_name::<GenericFilePath>()
        .map_err(|e| sock_err(path, e))?;
    let listener = ListenerOptions::new()
        .name(name)
        .create_tokio()
        .map_err(|e| sock_err(path, format!("cannot bind: {e}")))?;
    // Mode 0660 regardless of the umask: only the owner and the socket group may connect.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
        .map_err(|e| sock_err(path, format!("cannot chmod: {e}")))?;
    if let Some(gid) = config.socket_gid {
        nix::unistd::chown(path.as_path(), None, Some(nix::unistd::Gid::from_raw(gid)))
            .map_err(|e| sock_err(path, format!("cannot chown to gid {gid}: {e}")))?;
    }
    Ok(listener)
}
