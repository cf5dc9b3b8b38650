//! Bit operations on 64-bit integers, numeric casts (`int long double float num`), the
//! auto-promoting operators (`+' -' *' inc' dec'`) and the PTC math helpers (`round floor ceil
//! sqrt pow`).
//!
//! Shifts and bit indexes use the low 6 bits of the count, as the JVM does (`(bit-shift-left 1
//! 64)` is 1). PTC-Lisp has no BigInt, so `+'` and friends behave like the checked `+`: an
//! overflow is an error, never a wrap (DIV in runner/DIVERGENCES-coll.md). Casts truncate
//! toward zero and fail outside the target range, as Clojure's do.

use super::math::{add2, int_arg, mul2, sub2, to_f64};
use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "bit-and",
        2,
        _,
        "Bitwise and.",
        "(bit-and 12 10) ;=> 8",
        |_, a| fold_bits(a, "bit-and", |x, y| x & y)
    ),
    def!(
        "bit-or",
        2,
        _,
        "Bitwise or.",
        "(bit-or 12 10) ;=> 14",
        |_, a| fold_bits(a, "bit-or", |x, y| x | y)
    ),
    def!(
        "bit-xor",
        2,
        _,
        "Bitwise exclusive or.",
        "(bit-xor 12 10) ;=> 6",
        |_, a| fold_bits(a, "bit-xor", |x, y| x ^ y)
    ),
    def!(
        "bit-and-not",
        2,
        _,
        "Bitwise and with the complement of the others.",
        "(bit-and-not 12 10) ;=> 4",
        |_, a| fold_bits(a, "bit-and-not", |x, y| x & !y)
    ),
    def!(
        "bit-not",
        1,
        1,
        "Bitwise complement.",
        "(bit-not 0) ;=> -1",
        |_, a| Ok(Value::Int(!int_arg(&a[0], "bit-not")?))
    ),
    def!(
        "bit-shift-left",
        2,
        2,
        "Shifts left by n (mod 64).",
        "(bit-shift-left 1 10) ;=> 1024",
        |_, a| bit2(&a, "bit-shift-left", |x, n| x.wrapping_shl(n))
    ),
    def!(
        "bit-shift-right",
        2,
        2,
        "Arithmetic shift right by n (mod 64).",
        "(bit-shift-right -8 1) ;=> -4",
        |_, a| bit2(&a, "bit-shift-right", |x, n| x.wrapping_shr(n))
    ),
    def!(
        "unsigned-bit-shift-right",
        2,
        2,
        "Logical shift right by n (mod 64).",
        "(unsigned-bit-shift-right -1 60) ;=> 15",
        |_, a| bit2(&a, "unsigned-bit-shift-right", |x, n| {
            i64::from_ne_bytes((u64::from_ne_bytes(x.to_ne_bytes()).wrapping_shr(n)).to_ne_bytes())
        })
    ),
    def!(
        "bit-test",
        2,
        2,
        "True if bit n is set.",
        "(bit-test 5 0) ;=> true",
        |_, a| {
            let x = int_arg(&a[0], "bit-test")?;
            let n = shift_count(&a[1], "bit-test")?;
            Ok(Value::Bool(x & 1i64.wrapping_shl(n) != 0))
        }
    ),
    def!(
        "bit-set",
        2,
        2,
        "x with bit n set.",
        "(bit-set 0 3) ;=> 8",
        |_, a| bit2(&a, "bit-set", |x, n| x | 1i64.wrapping_shl(n))
    ),
    def!(
        "bit-clear",
        2,
        2,
        "x with bit n cleared.",
        "(bit-clear 15 0) ;=> 14",
        |_, a| bit2(&a, "bit-clear", |x, n| x & !1i64.wrapping_shl(n))
    ),
    def!(
        "bit-flip",
        2,
        2,
        "x with bit n flipped.",
        "(bit-flip 5 1) ;=> 7",
        |_, a| bit2(&a, "bit-flip", |x, n| x ^ 1i64.wrapping_shl(n))
    ),
    def!(
        "int",
        1,
        1,
        "x as an integer, truncated toward zero (32-bit range; a char gives its code).",
        "(int 2.7) ;=> 2",
        |_, a| to_int(&a[0], "int", f64::from(i32::MIN), f64::from(i32::MAX))
    ),
    def!(
        "long",
        1,
        1,
        "x as an integer, truncated toward zero.",
        "(long -2.9) ;=> -2",
        |_, a| to_int(
            &a[0],
            "long",
            -9.223_372_036_854_776e18,
            9.223_372_036_854_776e18
        )
    ),
    def!(
        "double",
        1,
        1,
        "x as a double.",
        "(double 1) ;=> 1.0",
        |_, a| to_float(&a[0], "double")
    ),
    def!(
        "float",
        1,
        1,
        "x as a floating-point number.",
        "(float 1) ;=> 1.0",
        |_, a| {
            let v = to_float(&a[0], "float")?;
            match v {
                Value::Float(f) if f.is_finite() && f.abs() > f64::from(f32::MAX) => Err(
                    EvalError::arg("float", format!("value out of range for float: {f}")),
                ),
                v => Ok(v),
            }
        }
    ),
    def!(
        "num",
        1,
        1,
        "x itself if it is a number, else an error.",
        "(num 1) ;=> 1",
        |_, mut a| match a.remove(0) {
            v @ (Value::Int(_) | Value::Float(_)) => Ok(v),
            other => Err(expected("num", "a number", &other)),
        }
    ),
    def!(
        "+'",
        0,
        _,
        "Like + (no BigInt in PTC-Lisp: an overflow is an error).",
        "(+' 1 2) ;=> 3",
        |_, a| fold_num(a, "+'", Value::Int(0), add2)
    ),
    def!(
        "*'",
        0,
        _,
        "Like * (no BigInt in PTC-Lisp: an overflow is an error).",
        "(*' 3 4) ;=> 12",
        |_, a| fold_num(a, "*'", Value::Int(1), mul2)
    ),
    def!(
        "-'",
        1,
        _,
        "Like - (no BigInt in PTC-Lisp: an overflow is an error).",
        "(-' 5 7) ;=> -2",
        |i, a| super::math::minus(i, a)
    ),
    def!(
        "inc'",
        1,
        1,
        "Like inc (an overflow is an error).",
        "(inc' 1) ;=> 2",
        |_, a| add2(&a[0], &Value::Int(1))
    ),
    def!(
        "dec'",
        1,
        1,
        "Like dec (an overflow is an error).",
        "(dec' 1) ;=> 0",
        |_, a| sub2(&a[0], &Value::Int(1))
    ),
    def!(
        "round",
        1,
        2,
        "PTC helper: x rounded half up to an integer, or to n decimals (a double).",
        "(round 2.567 2) ;=> 2.57",
        round
    ),
    def!(
        "floor",
        1,
        1,
        "PTC helper: the largest integer not above x.",
        "(floor 2.7) ;=> 2",
        |_, a| float_to_int(&a[0], "floor", f64::floor)
    ),
    def!(
        "ceil",
        1,
        1,
        "PTC helper: the smallest integer not below x.",
        "(ceil 2.1) ;=> 3",
        |_, a| float_to_int(&a[0], "ceil", f64::ceil)
    ),
    def!(
        "sqrt",
        1,
        1,
        "PTC helper: the square root (a double).",
        "(sqrt 9) ;=> 3.0",
        |_, a| Ok(Value::Float(to_f64(&a[0], "sqrt")?.sqrt()))
    ),
    def!(
        "pow",
        2,
        2,
        "PTC helper: x to the power y; an integer when both are integers and it fits.",
        "(pow 2 10) ;=> 1024",
        pow
    ),
];

