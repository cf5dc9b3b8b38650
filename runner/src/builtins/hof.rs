//! Functions that build or call functions: `apply partial comp juxt complement constantly fnil
//! some-fn every-pred max-key min-key reduced`, and the function values they build
//! (`NativeFn`). `reduced` is a `NativeFn` too: a marker `reduce`, `reductions` and `transduce`
//! unwrap, which needs no variant in the interpreter's `Value`.

use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;
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
    /// `(memoize f)`: results by argument list (see [`memoized`]).
    Memo(
        Value,
        std::cell::RefCell<std::collections::HashMap<Vec<Value>, Value>>,
    ),
    /// `(completing f cf?)`: `f`, except that one argument is the completion step (`cf`, or
    /// the argument itself), as `transduce` calls it at the end.
    Completing(Value, Option<Value>),
    /// `(comparator pred)`: -1, 1 or 0 from a two-argument "less than" predicate.
    Comparator(Value),
    /// `(reduced x)`: ends a reduction with `x`.
    Reduced(Value),
    /// A transducer (see `xform`).
    Xform(Vec<super::xform::XStep>),
}

impl NativeFn {
    /// Whether every value this native holds is a scalar (false when unsure: the safe answer).
    fn parts_are_scalar(&self) -> bool {
        match self {
            NativeFn::Partial(f, xs) | NativeFn::Fnil(f, xs) => {
                f.is_scalar() && xs.iter().all(Value::is_scalar)
            }
            NativeFn::Comp(xs)
            | NativeFn::Juxt(xs)
            | NativeFn::SomeFn(xs)
            | NativeFn::EveryPred(xs) => xs.iter().all(Value::is_scalar),
            NativeFn::Complement(f)
            | NativeFn::Constantly(f)
            | NativeFn::Reduced(f)
            | NativeFn::Comparator(f) => f.is_scalar(),
            _ => false,
        }
    }

    /// Moves the values this native holds to `out` (for dropping without recursion).
    pub(crate) fn take_parts(&mut self, out: &mut Vec<Value>) {
        match self {
            NativeFn::Partial(f, xs) | NativeFn::Fnil(f, xs) => {
                out.push(std::mem::take(f));
                out.append(xs);
            }
            NativeFn::Comp(xs)
            | NativeFn::Juxt(xs)
            | NativeFn::SomeFn(xs)
            | NativeFn::EveryPred(xs) => out.append(xs),
            NativeFn::Complement(f)
            | NativeFn::Constantly(f)
            | NativeFn::Reduced(f)
            | NativeFn::Comparator(f) => {
                out.push(std::mem::take(f));
            }
            NativeFn::Completing(f, cf) => {
                out.push(std::mem::take(f));
                out.extend(cf.take());
            }
            NativeFn::Memo(f, cache) => {
                out.push(std::mem::take(f));
                for (args, v) in std::mem::take(cache.get_mut()) {
                    out.extend(args);
                    out.push(v);
                }
            }
            NativeFn::Xform(_) => {}
        }
    }
}

/// Natives nest (`(juxt (juxt (juxt ...)))` 100,000 deep is one `loop` away), and the
/// compiler's drop glue would recurse once per level: the parts are dropped with a work list,
/// as `Coll`'s contents are.
impl Drop for NativeFn {
    fn drop(&mut self) {
        // The usual natives hold only scalars (`(fnil + 0)` is made and dropped per element in
        // an `update` loop): nothing can nest, so no work list is allocated.
        if self.parts_are_scalar() {
            return;
        }
        let mut parts = Vec::new();
        self.take_parts(&mut parts);
        if parts.iter().all(Value::is_scalar) {
            return;
        }
        crate::value::drop_nested(parts, |p, out| out.extend(p));
    }
}

