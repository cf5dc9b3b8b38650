//! Numbers: arithmetic with overflow checks (an overflow is an error, as in Clojure, never a
//! wrap), comparison, and `Math/`. Integer ops stay integers; any float operand makes a float.
//! `(/ 1 2)` is 0.5: PTC-Lisp has no ratios (DIV-1 in docs/divergences.md).

use super::{BuiltinDef, Fast, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::eval::prim::Prim;
use crate::value::Value;
use std::cmp::Ordering;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "+",
        0,
        _,
        "Sum of the numbers.",
        "(+ 1 2 3) ;=> 6",
        |_, a| fold(a, "+", Value::Int(0), add2),
        Fast::Prim(Prim::Add)
    ),
    def!(
        "-",
        1,
        _,
        "Subtracts the rest from the first; negates one argument.",
        "(- 10 4) ;=> 6",
        minus,
        Fast::Prim(Prim::Sub)
    ),
    def!(
        "*",
        0,
        _,
        "Product of the numbers.",
        "(* 2 3) ;=> 6",
        |_, a| fold(a, "*", Value::Int(1), mul2),
        Fast::Prim(Prim::Mul)
    ),
    def!(
        "/",
        1,
        _,
        "Divides the first by the rest; integers that divide evenly stay integers.",
        "(/ 10 4) ;=> 2.5",
        divide
    ),
    def!(
        "inc",
        1,
        1,
        "Adds one.",
        "(inc 1) ;=> 2",
        |_, a| add2(&a[0], &Value::Int(1)),
        Fast::One(|a| Some(add2(a, &Value::Int(1))))
    ),
    def!(
        "dec",
        1,
        1,
        "Subtracts one.",
        "(dec 1) ;=> 0",
        |_, a| sub2(&a[0], &Value::Int(1)),
        Fast::One(|a| Some(sub2(a, &Value::Int(1))))
    ),
    def!(
        "quot",
        2,
        2,
        "Integer division truncated toward zero.",
        "(quot 7 2) ;=> 3",
        |_, a| quot2(&a[0], &a[1]),
        Fast::Prim(Prim::Quot)
    ),
    def!(
        "rem",
        2,
        2,
        "Remainder with the sign of the dividend.",
        "(rem -7 2) ;=> -1",
        |_, a| rem2(&a[0], &a[1]),
        Fast::Prim(Prim::Rem)
    ),
    def!(
        "mod",
        2,
        2,
        "Modulus with the sign of the divisor.",
        "(mod -7 2) ;=> 1",
        |_, a| mod2(&a[0], &a[1]),
        Fast::Prim(Prim::Mod)
    ),
    def!(
        "max",
        1,
        _,
        "Largest of the numbers.",
        "(max 1 3 2) ;=> 3",
        |_, a| extreme(a, "max", Ordering::Less)
    ),
    def!(
        "min",
        1,
        _,
        "Smallest of the numbers.",
        "(min 1 3 2) ;=> 1",
        |_, a| extreme(a, "min", Ordering::Greater)
    ),
    def!(
        "abs",
        1,
        1,
        "Absolute value.",
        "(abs -2) ;=> 2",
        |_, a| abs(&a[0])
    ),
    def!(
        "==",
        1,
        _,
        "Numeric equality across ints and floats.",
        "(== 1 1.0) ;=> true",
        |_, a| chain(a, "==", |o| o == Ordering::Equal)
    ),
    def!(
        "<",
        1,
        _,
        "Strictly increasing.",
        "(< 1 2 3) ;=> true",
        |_, a| chain(a, "<", |o| o == Ordering::Less),
        Fast::Prim(Prim::Lt)
    ),
    def!(
        ">",
        1,
        _,
        "Strictly decreasing.",
        "(> 3 2) ;=> true",
        |_, a| chain(a, ">", |o| o == Ordering::Greater),
        Fast::Prim(Prim::Gt)
    ),
    def!(
        "<=",
        1,
        _,
        "Non-decreasing.",
        "(<= 1 1 2) ;=> true",
        |_, a| chain(a, "<=", |o| o != Ordering::Greater),
        Fast::Prim(Prim::Le)
    ),
    def!(
        ">=",
        1,
        _,
        "Non-increasing.",
        "(>= 2 2 1) ;=> true",
        |_, a| chain(a, ">=", |o| o != Ordering::Less),
        Fast::Prim(Prim::Ge)
    ),
    def!(
        "compare",
        2,
        2,
        "Compares two values: negative, zero or positive.",
        "(compare 1 2) ;=> -1",
        |_, a| compare(&a[0], &a[1]).map(Value::Int)
    ),
    def!(
        "zero?",
        1,
        1,
        "True if the number is zero.",
        "(zero? 0) ;=> true",
        |_, a| sign(&a[0], "zero?").map(|s| Value::Bool(s == Ordering::Equal))
    ),
    def!(
        "pos?",
        1,
        1,
        "True if the number is positive.",
        "(pos? 1) ;=> true",
        |_, a| sign(&a[0], "pos?").map(|s| Value::Bool(s == Ordering::Greater))
    ),
    def!(
        "neg?",
        1,
        1,
        "True if the number is negative.",
        "(neg? -1) ;=> true",
        |_, a| sign(&a[0], "neg?").map(|s| Value::Bool(s == Ordering::Less))
    ),
    def!(
        "even?",
        1,
        1,
        "True if the integer is even.",
        "(even? 2) ;=> true",
        |_, a| int_arg(&a[0], "even?").map(|i| Value::Bool(i % 2 == 0))
    ),
    def!(
        "odd?",
        1,
        1,
        "True if the integer is odd.",
        "(odd? 3) ;=> true",
        |_, a| int_arg(&a[0], "odd?").map(|i| Value::Bool(i % 2 != 0))
    ),
];

