//! Register code for the fns LLM pipelines hand to `keep`, `map`, `filter` and friends: a
//! one-parameter fn whose body only reads and compares (`(fn [o] (let [c (get by-id
//! (:customer_id o))] (when (= "gold" (:tier c)) {:customer (:name c) :total (:total o)})))`) is
//! compiled once, at analysis, into a flat list of register ops, and the builtin's loop runs that
//! list with the element *borrowed*: the element, the captured maps and the fields read from
//! them stay where they are, so no count is taken and given back for any of them. Only the
//! answer is owned (a field's value cloned into a new record, say). Entering the fn the general
//! way pays for a frame, a node per form, and a clone and a drop of each value it names.
//!
//! The code answers only where the answer is the general path's with no error possible, as the
//! quick fns do (`quick.rs`): each op declines (the run answers `None`) on anything but its
//! usual operands (a field of what is not a map or nil, `get` on what is not a map or nil, a
//! prim that `Prim::apply` does not answer with a value, a builtin's fast entry that answers
//! nothing or an error), and the caller then enters the fn as
//! usual, which evaluates it from the start and meets the error, the limit or the odd operand
//! itself. The ops are pure (no tool, no output, no binding outside the fn, no allocation but
//! the answer's), so a declined run leaves nothing behind. Invariants:
//! - **Same answers.** Every op gives what its node gives: a field is `call_keyword`'s read, a
//!   `get` is `coll::get`'s for a map (`get_lenient`) or nil, a prim is `Prim::apply`'s value,
//!   another builtin's call is its `Fast::One`/`Fast::Two` answer (what `call1`/`call2` take
//!   first; those entries see no interpreter, so they are pure), `if` tests truthiness, a record
//!   or vector literal is built as `literal.rs` builds it.
//! - **Same steps.** Each op charges what its node charges (a keyword call, a builtin call and a
//!   prim one step each; `let`, `if`, literals and leaves none). The total is charged at the end
//!   by the caller, only if it passes neither the budget nor a deadline check
//!   (`Interp::quick_steps`); no program can tell when within a pure body a step was charged.
//! - **Registers are the fn's slots.** A `let` binds the slot the analyzer gave it, the
//!   parameter is its slot, temporaries come after the frame: ops run in the walker's order, so
//!   a slot the analyzer reuses holds what it would hold in the frame.
//!
//! `tests/fn_code.rs` runs each fn this way and through the walker and compares answers, errors
//! and steps, and the step and depth limits at their boundaries.

use super::prim::{Fixed, Prim};
use crate::analyze::{Expr, FnTemplate, Pattern};
use crate::builtins::{self, BuiltinDef, Fast, Lookup};
use crate::error::EvalResult;
use crate::pvec::PVec;
use crate::value::{Coll, KeyHint, MapImpl, Record, Shape, Text, Value};
use std::rc::Rc;

/// Registers at most (a power of two: a register number is masked into range): the fn's frame
/// and its temporaries. A body that needs more stays general.
const MAX_REGS: usize = 16;
const MASK: usize = MAX_REGS - 1;

/// What an empty register reads.
const NIL: &Value = &Value::Nil;

/// Where an op reads an operand.
#[derive(Debug, Clone, Copy)]
enum Src {
    Reg(u8),
    Capture(u32),
    Const(u16),
}

