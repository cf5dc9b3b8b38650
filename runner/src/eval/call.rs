//! Call nodes: a builtin named in the source, a keyword, any other callee. Written once over
//! [`Operand`], so the tree walker (operands are `Expr`s) and the compiled code (operands are
//! closures, `eval::compile`) make the same calls: the same steps, the same argument order,
//! the same errors.
//!
//! Invariants: a call's operands are evaluated left to right, each once; a captured or local
//! map read in place is only read (captures cannot change; a local is not written by reading
//! another operand after it: the read comes last).

use super::{Env, Interp};
use crate::analyze::Expr;
use crate::builtins::{BuiltinDef, Fast};
use crate::error::EvalResult;
use crate::value::{KeyHint, Text, Value};

/// Where an operand's value lies when it is only read there: a slot of the frame or a capture.
pub(crate) enum Place {
    Local(u32),
    Capture(u32),
    Elsewhere,
}

/// A call's operand: evaluated as `Interp::operand` does, or read where it lies.
pub(crate) trait Operand {
    fn value(&self, interp: &mut Interp<'_>, env: Env<'_>) -> EvalResult;
    fn place(&self) -> Place;
}

impl Operand for Expr {
    #[inline(always)]
    fn value(&self, interp: &mut Interp<'_>, env: Env<'_>) -> EvalResult {
        interp.operand(self, env)
    }

    #[inline(always)]
    fn place(&self) -> Place {
        match self {
            Expr::Local(i) => Place::Local(*i),
            Expr::Capture(i) => Place::Capture(*i),
            _ => Place::Elsewhere,
        }
    }
}

/// `(:k m)` of a value `m`: a map's entry, read where the call's `hint` says it was last
/// time; anything else as `get` reads it.
#[inline(always)]
pub(super) fn keyword_of(m: &Value, kv: &Value, k: &Text, hint: &KeyHint) -> Value {
    match m {
        Value::Map(map) => map.get_keyword_hinted(k, hint).cloned(),
        other => crate::builtins::coll::get(other, kv),
    }
    .unwrap_or_default()
}

impl Interp<'_> {
    /// A call node of builtin `b`: its step, then the call, errors at the call's position.
    #[inline(always)]
    pub(super) fn builtin_call(
        &mut self,
        b: &'static BuiltinDef,
        c: &crate::analyze::Call,
        env: Env<'_>,
    ) -> EvalResult {
        self.tick()?;
        self.call_builtin(b, &c.args, env).map_err(|e| e.at(c.pos))
    }

    /// A call expression: a lambda's arguments are evaluated straight into its new frame; a
    /// keyword looks its one argument up; anything else gets an argument vector.
    pub(super) fn call<A: Operand>(
        &mut self,
        f: &Value,
        args: &[A],
        hint: &KeyHint,
        name: &str,
        env: Env<'_>,
    ) -> EvalResult {
        match (f, args) {
            (Value::Fn(l), _) => {
                let base = self.stack.len();
                for a in args {
                    match a.value(self, env) {
                        Ok(v) => self.stack.push(v),
                        Err(e) => {
                            self.stack.truncate(base);
                            return Err(e);
                        }
                    }
                }
                self.enter_lambda(l, base)
            }
            // `(:k m)`: looked up where this call found `:k` last time.
            (Value::Keyword(k), [arg]) => match arg.value(self, env)? {
                Value::Map(m) => Ok(m.get_keyword_hinted(k, hint).cloned().unwrap_or_default()),
                m => Ok(crate::builtins::coll::get(&m, f).unwrap_or_default()),
            },
            // Hot builtins with a fast path take their arguments without an argument vector.
            (Value::Builtin(b), [x]) if matches!(b.fast, Fast::One(_) | Fast::Prim(_)) => {
                let x = x.value(self, env)?;
                crate::builtins::call1(self, b, x)
            }
            (Value::Builtin(b), [x, y]) if matches!(b.fast, Fast::Two(_) | Fast::Prim(_)) => {
                let x = x.value(self, env)?;
                let y = y.value(self, env)?;
                crate::builtins::call2(self, b, x, y)
            }
            _ => {
                let args = self.eval_all(args, env)?;
                self.apply_named(f, args, name)
            }
        }
    }

    /// `(:k m)` written in the source: looked up where this call found `:k` last time. Out of
    /// line, so that `eval`'s own code stays as small as it was.
    #[inline(never)]
    pub(super) fn call_keyword<A: Operand>(
        &mut self,
        kv: &Value,
        k: &Text,
        hint: &KeyHint,
        arg: Option<&A>,
        env: Env<'_>,
    ) -> EvalResult {
        let look = |m: &Value| keyword_of(m, kv, k, hint);
        let Some(arg) = arg else {
            return Ok(Value::Nil);
        };
        // A local or captured map is read where it is: no clone of it to make and drop.
        match arg.place() {
            Place::Local(i) => Ok(self
                .stack
                .get(env.base + i as usize)
                .map(look)
                .unwrap_or_default()),
            Place::Capture(i) => Ok(env.captures().get(i as usize).map(look).unwrap_or_default()),
            Place::Elsewhere => Ok(look(&arg.value(self, env)?)),
        }
    }

    /// A call of a builtin: its fast path when the arity matches one, else an argument vector.
    pub(super) fn call_builtin<A: Operand>(
        &mut self,
        b: &'static BuiltinDef,
        args: &[A],
        env: Env<'_>,
    ) -> EvalResult {
        match (b.fast, args) {
            (Fast::One(_) | Fast::Prim(_), [x]) => {
                let x = x.value(self, env)?;
                crate::builtins::call1(self, b, x)
            }
            // A captured first operand (`(get by-id k)`) is read where it is: no clone of it to
            // make and drop. Captures cannot change, so reading it after `y` reads the same.
            (Fast::Two(g), [x, y]) if let Place::Capture(i) = x.place() => {
                let y = y.value(self, env)?;
                let x = env.captures().get(i as usize).unwrap_or(&Value::Nil);
                match g(x, &y) {
                    Some(r) => r,
                    None => crate::builtins::call(self, b, vec![x.clone(), y]),
                }
            }
            (Fast::Two(_) | Fast::Prim(_), [x, y]) => {
                let x = x.value(self, env)?;
                let y = y.value(self, env)?;
                crate::builtins::call2(self, b, x, y)
            }
            _ => {
                let args = self.eval_all(args, env)?;
                crate::builtins::call(self, b, args)
            }
        }
    }

    pub(super) fn eval_all<A: Operand>(
        &mut self,
        xs: &[A],
        env: Env<'_>,
    ) -> EvalResult<Vec<Value>> {
        let mut out = Vec::with_capacity(xs.len());
        for x in xs {
            out.push(x.value(self, env)?);
        }
        Ok(out)
    }
}