/// `Math/...` interop.
pub static MATH_TABLE: &[BuiltinDef] = &[
    def!(
        "abs",
        1,
        1,
        "Absolute value.",
        "(Math/abs -2.5) ;=> 2.5",
        |_, a| abs(&a[0])
    ),
    def!(
        "sqrt",
        1,
        1,
        "Square root (a double).",
        "(Math/sqrt 9) ;=> 3.0",
        |_, a| float_fn(&a[0], "Math/sqrt", f64::sqrt)
    ),
    def!(
        "floor",
        1,
        1,
        "Largest integer-valued double not above x.",
        "(Math/floor 2.7) ;=> 2.0",
        |_, a| float_fn(&a[0], "Math/floor", f64::floor)
    ),
    def!(
        "ceil",
        1,
        1,
        "Smallest integer-valued double not below x.",
        "(Math/ceil 2.1) ;=> 3.0",
        |_, a| float_fn(&a[0], "Math/ceil", f64::ceil)
    ),
    def!(
        "round",
        1,
        1,
        "Rounds half up to an integer.",
        "(Math/round 2.5) ;=> 3",
        |_, a| round(&a[0])
    ),
    def!(
        "pow",
        2,
        2,
        "x to the power y (a double).",
        "(Math/pow 2 10) ;=> 1024.0",
        |_, a| Ok(Value::Float(java_pow(
            to_f64(&a[0], "Math/pow")?,
            to_f64(&a[1], "Math/pow")?
        )))
    ),
    def!(
        "log",
        1,
        1,
        "Natural logarithm.",
        "(Math/log 1) ;=> 0.0",
        |_, a| float_fn(&a[0], "Math/log", f64::ln)
    ),
    def!(
        "log10",
        1,
        1,
        "Base-10 logarithm.",
        "(Math/log10 100) ;=> 2.0",
        |_, a| float_fn(&a[0], "Math/log10", f64::log10)
    ),
    def!(
        "exp",
        1,
        1,
        "e to the power x.",
        "(Math/exp 0) ;=> 1.0",
        |_, a| float_fn(&a[0], "Math/exp", f64::exp)
    ),
    def!(
        "max",
        2,
        2,
        "The larger of two numbers.",
        "(Math/max 1 2) ;=> 2",
        |_, a| extreme(a, "Math/max", Ordering::Less)
    ),
    def!(
        "min",
        2,
        2,
        "The smaller of two numbers.",
        "(Math/min 1 2) ;=> 1",
        |_, a| extreme(a, "Math/min", Ordering::Greater)
    ),
];

fn overflow(op: &str) -> EvalError {
    EvalError::new(ErrorKind::ArithmeticError, op, "integer overflow")
}

/// A number as f64, or a type error naming `op`.
pub fn to_f64(v: &Value, op: &str) -> EvalResult<f64> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        other => Err(expected(op, "a number", other)),
    }
}

pub fn int_arg(v: &Value, op: &str) -> EvalResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(expected(op, "an integer", other)),
    }
}

fn float_fn(v: &Value, op: &str, f: fn(f64) -> f64) -> EvalResult {
    Ok(Value::Float(f(to_f64(v, op)?)))
}