/// One op. Operand lists (a literal's values) are ranges of `Code::args`; keys and shapes are
/// indexes of `Code::keys` and `Code::shapes`, which keeps an op small.
#[derive(Debug)]
enum Op {
    /// `r[dst] = src` (a leaf bound or answered): no step.
    Copy {
        dst: u8,
        src: Src,
    },
    /// `r[dst] = (:key src)`: one step.
    Field {
        dst: u8,
        src: Src,
        key: u16,
    },
    /// `Field` of a register, the usual operand (the element, a `let`'s map).
    FieldR {
        dst: u8,
        src: u8,
        key: u16,
    },
    /// `r[dst] = (get map key)`: one step.
    Get {
        dst: u8,
        map: Src,
        key: Src,
    },
    /// `Get` of a captured map by a register's key (`(get by-id (:customer_id o))`).
    GetCapR {
        dst: u8,
        map: u32,
        key: u8,
    },
    /// `r[dst] = (f x)`, a builtin's one-argument fast entry (`Fast::One`): one step.
    Call1 {
        dst: u8,
        f: fn(&Value) -> Option<EvalResult>,
        x: Src,
    },
    /// `r[dst] = (f x y)`, a builtin's two-argument fast entry (`Fast::Two`): one step.
    Call2 {
        dst: u8,
        f: fn(&Value, &Value) -> Option<EvalResult>,
        x: Src,
        y: Src,
    },
    /// `r[dst] = (op x y)`: one step.
    Prim {
        dst: u8,
        op: Prim,
        x: Src,
        y: Src,
    },
    /// Unless `(op x y)` is truthy, go to `to`: the prim's step. `fixed`: the constant
    /// operand decoded (an index of `Code::fixed`), where it has a decoded form.
    Test {
        op: Prim,
        x: Src,
        y: Src,
        to: u16,
        fixed: Option<u16>,
    },
    /// Unless `(op (:key r[src]) c)` (in the source's order) is truthy, go to `to`: the field's
    /// step and the prim's, the constant decoded (`fixed` indexes `Code::fixed`).
    TestField {
        src: u8,
        key: u16,
        op: Prim,
        fixed: u16,
        to: u16,
    },
    /// Unless `r[src]` is truthy, go to `to`.
    Unless {
        src: u8,
        to: u16,
    },
    /// If `r[src]` is truthy, go to `to` (an `or` answered).
    When {
        src: u8,
        to: u16,
    },
    Jump {
        to: u16,
    },
    /// `r[dst]` = a record of a shape with the values at `args`.
    Record {
        dst: u8,
        shape: u16,
        args: (u16, u16),
    },
    /// `r[dst]` = a vector of the values at `args`.
    Vector {
        dst: u8,
        args: (u16, u16),
    },
    /// The answer, `r[src]`.
    Return {
        src: u8,
    },
}

/// A fn body as register ops; see the module header.
#[derive(Debug)]
pub struct Code {
    ops: Box<[Op]>,
    consts: Box<[Value]>,
    args: Box<[Src]>,
    /// The keyword of each field read, with the read's own hint.
    keys: Box<[(Text, KeyHint)]>,
    shapes: Box<[Rc<Shape>]>,
    /// The decoded constants of tests, each with whether the other operand comes first and
    /// the constant itself (for what the decoded form does not answer).
    fixed: Box<[(Fixed, bool, u16)]>,
    /// The fn's parameter slot.
    param: u8,
}

/// A register while the code runs: borrowed from the element, a capture, a constant or a field
/// of one of them, or owned (an answer built here, or a field of one).
enum Reg<'a> {
    Ref(&'a Value),
    Own(Value),
}

impl Reg<'_> {
    fn get(&self) -> &Value {
        match self {
            Reg::Ref(v) => v,
            Reg::Own(v) => v,
        }
    }
}

type Regs<'a> = [Reg<'a>; MAX_REGS];

impl Code {
    /// The code of a fn, if it has one: one arity of one plain parameter, and a body of the
    /// forms [`Compiler`] takes, fitting in [`MAX_REGS`] registers.
    pub fn of(t: &FnTemplate) -> Option<Code> {
        let [a] = t.arities.as_slice() else {
            return None;
        };
        if a.variadic || a.required != 1 || !a.patterns.is_empty() {
            return None;
        }
        let param = slot(*a.raw.first()?)?;
        let frame = usize::try_from(a.frame_size).ok()?.max(1);
        let mut c = Compiler {
            ops: Vec::new(),
            consts: Vec::new(),
            args: Vec::new(),
            keys: Vec::new(),
            shapes: Vec::new(),
            fixed: Vec::new(),
            next: frame,
        };
        let dst = c.temp()?;
        c.value(&a.body, dst)?;
        c.ops.push(Op::Return { src: dst });
        Some(Code {
            ops: c.ops.into(),
            consts: c.consts.into(),
            args: c.args.into(),
            keys: c.keys.into(),
            shapes: c.shapes.into(),
            fixed: c.fixed.into(),
            param,
        })
    }

