//! The evaluator: walks analyzed `Expr` trees.
//!
//! Frames live on one value stack: a call reserves `frame_size` slots at `base`, locals are
//! `stack[base + slot]`, and closures copy what they capture when created (values are immutable,
//! so copying is sharing). `recur` is an internal error variant that only travels through tail
//! positions (the analyzer guarantees it) back to its loop or fn.
//!
//! Limits: every call and loop iteration ticks the step budget; the deadline is checked every
//! 1024 steps; nesting of calls is capped by `max_depth` (and `stacker` grows the Rust stack on
//! demand, so the cap, not the thread's stack size, is what stops deep recursion: `stack.rs`).
//!
//! Dispatch: leaves are read where `eval` is inlined; every other node goes to `eval_node`,
//! whose arms are out-of-line calls in tail position, so it keeps no frame (one register
//! saved). The environment is passed by reference: a 32-byte `Env` passed by value was
//! copied at call sites with 16-byte loads from the 8-byte stores that built it, and the CPU
//! time of the hot loops moved by up to 20 % with the compiler's choice of where to copy it
//! (BENCHMARKS.md, "The node dispatcher").

mod apply;
pub mod code;
mod frame;
pub mod fused;
pub mod lazy;
mod lazy_drop;
mod literal;
mod pattern;
pub mod prim;
pub mod quick;
pub mod reducer;
pub mod seq;
pub(crate) mod special;
mod stack;
mod stacked;

use crate::analyze::{Expr, FnTemplate};
use crate::api::ToolHost;
use crate::builtins::{BuiltinDef, Fast};
use crate::error::{EvalError, EvalResult, Limit};
use crate::value::Value;
use ptc_shared::Limits;
use stack::StackBounds;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

/// A closure: a compiled fn and the values it captured.
#[derive(Debug)]
pub struct Lambda {
    pub template: Rc<FnTemplate>,
    pub captures: Vec<Value>,
}

/// A closure may capture a closure that captures a closure... 100,000 deep (easy with `loop`):
/// the captures are dropped with a work list, as `Coll`'s contents are.
impl Drop for Lambda {
    fn drop(&mut self) {
        if self.captures.iter().all(Value::is_scalar) {
            return;
        }
        let captures = std::mem::take(&mut self.captures);
        crate::value::drop_nested(captures, |c, out| out.extend(c));
    }
}

/// The evaluation environment of the code being run: where its frame starts, its captures.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    pub base: usize,
    pub captures: &'a [Value],
    pub this: Option<&'a Rc<Lambda>>,
}

/// What a run printed, with caps on each entry and on the total.
#[derive(Debug, Default)]
pub struct Prints {
    pub lines: Vec<String>,
    pub bytes: u64,
    pub truncated: bool,
    /// Text of a `print` not yet ended by a newline.
    pub partial: String,
}

/// Interpreter state for one run.
pub struct Interp<'h> {
    pub(crate) stack: Vec<Value>,
    pub(crate) globals: HashMap<Rc<str>, Value>,
    pub(crate) context: Value,
    pub(crate) history: Vec<Value>,
    pub(crate) host: &'h mut dyn ToolHost,
    pub(crate) tool_names: &'h [String],
    pub(crate) limits: Limits,
    pub(crate) started: Instant,
    pub(crate) steps: u64,
    /// The step count past which [`Interp::tick`] leaves its one compare: the budget, or the
    /// last step of the current 1024-step block (the next one checks the deadline), whichever
    /// comes first. Kept so by `tick_slow`; a count that stays at or below it is in one block.
    pub(crate) tick_limit: u64,
    pub(crate) depth: u32,
    /// Where on the stack a node may run without growing it (`stack.rs`).
    stack_bounds: StackBounds,
    pub(crate) prints: Prints,
    recur_buf: Vec<Value>,
}