fn arith(
    a: &Value,
    b: &Value,
    op: &str,
    i: fn(i64, i64) -> Option<i64>,
    f: fn(f64, f64) -> f64,
) -> EvalResult {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => i(*x, *y).map(Value::Int).ok_or_else(|| overflow(op)),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            Ok(Value::Float(f(to_f64(a, op)?, to_f64(b, op)?)))
        }
        (Value::Int(_) | Value::Float(_), other) | (other, _) => {
            Err(expected(op, "numbers", other))
        }
    }
}

pub fn add2(a: &Value, b: &Value) -> EvalResult {
    arith(a, b, "+", i64::checked_add, |x, y| x + y)
}
pub fn sub2(a: &Value, b: &Value) -> EvalResult {
    arith(a, b, "-", i64::checked_sub, |x, y| x - y)
}
pub fn mul2(a: &Value, b: &Value) -> EvalResult {
    arith(a, b, "*", i64::checked_mul, |x, y| x * y)
}

fn fold(
    args: Vec<Value>,
    op: &str,
    init: Value,
    f: fn(&Value, &Value) -> EvalResult,
) -> EvalResult {
    let mut it = args.into_iter();
    let mut acc = match it.next() {
        Some(first) => {
            to_f64(&first, op)?;
            first
        }
        None => return Ok(init),
    };
    for x in it {
        acc = f(&acc, &x)?;
    }
    Ok(acc)
}

/// `-`: subtraction, or negation of one argument (`(- 0.0)` is `-0.0`).
pub fn minus(_: &mut Interp<'_>, args: Vec<Value>) -> EvalResult {
    match args.as_slice() {
        [Value::Float(f)] => return Ok(Value::Float(-f)),
        [x] => return sub2(&Value::Int(0), x),
        _ => {}
    }
    let mut it = args.into_iter();
    let first = it.next().unwrap_or_default();
    to_f64(&first, "-")?;
    it.try_fold(first, |acc, x| sub2(&acc, &x))
}

fn div2(a: &Value, b: &Value) -> EvalResult {
    match (a, b) {
        (Value::Int(_), Value::Int(0)) => Err(EvalError::new(
            ErrorKind::ArithmeticError,
            "/",
            "divide by zero",
        )),
        // Exact integer division; (/ MIN -1) wraps to MIN as on the JVM.
        (Value::Int(x), Value::Int(y)) if x.wrapping_rem(*y) == 0 => {
            Ok(Value::Int(x.wrapping_div(*y)))
        }
        _ => Ok(Value::Float(to_f64(a, "/")? / to_f64(b, "/")?)),
    }
}

fn divide(_: &mut Interp<'_>, args: Vec<Value>) -> EvalResult {
    if let [x] = args.as_slice() {
        return div2(&Value::Int(1), x);
    }
    let mut it = args.into_iter();
    let first = it.next().unwrap_or_default();
    it.try_fold(first, |acc, x| div2(&acc, &x))
}

fn int_div(
    a: &Value,
    b: &Value,
    op: &str,
    i: fn(i64, i64) -> Option<i64>,
    f: fn(f64, f64) -> Option<f64>,
) -> EvalResult {
    match (a, b) {
        (_, Value::Int(0)) => Err(EvalError::new(
            ErrorKind::ArithmeticError,
            op,
            "divide by zero",
        )),
        (Value::Int(x), Value::Int(y)) => i(*x, *y).map(Value::Int).ok_or_else(|| overflow(op)),
        _ => {
            let (x, y) = (to_f64(a, op)?, to_f64(b, op)?);
            if y == 0.0 {
                return Err(EvalError::new(
                    ErrorKind::ArithmeticError,
                    op,
                    "divide by zero",
                ));
            }
            f(x, y).map(Value::Float).ok_or_else(|| {
                EvalError::new(ErrorKind::ArithmeticError, op, "Infinite or NaN quotient")
            })
        }
    }
}

fn abs(v: &Value) -> EvalResult {
    match v {
        // Clojure 1.11 (and the JVM) return the smallest long unchanged.
        Value::Int(i) => Ok(Value::Int(i.wrapping_abs())),
        Value::Float(f) => Ok(Value::Float(f.abs())),
        other => Err(expected("abs", "a number", other)),
    }
}

fn round(v: &Value) -> EvalResult {
    match v {
        Value::Int(i) => Ok(Value::Int(*i)),
        // Java's Math.round: nearest, ties up, saturating at the long range; NaN is 0.
        Value::Float(f) if f.is_nan() => Ok(Value::Int(0)),
        #[allow(clippy::cast_possible_truncation)]
        Value::Float(f) => Ok(Value::Int(super::bits::round_half_up(*f) as i64)),
        other => Err(expected("Math/round", "a number", other)),
    }
}

