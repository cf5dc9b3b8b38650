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

use super::{Env, Interp};
use crate::analyze::Expr;
use crate::builtins::math;
use crate::error::EvalResult;
use crate::value::Value;

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
    #[inline]
    pub fn apply(self, a: &Value, b: &Value) -> Option<EvalResult> {
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

/// Evaluating a prim node: operands read in place where they can be.
impl Interp<'_> {
    /// `(op x y)` of a builtin with an inline integer path (see `prim`).
    pub(super) fn eval_prim(&mut self, p: &crate::analyze::PrimCall, env: Env<'_>) -> EvalResult {
        // Constants and locals (`(= "paid" s)`, `(mod i 7)`) are read in place, not copied.
        match (&p.x, &p.y) {
            (Expr::Call(f), Expr::Const(c)) if local_field(f).is_some() => {
                return self.prim_field(p, f, c, true, env);
            }
            (Expr::Const(c), Expr::Call(f)) if local_field(f).is_some() => {
                return self.prim_field(p, f, c, false, env);
            }
            (Expr::Const(c), y) => {
                let y = self.operand(y, env)?;
                return self.prim_ref(p, c, &y);
            }
            (Expr::Local(i), Expr::Const(c)) => {
                let x = self
                    .stack
                    .get(env.base + *i as usize)
                    .unwrap_or(&Value::Nil);
                if let Some(r) = p.op.apply(x, c) {
                    return r;
                }
                let x = x.clone();
                return crate::builtins::call(self, p.builtin, vec![x, c.clone()]);
            }
            _ => {}
        }
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
        self.tick().map_err(|e| e.at(f.pos))?;
        let Some((kv, k, arg)) = local_field(f) else {
            return Ok(Value::Nil);
        };
        let mut held = Value::Nil;
        let m = match arg {
            Expr::Move(i) => {
                held = self.take_slot(env, *i);
                &held
            }
            Expr::Local(i) => self
                .stack
                .get(env.base + *i as usize)
                .unwrap_or(&Value::Nil),
            Expr::Capture(i) => env.captures.get(*i as usize).unwrap_or(&Value::Nil),
            _ => &Value::Nil,
        };
        let other;
        let field = match m {
            Value::Map(map) => map.get_keyword_hinted(k, &f.hint).unwrap_or(&Value::Nil),
            m => {
                other = crate::builtins::coll::get(m, kv).unwrap_or_default();
                &other
            }
        };
        let (x, y) = if field_first { (field, c) } else { (c, field) };
        if let Some(r) = p.op.apply(x, y) {
            return r;
        }
        let args = vec![x.clone(), y.clone()];
        drop(held);
        crate::builtins::call(self, p.builtin, args)
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
