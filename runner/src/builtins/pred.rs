//! Type and value predicates (`nil? number? map? seq? fn? ifn? pos-int? NaN? distinct? ...`).
//!
//! The interpreter has fewer runtime types than the JVM, which fixes a few answers: a realized
//! seq is a list, so `list?` is true for it; a map entry is a two-element vector, so
//! `map-entry?` is true for any pair vector (both listed in runner/DIVERGENCES-coll.md). A
//! lazy seq is a seq, sequential and a coll, like Clojure's `LazySeq`.

use super::hof::NativeFn;
use super::{BuiltinDef, expected};
use crate::def;
use crate::error::EvalResult;
use crate::eval::Interp;
use crate::value::Value;

macro_rules! pred {
    ($name:expr, $doc:expr, $ex:expr, $test:expr) => {
        def!($name, 1, 1, $doc, $ex, |_, a| Ok(Value::Bool($test(&a[0]))))
    };
}

pub static TABLE: &[BuiltinDef] = &[
    pred!(
        "true?",
        "True if x is true.",
        "(true? 1) ;=> false",
        |v: &Value| { matches!(v, Value::Bool(true)) }
    ),
    pred!(
        "false?",
        "True if x is false.",
        "(false? nil) ;=> false",
        |v: &Value| { matches!(v, Value::Bool(false)) }
    ),
    pred!(
        "boolean?",
        "True if x is a boolean.",
        "(boolean? false) ;=> true",
        |v: &Value| matches!(v, Value::Bool(_))
    ),
    pred!(
        "number?",
        "True if x is a number.",
        "(number? 1.5) ;=> true",
        |v: &Value| matches!(v, Value::Int(_) | Value::Float(_))
    ),
    pred!(
        "integer?",
        "True if x is an integer.",
        "(integer? 1.0) ;=> false",
        |v: &Value| matches!(v, Value::Int(_))
    ),
    pred!(
        "int?",
        "True if x is a fixed-precision integer.",
        "(int? 1) ;=> true",
        |v: &Value| matches!(v, Value::Int(_))
    ),
    pred!(
        "float?",
        "True if x is a floating-point number.",
        "(float? 1.0) ;=> true",
        |v: &Value| matches!(v, Value::Float(_))
    ),
    pred!(
        "double?",
        "True if x is a double.",
        "(double? 1.0) ;=> true",
        |v: &Value| matches!(v, Value::Float(_))
    ),
    pred!(
        "string?",
        "True if x is a string.",
        "(string? \"a\") ;=> true",
        |v: &Value| matches!(v, Value::Str(_))
    ),
    pred!(
        "keyword?",
        "True if x is a keyword.",
        "(keyword? :a) ;=> true",
        |v: &Value| matches!(v, Value::Keyword(_))
    ),
    pred!(
        "symbol?",
        "True if x is a symbol.",
        "(symbol? 'a) ;=> true",
        |v: &Value| matches!(v, Value::Symbol(_))
    ),
    pred!(
        "char?",
        "True if x is a character.",
        "(char? \\a) ;=> true",
        |v: &Value| matches!(v, Value::Char(_))
    ),
    pred!(
        "map?",
        "True if x is a map.",
        "(map? {}) ;=> true",
        |v: &Value| matches!(v, Value::Map(_))
    ),
    pred!(
        "vector?",
        "True if x is a vector.",
        "(vector? [1]) ;=> true",
        |v: &Value| matches!(v, Value::Vector(_))
    ),
    pred!(
        "set?",
        "True if x is a set.",
        "(set? #{}) ;=> true",
        |v: &Value| matches!(v, Value::Set(_))
    ),
    pred!(
        "list?",
        "True if x is a list (any realized seq counts as one).",
        "(list? '(1)) ;=> true",
        |v: &Value| matches!(v, Value::List(_))
    ),
    pred!(
        "seq?",
        "True if x is a seq (a list or lazy seq).",
        "(seq? (map inc [1])) ;=> true",
        |v: &Value| matches!(v, Value::List(_) | Value::Lazy(_))
    ),
    pred!(
        "coll?",
        "True if x is a collection (not a string).",
        "(coll? [1]) ;=> true",
        |v: &Value| matches!(
            v,
            Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) | Value::Lazy(_)
        )
    ),
    pred!(
        "sequential?",
        "True if x is a vector, list or seq.",
        "(sequential? [1]) ;=> true",
        crate::eval::lazy::is_sequential
    ),
    pred!(
        "associative?",
        "True if x is a map or vector.",
        "(associative? [1]) ;=> true",
        |v: &Value| matches!(v, Value::Map(_) | Value::Vector(_))
    ),
    pred!(
        "counted?",
        "True if count is constant-time for x.",
        "(counted? [1]) ;=> true",
        |v: &Value| matches!(
            v,
            Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_)
        )
    ),
    pred!(
        "sorted?",
        "True if x is a sorted map or set.",
        "(sorted? (sorted-map)) ;=> true",
        |v: &Value| match v {
            Value::Map(m) => matches!(**m, crate::value::MapImpl::Sorted(_)),
            Value::Set(s) => matches!(**s, crate::value::SetImpl::Sorted(_)),
            _ => false,
        }
    ),
    pred!(
        "seqable?",
        "True if seq works on x: nil, a collection, a string or a sequence.",
        "(seqable? \"a\") ;=> true",
        |v: &Value| matches!(
            v,
            Value::Nil
                | Value::Str(_)
                | Value::Vector(_)
                | Value::List(_)
                | Value::Map(_)
                | Value::Set(_)
                | Value::Lazy(_)
        )
    ),
    pred!(
        "indexed?",
        "True if nth is constant-time for x (a vector).",
        "(indexed? [1]) ;=> true",
        |v: &Value| matches!(v, Value::Vector(_))
    ),
    pred!(
        "reversible?",
        "True if rseq works on x: a vector or a sorted map or set.",
        "(reversible? [1]) ;=> true",
        |v: &Value| match v {
            Value::Vector(_) => true,
            Value::Map(m) => matches!(**m, crate::value::MapImpl::Sorted(_)),
            Value::Set(s) => matches!(**s, crate::value::SetImpl::Sorted(_)),
            _ => false,
        }
    ),
    pred!(
        "rational?",
        "True if x is an integer (there are no ratios or decimals).",
        "(rational? 1) ;=> true",
        |v: &Value| matches!(v, Value::Int(_))
    ),
    pred!(
        "ratio?",
        "Always false: there are no ratios (an inexact division gives a double).",
        "(ratio? (/ 1 2)) ;=> false",
        |_: &Value| false
    ),
    pred!(
        "decimal?",
        "Always false: there are no BigDecimals.",
        "(decimal? 1.5) ;=> false",
        |_: &Value| false
    ),
    pred!(
        "map-entry?",
        "True if x is a map entry (a [key value] vector).",
        "(map-entry? (first {:a 1})) ;=> true",
        |v: &Value| matches!(v, Value::Vector(xs) if xs.len() == 2)
    ),
    pred!(
        "fn?",
        "True if x is a function.",
        "(fn? inc) ;=> true",
        is_fn
    ),
    pred!(
        "ifn?",
        "True if x can be called (fns, keywords, symbols, maps, sets, vectors).",
        "(ifn? :a) ;=> true",
        |v: &Value| is_fn(v)
            || matches!(
                v,
                Value::Keyword(_)
                    | Value::Symbol(_)
                    | Value::Map(_)
                    | Value::Set(_)
                    | Value::Vector(_)
            )
    ),
    pred!(
        "any?",
        "Always true.",
        "(any? nil) ;=> true",
        |_: &Value| true
    ),
    pred!(
        "pos-int?",
        "True if x is a positive integer.",
        "(pos-int? 1) ;=> true",
        |v: &Value| matches!(v, Value::Int(n) if *n > 0)
    ),
    pred!(
        "neg-int?",
        "True if x is a negative integer.",
        "(neg-int? -1) ;=> true",
        |v: &Value| matches!(v, Value::Int(n) if *n < 0)
    ),
    pred!(
        "nat-int?",
        "True if x is a non-negative integer.",
        "(nat-int? 0) ;=> true",
        |v: &Value| matches!(v, Value::Int(n) if *n >= 0)
    ),
    def!(
        "NaN?",
        1,
        1,
        "True if the number is NaN.",
        "(NaN? ##NaN) ;=> true",
        |_, a| float_test(&a[0], "NaN?", f64::is_nan)
    ),
    def!(
        "infinite?",
        1,
        1,
        "True if the number is infinite.",
        "(infinite? ##Inf) ;=> true",
        |_, a| float_test(&a[0], "infinite?", f64::is_infinite)
    ),
    def!(
        "distinct?",
        1,
        _,
        "True if no two arguments are equal.",
        "(distinct? 1 2 1) ;=> false",
        distinct_p
    ),
    def!(
        "identical?",
        2,
        2,
        "True if x and y are the same object (equal scalars count as the same).",
        "(identical? :a :a) ;=> true",
        |_, a| Ok(Value::Bool(identical(&a[0], &a[1])))
    ),
    def!(
        "boolean",
        1,
        1,
        "x as a boolean: false for nil and false, else true.",
        "(boolean 0) ;=> true",
        |_, a| Ok(Value::Bool(a[0].truthy()))
    ),
];