    /// The answer for argument `x` and the steps it charges, or `None` where the general path
    /// must answer (see the module header).
    pub fn run<'a>(&'a self, captures: &'a [Value], x: &'a Value) -> Option<(Value, u64)> {
        let mut regs: Regs<'a> = std::array::from_fn(|_| Reg::Ref(NIL));
        regs[usize::from(self.param) & MASK] = Reg::Ref(x);
        let at = Operands {
            code: self,
            captures,
        };
        let (mut steps, mut owned, mut pc) = (0u64, false, 0usize);
        // Each arm writes its register itself: a result moved out of the match as a whole was
        // stored in halves and loaded whole, a stall on every op.
        let answer = loop {
            let Some(op) = self.ops.get(pc) else {
                break None;
            };
            pc += 1;
            match op {
                Op::Copy { dst, src } => {
                    let v = at.borrow(&regs, *src);
                    owned |= matches!(v, Reg::Own(_));
                    regs[usize::from(*dst) & MASK] = v;
                }
                Op::Field { dst, src, key } => {
                    steps += 1;
                    let Some((k, hint)) = self.keys.get(usize::from(*key)) else {
                        break None;
                    };
                    let Some(v) = at.lookup(&regs, *src, |m| m.get_keyword_hinted(k, hint)) else {
                        break None;
                    };
                    owned |= matches!(v, Reg::Own(_));
                    regs[usize::from(*dst) & MASK] = v;
                }
                Op::FieldR { dst, src, key } => {
                    steps += 1;
                    let Some((k, hint)) = self.keys.get(usize::from(*key)) else {
                        break None;
                    };
                    let v = match &regs[usize::from(*src) & MASK] {
                        Reg::Ref(m) => {
                            let m: &'a Value = m;
                            match m {
                                Value::Map(map) => {
                                    Reg::Ref(map.get_keyword_hinted(k, hint).unwrap_or(NIL))
                                }
                                Value::Nil => Reg::Ref(NIL),
                                _ => break None,
                            }
                        }
                        Reg::Own(Value::Map(map)) => {
                            owned = true;
                            Reg::Own(map.get_keyword_hinted(k, hint).cloned().unwrap_or_default())
                        }
                        Reg::Own(Value::Nil) => Reg::Ref(NIL),
                        Reg::Own(_) => break None,
                    };
                    regs[usize::from(*dst) & MASK] = v;
                }
                Op::GetCapR { dst, map, key } => {
                    steps += 1;
                    let v = match at.capture(*map) {
                        Value::Map(m) => Reg::Ref(
                            m.get_lenient(regs[usize::from(*key) & MASK].get())
                                .unwrap_or(NIL),
                        ),
                        Value::Nil => Reg::Ref(NIL),
                        _ => break None,
                    };
                    regs[usize::from(*dst) & MASK] = v;
                }
                Op::TestField {
                    src,
                    key,
                    op,
                    fixed,
                    to,
                } => {
                    steps += 2;
                    match at.test_field(&regs, *src, *key, *op, *fixed) {
                        Some(true) => {}
                        Some(false) => pc = usize::from(*to),
                        None => break None,
                    }
                }
                Op::Get { dst, map, key } => {
                    steps += 1;
                    let k = at.read(&regs, *key);
                    let Some(v) = at.lookup(&regs, *map, |m| m.get_lenient(k)) else {
                        break None;
                    };
                    owned |= matches!(v, Reg::Own(_));
                    regs[usize::from(*dst) & MASK] = v;
                }
                Op::Call1 { dst, f, x } => {
                    steps += 1;
                    let Some(Ok(v)) = f(at.read(&regs, *x)) else {
                        break None;
                    };
                    owned = true;
                    regs[usize::from(*dst) & MASK] = Reg::Own(v);
                }
                Op::Call2 { dst, f, x, y } => {
                    steps += 1;
                    let Some(Ok(v)) = f(at.read(&regs, *x), at.read(&regs, *y)) else {
                        break None;
                    };
                    owned = true;
                    regs[usize::from(*dst) & MASK] = Reg::Own(v);
                }
                Op::Prim { dst, op, x, y } => {
                    steps += 1;
                    let Some(Ok(v)) = op.apply(at.read(&regs, *x), at.read(&regs, *y)) else {
                        break None;
                    };
                    owned = true;
                    regs[usize::from(*dst) & MASK] = Reg::Own(v);
                }
                Op::Test {
                    op,
                    x,
                    y,
                    to,
                    fixed,
                } => {
                    steps += 1;
                    if let Some(b) = at.fixed(&regs, *op, *x, *y, *fixed) {
                        if !b {
                            pc = usize::from(*to);
                        }
                        continue;
                    }
                    match op.apply(at.read(&regs, *x), at.read(&regs, *y)) {
                        Some(Ok(v)) if truthy(&v) => {}
                        Some(Ok(_)) => pc = usize::from(*to),
                        _ => break None,
                    }
                }
                Op::Unless { src, to } => {
                    if !truthy(regs[usize::from(*src) & MASK].get()) {
                        pc = usize::from(*to);
                    }
                }
                Op::When { src, to } => {
                    if truthy(regs[usize::from(*src) & MASK].get()) {
                        pc = usize::from(*to);
                    }
                }
                Op::Jump { to } => pc = usize::from(*to),
                Op::Record { dst, shape, args } => {
                    let Some(v) = at.record(&regs, *shape, *args) else {
                        break None;
                    };
                    owned = true;
                    regs[usize::from(*dst) & MASK] = Reg::Own(v);
                }
                Op::Vector { dst, args } => {
                    let Some(v) = at.vector(&regs, *args) else {
                        break None;
                    };
                    owned = true;
                    regs[usize::from(*dst) & MASK] = Reg::Own(v);
                }
                Op::Return { src } => {
                    let r = std::mem::replace(&mut regs[usize::from(*src) & MASK], Reg::Ref(NIL));
                    break Some(match r {
                        Reg::Ref(v) => v.clone(),
                        Reg::Own(v) => v,
                    });
                }
            }
        };
        // Registers that only ever borrowed hold nothing to give back; owned ones are dropped
        // where they are (not moved out to a drop of the whole array).
        if owned {
            for r in regs.iter_mut() {
                if matches!(r, Reg::Own(_)) {
                    *r = Reg::Ref(NIL);
                }
            }
        }
        std::mem::forget(regs);
        answer.map(|v| (v, steps))
    }
}

