//! Hostile-probe tests: the `ptc-runner-probe` twin hardens exactly like `ptc-runner` (same
//! `harden.rs`, same Setup, the real `policies/seccomp/runner.json`) and then attempts one
//! forbidden operation. Every attempt must end in SIGSYS or a denied call, never succeed.
//!
//! Attribution: the control probes (`env`, `tool-call`, `churn`, `clock`) run the same code
//! around the attempt under the same filter and finish normally, so a SIGSYS in the forbidden
//! cases comes from the forbidden operation itself.
#![allow(clippy::unwrap_used)]

mod support;

use ptc_shared::Value;
use ptc_shared::protocol::{LandlockStatus, RunnerToSupervisor, SupervisorToRunner, exit_code};
use support::{End, PERMISSIVE, PROBE, Runner, end, setup, setup_with, spawn};

const FORBIDDEN: &[&str] = &[
    "open",
    "create",
    "socket",
    "unix-socket",
    "exec",
    "spawn",
    "thread",
    "fork",
    "ptrace",
    "kill-parent",
    "mmap-exec",
    "mprotect-exec",
    "mmap-shared",
];

fn hardened_probe(op: &str) -> Runner {
    let mut r = spawn(PROBE, &[op]);
    r.harden(setup());
    r
}

/// The value a probe returned in `Finished`, or its failure message.
fn finished(r: &mut Runner) -> Result<Value, String> {
    match r.recv() {
        Some(RunnerToSupervisor::Finished(step)) => match (step.return_value, step.fail) {
            (Some(Value::Vector(mut v)), None) if v.len() == 2 => Ok(v.pop().unwrap()),
            (_, Some(f)) => Err(f.message),
            other => panic!("unexpected Finished: {other:?}"),
        },
        other => panic!("expected Finished, got {other:?}"),
    }
}

#[test]
fn every_forbidden_operation_is_killed_by_seccomp() {
    for op in FORBIDDEN {
        let mut r = hardened_probe(op);
        let frame = r.recv();
        let status = r.wait();
        assert!(
            !matches!(&frame, Some(RunnerToSupervisor::Finished(s)) if s.return_value.is_some()),
            "{op}: the probe reports the operation succeeded: {frame:?}"
        );
        assert_eq!(
            end(status),
            End::Signal(libc::SIGSYS),
            "{op}: expected a seccomp kill, got {frame:?}"
        );
    }
}

/// Stands for the pid of a process that is not the probe (a `sleep` the test starts).
const PEER: libc::c_long = -999_999;

const PROT_RX: libc::c_long = (libc::PROT_READ | libc::PROT_EXEC) as libc::c_long;
const PRIV_ANON: libc::c_long = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as libc::c_long;
const SHARED_ANON: libc::c_long = (libc::MAP_SHARED | libc::MAP_ANONYMOUS) as libc::c_long;