pub static TABLE: &[BuiltinDef] = &[
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
        |_, a| partial(a)
    ),
    def!(
        "comp",
        0,
        _,
        "Composes functions, right to left (transducers compose left to right).",
        "((comp inc inc) 1) ;=> 3",
        |_, a| comp(a)
    ),
    def!(
        "juxt",
        1,
        _,
        "A fn returning a vector of each fn's result.",
        "((juxt inc dec) 1) ;=> [2 0]",
        |_, a| juxt(a)
    ),
    def!(
        "complement",
        1,
        1,
        "A fn returning the logical opposite of f.",
        "((complement odd?) 2) ;=> true",
        |_, a| one_part(a, NativeFn::Complement)
    ),
    def!(
        "completing",
        1,
        2,
        "A reducing fn for transduce: f, with cf (default identity) as its one-argument completion.",
        "(transduce (map inc) (completing + str) 0 [1 2]) ;=> \"5\"",
        |_, a| {
            let mut a = a.into_iter();
            let f = a.next().unwrap_or_default();
            Ok(native(NativeFn::Completing(f, a.next())))
        }
    ),
    def!(
        "comparator",
        1,
        1,
        "A comparator fn (-1, 0 or 1) from a predicate that says whether x comes before y.",
        "(sort (comparator >) [1 3 2]) ;=> (3 2 1)",
        |_, a| one_part(a, NativeFn::Comparator)
    ),
    def!(
        "constantly",
        1,
        1,
        "A fn that always returns x.",
        "((constantly 1) 5) ;=> 1",
        |_, a| one_part(a, NativeFn::Constantly)
    ),
    def!(
        "fnil",
        2,
        4,
        "f with nil arguments replaced by defaults.",
        "((fnil inc 0) nil) ;=> 1",
        |_, a| fnil(a)
    ),
    def!(
        "some-fn",
        1,
        _,
        "A fn returning the first truthy pred result over its arguments.",
        "((some-fn even? neg?) 3) ;=> false",
        |_, a| some_fn(a)
    ),
    def!(
        "every-pred",
        1,
        _,
        "A fn true if every pred is true for every argument.",
        "((every-pred pos? even?) 2) ;=> true",
        |_, a| every_pred(a)
    ),
    def!(
        "max-key",
        2,
        _,
        "The x for which (k x) is largest (the last one on ties).",
        "(max-key count \"a\" \"bbb\") ;=> \"bbb\"",
        |i, a| extreme_key(i, a, std::cmp::Ordering::Greater)
    ),
    def!(
        "min-key",
        2,
        _,
        "The x for which (k x) is smallest (the last one on ties).",
        "(min-key count \"aa\" \"b\") ;=> \"b\"",
        |i, a| extreme_key(i, a, std::cmp::Ordering::Less)
    ),
    def!(
        "reduced",
        1,
        1,
        "Wraps x so that reduce stops with it.",
        "(reduce (fn [a x] (if (> x 2) (reduced a) (+ a x))) [1 2 3]) ;=> 3",
        |_, mut a| Ok(native(NativeFn::Reduced(a.remove(0))))
    ),
    def!(
        "reduced?",
        1,
        1,
        "True if x was made by reduced.",
        "(reduced? (reduced 1)) ;=> true",
        |_, a| Ok(Value::Bool(unreduced(&a[0]).is_some()))
    ),
    def!(
        "unreduced",
        1,
        1,
        "The value inside a reduced, or x itself.",
        "(unreduced (reduced 1)) ;=> 1",
        |_, mut a| {
            let x = a.remove(0);
            Ok(unreduced(&x).unwrap_or(x))
        }
    ),
    def!(
        "ensure-reduced",
        1,
        1,
        "x wrapped by reduced unless it already is.",
        "(reduced? (ensure-reduced 1)) ;=> true",
        |_, mut a| {
            let x = a.remove(0);
            Ok(if unreduced(&x).is_some() {
                x
            } else {
                native(NativeFn::Reduced(x))
            })
        }
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

fn partial(mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    Ok(if a.is_empty() {
        f
    } else {
        native(NativeFn::Partial(f, a))
    })
}

fn fnil(mut a: Vec<Value>) -> EvalResult {
    let f = a.remove(0);
    Ok(native(NativeFn::Fnil(f, a)))
}

fn juxt(a: Vec<Value>) -> EvalResult {
    Ok(native(NativeFn::Juxt(a)))
}

fn some_fn(a: Vec<Value>) -> EvalResult {
    Ok(native(NativeFn::SomeFn(a)))
}

fn every_pred(a: Vec<Value>) -> EvalResult {
    Ok(native(NativeFn::EveryPred(a)))
}

/// A native of one part (the builtin's arity makes `a` exactly one value).
fn one_part(a: Vec<Value>, make: fn(Value) -> NativeFn) -> EvalResult {
    Ok(native(make(a.into_iter().next().unwrap_or_default())))
}

/// The builders whose result depends on nothing but their arguments (no interpreter state, no
/// effects, no call of what they are given), with the positions of the arguments the built fn
/// only ever calls: `analyze::fold` may build one once at analysis, and may fold a nested
/// builder only where it is called (one in `constantly`'s or `partial`'s fixed arguments is
/// handed out, so its identity would show). `None` for any other builtin. The same functions
/// as the table's entries, so a folded fn is the one the call would have made.
pub(crate) fn pure_builder(b: &BuiltinDef) -> Option<(PureBuilder, Called)> {
    Some(match b.name {
        "fnil" => (fnil, Called::First),
        "partial" => (partial, Called::First),
        "comp" => (comp, Called::All),
        "juxt" => (juxt, Called::All),
        "some-fn" => (some_fn, Called::All),
        "every-pred" => (every_pred, Called::All),
        "complement" => (|a| one_part(a, NativeFn::Complement), Called::First),
        "comparator" => (|a| one_part(a, NativeFn::Comparator), Called::First),
        "constantly" => (|a| one_part(a, NativeFn::Constantly), Called::None),
        _ => return None,
    })
}

/// A builder of fns that reads nothing but its arguments.
pub(crate) type PureBuilder = fn(Vec<Value>) -> EvalResult;

/// Which arguments of a [`pure_builder`] the built fn only calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Called {
    None,
    First,
    All,
}

