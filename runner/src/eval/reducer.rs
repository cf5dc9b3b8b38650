//! Quick reducers: the two-parameter fns LLM pipelines hand to `reduce` to build a map, one
//! `assoc` or `update` of the accumulator per element, are answered by `apply2` without
//! entering them: no frame, no body walk.
//! - `(fn [acc o] (update acc (:k o) (fnil + 0) (:v o)))` sums by key, with any number prim
//!   folded under `fnil` and any defaults.
//! - `(fn [acc o] (update acc (:k o) + (:v o)))` does the same with the prim itself.
//! - `(fn [acc o] (update acc (:k o) inc))` counts, with any builtin with a one-value entry.
//! - `(fn [acc o] (assoc acc (:id o) o))` indexes.
//!
//! The key and the value may each be a keyword read of the element, the element itself, or a
//! constant. The accumulator must be the first parameter, moved into the call (its last use:
//! `liveness`), so an unshared map is updated in place, as on the general path.
//!
//! Session 33's measurements (BENCHMARKS.md) put the cost of this idiom in the walker's general
//! machinery, which three layers of calls go through: the stacked call, `update_with`, and the
//! native's entry.
//!
//! Invariant, the quick fns' (`quick.rs`): the answer is taken only when it is the general path's
//! with no error possible. That means:
//! - the accumulator is a map (not a sorted one, whose key check is the builtin's) or nil;
//! - the fn's computation answered inline (a builtin's one-value entry, `Prim::apply`) without
//!   an error;
//! - neither the call nor `fnil`'s own could pass `max_depth`;
//! - the steps the body charges (one per call node: the `assoc`/`update`, each keyword read, and
//!   each builder call a folded `fnil` stands for) neither exhaust the budget nor reach a
//!   deadline check.
//!
//! Otherwise the accumulator is handed back untouched and the fn is entered as usual, so errors
//! and limits are the general path's own (`tests/quick_reducers.rs` runs both side by side).

use super::Interp;
use super::prim::Prim;
use crate::analyze::{Expr, FnTemplate};
use crate::builtins::{Fast, NativeFn};
use crate::error::EvalResult;
use crate::value::{KeyHint, MapImpl, Text, Value};
use std::borrow::Cow;

/// A two-parameter fn whose body is one `assoc` or `update` of its first parameter; made by the
/// analyzer (see [`Reducer::of`]).
#[derive(Debug)]
pub struct Reducer {
    key: Operand,
    change: Change,
    /// The steps the body charges.
    steps: u64,
    /// 1 when a folded `fnil` is called one level deeper than the body (its depth check).
    depth: u32,
}

/// What the body does to the key's entry.
#[derive(Debug)]
enum Change {
    /// `(assoc acc k v)`.
    Assoc(Operand),
    /// `(update acc k f)`, `f` a builtin with a one-value entry (`inc`), or `(fnil f default)`
    /// of one folded at analysis.
    One {
        f: fn(&Value) -> Option<EvalResult>,
        defaults: Box<[Value]>,
    },
    /// `(update acc k f v)`, `f` a number prim, or `(fnil prim defaults...)` folded at analysis.
    Two {
        op: Prim,
        defaults: Box<[Value]>,
        v: Operand,
    },
}

/// A key or value: a keyword read of the element, the element, or a constant.
#[derive(Debug)]
enum Operand {
    Field {
        key: Value,
        name: Text,
        hint: KeyHint,
    },
    Elem,
    Const(Value),
}

impl Operand {
    /// The operand `e` in a body whose element is slot `elem`, and the steps it charges.
    fn of(e: &Expr, elem: u32) -> Option<(Operand, u64)> {
        Some(match e {
            Expr::Local(s) | Expr::Move(s) if *s == elem => (Operand::Elem, 0),
            Expr::Const(v) => (Operand::Const(v.clone()), 0),
            Expr::Call(c) => match (&c.f, c.args.as_slice()) {
                (Expr::Const(key @ Value::Keyword(name)), [Expr::Local(s) | Expr::Move(s)])
                    if *s == elem =>
                {
                    let hint = KeyHint::default();
                    let (key, name) = (key.clone(), name.clone());
                    (Operand::Field { key, name, hint }, 1)
                }
                _ => return None,
            },
            _ => return None,
        })
    }

    /// The operand's value for element `x`, read in place where it can be.
    fn read<'a, E: Elem + ?Sized>(&'a self, x: &'a E) -> Cow<'a, Value> {
        match self {
            Operand::Field { key, name, hint } => x.field(key, name, hint),
            Operand::Elem => x.whole(),
            Operand::Const(c) => Cow::Borrowed(c),
        }
    }
}

/// An element a quick reducer reads: a value, or the values of a record literal that a fused
/// `keep` fn answers, not yet built into the record (`code::Fields`). Both answer what the
/// record itself would.
pub(crate) trait Elem {
    /// `(:name x)`, `key` being the keyword; `hint` is the read's own.
    fn field(&self, key: &Value, name: &Text, hint: &KeyHint) -> Cow<'_, Value>;
    /// The element itself.
    fn whole(&self) -> Cow<'_, Value>;
}

