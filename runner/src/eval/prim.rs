//! Inline arithmetic and comparison for the hot two-argument number builtins.
//!
//! A table entry declares its operation as `Fast::Prim(op)` (`+ - * < > <= >= mod rem quot =`).
//! The analyzer turns `(op x y)` naming such a builtin into `Expr::Prim`, and every other way of
//! calling it (`apply2` from `reduce`, `sort-by`, a builtin held in a local) reaches the same
//! [`Prim::apply`] through `builtins::call2`. Two integers are computed inline, and so are
//! comparisons and `+ - *` of any two numbers (as doubles, as the builtins compute them);
//! `mod rem quot` of doubles use the builtin's own two-argument function; `=` of two values that are neither collections nor lazy seqs is
//! compared at once. Anything else (and overflow, a zero divisor) is left to the builtin's
//! general entry, which alone defines errors. Tests check both answers against the general
//! entries.
//!
//! The evaluation of the `Prim` node lives here too: constant operands, a local beside a
//! constant, and a local's field `(:k m)` beside a constant are read where they are, not copied
//! (`tests/call_paths.rs` and `tests/field_tests.rs` check each against `apply` of the builtin).
//! A string or integer constant beside a field is decoded at analysis ([`Fixed`]) and compared
//! inline. The quick fns that share these tests are in `quick.rs`.

use super::{Env, Interp};
use crate::analyze::Expr;
use crate::builtins::math;
use crate::error::EvalResult;
use crate::value::{KeyHint, Value};

/// An operation with an inline path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    Add,
    Sub,
    Mul,
    Lt,
    Gt,
    Le,
    Ge,
    Mod,
    Rem,
    Quot,
    /// `=`: scalars here; collections and lazy seqs (walked, realized) in the builtin.
    Eq,
}

impl Prim {
    /// The result for one operand, where the builtin's one-argument case is a plain negation:
    /// `(- x)` of an integer (overflow left to the builtin, which names it) or a double
    /// (`(- 0.0)` is `-0.0`). `None` for every other op and operand: the builtin's general entry.
    #[inline]
    pub fn apply1(self, x: &Value) -> Option<EvalResult> {
        match (self, x) {
            (Prim::Sub, Value::Int(i)) => Some(Ok(Value::Int(i.checked_neg()?))),
            (Prim::Sub, Value::Float(f)) => Some(Ok(Value::Float(-f))),
            _ => None,
        }
    }

    /// The result for two integers; `None` leaves the case to the builtin (overflow, a zero or
    /// -1 divisor).
    #[inline]
    pub fn ints(self, a: i64, b: i64) -> Option<Value> {
        Some(match self {
            Prim::Add => Value::Int(a.checked_add(b)?),
            Prim::Sub => Value::Int(a.checked_sub(b)?),
            Prim::Mul => Value::Int(a.checked_mul(b)?),
            Prim::Lt => Value::Bool(a < b),
            Prim::Gt => Value::Bool(a > b),
            Prim::Le => Value::Bool(a <= b),
            Prim::Ge => Value::Bool(a >= b),
            Prim::Mod | Prim::Rem | Prim::Quot if b == 0 || b == -1 => return None,
            Prim::Mod => Value::Int(math::floor_mod(a, b)),
            Prim::Rem => Value::Int(a % b),
            Prim::Quot => Value::Int(a / b),
            Prim::Eq => Value::Bool(a == b),
        })
    }

    /// The result for any two operands, or `None` for the builtin's general entry: integers
    /// inline (overflow and a 0 or -1 divisor through the builtin's binary function), numbers
    /// of mixed or double kind as the builtin computes them (as doubles; NaN compares false),
    /// `=` of two scalars directly.
    #[inline(never)]
    pub fn apply(self, a: &Value, b: &Value) -> Option<EvalResult> {
        self.apply_inline(a, b)
    }

