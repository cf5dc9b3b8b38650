//! A lambda call's paths off the usual one (`Interp::enter_lambda` in `eval/mod.rs` takes one
//! fixed arity with exactly its arguments, no parameter patterns, no `recur`): the arity and
//! depth errors, rest arguments, destructured parameters and a body that loops on `recur`.
//!
//! Invariants: an error drops the callee's frame (the stack is back at `base`) before it is
//! built; `recur` charges one step and rebinds only the raw parameter slots.

use super::{Env, Interp, Lambda};
use crate::analyze::Arity;
use crate::error::{EvalError, EvalResult, Limit};
use crate::value::Value;

impl Interp<'_> {
    /// A call with no arity for `n` arguments: its frame dropped, the error built.
    #[cold]
    #[inline(never)]
    pub(super) fn arity_error(&mut self, l: &Lambda, n: usize, base: usize) -> EvalError {
        self.stack.truncate(base);
        let name = l.template.name.as_deref().unwrap_or("fn");
        let msg = format!("wrong number of args ({n}) passed to {name}");
        EvalError::new(crate::error::ErrorKind::ArityError, name, msg)
    }

    /// A call past `max_depth`: its frame dropped, the limit reported.
    #[cold]
    #[inline(never)]
    pub(super) fn depth_error(&mut self, base: usize) -> EvalError {
        self.stack.truncate(base);
        let msg = format!("recursion deeper than {} calls", self.limits.max_depth);
        EvalError::limit(Limit::Depth, msg)
    }

    /// A variadic arity's extra arguments, replaced on the stack by one list (nil if none).
    #[inline(never)]
    pub(super) fn collect_rest(&mut self, arity: &Arity, base: usize, n: usize) {
        let rest: Vec<Value> = self.stack.drain(base + arity.required.min(n)..).collect();
        self.stack.push(if rest.is_empty() {
            Value::Nil
        } else {
            Value::list(rest)
        });
    }

    /// The body ended in `recur` on its first run: the new arguments, then the loop.
    #[inline(never)]
    pub(super) fn recur_and_run(&mut self, arity: &Arity, env: &Env<'_>) -> EvalResult {
        self.recur_params(arity, env)?;
        self.run_body(arity, env)
    }

    /// Runs an arity's body, looping on `recur`.
    pub(super) fn run_body(&mut self, arity: &Arity, env: &Env<'_>) -> EvalResult {
        loop {
            if !arity.patterns.is_empty() {
                self.bind_params(arity, env)?;
            }
            match self.eval(&arity.body, env) {
                Err(EvalError::Recur) => self.recur_params(arity, env)?,
                other => return other,
            }
        }
    }

    /// Destructures the pattern parameters of an arity (out of line: most fns have none, and
    /// `run_body` stays small).
    #[inline(never)]
    fn bind_params(&mut self, arity: &Arity, env: &Env<'_>) -> EvalResult<()> {
        for (p, raw) in &arity.patterns {
            let v = self.take_slot(env, *raw);
            self.bind(p, v, env)?;
        }
        Ok(())
    }

    /// `recur` to a fn: one step, then the new values in the raw parameter slots.
    #[inline(never)]
    fn recur_params(&mut self, arity: &Arity, env: &Env<'_>) -> EvalResult<()> {
        self.tick()?;
        let vals = std::mem::take(&mut self.recur_buf);
        for (slot, v) in arity.raw.iter().zip(vals) {
            self.set_slot(env, *slot, v);
        }
        Ok(())
    }
}
