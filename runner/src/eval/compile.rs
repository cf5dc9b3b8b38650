//! Compiles a fn arity's body, once when its template is built, into a tree of closures with
//! their operands resolved: a node of a kind compiled here runs its own code, with no dispatch
//! on the node's kind and no nesting count; every other kind is walked (`Interp::eval`) from a
//! copy of its expression the closure owns. `enter_lambda` runs the compiled body.
//!
//! Invariants:
//! - Observable behaviour is the walker's: a compiled node charges the same steps at the same
//!   points (a call's or a prim's step before its operands), evaluates its operands in the same
//!   order, and puts the same position on an error. Calls share their code with the walker
//!   (`eval::call`, over [`Operand`]), prims `eval_prim`, bindings `bind`.
//! - Stack: only the first [`MAX_LEVEL`] levels of a body are compiled; deeper nodes are walked
//!   and counted by the walker's nesting check. A body is entered through `enter_lambda`, which
//!   makes sure of its red zone, so those few closure frames need no check of their own.
//! - Off unless [`set_enabled`] turns it on, for the templates built after it on this thread:
//!   the tests run every program both ways and compare everything a run reports.

use super::call::{Operand, Place, keyword_of};
use super::prim::Shape;
use super::{Env, Interp};
use crate::analyze::{Arity, Call, Expr, Pattern, PrimCall};
use crate::builtins::BuiltinDef;
use crate::error::{EvalResult, Pos};
use crate::value::{KeyHint, Text, Value};
use std::cell::Cell;

/// One compiled node.
/// The environment comes by reference: a dynamic call copies an `Env` passed by value at every
/// level, which measured slower than the walker's dispatch; a reference is passed on as is.
type Run = dyn Fn(&mut Interp<'_>, &Env<'_>) -> EvalResult;

/// Static levels of a body that are compiled; deeper nodes are walked. A few closure frames
/// fit in any red zone that the walker's `NEST_CHECK` levels fit in.
const MAX_LEVEL: u32 = 8;

/// A compiled arity body.
pub struct Code(Box<Run>);

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Code")
    }
}

impl Code {
    /// `env` by reference: a copy made here is read back with 16-byte loads from the
    /// 8-byte stores that just built it (a store-forwarding stall on every call).
    #[inline(always)]
    pub(crate) fn run(&self, interp: &mut Interp<'_>, env: &Env<'_>) -> EvalResult {
        (self.0)(interp, env)
    }
}

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(false) };
}

/// Whether fns analysed after this on this thread are compiled or only walked (the default:
/// compiled bodies took fewer instructions but more CPU time, BENCHMARKS.md, branch `s28-clo`).
/// The switch the tests compare the two with, and `eval_repeat`'s `PTC_COMPILE`.
pub fn set_enabled(on: bool) {
    ENABLED.set(on);
}

/// The compiled body of `a`, unless compilation is switched off.
pub(crate) fn arity(a: &Arity) -> Option<Code> {
    ENABLED.get().then(|| Code(node(&a.body, 0)))
}

/// A compiled child node: the code of a node, or a leaf read in place as `Interp::operand`
/// reads it (no call). Code is told apart by one compare; the leaves' own dispatch is a
/// short chain (four arms in one match measured a jump table, slower).
enum Child {
    Code(Box<Run>),
    Leaf(Leaf),
}

enum Leaf {
    Const(Value),
    Local(u32),
    Move(u32),
}

impl Child {
    #[inline(always)]
    fn run(&self, it: &mut Interp<'_>, env: &Env<'_>) -> EvalResult {
        match self {
            Child::Code(c) => c(it, env),
            Child::Leaf(Leaf::Const(v)) => Ok(v.clone()),
            Child::Leaf(Leaf::Local(i)) => Ok(it.slot(*env, *i)),
            Child::Leaf(Leaf::Move(i)) => Ok(it.take_slot(*env, *i)),
        }
    }
}

/// The child node `e` at `level`.
fn child(e: &Expr, level: u32) -> Child {
    match e {
        Expr::Const(v) => Child::Leaf(Leaf::Const(v.clone())),
        Expr::Local(i) => Child::Leaf(Leaf::Local(*i)),
        Expr::Move(i) => Child::Leaf(Leaf::Move(*i)),
        e => Child::Code(node(e, level)),
    }
}

/// A compiled operand, and where its value lies when it is only read there.
struct Arg {
    code: Child,
    place: Place,
}

impl Operand for Arg {
    #[inline(always)]
    fn value(&self, interp: &mut Interp<'_>, env: Env<'_>) -> EvalResult {
        self.code.run(interp, &env)
    }

    #[inline(always)]
    fn place(&self) -> Place {
        match self.place {
            Place::Local(i) => Place::Local(i),
            Place::Capture(i) => Place::Capture(i),
            Place::Elsewhere => Place::Elsewhere,
        }
    }
}

