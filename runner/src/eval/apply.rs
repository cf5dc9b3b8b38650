//! Applying fns: the entries the builtins call a value through (`apply`, `apply1`,
//! `apply1_ref`, `apply2`), and the one way into a lambda, [`Interp::enter_lambda`], that the
//! evaluator's own calls use too.
//!
//! Invariants: a lambda's arguments are pushed on the value stack where its frame begins, so a
//! call copies nothing, and the frame is popped back to that base whatever the body returns;
//! every lambda entry and every native's nested call counts one level against `max_depth`
//! before anything runs; quick fns and quick reducers are tried first, and hand back their
//! argument untouched when they decline, so the general path sees what it would have seen.

use super::{Env, Lambda, forget_or_drop, stack};
use crate::analyze::{Arity, FnTemplate};
use crate::builtins::Fast;
use crate::error::{EvalError, EvalResult, Limit};
use crate::value::Value;
use std::rc::Rc;

impl super::Interp<'_> {
    /// Applies any callable value to arguments.
    pub fn apply(&mut self, f: &Value, args: Vec<Value>) -> EvalResult {
        self.apply_named(f, args, "fn")
    }

    pub(super) fn apply_named(&mut self, f: &Value, args: Vec<Value>, name: &str) -> EvalResult {
        match f {
            Value::Builtin(b) => crate::builtins::call(self, b, args),
            Value::Fn(l) => self.apply_lambda(l, args),
            Value::Native(n) => self.nested(|i| crate::builtins::hof::apply_native(i, n, args)),
            Value::Keyword(_) | Value::Map(_) | Value::Set(_) | Value::Vector(_) => {
                crate::builtins::apply_data(self, f, args)
            }
            other => Err(EvalError::new(
                crate::error::ErrorKind::NotCallable,
                name,
                format!(
                    "{} is not a function: {} cannot be called",
                    crate::print::pr_str_short(other),
                    other.type_name()
                ),
            )),
        }
    }

    /// Runs `f` one call deeper: counted against `max_depth` like a lambda call, on a stack that
    /// grows on demand. Natives (`juxt`, `comp`, `partial`, ...) call their functions from Rust,
    /// so 100,000 nested `juxt`s would otherwise recurse without ever entering a lambda.
    pub(crate) fn nested<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> EvalResult<T>,
    ) -> EvalResult<T> {
        if self.depth >= self.limits.max_depth {
            let msg = format!("recursion deeper than {} calls", self.limits.max_depth);
            return Err(EvalError::limit(Limit::Depth, msg));
        }
        self.depth += 1;
        // A segment grown here has no bounds of its own yet: its first node takes them.
        let r = stacker::maybe_grow(stack::STACK_RED_ZONE, stack::STACK_SEGMENT, || f(self));
        self.depth -= 1;
        r
    }

    fn pick_arity(t: &FnTemplate, n: usize) -> Option<&Arity> {
        t.arities
            .iter()
            .find(|a| !a.variadic && a.required == n)
            .or_else(|| t.arities.iter().find(|a| a.variadic && n >= a.required))
    }

    fn apply_lambda(&mut self, l: &Rc<Lambda>, args: Vec<Value>) -> EvalResult {
        let base = self.stack.len();
        self.stack.extend(args);
        self.enter_lambda(l, base)
    }

    /// Calls `f` with one argument; lambdas and keywords without building an argument vector.
    pub fn apply1(&mut self, f: &Value, x: Value) -> EvalResult {
        match f {
            Value::Fn(l) => match self.quick_call(l, &x) {
                Some(v) => Ok(v),
                None => self.enter1(l, x),
            },
            Value::Keyword(_) => Ok(crate::builtins::coll::get(&x, f).unwrap_or_default()),
            Value::Builtin(b) => crate::builtins::call1(self, b, x),
            // One call deeper, as `apply` charges it; `hof` skips the vector where it can.
            Value::Native(n) => self.nested(|i| crate::builtins::hof::apply_native1(i, n, x)),
            _ => self.apply(f, vec![x]),
        }
    }

    /// Enters lambda `l` with one argument.
    pub(crate) fn enter1(&mut self, l: &Rc<Lambda>, x: Value) -> EvalResult {
        let base = self.stack.len();
        self.stack.push(x);
        self.enter_lambda(l, base)
    }

    /// Calls `f` with a borrowed argument: a keyword (the usual fn of `map` or `group-by` over
    /// records) reads it in place, trying the entry at `hint` first (the caller's loop keeps one
    /// hint for all its elements; see [`MapImpl::get_keyword_hinted`]); anything else gets a clone.
    /// Inlined into the loops of the builtins that call it: one call layer fewer per element.
    #[inline]
    pub fn apply1_ref(&mut self, f: &Value, x: &Value, hint: &crate::value::KeyHint) -> EvalResult {
        match (f, x) {
            (Value::Keyword(k), Value::Map(m)) => {
                Ok(m.get_keyword_hinted(k, hint).cloned().unwrap_or_default())
            }
            (Value::Keyword(_), _) => Ok(crate::builtins::coll::get(x, f).unwrap_or_default()),
            _ => self.apply1(f, x.clone()),
        }
    }

    /// Calls `f` with two arguments; lambdas without building an argument vector.
    pub fn apply2(&mut self, f: &Value, x: Value, y: Value) -> EvalResult {
        match f {
            Value::Fn(l) => {
                // A quick reducer's answer (`reducer.rs`), else the call.
                let x = match &l.template.reducer {
                    Some(r) => match self.quick_reduce(r, x, &y) {
                        Ok(v) => return Ok(v),
                        Err(x) => x,
                    },
                    None => x,
                };
                let base = self.stack.len();
                self.stack.push(x);
                self.stack.push(y);
                self.enter_lambda(l, base)
            }
            // `(reduce + xs)`, `(sort-by f < xs)`: two integers go through the prim inline.
            Value::Builtin(b) => match (b.fast, x, y) {
                (Fast::Prim(op), Value::Int(a), Value::Int(c)) => match op.ints(a, c) {
                    Some(v) => Ok(v),
                    None => crate::builtins::call2(self, b, Value::Int(a), Value::Int(c)),
                },
                (_, x, y) => crate::builtins::call2(self, b, x, y),
            },
            // `(update m k (fnil + 0) x)`: one call deeper, as `apply` charges it.
            Value::Native(n) => crate::builtins::hof::call_native2(self, n, x, y),
            _ => self.apply(f, vec![x, y]),
        }
    }

    /// Runs lambda `l` whose arguments are already on the stack from `base`: they become the
    /// first slots of its frame, so a call copies nothing (the frame is truncated on return).
    /// The usual callee, one fixed arity that takes exactly these arguments, is recognised
    /// without a search; errors and rest arguments are handled out of line.
    #[inline]
    pub(super) fn enter_lambda(&mut self, l: &Rc<Lambda>, base: usize) -> EvalResult {
        let n = self.stack.len().saturating_sub(base);
        let arity = match l.template.arities.as_slice() {
            [a] if !a.variadic && a.required == n => a,
            _ => match Self::pick_arity(&l.template, n) {
                Some(a) => a,
                None => return Err(self.arity_error(l, n, base)),
            },
        };
        if self.depth >= self.limits.max_depth {
            return Err(self.depth_error(base));
        }
        if arity.variadic {
            self.collect_rest(arity, base, n);
        }
        // The slots past the arguments (a few `let`s): pushed, not `resize`d out of line.
        let frame_end = base + (arity.frame_size as usize).max(1);
        while self.stack.len() < frame_end {
            self.stack.push(Value::Nil);
        }
        self.depth += 1;
        let env = Env {
            base,
            captures: &l.captures,
            this: Some(l),
        };
        // No stack check of its own: the body, unless a leaf, is a node, and `eval` checks it.
        let r = self.run_arity(arity, &env);
        self.depth -= 1;
        while self.stack.len() > base {
            if let Some(v) = self.stack.pop() {
                forget_or_drop(v);
            }
        }
        r
    }

    /// Runs the body of a call's arity in its frame: the usual body once (no parameter
    /// patterns, no `recur`), anything else through `run_body`.
    #[inline(always)]
    fn run_arity(&mut self, arity: &Arity, env: &Env<'_>) -> EvalResult {
        if !arity.patterns.is_empty() {
            return self.run_body(arity, env);
        }
        match self.eval(&arity.body, env) {
            Err(EvalError::Recur) => self.recur_and_run(arity, env),
            other => other,
        }
    }
}
