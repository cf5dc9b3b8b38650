//! Updates by key and by path: `assoc`, `assoc-in`, `dissoc`, `update`, `update-in`, and
//! `get-in` (the table entries are `coll`'s). Updates use `Rc::make_mut`, so a collection that
//! is not shared is changed in place and one that is shared is copied; `update` of a key a map
//! has changes its value in place, and calls `f` without an argument vector for one or two
//! arguments. `assoc` and `update` also take their arguments on the value stack
//! (`Fast::Stacked`), the usual three or four popped off it.

use super::coll::{get, sorted_key_check};
use super::expected;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::{Coll, MapImpl, Value};

fn path(p: &Value, op: &str) -> EvalResult<Vec<Value>> {
    match p {
        Value::Vector(xs) | Value::List(xs) => Ok(xs.iter().cloned().collect()),
        Value::Nil => Ok(Vec::new()),
        other => Err(expected(op, "a path vector", other)),
    }
}

/// A path for assoc-in/update-in: an empty one means the key nil, as in Clojure.
pub(super) fn non_empty_path(p: &Value, op: &str) -> EvalResult<Vec<Value>> {
    let p = path(p, op)?;
    Ok(if p.is_empty() { vec![Value::Nil] } else { p })
}

pub(super) fn get_in(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut cur = a[0].clone();
    for k in path(&a[1], "get-in")? {
        match get(&cur, &k) {
            Some(v) => cur = v,
            None => return Ok(a.get(2).cloned().unwrap_or_default()),
        }
    }
    Ok(cur)
}

/// `(assoc coll k v)` for maps, nil and vectors (index ≤ count).
pub fn assoc(coll: Value, k: Value, v: Value) -> EvalResult {
    match coll {
        Value::Nil => Ok(Value::Map(put_entry(None, k, v))),
        Value::Map(m) => {
            sorted_key_check(&m, &k)?;
            Ok(Value::Map(put_entry(Some(m), k, v)))
        }
        Value::Vector(mut xs) => {
            let Value::Int(i) = k else {
                return Err(expected("assoc", "an integer index for a vector", &k));
            };
            let n = xs.len();
            match usize::try_from(i).ok().filter(|i| *i <= n) {
                Some(i) if i == n => xs.make_mut().push_back(v),
                Some(i) => {
                    xs.make_mut().set(i, v);
                }
                None => {
                    return Err(EvalError::new(
                        ErrorKind::IndexOutOfBounds,
                        "assoc",
                        format!("index {i} out of bounds for vector of {n}"),
                    ));
                }
            }
            Ok(Value::Vector(xs))
        }
        other => Err(expected("assoc", "a map or vector", &other)),
    }
}

/// `(assoc m k v)` once the map's key check passed (nil: `None`): a new small map, or the
/// map with the entry put in, in place when unshared. `assoc`'s one way to add an entry, shared
/// with the quick reducers (`eval::reducer`).
pub(crate) fn put_entry(m: Option<Coll<MapImpl>>, k: Value, v: Value) -> Coll<MapImpl> {
    match m {
        None => Coll::new(MapImpl::Small(smallvec::smallvec![(k, v)])),
        Some(mut m) => {
            m.make_mut().insert(k, v);
            m
        }
    }
}

pub(super) fn assoc_many(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    assoc_all(a.into_iter())
}

/// `assoc`'s stacked entry (`Fast::Stacked`): the arguments read off the value stack.
pub(super) fn assoc_stacked(i: &mut Interp<'_>, base: usize) -> EvalResult {
    if i.stack.len().saturating_sub(base) == 3 {
        let v = i.stack.pop().unwrap_or_default();
        let k = i.stack.pop().unwrap_or_default();
        let m = i.stack.pop().unwrap_or_default();
        return assoc(m, k, v);
    }
    assoc_all(i.stack.drain(base.min(i.stack.len())..))
}

/// `(assoc coll k v ...)` of its arguments in order.
fn assoc_all(mut args: impl ExactSizeIterator<Item = Value>) -> EvalResult {
    if args.len().is_multiple_of(2) {
        return Err(EvalError::arg(
            "assoc",
            "assoc expects even number of arguments after map/vector",
        ));
    }
    let mut m = args.next().unwrap_or_default();
    while let (Some(k), Some(v)) = (args.next(), args.next()) {
        m = assoc(m, k, v)?;
    }
    Ok(m)
}