/// Where the ops' operands live beside the registers.
struct Operands<'a> {
    code: &'a Code,
    captures: &'a [Value],
}

impl<'a> Operands<'a> {
    /// An operand, read where it is.
    fn read<'r>(&'r self, regs: &'r Regs<'a>, s: Src) -> &'r Value {
        match s {
            Src::Reg(r) => regs[usize::from(r) & MASK].get(),
            Src::Capture(i) => self.capture(i),
            Src::Const(i) => self.constant(i),
        }
    }

    fn capture(&self, i: u32) -> &'a Value {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.captures.get(i))
            .unwrap_or(NIL)
    }

    fn constant(&self, i: u16) -> &'a Value {
        self.code.consts.get(usize::from(i)).unwrap_or(NIL)
    }

    /// A test against a decoded constant, answered without `Prim::apply`'s dispatch where the
    /// other operand is of the constant's kind (`Fixed::answer`, exactly `apply`'s answer).
    #[inline(always)]
    fn fixed(&self, regs: &Regs<'a>, op: Prim, x: Src, y: Src, at: Option<u16>) -> Option<bool> {
        let (fixed, other_first, _) = self.code.fixed.get(usize::from(at?))?;
        let other = if *other_first { x } else { y };
        fixed.answer(op, self.read(regs, other), *other_first)
    }

    /// `(op (:key r[src]) c)` for `TestField`: the field read in place, compared by the
    /// decoded constant, or by `Prim::apply` where that does not answer; `None` declines.
    #[inline(always)]
    fn test_field(&self, regs: &Regs<'a>, src: u8, key: u16, op: Prim, at: u16) -> Option<bool> {
        let (k, hint) = self.code.keys.get(usize::from(key))?;
        let (fixed, field_first, c) = self.code.fixed.get(usize::from(at))?;
        let field = match regs[usize::from(src) & MASK].get() {
            Value::Map(m) => m.get_keyword_hinted(k, hint).unwrap_or(NIL),
            Value::Nil => NIL,
            _ => return None,
        };
        if let Some(b) = fixed.answer(op, field, *field_first) {
            return Some(b);
        }
        let c = self.constant(*c);
        let (x, y) = if *field_first { (field, c) } else { (c, field) };
        match op.apply(x, y)? {
            Ok(v) => Some(truthy(&v)),
            Err(_) => None,
        }
    }

    /// An operand as a register's value: borrowed where it lives as long as the run.
    fn borrow(&self, regs: &Regs<'a>, s: Src) -> Reg<'a> {
        match s {
            Src::Reg(r) => match &regs[usize::from(r) & MASK] {
                Reg::Ref(v) => Reg::Ref(v),
                Reg::Own(v) => Reg::Own(v.clone()),
            },
            Src::Capture(i) => Reg::Ref(self.capture(i)),
            Src::Const(i) => Reg::Ref(self.constant(i)),
        }
    }

    /// A map's entry for a key (nil's is nil), borrowed when the map is; `None` declines.
    fn lookup(
        &self,
        regs: &Regs<'a>,
        s: Src,
        f: impl Fn(&MapImpl) -> Option<&Value>,
    ) -> Option<Reg<'a>> {
        let m = match s {
            Src::Reg(r) => match &regs[usize::from(r) & MASK] {
                Reg::Ref(m) => m,
                Reg::Own(Value::Map(map)) => {
                    return Some(Reg::Own(f(map).cloned().unwrap_or_default()));
                }
                Reg::Own(Value::Nil) => NIL,
                Reg::Own(_) => return None,
            },
            Src::Capture(i) => self.capture(i),
            Src::Const(i) => self.constant(i),
        };
        match m {
            Value::Map(map) => Some(Reg::Ref(f(map).unwrap_or(NIL))),
            Value::Nil => Some(Reg::Ref(NIL)),
            _ => None,
        }
    }

    /// The values at `args`, cloned.
    fn values(&self, regs: &Regs<'a>, args: (u16, u16)) -> Option<Vec<Value>> {
        let srcs = self
            .code
            .args
            .get(usize::from(args.0)..usize::from(args.1))?;
        Some(srcs.iter().map(|s| self.read(regs, *s).clone()).collect())
    }

    /// A record literal, built as `Interp::eval_record` builds one.
    fn record(&self, regs: &Regs<'a>, shape: u16, args: (u16, u16)) -> Option<Value> {
        let shape = self.code.shapes.get(usize::from(shape))?;
        let srcs = self
            .code
            .args
            .get(usize::from(args.0)..usize::from(args.1))?;
        let mut coll = Coll::new(MapImpl::Record(Record::empty(shape.clone())));
        if let MapImpl::Record(r) = coll.make_mut() {
            for s in srcs {
                r.push(self.read(regs, *s).clone());
            }
        }
        Some(Value::Map(coll))
    }

    /// A vector literal, built as `Interp::eval_vector` builds one of its size.
    fn vector(&self, regs: &Regs<'a>, args: (u16, u16)) -> Option<Value> {
        let items = self.values(regs, args)?;
        Some(match <[Value; 2]>::try_from(items) {
            Ok([a, b]) => Value::Vector(Coll::new(PVec::from_two(a, b))),
            Err(items) => match <[Value; 3]>::try_from(items) {
                Ok(three) => Value::Vector(Coll::new(PVec::from_three(three))),
                Err(items) if items.len() > 3 => Value::vector(items),
                Err(items) => {
                    let mut out = PVec::new();
                    for x in items {
                        out.push_back(x);
                    }
                    Value::Vector(Coll::new(out))
                }
            },
        })
    }
}

fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Nil | Value::Bool(false))
}

/// Emits the ops of a body; each method answers `None` for a form it does not take.
struct Compiler {
    ops: Vec<Op>,
    consts: Vec<Value>,
    args: Vec<Src>,
    keys: Vec<(Text, KeyHint)>,
    shapes: Vec<Rc<Shape>>,
    fixed: Vec<(Fixed, bool, u16)>,
    /// The next free temporary register.
    next: usize,
}

impl Compiler {
    fn temp(&mut self) -> Option<u8> {
        let r = u8::try_from(self.next)
            .ok()
            .filter(|_| self.next < MAX_REGS)?;
        self.next += 1;
        Some(r)
    }

    fn here(&self) -> Option<u16> {
        u16::try_from(self.ops.len()).ok()
    }

    /// An operand: a leaf where it is, anything else computed into a temporary.
    fn src(&mut self, e: &Expr) -> Option<Src> {
        Some(match e {
            Expr::Const(v) => {
                let i = u16::try_from(self.consts.len()).ok()?;
                self.consts.push(v.clone());
                Src::Const(i)
            }
            Expr::Local(s) | Expr::Move(s) => Src::Reg(slot(*s)?),
            Expr::Capture(i) => Src::Capture(*i),
            e => {
                let t = self.temp()?;
                self.value(e, t)?;
                Src::Reg(t)
            }
        })
    }