/// Every dangerous syscall family, as raw syscalls after hardening: (what, number, arguments).
/// Arguments are harmless even if a broken filter let the call through (null pointers, invalid
/// flags, signal 0, a query-only command), so the probe never damages the host; the verdict is
/// the seccomp kill, which comes before the kernel looks at any argument.
fn dangerous_syscalls() -> Vec<(&'static str, libc::c_long, Vec<libc::c_long>)> {
    use libc::*;
    let mut v: Vec<(&'static str, c_long, Vec<c_long>)> = vec![
        ("execve", SYS_execve, vec![0, 0, 0]),
        ("execveat", SYS_execveat, vec![-100, 0, 0, 0, 0]),
        ("memfd_create", SYS_memfd_create, vec![0, 0]),
        ("memfd_secret", SYS_memfd_secret, vec![0]),
        (
            "socket AF_INET",
            SYS_socket,
            vec![AF_INET.into(), SOCK_STREAM.into(), 0],
        ),
        (
            "socket AF_INET6",
            SYS_socket,
            vec![AF_INET6.into(), SOCK_DGRAM.into(), 0],
        ),
        (
            "socket AF_UNIX",
            SYS_socket,
            vec![AF_UNIX.into(), SOCK_STREAM.into(), 0],
        ),
        (
            "socket AF_NETLINK",
            SYS_socket,
            vec![AF_NETLINK.into(), SOCK_RAW.into(), 0],
        ),
        (
            "socket AF_PACKET",
            SYS_socket,
            vec![AF_PACKET.into(), SOCK_RAW.into(), 0],
        ),
        (
            "socket AF_VSOCK",
            SYS_socket,
            vec![AF_VSOCK.into(), SOCK_STREAM.into(), 0],
        ),
        (
            "socket AF_ALG",
            SYS_socket,
            vec![AF_ALG.into(), SOCK_SEQPACKET.into(), 0],
        ),
        (
            "socketpair",
            SYS_socketpair,
            vec![AF_UNIX.into(), SOCK_STREAM.into(), 0, 0],
        ),
        ("connect fd 3", SYS_connect, vec![3, 0, 0]),
        ("bind", SYS_bind, vec![3, 0, 0]),
        ("listen", SYS_listen, vec![3, 1]),
        ("accept4", SYS_accept4, vec![3, 0, 0, 0]),
        ("sendmsg fd 3 (fd passing)", SYS_sendmsg, vec![3, 0, 0]),
        ("recvmsg fd 3 (fd passing)", SYS_recvmsg, vec![3, 0, 0]),
        ("io_uring_setup", SYS_io_uring_setup, vec![1, 0]),
        (
            "io_uring_enter",
            SYS_io_uring_enter,
            vec![-1, 0, 0, 0, 0, 0],
        ),
        (
            "io_uring_register",
            SYS_io_uring_register,
            vec![-1, 0, 0, 0],
        ),
        (
            "process_vm_readv",
            SYS_process_vm_readv,
            vec![PEER, 0, 0, 0, 0, 0],
        ),
        (
            "process_vm_writev",
            SYS_process_vm_writev,
            vec![PEER, 0, 0, 0, 0, 0],
        ),
        (
            "ptrace TRACEME",
            SYS_ptrace,
            vec![PTRACE_TRACEME.into(), 0, 0, 0],
        ),
        ("bpf", SYS_bpf, vec![0, 0, 0]),
        (
            "perf_event_open",
            SYS_perf_event_open,
            vec![0, 0, -1, -1, 0],
        ),
        ("userfaultfd", SYS_userfaultfd, vec![0]),
        ("keyctl", SYS_keyctl, vec![0, 0, 0, 0, 0]),
        ("add_key", SYS_add_key, vec![0, 0, 0, 0, 0]),
        ("request_key", SYS_request_key, vec![0, 0, 0, 0]),
        ("mount", SYS_mount, vec![0, 0, 0, 0, 0]),
        ("umount2", SYS_umount2, vec![0, 0]),
        ("pivot_root", SYS_pivot_root, vec![0, 0]),
        ("chroot", SYS_chroot, vec![0]),
        ("open_tree", SYS_open_tree, vec![-1, 0, 0]),
        ("fsopen", SYS_fsopen, vec![0, 0]),
        (
            "unshare user+net",
            SYS_unshare,
            vec![(CLONE_NEWUSER | CLONE_NEWNET).into()],
        ),
        ("setns", SYS_setns, vec![0, 0]),
        (
            "clone new user ns (invalid with CLONE_FS)",
            SYS_clone,
            vec![(CLONE_NEWUSER | CLONE_FS).into(), 0, 0, 0, 0],
        ),
        ("clone3", SYS_clone3, vec![0, 0]),
        ("personality (query)", SYS_personality, vec![0xffff_ffff]),
        (
            "prctl PR_GET_DUMPABLE",
            SYS_prctl,
            vec![PR_GET_DUMPABLE.into(), 0, 0, 0, 0],
        ),
        ("seccomp (a new filter)", SYS_seccomp, vec![0, 0, 0]),
        ("kill other pid, signal 0", SYS_kill, vec![PEER, 0]),
        ("tkill other pid, signal 0", SYS_tkill, vec![PEER, 0]),
        (
            "tgkill other pid, signal 0",
            SYS_tgkill,
            vec![PEER, PEER, 0],
        ),
        (
            "rt_sigqueueinfo other pid",
            SYS_rt_sigqueueinfo,
            vec![PEER, 0, 0],
        ),
        ("pidfd_open other pid", SYS_pidfd_open, vec![PEER, 0]),
        (
            "pidfd_send_signal",
            SYS_pidfd_send_signal,
            vec![-1, 0, 0, 0],
        ),
        (
            "mmap PROT_EXEC",
            SYS_mmap,
            vec![0, 4096, PROT_RX, PRIV_ANON, -1, 0],
        ),
        (
            "mmap MAP_SHARED",
            SYS_mmap,
            vec![0, 4096, PROT_READ.into(), SHARED_ANON, -1, 0],
        ),
        ("mprotect PROT_EXEC", SYS_mprotect, vec![0, 4096, PROT_RX]),
        (
            "pkey_mprotect PROT_EXEC",
            SYS_pkey_mprotect,
            vec![0, 4096, PROT_RX, -1],
        ),
        ("openat", SYS_openat, vec![-100, 0, 0, 0]),
        ("openat2", SYS_openat2, vec![-100, 0, 0, 0]),
        ("open_by_handle_at", SYS_open_by_handle_at, vec![-1, 0, 0]),
        ("chdir", SYS_chdir, vec![0]),
        ("fchdir", SYS_fchdir, vec![-1]),
        ("getcwd", SYS_getcwd, vec![0, 0]),
        (
            "read fd 3 (only recvfrom is allowed)",
            SYS_read,
            vec![3, 0, 0],
        ),
        ("writev fd 3", SYS_writev, vec![3, 0, 0]),
        ("write fd 1", SYS_write, vec![1, 0, 0]),
        ("write fd 7", SYS_write, vec![7, 0, 0]),
        ("recvfrom fd 0", SYS_recvfrom, vec![0, 0, 0, 0, 0, 0]),
        ("sendto fd 4", SYS_sendto, vec![4, 0, 0, 0, 0, 0]),
        ("fcntl F_DUPFD", SYS_fcntl, vec![3, F_DUPFD.into(), 10]),
        ("fcntl F_SETFL", SYS_fcntl, vec![3, F_SETFL.into(), 0]),
        ("dup", SYS_dup, vec![3]),
        ("dup3", SYS_dup3, vec![3, 10, 0]),
        ("ioctl", SYS_ioctl, vec![3, 0, 0]),
        ("setuid", SYS_setuid, vec![-1]),
        ("capset", SYS_capset, vec![0, 0]),
        ("init_module", SYS_init_module, vec![0, 0, 0]),
        ("finit_module", SYS_finit_module, vec![-1, 0, 0]),
        ("reboot (bad magic)", SYS_reboot, vec![0, 0, 0, 0]),
        ("sethostname (null name)", SYS_sethostname, vec![0, 1]),
        ("unlinkat", SYS_unlinkat, vec![-100, 0, 0]),
        ("mknodat", SYS_mknodat, vec![-100, 0, 0, 0]),
        ("getpid", SYS_getpid, vec![]),
        ("getppid", SYS_getppid, vec![]),
        ("uname", SYS_uname, vec![0]),
        ("nanosleep", SYS_nanosleep, vec![0, 0]),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        ("open", SYS_open, vec![0, 0, 0]),
        ("creat", SYS_creat, vec![0, 0]),
        ("fork", SYS_fork, vec![]),
        ("arch_prctl", SYS_arch_prctl, vec![0, 0]),
        ("iopl", SYS_iopl, vec![0]),
        ("modify_ldt", SYS_modify_ldt, vec![0, 0, 0]),
    ]);
    v
}