/// Reference identity for collections and strings; scalars (interned or cached on the JVM for
/// the values programs compare this way) by value.
fn identical(a: &Value, b: &Value) -> bool {
    use crate::value::Coll;
    match (a, b) {
        (Value::Vector(x) | Value::List(x), Value::Vector(y) | Value::List(y)) => {
            Coll::ptr_eq(x, y)
        }
        (Value::Map(x), Value::Map(y)) => Coll::ptr_eq(x, y),
        (Value::Set(x), Value::Set(y)) => Coll::ptr_eq(x, y),
        (Value::Str(x), Value::Str(y)) => crate::value::Text::ptr_eq(x, y),
        (Value::Float(_), Value::Float(_)) => false,
        _ => a == b,
    }
}

/// Whether `v` is a function (not a `reduced` marker or a transducer).
pub(super) fn is_fn(v: &Value) -> bool {
    match v {
        Value::Fn(_) | Value::Builtin(_) => true,
        Value::Native(n) => !matches!(**n, NativeFn::Reduced(_)),
        _ => false,
    }
}

fn float_test(v: &Value, op: &str, test: fn(f64) -> bool) -> EvalResult {
    match v {
        Value::Int(_) => Ok(Value::Bool(false)),
        Value::Float(f) => Ok(Value::Bool(test(*f))),
        other => Err(expected(op, "a number", other)),
    }
}

// Value hashes and compares without its lazy-seq cache, the only interior mutability.
#[allow(clippy::mutable_key_type)]
fn distinct_p(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut seen = std::collections::HashSet::with_capacity(a.len());
    for x in a {
        let x = i.realize_deep(x)?;
        if !seen.insert(x) {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}