/// Iterative (a path may be as long as a program can build): walk down keeping each level,
/// then assoc back up.
pub(super) fn assoc_in(m: Value, path: &[Value], v: Value) -> EvalResult {
    let Some((last, init)) = path.split_last() else {
        return Ok(v);
    };
    let mut levels = Vec::with_capacity(init.len());
    let mut cur = m;
    for k in init {
        let inner = get(&cur, k).unwrap_or_default();
        levels.push((cur, k));
        cur = inner;
    }
    let mut acc = assoc(cur, last.clone(), v)?;
    while let Some((coll, k)) = levels.pop() {
        acc = assoc(coll, k.clone(), acc)?;
    }
    Ok(acc)
}

pub(super) fn dissoc(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    match it.next().unwrap_or_default() {
        Value::Nil => Ok(Value::Nil),
        Value::Map(mut m) => {
            let mm = m.make_mut();
            for k in it {
                mm.remove(&k);
            }
            Ok(Value::Map(m))
        }
        other => Err(expected("dissoc", "a map", &other)),
    }
}

pub(super) fn update(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    let (m, k, f) = (
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
    );
    let extra = match (it.next(), it.len()) {
        (None, _) => Extra::None,
        (Some(x), 0) => Extra::One(x),
        (Some(x), _) => Extra::Many(std::iter::once(x).chain(it).collect()),
    };
    update_with(i, m, k, f, extra)
}

/// `update`'s stacked entry (`Fast::Stacked`): `(update m k f)` and `(update m k f x)`, the
/// usual calls, are popped off the value stack; more arguments go through the vector entry.
pub(super) fn update_stacked(i: &mut Interp<'_>, base: usize) -> EvalResult {
    let extra = match i.stack.len().saturating_sub(base) {
        3 => Extra::None,
        4 => Extra::One(i.stack.pop().unwrap_or_default()),
        _ => {
            let a = super::stack_args(i, base);
            return update(i, a);
        }
    };
    let f = i.stack.pop().unwrap_or_default();
    let k = i.stack.pop().unwrap_or_default();
    let m = i.stack.pop().unwrap_or_default();
    update_with(i, m, k, f, extra)
}

/// The arguments of `update`'s fn after the old value.
enum Extra {
    None,
    One(Value),
    /// Two or more.
    Many(Vec<Value>),
}

/// `(update m k f extra...)`.
fn update_with(i: &mut Interp<'_>, m: Value, k: Value, f: Value, extra: Extra) -> EvalResult {
    let mut m = m;
    // A map with exact key `k`: its value is taken out, `f` applied and the result put back
    // in the same place, one lookup where `get` and `assoc` made two. The map is unique here
    // (`make_mut` copies a shared one, as `assoc` would), so `f` cannot see the hole.
    // The key, the fn and the nil left in the slot are given back inline (`release`).
    if let Value::Map(mm) = &mut m
        && let Some(slot) = mm.make_mut().get_mut(&k)
    {
        let old = std::mem::take(slot);
        let new = apply_extra(i, &f, old, extra)?;
        super::release(std::mem::replace(slot, new));
        super::release(k);
        super::release(f);
        return Ok(m);
    }
    let old = get(&m, &k).unwrap_or_default();
    let v = apply_extra(i, &f, old, extra)?;
    assoc(m, k, v)
}

/// `(f old extra...)` for `update`: one or two arguments (the usual `(update m k f)` and
/// `(update m k f x)`) go through `apply1`/`apply2`, which call a lambda or a builtin's fast
/// entry without an argument vector; more get one vector of the exact size.
fn apply_extra(i: &mut Interp<'_>, f: &Value, old: Value, extra: Extra) -> EvalResult {
    match extra {
        Extra::None => i.apply1(f, old),
        // `(fnil + 0)`, the usual fn of a counting `update`: straight to the native's entry.
        Extra::One(x) if let Value::Native(n) = f => super::hof::call_native2(i, n, old, x),
        Extra::One(x) => i.apply2(f, old, x),
        Extra::Many(xs) => {
            let mut args = Vec::with_capacity(1 + xs.len());
            args.push(old);
            args.extend(xs);
            i.apply(f, args)
        }
    }
}

pub(super) fn update_in(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    let (m, p, f) = (
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
    );
    let p = non_empty_path(&p, "update-in")?;
    let mut cur = m.clone();
    for k in &p {
        cur = get(&cur, k).unwrap_or_default();
    }
    let mut args = vec![cur];
    args.extend(it);
    let v = i.apply(&f, args)?;
    assoc_in(m, &p, v)
}