    /// [`Prim::apply`], inlined into the per-element paths (quick fns, a field beside a
    /// constant, `reduce` of numbers), where the call itself was a fifth of the comparison.
    #[inline(always)]
    pub(crate) fn apply_inline(self, a: &Value, b: &Value) -> Option<EvalResult> {
        let (x, y) = match (a, b) {
            (Value::Int(x), Value::Int(y)) => {
                return match self.ints(*x, *y) {
                    Some(v) => Some(Ok(v)),
                    None => self.declined_ints(a, b),
                };
            }
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                (as_f64(a), as_f64(b))
            }
            // Texts first: `(= "paid" (:status o))` is the commonest equality on records.
            (Value::Str(s), Value::Str(t)) if self == Prim::Eq => {
                return Some(Ok(Value::Bool(s == t)));
            }
            _ if self == Prim::Eq => return scalars_equal(a, b).map(|e| Ok(Value::Bool(e))),
            _ => return None,
        };
        Some(match self {
            Prim::Add => Ok(Value::Float(x + y)),
            Prim::Sub => Ok(Value::Float(x - y)),
            Prim::Mul => Ok(Value::Float(x * y)),
            Prim::Mod => math::mod2(a, b),
            Prim::Rem => math::rem2(a, b),
            Prim::Quot => math::quot2(a, b),
            Prim::Lt => Ok(Value::Bool(x < y)),
            Prim::Gt => Ok(Value::Bool(x > y)),
            Prim::Le => Ok(Value::Bool(x <= y)),
            Prim::Ge => Ok(Value::Bool(x >= y)),
            // An integer never equals a double; two doubles by IEEE (NaN unequal).
            Prim::Eq => Ok(Value::Bool(a == b)),
        })
    }

    /// [`Prim::apply_inline`]'s value for two numbers where it is one without an error (every
    /// op but the divisions on doubles; `ints` for two integers), returned as the value itself:
    /// a `Result` around it is built in memory and read back whole, a stall per element on the
    /// paths that sum (`reducer`).
    #[inline(always)]
    pub(crate) fn numbers(self, a: &Value, b: &Value) -> Option<Value> {
        let (x, y) = match (a, b) {
            (Value::Int(x), Value::Int(y)) => return self.ints(*x, *y),
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                (as_f64(a), as_f64(b))
            }
            _ => return None,
        };
        Some(match self {
            Prim::Add => Value::Float(x + y),
            Prim::Sub => Value::Float(x - y),
            Prim::Mul => Value::Float(x * y),
            Prim::Lt => Value::Bool(x < y),
            Prim::Gt => Value::Bool(x > y),
            Prim::Le => Value::Bool(x <= y),
            Prim::Ge => Value::Bool(x >= y),
            Prim::Eq => Value::Bool(a == b),
            Prim::Mod | Prim::Rem | Prim::Quot => return None,
        })
    }

    /// Two integers `ints` declined (overflow, a 0 or -1 divisor): the builtin's binary
    /// function reports or computes them.
    #[cold]
    fn declined_ints(self, a: &Value, b: &Value) -> Option<EvalResult> {
        match self {
            Prim::Add => Some(math::add2(a, b)),
            Prim::Sub => Some(math::sub2(a, b)),
            Prim::Mul => Some(math::mul2(a, b)),
            Prim::Mod => Some(math::mod2(a, b)),
            Prim::Rem => Some(math::rem2(a, b)),
            Prim::Quot => Some(math::quot2(a, b)),
            Prim::Lt | Prim::Gt | Prim::Le | Prim::Ge | Prim::Eq => None,
        }
    }
}

/// A number as the comparison builtins see it (an integer converted to a double).
#[inline]
fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    }
}

/// `=` when neither side is a collection or a lazy seq (nothing to realize or walk), else
/// `None`.
#[inline]
pub fn scalars_equal(a: &Value, b: &Value) -> Option<bool> {
    let walked = |v: &Value| {
        matches!(
            v,
            Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) | Value::Lazy(_)
        )
    };
    (!walked(a) && !walked(b)).then(|| a == b)
}