impl Elem for Value {
    fn field(&self, key: &Value, name: &Text, hint: &KeyHint) -> Cow<'_, Value> {
        match self {
            Value::Map(m) => Cow::Borrowed(m.get_keyword_hinted(name, hint).unwrap_or(&Value::Nil)),
            other => Cow::Owned(crate::builtins::coll::get(other, key).unwrap_or_default()),
        }
    }

    fn whole(&self) -> Cow<'_, Value> {
        Cow::Borrowed(self)
    }
}

impl Elem for super::code::Fields<'_> {
    /// The record's lenient read (`Record::get_hinted`), by the shape's position of the key.
    fn field(&self, _: &Value, name: &Text, hint: &KeyHint) -> Cow<'_, Value> {
        Cow::Borrowed(
            crate::value::Shape::hinted_position(self.shape(), name, hint)
                .map_or(&Value::Nil, |i| self.get(i)),
        )
    }

    fn whole(&self) -> Cow<'_, Value> {
        Cow::Owned(self.to_value())
    }
}

impl Reducer {
    /// The quick reducer form of `t`, if it has one (see the module header).
    pub fn of(t: &FnTemplate) -> Option<Reducer> {
        let a = t.plain_arity(2)?;
        let (&[acc, elem], Expr::Call(c)) = (a.raw.as_slice(), &a.body) else {
            return None;
        };
        let Expr::Builtin(b) = &c.f else {
            return None;
        };
        let (Some(Expr::Move(m)), Some(k)) = (c.args.first(), c.args.get(1)) else {
            return None;
        };
        if *m != acc {
            return None;
        }
        let (key, key_steps) = Operand::of(k, elem)?;
        let (change, steps, depth) = match (b.name, c.args.get(2..).unwrap_or_default()) {
            ("assoc", [v]) => {
                let (v, s) = Operand::of(v, elem)?;
                (Change::Assoc(v), s, 0)
            }
            ("update", [f]) => {
                let (f, defaults, calls, depth) = Self::folded(f, |g| match g.fast {
                    Fast::One(one) => Some(one),
                    _ => None,
                })?;
                (Change::One { f, defaults }, calls, depth)
            }
            ("update", [f, v]) => {
                let (v, s) = Operand::of(v, elem)?;
                let (op, defaults, calls, depth) = Self::folded(f, |g| match g.fast {
                    Fast::Prim(op) => Some(op),
                    _ => None,
                })?;
                (Change::Two { op, defaults, v }, s + calls, depth)
            }
            _ => return None,
        };
        Some(Reducer {
            key,
            change,
            steps: 1 + key_steps + steps,
            depth,
        })
    }

    /// `update`'s fn: a builtin whose entry `entry` picks, or a `(fnil builtin defaults...)` of
    /// one folded at analysis, with the builder calls it charges and the level deeper its
    /// native is called at (`apply1`'s `nested`, `call_native2`'s check).
    fn folded<T>(
        f: &Expr,
        entry: impl Fn(&crate::builtins::BuiltinDef) -> Option<T>,
    ) -> Option<(T, Box<[Value]>, u64, u32)> {
        match f {
            Expr::Builtin(g) => Some((entry(g)?, Box::default(), 0, 0)),
            Expr::Folded(folded) => match &folded.value {
                Value::Native(n) => match &**n {
                    NativeFn::Fnil(Value::Builtin(g), d) => {
                        Some((entry(g)?, d.clone().into(), u64::from(folded.calls), 1))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }
}

impl Reducer {
    /// The steps the body charges.
    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }

    /// How much deeper than the call a folded `fnil`'s native runs.
    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    /// The body's answer for accumulator `acc` and element `x`, where it is the general path's
    /// with no error possible (limits aside: the caller's), else `acc` back, untouched.
    pub(crate) fn reduce<E: Elem + ?Sized>(&self, acc: Value, x: &E) -> Result<Value, Value> {
        let mapped = match &acc {
            Value::Nil => true,
            Value::Map(m) => !matches!(&**m, MapImpl::Sorted(_)),
            _ => false,
        };
        if !mapped {
            return Err(acc);
        }
        let key = self.key.read(x);
        let mut acc = acc;
        let new = match &self.change {
            Change::Assoc(v) => v.read(x).into_owned(),
            change => {
                // A present key is changed where it is, one lookup, as `update_with` does it
                // (unshared first, as it would be there: which map holds the entry is not
                // observable). A read and then an insert, two lookups, took 3-13 % more time
                // than the walker on a summing `reduce`, for 41 % fewer instructions.
                if let Value::Map(m) = &mut acc
                    && let Some(slot) = m.make_mut().get_mut(&key)
                {
                    let Some(new) = new_value(change, slot, x) else {
                        return Err(acc);
                    };
                    *slot = new;
                    return Ok(acc);
                }
                match new_value(change, old(&acc, &key), x) {
                    Some(v) => v,
                    None => return Err(acc),
                }
            }
        };
        Ok(put(acc, key.into_owned(), new))
    }
}

impl Interp<'_> {
    /// The answer of quick reducer `r` for accumulator `acc` and element `x`, with its steps
    /// charged; or `acc` back, untouched, for the general call.
    pub(crate) fn quick_reduce(
        &mut self,
        r: &Reducer,
        acc: Value,
        x: &Value,
    ) -> Result<Value, Value> {
        let after = self.steps.saturating_add(r.steps);
        let deep = self.depth.saturating_add(r.depth);
        if after > self.tick_limit || deep >= self.limits.max_depth {
            return Err(acc);
        }
        let acc = r.reduce(acc, x)?;
        self.steps = after;
        Ok(acc)
    }
}

/// The accumulator's value at `key`, as `update` reads it (a keyword finds a string key).
fn old<'a>(acc: &'a Value, key: &Value) -> &'a Value {
    match acc {
        Value::Map(m) => m.get_lenient(key).unwrap_or(&Value::Nil),
        _ => &Value::Nil,
    }
}