fn shift_count(v: &Value, op: &str) -> EvalResult<u32> {
    let n = int_arg(v, op)?;
    // The JVM masks a long shift count to its low 6 bits.
    Ok(u32::try_from(n & 63).unwrap_or(0))
}

fn bit2(a: &[Value], op: &str, f: fn(i64, u32) -> i64) -> EvalResult {
    let x = int_arg(&a[0], op)?;
    let n = shift_count(&a[1], op)?;
    Ok(Value::Int(f(x, n)))
}

fn fold_bits(a: Vec<Value>, op: &str, f: fn(i64, i64) -> i64) -> EvalResult {
    let mut it = a.iter();
    let mut acc = int_arg(it.next().unwrap_or(&Value::Nil), op)?;
    for x in it {
        acc = f(acc, int_arg(x, op)?);
    }
    Ok(Value::Int(acc))
}

fn fold_num(
    a: Vec<Value>,
    op: &str,
    init: Value,
    f: fn(&Value, &Value) -> EvalResult,
) -> EvalResult {
    let mut it = a.into_iter();
    let Some(mut acc) = it.next() else {
        return Ok(init);
    };
    to_f64(&acc, op)?;
    for x in it {
        acc = f(&acc, &x)?;
    }
    Ok(acc)
}

/// Truncates toward zero, failing outside `[lo, hi]` (NaN gives 0, as on the JVM).
#[allow(clippy::cast_possible_truncation)]
fn to_int(v: &Value, op: &str, lo: f64, hi: f64) -> EvalResult {
    let out_of_range =
        |shown: String| EvalError::arg(op, format!("value out of range for {op}: {shown}"));
    match v {
        Value::Int(n) => {
            let f = *n as f64;
            if f < lo || f > hi {
                return Err(out_of_range(n.to_string()));
            }
            Ok(Value::Int(*n))
        }
        Value::Float(f) if f.is_nan() => Ok(Value::Int(0)),
        Value::Float(f) => {
            if *f < lo || *f > hi {
                return Err(out_of_range(f.to_string()));
            }
            Ok(Value::Int(f.trunc() as i64))
        }
        Value::Char(c) => Ok(Value::Int(i64::from(u32::from(*c)))),
        other => Err(expected(op, "a number", other)),
    }
}

