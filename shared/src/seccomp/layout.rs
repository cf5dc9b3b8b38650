//! A binary-search layout of seccompiler's program: the same verdict for every syscall, found in
//! a few comparisons instead of a walk past every rule.
//!
//! Why: seccompiler emits one block per syscall, in syscall-number order, and a syscall that no
//! rule names is refused only after the comparisons of all of them. The kernel pays that walk not
//! only at run time but once per install: `seccomp(SECCOMP_SET_MODE_FILTER)` emulates the program
//! for every syscall number of every architecture to build its allow-cache, under a spinlock, and
//! every runner installs the filter. Profiles put that emulation at an eighth of a forked runner's
//! CPU; a tree cuts the path of an unnamed syscall from 2 per rule to about 2 log₂(rules).
//!
//! What is rearranged, and what is not. seccompiler's program is: the architecture check (3
//! instructions), the load of the syscall number, then per syscall in number order `JEQ nr, 0,
//! 1` / `JA 1` / `JA n` and its body (its rules, each after the first behind another `JA 1` /
//! `JA n` pair, then the mismatch `RET`), and a final mismatch `RET`. [`relayout`] keeps the
//! architecture check, the load and every reachable body instruction byte for byte, and replaces
//! the chain of comparisons by a search tree over the syscall numbers whose leaves jump into the
//! bodies (bodies that are identical, such as every unconditional allow, are kept once).
//! A body is entered exactly as before: with the syscall number in the accumulator. It accepts
//! only that shape: anything else (another seccompiler version, a jump leaving a body, a jump
//! longer than classic BPF's 255) gives `None`, and the caller keeps the program it had.
//!
//! The shipped policy's verdicts are pinned, for every syscall number and a spread of arguments,
//! by `supervisor/tests/policy_pinned.rs`; the tests below compare both layouts directly.

use seccompiler::sock_filter;

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JA: u16 = 0x05;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_RET_K: u16 = 0x06;
/// `BPF_JMP` class bits (`code & 0x07`), and the operation bits of a jump.
const CLASS_MASK: u16 = 0x07;
const CLASS_JMP: u16 = 0x05;
const CLASS_RET: u16 = 0x06;
/// `offsetof(struct seccomp_data, nr)` and `arch`.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;

/// One syscall's block: its number and where its body starts (an index into the bodies).
struct Entry {
    nr: u32,
    body: usize,
}

/// Parsed seccompiler program: the prefix (architecture check and number load), the syscalls'
/// entries in number order, the distinct bodies, and the final mismatch return.
struct Parsed<'a> {
    prefix: &'a [sock_filter],
    entries: Vec<Entry>,
    bodies: Vec<Vec<sock_filter>>,
    mismatch: &'a sock_filter,
}

/// The same program as a search tree, or `None` when `program` is not in seccompiler's shape.
pub fn relayout(program: &[sock_filter]) -> Option<Vec<sock_filter>> {
    let parsed = parse(program)?;
    let out = emit(&parsed)?;
    // Never longer than what it replaces (a larger program costs more to load and JIT), and
    // valid as the kernel checks a classic program.
    (out.len() <= program.len() && valid(&out)).then_some(out)
}

/// What the kernel's classic-BPF check asks of the control flow: every jump lands inside the
/// program and the last instruction is a return.
fn valid(program: &[sock_filter]) -> bool {
    let inside = program.iter().enumerate().all(|(pc, ins)| {
        successors(ins, pc).is_some_and(|next| next.iter().all(|&n| n < program.len()))
    });
    inside
        && program
            .last()
            .is_some_and(|l| l.code & CLASS_MASK == CLASS_RET)
}

fn parse(program: &[sock_filter]) -> Option<Parsed<'_>> {
    let (prefix, rest) = program.split_at_checked(4)?;
    let arch_check = prefix.first()?.code == BPF_LD_W_ABS
        && prefix.first()?.k == ARCH_OFFSET
        && prefix.get(1)?.code == BPF_JMP_JEQ_K
        && (prefix.get(1)?.jt, prefix.get(1)?.jf) == (1, 0)
        && prefix.get(2)?.code == BPF_RET_K
        && prefix.get(3)?.code == BPF_LD_W_ABS
        && prefix.get(3)?.k == NR_OFFSET;
    if !arch_check {
        return None;
    }
    let (mismatch, mut rest) = rest.split_last()?;
    if mismatch.code != BPF_RET_K {
        return None;
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut bodies: Vec<Vec<sock_filter>> = Vec::new();
    while !rest.is_empty() {
        let (nr, body, after) = block(rest, mismatch)?;
        if entries.last().is_some_and(|e| e.nr >= nr) {
            return None;
        }
        let index = match bodies.iter().position(|b| same(b, &body)) {
            Some(i) => i,
            None => {
                bodies.push(body);
                bodies.len() - 1
            }
        };
        entries.push(Entry { nr, body: index });
        rest = after;
    }
    (!entries.is_empty()).then_some(Parsed {
        prefix,
        entries,
        bodies,
        mismatch,
    })
}

