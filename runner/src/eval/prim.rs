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
//! (`tests/call_paths.rs` checks each against `apply` of the builtin).
//!
//! [`Quick`]: the fns LLM pipelines hand to `filter`, `remove`, `map`, `sort-by`, `group-by`
//! (`#(= "paid" (:status %))`, `#(> (:total %) n)`, `#(:id %)`) are answered by the builtin's
//! loop without entering them: no frame, no body walk. The answer is taken only when it is the
//! general path's, with no error possible: the inline prim answered (`Prim::apply` gave a
//! value), the call would not have passed `max_depth`, and the steps the body would charge
//! (one per call node: the keyword read, and the prim around it) neither exhaust the budget nor
//! reach a deadline check. Otherwise the fn is entered as usual, so errors and limits are the
//! general path's own (`tests/quick_fns.rs` runs both paths side by side).

use super::{Env, Interp};
use crate::analyze::{Expr, FnTemplate};
use crate::builtins::math;
use crate::error::EvalResult;
use crate::value::{KeyHint, Value};
use std::rc::Rc;

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
    /// constant), where the call itself was a fifth of the comparison.
    #[inline(always)]
    fn apply_inline(self, a: &Value, b: &Value) -> Option<EvalResult> {
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

/// A one-parameter fn whose body is a keyword read of its parameter, alone or compared by a
/// prim with a constant or a captured value; made by the analyzer (see [`Quick::of`]). The
/// field is at a fixed place for both shapes: reading it takes no match on the shape.
#[derive(Debug)]
pub struct Quick {
    /// The keyword read, as a value (for `get` on what is not a map) and as its text.
    key: Value,
    name: crate::value::Text,
    hint: KeyHint,
    /// `None`: `(fn [m] (:k m))`, one step, the keyword call. Some: `(fn [m] (op (:k m) c))`
    /// or `(fn [m] (op c (:k m)))`, two steps, the prim and the call.
    test: Option<QuickTest>,
}

/// The prim of a [`Quick`] fn and the operand beside the field.
#[derive(Debug)]
pub struct QuickTest {
    op: Prim,
    other: Other,
    field_first: bool,
    /// The constant operand decoded at analysis, for the tests answered inline.
    fixed: Fixed,
}

impl QuickTest {
    fn new(op: Prim, other: Other, field_first: bool) -> QuickTest {
        let fixed = match &other {
            Other::Const(c) => Fixed::of(op, c),
            Other::Capture(_) => Fixed::No,
        };
        QuickTest {
            op,
            other,
            field_first,
            fixed,
        }
    }
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
    fn answer(&self, op: Prim, field: &Value, field_first: bool) -> Option<bool> {
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

/// The operand beside the field of a [`QuickTest`].
#[derive(Debug)]
pub enum Other {
    Const(Value),
    Capture(u32),
}

impl Quick {
    /// The quick form of a fn, if it has one: a single arity of one plain parameter whose body
    /// is one of the [`Quick`] shapes over that parameter.
    pub fn of(t: &FnTemplate) -> Option<Quick> {
        let [a] = t.arities.as_slice() else {
            return None;
        };
        if a.variadic || a.required != 1 || !a.patterns.is_empty() {
            return None;
        }
        let param = *a.raw.first()?;
        let field = |e: &Expr| match e {
            Expr::Call(c) => match (&c.f, c.args.as_slice()) {
                (Expr::Const(kv @ Value::Keyword(k)), [Expr::Local(s) | Expr::Move(s)])
                    if *s == param =>
                {
                    Some((kv.clone(), k.clone()))
                }
                _ => None,
            },
            _ => None,
        };
        let other = |e: &Expr| match e {
            Expr::Const(v) => Some(Other::Const(v.clone())),
            Expr::Capture(i) => Some(Other::Capture(*i)),
            _ => None,
        };
        let quick = |(key, name), test| Quick {
            key,
            name,
            hint: KeyHint::default(),
            test,
        };
        let test = |other, field_first, op| Some(QuickTest::new(op, other, field_first));
        match &a.body {
            Expr::Prim(p) => match (field(&p.x), other(&p.y)) {
                (Some(key), Some(o)) => Some(quick(key, test(o, true, p.op))),
                _ => Some(quick(field(&p.y)?, test(other(&p.x)?, false, p.op))),
            },
            body => Some(quick(field(body)?, None)),
        }
    }
}

impl Interp<'_> {
    /// The answer of lambda `l` for argument `x` when it is quick (see the module header), or
    /// `None`, with nothing changed, for the general call.
    #[inline]
    pub(crate) fn quick_call(&mut self, l: &super::Lambda, x: &Value) -> Option<Value> {
        match &l.template.quick {
            Some(q) => self.quick_answer(q, &l.captures, x),
            None => None,
        }
    }

    /// Calls lambda `l` with a borrowed argument: its quick answer, read in place, else a
    /// call with a copy. For the builtins' loops over a fn (keywords keep `apply1_ref`).
    #[inline]
    pub fn apply1_fn(&mut self, l: &Rc<super::Lambda>, x: &Value) -> EvalResult {
        match self.quick_call(l, x) {
            Some(v) => Ok(v),
            None => self.enter1(l, x.clone()),
        }
    }

    #[inline(never)]
    fn quick_answer(&mut self, q: &Quick, captures: &[Value], x: &Value) -> Option<Value> {
        if self.depth >= self.limits.max_depth {
            return None;
        }
        let owned;
        let field = match x {
            Value::Map(m) => m
                .get_keyword_hinted(&q.name, &q.hint)
                .unwrap_or(&Value::Nil),
            _ => {
                owned = crate::builtins::coll::get(x, &q.key).unwrap_or_default();
                &owned
            }
        };
        let (v, steps) = match &q.test {
            None => (field.clone(), 1),
            Some(t) => {
                if let Some(b) = t.fixed.answer(t.op, field, t.field_first) {
                    return self.quick_steps(Value::Bool(b), 2);
                }
                let c = match &t.other {
                    Other::Const(c) => c,
                    Other::Capture(i) => captures.get(*i as usize)?,
                };
                let (a, b) = if t.field_first {
                    (field, c)
                } else {
                    (c, field)
                };
                match t.op.apply(a, b) {
                    Some(Ok(v)) => (v, 2),
                    _ => return None,
                }
            }
        };
        self.quick_steps(v, steps)
    }

    /// Answer `v` of a quick fn whose body charges `steps`, with them charged, unless one of
    /// them would end the run or check the deadline.
    #[inline(always)]
    fn quick_steps(&mut self, v: Value, steps: u64) -> Option<Value> {
        let after = self.steps.checked_add(steps)?;
        if after > self.limits.max_steps || after >> 10 != self.steps >> 10 {
            return None;
        }
        self.steps = after;
        Some(v)
    }
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
    pub(super) fn eval_prim(&mut self, p: &crate::analyze::PrimCall, env: Env<'_>) -> EvalResult {
        match (p.shape, &p.x, &p.y) {
            (Shape::FieldConst, Expr::Call(f), Expr::Const(c)) => {
                self.prim_field(p, f, c, true, env)
            }
            (Shape::ConstField, Expr::Const(c), Expr::Call(f)) => {
                self.prim_field(p, f, c, false, env)
            }
            (Shape::Fields, Expr::Call(fx), Expr::Call(fy)) => self.prim_fields(p, fx, fy, env),
            (Shape::ConstAny, Expr::Const(c), y) => {
                let y = self.operand(y, env)?;
                self.prim_ref(p, c, &y)
            }
            (Shape::SlotConst, Expr::Local(i), Expr::Const(c)) => {
                let x = self
                    .stack
                    .get(env.base + *i as usize)
                    .unwrap_or(&Value::Nil);
                // `(mod i 7)`: two integers without the call of the general answer.
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
            (Shape::SlotConst, Expr::Move(i), Expr::Const(c)) => match (self.take_slot(env, *i), c)
            {
                (Value::Int(a), Value::Int(b)) => match p.op.ints(a, *b) {
                    Some(v) => Ok(v),
                    None => self.prim_ref(p, &Value::Int(a), c),
                },
                (x, c) => self.prim_ref(p, &x, c),
            },
            _ => self.prim_general(p, env),
        }
    }

    /// Both operands evaluated in order (a constant second one read in place).
    fn prim_general(&mut self, p: &crate::analyze::PrimCall, env: Env<'_>) -> EvalResult {
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
    /// as `Expr::Call` charges it; a moved `m` is taken from its slot and dropped here.
    #[inline(never)]
    fn prim_field(
        &mut self,
        p: &crate::analyze::PrimCall,
        f: &crate::analyze::Call,
        c: &Value,
        field_first: bool,
        env: Env<'_>,
    ) -> EvalResult {
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
        let answer = field_test(p, m, (kv, k, &f.hint), c, field_first);
        match answer {
            Ok(r) => r,
            Err(args) => crate::builtins::call(self, p.builtin, args),
        }
    }

    /// `(op (:j m) (:k n))`, both maps locals or captures (`(* (:qty it) (:price it))`): each
    /// field read where it is, charged its step in order as `Expr::Call` charges it, without
    /// the two calls' dispatch.
    #[inline(never)]
    fn prim_fields(
        &mut self,
        p: &crate::analyze::PrimCall,
        fx: &crate::analyze::Call,
        fy: &crate::analyze::Call,
        env: Env<'_>,
    ) -> EvalResult {
        self.tick().map_err(|e| e.at(fx.pos))?;
        let x = self.field_of(fx, env);
        self.tick().map_err(|e| e.at(fy.pos))?;
        let y = self.field_of(fy, env);
        match p.op.apply(&x, &y) {
            Some(r) => r,
            None => crate::builtins::call2(self, p.builtin, x, y),
        }
    }

    /// The value of `(:k m)` for a [`local_field`] call, as `call_keyword` reads it (a moved
    /// `m` is taken from its slot).
    #[inline]
    fn field_of(&mut self, f: &crate::analyze::Call, env: Env<'_>) -> Value {
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
fn local_field(f: &crate::analyze::Call) -> Option<(&Value, &crate::value::Text, &Expr)> {
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

#[cfg(test)]
mod quick_tests {
    use crate::analyze::{Expr, analyze_program};

    /// Whether the first form of `src`, a fn (or a `let` whose body is one), has a quick form.
    fn quick(src: &str) -> bool {
        let forms = crate::reader::read_all(src, 1 << 20, 256).unwrap_or_default();
        let Ok(fs) = analyze_program(&forms, [], &[]).map(|p| p.forms) else {
            return false;
        };
        let f = match fs.first() {
            Some(Expr::Let(l)) => Some(&l.body),
            other => other,
        };
        matches!(f, Some(Expr::Fn(t, _)) if t.quick.is_some())
    }

    #[test]
    fn the_quick_shapes_and_only_they_are_recognised() {
        for yes in [
            r#"#(= "paid" (:status %))"#,
            "#(> (:total %) 250)",
            "#(< 2.5 (:total %))",
            "#(:id %)",
            "(fn [o] (mod (:n o) 7))",
            "(let [n 3] (fn [o] (>= (:n o) n)))",
            "(let [n 3] (fn [o] (>= n (:n o))))",
        ] {
            assert!(quick(yes), "{yes}");
        }
        for no in [
            // The `(do nil ...)` the integration tests compare against must stay general.
            r#"(fn [m] (do nil (= "paid" (:status m))))"#,
            "(fn [m] (do nil (:id m)))",
            "(fn [a b] (> (:t a) b))",
            "(fn [m & r] (:id m))",
            "(fn [{:keys [id]}] (= id 1))",
            "(fn ([m] (:id m)) ([m n] n))",
            "(fn [m] (= (:a m) (:b m)))",
            "(fn [m] (:id m 0))",
            "(fn [m] (get m :id))",
            "(fn [m] (inc (:id m)))",
            "(fn [m] (= 1 (:id {:id m})))",
        ] {
            assert!(!quick(no), "{no}");
        }
    }

    /// The shape of the first prim node in the first form of `src` (a fn's body, or the
    /// `let` around one), after analysis and liveness.
    fn shape(src: &str) -> Option<super::Shape> {
        let forms = crate::reader::read_all(src, 1 << 20, 256).ok()?;
        let fs = analyze_program(&forms, [], &[]).ok()?.forms;
        let mut e = fs.first()?;
        loop {
            e = match e {
                Expr::Let(l) => &l.body,
                Expr::Fn(t, _) => &t.arities.first()?.body,
                Expr::Prim(p) => return Some(p.shape),
                _ => return None,
            };
        }
    }

    #[test]
    fn prim_shapes_are_fixed_at_analysis_and_survive_moves() {
        use super::Shape::*;
        for (src, want) in [
            ("(fn [m] (> (:t m) 1))", FieldConst),
            ("(let [m {:t 1}] (fn [] (> (:t m) 1)))", FieldConst),
            ("(let [n 2] (fn [m] (= n (:t m))))", General),
            (r#"(fn [m] (= "a" (:t m)))"#, ConstField),
            ("(fn [m] (* (:a m) (:b m)))", Fields),
            ("(fn [m] (+ 1 (inc m)))", ConstAny),
            ("(fn [i] (* i 3))", SlotConst),
            ("(fn [i] (let [j i] (mod j 7)))", SlotConst),
            ("(fn [i j] (< i j))", General),
            ("(fn [m] (< (:a m) (:b {:b 1})))", General),
        ] {
            assert_eq!(shape(src), Some(want), "{src}");
        }
    }
}
