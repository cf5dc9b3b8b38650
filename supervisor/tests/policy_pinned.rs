//! The shipped policies, pinned. Every value here is written literally, on purpose: a change to
//! `policies/*.toml` or `policies/seccomp/runner.json` (or to how they are compiled) must come with
//! a deliberate edit of this file, and the commit that makes it must say why.
//!
//! The seccomp part does not read the JSON: it runs the compiled BPF program of each built-in
//! policy (what the runner installs) in a small classic-BPF interpreter, for every syscall number
//! and a spread of argument values, and compares the verdict with the literal allowlist below.
//! So an extra syscall, a dropped argument filter, a wrong action or a compiler bug all fail here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ptc_shared::Limits;
use ptc_supervisor::policy::{LandlockMode, Namespace, Policy, PolicySource};

/// `SECCOMP_RET_ALLOW` and `SECCOMP_RET_KILL_PROCESS`.
const ALLOW: u32 = 0x7fff_0000;
const KILL_PROCESS: u32 = 0x8000_0000;
/// `AUDIT_ARCH_X86_64` / `AUDIT_ARCH_AARCH64`.
#[cfg(target_arch = "x86_64")]
const ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = 0xc000_00b7;

/// Syscalls the runner may make with any arguments. Reason for each: see runner.json's comments.
const UNCONDITIONAL: &[(&str, libc::c_long)] = &[
    ("brk", libc::SYS_brk),
    ("munmap", libc::SYS_munmap),
    ("mremap", libc::SYS_mremap),
    ("getrandom", libc::SYS_getrandom),
    ("clock_gettime", libc::SYS_clock_gettime),
    ("futex", libc::SYS_futex),
    ("gettid", libc::SYS_gettid),
    ("rt_sigaction", libc::SYS_rt_sigaction),
    ("rt_sigreturn", libc::SYS_rt_sigreturn),
    ("sigaltstack", libc::SYS_sigaltstack),
    ("close", libc::SYS_close),
    ("exit_group", libc::SYS_exit_group),
];

/// The argument filters, literally: `args` are the six syscall arguments (low 32 bits compared,
/// the filters are all `dword`). `None`: the syscall is not in this conditional set.
fn conditional(nr: libc::c_long, args: &[u64; 6]) -> Option<bool> {
    let a = |i: usize| u32::try_from(args[i] & u64::from(u32::MAX)).unwrap();
    let allowed = match nr {
        libc::SYS_recvfrom | libc::SYS_sendto => a(0) == 3,
        libc::SYS_write => a(0) == 3 || a(0) == 2,
        // no PROT_EXEC (4), no MAP_SHARED (1; also excludes MAP_SHARED_VALIDATE = 3)
        libc::SYS_mmap => a(2) & 4 == 0 && a(3) & 1 == 0,
        libc::SYS_mprotect => a(2) & 4 == 0,
        // F_GETFD only
        libc::SYS_fcntl => a(1) == 1,
        // this process's RLIMIT_CPU only (lowered to the program's limit once its data is in)
        libc::SYS_prlimit64 => a(0) == 0 && a(1) == 0,
        _ => return None,
    };
    Some(allowed)
}

fn expected(nr: libc::c_long, args: &[u64; 6]) -> bool {
    conditional(nr, args).unwrap_or_else(|| UNCONDITIONAL.iter().any(|&(_, n)| n == nr))
}

/// Argument values tried at every index: the allowed fds and commands, each protection and
/// mapping bit alone and together, and values with high bits that a `dword` compare ignores.
const ARG_VALUES: &[u64] = &[
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    0x21,
    0x22,
    0x23,
    0x1_0000_0003,
    0xffff_fffb,
    u32::MAX as u64,
    u64::MAX,
];

type Insn = (u16, u8, u8, u32);

fn decode(program: &[u8]) -> Vec<Insn> {
    program
        .chunks_exact(8)
        .map(|r| {
            (
                u16::from_ne_bytes([r[0], r[1]]),
                r[2],
                r[3],
                u32::from_ne_bytes([r[4], r[5], r[6], r[7]]),
            )
        })
        .collect()
}

/// Just enough of classic BPF to run what seccompiler emits; anything else fails the test.
fn run_bpf(ins: &[Insn], nr: u32, arch: u32, args: &[u64; 6]) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_ne_bytes());
    data[4..8].copy_from_slice(&arch.to_ne_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
    }
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let (code, jt, jf, k) = *ins.get(pc).expect("BPF ran off the end of the program");
        pc += 1;
        let jump = |cond: bool| usize::from(if cond { jt } else { jf });
        match code {
            0x20 => {
                // ld [k] (word, absolute)
                let o = k as usize;
                acc = u32::from_ne_bytes(data[o..o + 4].try_into().unwrap());
            }
            0x54 => acc &= k,                 // and #k
            0x05 => pc += k as usize,         // ja
            0x15 => pc += jump(acc == k),     // jeq
            0x25 => pc += jump(acc > k),      // jgt
            0x35 => pc += jump(acc >= k),     // jge
            0x45 => pc += jump(acc & k != 0), // jset
            0x06 => return k,                 // ret #k
            other => panic!("unexpected BPF opcode {other:#x} at {}", pc - 1),
        }
    }
}

