//! Execution limits: one struct, carried by every request, enforced by the interpreter (steps,
//! depth, prints, result size, deadline) and by the runner process (heap, CPU, kill at deadline).
//!
//! A request may tighten its policy's limits, never loosen them: see [`Limits::tighten`].

use serde::{Deserialize, Serialize};

/// Limits for one execution. Defaults are documented on each field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock deadline (default 1000 ms).
    pub timeout_ms: u64,
    /// CPU time of the runner process (default 1000 ms; rlimit rounds up to whole seconds).
    pub cpu_ms: u64,
    /// Heap budget of the runner process (default 64 MiB).
    pub heap_bytes: u64,
    /// Evaluation steps: one per form evaluated and per element a builtin walks (default 10 M).
    pub max_steps: u64,
    /// Nested function calls / evaluation depth (default 400).
    pub max_depth: u32,
    /// Elements one loop, range or realization may produce (default 1 M).
    pub max_iterations: u64,
    /// Tool calls per execution (default 100).
    pub max_tool_calls: u32,
    /// Program source size (default 1 MiB).
    pub max_program_bytes: u64,
    /// Reader nesting depth (default 256).
    pub max_nesting: u32,
    /// Context size as encoded on the wire (default 16 MiB).
    pub max_context_bytes: u64,
    /// Result size as printed with `pr-str` (default 1 MiB).
    pub max_result_bytes: u64,
    /// Total bytes of all prints (default 64 KiB); past it prints are truncated and marked.
    pub max_prints_bytes: u64,
    /// Bytes of one print entry (default 4 KiB).
    pub max_print_entry_bytes: u64,
    /// Size of one tool result (default 4 MiB).
    pub max_tool_result_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
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
        }
    }
}

/// The limit a field of [`Limits`] names, for errors and `details.limit`.
macro_rules! limit_fields {
    ($m:ident) => {
        $m!(
            timeout_ms,
            cpu_ms,
            heap_bytes,
            max_steps,
            max_depth,
            max_iterations,
            max_tool_calls,
            max_program_bytes,
            max_nesting,
            max_context_bytes,
            max_result_bytes,
            max_prints_bytes,
            max_print_entry_bytes,
            max_tool_result_bytes
        )
    };
}

impl Limits {
    /// The element-wise minimum of `self` and `requested`: a request can only tighten.
    pub fn tighten(&self, requested: &Limits) -> Limits {
        let mut out = *self;
        macro_rules! min_all {
            ($($f:ident),*) => { $( out.$f = self.$f.min(requested.$f); )* };
        }
        limit_fields!(min_all);
        out
    }

    /// The first field of `requested` that is looser than `self`, if any.
    pub fn first_looser(&self, requested: &Limits) -> Option<Looser> {
        macro_rules! check_all {
            ($($f:ident),*) => { $( if requested.$f > self.$f {
                return Some(Looser {
                    field: stringify!($f),
                    requested: u64::from(requested.$f),
                    allowed: u64::from(self.$f),
                });
            } )* };
        }
        limit_fields!(check_all);
        None
    }
}

/// A requested limit looser than its policy allows: which one, and both values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Looser {
    pub field: &'static str,
    pub requested: u64,
    pub allowed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tighten_takes_the_minimum_and_looser_is_named() {
        let policy = Limits::default();
        let req = Limits {
            timeout_ms: 50,
            max_steps: u64::MAX,
            ..Limits::default()
        };
        let t = policy.tighten(&req);
        assert_eq!(t.timeout_ms, 50);
        assert_eq!(t.max_steps, policy.max_steps);
        let looser = policy
            .first_looser(&req)
            .map(|l| (l.field, l.requested, l.allowed));
        assert_eq!(looser, Some(("max_steps", u64::MAX, policy.max_steps)));
        assert_eq!(policy.first_looser(&t), None);
    }
}
