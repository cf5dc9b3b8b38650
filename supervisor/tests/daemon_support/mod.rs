//! Daemon test helpers: an in-process daemon on a temp socket with an injected shutdown, the
//! `ptc` binary as a real daemon process, raw frame I/O for bad-input tests, and process probes.
#![allow(dead_code, clippy::unwrap_used)]

#[path = "../common/mod.rs"]
pub mod common;

use ptc_shared::client_protocol::{CLIENT_PROTOCOL_VERSION, ClientToServer, ServerToClient};
use ptc_shared::codec::{decode_body, encode_frame, read_frame_bytes};
use ptc_supervisor::daemon::config::Config;
use ptc_supervisor::daemon::{Control, Daemon, ListenerSource};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Asserts that `(+ 1 2)`, sent beside `beside`, was answered 3 within 2 s: generous for a debug
/// build on a busy 2-core machine, where a stalled daemon takes tens of seconds.
pub fn answered_three_quickly(answer: Option<ServerToClient>, took: Duration, beside: &str) {
    match answer {
        Some(ServerToClient::Step { step, .. }) => {
            let three = Some(ptc_shared::Value::Int(3));
            assert_eq!(step.return_value, three, "{:?}", step.fail)
        }
        other => panic!("no answer to (+ 1 2) beside {beside}: {other:?}"),
    }
    eprintln!("(+ 1 2) beside {beside}: {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
}

/// A daemon running inside the test process.
pub struct TestDaemon {
    pub socket: PathBuf,
    pub dir: common::TempDir,
    ctl: mpsc::Sender<Control>,
    task: tokio::task::JoinHandle<()>,
}

impl TestDaemon {
    /// Starts a daemon with the shipped policies, the real runner and `extra` config TOML.
    pub async fn start(extra: &str) -> TestDaemon {
        TestDaemon::start_with_policies(&common::shipped_policies(), extra).await
    }

    /// Starts a daemon with the policies in `policies`, the real runner and `extra` config TOML.
    pub async fn start_with_policies(policies: &Path, extra: &str) -> TestDaemon {
        let dir = common::temp_dir("daemon");
        let socket = dir.join("ptc.sock");
        let text = config_text_with(&socket, policies, extra);
        let cfg_path = dir.join("ptc.toml");
        std::fs::write(&cfg_path, &text).unwrap();
        let config = Config::load(&cfg_path).unwrap();
        let daemon = Daemon::bind(config, Some(cfg_path), None, ListenerSource::Bind).unwrap();
        let (ctl, rx) = mpsc::channel(4);
        let task = tokio::spawn(daemon.run(rx));
        TestDaemon {
            socket,
            dir,
            ctl,
            task,
        }
    }

    /// Injects a shutdown and waits for the daemon to finish draining.
    pub async fn stop(self) {
        self.ctl.send(Control::Shutdown).await.unwrap();
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

/// Config text with the socket, the shipped policies and the real runner.
pub fn config_text(socket: &Path, extra: &str) -> String {
    config_text_with(socket, &common::shipped_policies(), extra)
}

/// Config text with the socket, the policies in `policies` and the real runner.
pub fn config_text_with(socket: &Path, policies: &Path, extra: &str) -> String {
    format!(
        "socket = \"{}\"\npolicies_dir = \"{}\"\nrunner = \"{}\"\n{extra}\n",
        socket.display(),
        policies.display(),
        common::real_runner().display()
    )
}

/// A `ptc serve` process.
pub struct DaemonProcess {
    pub child: std::process::Child,
    /// Holds the socket, config and log; removed when the process handle is dropped.
    pub dir: common::TempDir,
    pub socket: PathBuf,
    pub config: PathBuf,
    pub log: PathBuf,
}

impl DaemonProcess {
    /// Starts `ptc serve --config FILE` and waits until the socket answers.
    pub fn start(extra: &str) -> DaemonProcess {
        let dir = common::temp_dir("daemonproc");
        let socket = dir.join("ptc.sock");
        let config = dir.join("ptc.toml");
        std::fs::write(&config, config_text(&socket, extra)).unwrap();
        let log = dir.join("daemon.log");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_ptc"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let d = DaemonProcess {
            child,
            dir,
            socket,
            config,
            log,
        };
        wait_for_socket(&d.socket);
        d
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap());
        nix::sys::signal::kill(pid, sig).unwrap();
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the process to exit; `None` if it is still running after `max`.
    pub fn wait_exit(&mut self, max: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + max;
        while Instant::now() < until {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to 10 s until a connection to `socket` succeeds.
pub fn wait_for_socket(socket: &Path) {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if UnixStream::connect(socket).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("daemon socket {} never answered", socket.display());
}

/// A raw, blocking connection for speaking (or abusing) the protocol by hand.
pub struct Raw(pub UnixStream);

impl Raw {
    pub fn connect(socket: &Path) -> Raw {
        let s = UnixStream::connect(socket).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Raw(s)
    }

    pub fn send(&mut self, msg: &ClientToServer) {
        self.0
            .write_all(&encode_frame(msg, u32::MAX).unwrap())
            .unwrap();
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        // The daemon may already have closed the connection: that is an acceptable answer.
        let _ = self.0.write_all(bytes);
    }

    pub fn hello(&mut self) -> ServerToClient {
        self.send(&ClientToServer::Hello {
            version: CLIENT_PROTOCOL_VERSION,
            client: "raw".into(),
        });
        self.recv().unwrap()
    }

    /// The next frame, or `None` once the daemon closed the connection.
    pub fn recv(&mut self) -> Option<ServerToClient> {
        match read_frame_bytes(&mut self.0, u32::MAX) {
            Ok(Some(body)) => Some(decode_body(&body, u32::MAX).unwrap()),
            _ => None,
        }
    }
}

/// Resident set size of this process in KiB.
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// The child of this process that is burning CPU (a runner executing a loop), if any.
pub async fn busy_runner(within: Duration) -> Option<i32> {
    let until = Instant::now() + within;
    while Instant::now() < until {
        if let Some(p) = descendants()
            .into_iter()
            .find(|p| common::cpu_ticks(*p) > 2)
        {
            return Some(p);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

/// Children and grandchildren of this process: runners are children of the engine's zygote.
pub fn descendants() -> Vec<i32> {
    let mut out = common::children();
    let grandchildren: Vec<i32> = out.iter().flat_map(|p| common::children_of(*p)).collect();
    out.extend(grandchildren);
    out
}

/// Waits until `pid` is reaped (no /proc entry); returns how long that took.
pub async fn gone_within(pid: i32, max: Duration) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < max {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return Some(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}

/// Where `ptc run` runs a program: through the daemon at a socket, sandboxed by an embedded
/// engine, or in-process.
pub enum Mode {
    Connect(PathBuf),
    Sandboxed,
    InProcess,
}

/// `ptc run` with `args` in `mode`, against the real runner and the shipped policies.
pub fn run_in(mode: &Mode, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ptc"));
    cmd.arg("run")
        .env("PTC_RUNNER", common::real_runner())
        .env("PTC_POLICIES", common::shipped_policies());
    match mode {
        Mode::Connect(socket) => cmd.arg("--connect").arg(socket),
        Mode::Sandboxed => &mut cmd,
        Mode::InProcess => cmd.arg("--in-process"),
    };
    cmd.args(args).output().unwrap()
}
