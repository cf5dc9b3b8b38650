//! Higher-order functions: `map filter remove reduce apply some every? partial comp ...`, and
//! the function values they build (`NativeFn`). Over a lazy (infinite) source, `map`, `filter`,
//! `remove` and `keep` stay lazy; over finite data they are eager.

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{EvalError, EvalResult};
use crate::eval::Interp;
use crate::eval::lazy::{Gen, LazySeq};
use crate::eval::seq::SeqIter;
use crate::value::{Coll, Value};
use std::rc::Rc;

/// Functions built from other functions.
#[derive(Debug)]
pub enum NativeFn {
    Partial(Value, Vec<Value>),
    /// Applied right to left.
    Comp(Vec<Value>),
    Juxt(Vec<Value>),
    Complement(Value),
    Constantly(Value),
    /// `fnil`: replaces nil arguments by position.
    Fnil(Value, Vec<Value>),
    SomeFn(Vec<Value>),
    EveryPred(Vec<Value>),
}

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "map",
        1,
        _,
        "Applies f to each item (of several collections in step).",
        "(map inc [1 2]) ;=> (2 3)",
        map
    ),
    def!(
        "mapv",
        2,
        _,
        "Like map, into a vector.",
        "(mapv inc [1 2]) ;=> [2 3]",
        |i, a| {
            let m = map(i, a)?;
            Ok(Value::vector(i.seq_vec(&m)?))
        }
    ),
    def!(
        "filter",
        2,
        2,
        "Items for which pred is truthy.",
        "(filter odd? [1 2 3]) ;=> (1 3)",
        |i, a| filter(i, a, true)
    ),
    def!(
        "remove",
        2,
        2,
        "Items for which pred is falsy.",
        "(remove odd? [1 2 3]) ;=> (2)",
        |i, a| filter(i, a, false)
    ),
    def!(
        "filterv",
        2,
        2,
        "Like filter, into a vector.",
        "(filterv odd? [1 2 3]) ;=> [1 3]",
        |i, a| {
            let m = filter(i, a, true)?;
            Ok(Value::vector(i.seq_vec(&m)?))
        }
    ),
    def!(
        "reduce",
        2,
        3,
        "Folds f over the items, with an optional initial value.",
        "(reduce + 0 [1 2]) ;=> 3",
        reduce
    ),
    def!(
        "apply",
        2,
        _,
        "Calls f with the arguments and the items of the last one.",
        "(apply + 1 [2 3]) ;=> 6",
        apply
    ),
    def!(
        "partial",
        1,
        _,
        "f with its first arguments fixed.",
        "((partial + 1) 2) ;=> 3",
        |_, mut a| {
            let f = a.remove(0);
            Ok(native(NativeFn::Partial(f, a)))
        }
    ),
    def!(
        "comp",
        0,
        _,
        "Composes functions, right to left.",
        "((comp inc inc) 1) ;=> 3",
        |_, a| Ok(if a.is_empty() {
            Value::Builtin(&IDENTITY)
        } else {
            native(NativeFn::Comp(a))
        })
    ),
    def!(
        "juxt",
        1,
        _,
        "A fn returning a vector of each fn's result.",
        "((juxt inc dec) 1) ;=> [2 0]",
        |_, a| Ok(native(NativeFn::Juxt(a)))
    ),
    def!(
        "complement",
        1,
        1,
        "A fn returning the logical opposite of f.",
        "((complement odd?) 2) ;=> true",
        |_, mut a| Ok(native(NativeFn::Complement(a.remove(0))))
    ),
    def!(
        "constantly",
        1,
        1,
        "A fn that always returns x.",
        "((constantly 1) 5) ;=> 1",
        |_, mut a| Ok(native(NativeFn::Constantly(a.remove(0))))
    ),
    def!(
        "fnil",
        2,
        4,
        "f with nil arguments replaced by defaults.",
        "((fnil inc 0) nil) ;=> 1",
        |_, mut a| {
            let f = a.remove(0);
            Ok(native(NativeFn::Fnil(f, a)))
        }
    ),
    def!(
        "some-fn",
        1,
        _,
        "A fn true if any pred is true for any argument.",
        "((some-fn even? neg?) 3) ;=> false",
        |_, a| Ok(native(NativeFn::SomeFn(a)))
    ),
    def!(
        "every-pred",
        1,
        _,
        "A fn true if every pred is true for every argument.",
        "((every-pred pos? even?) 2) ;=> true",
        |_, a| Ok(native(NativeFn::EveryPred(a)))
    ),
    def!(
        "some",
        2,
        2,
        "First truthy (pred x), or nil.",
        "(some even? [1 2]) ;=> true",
        some
    ),
    def!(
        "every?",
        2,
        2,
        "True if pred holds for every item.",
        "(every? odd? [1 3]) ;=> true",
        |i, a| Ok(Value::Bool(!find(i, &a[0], &a[1], false)?.truthy()))
    ),
    def!(
        "not-every?",
        2,
        2,
        "True if pred fails for some item.",
        "(not-every? odd? [1 2]) ;=> true",
        |i, a| Ok(Value::Bool(find(i, &a[0], &a[1], false)?.truthy()))
    ),
    def!(
        "not-any?",
        2,
        2,
        "True if pred holds for no item.",
        "(not-any? odd? [2 4]) ;=> true",
        |i, a| Ok(Value::Bool(!some(i, a)?.truthy()))
    ),
];

/// `identity`, also what `(comp)` returns.
pub const IDENTITY_ENTRY: BuiltinDef = def!(
    "identity",
    1,
    1,
    "Returns its argument.",
    "(identity 1) ;=> 1",
    |_, mut a| Ok(a.remove(0))
);
pub static IDENTITY: BuiltinDef = IDENTITY_ENTRY;

