//! `ptc-runner --zygote` as a process: runners forked from it hold exactly what an exec'd runner
//! holds (fds 0–3, empty environment, seccomp, no_new_privs, the Setup's rlimits, their own
//! session), end the same ways (exit codes, SIGSYS, reported with CPU time by the zygote), leave no
//! zombies, and die with the zygote; the zygote dies with its engine.
#![allow(clippy::unwrap_used)]

mod support;

use ptc_shared::client_protocol::RunRequest;
use ptc_shared::protocol::zygote::{Report, Request};
use ptc_shared::protocol::{RunnerToSupervisor, SupervisorToRunner, exit_code};
use ptc_shared::{Limits, Value};
use std::os::fd::AsRawFd;
use support::zygote::Zygote;
use support::{
    End, PROBE, RUNNER, Runner, execute_frame, fds_of, proc_file, setup, setup_for, soft_limit,
};

fn execute(program: &str, limits: Limits) -> SupervisorToRunner {
    let req = RunRequest {
        program: program.into(),
        ..RunRequest::default()
    };
    execute_frame(req, limits)
}

fn stat_field(pid: u32, index: usize) -> i64 {
    let stat = proc_file(pid, "stat");
    let rest = stat.rsplit_once(')').unwrap().1;
    rest.split_whitespace().nth(index).unwrap().parse().unwrap()
}

fn finished(r: &mut Runner) -> ptc_shared::Step {
    match support::recv_after_import(r) {
        Some(RunnerToSupervisor::Finished(step)) => *step,
        other => panic!("expected Finished, got {other:?}"),
    }
}

/// Children (and zombies) of `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(kids.split_whitespace().map(|p| p.parse::<u32>().unwrap()));
    }
    out
}

