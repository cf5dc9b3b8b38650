//! The runner's seccomp program as bytes: compiled once by the supervisor from the policy's JSON
//! (seccompiler's format), carried in `Setup::seccomp_bpf`, rebuilt and installed by the runner.
//!
//! Wire form: the `struct sock_filter` records in order, 8 bytes each in native byte order
//! (`code: u16, jt: u8, jf: u8, k: u32`): supervisor and runner always run on the same host.
//! Decoding refuses an empty program, a length that is not a whole number of records, and more
//! than [`BPF_MAXINSNS`] records, so a runner never installs a half-read program.
//!
//! seccompiler's chain of per-syscall comparisons is re-laid out as a search tree (`layout`):
//! the same verdicts, found in a few comparisons, which matters because the kernel emulates the
//! program for every syscall number at each install (once per runner).

mod layout;

use seccompiler::{BpfProgram, TargetArch, sock_filter};

/// The name of the filter in `policies/seccomp/runner.json` that runners install.
pub const RUNNER_FILTER: &str = "runner";

/// The kernel's maximum number of instructions in one classic BPF program.
pub const BPF_MAXINSNS: usize = 4096;

const RECORD: usize = 8;

/// Why a seccomp program could not be compiled or decoded.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("seccomp policy does not compile: {0}")]
    Compile(String),
    #[error("seccomp policy has no filter named {0:?}")]
    MissingFilter(String),
    #[error("this architecture ({0}) is not supported by seccompiler")]
    Arch(&'static str),
    #[error("seccomp program is empty")]
    Empty,
    #[error("seccomp program of {0} bytes is not a whole number of 8-byte instructions")]
    Ragged(usize),
    #[error("seccomp program of {0} instructions exceeds the kernel's maximum of 4096")]
    TooLong(usize),
}

/// Compiles filter `name` of a seccompiler JSON policy for this host's architecture, to bytes.
pub fn compile_filter(json: &[u8], name: &str) -> Result<Vec<u8>, SeccompError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SeccompError::Arch(std::env::consts::ARCH))?;
    let mut filters = seccompiler::compile_from_json(json, arch)
        .map_err(|e| SeccompError::Compile(e.to_string()))?;
    let program = filters
        .remove(name)
        .ok_or_else(|| SeccompError::MissingFilter(name.to_string()))?;
    let program = layout::relayout(&program).unwrap_or(program);
    check_len(program.len())?;
    Ok(encode_program(&program))
}

/// The wire bytes of a compiled program.
pub fn encode_program(program: &[sock_filter]) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * RECORD);
    for ins in program {
        out.extend_from_slice(&ins.code.to_ne_bytes());
        out.push(ins.jt);
        out.push(ins.jf);
        out.extend_from_slice(&ins.k.to_ne_bytes());
    }
    out
}

/// Rebuilds the program from its wire bytes, ready for `seccompiler::apply_filter`.
pub fn decode_program(bytes: &[u8]) -> Result<BpfProgram, SeccompError> {
    if !bytes.len().is_multiple_of(RECORD) {
        return Err(SeccompError::Ragged(bytes.len()));
    }
    check_len(bytes.len() / RECORD)?;
    Ok(bytes
        .chunks_exact(RECORD)
        .map(|r| {
            // chunks_exact yields 8-byte records only; the default is unreachable.
            let [c0, c1, jt, jf, k0, k1, k2, k3] = <[u8; RECORD]>::try_from(r).unwrap_or_default();
            sock_filter {
                code: u16::from_ne_bytes([c0, c1]),
                jt,
                jf,
                k: u32::from_ne_bytes([k0, k1, k2, k3]),
            }
        })
        .collect())
}

fn check_len(instructions: usize) -> Result<(), SeccompError> {
    match instructions {
        0 => Err(SeccompError::Empty),
        n if n > BPF_MAXINSNS => Err(SeccompError::TooLong(n)),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const POLICY: &str = r#"{ "runner": { "mismatch_action": "kill_process", "match_action": "allow",
        "filter": [ { "syscall": "read", "comment": "frames" },
                    { "syscall": "mmap", "args": [ { "index": 2, "type": "dword",
                       "op": { "masked_eq": 4 }, "val": 0, "comment": "no PROT_EXEC" } ] } ] } }"#;

    #[test]
    fn compiled_program_round_trips_through_bytes() {
        let bytes = compile_filter(POLICY.as_bytes(), RUNNER_FILTER).unwrap();
        assert_eq!(bytes.len() % 8, 0);
        let program = decode_program(&bytes).unwrap();
        assert_eq!(encode_program(&program), bytes);
    }

    #[test]
    fn a_program_of_exactly_the_kernels_maximum_is_accepted() {
        let program = decode_program(&vec![7; 8 * BPF_MAXINSNS]).unwrap();
        assert_eq!(program.len(), BPF_MAXINSNS);
        assert!(program.iter().all(|i| i.jt == 7 && i.jf == 7));
    }

    #[test]
    fn bad_programs_are_refused() {
        assert!(matches!(decode_program(&[]), Err(SeccompError::Empty)));
        assert!(matches!(
            decode_program(&[0; 12]),
            Err(SeccompError::Ragged(12))
        ));
        assert!(matches!(
            decode_program(&vec![0; 8 * 4097]),
            Err(SeccompError::TooLong(4097))
        ));
        assert!(matches!(
            decode_program(&vec![0; 8 * 5000]),
            Err(SeccompError::TooLong(5000))
        ));
        assert!(matches!(
            compile_filter(POLICY.as_bytes(), "other"),
            Err(SeccompError::MissingFilter(_))
        ));
        assert!(matches!(
            compile_filter(b"{", RUNNER_FILTER),
            Err(SeccompError::Compile(_))
        ));
    }
}
