//! Output and memory: `println print prn pr pr-str` append to the run's prints (never stdout),
//! each entry capped at `max_print_entry_bytes` and the total at `max_prints_bytes`, with the
//! truncation marked; `memory/put` and `memory/get` reach the user namespace.

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::EvalResult;
use crate::eval::Interp;
use crate::value::Value;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "println",
        0,
        _,
        "Records the arguments, space-separated, as one print line.",
        "(println \"total\" 3)",
        |i, a| {
            let s = joined(&a, crate::print::print_of);
            i.print(&s, true);
            Ok(Value::Nil)
        }
    ),
    def!(
        "print",
        0,
        _,
        "Records the arguments without ending the line.",
        "(print \"a\")",
        |i, a| {
            let s = joined(&a, crate::print::print_of);
            i.print(&s, false);
            Ok(Value::Nil)
        }
    ),
    def!(
        "prn",
        0,
        _,
        "Records the arguments printed readably, as one line.",
        "(prn {:a \"x\"})",
        |i, a| {
            let s = joined(&a, crate::print::pr_str);
            i.print(&s, true);
            Ok(Value::Nil)
        }
    ),
    def!(
        "pr",
        0,
        _,
        "Records the arguments printed readably, without ending the line.",
        "(pr :a)",
        |i, a| {
            let s = joined(&a, crate::print::pr_str);
            i.print(&s, false);
            Ok(Value::Nil)
        }
    ),
    def!(
        "pr-str",
        0,
        _,
        "The arguments printed readably, space-separated.",
        "(pr-str \"a\") ;=> \"\\\"a\\\"\"",
        |_, a| Ok(Value::str(&joined(&a, crate::print::pr_str)))
    ),
    def!(
        "prn-str",
        0,
        _,
        "Like pr-str, with a newline.",
        "(prn-str 1) ;=> \"1\\n\"",
        |_, a| Ok(Value::str(&(joined(&a, crate::print::pr_str) + "\n")))
    ),
    def!(
        "print-str",
        0,
        _,
        "The arguments printed for humans, space-separated.",
        "(print-str \"a\" 1) ;=> \"a 1\"",
        |_, a| Ok(Value::str(&joined(&a, crate::print::print_of)))
    ),
    def!(
        "println-str",
        0,
        _,
        "Like print-str, with a newline.",
        "(println-str 1) ;=> \"1\\n\"",
        |_, a| Ok(Value::str(&(joined(&a, crate::print::print_of) + "\n")))
    ),
    def!(
        "newline",
        0,
        0,
        "Ends the current print line.",
        "(newline)",
        |i, _| {
            i.print("", true);
            Ok(Value::Nil)
        }
    ),
];

/// `memory/...`: the user namespace that persists across runs.
pub static MEMORY_TABLE: &[BuiltinDef] = &[
    def!(
        "put",
        2,
        2,
        "Binds name k (keyword or string) to v in memory; returns v.",
        "(memory/put :seen [1 2])",
        |i, a| {
            let name = mem_name(&a[0])?;
            i.globals.insert(name.into(), a[1].clone());
            Ok(a[1].clone())
        }
    ),
    def!(
        "get",
        1,
        2,
        "The value of name k in memory, or the default.",
        "(memory/get :seen)",
        |i, a| {
            let name = mem_name(&a[0])?;
            Ok(i.globals
                .get(name.as_str())
                .cloned()
                .or_else(|| a.get(1).cloned())
                .unwrap_or_default())
        }
    ),
];

fn mem_name(k: &Value) -> EvalResult<String> {
    match k {
        Value::Keyword(s) | Value::Str(s) | Value::Symbol(s) => Ok(s.to_string()),
        other => Err(expected("memory", "a keyword or string name", other)),
    }
}

fn joined(a: &[Value], f: fn(&Value) -> String) -> String {
    a.iter().map(f).collect::<Vec<_>>().join(" ")
}

impl Interp<'_> {
    /// Appends to the prints, enforcing the caps.
    pub(crate) fn print(&mut self, s: &str, newline: bool) {
        let p = &mut self.prints;
        p.partial.push_str(s);
        if !newline {
            // Keep a pending partial line bounded too.
            if p.partial.len() as u64 > self.limits.max_print_entry_bytes {
                self.flush_print();
            }
            return;
        }
        self.flush_print();
    }

    fn flush_print(&mut self) {
        let limits = self.limits;
        let p = &mut self.prints;
        let mut line = std::mem::take(&mut p.partial);
        if p.truncated {
            return;
        }
        if line.len() as u64 > limits.max_print_entry_bytes {
            truncate_at_char(
                &mut line,
                usize::try_from(limits.max_print_entry_bytes).unwrap_or(usize::MAX),
            );
            line.push_str("…[truncated]");
        }
        if p.bytes + line.len() as u64 > limits.max_prints_bytes {
            p.truncated = true;
            p.lines.push(format!(
                "…[prints truncated at {} bytes]",
                limits.max_prints_bytes
            ));
            return;
        }
        p.bytes += line.len() as u64;
        p.lines.push(line);
    }

    /// The prints of the run, with any unfinished line ended.
    pub(crate) fn take_prints(&mut self) -> Vec<String> {
        if !self.prints.partial.is_empty() {
            self.flush_print();
        }
        std::mem::take(&mut self.prints.lines)
    }
}

fn truncate_at_char(s: &mut String, max: usize) {
    let mut end = max.min(s.len());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
}