    /// The ops that leave `e`'s value in register `dst`.
    fn value(&mut self, e: &Expr, dst: u8) -> Option<()> {
        let op = match e {
            Expr::Const(_) | Expr::Local(_) | Expr::Move(_) | Expr::Capture(_) => Op::Copy {
                dst,
                src: self.src(e)?,
            },
            Expr::Call(c) => self.call(c, dst)?,
            Expr::Prim(p) => {
                let (x, y) = (self.src(&p.x)?, self.src(&p.y)?);
                Op::Prim {
                    dst,
                    op: p.op,
                    x,
                    y,
                }
            }
            Expr::If(b) => return self.branch(b, dst),
            Expr::And(xs) => return self.and_or(xs, true, dst),
            Expr::Or(xs) => return self.and_or(xs, false, dst),
            Expr::Let(l) => {
                for (p, init) in &l.bindings {
                    let Pattern::Bind(s) = p else {
                        return None;
                    };
                    self.value(init, slot(*s)?)?;
                }
                return self.value(&l.body, dst);
            }
            Expr::Record(pairs, Some(shape)) => {
                let args = self.operands(pairs.iter().map(|(_, v)| v))?;
                let at = u16::try_from(self.shapes.len()).ok()?;
                self.shapes.push(shape.clone());
                Op::Record {
                    dst,
                    shape: at,
                    args,
                }
            }
            Expr::Vector(items) => Op::Vector {
                dst,
                args: self.operands(items.iter())?,
            },
            _ => return None,
        };
        self.ops.push(op);
        Some(())
    }

    /// A keyword call of one argument, a call of the builtin `get` with two, or of a builtin
    /// with a fast entry for its argument count (pure: they see no interpreter).
    fn call(&mut self, c: &crate::analyze::Call, dst: u8) -> Option<Op> {
        match (&c.f, c.args.as_slice()) {
            (Expr::Const(Value::Keyword(k)), [m]) => {
                let src = self.src(m)?;
                let key = self.key(k)?;
                Some(match src {
                    Src::Reg(src) => Op::FieldR { dst, src, key },
                    src => Op::Field { dst, src, key },
                })
            }
            (Expr::Builtin(b), [m, k]) if is_get(b) => {
                let (map, key) = (self.src(m)?, self.src(k)?);
                Some(match (map, key) {
                    (Src::Capture(map), Src::Reg(key)) => Op::GetCapR { dst, map, key },
                    (map, key) => Op::Get { dst, map, key },
                })
            }
            (Expr::Builtin(b), [x]) if let Fast::One(f) = b.fast => Some(Op::Call1 {
                dst,
                f,
                x: self.src(x)?,
            }),
            (Expr::Builtin(b), [x, y]) if let Fast::Two(f) = b.fast => {
                let (x, y) = (self.src(x)?, self.src(y)?);
                Some(Op::Call2 { dst, f, x, y })
            }
            _ => None,
        }
    }

