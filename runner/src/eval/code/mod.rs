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
//!   a slot the analyzer reuses holds what it would hold in the frame. A temporary holds one
//!   operand and is read once, so a literal takes what it owns instead of cloning it.
//! - **Nothing owned is left behind.** Ops write only registers below `Code::used`; what those
//!   own is dropped when the run ends, and the rest of the array, which only ever borrowed, is
//!   forgotten.
//!
//! The compiler is `compile.rs`. `tests/fn_code.rs` runs each fn this way and through the walker
//! and compares answers, errors and steps, and the step and depth limits at their boundaries.

mod compile;

use super::prim::{Fixed, Prim};
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
    /// `r[dst]` = a record of a shape with the values at `args`. `tail`: the fn answers this
    /// record (nothing but jumps between it and the `Return` of `dst`), so `run_fields` can
    /// leave it unbuilt.
    Record {
        dst: u8,
        shape: u16,
        args: (u16, u16),
        tail: bool,
    },
    /// `r[dst]` = a vector of the values at `args`; `tail` as for `Record` (`run_fields`
    /// hands a pair over unbuilt).
    Vector {
        dst: u8,
        args: (u16, u16),
        tail: bool,
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
    /// Registers the ops use (the frame and the temporaries), at most [`MAX_REGS`].
    used: u8,
    /// The first temporary: registers from here on hold one operand each, read once, so a
    /// literal takes their values instead of cloning them.
    temps: u8,
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

/// What takes a run's answer for [`Code::run_fields`]'s caller, while the registers still hold
/// what it borrows. Its methods are inlined into the run (a closure over an answer enum was a
/// call that copied the answer in halves and read it back whole). `None` is the run's.
pub trait Take {
    type Out;
    /// The answer, a value.
    fn value(self, v: Value) -> Option<Self::Out>;
    /// The answer, a record literal left unbuilt.
    fn fields(self, f: &Fields<'_>) -> Option<Self::Out>;
    /// The answer, a vector literal of two values left unbuilt (`[(:id c) c]`).
    fn pair(self, a: &Value, b: &Value) -> Option<Self::Out>;
}

/// The vector a two-value literal builds (`At::vector`'s).
pub fn pair_value(a: &Value, b: &Value) -> Value {
    Value::Vector(Coll::new(PVec::from_two(a.clone(), b.clone())))
}

/// [`Code::run`]'s taker: the answer as a value, a record built.
struct Build;

impl Take for Build {
    type Out = Value;

    #[inline(always)]
    fn value(self, v: Value) -> Option<Value> {
        Some(v)
    }

    fn fields(self, f: &Fields<'_>) -> Option<Value> {
        Some(f.to_value())
    }

    fn pair(self, a: &Value, b: &Value) -> Option<Value> {
        Some(pair_value(a, b))
    }
}

/// A record literal in tail position (`{:customer (:name c) :total (:total o)}`), left unbuilt:
/// its shape and where its values are, borrowed while the run's registers last. A fused caller
/// reads the fields it wants straight from here (`eval::fused`).
pub struct Fields<'r> {
    at: &'r At<'r>,
    regs: &'r Regs<'r>,
    shape: &'r Rc<Shape>,
    srcs: &'r [Src],
}

impl std::fmt::Debug for Fields<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fields")
            .field("keys", &self.shape.keys())
            .finish_non_exhaustive()
    }
}

impl Fields<'_> {
    pub fn shape(&self) -> &Rc<Shape> {
        self.shape
    }

    /// The value of the shape's key `i` (nil past the end, which no shape's key is).
    pub fn get(&self, i: usize) -> &Value {
        self.srcs
            .get(i)
            .map_or(NIL, |s| self.at.read(self.regs, *s))
    }

    /// The record itself, as the literal builds it.
    pub fn to_value(&self) -> Value {
        let mut coll = Coll::new(MapImpl::Record(Record::empty(self.shape.clone())));
        if let MapImpl::Record(r) = coll.make_mut() {
            for s in self.srcs {
                r.push(self.at.read(self.regs, *s).clone());
            }
        }
        Value::Map(coll)
    }
}

/// How a run ended.
enum End {
    Value(Value),
    /// A tail record, `Op::Record`'s shape and operands, left for the caller.
    Fields(u16, (u16, u16)),
    /// A tail vector of two values, its two operands, left for the caller.
    Pair(Src, Src),
    Decline,
}

impl Code {
    /// The answer for argument `x`, with the steps it charges written to `charged`, or `None`
    /// where the general path must answer (see the module header).
    pub fn run(&self, captures: &[Value], x: &Value, charged: &mut u64) -> Option<Value> {
        self.exec::<false, _>(captures, x, charged, Build)
    }