/// Numeric comparison across ints and floats.
pub fn num_cmp(a: &Value, b: &Value) -> EvalResult<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
        _ => {
            let (x, y) = (to_f64(a, "compare")?, to_f64(b, "compare")?);
            Ok(x.partial_cmp(&y).unwrap_or(Ordering::Equal))
        }
    }
}

fn chain(args: Vec<Value>, op: &str, ok: fn(Ordering) -> bool) -> EvalResult {
    for x in &args {
        to_f64(x, op)?;
    }
    for w in args.windows(2) {
        let o = num_cmp(&w[0], &w[1])?;
        let nan = matches!((&w[0], &w[1]), (Value::Float(x), _) if x.is_nan())
            || matches!(&w[1], Value::Float(y) if y.is_nan());
        if nan || !ok(o) {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// `max`/`min`: the later argument wins unless it compares `lose` against the best so far
/// (so ties return the later one, as in Clojure: `(max 1 1.0)` is `1.0`); NaN is contagious.
fn extreme(mut args: Vec<Value>, op: &str, lose: Ordering) -> EvalResult {
    if let Some(i) = plain_extreme(&args, lose) {
        let best = args.swap_remove(i);
        // Every argument is a number: nothing to give back, so the rest are forgotten (a loop
        // that does nothing, gone when compiled) rather than dropped one by one out of line.
        args.drain(..).for_each(std::mem::forget);
        return Ok(best);
    }
    let mut it = args.into_iter();
    let mut best = it.next().unwrap_or_default();
    let mut nan = match to_f64(&best, op)? {
        f if f.is_nan() => Some(best.clone()),
        _ => None,
    };
    for x in it {
        if matches!(x, Value::Float(f) if f.is_nan()) {
            nan = Some(x.clone());
        }
        if num_cmp(&x, &best)? != lose {
            best = x;
        }
    }
    Ok(nan.unwrap_or(best))
}

/// Where [`extreme`]'s winner is when every argument is a double without NaN, or every one an
/// integer (`(apply max (map :total rows))`): compared in place, by the same rule, instead of
/// each argument moved through `best` and compared through `num_cmp`. `None` for anything else
/// (mixed kinds, NaN, errors), which [`extreme`] decides.
fn plain_extreme(args: &[Value], lose: Ordering) -> Option<usize> {
    let mut best = 0;
    match args.first()? {
        Value::Float(first) => {
            let mut b = *first;
            for (i, x) in args.iter().enumerate() {
                let Value::Float(f) = x else { return None };
                match f.partial_cmp(&b)? {
                    o if o == lose => {}
                    _ => (b, best) = (*f, i),
                }
            }
        }
        Value::Int(first) => {
            let mut b = *first;
            for (i, x) in args.iter().enumerate() {
                let Value::Int(n) = x else { return None };
                if n.cmp(&b) != lose {
                    (b, best) = (*n, i);
                }
            }
        }
        _ => return None,
    }
    Some(best)
}

fn sign(v: &Value, op: &str) -> EvalResult<Ordering> {
    let f = to_f64(v, op)?;
    Ok(f.partial_cmp(&0.0).unwrap_or(Ordering::Equal))
}

/// Clojure's `compare`: numbers numerically, strings by UTF-16 difference, keywords by name,
/// vectors by length then elements, nil first; other mixes are an error.
pub fn compare(a: &Value, b: &Value) -> EvalResult<i64> {
    use Value::*;
    Ok(match (a, b) {
        (Nil, Nil) => 0,
        (Nil, _) => -1,
        (_, Nil) => 1,
        (Int(_) | Float(_), Int(_) | Float(_)) => ord_int(num_cmp(a, b)?),
        (Str(x), Str(y)) => string_compare(x, y),
        (Keyword(x), Keyword(y)) | (Symbol(x), Symbol(y)) => named_compare(x, y),
        (Bool(x), Bool(y)) => ord_int(x.cmp(y)),
        (Char(x), Char(y)) => i64::from(u32::from(*x)) - i64::from(u32::from(*y)),
        (Vector(x), Vector(y)) => {
            if x.len() != y.len() {
                return Ok(ord_int(x.len().cmp(&y.len())));
            }
            for (p, q) in x.iter().zip(y.iter()) {
                // Nested vectors recurse; grow the stack rather than overflow it.
                let c = stacker::maybe_grow(64 * 1024, 1024 * 1024, || compare(p, q))?;
                if c != 0 {
                    return Ok(c);
                }
            }
            0
        }
        (Temporal(x), Temporal(y)) => ord_int(x.cmp(y)),
        _ => {
            return Err(EvalError::type_err(
                "compare",
                format!("cannot compare {} with {}", a.type_name(), b.type_name()),
            ));
        }
    })
}

/// Keywords and symbols: by namespace first (none sorts first), then by name.
fn named_compare(a: &str, b: &str) -> i64 {
    let split = |s: &str| match s.split_once('/') {
        Some((ns, n)) if !ns.is_empty() && !n.is_empty() => (Some(ns.to_string()), n.to_string()),
        _ => (None, s.to_string()),
    };
    let ((na, a), (nb, b)) = (split(a), split(b));
    match (na, nb) {
        (None, Some(_)) => -1,
        (Some(_), None) => 1,
        (Some(x), Some(y)) if x != y => string_compare(&x, &y),
        _ => string_compare(&a, &b),
    }
}

fn ord_int(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

/// Java's String.compareTo: the difference of the first differing UTF-16 units, else of lengths.
fn string_compare(a: &str, b: &str) -> i64 {
    let (mut x, mut y) = (a.encode_utf16(), b.encode_utf16());
    loop {
        match (x.next(), y.next()) {
            (Some(p), Some(q)) if p != q => return i64::from(p) - i64::from(q),
            (Some(_), Some(_)) => {}
            (None, None) => return 0,
            (Some(_), None) => {
                return i64::try_from(a.encode_utf16().count()).unwrap_or(0)
                    - i64::try_from(b.encode_utf16().count()).unwrap_or(0);
            }
            (None, Some(_)) => {
                return i64::try_from(a.encode_utf16().count()).unwrap_or(0)
                    - i64::try_from(b.encode_utf16().count()).unwrap_or(0);
            }
        }
    }
}

/// A total order for sorted collections: `compare` where defined, else by type name.
pub fn compare_total(a: &Value, b: &Value) -> Ordering {
    match compare(a, b) {
        Ok(c) => c.cmp(&0),
        Err(_) => a.type_name().cmp(b.type_name()),
    }
}

/// Java's `Math.pow`, which differs from C's `pow` in two places: a NaN exponent gives NaN
/// even for base 1, and `(±1)^±∞` is NaN.
fn java_pow(x: f64, y: f64) -> f64 {
    if y.is_nan() || (x.abs() == 1.0 && y.is_infinite()) {
        f64::NAN
    } else {
        x.powf(y)
    }
}

/// `quot` of two numbers.
pub fn quot2(a: &Value, b: &Value) -> EvalResult {
    int_div(
        a,
        b,
        "quot",
        // The JVM wraps the one overflowing case, (quot MIN -1), as Clojure does.
        |x, y| Some(x.wrapping_div(y)),
        |x, y| finite_quotient(x, y).map(f64::trunc),
    )
}

/// `x / y` for Clojure's double `quot`/`rem`, which go through a BigDecimal when the quotient
/// leaves the long range: NaN or an infinity there is a NumberFormatException, so `None`.
fn finite_quotient(x: f64, y: f64) -> Option<f64> {
    Some(x / y).filter(|q| q.is_finite())
}

/// Clojure's double `rem`: `x - trunc(x / y) * y` (not C's fmod; `(rem 1.0 ##Inf)` is NaN).
fn rem_f(x: f64, y: f64) -> Option<f64> {
    finite_quotient(x, y).map(|q| x - q.trunc() * y)
}

/// `rem` of two numbers.
pub fn rem2(a: &Value, b: &Value) -> EvalResult {
    int_div(a, b, "rem", |x, y| Some(x.wrapping_rem(y)), rem_f)
}

/// Integer `mod`: the remainder with the sign of the divisor (`y` is not 0; -1 wraps).
#[inline]
pub fn floor_mod(x: i64, y: i64) -> i64 {
    let r = x.wrapping_rem(y);
    if r != 0 && (r < 0) != (y < 0) {
        r + y
    } else {
        r
    }
}

/// `mod` of two numbers.
pub fn mod2(a: &Value, b: &Value) -> EvalResult {
    int_div(
        a,
        b,
        "mod",
        |x, y| Some(floor_mod(x, y)),
        // Clojure's `mod`: the remainder, moved by the divisor when the signs of the
        // arguments (not of the remainder) differ.
        |x, y| {
            let r = rem_f(x, y)?;
            Some(if r == 0.0 || (x > 0.0) == (y > 0.0) {
                r
            } else {
                r + y
            })
        },
    )
}