/// `update`'s new value from `old`, where its fn answers inline without an error. Inlined
/// into `reduce`: a value returned from a call is stored in halves and then loaded whole, a
/// stall on every element.
#[inline(always)]
fn new_value<E: Elem + ?Sized>(change: &Change, old: &Value, x: &E) -> Option<Value> {
    let r = match change {
        Change::One { f, defaults } => f(fnil_arg(defaults, 0, old))?,
        Change::Two { op, defaults, v } => {
            let v = v.read(x);
            // Every way the general path applies a prim ends in `Prim::apply`'s answer, when it
            // gives one (`call_native2`, `apply2`, `call2`).
            let (a, b) = (fnil_arg(defaults, 0, old), fnil_arg(defaults, 1, &v));
            if let Some(n) = op.numbers(a, b) {
                return Some(n);
            }
            op.apply_inline(a, b)?
        }
        Change::Assoc(_) => return None,
    };
    r.ok()
}

/// Argument `k` of a `fnil` call, by the builtin's rule.
fn fnil_arg<'a>(defaults: &'a [Value], k: usize, a: &'a Value) -> &'a Value {
    crate::builtins::hof::fnil_default(defaults, k, a).unwrap_or(a)
}

/// `(assoc acc key new)` of a map or nil (what `quick_reduce` takes), by `assoc`'s own
/// `put_entry`: in place when unshared.
fn put(acc: Value, key: Value, new: Value) -> Value {
    let m = match acc {
        Value::Map(m) => Some(m),
        _ => None,
    };
    Value::Map(crate::builtins::put_entry(m, key, new))
}

#[cfg(test)]
mod tests {
    /// Whether the first form of `src` is a fn (or a `let` whose body is one) with a quick
    /// reducer form.
    fn quick(src: &str) -> bool {
        crate::eval::testing::first_fn(src).is_some_and(|t| t.reducer.is_some())
    }

    #[test]
    fn the_quick_reducer_shapes_and_only_they_are_recognised() {
        // Every body `tests/quick_reducers.rs` compares with the general path is taken here, so
        // that test compares two paths, not one with itself.
        for yes in [
            "(fn [acc o] (update acc (:k o) (fnil + 0) (:v o)))",
            "(fn [acc o] (update acc (:k o) (fnil * 1 2) (:v o)))",
            "(fn [acc o] (update acc (:k o) (fnil < 0) (:v o)))",
            "(fn [acc o] (update acc (:k o) + (:v o)))",
            "(fn [acc o] (update acc (:k o) mod (:v o)))",
            "(fn [acc o] (update acc :n (fnil + 0) (:v o)))",
            "(fn [acc o] (update acc (:k o) inc))",
            "(fn [acc o] (update acc o (fnil inc 0)))",
            "(fn [acc o] (assoc acc (:k o) o))",
            "(fn [acc o] (assoc acc :last (:v o)))",
            "(fn [acc o] (update acc (:name o) (fnil + 0) (:total o)))",
            "(fn [acc o] (update acc (:cat o) (fnil inc 0)))",
            "(fn [acc o] (assoc acc (:id o) o))",
            "(fn [acc o] (assoc acc (:name o) (:total o)))",
        ] {
            assert!(quick(yes), "{yes}");
        }
        for no in [
            // The `(do nil ...)` the integration tests compare against must stay general.
            "(fn [acc o] (do nil (update acc (:k o) (fnil + 0) (:v o))))",
            "(fn [acc o] (update acc (:cat o) (fnil conj []) (:id o)))",
            "(fn [acc o] (update o (:k acc) inc))",
            "(fn [acc o] (update acc (:k acc) inc))",
            "(fn [acc o] (assoc acc (:k o) (inc (:v o))))",
            "(fn [acc o] (assoc acc (:k o) 1 :b 2))",
            "(fn [acc o] (update acc (:k o) + 1 2))",
            "(fn [acc o] (update acc (:k o) #(inc %)))",
            "(fn [acc o] (update-in acc [(:k o)] inc))",
            "(fn [acc [k v]] (assoc acc k v))",
            "(fn [acc o & more] (assoc acc (:k o) o))",
            "(fn [o] (assoc o :k 1))",
        ] {
            assert!(!quick(no), "{no}");
        }
    }
}