    /// [`Code::run`] for a caller that takes the answer as it stands: a record literal in tail
    /// position goes to `k` as its [`Fields`], unbuilt.
    pub fn run_fields<T: Take>(
        &self,
        captures: &[Value],
        x: &Value,
        charged: &mut u64,
        k: T,
    ) -> Option<T::Out> {
        self.exec::<true, T>(captures, x, charged, k)
    }

    /// The op loop of both. The registers, the steps and whether any register owns its value
    /// stay locals of this loop; each op writes its register itself (a result moved out of a
    /// match as a whole was stored in halves and loaded whole, a stall on every op).
    #[inline(always)]
    fn exec<'a, const FIELDS: bool, T: Take>(
        &'a self,
        captures: &'a [Value],
        x: &'a Value,
        charged: &mut u64,
        k: T,
    ) -> Option<T::Out> {
        let mut regs: Regs<'a> = std::array::from_fn(|_| Reg::Ref(NIL));
        regs[usize::from(self.param) & MASK] = Reg::Ref(x);
        let at = At {
            code: self,
            captures,
        };
        let (mut steps, mut owned, mut pc) = (0u64, false, 0usize);
        let end = loop {
            let Some(op) = self.ops.get(pc) else {
                break End::Decline;
            };
            pc += 1;
            let next = match op {
                Op::Return { src } => break End::Value(take(&mut regs, *src)),
                Op::Record {
                    shape,
                    args,
                    tail: true,
                    ..
                } if FIELDS => break End::Fields(*shape, *args),
                Op::Vector {
                    args: (from, to),
                    tail: true,
                    ..
                } if FIELDS && usize::from(*to) == usize::from(*from) + 2 => {
                    match self.args.get(usize::from(*from)..usize::from(*to)) {
                        Some([a, b]) => break End::Pair(*a, *b),
                        _ => break End::Decline,
                    }
                }
                Op::Jump { to } => Some(Some(*to)),
                Op::Test { .. } | Op::TestField { .. } | Op::Unless { .. } | Op::When { .. } => {
                    at.branch(&regs, op, &mut steps)
                }
                op => at
                    .set::<FIELDS>(&mut regs, op, &mut steps, &mut owned)
                    .map(|()| None),
            };
            match next {
                None => break End::Decline,
                Some(Some(to)) => pc = usize::from(to),
                Some(None) => {}
            }
        };
        *charged = steps;
        let answer = match end {
            End::Value(v) => k.value(v),
            End::Fields(shape, (from, to)) => {
                let shape = self.shapes.get(usize::from(shape));
                let srcs = self.args.get(usize::from(from)..usize::from(to));
                match (shape, srcs) {
                    (Some(shape), Some(srcs)) => k.fields(&Fields {
                        at: &at,
                        regs: &regs,
                        shape,
                        srcs,
                    }),
                    _ => None,
                }
            }
            End::Pair(a, b) => k.pair(at.read(&regs, a), at.read(&regs, b)),
            End::Decline => None,
        };
        if owned {
            self.release(&mut regs);
        }
        std::mem::forget(regs);
        answer
    }
}

impl Code {
    /// Drops what the registers own, where they are (not moved out to a drop of the whole
    /// array); registers that only ever borrowed hold nothing to give back, and the array is
    /// then forgotten.
    #[inline(always)]
    fn release(&self, regs: &mut Regs<'_>) {
        for r in regs.iter_mut().take(usize::from(self.used)) {
            if matches!(r, Reg::Own(_)) {
                *r = Reg::Ref(NIL);
            }
        }
    }
}

/// The answer register's value, owned.
fn take(regs: &mut Regs<'_>, src: u8) -> Value {
    match std::mem::replace(&mut regs[usize::from(src) & MASK], Reg::Ref(NIL)) {
        Reg::Ref(v) => v.clone(),
        Reg::Own(v) => v,
    }
}

/// Where the ops read beside the registers: the code's tables and the fn's captures.
struct At<'a> {
    code: &'a Code,
    captures: &'a [Value],
}