/// A constant beside a field, decoded at analysis so that the commonest tests
/// (`(= "paid" (:status o))`, `(> (:total o) 250)`) are compared without `Prim::apply`'s
/// dispatch on both operands' kinds.
#[derive(Debug)]
pub enum Fixed {
    /// A string, under `=`.
    Text(crate::value::Text),
    /// An integer, under `=`, `<`, `>`, `<=`, `>=`.
    Int(i64),
    /// Anything else (and a captured operand): `Prim::apply` answers.
    No,
}

impl Fixed {
    /// The decoded form of constant `c` beside a field under `op`.
    pub fn of(op: Prim, c: &Value) -> Fixed {
        match (c, op) {
            (Value::Str(t), Prim::Eq) => Fixed::Text(t.clone()),
            (Value::Int(i), Prim::Eq | Prim::Lt | Prim::Gt | Prim::Le | Prim::Ge) => Fixed::Int(*i),
            _ => Fixed::No,
        }
    }

    /// `(op field c)` (or `(op c field)`) when the constant was decoded and the field is of its
    /// kind (or, beside an integer, a double): exactly `Prim::apply`'s answer for those
    /// operands. `None` for anything else, which `Prim::apply` answers.
    #[inline(always)]
    pub(super) fn answer(&self, op: Prim, field: &Value, field_first: bool) -> Option<bool> {
        match (self, field) {
            (Fixed::Text(c), Value::Str(s)) => Some(same_text(s, c)),
            (Fixed::Int(c), Value::Int(a)) => order(op, *a, *c, field_first),
            // A double beside an integer is compared as two doubles, as `Prim::apply` does;
            // `=` of the two is the general path's (never equal).
            (Fixed::Int(c), Value::Float(a)) if op != Prim::Eq => {
                order(op, *a, *c as f64, field_first)
            }
            _ => None,
        }
    }
}

/// `op` over a field's value `a` and a constant `c`, in the source's operand order.
#[inline(always)]
fn order<T: PartialOrd>(op: Prim, a: T, c: T, field_first: bool) -> Option<bool> {
    let (x, y) = if field_first { (a, c) } else { (c, a) };
    Some(match op {
        Prim::Eq => x == y,
        Prim::Lt => x < y,
        Prim::Gt => x > y,
        Prim::Le => x <= y,
        Prim::Ge => x >= y,
        _ => return None,
    })
}

/// Two texts' equality: the identical text, else the lengths, the first bytes (statuses and
/// kinds of one length mostly differ there, and this saves the call of `memcmp`), the bytes.
#[inline(always)]
fn same_text(a: &crate::value::Text, b: &crate::value::Text) -> bool {
    crate::value::Text::ptr_eq(a, b)
        || (a.len() == b.len()
            && a.as_bytes().first() == b.as_bytes().first()
            && a.as_bytes() == b.as_bytes())
}

/// The operand kinds of a prim node, fixed at analysis so that evaluation picks its path with
/// one match instead of testing the operands each time. A read of a local counts the same as
/// its last read (a move: liveness turns one into the other after the shape is taken), and
/// every path gives the general path's answer, so a shape only chooses how operands are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `(op (:k m) c)`, `m` a local or a capture, `c` a constant.
    FieldConst,
    /// `(op c (:k m))`.
    ConstField,
    /// `(op (:j m) (:k n))`, both maps locals or captures.
    Fields,
    /// `(op c y)`: the constant read in place, `y` evaluated.
    ConstAny,
    /// `(op x c)`, `x` a local.
    SlotConst,
    /// Anything else: both operands evaluated.
    General,
}