impl Called {
    pub(crate) fn includes(self, k: usize) -> bool {
        match self {
            Called::None => false,
            Called::First => k == 0,
            Called::All => true,
        }
    }
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
                v = i.apply1(f, v)?;
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
        NativeFn::Memo(f, cache) => memo_call(i, f, cache, args),
        NativeFn::Completing(f, cf) => match (args.len(), cf) {
            (1, Some(cf)) => i.apply(cf, args),
            (1, None) => Ok(args.into_iter().next().unwrap_or_default()),
            _ => i.apply(f, args),
        },
        NativeFn::Comparator(pred) => comparator_call(i, pred, args),
        NativeFn::Fnil(f, defaults) => {
            let args = args
                .into_iter()
                .enumerate()
                .map(|(k, a)| fnil_arg(defaults, k, a));
            i.apply(f, args.collect())
        }
        NativeFn::SomeFn(ps) => some_fn_call(i, ps, &args),
        NativeFn::EveryPred(ps) => every_pred_call(i, ps, &args),
        NativeFn::Reduced(_) => Err(EvalError::type_err(
            "reduced",
            "a reduced value is not a function",
        )),
        NativeFn::Xform(_) => Err(EvalError::type_err(
            "transducer",
            "a transducer can only be used with into, sequence or transduce",
        )),
    }
}

/// `((comparator pred) x y)`: -1 if `(pred x y)`, 1 if `(pred y x)`, else 0.
fn comparator_call(i: &mut Interp<'_>, pred: &Value, args: Vec<Value>) -> EvalResult {
    let [x, y] = <[Value; 2]>::try_from(args).map_err(|args| {
        EvalError::new(
            crate::error::ErrorKind::ArityError,
            "comparator",
            format!(
                "wrong number of args ({}) passed to a comparator",
                args.len()
            ),
        )
    })?;
    Ok(Value::Int(
        if i.apply2(pred, x.clone(), y.clone())?.truthy() {
            -1
        } else if i.apply2(pred, y, x)?.truthy() {
            1
        } else {
            0
        },
    ))
}

/// `((some-fn p...) args...)`: like Clojure's `or` chain, the first truthy result, else the
/// last falsy one.
fn some_fn_call(i: &mut Interp<'_>, ps: &[Value], args: &[Value]) -> EvalResult {
    let mut last = Value::Nil;
    for p in ps {
        for a in args {
            last = i.apply1(p, a.clone())?;
            if last.truthy() {
                return Ok(last);
            }
        }
    }
    Ok(last)
}

/// `((every-pred p...) args...)`: whether every predicate holds for every argument.
fn every_pred_call(i: &mut Interp<'_>, ps: &[Value], args: &[Value]) -> EvalResult {
    for p in ps {
        for a in args {
            if !i.apply1(p, a.clone())?.truthy() {
                return Ok(Value::Bool(false));
            }
        }
    }
    Ok(Value::Bool(true))
}

