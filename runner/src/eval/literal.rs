//! Evaluation of collection and `fn` literals, `def`/`defonce`, globals, `and`/`or`, `recur`,
//! tool and method calls: arms of `eval_inner` kept here so its dispatch stays short.
//!
//! Invariants: a set or map literal that repeats an element or key is an error (as in Clojure),
//! checked on the evaluated values; a record literal's keys are constants the analyzer already
//! checked distinct, so it is filled in place without a check.

use super::{Env, Interp, Lambda};
use crate::analyze::{Expr, FnTemplate};
use crate::error::{ErrorKind, EvalError, EvalResult, Pos};
use crate::value::{Coll, MapImpl, PVec, Record, Shape, Text, Value};
use std::rc::Rc;

impl Interp<'_> {
    /// A vector literal. Up to three elements (`[id sku amt]`, `[k v]`), the vector's inline
    /// size, are evaluated straight into it: no argument vector to allocate and free.
    #[inline]
    pub(super) fn eval_vector(&mut self, items: &[Expr], env: &Env<'_>) -> EvalResult {
        if items.len() > 3 {
            return Ok(Value::vector(self.eval_all(items, env)?));
        }
        if let [a, b, c] = items {
            let a = self.literal_item(a, env)?;
            let b = self.literal_item(b, env)?;
            let c = self.literal_item(c, env)?;
            return Ok(Value::Vector(Coll::new(PVec::from_three([a, b, c]))));
        }
        if let [a, b] = items {
            let a = self.literal_item(a, env)?;
            let b = self.literal_item(b, env)?;
            return Ok(Value::Vector(Coll::new(PVec::from_two(a, b))));
        }
        let mut out = PVec::new();
        for x in items {
            out.push_back(self.literal_item(x, env)?);
        }
        Ok(Value::Vector(Coll::new(out)))
    }

    /// An element of a vector or record literal, a `let`/`:let` value, an `if` test. A prim
    /// (`(mod i 7)`) and a builtin call of leaves (`(get by-id (:customer_id o))`) are
    /// evaluated as `eval` evaluates them (the step, the error position) without its dispatch;
    /// anything else as an [`Interp::operand`]. (A field of a local read here in place, as the
    /// base did, measured 7 % more CPU time on p3 for 1 % fewer instructions: see `operand`.)
    #[inline(always)]
    pub(super) fn literal_item(&mut self, e: &Expr, env: &Env<'_>) -> EvalResult {
        match e {
            Expr::Prim(p) => self.prim_step(p, env),
            Expr::Call(c)
                if let Expr::Builtin(b) = &c.f
                    && c.args.iter().all(is_leaf) =>
            {
                self.leaf_builtin_call(b, c, env)
            }
            e => self.operand(e, env),
        }
    }

    /// [`Interp::builtin_call`] of a call whose operands are all leaves or fields of locals
    /// (`(get by-id (:customer_id o))`), for `literal_item`: no operand nests further than one
    /// field read, so the call needs no stack check of its own (a lambda the builtin calls is
    /// checked at its body's node, natives by `nested`).
    #[inline(never)]
    fn leaf_builtin_call(
        &mut self,
        b: &'static crate::builtins::BuiltinDef,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        self.builtin_call(b, c, env)
    }

    pub(super) fn eval_set(&mut self, items: &[Expr], env: &Env<'_>) -> EvalResult {
        let items = self.eval_all(items, env)?;
        let n = items.len();
        let set = Value::set(items);
        if matches!(&set, Value::Set(s) if s.len() != n) {
            return Err(EvalError::arg(
                "set literal",
                "duplicate element in set literal",
            ));
        }
        Ok(set)
    }

    pub(super) fn eval_map(&mut self, pairs: &[(Expr, Expr)], env: &Env<'_>) -> EvalResult {
        let mut m = MapImpl::with_capacity(pairs.len());
        for (k, v) in pairs {
            let k = self.eval(k, env)?;
            if m.contains_key(&k) {
                return Err(EvalError::arg(
                    "map literal",
                    format!(
                        "duplicate key in map literal: {}",
                        crate::print::pr_str_short(&k)
                    ),
                ));
            }
            m.insert(k, self.eval(v, env)?);
        }
        Ok(Value::map(m))
    }

    /// A map literal with distinct constant keys: filled in place (a small map is a few hundred
    /// bytes, not worth moving); with a shape, its keys are the shape's.
    pub(super) fn eval_record(
        &mut self,
        pairs: &[(Expr, Expr)],
        shape: Option<&Rc<Shape>>,
        env: &Env<'_>,
    ) -> EvalResult {
        if let Some(shape) = shape {
            let mut coll = Coll::new(MapImpl::Record(Record::empty(shape.clone())));
            if let MapImpl::Record(r) = coll.make_mut() {
                for (_, v) in pairs {
                    r.push(self.literal_item(v, env)?);
                }
            }
            return Ok(Value::Map(coll));
        }
        let mut coll = Coll::new(MapImpl::default());
        let m = coll.make_mut();
        for (k, v) in pairs {
            let k = self.operand(k, env)?;
            m.insert_new(k, self.operand(v, env)?);
        }
        Ok(Value::Map(coll))
    }

    /// `def` (always binds) and `defonce` (binds only a name without a value yet).
    #[inline(never)]
    pub(super) fn eval_def(
        &mut self,
        name: &Rc<str>,
        v: &Expr,
        once: bool,
        env: &Env<'_>,
    ) -> EvalResult {
        if !(once && self.globals.contains_key(name)) {
            let v = self.eval(v, env)?;
            self.globals.insert(name.clone(), v);
        }
        Ok(Value::Symbol(Text::from(format!("#'user/{name}"))))
    }

    /// `(call name-expr arg)`: the tool's name is computed.
    #[inline(never)]
    pub(super) fn eval_dyn_tool(&mut self, args: &[Expr], pos: Pos, env: &Env<'_>) -> EvalResult {
        let mut args = self.eval_all(args, env)?;
        let name = match args.first() {
            Some(Value::Str(s)) => s.to_string(),
            Some(Value::Keyword(s)) | Some(Value::Symbol(s)) => s.to_string(),
            _ => {
                return Err(EvalError::type_err("call", "call needs a tool name string").at(pos));
            }
        };
        args.remove(0);
        self.call_named_tool(&name, args).map_err(|e| e.at(pos))
    }

    /// A user definition, read when evaluated: declared but not yet defined is an error.
    pub(super) fn global(&self, name: &Rc<str>, pos: Pos) -> EvalResult {
        self.globals.get(name).cloned().ok_or_else(|| {
            EvalError::new(
                ErrorKind::TypeError,
                name,
                format!("`{name}` is declared but has no value yet"),
            )
            .at(pos)
        })
    }

    /// `and` (stops at the first falsey value) and `or` (at the first truthy one).
    pub(super) fn eval_and_or(&mut self, xs: &[Expr], and: bool, env: &Env<'_>) -> EvalResult {
        let mut last = if and { Value::Bool(true) } else { Value::Nil };
        for x in xs {
            last = self.eval(x, env)?;
            if last.truthy() != and {
                break;
            }
        }
        Ok(last)
    }

    /// `(tool/name arg)`.
    #[inline(never)]
    pub(super) fn eval_tool(
        &mut self,
        name: &str,
        args: &[Expr],
        pos: Pos,
        env: &Env<'_>,
    ) -> EvalResult {
        let args = self.eval_all(args, env)?;
        self.call_tool(name, args).map_err(|e| e.at(pos))
    }

    /// `(.method target args...)`: a call, so it ticks the step budget.
    #[inline(never)]
    pub(super) fn eval_method(
        &mut self,
        m: &str,
        args: &[Expr],
        pos: Pos,
        env: &Env<'_>,
    ) -> EvalResult {
        self.tick()?;
        let args = self.eval_all(args, env)?;
        crate::builtins::interop::call_method(self, m, args).map_err(|e| e.at(pos))
    }

    /// `recur`: its values wait in `recur_buf` while the `Recur` error unwinds to its loop or fn.
    #[inline(never)]
    pub(super) fn eval_recur(&mut self, args: &[Expr], env: &Env<'_>) -> EvalResult {
        let vals = self.eval_all(args, env)?;
        self.recur_buf = vals;
        Err(EvalError::Recur)
    }

    /// A `fn` literal: a closure with the values it captures, copied now.
    #[inline(never)]
    pub(super) fn make_fn(
        &mut self,
        template: &Rc<FnTemplate>,
        caps: &[Expr],
        env: &Env<'_>,
    ) -> EvalResult {
        let captures = self.eval_all(caps, env)?;
        Ok(Value::Fn(Rc::new(Lambda {
            template: template.clone(),
            captures,
        })))
    }
}

/// A leaf, or a field of a local: evaluated without a node of its own.
fn is_leaf(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::Local(_) | Expr::Move(_) | Expr::Capture(_) => true,
        Expr::Call(c) => super::prim::local_field(c).is_some(),
        _ => false,
    }
}
