//! The `ptc serve` process: SIGTERM drains in-flight executions and exits 0, SIGHUP with a broken
//! config keeps the old one, socket activation with a pre-bound fd (as systemd does it), the
//! sd_notify READY message, and peer-credential access control.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use nix::sys::signal::Signal;
use ptc_shared::{FailReason, Value};
use ptc_supervisor::client::{Client, Run};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_executions_finish_then_exits_0() {
    let mut d = DaemonProcess::start("shutdown_grace_ms = 3000");
    let c = Client::connect(&d.socket).await.unwrap();
    // Four executions that end by themselves (their own 400 ms timeout) after the SIGTERM.
    let mut runs = Vec::new();
    for _ in 0..4 {
        let c = c.clone();
        runs.push(tokio::spawn(async move {
            c.run(Run::new("(loop [] (recur))").timeout(Duration::from_millis(400)))
                .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    d.signal(Signal::SIGTERM);
    // New work is refused once draining started.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let late = c.run(Run::new("1")).await.unwrap_err();
    assert_eq!(late.reason(), Some(FailReason::Busy), "{:?}", late.fail);
    for r in runs {
        let step = r.await.unwrap().unwrap_err();
        assert_eq!(step.reason(), Some(FailReason::Timeout), "{:?}", step.fail);
    }
    let status = tokio::task::block_in_place(|| d.wait_exit(Duration::from_secs(5)));
    assert_eq!(status.map(|s| s.code()), Some(Some(0)), "{}", d.log_text());
    assert!(!d.socket.exists(), "socket file left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_kills_what_outlives_the_grace_period() {
    let mut d = DaemonProcess::start("shutdown_grace_ms = 200");
    let c = Client::connect(&d.socket).await.unwrap();
    let run = tokio::spawn({
        let c = c.clone();
        async move { c.run(Run::new("(loop [] (recur))")).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = Instant::now();
    d.signal(Signal::SIGTERM);
    let step = run.await.unwrap().unwrap_err();
    // The connection ends with the daemon: the client reports the lost connection.
    assert_eq!(
        step.reason(),
        Some(FailReason::RunnerCrashed),
        "{:?}",
        step.fail
    );
    let status = tokio::task::block_in_place(|| d.wait_exit(Duration::from_secs(5)));
    assert_eq!(status.map(|s| s.code()), Some(Some(0)));
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_with_a_broken_config_keeps_the_old_one() {
    let d = DaemonProcess::start("");
    let good = std::fs::read_to_string(&d.config).unwrap();
    std::fs::write(&d.config, format!("{good}\nmax_runners = 0\n")).unwrap();
    d.signal(Signal::SIGHUP);
    wait_for_log(&d, "reload failed");
    assert!(d.log_text().contains("max_runners"), "{}", d.log_text());
    let c = Client::connect(&d.socket).await.unwrap();
    assert_eq!(
        c.run(Run::new("(+ 2 3)")).await.unwrap().return_value,
        Some(Value::Int(5))
    );
    // A good config is taken.
    std::fs::write(
        &d.config,
        format!("{good}\nper_uid_max = 1\nper_uid_queue = 0\n"),
    )
    .unwrap();
    d.signal(Signal::SIGHUP);
    wait_for_log(&d, "configuration reloaded");
    let c = Client::connect(&d.socket).await.unwrap();
    assert!(c.run(Run::new("1")).await.is_ok());
}

fn wait_for_log(d: &DaemonProcess, needle: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if d.log_text().contains(needle) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("log never said {needle:?}:\n{}", d.log_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_activation_with_a_pre_bound_fd_and_ready_notification() {
    let dir = common::temp_dir("activation");
    let socket = dir.join("activated.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    // The listener must survive exec: clear close-on-exec, then the shell moves it to fd 3.
    nix::fcntl::fcntl(
        &listener,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()),
    )
    .unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
    let (notify_path, notify) = notify_socket(&dir);
    let config = dir.join("ptc.toml");
    // The config names another socket path: an inherited socket wins.
    std::fs::write(&config, config_text(&dir.join("unused.sock"), "")).unwrap();
    let log = std::fs::File::create(dir.join("log")).unwrap();
    // systemd sets LISTEN_PID to the service's pid; `exec` keeps the shell's pid ($$).
    let script = format!(
        "exec 3<&{fd}; export LISTEN_PID=$$ LISTEN_FDS=1; exec \"$0\" serve --config \"$1\""
    );
    // bash, not dash: dash cannot name an fd above 9 in a redirection.
    let mut child = Command::new("/bin/bash")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_ptc"))
        .arg(&config)
        .env("NOTIFY_SOCKET", &notify_path)
        .stderr(log)
        .spawn()
        .unwrap();
    drop(listener);
    let mut buf = [0u8; 512];
    let n = notify.recv(&mut buf).unwrap();
    let msg = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(msg.contains("READY=1") && msg.contains("STATUS="), "{msg}");
    let c = Client::connect(&socket).await.unwrap();
    assert_eq!(
        c.run(Run::new("(* 6 7)")).await.unwrap().return_value,
        Some(Value::Int(42))
    );
    assert!(!dir.join("unused.sock").exists());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::task::block_in_place(|| child.wait()).unwrap();
    assert_eq!(status.code(), Some(0));
    let stopping = notify.recv(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..stopping]).contains("STOPPING=1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uid_that_is_not_allowed_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        common::skip("switching the client's uid needs root (running as a regular user)");
        return;
    }
    let d = DaemonProcess::start("allowed_uids = [0]");
    // Let the other uid reach the socket at all, so the refusal comes from SO_PEERCRED.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["run", "-e", "(+ 1 2)", "--connect"])
        .arg(&d.socket)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: permission_denied: "), "{stderr}");
    assert!(stderr.contains("uid 65534"), "{stderr}");
    assert!(
        d.log_text().contains("connection refused"),
        "{}",
        d.log_text()
    );
    // uid 0 is allowed.
    let out = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["run", "-e", "(+ 1 2)", "--connect"])
        .arg(&d.socket)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3");
}

#[test]
fn watchdog_pings_at_half_the_interval() {
    let dir = common::temp_dir("watchdog");
    let (notify_path, notify) = notify_socket(&dir);
    let config = dir.join("ptc.toml");
    std::fs::write(&config, config_text(&dir.join("ptc.sock"), "")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("NOTIFY_SOCKET", &notify_path)
        .env("WATCHDOG_USEC", "200000")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 512];
    let mut pings = Vec::new();
    let start = Instant::now();
    while pings.len() < 3 && start.elapsed() < Duration::from_secs(10) {
        let n = notify.recv(&mut buf).unwrap();
        if String::from_utf8_lossy(&buf[..n]).contains("WATCHDOG=1") {
            pings.push(Instant::now());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(pings.len(), 3);
    // Every 100 ms (half of WATCHDOG_USEC), give or take a loaded machine.
    let gap = pings[2] - pings[1];
    assert!(
        gap >= Duration::from_millis(60) && gap <= Duration::from_millis(400),
        "{gap:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_one_span_per_execution() {
    let d = DaemonProcess::start("log_format = \"json\"");
    let c = Client::connect(&d.socket).await.unwrap();
    c.run(Run::new("(+ 1 2)")).await.unwrap();
    let _ = c.run(Run::new("(fail \"x\")")).await;
    wait_for_log(&d, "\"outcome\":\"failed\"");
    let finished: Vec<serde_json::Value> = d
        .log_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|j| j["fields"]["message"] == "request finished")
        .collect();
    assert_eq!(finished.len(), 2, "{}", d.log_text());
    let span = &finished[0]["span"];
    assert_eq!(span["name"], "request");
    assert_eq!(span["policy"], "default");
    assert_eq!(span["uid"], nix::unistd::geteuid().as_raw());
    assert_eq!(span["pid"], std::process::id());
    assert!(span["duration_ms"].is_u64(), "{span}");
    assert_eq!(finished[0]["fields"]["outcome"], "ok");
}

/// A datagram socket in `dir` standing in for systemd's `NOTIFY_SOCKET`.
fn notify_socket(dir: &std::path::Path) -> (std::path::PathBuf, UnixDatagram) {
    let path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    (path, socket)
}