impl<'h> Interp<'h> {
    pub fn new(host: &'h mut dyn ToolHost, tool_names: &'h [String], limits: Limits) -> Interp<'h> {
        Interp {
            stack: Vec::with_capacity(256),
            globals: HashMap::new(),
            context: Value::Nil,
            history: Vec::new(),
            host,
            tool_names,
            limits,
            started: Instant::now(),
            steps: 0,
            tick_limit: limits.max_steps.min(1023),
            depth: 0,
            // Taken where a program runs (`run_program`); until then, every node takes them.
            stack_bounds: StackBounds::NONE,
            prints: Prints::default(),
            recur_buf: Vec::new(),
        }
    }

    /// Counts one evaluation step; checks the budget and, every 1024 steps, the deadline. One
    /// compare where it is inlined (every node and call); both checks in `tick_slow`.
    #[inline(always)]
    pub fn tick(&mut self) -> EvalResult<()> {
        self.steps += 1;
        if self.steps > self.tick_limit {
            return self.tick_slow();
        }
        Ok(())
    }

    /// The count passed `tick_limit`: past the budget, an error; at a multiple of 1024 (reached
    /// by one step, not jumped over by `tick_n`), the deadline's check; then the next limit.
    #[cold]
    #[inline(never)]
    fn tick_slow(&mut self) -> EvalResult<()> {
        if self.steps > self.limits.max_steps {
            return Err(EvalError::limit(
                Limit::Steps,
                format!(
                    "evaluation step budget of {} exhausted",
                    self.limits.max_steps
                ),
            ));
        }
        self.tick_limit = self.limits.max_steps.min(self.steps | 1023);
        if self.steps & 1023 == 0 {
            self.check_deadline()?;
        }
        Ok(())
    }

    /// Counts `n` steps at once (builtins that walk `n` elements).
    pub fn tick_n(&mut self, n: u64) -> EvalResult<()> {
        self.steps = self.steps.saturating_add(n.saturating_sub(1));
        self.tick()
    }

    pub fn check_deadline(&self) -> EvalResult<()> {
        let elapsed = self.started.elapsed();
        if elapsed.as_millis() >= u128::from(self.limits.timeout_ms) {
            return Err(EvalError::limit(
                Limit::Timeout,
                format!(
                    "execution exceeded the {} ms timeout",
                    self.limits.timeout_ms
                ),
            ));
        }
        Ok(())
    }

    /// Runs a top-level program (forms share one frame).
    pub(crate) fn run_program(&mut self, forms: &[Expr], frame_size: u32) -> EvalResult {
        // The thread that runs the program may not be the one that made this `Interp`.
        self.stack_bounds = StackBounds::here();
        let base = self.stack.len();
        self.stack.resize(base + frame_size as usize, Value::Nil);
        let env = Env {
            base,
            captures: &[],
            this: None,
        };
        let mut last = Value::Nil;
        for f in forms {
            last = self.eval(f, &env)?;
        }
        self.stack.truncate(base);
        Ok(last)
    }

    fn slot(&self, env: &Env<'_>, i: u32) -> Value {
        self.stack
            .get(env.base + i as usize)
            .cloned()
            .unwrap_or_default()
    }

    /// Moves a value out of a slot (its last use), leaving nil.
    fn take_slot(&mut self, env: &Env<'_>, i: u32) -> Value {
        self.stack
            .get_mut(env.base + i as usize)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Writes a copy of `x` over a slot. A map over a map (a `for` binding's next record) is
    /// written without the general drop and clone of a value: the old map's count is
    /// decremented and the new one's incremented where this is called.
    #[inline(always)]
    fn put_slot(&mut self, env: &Env<'_>, i: u32, x: &Value) {
        if let Some(s) = self.stack.get_mut(env.base + i as usize) {
            match (s, x) {
                // Written out: `clone_from` was a call out of line (27 instructions a record).
                (Value::Map(old), Value::Map(new)) => drop(std::mem::replace(old, new.clone())),
                (s, x) => *s = x.clone(),
            }
        }
    }

    /// Writes `v` over a slot. The old value, usually the nil of a fresh frame, is forgotten
    /// when it holds nothing, not passed to `Value`'s out-of-line drop.
    #[inline(always)]
    pub(crate) fn set_slot(&mut self, env: &Env<'_>, i: u32, v: Value) {
        if let Some(s) = self.stack.get_mut(env.base + i as usize) {
            forget_or_drop(std::mem::replace(s, v));
        }
    }

    /// Evaluates an operand: constants and locals, the usual leaves, are read without a full
    /// `eval` dispatch. (A capture here too measured +0.4 % on interp p5 for 0.02 % on p3; the
    /// capture that matters, `get`'s map, is read in place by `call_builtin`.) A field of a
    /// local here too, `(:name o)`, took 1.4 % fewer instructions on p4 but 8 % more CPU time:
    /// a fourth arm made this match an indirect jump, mispredicted on every operand (branch
    /// `s27-node`, BENCHMARKS.md).
    #[inline(always)]
    fn operand(&mut self, e: &Expr, env: &Env<'_>) -> EvalResult {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Local(i) => Ok(self.slot(env, *i)),
            Expr::Move(i) => Ok(self.take_slot(env, *i)),
            _ => self.eval(e, env),
        }
    }

    /// Evaluates one expression. Leaves are read where `eval` is called (it is inlined); every
    /// other node is first checked against the stack's bounds (`stack.rs`: one subtraction and
    /// one compare), then goes to [`Interp::eval_node`].
    #[inline]
    pub(crate) fn eval(&mut self, e: &Expr, env: &Env<'_>) -> EvalResult {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Local(i) => Ok(self.slot(env, *i)),
            Expr::Move(i) => Ok(self.take_slot(env, *i)),
            _ if !self.stack_bounds.hold() => self.eval_checked(e, env),
            _ => self.eval_node(e, env),
        }
    }

    /// A node that is not a leaf, on a stack `eval` has checked. Every arm is a call out of line
    /// in tail position, so this function keeps no frame of its own (an arm's code inline here
    /// made every node save six registers and reserve a frame for the largest arm).
    #[inline(never)]
    fn eval_node(&mut self, e: &Expr, env: &Env<'_>) -> EvalResult {
        self.eval_inner(e, env)
    }

    /// A node outside the stack's bounds: run with room, under the bounds of its stack.
    #[cold]
    #[inline(never)]
    fn eval_checked(&mut self, e: &Expr, env: &Env<'_>) -> EvalResult {
        self.with_room(|i| i.eval_inner(e, env))
    }

    #[inline(always)]
    fn eval_inner(&mut self, e: &Expr, env: &Env<'_>) -> EvalResult {
        match e {
            Expr::Const(_)
            | Expr::Local(_)
            | Expr::Move(_)
            | Expr::Capture(_)
            | Expr::SelfFn
            | Expr::Global(..)
            | Expr::Builtin(_)
            | Expr::Ctx(_)
            | Expr::Memory(_)
            | Expr::History(_) => self.eval_leaf(e, env),
            Expr::Vector(items) => self.eval_vector(items, env),
            Expr::Set(items) => self.eval_set(items, env),
            Expr::Map(pairs) => self.eval_map(pairs, env),
            Expr::Record(pairs, shape) => self.eval_record(pairs, shape.as_ref(), env),
            Expr::If(b) => self.eval_if(b, env),
            Expr::Do(xs) => self.eval_do(xs, env),
            Expr::Let(l) => self.eval_let(l, env),
            Expr::Loop(l) => self.eval_loop(l, env),
            Expr::Recur(args, _) => self.eval_recur(args, env),
            Expr::Fn(t, caps) => self.make_fn(t, caps, env),
            Expr::Prim(p) => self.prim_node(p, env),
            // A builtin named in the source: no callee value to build and drop.
            Expr::Call(c) if let Expr::Builtin(b) = &c.f => self.builtin_node(b, c, env),
            // So is a keyword: `(:k m)`, the commonest call on records.
            Expr::Call(c)
                if let Expr::Const(kv @ Value::Keyword(k)) = &c.f
                    && c.args.len() == 1 =>
            {
                self.keyword_node(kv, k, c, env)
            }
            Expr::Call(c) => self.call_node(c, env),
            Expr::Def(name, v) => self.eval_def(name, v, false, env),
            Expr::DefOnce(name, v) => self.eval_def(name, v, true, env),
            Expr::And(xs) => self.eval_and_or(xs, true, env),
            Expr::Or(xs) => self.eval_and_or(xs, false, env),
            Expr::Case(c) => self.eval_case(c, env),
            Expr::Try(t) => self.eval_try(t, env),
            Expr::Throw(x, pos) => self.eval_throw(x, *pos, env),
            Expr::Folded(f) => self.eval_folded(f),
            Expr::For(f) => self.eval_for(f, env),
            Expr::Tool(name, args, pos) => self.eval_tool(name, args, *pos, env),
            Expr::DynTool(args, pos) => self.eval_dyn_tool(args, *pos, env),
            Expr::Method(m, args, pos) => self.eval_method(m, args, *pos, env),
        }
    }

    /// A leaf reached through `eval_node` (`eval` reads the usual ones itself).
    #[inline(never)]
    fn eval_leaf(&mut self, e: &Expr, env: &Env<'_>) -> EvalResult {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Local(i) => Ok(self.slot(env, *i)),
            Expr::Move(i) => Ok(self.take_slot(env, *i)),
            Expr::Capture(i) => Ok(env.captures.get(*i as usize).cloned().unwrap_or_default()),
            Expr::SelfFn => Ok(env.this.map(|l| Value::Fn(l.clone())).unwrap_or_default()),
            Expr::Global(name, pos) => self.global(name, *pos),
            Expr::Builtin(b) => Ok(Value::Builtin(b)),
            Expr::Ctx(k) => Ok(self.context_get(k)),
            Expr::Memory(k) => Ok(self.globals.get(k).cloned().unwrap_or_default()),
            Expr::History(i) => Ok(self.history.get(*i).cloned().unwrap_or_default()),
            // `eval_inner` sends only the kinds above here.
            _ => Ok(Value::Nil),
        }
    }

    #[inline(never)]
    fn eval_do(&mut self, xs: &[Expr], env: &Env<'_>) -> EvalResult {
        let mut last = Value::Nil;
        for x in xs {
            last = self.eval(x, env)?;
        }
        Ok(last)
    }

    #[inline(never)]
    fn eval_let(&mut self, l: &crate::analyze::Let, env: &Env<'_>) -> EvalResult {
        for (p, init) in &l.bindings {
            let v = self.literal_item(init, env)?;
            self.bind(p, v, env)?;
        }
        self.eval(&l.body, env)
    }

    #[inline(never)]
    fn prim_node(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        self.prim_step(p, env)
    }

    /// A prim as a node evaluates it: its step, then the prim, errors at its position. Also
    /// where a prim is read without a node (`literal_item`, a `:when` test).
    #[inline(always)]
    pub(super) fn prim_step(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        self.charged(p.pos, |i| i.eval_prim(p, env))
    }

    /// One step charged, then `f`, its error placed at `pos` when it has no position yet: the
    /// part every call node shares.
    #[inline(always)]
    fn charged(
        &mut self,
        pos: crate::error::Pos,
        f: impl FnOnce(&mut Self) -> EvalResult,
    ) -> EvalResult {
        self.tick()?;
        f(self).map_err(|e| e.at(pos))
    }

    /// A call of a builtin named in the source.
    #[inline(never)]
    fn builtin_node(
        &mut self,
        b: &'static BuiltinDef,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        self.charged(c.pos, |i| i.call_builtin_inline(b, c, env))
    }

    /// A call of any other callee: its step, the callee's value, then the call (the callee's
    /// own errors keep their positions, so not [`Interp::charged`]).
    #[inline(never)]
    fn call_node(&mut self, c: &crate::analyze::Call, env: &Env<'_>) -> EvalResult {
        self.tick()?;
        let f = self.eval(&c.f, env)?;
        self.call(&f, c, env).map_err(|e| e.at(c.pos))
    }

    /// `(:k m)` written in the source: its step, then the lookup.
    #[inline(never)]
    fn keyword_node(
        &mut self,
        kv: &Value,
        k: &crate::value::Text,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        self.charged(c.pos, |i| i.call_keyword(kv, k, c, env))
    }

    /// A fn built at analysis: the steps of the builder calls it stands for, one at a time as
    /// the calls charged them, then the fn. (A step fails only with a limit, which carries no
    /// position: `EvalError::at` leaves it as it is.)
    #[inline(never)]
    fn eval_folded(&mut self, f: &crate::analyze::Folded) -> EvalResult {
        for _ in 0..f.calls {
            self.tick()?;
        }
        Ok(f.value.clone())
    }

    #[inline(never)]
    fn eval_throw(&mut self, x: &Expr, pos: crate::error::Pos, env: &Env<'_>) -> EvalResult {
        let v = self.eval(x, env)?;
        Err(special::throw_value(v, pos))
    }

    /// `if`: the usual test, a prim (`(= "gold" (:tier c))`), is evaluated without a node of
    /// its own. Out of line, so that `eval_node`'s own code stays as small as it was.
    #[inline(never)]
    fn eval_if(&mut self, b: &(Expr, Expr, Expr), env: &Env<'_>) -> EvalResult {
        let (t, then, els) = b;
        if special::truthy(self.literal_item(t, env)?) {
            self.eval(then, env)
        } else {
            match els {
                // A `when`'s nil: no out-of-line clone of the constant.
                Expr::Const(Value::Nil) => Ok(Value::Nil),
                els => self.eval(els, env),
            }
        }
    }

    /// A call of builtin `b` that is not a node of its own (`literal_item`'s): its step, then
    /// the call out of line, errors at the call's position. (`builtin_node` runs the call
    /// inline; inlined here too it took p3 1 % fewer instructions but 10-18 % more CPU: the
    /// results it moved were stored in halves and loaded whole, BENCHMARKS.md.)
    #[inline(always)]
    fn builtin_call(
        &mut self,
        b: &'static BuiltinDef,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        self.charged(c.pos, |i| i.call_builtin(b, c, env))
    }

    /// A call expression: a lambda's arguments are evaluated straight into its new frame; a
    /// keyword looks its one argument up; anything else gets an argument vector.
    fn call(&mut self, f: &Value, c: &crate::analyze::Call, env: &Env<'_>) -> EvalResult {
        match (f, c.args.as_slice()) {
            (Value::Fn(l), _) => {
                let base = self.push_args(&c.args, env)?;
                self.enter_lambda(l, base)
            }
            // `(:k m)`: looked up where this call found `:k` last time.
            (Value::Keyword(k), [arg]) => match self.eval(arg, env)? {
                Value::Map(m) => Ok(m
                    .get_keyword_hinted(k, &c.hint)
                    .cloned()
                    .unwrap_or_default()),
                m => Ok(crate::builtins::coll::get(&m, f).unwrap_or_default()),
            },
            // Hot builtins with a fast path take their arguments without an argument vector.
            (Value::Builtin(b), [x]) if matches!(b.fast, Fast::One(_) | Fast::Prim(_)) => {
                let x = self.eval(x, env)?;
                crate::builtins::call1(self, b, x)
            }
            (Value::Builtin(b), [x, y]) if matches!(b.fast, Fast::Two(_) | Fast::Prim(_)) => {
                let x = self.eval(x, env)?;
                let y = self.eval(y, env)?;
                crate::builtins::call2(self, b, x, y)
            }
            _ => {
                let args = self.eval_all(&c.args, env)?;
                self.apply_named(f, args, &c.name)
            }
        }
    }

    /// `(:k m)` written in the source: looked up where this call found `:k` last time.
    #[inline(always)]
    fn call_keyword(
        &mut self,
        kv: &Value,
        k: &crate::value::Text,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        let look = |m: &Value| {
            match m {
                Value::Map(map) => map.get_keyword_hinted(k, &c.hint).cloned(),
                other => crate::builtins::coll::get(other, kv),
            }
            .unwrap_or_default()
        };
        // A local or captured map is read where it is: no clone of it to make and drop.
        match c.args.first() {
            Some(Expr::Local(i)) => Ok(self
                .stack
                .get(env.base + *i as usize)
                .map(look)
                .unwrap_or_default()),
            Some(Expr::Capture(i)) => {
                Ok(env.captures.get(*i as usize).map(look).unwrap_or_default())
            }
            Some(arg) => Ok(look(&self.operand(arg, env)?)),
            None => Ok(Value::Nil),
        }
    }

    /// [`Interp::call_builtin`] out of line, for the calls that are not a node of their own.
    #[inline(never)]
    fn call_builtin(
        &mut self,
        b: &'static BuiltinDef,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        self.call_builtin_inline(b, c, env)
    }

    /// A call of a builtin: its fast path when the arity matches one, its arguments on the
    /// value stack when it takes them there, else an argument vector.
    #[inline(always)]
    fn call_builtin_inline(
        &mut self,
        b: &'static BuiltinDef,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        match (b.fast, c.args.as_slice()) {
            (Fast::One(_) | Fast::Prim(_), [x]) => {
                let x = self.operand(x, env)?;
                crate::builtins::call1(self, b, x)
            }
            // A captured first operand (`(get by-id k)`) is read where it is: no clone of it to
            // make and drop. Captures cannot change, so reading it after `y` reads the same.
            (Fast::Two(g), [Expr::Capture(i), y]) => {
                let y = self.operand(y, env)?;
                let x = env.captures.get(*i as usize).unwrap_or(&Value::Nil);
                match g(x, &y) {
                    Some(r) => r,
                    None => crate::builtins::call(self, b, vec![x.clone(), y]),
                }
            }
            (Fast::Two(_) | Fast::Prim(_), [x, y]) => {
                let x = self.operand(x, env)?;
                let y = self.operand(y, env)?;
                crate::builtins::call2(self, b, x, y)
            }
            (Fast::Stacked(g), args) => self.call_stacked(b, g, args, env),
            _ => self.call_with_vector(b, c, env),
        }
    }

    /// A builtin call with an argument vector, or a fused one (`(reduce g init (keep f xs))`,
    /// `(into to (map f xs))`: `fused.rs`), out of the node dispatcher's inlined code. (What
    /// first looked like the fused check's cost there, p4 +2 % instructions, was the fused
    /// node's own inlined operand reads.)
    #[inline(never)]
    fn call_with_vector(
        &mut self,
        b: &'static BuiltinDef,
        c: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        if std::ptr::eq(b, &fused::KEEP_REDUCE) || std::ptr::eq(b, &fused::INTO_MAP) {
            return self.fused_call(b, c, env);
        }
        let args = self.eval_all(&c.args, env)?;
        crate::builtins::call(self, b, args)
    }

    fn eval_all(&mut self, xs: &[Expr], env: &Env<'_>) -> EvalResult<Vec<Value>> {
        let mut out = Vec::with_capacity(xs.len());
        for x in xs {
            out.push(self.operand(x, env)?);
        }
        Ok(out)
    }

    fn context_get(&self, k: &str) -> Value {
        match &self.context {
            Value::Map(m) => m
                .get(&Value::str(k))
                .or_else(|| m.get(&Value::kw(k)))
                .cloned()
                .unwrap_or_default(),
            _ => Value::Nil,
        }
    }

    fn eval_loop(&mut self, l: &crate::analyze::Loop, env: &Env<'_>) -> EvalResult {
        // Bindings are sequential, as in let: later inits see earlier names.
        for (slot, init) in l.slots.iter().zip(&l.inits) {
            let v = self.eval(init, env)?;
            self.set_slot(env, *slot, v);
            if let Some((p, _)) = l.patterns.iter().find(|(_, raw)| raw == slot) {
                let v = self.take_slot(env, *slot);
                self.bind(p, v, env)?;
            }
        }
        loop {
            match self.eval(&l.body, env) {
                Err(EvalError::Recur) => {
                    self.tick()?;
                    let vals = std::mem::take(&mut self.recur_buf);
                    for (slot, v) in l.slots.iter().zip(vals) {
                        self.set_slot(env, *slot, v);
                    }
                    for (p, raw) in &l.patterns {
                        let v = self.take_slot(env, *raw);
                        self.bind(p, v, env)?;
                    }
                }
                other => return other,
            }
        }
    }
}