    /// A field read's keyword, with a hint of its own.
    fn key(&mut self, k: &Text) -> Option<u16> {
        let at = u16::try_from(self.keys.len()).ok()?;
        self.keys.push((k.clone(), KeyHint::default()));
        Some(at)
    }

    /// `(op (:k local) c)` or `(op c (:k local))` with a decoded constant, as one `TestField`.
    fn test_field(&mut self, p: &crate::analyze::PrimCall) -> Option<Op> {
        let (f, c) = match (&p.x, &p.y) {
            (Expr::Call(f), Expr::Const(c)) | (Expr::Const(c), Expr::Call(f)) => (f, c),
            _ => return None,
        };
        let (Expr::Const(Value::Keyword(k)), [Expr::Local(s) | Expr::Move(s)]) =
            (&f.f, f.args.as_slice())
        else {
            return None;
        };
        if matches!(Fixed::of(p.op, c), Fixed::No) {
            return None;
        }
        let src = slot(*s)?;
        let key = self.key(k)?;
        let fixed = self.fixed(p.op, &p.x, &p.y)??;
        Some(Op::TestField {
            src,
            key,
            op: p.op,
            fixed,
            to: 0,
        })
    }

    /// `if`: a prim test jumps by itself, anything else is computed and tested.
    fn branch(&mut self, b: &(Expr, Expr, Expr), dst: u8) -> Option<()> {
        let (t, then, els) = b;
        match t {
            Expr::Prim(p) if let Some(op) = self.test_field(p) => {
                let test_at = self.ops.len();
                self.ops.push(op);
                self.arms(test_at, then, els, dst)
            }
            Expr::Prim(p) => {
                let (x, y) = (self.src(&p.x)?, self.src(&p.y)?);
                let fixed = self.fixed(p.op, &p.x, &p.y)?;
                let test_at = self.ops.len();
                self.ops.push(Op::Test {
                    op: p.op,
                    x,
                    y,
                    to: 0,
                    fixed,
                });
                self.arms(test_at, then, els, dst)
            }
            t => {
                let r = self.temp()?;
                self.value(t, r)?;
                let test_at = self.ops.len();
                self.ops.push(Op::Unless { src: r, to: 0 });
                self.arms(test_at, then, els, dst)
            }
        }
    }

    /// The decoded constant of a test `(op x y)` whose one operand is a constant (kept as
    /// `Some(None)` when it has no decoded form).
    fn fixed(&mut self, op: Prim, x: &Expr, y: &Expr) -> Option<Option<u16>> {
        let (c, other_first) = match (x, y) {
            (_, Expr::Const(c)) => (c, true),
            (Expr::Const(c), _) => (c, false),
            _ => return Some(None),
        };
        let f = Fixed::of(op, c);
        if matches!(f, Fixed::No) {
            return Some(None);
        }
        let konst = u16::try_from(self.consts.len()).ok()?;
        self.consts.push(c.clone());
        let at = u16::try_from(self.fixed.len()).ok()?;
        self.fixed.push((f, other_first, konst));
        Some(Some(at))
    }

    /// `and` / `or`: each value in turn into `dst`, the first falsy (`and`) or truthy (`or`)
    /// one answering, as `Interp::eval_and_or` does; no step of its own.
    fn and_or(&mut self, xs: &[Expr], and: bool, dst: u8) -> Option<()> {
        let Some((last, init)) = xs.split_last() else {
            let src = self.src(&Expr::Const(if and {
                Value::Bool(true)
            } else {
                Value::Nil
            }))?;
            self.ops.push(Op::Copy { dst, src });
            return Some(());
        };
        let mut exits = Vec::with_capacity(init.len());
        for x in init {
            self.value(x, dst)?;
            exits.push(self.ops.len());
            self.ops.push(if and {
                Op::Unless { src: dst, to: 0 }
            } else {
                Op::When { src: dst, to: 0 }
            });
        }
        self.value(last, dst)?;
        let end = self.here()?;
        for at in exits {
            match self.ops.get_mut(at)? {
                Op::Unless { to, .. } | Op::When { to, .. } => *to = end,
                _ => return None,
            }
        }
        Some(())
    }

