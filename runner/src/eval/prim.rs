//! Integer fast paths for the hot two-argument arithmetic and comparison builtins.
//!
//! The analyzer turns `(+ x y)`, where `+` is the builtin (not a local or a definition), into
//! `Expr::Prim`; the evaluator computes two integer operands inline. Every other case — floats,
//! non-numbers, overflow, division by zero — goes to the builtin itself, which therefore alone
//! defines the semantics and the error messages (a test checks the inline answers against it).

use crate::value::Value;

/// An operation with an inline integer path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prim {
    Add,
    Sub,
    Mul,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Mod,
    Rem,
    Quot,
}

impl Prim {
    /// The operation of a clojure.core builtin, if it has one.
    pub fn of(name: &str) -> Option<Prim> {
        Some(match name {
            "+" => Prim::Add,
            "-" => Prim::Sub,
            "*" => Prim::Mul,
            "<" => Prim::Lt,
            ">" => Prim::Gt,
            "<=" => Prim::Le,
            ">=" => Prim::Ge,
            "=" | "==" => Prim::Eq,
            "mod" => Prim::Mod,
            "rem" => Prim::Rem,
            "quot" => Prim::Quot,
            _ => return None,
        })
    }

    /// The result for two integers; `None` leaves the case to the builtin (overflow, a zero or
    /// -1 divisor).
    pub fn ints(self, a: i64, b: i64) -> Option<Value> {
        Some(match self {
            Prim::Add => Value::Int(a.checked_add(b)?),
            Prim::Sub => Value::Int(a.checked_sub(b)?),
            Prim::Mul => Value::Int(a.checked_mul(b)?),
            Prim::Lt => Value::Bool(a < b),
            Prim::Gt => Value::Bool(a > b),
            Prim::Le => Value::Bool(a <= b),
            Prim::Ge => Value::Bool(a >= b),
            Prim::Eq => Value::Bool(a == b),
            Prim::Mod | Prim::Rem | Prim::Quot if b == 0 || b == -1 => return None,
            Prim::Mod => {
                let r = a % b;
                Value::Int(if r != 0 && (r < 0) != (b < 0) {
                    r + b
                } else {
                    r
                })
            }
            Prim::Rem => Value::Int(a % b),
            Prim::Quot => Value::Int(a / b),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::Interp;
    use crate::eval::testing::NoTools;

    #[test]
    fn inline_integer_answers_match_the_builtins() {
        let names = [
            "+", "-", "*", "<", ">", "<=", ">=", "=", "==", "mod", "rem", "quot",
        ];
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
        let mut answered = 0;
        for name in names {
            let op = Prim::of(name).expect("a prim");
            let b = crate::builtins::lookup(None, name)
                .found()
                .expect("a builtin");
            for a in ints {
                for c in ints {
                    let Some(inline) = op.ints(a, c) else {
                        continue;
                    };
                    answered += 1;
                    let general = (b.f)(&mut interp, vec![Value::Int(a), Value::Int(c)]);
                    let general = general.map(|v| crate::print::pr_str(&v)).ok();
                    assert_eq!(
                        Some(crate::print::pr_str(&inline)),
                        general,
                        "({name} {a} {c})"
                    );
                }
            }
        }
        assert!(answered > 1000, "{answered}");
    }
}
