//! Inline arithmetic and comparison for the hot two-argument number builtins.
//!
//! A table entry declares its operation as `Fast::Prim(op)` (`+ - * < > <= >= mod rem quot`).
//! The analyzer turns `(op x y)` naming such a builtin into `Expr::Prim`, and every other way of
//! calling it (`apply2` from `reduce`, `sort-by`, a builtin held in a local) reaches the same
//! [`Prim::apply`] through `builtins::call2`. Two integers are computed inline; other numbers
//! use the builtin's own two-argument function; anything else (and overflow, a zero divisor) is
//! left to the builtin's general entry, which alone defines errors. Tests check both answers
//! against the general entries.

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
        })
    }

    /// The result for any two operands, or `None` for the builtin's general entry: integers
    /// inline, other numbers through the builtin's binary function (comparisons of floats are
    /// left to the general entry, which knows about NaN).
    #[inline]
    pub fn apply(self, a: &Value, b: &Value) -> Option<EvalResult> {
        if let (Value::Int(x), Value::Int(y)) = (a, b)
            && let Some(v) = self.ints(*x, *y)
        {
            return Some(Ok(v));
        }
        let numbers = matches!(a, Value::Int(_) | Value::Float(_))
            && matches!(b, Value::Int(_) | Value::Float(_));
        if !numbers {
            return None;
        }
        match self {
            Prim::Add => Some(math::add2(a, b)),
            Prim::Sub => Some(math::sub2(a, b)),
            Prim::Mul => Some(math::mul2(a, b)),
            Prim::Mod => Some(math::mod2(a, b)),
            Prim::Rem => Some(math::rem2(a, b)),
            Prim::Quot => Some(math::quot2(a, b)),
            Prim::Lt | Prim::Gt | Prim::Le | Prim::Ge => None,
        }
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
        assert_eq!(ops, 10, "the table declares 10 prims");
        assert!(answered > 1000, "{answered}");
    }
}