fn node(e: &Expr, level: u32) -> Box<Run> {
    if level >= MAX_LEVEL {
        return walked(e);
    }
    let next = level + 1;
    match e {
        Expr::Const(v) => {
            let v = v.clone();
            Box::new(move |_, _| Ok(v.clone()))
        }
        Expr::Local(i) => {
            let i = *i;
            Box::new(move |it, env| Ok(it.slot(*env, i)))
        }
        Expr::Move(i) => {
            let i = *i;
            Box::new(move |it, env| Ok(it.take_slot(*env, i)))
        }
        Expr::Capture(i) => {
            let i = *i as usize;
            Box::new(move |_, env| Ok(env.captures().get(i).cloned().unwrap_or_default()))
        }
        Expr::If(b) => {
            let (t, then, els) = (child(&b.0, next), child(&b.1, next), child(&b.2, next));
            Box::new(move |it, env| {
                if t.run(it, env)?.truthy() {
                    then.run(it, env)
                } else {
                    els.run(it, env)
                }
            })
        }
        Expr::Do(xs) => do_node(xs, next),
        Expr::Let(l) => {
            let bindings: Vec<(Pattern, Child)> = l
                .bindings
                .iter()
                .map(|(p, init)| (p.clone(), child(init, next)))
                .collect();
            let body = child(&l.body, next);
            Box::new(move |it, env| {
                for (p, init) in &bindings {
                    let v = init.run(it, env)?;
                    it.bind(p, v, *env)?;
                }
                body.run(it, env)
            })
        }
        Expr::Prim(p) => prim(p),
        Expr::Call(c) => call(c, next),
        e => walked(e),
    }
}

/// A node of a kind not compiled: walked from the closure's own copy.
fn walked(e: &Expr) -> Box<Run> {
    let e = e.clone();
    Box::new(move |it, env| it.eval(&e, *env))
}

fn do_node(xs: &[Expr], next: u32) -> Box<Run> {
    let xs: Vec<Child> = xs.iter().map(|x| child(x, next)).collect();
    Box::new(move |it, env| {
        let mut last = Value::Nil;
        for x in &xs {
            last = x.run(it, env)?;
        }
        Ok(last)
    })
}

/// A prim: its step, then the reading its shape, fixed at analysis, calls for (`eval_prim`'s
/// choice, made here once).
fn prim(p: &PrimCall) -> Box<Run> {
    let p = p.clone();
    match p.shape {
        Shape::FieldConst | Shape::ConstField => Box::new(move |it, env| {
            it.tick()?;
            it.prim_field(&p, *env).map_err(|e| e.at(p.pos))
        }),
        Shape::SlotConst => Box::new(move |it, env| {
            it.tick()?;
            it.prim_slot_const(&p, *env).map_err(|e| e.at(p.pos))
        }),
        _ => Box::new(move |it, env| {
            it.tick()?;
            it.prim_other(&p, *env).map_err(|e| e.at(p.pos))
        }),
    }
}

fn args(xs: &[Expr], next: u32) -> Vec<Arg> {
    xs.iter()
        .map(|x| Arg {
            code: child(x, next),
            place: x.place(),
        })
        .collect()
}

/// A call node: its step, then the callee's call (`eval::call`), errors at its position.
fn call(c: &Call, next: u32) -> Box<Run> {
    let pos = c.pos;
    match &c.f {
        Expr::Builtin(b) => builtin_call(b, args(&c.args, next), pos),
        Expr::Const(kv @ Value::Keyword(k)) if let [arg] = c.args.as_slice() => {
            keyword_call(kv.clone(), k.clone(), arg, next, pos)
        }
        f => {
            let f = child(f, next);
            let args = args(&c.args, next);
            let hint = KeyHint::default();
            let name = c.name.clone();
            Box::new(move |it, env| {
                it.tick()?;
                let r = match f.run(it, env) {
                    Ok(f) => it.call(&f, &args, &hint, &name, *env),
                    Err(e) => Err(e),
                };
                r.map_err(|e| e.at(pos))
            })
        }
    }
}

fn builtin_call(b: &'static BuiltinDef, args: Vec<Arg>, pos: Pos) -> Box<Run> {
    Box::new(move |it, env| {
        it.tick()?;
        it.call_builtin(b, &args, *env).map_err(|e| e.at(pos))
    })
}

/// `(:k m)`: a local or captured map read where it lies (`call_keyword`'s choice, made here
/// once), any other operand evaluated (its error at the call's position).
fn keyword_call(kv: Value, k: Text, arg: &Expr, next: u32, pos: Pos) -> Box<Run> {
    let hint = KeyHint::default();
    match *arg {
        Expr::Local(i) => {
            let i = i as usize;
            Box::new(move |it, env| {
                it.tick()?;
                Ok(it
                    .stack
                    .get(env.base + i)
                    .map(|m| keyword_of(m, &kv, &k, &hint))
                    .unwrap_or_default())
            })
        }
        Expr::Capture(i) => {
            let i = i as usize;
            Box::new(move |it, env| {
                it.tick()?;
                Ok(env
                    .captures()
                    .get(i)
                    .map(|m| keyword_of(m, &kv, &k, &hint))
                    .unwrap_or_default())
            })
        }
        _ => {
            let a = child(arg, next);
            Box::new(move |it, env| {
                it.tick()?;
                let m = a.run(it, env).map_err(|e| e.at(pos))?;
                Ok(keyword_of(&m, &kv, &k, &hint))
            })
        }
    }
}