fn verdicts_match_the_literal_allowlist(p: &Policy) {
    assert!(
        p.seccomp_bpf.len().is_multiple_of(8) && !p.seccomp_bpf.is_empty(),
        "{}",
        p.name
    );
    let bpf = &decode(&p.seccomp_bpf);
    let mut allowed_unconditionally = Vec::new();
    for nr in 0..1024u32 {
        let sys = libc::c_long::from(nr);
        let zeros = [0u64; 6];
        let mut cases = vec![zeros, [u64::MAX; 6], [3, 1, 0, 0, 0, 0], [2, 1, 3, 2, 0, 0]];
        if conditional(sys, &zeros).is_some() {
            // Each value alone at each index, and every pair at indices 2 and 3 (mmap's bits).
            for i in 0..6 {
                for &v in ARG_VALUES {
                    let mut args = zeros;
                    args[i] = v;
                    cases.push(args);
                }
            }
            for &x in ARG_VALUES {
                for &y in ARG_VALUES {
                    cases.push([0, 4096, x, y, 0, 0]);
                }
            }
        }
        let mut all = true;
        for args in &cases {
            let got = run_bpf(bpf, nr, ARCH, args);
            let want = if expected(sys, args) {
                ALLOW
            } else {
                KILL_PROCESS
            };
            assert_eq!(
                got, want,
                "policy {}: syscall {nr} with {args:x?}: got {got:#x}, pinned {want:#x}",
                p.name
            );
            all &= got == ALLOW;
        }
        if all {
            allowed_unconditionally.push(sys);
        }
        // Another architecture's syscall with the same number is killed.
        assert_eq!(run_bpf(bpf, nr, ARCH ^ 1, &zeros), KILL_PROCESS);
    }
    let mut pinned: Vec<libc::c_long> = UNCONDITIONAL.iter().map(|&(_, n)| n).collect();
    pinned.sort_unstable();
    assert_eq!(allowed_unconditionally, pinned, "policy {}", p.name);
}

#[test]
fn every_built_in_seccomp_program_allows_exactly_the_pinned_syscalls() {
    let policies = PolicySource::BuiltIn.load().unwrap();
    assert_eq!(
        policies.keys().collect::<Vec<_>>(),
        ["default", "strict"],
        "a new shipped policy needs its pins here"
    );
    for p in policies.values() {
        verdicts_match_the_literal_allowlist(p);
    }
}

#[test]
fn x32_syscalls_are_killed() {
    // The x32 ABI shares the x86_64 audit arch with bit 30 set in the number.
    #[cfg(target_arch = "x86_64")]
    for p in PolicySource::BuiltIn.load().unwrap().values() {
        for nr in [libc::SYS_brk, libc::SYS_close, libc::SYS_execve] {
            let x32 = 0x4000_0000 | u32::try_from(nr).unwrap();
            assert_eq!(
                run_bpf(&decode(&p.seccomp_bpf), x32, ARCH, &[0; 6]),
                KILL_PROCESS
            );
        }
    }
}

#[test]
fn the_default_policy_is_pinned() {
    let p = &PolicySource::BuiltIn.load().unwrap()["default"];
    let want = Limits {
        timeout_ms: 1000,
        cpu_ms: 1000,
        heap_bytes: 64 << 20,
        max_steps: 10_000_000,
        max_depth: 400,
        max_iterations: 1_000_000,
        max_tool_calls: 100,
        max_program_bytes: 1 << 20,
        max_nesting: 256,
        max_context_bytes: 16 << 20,
        max_result_bytes: 1 << 20,
        max_prints_bytes: 64 << 10,
        max_print_entry_bytes: 4 << 10,
        max_tool_result_bytes: 4 << 20,
    };
    assert_eq!(p.limits, want);
    assert_eq!(p.isolation.landlock, LandlockMode::BestEffort);
    assert_eq!(p.isolation.namespaces, []);
    assert!(p.isolation.run_as.is_none());
    assert!(!p.isolation.best_effort);
    assert_eq!(p.warm, 2);
}

#[test]
fn the_strict_policy_is_pinned() {
    let p = &PolicySource::BuiltIn.load().unwrap()["strict"];
    let want = Limits {
        timeout_ms: 250,
        cpu_ms: 250,
        heap_bytes: 16 << 20,
        max_steps: 1_000_000,
        max_depth: 200,
        max_iterations: 1_000_000,
        max_tool_calls: 10,
        max_program_bytes: 64 << 10,
        max_nesting: 256,
        max_context_bytes: 1 << 20,
        max_result_bytes: 64 << 10,
        max_prints_bytes: 16 << 10,
        max_print_entry_bytes: 4 << 10,
        max_tool_result_bytes: 1 << 20,
    };
    assert_eq!(p.limits, want);
    assert_eq!(p.isolation.landlock, LandlockMode::Required);
    assert_eq!(
        p.isolation.namespaces,
        [
            Namespace::User,
            Namespace::Net,
            Namespace::Mount,
            Namespace::Ipc,
            Namespace::Uts
        ]
    );
    assert!(p.isolation.run_as.is_none());
    assert!(p.isolation.best_effort);
    assert_eq!(p.warm, 2);
}