/// One block: `JEQ nr, 0, 1` / `JA 1` / `JA n`, then its body up to the next block. A syscall
/// with several rules has a further `JA 1` / `JA n` pair before each rule after the first: the
/// path of a different syscall number hops along those `JA n`s to the next block, and that is
/// how the next block is found. Returns `(nr, body, what follows)`; see [`confine`] for the body.
fn block<'a>(
    at: &'a [sock_filter],
    mismatch: &sock_filter,
) -> Option<(u32, Vec<sock_filter>, &'a [sock_filter])> {
    let [cmp, skip, over, ..] = at else {
        return None;
    };
    let shape = cmp.code == BPF_JMP_JEQ_K
        && (cmp.jt, cmp.jf) == (0, 1)
        && skip.code == BPF_JMP_JA
        && skip.k == 1
        && over.code == BPF_JMP_JA;
    if !shape {
        return None;
    }
    // Follow the hops of a non-matching number: JA after JA, forward only, to the next block.
    let mut next = 2usize;
    while let Some(hop) = at.get(next).filter(|i| i.code == BPF_JMP_JA) {
        next = next
            .checked_add(1)?
            .checked_add(usize::try_from(hop.k).ok()?)?;
    }
    let body = confine(at.get(3..next)?, mismatch)?;
    Some((cmp.k, body, at.get(next..)?))
}

/// The body as it runs when its syscall number matched (entered at its first instruction):
/// `None` unless every instruction reachable from there stays inside it and it ends in the
/// mismatch return. Unreachable instructions (the hops of non-matching numbers, which jump past
/// the body, and an unconditional allow's trailing mismatch return) become that mismatch
/// return, so the copy has no jump out of itself and ends in a return.
fn confine(body: &[sock_filter], mismatch: &sock_filter) -> Option<Vec<sock_filter>> {
    if !body.last().is_some_and(|last| same_ins(last, mismatch)) {
        return None;
    }
    let mut reached = vec![false; body.len()];
    let mut todo = vec![0usize];
    while let Some(pc) = todo.pop() {
        match reached.get_mut(pc) {
            Some(seen) if !*seen => *seen = true,
            Some(_) => continue,
            None => return None,
        }
        todo.extend(successors(body.get(pc)?, pc)?);
    }
    Some(
        body.iter()
            .zip(reached)
            .map(|(ins, r)| if r { ins.clone() } else { mismatch.clone() })
            .collect(),
    )
}

/// Where control can go after `ins` at `pc` (none after a return).
fn successors(ins: &sock_filter, pc: usize) -> Option<Vec<usize>> {
    let next = pc.checked_add(1)?;
    Some(match ins.code & CLASS_MASK {
        CLASS_RET => vec![],
        CLASS_JMP if ins.code == BPF_JMP_JA => {
            vec![next.checked_add(usize::try_from(ins.k).ok()?)?]
        }
        CLASS_JMP => vec![next + usize::from(ins.jt), next + usize::from(ins.jf)],
        _ => vec![next],
    })
}

fn same(a: &[sock_filter], b: &[sock_filter]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_ins(x, y))
}

fn same_ins(x: &sock_filter, y: &sock_filter) -> bool {
    (x.code, x.jt, x.jf, x.k) == (y.code, y.jt, y.jf, y.k)
}

/// Where a tree jump goes: the start of a body, or the shared mismatch return.
#[derive(Clone, Copy)]
enum Target {
    Body(usize),
    Mismatch,
}

/// A tree instruction before layout: `JGE k` (true: the right subtree at `right`) or a leaf
/// `JEQ nr` (true: its body; false: mismatch).
enum Node {
    Split { k: u32, right: usize },
    Leaf { nr: u32, body: usize },
}

