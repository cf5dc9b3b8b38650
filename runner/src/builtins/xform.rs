//! Transducers: `(map f)`, `(filter p)`, `(take n)`, ... called without a collection, composed
//! with `comp`, and used by `into`, `sequence` and `transduce`.
//!
//! A transducer is data here, not a function of a reducing fn: a `NativeFn::Xform` holding the
//! list of steps in the order they see elements (so `comp` of transducers concatenates their
//! steps left to right, as Clojure's composition behaves). Each use clones the steps, so the
//! state of `take`, `distinct`, `partition-all`... is fresh per use. A step may end the whole
//! process early (`take`, `take-while`), which is how `(into [] (take 5) (range))` stops.
//! Calling a transducer with a reducing function directly is not supported (DIV, see
//! runner/DIVERGENCES-coll.md).

use super::hof::{NativeFn, unreduced};
use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{EvalError, EvalResult};
use crate::eval::Interp;
use crate::eval::lazy::{Gen, lazy_or_list};
use crate::eval::seq::SeqIter;
use crate::value::Value;
use std::collections::{HashSet, VecDeque};
use std::rc::Rc;

/// One stage of a transducer, with its state.
#[derive(Debug, Clone)]
pub enum XStep {
    Map(Value),
    MapIndexed(Value, i64),
    Filter(Value, bool),
    Keep(Value),
    KeepIndexed(Value, i64),
    MapCat(Value),
    Cat,
    Take(u64),
    TakeWhile(Value),
    Drop(u64),
    DropWhile(Value, bool),
    Distinct(HashSet<Value>),
    Dedupe(Option<Value>),
    PartitionAll(usize, Vec<Value>),
    PartitionBy(Value, Option<Value>, Vec<Value>),
    Interpose(Value, bool),
}

/// A transducer being run over one source.
#[derive(Debug, Clone)]
pub struct XRun {
    steps: Vec<XStep>,
    done: bool,
}

impl XRun {
    pub fn new(steps: Vec<XStep>) -> XRun {
        XRun { steps, done: false }
    }

    /// Whether a step has ended the process (no more input is wanted).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Pushes one input through the steps, appending what comes out to `out`.
    pub fn feed(&mut self, i: &mut Interp<'_>, x: Value, out: &mut Vec<Value>) -> EvalResult<()> {
        if !self.done && push(&mut self.steps, i, x, out)? {
            self.done = true;
        }
        Ok(())
    }

    /// Flushes the buffering steps (`partition-all`, `partition-by`) at the end of input.
    pub fn finish(&mut self, i: &mut Interp<'_>, out: &mut Vec<Value>) -> EvalResult<()> {
        let mut k = 0;
        while k < self.steps.len() {
            let chunk = match self.steps.get_mut(k) {
                Some(XStep::PartitionAll(_, buf)) | Some(XStep::PartitionBy(_, _, buf))
                    if !buf.is_empty() =>
                {
                    Some(Value::vector(std::mem::take(buf)))
                }
                _ => None,
            };
            if let (Some(chunk), Some(rest)) = (chunk, self.steps.get_mut(k + 1..)) {
                push(rest, i, chunk, out)?;
            }
            k += 1;
        }
        Ok(())
    }
}

/// Runs `x` through `steps`; true when a step asks to stop the whole process.
fn push(
    steps: &mut [XStep],
    i: &mut Interp<'_>,
    x: Value,
    out: &mut Vec<Value>,
) -> EvalResult<bool> {
    let Some((first, rest)) = steps.split_first_mut() else {
        out.push(x);
        return Ok(false);
    };
    i.tick()?;
    match first {
        XStep::Map(f) => {
            let y = i.apply1(f, x)?;
            push(rest, i, y, out)
        }
        XStep::MapIndexed(f, n) => {
            *n += 1;
            let y = i.apply2(f, Value::Int(*n - 1), x)?;
            push(rest, i, y, out)
        }
        XStep::Filter(p, keep) => {
            if i.apply1(p, x.clone())?.truthy() == *keep {
                push(rest, i, x, out)
            } else {
                Ok(false)
            }
        }
        XStep::Keep(f) => match i.apply1(f, x)? {
            Value::Nil => Ok(false),
            y => push(rest, i, y, out),
        },
        XStep::KeepIndexed(f, n) => {
            *n += 1;
            match i.apply2(f, Value::Int(*n - 1), x)? {
                Value::Nil => Ok(false),
                y => push(rest, i, y, out),
            }
        }
        XStep::MapCat(f) => {
            let coll = i.apply1(f, x)?;
            push_all(rest, i, &coll, out)
        }
        XStep::Cat => push_all(rest, i, &x, out),
        XStep::Take(n) => {
            if *n == 0 {
                return Ok(true);
            }
            *n -= 1;
            Ok(push(rest, i, x, out)? || *n == 0)
        }
        XStep::TakeWhile(p) => {
            if i.apply1(p, x.clone())?.truthy() {
                push(rest, i, x, out)
            } else {
                Ok(true)
            }
        }
        XStep::Drop(n) => {
            if *n > 0 {
                *n -= 1;
                return Ok(false);
            }
            push(rest, i, x, out)
        }
        XStep::DropWhile(p, dropping) => {
            if *dropping && i.apply1(p, x.clone())?.truthy() {
                return Ok(false);
            }
            *dropping = false;
            push(rest, i, x, out)
        }
        XStep::Distinct(seen) => {
            if seen.insert(x.clone()) {
                push(rest, i, x, out)
            } else {
                Ok(false)
            }
        }
        XStep::Dedupe(prev) => {
            if prev.as_ref() == Some(&x) {
                return Ok(false);
            }
            *prev = Some(x.clone());
            push(rest, i, x, out)
        }
        XStep::PartitionAll(n, buf) => {
            buf.push(x);
            if buf.len() < *n {
                return Ok(false);
            }
            // As in Clojure, the transducer forms emit vectors.
            let chunk = Value::vector(std::mem::take(buf));
            push(rest, i, chunk, out)
        }
        XStep::PartitionBy(f, key, buf) => {
            let k = i.apply1(f, x.clone())?;
            let split = key.as_ref().is_some_and(|old| *old != k);
            *key = Some(k);
            if split {
                let chunk = Value::vector(std::mem::replace(buf, vec![x]));
                return push(rest, i, chunk, out);
            }
            buf.push(x);
            Ok(false)
        }
        XStep::Interpose(sep, started) => {
            if *started && push(rest, i, sep.clone(), out)? {
                return Ok(true);
            }
            *started = true;
            push(rest, i, x, out)
        }
    }
}