fn to_float(v: &Value, op: &str) -> EvalResult {
    match v {
        #[allow(clippy::cast_precision_loss)]
        Value::Int(n) => Ok(Value::Float(*n as f64)),
        Value::Float(f) => Ok(Value::Float(*f)),
        other => Err(expected(op, "a number", other)),
    }
}

/// A float result as an integer when it fits, else an error naming `op`.
#[allow(clippy::cast_possible_truncation)]
fn float_to_int(v: &Value, op: &str, f: fn(f64) -> f64) -> EvalResult {
    match v {
        Value::Int(n) => Ok(Value::Int(*n)),
        _ => {
            let x = f(to_f64(v, op)?);
            if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x) {
                return Err(EvalError::new(
                    ErrorKind::ArithmeticError,
                    op,
                    format!("{op}: {x} does not fit in an integer"),
                ));
            }
            Ok(Value::Int(x as i64))
        }
    }
}

fn round(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let Some(places) = a.get(1) else {
        return float_to_int(&a[0], "round", round_half_up);
    };
    let places = int_arg(places, "round")?.clamp(0, 15);
    let scale = 10f64.powi(i32::try_from(places).unwrap_or(0));
    let x = to_f64(&a[0], "round")?;
    Ok(Value::Float(round_half_up(x * scale) / scale))
}

/// Java's `Math.round`: the closest integer, ties toward positive infinity.
pub fn round_half_up(x: f64) -> f64 {
    let f = x.floor();
    if x - f >= 0.5 { f + 1.0 } else { f }
}

fn pow(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    if let (Value::Int(x), Value::Int(y)) = (&a[0], &a[1])
        && let Some(r) = u32::try_from(*y).ok().and_then(|y| x.checked_pow(y))
    {
        return Ok(Value::Int(r));
    }
    Ok(Value::Float(
        to_f64(&a[0], "pow")?.powf(to_f64(&a[1], "pow")?),
    ))
}