/// Calls a native with one argument (`Interp::apply1`, already one call deeper): without an
/// argument vector where the native allows it, else as [`apply_native`].
/// `(juxt f g)` and `(comp f g)` as `sort-by` keys (`(juxt (comp - val) key)`) call each fn
/// with one argument too: `apply1` is `apply` of a one-argument vector, without the vector.
pub fn apply_native1(i: &mut Interp<'_>, n: &NativeFn, x: Value) -> EvalResult {
    match n {
        NativeFn::Fnil(f, defaults) => i.apply1(f, fnil_arg(defaults, 0, x)),
        NativeFn::Juxt(fs) => {
            let mut out = Vec::with_capacity(fs.len());
            for f in fs {
                out.push(i.apply1(f, x.clone())?);
            }
            Ok(Value::vector(out))
        }
        NativeFn::Comp(fs) => {
            let mut v = x;
            for f in fs.iter().rev() {
                v = i.apply1(f, v)?;
            }
            Ok(v)
        }
        _ => apply_native(i, n, vec![x]),
    }
}

/// How many native levels [`pure1`] looks through: a `juxt` of `comp`s of builtins, as sort
/// keys are written (`(juxt (comp - val) key)`), with room for one more.
const PURE_LEVELS: u32 = 3;

/// `(f x)` when nothing it calls can observe the interpreter: a keyword, a builtin's one-operand
/// fast answer (`Fast::One`, a number op's), or a `juxt` or `comp` of such fns, answered
/// without entering each native's level (`Interp::nested`: the depth count and stack check per
/// native per element). `level` is how many natives deep `f` is; a native is answered only
/// where `nested` would let it in (`depth + level` below `max_depth`), so the depth limit fires
/// on the general path. `None` when any part declines: nothing observable has happened (no
/// step, print or error; the parts are pure), and the caller calls `f` as usual.
#[inline(never)]
pub(crate) fn pure1(i: &Interp<'_>, f: &Value, x: &Value, level: u32) -> Option<EvalResult> {
    match f {
        Value::Keyword(_) => Some(Ok(super::coll::get(x, f).unwrap_or_default())),
        Value::Builtin(b) => match b.fast {
            super::Fast::One(g) => g(x),
            super::Fast::Prim(op) => op.apply1(x),
            _ => None,
        },
        Value::Native(n)
            if level < PURE_LEVELS && i.depth.saturating_add(level) < i.limits.max_depth =>
        {
            match &**n {
                NativeFn::Juxt(fs) => {
                    // Built in place: up to three values live in the vector itself.
                    let mut out = crate::value::PVec::new();
                    for f in fs {
                        match pure1(i, f, x, level + 1)? {
                            Ok(v) => out.push_back(v),
                            Err(e) => return Some(Err(e)),
                        }
                    }
                    Some(Ok(Value::Vector(crate::value::Coll::new(out))))
                }
                NativeFn::Comp(fs) => {
                    let mut v = x.clone();
                    for f in fs.iter().rev() {
                        match pure1(i, f, &v, level + 1)? {
                            Ok(next) => v = next,
                            Err(e) => return Some(Err(e)),
                        }
                    }
                    Some(Ok(v))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Calls a native with two arguments (`Interp::apply2`, already one call deeper): `(update m
/// k (fnil + 0) x)` per element without argument vectors, anything else as [`apply_native`].
pub fn apply_native2(i: &mut Interp<'_>, n: &NativeFn, x: Value, y: Value) -> EvalResult {
    match n {
        NativeFn::Fnil(f, d) => i.apply2(f, fnil_arg(d, 0, x), fnil_arg(d, 1, y)),
        _ => apply_native(i, n, vec![x, y]),
    }
}

/// `(n x y)` for [`Interp::apply2`]: one call deeper, as `apply` charges it. A `fnil` over a
/// builtin number op (`(update m k (fnil + 0) x)`, `(reduce (fnil + 0) ...)`) is answered
/// without that level's frame and stack check: its op calls nothing, so only the depth limit
/// applies, checked first (at the limit the general path gives the very error). Its steps:
/// none, as on the general path.
pub(crate) fn call_native2(i: &mut Interp<'_>, n: &NativeFn, x: Value, y: Value) -> EvalResult {
    if let NativeFn::Fnil(Value::Builtin(b), d) = n
        && let super::Fast::Prim(op) = b.fast
        && i.depth < i.limits.max_depth
    {
        return match (fnil_arg(d, 0, x), fnil_arg(d, 1, y)) {
            (Value::Int(a), Value::Int(c)) => match op.ints(a, c) {
                Some(v) => Ok(v),
                None => super::call2(i, b, Value::Int(a), Value::Int(c)),
            },
            // Doubles (`:total`s): the prim's answer, as `call2` takes it; numbers hold
            // nothing, so they are forgotten rather than passed to `Value`'s drop.
            (x @ (Value::Int(_) | Value::Float(_)), y @ (Value::Int(_) | Value::Float(_))) => {
                match op.apply(&x, &y) {
                    Some(r) => {
                        std::mem::forget(x);
                        std::mem::forget(y);
                        r
                    }
                    None => super::call2(i, b, x, y),
                }
            }
            (x, y) => super::call2(i, b, x, y),
        };
    }
    i.nested(|i| apply_native2(i, n, x, y))
}

/// Argument `k` of a call through `(fnil f defaults...)`: its default when it is nil and one
/// is given; every call path goes through it (or through [`fnil_default`], the rule itself).
fn fnil_arg(defaults: &[Value], k: usize, a: Value) -> Value {
    match fnil_default(defaults, k, &a) {
        Some(d) => d.clone(),
        None => a,
    }
}

/// The default that replaces argument `k` of a `fnil` call, `a`: one is given and `a` is nil.
#[inline(always)]
pub(crate) fn fnil_default<'a>(defaults: &'a [Value], k: usize, a: &Value) -> Option<&'a Value> {
    match a {
        Value::Nil => defaults.get(k),
        _ => None,
    }
}

/// `(memoize f)`.
pub fn memoized(f: Value) -> Value {
    native(NativeFn::Memo(f, std::cell::RefCell::default()))
}

// Cached argument lists hold no lazy seq (those are never cached), so no key can change.
#[allow(clippy::mutable_key_type)]
fn memo_call(
    i: &mut Interp<'_>,
    f: &Value,
    cache: &std::cell::RefCell<std::collections::HashMap<Vec<Value>, Value>>,
    args: Vec<Value>,
) -> EvalResult {
    if args.iter().any(|a| matches!(a, Value::Lazy(_))) {
        return i.apply(f, args);
    }
    // The borrow ends before the call: a memoized function may call itself.
    if let Some(v) = cache.borrow().get(&args) {
        return Ok(v.clone());
    }
    let v = i.apply(f, args.clone())?;
    cache.borrow_mut().insert(args, v.clone());
    Ok(v)
}

/// The value inside a `reduced`, or `None` if `v` is not one.
pub fn unreduced(v: &Value) -> Option<Value> {
    match v {
        Value::Native(n) => match &**n {
            NativeFn::Reduced(x) => Some(x.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn comp(a: Vec<Value>) -> EvalResult {
    if a.is_empty() {
        return Ok(Value::Builtin(&IDENTITY));
    }
    // Composing transducers runs their steps left to right.
    let steps: Option<Vec<Vec<super::xform::XStep>>> =
        a.iter().map(super::xform::as_xform).collect();
    if let Some(steps) = steps {
        return Ok(super::xform::xform(steps.concat()));
    }
    let mut a = a;
    if a.len() == 1 {
        return Ok(a.remove(0));
    }
    Ok(native(NativeFn::Comp(a)))
}

fn extreme_key(i: &mut Interp<'_>, mut a: Vec<Value>, want: std::cmp::Ordering) -> EvalResult {
    let k = a.remove(0);
    let mut it = a.into_iter();
    let mut best = it.next().unwrap_or_default();
    let mut best_key = i.apply1(&k, best.clone())?;
    super::math::to_f64(&best_key, "max-key")?;
    for x in it {
        let kx = i.apply1(&k, x.clone())?;
        // Ties go to the later item, as in Clojure.
        if super::math::num_cmp(&kx, &best_key)? != want.reverse() {
            best = x;
            best_key = kx;
        }
    }
    Ok(best)
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
    match last {
        // What `seq_vec` charges and gives, with the elements of a vector or list held only
        // here (`(apply max (map :total rows))`) moved instead of copied and dropped.
        Value::Vector(xs) | Value::List(xs) => {
            i.tick_n(xs.len() as u64)?;
            match xs.into_unique() {
                Ok(owned) => a.extend(owned),
                Err(shared) => a.extend(shared.iter().cloned()),
            }
        }
        other => a.extend(i.seq_vec(&other)?),
    }
    i.apply(&f, a)
}