fn push_all(
    steps: &mut [XStep],
    i: &mut Interp<'_>,
    coll: &Value,
    out: &mut Vec<Value>,
) -> EvalResult<bool> {
    let mut it = SeqIter::new(i, coll)?;
    while let Some(y) = it.next(i)? {
        if push(steps, i, y, out)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A transducer value.
pub fn xform(steps: Vec<XStep>) -> Value {
    Value::Native(Rc::new(NativeFn::Xform(steps)))
}

/// The steps of a transducer value (fresh state), if it is one; `cat` is one.
pub fn as_xform(v: &Value) -> Option<Vec<XStep>> {
    match v {
        Value::Native(n) => match &**n {
            NativeFn::Xform(steps) => Some(steps.clone()),
            _ => None,
        },
        Value::Builtin(b) if b.name == "cat" => Some(vec![XStep::Cat]),
        _ => None,
    }
}

fn xform_arg(v: &Value, op: &str) -> EvalResult<Vec<XStep>> {
    as_xform(v).ok_or_else(|| expected(op, "a transducer such as (map f)", v))
}

/// `(into to xform from)`: stops reading `from` as soon as the transducer is done.
pub fn into_with(i: &mut Interp<'_>, to: Value, xf: &Value, from: &Value) -> EvalResult {
    let mut run = XRun::new(xform_arg(xf, "into")?);
    let mut it = SeqIter::new(i, from)?;
    let mut acc = to;
    let mut out = Vec::new();
    while !run.is_done() {
        let Some(x) = it.next(i)? else { break };
        run.feed(i, x, &mut out)?;
        for y in out.drain(..) {
            acc = super::coll::conj(acc, y)?;
        }
    }
    run.finish(i, &mut out)?;
    out.into_iter().try_fold(acc, super::coll::conj)
}

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "sequence",
        1,
        2,
        "A seq of the items (through a transducer when given one).",
        "(sequence (map inc) [1 2]) ;=> (2 3)",
        sequence
    ),
    def!(
        "transduce",
        3,
        4,
        "Reduces with f over the items passed through a transducer.",
        "(transduce (map inc) + 0 [1 2]) ;=> 5",
        transduce
    ),
    def!(
        "cat",
        1,
        1,
        "The transducer that concatenates each input collection.",
        "(into [] cat [[1] [2 3]]) ;=> [1 2 3]",
        |_, a| Err(EvalError::type_err(
            "cat",
            format!(
                "cat is a transducer; use it with into, sequence or transduce, got {}",
                a[0].type_name()
            )
        ))
    ),
];

fn sequence(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let [xf, coll] = a.as_slice() else {
        let coll = a.first().cloned().unwrap_or_default();
        return match coll {
            v @ (Value::Lazy(_) | Value::List(_)) => Ok(v),
            Value::Nil => Ok(Value::list([])),
            other => Ok(Value::list(i.seq_vec(&other)?)),
        };
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = Gen::Xform {
        run: XRun::new(xform_arg(xf, "sequence")?),
        src,
        queue: VecDeque::new(),
        ended: false,
    };
    lazy_or_list(g, lazy, i)
}

fn transduce(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let mut it = a.into_iter();
    let (xf, f) = (it.next().unwrap_or_default(), it.next().unwrap_or_default());
    let (init, coll) = match (it.next(), it.next()) {
        (Some(init), Some(coll)) => (init, coll),
        (Some(coll), None) => (i.apply(&f, vec![])?, coll),
        _ => return Ok(Value::Nil),
    };
    let mut run = XRun::new(xform_arg(&xf, "transduce")?);
    let mut src = SeqIter::new(i, &coll)?;
    let mut acc = init;
    let mut out = Vec::new();
    let mut stopped = false;
    while !run.is_done() && !stopped {
        let Some(x) = src.next(i)? else { break };
        run.feed(i, x, &mut out)?;
        (acc, stopped) = fold_into(i, &f, acc, &mut out)?;
    }
    if !stopped {
        run.finish(i, &mut out)?;
        (acc, _) = fold_into(i, &f, acc, &mut out)?;
    }
    // The completion arity: `(f acc)`.
    i.apply1(&f, acc)
}

fn fold_into(
    i: &mut Interp<'_>,
    f: &Value,
    mut acc: Value,
    out: &mut Vec<Value>,
) -> EvalResult<(Value, bool)> {
    for y in out.drain(..) {
        acc = i.apply2(f, acc, y)?;
        if let Some(v) = unreduced(&acc) {
            return Ok((v, true));
        }
    }
    Ok((acc, false))
}