fn emit(p: &Parsed<'_>) -> Option<Vec<sock_filter>> {
    let mut tree = Vec::with_capacity(2 * p.entries.len());
    build(&p.entries, &mut tree);
    // Layout: prefix, tree, mismatch return, then each distinct body.
    let tree_at = p.prefix.len();
    let mismatch_at = tree_at + tree.len();
    let mut body_at = Vec::with_capacity(p.bodies.len());
    let mut next = mismatch_at + 1;
    for b in &p.bodies {
        body_at.push(next);
        next += b.len();
    }
    let jump = |from: usize, to: Target| -> Option<u8> {
        let to = match to {
            Target::Body(i) => *body_at.get(i)?,
            Target::Mismatch => mismatch_at,
        };
        // Classic BPF jumps forward only, by at most 255.
        u8::try_from(to.checked_sub(from + 1)?).ok()
    };
    let mut out = Vec::with_capacity(next);
    out.extend_from_slice(p.prefix);
    for (i, node) in tree.iter().enumerate() {
        let at = tree_at + i;
        out.push(match *node {
            Node::Split { k, right } => sock_filter {
                code: BPF_JMP_JGE_K,
                jt: u8::try_from(right.checked_sub(i + 1)?).ok()?,
                jf: 0,
                k,
            },
            Node::Leaf { nr, body } => sock_filter {
                code: BPF_JMP_JEQ_K,
                jt: jump(at, Target::Body(body))?,
                jf: jump(at, Target::Mismatch)?,
                k: nr,
            },
        });
    }
    out.push(p.mismatch.clone());
    for b in &p.bodies {
        out.extend_from_slice(b);
    }
    Some(out)
}

