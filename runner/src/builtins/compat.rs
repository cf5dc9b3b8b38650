//! Clojure names that are thin spellings of existing behaviour, so that programs written for
//! Clojure run unchanged: transients, `run!`, `trampoline`, `memoize`, `printf`, `flush`,
//! `replicate`, `bounded-count`, `char`, and the qualified/simple name predicates.
//!
//! A transient is the persistent collection itself (DIV-29): `conj!` is `conj` and
//! `persistent!` returns its argument. Programs that use transients linearly, as Clojure
//! requires, get the same results; the updates are already in place when the collection is
//! not shared. Every loop here charges a step per element or per call.

use super::{BuiltinDef, call_named, expected};
use crate::def;
use crate::error::{EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;

/// `(name coll args...)` as the persistent function `to` (`conj!` as `conj`, ...).
fn bang(i: &mut Interp<'_>, to: &str, a: Vec<Value>) -> EvalResult {
    call_named(i, to, a)
}

/// `(ns/name ...)`-style predicates over keywords and symbols: `$test` gets "is qualified".
macro_rules! name_pred {
    ($name:expr, $doc:expr, $test:expr) => {
        def!($name, 1, 1, $doc, concat!("(", $name, " :a/b)"), |_, a| {
            Ok(Value::Bool(
                ident_qualified(&a[0]).is_some_and(|(_, q)| $test(q)),
            ))
        })
    };
}

/// Keyword-only or symbol-only versions of [`name_pred`].
macro_rules! kind_pred {
    ($name:expr, $doc:expr, $keyword:expr, $qualified:expr) => {
        def!($name, 1, 1, $doc, concat!("(", $name, " :a/b)"), |_, a| {
            Ok(Value::Bool(
                ident_qualified(&a[0]) == Some(($keyword, $qualified)),
            ))
        })
    };
}

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "transient",
        1,
        1,
        "The collection itself: a vector, map or set updated with conj! assoc! ... (DIV-29).",
        "(persistent! (conj! (transient []) 1)) ;=> [1]",
        |_, mut a| match a.remove(0) {
            v @ (Value::Vector(_) | Value::Map(_) | Value::Set(_)) => Ok(v),
            other => Err(expected("transient", "a vector, map or set", &other)),
        }
    ),
    def!(
        "persistent!",
        1,
        1,
        "The collection a transient stands for (the argument itself).",
        "(persistent! (transient [1])) ;=> [1]",
        |_, mut a| Ok(a.remove(0))
    ),
    def!(
        "conj!",
        0,
        2,
        "conj on a transient.",
        "(persistent! (conj! (transient [1]) 2)) ;=> [1 2]",
        |i, a| match a.len() {
            0 => Ok(Value::vector([])),
            _ => bang(i, "conj", a),
        }
    ),
    def!(
        "assoc!",
        3,
        _,
        "assoc on a transient.",
        "(persistent! (assoc! (transient {}) :a 1)) ;=> {:a 1}",
        |i, a| bang(i, "assoc", a)
    ),
    def!(
        "dissoc!",
        1,
        _,
        "dissoc on a transient.",
        "(persistent! (dissoc! (transient {:a 1}) :a)) ;=> {}",
        |i, a| bang(i, "dissoc", a)
    ),
    def!(
        "disj!",
        1,
        _,
        "disj on a transient.",
        "(persistent! (disj! (transient #{1 2}) 1)) ;=> #{2}",
        |i, a| bang(i, "disj", a)
    ),
    def!(
        "pop!",
        1,
        1,
        "pop on a transient vector.",
        "(persistent! (pop! (transient [1 2]))) ;=> [1]",
        |i, a| bang(i, "pop", a)
    ),
    def!(
        "run!",
        2,
        2,
        "Calls f on every item for its effects; nil.",
        "(run! println [1 2]) ;=> nil",
        |i, a| {
            for x in i.seq_vec(&a[1])? {
                i.apply1(&a[0], x)?;
            }
            Ok(Value::Nil)
        }
    ),
    def!(
        "trampoline",
        1,
        _,
        "Calls f with the arguments, then calls each function result with no arguments until a non-function comes back.",
        "(trampoline (fn [] (fn [] 3))) ;=> 3",
        trampoline
    ),
    def!(
        "memoize",
        1,
        1,
        "f with its results cached by argument list (lazy-seq arguments are not cached).",
        "((memoize inc) 1) ;=> 2",
        |_, mut a| Ok(super::hof::memoized(a.remove(0)))
    ),
    def!(
        "printf",
        1,
        _,
        "print of (format fmt args...).",
        "(printf \"%d items\" 3)",
        |i, a| {
            let text = call_named(i, "format", a)?;
            call_named(i, "print", vec![text])
        }
    ),
    def!(
        "flush",
        0,
        0,
        "Does nothing: prints are recorded as they happen.",
        "(flush) ;=> nil",
        |_, _| Ok(Value::Nil)
    ),
    def!(
        "replicate",
        2,
        2,
        "Deprecated spelling of (repeat n x).",
        "(replicate 2 :a) ;=> (:a :a)",
        |i, a| call_named(i, "repeat", a)
    ),
    def!(
        "bounded-count",
        2,
        2,
        "The count of coll, counting at most n items of a sequence.",
        "(bounded-count 2 (range)) ;=> 2",
        bounded_count
    ),
    def!(
        "char",
        1,
        1,
        "The character with a code (or the char itself).",
        "(char 97) ;=> \\a",
        |_, a| match &a[0] {
            Value::Char(c) => Ok(Value::Char(*c)),
            Value::Int(n) => u32::try_from(*n)
                .ok()
                .and_then(char::from_u32)
                .map(Value::Char)
                .ok_or_else(|| EvalError::arg("char", format!("value out of range for char: {n}"))),
            other => Err(expected("char", "an integer code or a char", other)),
        }
    ),
    name_pred!("ident?", "True for a keyword or symbol.", |_: bool| true),
    name_pred!(
        "simple-ident?",
        "True for a keyword or symbol without a namespace.",
        |q: bool| !q
    ),
    name_pred!(
        "qualified-ident?",
        "True for a keyword or symbol with a namespace.",
        |q: bool| q
    ),
    kind_pred!(
        "simple-keyword?",
        "A keyword without a namespace.",
        true,
        false
    ),
    kind_pred!(
        "qualified-keyword?",
        "A keyword with a namespace.",
        true,
        true
    ),
    kind_pred!(
        "simple-symbol?",
        "A symbol without a namespace.",
        false,
        false
    ),
    kind_pred!(
        "qualified-symbol?",
        "A symbol with a namespace.",
        false,
        true
    ),
];

