//! Test-side zygote client: starts `ptc-runner --zygote` (or the probe's) with a `SOCK_SEQPACKET`
//! control socket on fd 3 and speaks `ptc_shared::protocol::zygote` to it, as the engine does.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use super::{End, Runner};
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, socketpair,
};
use ptc_shared::codec::{HEADER_LEN, decode_body, encode_frame};
use ptc_shared::protocol::zygote::{ARG, MAX_PACKET, Report, Request};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};

/// fd 3 ← the control socket (our stdin), fds 0–2 ← /dev/null, fd 7 leaked on purpose.
const PLACE_FDS: &str = r#"exec /usr/bin/env -i "$0" "$@" 3<&0 </dev/null 2>/dev/null 7</dev/null"#;

/// A running zygote and our end of its control socket.
pub struct Zygote {
    pub child: Child,
    ctl: OwnedFd,
    next_id: u64,
    /// Exit reports read while waiting for something else, by pid.
    exits: Vec<(i32, End, u64)>,
}

/// A runner forked by the zygote: our end of its socket and its pidfd.
pub struct Forked {
    pub runner: Runner,
    pub pidfd: Fd,
}

/// A received descriptor, closed on drop (tests stay free of `unsafe`).
#[derive(Debug)]
pub struct Fd(pub RawFd);

impl Drop for Fd {
    fn drop(&mut self) {
        let _ = nix::unistd::close(self.0);
    }
}

impl Fd {
    /// The pid a pidfd refers to, from /proc/self/fdinfo.
    pub fn pidfd_pid(&self) -> Option<u32> {
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", self.0)).ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("Pid:"))
            .and_then(|p| p.trim().parse().ok())
    }
}

impl Zygote {
    /// Starts `bin --zygote [args]` and waits for its `Hello`.
    pub fn start(bin: &str, args: &[&str]) -> Zygote {
        Zygote::start_script(PLACE_FDS, bin, args)
    }

    /// As [`Zygote::start`], holding at most `nofile` descriptors (RLIMIT_NOFILE).
    pub fn start_with_nofile(bin: &str, args: &[&str], nofile: usize) -> Zygote {
        // The fds are placed first: a shell under a low limit cannot save fds while redirecting.
        let script = format!(
            r#"exec 3<&0 </dev/null 2>/dev/null 7</dev/null; ulimit -n {nofile}; exec /usr/bin/env -i "$0" "$@""#
        );
        Zygote::start_script(&script, bin, args)
    }

    fn start_script(script: &str, bin: &str, args: &[&str]) -> Zygote {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .arg(bin)
            .arg(ARG)
            .args(args)
            .env_clear()
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut z = Zygote {
            child,
            ctl: ours,
            next_id: 0,
            exits: Vec::new(),
        };
        match z.report() {
            (Report::Hello { magic, version }, None) => {
                assert_eq!(magic, ptc_shared::protocol::zygote::MAGIC);
                assert_eq!(version, ptc_shared::protocol::PROTOCOL_VERSION)
            }
            other => panic!("expected Hello, got {other:?}"),
        }
        z
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Asks for one runner; `setup` (a whole frame) is queued in its socket first.
    pub fn fork(&mut self, setup: &ptc_shared::protocol::Setup) -> Forked {
        let null = std::fs::File::options()
            .write(true)
            .open("/dev/null")
            .unwrap();
        self.fork_with_stderr(setup, null.as_raw_fd())
    }

    /// As [`Zygote::fork`], with `stderr` as the runner's fd 2.
    pub fn fork_with_stderr(
        &mut self,
        setup: &ptc_shared::protocol::Setup,
        stderr: RawFd,
    ) -> Forked {
        let (ours, theirs) = UnixStream::pair().unwrap();
        ours.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let msg = ptc_shared::protocol::SupervisorToRunner::Setup(setup.clone());
        let frame = encode_frame(&msg, ptc_shared::codec::DEFAULT_MAX_FRAME).unwrap();
        std::io::Write::write_all(&mut &ours, &frame).unwrap();
        self.next_id += 1;
        let id = self.next_id;
        self.send(&Request::Fork { id }, &[theirs.as_raw_fd(), stderr]);
        loop {
            match self.report() {
                (Report::Forked { id: got, pid }, Some(pidfd)) if got == id => {
                    return Forked {
                        runner: Runner::forked(pid, ours),
                        pidfd,
                    };
                }
                other => self.note_exit(other, "Forked"),
            }
        }
    }

    /// Keeps an `Exited` report for [`Zygote::exit_of`]; any other report fails the test.
    fn note_exit(&mut self, report: (Report, Option<Fd>), expected: &str) {
        match report {
            (
                Report::Exited {
                    pid,
                    code,
                    signal,
                    cpu_us,
                },
                None,
            ) => self.exits.push((pid, to_end(code, signal), cpu_us)),
            other => panic!("expected {expected}, got {other:?}"),
        }
    }

    /// Sends one raw request packet with `fds` attached.
    pub fn send(&mut self, req: &Request, fds: &[RawFd]) {
        let frame = encode_frame(req, MAX_PACKET).unwrap();
        let rights = [ControlMessage::ScmRights(fds)];
        let cmsgs: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &rights };
        sendmsg::<()>(
            self.ctl.as_raw_fd(),
            &[IoSlice::new(&frame)],
            cmsgs,
            MsgFlags::empty(),
            None,
        )
        .unwrap();
    }

    /// Waits for the `Exited` report of `pid`: how it ended and its CPU time in µs.
    pub fn exit_of(&mut self, pid: u32) -> (End, u64) {
        let pid = i32::try_from(pid).unwrap();
        loop {
            if let Some(i) = self.exits.iter().position(|e| e.0 == pid) {
                let (_, end, cpu) = self.exits.remove(i);
                return (end, cpu);
            }
            let report = self.report();
            self.note_exit(report, "Exited");
        }
    }

    /// The next report and the fd that came with it, if any. Panics at EOF.
    pub fn report(&mut self) -> (Report, Option<Fd>) {
        self.try_report()
            .expect("the zygote closed its control socket")
    }

    /// The next report, or `None` once the zygote has gone.
    pub fn try_report(&mut self) -> Option<(Report, Option<Fd>)> {
        let mut buf = [0u8; 512];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            self.ctl.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .ok()?;
        let mut fd = None;
        for c in msg.cmsgs().unwrap() {
            if let ControlMessageOwned::ScmRights(fds) = c {
                for raw in fds {
                    assert!(fd.is_none(), "more than one fd with a report");
                    fd = Some(Fd(raw));
                }
            }
        }
        let len = msg.bytes;
        if len == 0 {
            return None;
        }
        let report = decode_body::<Report>(&buf[HEADER_LEN..len], MAX_PACKET).unwrap();
        Some((report, fd))
    }

    /// Closes our end of the control socket (the zygote should then exit 0).
    pub fn close(self) -> Child {
        drop(self.ctl);
        self.child
    }
}

fn to_end(code: Option<i32>, signal: Option<i32>) -> End {
    match (code, signal) {
        (Some(c), None) => End::Code(c),
        (None, Some(s)) => End::Signal(s),
        other => panic!("exit report with {other:?}"),
    }
}