impl<'a> At<'a> {
    /// An op that writes a register: its value written, its steps charged (a field read, a
    /// `get`, a call and a prim are one step each; the rest charge none); `None` declines.
    /// Each arm writes the register itself: a `(register, value)` pair made by the match and
    /// then stored was written in halves and loaded whole, a stall on every op.
    #[inline(always)]
    fn set<const FIELDS: bool>(
        &self,
        regs: &mut Regs<'a>,
        op: &Op,
        steps: &mut u64,
        owned: &mut bool,
    ) -> Option<()> {
        match op {
            Op::Copy { dst, src } => self.copy(regs, *dst, *src, owned),
            Op::FieldR { dst, src, key } => {
                *steps += 1;
                match &regs[usize::from(*src) & MASK] {
                    Reg::Ref(m) => {
                        let m: &'a Value = m;
                        let v = self.field_in(m, *key)?;
                        regs[usize::from(*dst) & MASK] = Reg::Ref(v);
                    }
                    Reg::Own(m) => {
                        let v = self.field_in(m, *key)?.clone();
                        own(regs, *dst, v, owned);
                    }
                }
            }
            Op::Field { dst, src, key } => {
                *steps += 1;
                let (k, hint) = self.code.keys.get(usize::from(*key))?;
                let v = self.lookup(regs, *src, |m| m.get_keyword_hinted(k, hint))?;
                put(regs, *dst, v, owned);
            }
            Op::GetCapR { dst, map, key } => {
                *steps += 1;
                let v = self.get_capture(regs, *map, *key)?;
                regs[usize::from(*dst) & MASK] = Reg::Ref(v);
            }
            Op::Get { dst, map, key } => {
                *steps += 1;
                let k = self.read(regs, *key);
                let v = self.lookup(regs, *map, |m| m.get_lenient(k))?;
                put(regs, *dst, v, owned);
            }
            Op::Call1 { dst, f, x } => {
                *steps += 1;
                own(regs, *dst, f(self.read(regs, *x))?.ok()?, owned);
            }
            Op::Call2 { dst, f, x, y } => {
                *steps += 1;
                let v = f(self.read(regs, *x), self.read(regs, *y))?.ok()?;
                own(regs, *dst, v, owned);
            }
            Op::Prim { dst, op, x, y } => {
                *steps += 1;
                let v = match (self.read(regs, *x), self.read(regs, *y)) {
                    (Value::Int(a), Value::Int(b)) if let Some(v) = op.ints(*a, *b) => v,
                    (a, b) => op.apply(a, b)?.ok()?,
                };
                own(regs, *dst, v, owned);
            }
            Op::Record {
                dst, shape, args, ..
            } => {
                // Inline where records are built (`run`); out of line where the answer's
                // record is left unbuilt (`run_fields`), whose loop it would otherwise crowd.
                let v = if FIELDS {
                    self.record_out_of_line(regs, *shape, *args)?
                } else {
                    self.record(regs, *shape, *args)?
                };
                own(regs, *dst, v, owned);
            }
            Op::Vector { dst, args, .. } => {
                let v = self.vector(regs, *args)?;
                own(regs, *dst, v, owned);
            }
            _ => return None,
        }
        Some(())
    }

    /// A test or a conditional jump: `Some(Some(to))` to jump, `Some(None)` to go on, `None`
    /// to decline.
    #[inline(always)]
    fn branch(&self, regs: &Regs<'a>, op: &Op, steps: &mut u64) -> Option<Option<u16>> {
        let (holds, to) = match op {
            Op::TestField {
                src,
                key,
                op,
                fixed,
                to,
            } => {
                *steps += 2;
                (self.test_field(regs, *src, *key, *op, *fixed)?, to)
            }
            Op::Test {
                op,
                x,
                y,
                to,
                fixed,
            } => {
                *steps += 1;
                (self.test(regs, *op, *x, *y, *fixed)?, to)
            }
            Op::Unless { src, to } => (truthy(reg(regs, *src)), to),
            Op::When { src, to } => (!truthy(reg(regs, *src)), to),
            _ => return None,
        };
        Some((!holds).then_some(*to))
    }

    /// `(get capture r[key])`: the entry borrowed from the captured map (nil's is nil). A
    /// borrowed answer is a pointer the op writes into its register itself: a register value
    /// made here and copied there was stored in halves and loaded whole, a stall per op.
    #[inline(always)]
    fn get_capture(&self, regs: &Regs<'a>, map: u32, key: u8) -> Option<&'a Value> {
        match self.capture(map) {
            Value::Map(m) => Some(m.get_lenient(reg(regs, key)).unwrap_or(NIL)),
            Value::Nil => Some(NIL),
            _ => None,
        }
    }

    /// An operand, read where it is.
    fn read<'r>(&'r self, regs: &'r Regs<'a>, s: Src) -> &'r Value {
        match s {
            Src::Reg(r) => reg(regs, r),
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

    /// An operand as a register's value, written into register `dst`: borrowed where it lives
    /// as long as the run (the pointer written, as `get_capture` explains), else cloned.
    #[inline(always)]
    fn copy(&self, regs: &mut Regs<'a>, dst: u8, s: Src, owned: &mut bool) {
        let v: &'a Value = match s {
            Src::Reg(r) => match &regs[usize::from(r) & MASK] {
                Reg::Ref(v) => v,
                Reg::Own(v) => {
                    let v = v.clone();
                    return own(regs, dst, v, owned);
                }
            },
            Src::Capture(i) => self.capture(i),
            Src::Const(i) => self.constant(i),
        };
        regs[usize::from(dst) & MASK] = Reg::Ref(v);
    }