/// Appends the search tree over `entries` (sorted by number) to `tree`, in pre-order: a split's
/// left subtree follows it directly, its right subtree after that.
fn build(entries: &[Entry], tree: &mut Vec<Node>) {
    match entries {
        [] => {}
        [one] => tree.push(Node::Leaf {
            nr: one.nr,
            body: one.body,
        }),
        _ => {
            let mid = entries.len() / 2;
            let (left, right) = entries.split_at(mid);
            let at = tree.len();
            tree.push(Node::Split {
                k: right.first().map_or(0, |e| e.nr),
                right: 0,
            });
            build(left, tree);
            let right_start = tree.len();
            if let Some(Node::Split { right: r, .. }) = tree.get_mut(at) {
                *r = right_start;
            }
            build(right, tree);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::seccomp::{RUNNER_FILTER, compile_filter, decode_program};

    const SHIPPED: &str = include_str!("../../../policies/seccomp/runner.json");

    /// A classic-BPF interpreter for the instructions seccompiler emits, over `seccomp_data`
    /// (nr, arch, six 64-bit arguments). Returns the verdict and how many instructions ran
    /// before it, or before the first argument load (the kernel's allow-cache stops there).
    fn run(prog: &[sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> (u32, usize, usize) {
        let (mut a, mut pc, mut steps) = (0u32, 0usize, 0usize);
        let mut before_args = None;
        loop {
            let ins = &prog[pc];
            steps += 1;
            pc += 1;
            match ins.code {
                0x20 => {
                    a = match ins.k {
                        0 => nr,
                        4 => arch,
                        k => {
                            before_args.get_or_insert(steps - 1);
                            let word = args[usize::try_from((k - 16) / 8).unwrap()];
                            let half = if (k - 16) % 8 == 0 {
                                word & 0xffff_ffff
                            } else {
                                word >> 32
                            };
                            u32::try_from(half).unwrap()
                        }
                    }
                }
                0x54 => a &= ins.k,
                0x05 => pc += usize::try_from(ins.k).unwrap(),
                0x06 => return (ins.k, steps, before_args.unwrap_or(steps)),
                code => {
                    let taken = match code {
                        0x15 => a == ins.k,
                        0x25 => a > ins.k,
                        0x35 => a >= ins.k,
                        0x45 => a & ins.k != 0,
                        other => panic!("instruction {other:#x} not modelled"),
                    };
                    pc += usize::from(if taken { ins.jt } else { ins.jf });
                }
            }
        }
    }

    fn shipped() -> Vec<sock_filter> {
        compiled(SHIPPED)
    }

    const ARGS: [[u64; 6]; 8] = [
        [0; 6],
        [3; 6],
        [2, 4, 0, 0, 0, 0],
        [0, 0, 4, 1, 0, 0],
        [3, 1, 2, 2, 0, 0],
        [u64::MAX, 1 << 32, 7, 0x22, 5, 6],
        [0, 5, 0, 0, 0, 0],
        [0, 0x105, 1 << 33, 0, 0, 0],
    ];

    /// The shipped filter; one whose mismatch action is `log` and whose only rule has no
    /// arguments (its program must still end in a return); one with a 64-bit argument filter.
    const POLICIES: [&str; 3] = [
        SHIPPED,
        r#"{ "runner": { "mismatch_action": "log", "match_action": "allow",
            "filter": [ { "syscall": "getpid" } ] } }"#,
        r#"{ "runner": { "mismatch_action": { "errno": 1 }, "match_action": "allow",
            "filter": [ { "syscall": "read" },
                        { "syscall": "mmap", "args": [ { "index": 1, "type": "qword",
                           "op": "ge", "val": 4294967296 } ] },
                        { "syscall": "ioctl", "args": [ { "index": 1, "type": "dword",
                           "op": { "masked_eq": 255 }, "val": 5 } ] } ] } }"#,
    ];

    fn compiled(json: &str) -> Vec<sock_filter> {
        let arch = seccompiler::TargetArch::try_from(std::env::consts::ARCH).unwrap();
        let mut map = seccompiler::compile_from_json(json.as_bytes(), arch).unwrap();
        map.remove(RUNNER_FILTER).unwrap()
    }

    #[test]
    fn the_tree_gives_every_verdict_of_the_chain() {
        for json in POLICIES {
            let chain = compiled(json);
            let tree = relayout(&chain).expect("seccompiler's shape");
            assert!(valid(&tree) && tree.len() <= chain.len());
            let native = chain[1].k;
            let numbers = (0..1100).chain([0x4000_0000, 0x4000_0001, 0x4000_002d, u32::MAX]);
            for nr in numbers {
                for arch in [native, 0x4000_0003, 0] {
                    for args in ARGS {
                        let (want, ..) = run(&chain, nr, arch, args);
                        let (got, ..) = run(&tree, nr, arch, args);
                        assert_eq!(got, want, "nr {nr}, arch {arch:#x}, args {args:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn an_unnamed_syscall_is_refused_in_a_few_comparisons() {
        let chain = shipped();
        let tree = relayout(&chain).unwrap();
        assert!(
            tree.len() <= chain.len(),
            "{} > {}",
            tree.len(),
            chain.len()
        );
        let native = chain[1].k;
        // What the kernel's allow-cache emulates at install: every number, up to an argument load.
        let cost =
            |p: &[sock_filter]| -> usize { (0..512).map(|nr| run(p, nr, native, [0; 6]).2).sum() };
        let (before, after) = (cost(&chain), cost(&tree));
        assert!(
            after * 3 < before,
            "emulated {after} instructions, chain {before}"
        );
        // The longest path of a syscall no rule names: prefix, a split per level (18 syscalls:
        // at most 5), leaf, return.
        // (Loads of the architecture and number, the architecture check: 3 instructions run.)
        let unnamed = (0..512)
            .map(|nr| run(&tree, nr, native, [0; 6]))
            .filter(|&(verdict, steps, before_args)| verdict == chain[2].k && steps == before_args);
        let longest = unnamed.map(|(_, steps, _)| steps).max();
        assert!(longest.is_some_and(|l| l <= 3 + 5 + 2), "{longest:?}");
    }

    #[test]
    fn compile_filter_installs_the_tree() {
        let bytes = compile_filter(SHIPPED.as_bytes(), RUNNER_FILTER).unwrap();
        let compiled = decode_program(&bytes).unwrap();
        let tree = relayout(&shipped()).unwrap();
        assert!(same(&compiled, &tree));
    }

    #[test]
    fn programs_of_another_shape_are_left_alone() {
        let chain = shipped();
        // Not seccompiler's prefix.
        assert!(relayout(&chain[1..]).is_none());
        // A body whose jump leaves it (an argument comparison's false branch).
        let mut broken = chain.clone();
        let i = broken
            .iter()
            .position(|i| i.code == BPF_JMP_JEQ_K && (i.jt, i.jf) != (0, 1) && i.jt != 1)
            .unwrap();
        broken[i].jf = 200;
        assert!(relayout(&broken).is_none());
        // A block longer than the program.
        let mut long = chain.clone();
        let over = long
            .iter()
            .position(|i| i.code == BPF_JMP_JA && i.k > 1)
            .unwrap();
        long[over].k += 200;
        assert!(relayout(&long).is_none());
        // Syscall numbers out of order.
        let mut swapped = chain.clone();
        let first = swapped
            .iter()
            .position(|i| i.code == BPF_JMP_JEQ_K && i.jf == 1)
            .unwrap();
        swapped[first].k = u32::MAX;
        assert!(relayout(&swapped).is_none());
        assert!(relayout(&[]).is_none());
    }
}
