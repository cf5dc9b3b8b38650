//! Arguments evaluated onto the value stack, where a call's callee reads them: the first slots
//! of a lambda's frame, or the arguments of a builtin with a stacked entry (`Fast::Stacked`:
//! `assoc`, `update`, `str`), which so gets no argument vector to allocate and free.
//!
//! Invariant: whatever happens (an operand's error, an arity error, the builtin's own), the
//! stack is back at the length it had before the call when the call returns.

use super::{Env, Interp};
use crate::analyze::Expr;
use crate::builtins::{BuiltinDef, StackFn};
use crate::error::EvalResult;

impl Interp<'_> {
    /// Pushes the values of `args` in order and answers where the first one is; an error in
    /// one drops those before it and leaves the stack as it was.
    #[inline(always)]
    pub(super) fn push_args(&mut self, args: &[Expr], env: &Env<'_>) -> EvalResult<usize> {
        let base = self.stack.len();
        for a in args {
            match self.operand(a, env) {
                Ok(v) => self.stack.push(v),
                Err(e) => {
                    self.stack.truncate(base);
                    return Err(e);
                }
            }
        }
        Ok(base)
    }

    /// `(b args...)` for a builtin with a stacked entry `g`: the arguments evaluated in order,
    /// the arity checked after them (as `builtins::call` checks an argument vector), then `g`.
    #[inline(never)]
    pub(super) fn call_stacked(
        &mut self,
        b: &'static BuiltinDef,
        g: StackFn,
        args: &[Expr],
        env: &Env<'_>,
    ) -> EvalResult {
        let base = self.push_args(args, env)?;
        let r = match crate::builtins::check_arity(b, args.len()) {
            Ok(()) => g(self, base),
            Err(e) => Err(e),
        };
        self.stack.truncate(base);
        r
    }
}