/// Lets go of `v`: forgotten when it holds nothing (one tag test), else `Value`'s out-of-line
/// drop. For a binding's old value, nil (a fresh frame's) far more often than anything else;
/// where texts and maps are usual too (a builtin's consumed arguments), `builtins::release`
/// drops those inline as well.
/// A returning call's frame is popped this way, slot by slot (`truncate` drops every slot out of
/// line): 0.5-1.6 % fewer instructions, CPU level or better. (Before `Env` went by reference the
/// same change measured 4-5 % more CPU: BENCHMARKS.md, branches `s29-call` and `s31-node`.)
#[inline(always)]
fn forget_or_drop(v: Value) {
    if v.holds_nothing() {
        std::mem::forget(v);
    } else {
        drop(v);
    }
}

impl std::fmt::Debug for Interp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interp")
            .field("steps", &self.steps)
            .field("depth", &self.depth)
            .finish()
    }
}

/// Test support shared by the interpreter's unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::analyze::{Expr, FnTemplate, analyze_program};
    use crate::api::{ToolFailure, ToolHost};
    use std::rc::Rc;

    /// The template of the first form of `src` when it is a fn, or a `let` whose body is one:
    /// what the analyzer built for it (its quick form, its quick reducer).
    pub fn first_fn(src: &str) -> Option<Rc<FnTemplate>> {
        let forms = crate::reader::read_all(src, 1 << 20, 256).ok()?;
        let forms = analyze_program(&forms, [], &[]).ok()?.forms;
        let f = match forms.first() {
            Some(Expr::Let(l)) => Some(&l.body),
            other => other,
        };
        match f {
            Some(Expr::Fn(t, _)) => Some(t.clone()),
            _ => None,
        }
    }

    /// A host with no tools.
    pub struct NoTools;

    impl ToolHost for NoTools {
        fn call(
            &mut self,
            _: &str,
            _: ptc_shared::Value,
        ) -> Result<ptc_shared::Value, ToolFailure> {
            Err(ToolFailure::NotFound)
        }
    }
}