impl Shape {
    /// The shape of `(op x y)`.
    pub fn of(x: &Expr, y: &Expr) -> Shape {
        let field = |e: &Expr| matches!(e, Expr::Call(f) if local_field(f).is_some());
        match (x, y) {
            (x, Expr::Const(_)) if field(x) => Shape::FieldConst,
            (Expr::Const(_), y) if field(y) => Shape::ConstField,
            (Expr::Const(_), _) => Shape::ConstAny,
            (x, y) if field(x) && field(y) => Shape::Fields,
            (Expr::Local(_) | Expr::Move(_), Expr::Const(_)) => Shape::SlotConst,
            _ => Shape::General,
        }
    }
}

/// Evaluating a prim node: operands read in place where they can be.
impl Interp<'_> {
    /// `(op x y)` of a builtin with an inline integer path (see `prim`), by its [`Shape`].
    #[inline(always)]
    pub(super) fn eval_prim(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        match p.shape {
            Shape::FieldConst | Shape::ConstField => self.prim_field(p, env),
            Shape::SlotConst => self.prim_slot_const(p, env),
            _ => self.prim_other(p, env),
        }
    }

    /// `(op x c)`, `x` a local: `(mod i 7)`, two integers, without the call of the general
    /// answer.
    #[inline(never)]
    fn prim_slot_const(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        // Small on purpose (the rest is a tail call): two integers, read in place. A moved
        // integer is left in its slot: it holds nothing, and liveness guarantees the slot is
        // not read again before it is written.
        if let (Expr::Local(i) | Expr::Move(i), Expr::Const(c)) = (&p.x, &p.y)
            && let Some(slot) = self.stack.get(env.base + *i as usize)
        {
            if let (Value::Int(a), Value::Int(b)) = (slot, c)
                && let Some(v) = p.op.ints(*a, *b)
            {
                return Ok(v);
            }
            // `(> amt 100)`, a double beside an integer constant (a moved value is left to
            // the general read, which drops it).
            if matches!(p.x, Expr::Local(_))
                && let Some(b) = p.fixed.answer(p.op, slot, true)
            {
                return Ok(Value::Bool(b));
            }
        }
        self.prim_slot_const_read(p, env)
    }

    /// [`Interp::prim_slot_const`] in general.
    #[inline(never)]
    fn prim_slot_const_read(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        match (&p.x, &p.y) {
            (Expr::Local(i), Expr::Const(c)) => {
                let x = self
                    .stack
                    .get(env.base + *i as usize)
                    .unwrap_or(&Value::Nil);
                if let (Value::Int(a), Value::Int(b)) = (x, c)
                    && let Some(v) = p.op.ints(*a, *b)
                {
                    return Ok(v);
                }
                match p.op.apply(x, c) {
                    Some(r) => r,
                    None => {
                        let args = vec![x.clone(), c.clone()];
                        crate::builtins::call(self, p.builtin, args)
                    }
                }
            }
            // Matched by value: an integer taken from its slot leaves nothing to drop.
            (Expr::Move(i), Expr::Const(c)) => match (self.take_slot(env, *i), c) {
                (Value::Int(a), Value::Int(b)) => match p.op.ints(a, *b) {
                    Some(v) => Ok(v),
                    None => self.prim_ref(p, &Value::Int(a), c),
                },
                (x, c) => self.prim_ref(p, &x, c),
            },
            _ => self.prim_general(p, env),
        }
    }

    /// The shapes without a field or a local beside a constant.
    #[inline(never)]
    fn prim_other(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        match (p.shape, &p.x, &p.y) {
            (Shape::Fields, Expr::Call(fx), Expr::Call(fy)) => self.prim_fields(p, fx, fy, env),
            (Shape::ConstAny, Expr::Const(c), y) => {
                let y = self.operand(y, env)?;
                self.prim_ref(p, c, &y)
            }
            _ => self.prim_general(p, env),
        }
    }

    /// Both operands evaluated in order (a constant second one read in place).
    fn prim_general(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        let x = self.operand(&p.x, env)?;
        if let Expr::Const(c) = &p.y {
            return self.prim_ref(p, &x, c);
        }
        let y = self.operand(&p.y, env)?;
        // Matched by value: two integers leave nothing to drop.
        match (x, y) {
            (Value::Int(a), Value::Int(b)) => match p.op.ints(a, b) {
                Some(v) => Ok(v),
                None => crate::builtins::call2(self, p.builtin, Value::Int(a), Value::Int(b)),
            },
            (x, y) => crate::builtins::call2(self, p.builtin, x, y),
        }
    }

    /// `(op (:k m) c)` or `(op c (:k m))` with `m` a local or captured value: the field is
    /// compared where it is, not copied out and dropped. The keyword call is charged its step
    /// as `Expr::Call` charges it; a moved `m` is taken from its slot and dropped here. The
    /// usual case (a local record the hint knows, a decoded constant) is answered first.
    #[inline(never)]
    fn prim_field(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        let (f, field_first) = match (&p.x, &p.y) {
            (Expr::Call(f), _) if p.shape == Shape::FieldConst => (f, true),
            (_, Expr::Call(f)) => (f, false),
            _ => return self.prim_field_read(p, env),
        };
        // Small on purpose: everything else is a tail call, so this path saves few registers.
        if let (Expr::Const(Value::Keyword(k)), [Expr::Local(i)]) = (&f.f, f.args.as_slice())
            && let Some(Value::Map(m)) = self.stack.get(env.base + *i as usize)
            && let crate::value::MapImpl::Record(r) = &**m
            && let Some(field) = r.get_seen(k, &f.hint)
            && let Some(b) = p.fixed.answer(p.op, field, field_first)
        {
            return match self.tick() {
                Ok(()) => Ok(Value::Bool(b)),
                Err(e) => Err(e.at(f.pos)),
            };
        }
        self.prim_field_read(p, env)
    }

    /// [`Interp::prim_field`] in general: the field read where it is, compared by
    /// [`Fixed`] or `Prim::apply`, the builtin's general entry for anything they decline.
    #[inline(never)]
    fn prim_field_read(&mut self, p: &crate::analyze::PrimCall, env: &Env<'_>) -> EvalResult {
        let (f, c, field_first) = match (&p.x, &p.y) {
            (Expr::Call(f), Expr::Const(c)) if p.shape == Shape::FieldConst => (f, c, true),
            (Expr::Const(c), Expr::Call(f)) => (f, c, false),
            _ => return self.prim_general(p, env),
        };
        let Some((kv, k, arg)) = local_field(f) else {
            return self.prim_general(p, env);
        };
        self.tick().map_err(|e| e.at(f.pos))?;
        // `held` is set (and dropped here) only for a moved map.
        let held;
        let m = match arg {
            Expr::Local(i) => self
                .stack
                .get(env.base + *i as usize)
                .unwrap_or(&Value::Nil),
            Expr::Capture(i) => env.captures.get(*i as usize).unwrap_or(&Value::Nil),
            Expr::Move(i) => {
                held = self.take_slot(env, *i);
                &held
            }
            _ => &Value::Nil,
        };
        match field_test(p, m, (kv, k, &f.hint), c, field_first) {
            Ok(r) => r,
            Err(args) => crate::builtins::call(self, p.builtin, args),
        }
    }

    /// `(op (:j m) (:k n))`, both maps locals or captures (`(* (:qty it) (:price it))`): each
    /// field read where it is, charged its step as `Expr::Call` charges it, without the two
    /// calls' dispatch. Both steps are charged before either read: no program can tell, since a
    /// read cannot fail and a limit ends the run. Two maps in slots that stay (the usual case)
    /// are then compared in place, with no copy of either field to make and drop.
    #[inline(never)]
    fn prim_fields(
        &mut self,
        p: &crate::analyze::PrimCall,
        fx: &crate::analyze::Call,
        fy: &crate::analyze::Call,
        env: &Env<'_>,
    ) -> EvalResult {
        self.tick().map_err(|e| e.at(fx.pos))?;
        self.tick().map_err(|e| e.at(fy.pos))?;
        if let (Some(x), Some(y)) = (self.field_ref(fx, env), self.field_ref(fy, env)) {
            return match p.op.apply(x, y) {
                Some(r) => r,
                None => {
                    let (x, y) = (x.clone(), y.clone());
                    crate::builtins::call2(self, p.builtin, x, y)
                }
            };
        }
        let x = self.field_of(fx, env);
        let y = self.field_of(fy, env);
        match p.op.apply(&x, &y) {
            Some(r) => r,
            None => crate::builtins::call2(self, p.builtin, x, y),
        }
    }

    /// `(:k m)` for a [`local_field`] call whose map stays in its slot or capture, read where
    /// it is (nil for a missing key); `None` for a moved map or a value that is not a map.
    /// (Its own match rather than `local_field`'s, whose arm for a moved map measured 0.4 %
    /// more instructions on p5.)
    #[inline(always)]
    fn field_ref<'a>(&'a self, f: &'a crate::analyze::Call, env: &Env<'a>) -> Option<&'a Value> {
        let (Expr::Const(Value::Keyword(k)), [arg]) = (&f.f, f.args.as_slice()) else {
            return None;
        };
        let m = match arg {
            Expr::Local(i) => self.stack.get(env.base + *i as usize),
            Expr::Capture(i) => env.captures.get(*i as usize),
            _ => None,
        };
        match m {
            Some(Value::Map(map)) => {
                Some(map.get_keyword_hinted(k, &f.hint).unwrap_or(&Value::Nil))
            }
            _ => None,
        }
    }

    /// The value of `(:k m)` for a [`local_field`] call, as `call_keyword` reads it (a moved
    /// `m` is taken from its slot).
    #[inline]
    pub(super) fn field_of(&mut self, f: &crate::analyze::Call, env: &Env<'_>) -> Value {
        let Some((kv, k, arg)) = local_field(f) else {
            return Value::Nil;
        };
        let look = |m: &Value| match m {
            Value::Map(map) => map.get_keyword_hinted(k, &f.hint).cloned(),
            m => crate::builtins::coll::get(m, kv),
        };
        match arg {
            Expr::Move(i) => look(&self.take_slot(env, *i)),
            Expr::Local(i) => self.stack.get(env.base + *i as usize).and_then(look),
            Expr::Capture(i) => env.captures.get(*i as usize).and_then(look),
            _ => None,
        }
        .unwrap_or_default()
    }

    /// A prim over borrowed operands: the inline answer, else the builtin's general entry
    /// with copies (what `call2` would do with the values).
    #[inline]
    fn prim_ref(&mut self, p: &crate::analyze::PrimCall, x: &Value, y: &Value) -> EvalResult {
        match p.op.apply(x, y) {
            Some(r) => r,
            None => crate::builtins::call(self, p.builtin, vec![x.clone(), y.clone()]),
        }
    }
}