#[test]
fn every_dangerous_syscall_family_is_killed() {
    let mut peer = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let peer_pid = libc::c_long::from(peer.id());
    let table = dangerous_syscalls();
    // A few at a time: each probe is a process of its own.
    let failures: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = table
            .chunks(table.len().div_ceil(4))
            .map(|chunk| {
                s.spawn(move || {
                    let mut bad = Vec::new();
                    for (what, nr, args) in chunk {
                        let op = std::iter::once(format!("sys={nr}"))
                            .chain(
                                args.iter()
                                    .map(|&a| if a == PEER { peer_pid } else { a }.to_string()),
                            )
                            .collect::<Vec<_>>()
                            .join(":");
                        let mut r = hardened_probe(&op);
                        let frame = r.recv();
                        let status = end(r.wait());
                        if status != End::Signal(libc::SIGSYS) {
                            bad.push(format!("{what} ({op}): {status:?}, {frame:?}"));
                        }
                    }
                    bad
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let _ = peer.kill();
    let _ = peer.wait();
    assert!(
        failures.is_empty(),
        "not killed by seccomp:\n{}",
        failures.join("\n")
    );
}

/// The probe's raw-syscall path itself works: an allowed call returns normally, so a SIGSYS in
/// the table above comes from the syscall named, not from the probe machinery.
#[test]
fn an_allowed_raw_syscall_returns_normally() {
    let op = format!("sys={}", libc::SYS_gettid);
    let mut r = hardened_probe(&op);
    assert!(matches!(finished(&mut r), Ok(Value::Int(n)) if n > 0));
    assert_eq!(end(r.wait()), End::Code(0));
}

/// And an allowed call that the kernel refuses reports its errno, not a value.
#[test]
fn an_allowed_raw_syscall_that_fails_reports_its_errno() {
    let op = format!("sys={}:-1", libc::SYS_close);
    let mut r = hardened_probe(&op);
    assert_eq!(
        finished(&mut r),
        Err("denied: Bad file descriptor (os error 9)".to_string())
    );
    assert_eq!(end(r.wait()), End::Code(0));
}

/// The memory probes do what they are named for: under a filter that allows every call they
/// succeed, so their SIGSYS under the real filter is the filter's verdict on that mapping.
#[test]
fn the_memory_probes_succeed_where_the_filter_allows_them() {
    for op in ["mmap-exec", "mmap-shared", "mprotect-exec"] {
        let mut r = spawn(PROBE, &[op]);
        r.harden(setup_with(PERMISSIVE));
        assert_eq!(finished(&mut r), Ok(Value::Nil), "{op}");
        assert_eq!(end(r.wait()), End::Code(0), "{op}");
    }
}

#[test]
fn control_probes_run_normally_under_the_same_filter() {
    let mut r = hardened_probe("env");
    assert_eq!(
        finished(&mut r),
        Ok(Value::Int(0)),
        "the runner's environment must be empty"
    );
    assert_eq!(end(r.wait()), End::Code(0));

    for op in ["churn", "clock"] {
        let mut r = hardened_probe(op);
        assert!(finished(&mut r).is_ok(), "{op}");
        assert_eq!(end(r.wait()), End::Code(0), "{op}");
    }
}

#[test]
fn a_tool_call_round_trips_under_the_filter() {
    let mut r = hardened_probe("tool-call");
    let Some(RunnerToSupervisor::ToolCall { id, name, args }) = r.recv() else {
        panic!("expected a ToolCall")
    };
    assert_eq!(name, "echo");
    r.send(&SupervisorToRunner::ToolResult {
        id,
        result: Ok(args),
    });
    assert_eq!(finished(&mut r), Ok(Value::Int(41)));
    assert_eq!(end(r.wait()), End::Code(0));
}

#[test]
fn memory_bomb_reports_its_peak_and_exits_with_the_memory_code() {
    let mut r = hardened_probe("alloc-bomb");
    let peak = support::memory_exceeded(&mut r);
    // The budget is heap_bytes less the main stack's share (RUNNER_STACK_BYTES).
    let budget = setup().heap_budget_bytes;
    assert!(budget < support::HEAP && peak > budget, "{peak}");
    assert_eq!(end(r.wait()), End::Code(exit_code::MEMORY));
}

#[test]
fn allocation_failure_under_rlimit_data_is_reported_like_the_budget() {
    // A budget above RLIMIT_DATA: the system allocator returns null first.
    let mut s = setup();
    s.heap_budget_bytes = 1 << 30;
    s.rlimits.data_bytes = 48 << 20;
    let mut r = spawn(PROBE, &["alloc-bomb"]);
    r.harden(s);
    // The would-be live bytes when malloc failed: near RLIMIT_DATA, far below the budget.
    let peak = support::memory_exceeded(&mut r);
    assert!((32 << 20..64 << 20).contains(&peak), "{peak}");
    assert_eq!(end(r.wait()), End::Code(exit_code::MEMORY));
}

#[test]
fn crashes_are_not_mistaken_for_sandbox_violations() {
    let mut r = hardened_probe("panic");
    assert_eq!(end(r.wait()), End::Code(exit_code::PANIC));
    let mut r = hardened_probe("stack-overflow");
    assert_eq!(end(r.wait()), End::Signal(libc::SIGSEGV));
}

#[test]
fn cpu_rlimit_stops_a_spinning_runner() {
    // One CPU second (soft limit) ends it with SIGXCPU; wall time depends on the machine's load.
    let mut r = hardened_probe("spin");
    assert_eq!(end(r.wait()), End::Signal(libc::SIGXCPU));
}

#[test]
fn an_inherited_ignored_sigxcpu_is_reset_to_its_default() {
    // An ignored disposition survives exec; the runner must restore SIGXCPU's killing default,
    // or the soft CPU limit would do nothing until the hard limit's SIGKILL.
    let script = r#"trap '' XCPU; exec /usr/bin/env -i "$0" "$@" 3<&0 </dev/null"#;
    let mut r = support::spawn_script(script, PROBE, &["spin"]);
    r.harden(setup());
    assert_eq!(end(r.wait()), End::Signal(libc::SIGXCPU));
}

#[test]
fn landlock_alone_denies_files_and_signals() {
    for (op, errno) in [
        ("open", libc::EACCES),
        ("create", libc::EACCES),
        ("kill-parent", libc::EPERM),
    ] {
        let mut r = spawn(PROBE, &[op]);
        let status = r.harden(setup_with(PERMISSIVE));
        if status != LandlockStatus::Enforced {
            support::skip(&format!(
                "landlock is {status:?} on this kernel: layered check"
            ));
            return;
        }
        let denied = finished(&mut r).expect_err("landlock must deny it");
        let expected = std::io::Error::from_raw_os_error(errno).to_string();
        assert!(denied.contains(&expected), "{op}: {denied}");
        assert_eq!(end(r.wait()), End::Code(0));
    }
}

#[test]
fn no_filter_no_run() {
    for bpf in [vec![], vec![0u8; 12]] {
        let mut r = spawn(PROBE, &["env"]);
        let mut s = setup();
        s.seccomp_bpf = serde_bytes::ByteBuf::from(bpf);
        r.send(&SupervisorToRunner::Setup(s));
        assert_eq!(r.recv(), None, "no Ready without a filter");
        assert_eq!(end(r.wait()), End::Code(exit_code::NO_SECCOMP));
    }
}