fn native(n: NativeFn) -> Value {
    Value::Native(Rc::new(n))
}

/// Calls a `NativeFn`.
pub fn apply_native(i: &mut Interp<'_>, n: &NativeFn, args: Vec<Value>) -> EvalResult {
    match n {
        NativeFn::Partial(f, fixed) => {
            let mut all = fixed.clone();
            all.extend(args);
            i.apply(f, all)
        }
        NativeFn::Comp(fs) => {
            let mut it = fs.iter().rev();
            let first = it.next().cloned().unwrap_or_default();
            let mut v = i.apply(&first, args)?;
            for f in it {
                v = i.apply(f, vec![v])?;
            }
            Ok(v)
        }
        NativeFn::Juxt(fs) => Ok(Value::vector(
            fs.iter()
                .map(|f| i.apply(f, args.clone()))
                .collect::<EvalResult<Vec<_>>>()?,
        )),
        NativeFn::Complement(f) => Ok(Value::Bool(!i.apply(f, args)?.truthy())),
        NativeFn::Constantly(v) => Ok(v.clone()),
        NativeFn::Fnil(f, defaults) => {
            let args = args
                .into_iter()
                .enumerate()
                .map(|(k, a)| match (a, defaults.get(k)) {
                    (Value::Nil, Some(d)) => d.clone(),
                    (a, _) => a,
                });
            i.apply(f, args.collect())
        }
        NativeFn::SomeFn(ps) => {
            for p in ps {
                for a in &args {
                    let r = i.apply(p, vec![a.clone()])?;
                    if r.truthy() {
                        return Ok(r);
                    }
                }
            }
            Ok(Value::Bool(false))
        }
        NativeFn::EveryPred(ps) => {
            for p in ps {
                for a in &args {
                    if !i.apply(p, vec![a.clone()])?.truthy() {
                        return Ok(Value::Bool(false));
                    }
                }
            }
            Ok(Value::Bool(true))
        }
    }
}

fn map(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    if a.is_empty() {
        return Err(EvalError::arg(
            "map",
            "map without a collection (transducers) is not supported",
        ));
    }
    let mut srcs = a
        .iter()
        .map(|c| SeqIter::new(i, c))
        .collect::<EvalResult<Vec<_>>>()?;
    if srcs.iter().all(SeqIter::is_lazy) {
        return Ok(LazySeq::value(Gen::Map {
            f,
            srcs,
            index: None,
        }));
    }
    if let [Value::Vector(xs) | Value::List(xs)] = a.as_slice() {
        // The common case: one finite collection.
        i.tick_n(xs.len() as u64)?;
        let mut out = crate::value::PVec::new();
        for x in xs.iter() {
            out.push_back(i.apply(&f, vec![x.clone()])?);
        }
        return Ok(Value::List(Coll::new(out)));
    }
    let mut out = Vec::new();
    'outer: loop {
        let mut args = Vec::with_capacity(srcs.len());
        for s in srcs.iter_mut() {
            match s.next(i)? {
                Some(x) => args.push(x),
                None => break 'outer,
            }
        }
        i.tick()?;
        out.push(i.apply(&f, args)?);
    }
    Ok(Value::list(out))
}

fn filter(i: &mut Interp<'_>, a: Vec<Value>, keep: bool) -> EvalResult {
    let (pred, coll) = (&a[0], &a[1]);
    if let Value::Lazy(_) = coll {
        let src = SeqIter::new(i, coll)?;
        return Ok(LazySeq::value(Gen::Filter {
            pred: pred.clone(),
            src,
            keep,
        }));
    }
    let items = i.seq_vec(coll)?;
    let mut out = Vec::new();
    for x in items {
        if i.apply(pred, vec![x.clone()])?.truthy() == keep {
            out.push(x);
        }
    }
    Ok(Value::list(out))
}

fn reduce(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut a = a.into_iter();
    let f = a.next().unwrap_or_default();
    let (init, coll) = match (a.next(), a.next()) {
        (Some(coll), None) => (None, coll),
        (Some(init), Some(coll)) => (Some(init), coll),
        _ => return Ok(Value::Nil),
    };
    let mut it = SeqIter::new(i, &coll)?;
    let mut acc = match init {
        Some(v) => v,
        None => match it.next(i)? {
            Some(first) => first,
            None => return i.apply(&f, vec![]),
        },
    };
    while let Some(x) = it.next(i)? {
        i.tick()?;
        // Move the accumulator in, so builtins like conj can update it in place.
        acc = i.apply(&f, vec![acc, x])?;
    }
    Ok(acc)
}

fn apply(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    let last = a.pop().unwrap_or_default();
    if !matches!(
        last,
        Value::Nil
            | Value::Vector(_)
            | Value::List(_)
            | Value::Set(_)
            | Value::Map(_)
            | Value::Lazy(_)
            | Value::Str(_)
    ) {
        return Err(expected(
            "apply",
            "a collection as the last argument",
            &last,
        ));
    }
    a.extend(i.seq_vec(&last)?);
    i.apply(&f, a)
}

/// The first item for which `(pred x)` is `want`-truthy: returns the pred's result (or true).
fn find(i: &mut Interp<'_>, pred: &Value, coll: &Value, want: bool) -> EvalResult {
    let mut it = SeqIter::new(i, coll)?;
    while let Some(x) = it.next(i)? {
        i.tick()?;
        let r = i.apply(pred, vec![x])?;
        if r.truthy() == want {
            return Ok(if want { r } else { Value::Bool(true) });
        }
    }
    Ok(Value::Nil)
}

fn some(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    find(i, &a[0], &a[1], true)
}