    /// `(:key m)` of a map (its entry, nil where absent) or nil (nil); `None` declines.
    #[inline(always)]
    fn field_in<'m>(&self, m: &'m Value, key: u16) -> Option<&'m Value> {
        let (k, hint) = self.code.keys.get(usize::from(key))?;
        match m {
            Value::Map(map) => Some(map.get_keyword_hinted(k, hint).unwrap_or(NIL)),
            Value::Nil => Some(NIL),
            _ => None,
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

    /// `(op x y)` as a test: by the decoded constant where it answers (`Fixed::answer`,
    /// exactly `Prim::apply`'s answer), else `Prim::apply`'s value's truthiness.
    #[inline(always)]
    fn test(&self, regs: &Regs<'a>, op: Prim, x: Src, y: Src, fixed: Option<u16>) -> Option<bool> {
        if let Some((f, other_first, _)) = fixed.and_then(|at| self.code.fixed.get(usize::from(at)))
        {
            let other = if *other_first { x } else { y };
            if let Some(b) = f.answer(op, self.read(regs, other), *other_first) {
                return Some(b);
            }
        }
        Some(truthy(
            &op.apply(self.read(regs, x), self.read(regs, y))?.ok()?,
        ))
    }

    /// `(op (:key r[src]) c)` for `TestField`: the field read in place, compared by the
    /// decoded constant, or by `Prim::apply` where that does not answer; `None` declines.
    #[inline(always)]
    fn test_field(&self, regs: &Regs<'a>, src: u8, key: u16, op: Prim, at: u16) -> Option<bool> {
        let (k, hint) = self.code.keys.get(usize::from(key))?;
        let (fixed, field_first, c) = self.code.fixed.get(usize::from(at))?;
        let field = match reg(regs, src) {
            Value::Map(m) => m.get_keyword_hinted(k, hint).unwrap_or(NIL),
            Value::Nil => NIL,
            _ => return None,
        };
        if let Some(b) = fixed.answer(op, field, *field_first) {
            return Some(b);
        }
        let c = self.constant(*c);
        let (x, y) = if *field_first { (field, c) } else { (c, field) };
        Some(truthy(&op.apply(x, y)?.ok()?))
    }

    /// The values at `args`, taken from temporaries and cloned from anything else.
    fn values(&self, regs: &mut Regs<'a>, args: (u16, u16)) -> Option<Vec<Value>> {
        let srcs = self
            .code
            .args
            .get(usize::from(args.0)..usize::from(args.1))?;
        Some(srcs.iter().map(|s| self.value_of(regs, *s)).collect())
    }

    /// An operand's value for a literal: a temporary's own value taken, anything else cloned.
    #[inline(always)]
    fn value_of(&self, regs: &mut Regs<'a>, s: Src) -> Value {
        match s {
            Src::Reg(r) if r >= self.code.temps => match &mut regs[usize::from(r) & MASK] {
                Reg::Own(v) => std::mem::take(v),
                Reg::Ref(v) => v.clone(),
            },
            s => self.read(regs, s).clone(),
        }
    }

    #[inline(never)]
    fn record_out_of_line(
        &self,
        regs: &mut Regs<'a>,
        shape: u16,
        args: (u16, u16),
    ) -> Option<Value> {
        self.record(regs, shape, args)
    }

    /// A record literal, built as `Interp::eval_record` builds one.
    #[inline(always)]
    fn record(&self, regs: &mut Regs<'a>, shape: u16, args: (u16, u16)) -> Option<Value> {
        let shape = self.code.shapes.get(usize::from(shape))?;
        let srcs = self
            .code
            .args
            .get(usize::from(args.0)..usize::from(args.1))?;
        let mut coll = Coll::new(MapImpl::Record(Record::empty(shape.clone())));
        if let MapImpl::Record(r) = coll.make_mut() {
            for s in srcs {
                r.push(self.value_of(regs, *s));
            }
        }
        Some(Value::Map(coll))
    }

    /// A vector literal, built as `Interp::eval_vector` builds one of its size.
    fn vector(&self, regs: &mut Regs<'a>, args: (u16, u16)) -> Option<Value> {
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

#[inline(always)]
fn put<'a>(regs: &mut Regs<'a>, dst: u8, v: Reg<'a>, owned: &mut bool) {
    *owned |= matches!(v, Reg::Own(_));
    regs[usize::from(dst) & MASK] = v;
}

#[inline(always)]
fn own(regs: &mut Regs<'_>, dst: u8, v: Value, owned: &mut bool) {
    *owned = true;
    regs[usize::from(dst) & MASK] = Reg::Own(v);
}

fn reg<'r>(regs: &'r Regs<'_>, r: u8) -> &'r Value {
    regs[usize::from(r) & MASK].get()
}

fn truthy(v: &Value) -> bool {
    !matches!(v, Value::Nil | Value::Bool(false))
}