#[test]
fn a_forked_runner_holds_only_what_an_exec_d_one_does() {
    let mut z = Zygote::start(RUNNER, &[]);
    let mut f = z.fork(&setup());
    assert_eq!(f.pidfd.pidfd_pid(), Some(f.runner.pid()));
    f.runner.ready();
    let pid = f.runner.pid();

    let fds = fds_of(pid);
    assert_eq!(fds.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    for fd in 0..3 {
        assert_eq!(fds[&fd], "/dev/null", "{fds:?}");
    }
    assert!(fds[&3].starts_with("socket:"), "{fds:?}");
    assert_eq!(proc_file(pid, "environ"), "");
    let status = proc_file(pid, "status");
    assert!(status.lines().any(|l| l == "Seccomp:\t2"), "{status}");
    assert!(status.lines().any(|l| l == "NoNewPrivs:\t1"));
    assert!(status.lines().any(|l| l == "SigBlk:\t0000000000000000"));
    // Its own session (setsid), and the zygote is its parent.
    assert_eq!(stat_field(pid, 3), i64::from(pid), "session id");
    assert_eq!(stat_field(pid, 1), i64::from(z.pid()), "parent");

    support::assert_hardened_rlimits(pid);

    f.runner.send(&execute("(+ 1 2)", Limits::default()));
    let step = finished(&mut f.runner);
    assert_eq!(step.return_value, Some(Value::Int(3)));
    assert!(step.usage.memory_bytes > 0);
    assert_eq!(z.exit_of(pid).0, End::Code(0));
}

#[test]
fn the_zygote_itself_keeps_no_stray_fds_or_signals() {
    let z = Zygote::start(RUNNER, &[]);
    let fds = fds_of(z.pid());
    // 0–2 /dev/null, 3 the control socket, 4 the landlock ruleset its children restrict
    // themselves with (where the kernel has landlock), then the SIGCHLD signalfd; fd 7 (leaked
    // by the test's shell) is closed at start: the zygote holds nothing else.
    let names: Vec<u32> = fds.keys().copied().collect();
    let ruleset = fds.get(&4).is_some_and(|t| t.contains("landlock-ruleset"));
    let expected = if ruleset {
        vec![0, 1, 2, 3, 4, 5]
    } else {
        vec![0, 1, 2, 3, 4]
    };
    assert_eq!(names, expected, "{fds:?}");
    assert!(fds[names.last().unwrap()].contains("signalfd"), "{fds:?}");
    if !ruleset {
        support::skip("no landlock ruleset in the zygote: this kernel has no landlock");
    }
    let status = proc_file(z.pid(), "status");
    assert!(status.lines().any(|l| l == "Seccomp:\t0"));
    assert!(
        status.lines().any(|l| l == "Threads:\t1"),
        "single-threaded"
    );
}

#[test]
fn a_memory_bomb_in_a_forked_runner_ends_with_the_memory_code() {
    let limits = Limits {
        heap_bytes: support::HEAP,
        timeout_ms: 20_000,
        cpu_ms: 20_000,
        ..Limits::default()
    };
    let mut z = Zygote::start(RUNNER, &[]);
    let mut f = z.fork(&setup_for(&limits));
    f.runner.ready();
    f.runner
        .send(&execute("(count (vec (range 3000000)))", limits));
    let peak = support::memory_exceeded(&mut f.runner);
    // The budget is heap_bytes less the main stack's share (RUNNER_STACK_BYTES).
    let budget = setup_for(&limits).heap_budget_bytes;
    assert!(budget < support::HEAP && peak > budget, "{peak}");
    let (end, cpu_us) = z.exit_of(f.runner.pid());
    assert_eq!(end, End::Code(exit_code::MEMORY));
    assert!(cpu_us > 0, "building 3 million elements takes CPU time");
}

#[test]
fn forbidden_operations_in_forked_probes_are_killed_by_seccomp() {
    for op in ["open", "socket", "exec", "fork", "kill-parent", "mmap-exec"] {
        let mut z = Zygote::start(PROBE, &[op]);
        let mut f = z.fork(&setup());
        f.runner.ready();
        let frame = f.runner.recv();
        assert!(
            !matches!(&frame, Some(RunnerToSupervisor::Finished(s)) if s.return_value.is_some()),
            "{op}: {frame:?}"
        );
        assert_eq!(
            z.exit_of(f.runner.pid()).0,
            End::Signal(libc::SIGSYS),
            "{op}"
        );
    }
    // The control probe finishes normally under the same filter, with an empty environment.
    let mut z = Zygote::start(PROBE, &["env"]);
    let mut f = z.fork(&setup());
    f.runner.ready();
    let Some(RunnerToSupervisor::Finished(step)) = f.runner.recv() else {
        panic!("env probe did not finish")
    };
    assert_eq!(
        step.return_value,
        Some(Value::Vector(vec![Value::string("allowed"), Value::Int(0)]))
    );
    assert_eq!(z.exit_of(f.runner.pid()).0, End::Code(0));
}

#[test]
fn hundreds_of_forks_leave_no_zombies_and_no_fds_in_the_zygote() {
    let mut z = Zygote::start(RUNNER, &[]);
    let zpid = z.pid();
    let fds_before = fds_of(zpid).len();
    for i in 0..300i64 {
        let mut f = z.fork(&setup());
        f.runner.ready();
        f.runner
            .send(&execute(&format!("(+ {i} 1)"), Limits::default()));
        assert_eq!(
            finished(&mut f.runner).return_value,
            Some(Value::Int(i + 1))
        );
        assert_eq!(z.exit_of(f.runner.pid()).0, End::Code(0));
    }
    assert_eq!(children_of(zpid), Vec::<u32>::new(), "every child reaped");
    assert_eq!(fds_of(zpid).len(), fds_before, "no fd kept per fork");
}

#[test]
fn a_malformed_fork_request_fails_alone() {
    let mut z = Zygote::start(RUNNER, &[]);
    z.send(&Request::Fork { id: 41 }, &[]);
    assert!(matches!(
        z.report(),
        (Report::ForkFailed { id: 41, errno }, None) if errno == libc::EINVAL
    ));
    // Still serving.
    let mut f = z.fork(&setup());
    f.runner.ready();
    f.runner.send(&execute("(* 6 7)", Limits::default()));
    assert_eq!(finished(&mut f.runner).return_value, Some(Value::Int(42)));
}

#[test]
fn runners_die_with_the_zygote_and_the_zygote_with_its_engine() {
    // Killed zygote: its idle, hardened runner is killed by PR_SET_PDEATHSIG.
    let mut z = Zygote::start(RUNNER, &[]);
    let mut f = z.fork(&setup());
    f.runner.ready();
    z.child.kill().unwrap();
    z.child.wait().unwrap();
    f.runner.assert_gone();

    // Engine gone (control socket closed): the zygote exits 0, and its runner goes with it.
    let mut z = Zygote::start(RUNNER, &[]);
    let mut f = z.fork(&setup());
    f.runner.ready();
    let mut child = z.close();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    f.runner.assert_gone();
}

#[test]
fn deep_recursion_in_a_forked_runner_is_a_clean_failure() {
    // stacker's cached stack bounds come from the zygote: they must match the runner's limits.
    let mut z = Zygote::start(RUNNER, &[]);
    let mut f = z.fork(&setup());
    f.runner.ready();
    f.runner.send(&execute(
        "(defn f [n] (f (inc n))) (f 0)",
        Limits::default(),
    ));
    let step = finished(&mut f.runner);
    assert!(step.fail.is_some(), "{step:?}");
    assert_eq!(z.exit_of(f.runner.pid()).0, End::Code(0));
    let limits = proc_file(z.pid(), "limits");
    let expected = ptc_shared::protocol::RunnerRlimits::for_limits(&Limits::default());
    assert_eq!(
        soft_limit(&limits, "Max stack size"),
        expected.stack_bytes.to_string()
    );
}

#[test]
fn a_forked_runner_writes_to_the_stderr_it_was_given() {
    let mut z = Zygote::start(RUNNER, &[]);
    let (_read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let mut f = z.fork_with_stderr(&setup(), write.as_raw_fd());
    f.runner.ready();
    let ours = std::fs::read_link(format!("/proc/self/fd/{}", write.as_raw_fd())).unwrap();
    let fds = fds_of(f.runner.pid());
    assert_eq!(fds[&2], ours.to_string_lossy(), "{fds:?}");
    assert!(fds[&3].starts_with("socket:"), "{fds:?}");
}

#[test]
fn a_fork_without_room_for_its_pidfd_fails_alone_with_emfile() {
    // The zygote's own descriptors are 0..n; room for a request's two and not for a pidfd.
    let n = fds_of(Zygote::start(RUNNER, &[]).pid()).len();
    let mut z = Zygote::start_with_nofile(RUNNER, &[], n + 2);
    assert_eq!(fds_of(z.pid()).len(), n);
    for id in [77, 78] {
        let (_ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let null = std::fs::File::open("/dev/null").unwrap();
        z.send(
            &Request::Fork { id },
            &[theirs.as_raw_fd(), null.as_raw_fd()],
        );
        // The child it could not give a pidfd for is killed; the failure comes before its
        // exit. The second request fails the same way: the first one's fds were closed.
        loop {
            match z.report() {
                (Report::ForkFailed { id: got, errno }, None) => {
                    assert_eq!((got, errno), (id, libc::EMFILE));
                    break;
                }
                (Report::Exited { signal, .. }, None) => assert_eq!(signal, Some(libc::SIGKILL)),
                other => panic!("expected ForkFailed, got {other:?}"),
            }
        }
    }
}

#[test]
fn a_zygote_that_cannot_report_an_exit_leaves() {
    use nix::sys::signal::{Signal, kill};
    let mut z = Zygote::start(RUNNER, &[]);
    let zpid = nix::unistd::Pid::from_raw(i32::try_from(z.pid()).unwrap());
    let mut f = z.fork(&setup());
    f.runner.ready();
    // Stopped, the zygote cannot reap: its runner finishes and stays a zombie, and the engine
    // closes the socket. Resumed, it sees both at once and reaps first: the Exited report
    // cannot be sent, and the zygote exits PARENT_GONE instead of retrying.
    kill(zpid, Signal::SIGSTOP).unwrap();
    f.runner.send(&execute("1", Limits::default()));
    assert_eq!(finished(&mut f.runner).return_value, Some(Value::Int(1)));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while stat_state(f.runner.pid()) != 'Z' {
        assert!(
            std::time::Instant::now() < deadline,
            "the runner never exited"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut child = z.close();
    kill(zpid, Signal::SIGCONT).unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the zygote kept trying to report to a closed socket");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(exit_code::PARENT_GONE));
}

/// The state letter of `/proc/<pid>/stat` (`Z` for a zombie).
fn stat_state(pid: u32) -> char {
    let stat = proc_file(pid, "stat");
    let rest = stat.rsplit_once(')').unwrap().1;
    rest.trim_start().chars().next().unwrap()
}