/// For a keyword or symbol: (is it a keyword, has it a namespace). `/` alone is simple.
fn ident_qualified(v: &Value) -> Option<(bool, bool)> {
    let (keyword, text) = match v {
        Value::Keyword(k) => (true, k),
        Value::Symbol(s) => (false, s),
        _ => return None,
    };
    let qualified = text.find('/').is_some_and(|p| p > 0 && p + 1 < text.len());
    Some((keyword, qualified))
}

fn trampoline(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    let mut r = i.apply(&f, a)?;
    while super::pred::is_fn(&r) {
        i.tick()?;
        r = i.apply(&r, Vec::new())?;
    }
    Ok(r)
}

fn bounded_count(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let n = super::math::int_arg(&a[0], "bounded-count")?;
    match &a[1] {
        // Counted collections answer their full count, as in Clojure.
        Value::Vector(_) | Value::Map(_) | Value::Set(_) | Value::Str(_) | Value::Nil => {
            call_named(i, "count", vec![a[1].clone()])
        }
        coll => {
            let limit = usize::try_from(n).unwrap_or(0);
            let mut seen = 0i64;
            let mut it = crate::eval::seq::SeqIter::new(i, coll)?;
            while usize::try_from(seen).is_ok_and(|s| s < limit) {
                i.tick()?;
                if it.next(i)?.is_none() {
                    break;
                }
                seen += 1;
            }
            Ok(Value::Int(seen))
        }
    }
}