    /// The two arms after the test at `test_at`, which jumps to the second.
    fn arms(&mut self, test_at: usize, then: &Expr, els: &Expr, dst: u8) -> Option<()> {
        self.value(then, dst)?;
        let jump_at = self.ops.len();
        self.ops.push(Op::Jump { to: 0 });
        let else_at = self.here()?;
        match self.ops.get_mut(test_at)? {
            Op::Test { to, .. } | Op::TestField { to, .. } | Op::Unless { to, .. } => {
                *to = else_at;
            }
            _ => return None,
        }
        self.value(els, dst)?;
        let end = self.here()?;
        match self.ops.get_mut(jump_at)? {
            Op::Jump { to } => *to = end,
            _ => return None,
        }
        Some(())
    }

    /// The operands of a literal, in order, as a range of `args`.
    fn operands<'e>(&mut self, es: impl Iterator<Item = &'e Expr>) -> Option<(u16, u16)> {
        let srcs = es.map(|e| self.src(e)).collect::<Option<Vec<_>>>()?;
        let start = u16::try_from(self.args.len()).ok()?;
        self.args.extend(srcs);
        Some((start, u16::try_from(self.args.len()).ok()?))
    }
}

fn slot(s: u32) -> Option<u8> {
    u8::try_from(s).ok().filter(|s| usize::from(*s) < MAX_REGS)
}

/// Whether `b` is the builtin `get`.
fn is_get(b: &BuiltinDef) -> bool {
    b.name == "get"
        && matches!(builtins::lookup(None, "get"), Lookup::Found(d) if std::ptr::eq(d, b))
}

#[cfg(test)]
mod code_tests {
    /// Whether the first form of `src` is a fn (or a `let` whose body is one) with register code.
    fn compiled(src: &str) -> bool {
        crate::eval::testing::first_fn(src).is_some_and(|t| t.code.is_some())
    }

    #[test]
    fn the_forms_it_takes_and_only_they_are_compiled() {
        for yes in [
            "(let [by-id {}] (fn [o] (let [c (get by-id (:customer_id o))] \
             (when (= \"gold\" (:tier c)) {:customer (:name c) :total (:total o)}))))",
            "(fn [c] [(:id c) c])",
            "(fn [m] (if (:k m) (:k (:k m)) :none))",
            "(fn [m] (let [a (:a m) b (:b m)] (+ a b)))",
            "(fn [m] (get m :id))",
            "(fn [m] [1 2 3 4 5 (:k m)])",
            "(fn [m] m)",
            "(fn [m] (and (:a m) (or (:b m) (inc (:c m)))))",
            "(fn [m] (inc (:id m)))",
            "(fn [s] (str/upper-case (first (str/split s #\" \"))))",
        ] {
            assert!(compiled(yes), "{yes}");
        }
        for no in [
            // Quick fns keep their own, cheaper form.
            "(fn [m] (:id m))",
            "(fn [m] (= 1 (:id m)))",
            // The general forms the side-by-side tests compare against.
            "(fn [m] (do nil (:k m)))",
            "(fn [a b] [(:t a) b])",
            "(fn [m & r] [(:id m)])",
            "(fn [{:keys [id]}] [id])",
            "(fn ([m] [(:id m)]) ([m n] n))",
            "(fn [m] (:id m 0))",
            "(fn [m] (get m :id 0))",
            "(fn [m] (let [[a b] m] [a b]))",
            "(fn [m] (str (:id m)))",
            "(fn [m] {(:k m) 1})",
            "(fn [m] (let [a 1 b 2 c 3 d 4 e 5 f 6 g 7 h 8 i 9 j 10 k 11 l 12 n 13 o 14 p 15] [a]))",
        ] {
            assert!(!compiled(no), "{no}");
        }
    }
}