/// `(op (:k m) c)` (or `(op c (:k m))`) over a borrowed `m`: the inline answer, or copies of
/// the two operands for the builtin's general entry.
#[inline(always)]
fn field_test(
    p: &crate::analyze::PrimCall,
    m: &Value,
    (kv, k, hint): (&Value, &crate::value::Text, &KeyHint),
    c: &Value,
    field_first: bool,
) -> Result<EvalResult, Vec<Value>> {
    let other;
    let field = match m {
        Value::Map(map) => map.get_keyword_hinted(k, hint).unwrap_or(&Value::Nil),
        m => {
            other = crate::builtins::coll::get(m, kv).unwrap_or_default();
            &other
        }
    };
    if let Some(b) = p.fixed.answer(p.op, field, field_first) {
        return Ok(Ok(Value::Bool(b)));
    }
    let (x, y) = if field_first { (field, c) } else { (c, field) };
    p.op.apply_inline(x, y)
        .ok_or_else(|| vec![x.clone(), y.clone()])
}

/// `(:k m)` with `m` a local (read or moved) or a captured value: the keyword as a value and
/// as text, and `m`'s expression.
#[inline]
pub(super) fn local_field(
    f: &crate::analyze::Call,
) -> Option<(&Value, &crate::value::Text, &Expr)> {
    match (&f.f, f.args.as_slice()) {
        (
            Expr::Const(kv @ Value::Keyword(k)),
            [arg @ (Expr::Local(_) | Expr::Move(_) | Expr::Capture(_))],
        ) => Some((kv, k, arg)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::builtins::{Fast, all_entries};
    use crate::eval::Interp;
    use crate::eval::testing::NoTools;
    use crate::value::Value;

    #[test]
    fn inline_integer_answers_match_the_builtins() {
        let ints = [
            0,
            1,
            -1,
            2,
            -2,
            7,
            -7,
            13,
            -13,
            i64::MAX,
            i64::MIN,
            i64::MAX - 1,
        ];
        let mut host = NoTools;
        let mut interp = Interp::new(&mut host, &[], ptc_shared::Limits::default());
        let (mut ops, mut answered) = (0, 0);
        for (_, b) in all_entries() {
            let Fast::Prim(op) = b.fast else { continue };
            ops += 1;
            for a in ints {
                for c in ints {
                    let Some(inline) = op.ints(a, c) else {
                        continue;
                    };
                    answered += 1;
                    let general = (b.f)(&mut interp, vec![Value::Int(a), Value::Int(c)]);
                    let general = general.map(|v| crate::print::pr_str(&v)).ok();
                    let name = b.name;
                    assert_eq!(
                        Some(crate::print::pr_str(&inline)),
                        general,
                        "({name} {a} {c})"
                    );
                }
            }
        }
        assert_eq!(ops, 11, "the table declares 11 prims");
        assert!(answered > 1000, "{answered}");
    }
}

#[cfg(test)]
mod fixed_tests {
    use super::{Fixed, Prim};
    use crate::value::Value;

    /// Every answer of a decoded constant is `Prim::apply`'s for the same operands, in both
    /// orders, over fields of every scalar kind and the edges of the numbers.
    #[test]
    fn decoded_constants_answer_as_prim_apply() {
        let text = |s: &str| Value::Str(s.into());
        let consts = [
            Value::Int(0),
            Value::Int(250),
            Value::Int(-7),
            Value::Int(i64::MAX),
            Value::Int(i64::MIN),
            Value::Int((1 << 53) + 1),
            text("paid"),
            text("pain"),
            text(""),
            Value::Float(2.5),
            Value::Nil,
        ];
        let mut fields = consts.to_vec();
        fields.extend([
            Value::Float(250.0),
            Value::Float(-0.0),
            Value::Float(f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Float(f64::NEG_INFINITY),
            Value::Float(9_007_199_254_740_993.0),
            Value::Float(9.223_372_036_854_776e18),
            Value::Keyword("paid".into()),
            Value::Bool(true),
            text("shipped"),
            text("paid"),
        ]);
        let ops = [
            Prim::Eq,
            Prim::Lt,
            Prim::Gt,
            Prim::Le,
            Prim::Ge,
            Prim::Add,
            Prim::Mod,
        ];
        let mut answered = 0;
        for op in ops {
            for c in &consts {
                let fixed = Fixed::of(op, c);
                for f in &fields {
                    for field_first in [true, false] {
                        let Some(b) = fixed.answer(op, f, field_first) else {
                            continue;
                        };
                        answered += 1;
                        let (x, y) = if field_first { (f, c) } else { (c, f) };
                        let general = op.apply(x, y).and_then(Result::ok);
                        assert_eq!(general, Some(Value::Bool(b)), "{op:?} {x:?} {y:?}");
                    }
                }
            }
        }
        assert!(answered > 500, "{answered}");
    }
}
