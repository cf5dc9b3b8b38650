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
        if !self.done && push(&mut self.steps, 0, i, x, out)? {
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
            if let Some(chunk) = chunk {
                push(&mut self.steps, k + 1, i, chunk, out)?;
            }
            k += 1;
        }
        Ok(())
    }
}

/// What one step makes of one input.
enum Out {
    /// Nothing goes on.
    Skip,
    /// The whole process ends now.
    Stop,
    /// One value goes on to the next step.
    One(Value),
    /// One value goes on; once it has gone through, the process ends (`take`'s last item).
    Last(Value),
    /// The items of a collection go on one by one (`cat`, `mapcat`).
    Each(Value),
    /// Two values go on, in this order (`interpose`'s separator, then the item).
    Two(Value, Value),
}

/// Work left for [`push`]: a value entering step `k` (`steps.len()` is the output), the rest
/// of a collection whose items enter step `k`, or the end of the process once everything
/// above this entry on the stack has gone through.
enum Work {
    One(usize, Value),
    Each(usize, SeqIter),
    StopHere,
}

/// Runs `x` through `steps[from..]`, depth first: each value goes all the way through before
/// the next one enters, as nested reducing functions would run it. An explicit stack instead
/// of recursion, so a composition of 100,000 transducers costs heap, not native stack.
/// True when a step asks to stop the whole process.
fn push(
    steps: &mut [XStep],
    from: usize,
    i: &mut Interp<'_>,
    x: Value,
    out: &mut Vec<Value>,
) -> EvalResult<bool> {
    let mut work = vec![Work::One(from, x)];
    while let Some(next) = work.pop() {
        let (k, x) = match next {
            Work::StopHere => return Ok(true),
            Work::One(k, x) => (k, x),
            Work::Each(k, mut it) => match it.next(i)? {
                Some(x) => {
                    work.push(Work::Each(k, it));
                    (k, x)
                }
                None => continue,
            },
        };
        let Some(step) = steps.get_mut(k) else {
            out.push(x);
            continue;
        };
        i.tick()?;
        match step.apply(i, x)? {
            Out::Skip => {}
            Out::Stop => return Ok(true),
            Out::One(y) => work.push(Work::One(k + 1, y)),
            Out::Last(y) => work.extend([Work::StopHere, Work::One(k + 1, y)]),
            Out::Each(coll) => work.push(Work::Each(k + 1, SeqIter::new(i, &coll)?)),
            Out::Two(a, b) => work.extend([Work::One(k + 1, b), Work::One(k + 1, a)]),
        }
    }
    Ok(false)
}

impl XStep {
    /// One input through this step alone.
    fn apply(&mut self, i: &mut Interp<'_>, x: Value) -> EvalResult<Out> {
        let nil_skips = |y: Value| if y.is_nil() { Out::Skip } else { Out::One(y) };
        Ok(match self {
            XStep::Map(f) => Out::One(i.apply1(f, x)?),
            XStep::MapIndexed(f, n) => {
                *n += 1;
                Out::One(i.apply2(f, Value::Int(*n - 1), x)?)
            }
            XStep::Filter(p, keep) => match i.apply1(p, x.clone())?.truthy() == *keep {
                true => Out::One(x),
                false => Out::Skip,
            },
            XStep::Keep(f) => nil_skips(i.apply1(f, x)?),
            XStep::KeepIndexed(f, n) => {
                *n += 1;
                nil_skips(i.apply2(f, Value::Int(*n - 1), x)?)
            }
            XStep::MapCat(f) => Out::Each(i.apply1(f, x)?),
            XStep::Cat => Out::Each(x),
            XStep::Take(0) => Out::Stop,
            XStep::Take(n) => {
                *n -= 1;
                if *n == 0 { Out::Last(x) } else { Out::One(x) }
            }
            XStep::TakeWhile(p) => match i.apply1(p, x.clone())?.truthy() {
                true => Out::One(x),
                false => Out::Stop,
            },
            XStep::Drop(n) if *n > 0 => {
                *n -= 1;
                Out::Skip
            }
            XStep::Drop(_) => Out::One(x),
            XStep::DropWhile(p, dropping) => {
                if *dropping && i.apply1(p, x.clone())?.truthy() {
                    return Ok(Out::Skip);
                }
                *dropping = false;
                Out::One(x)
            }
            XStep::Distinct(_)
            | XStep::Dedupe(_)
            | XStep::PartitionAll(..)
            | XStep::PartitionBy(..)
            | XStep::Interpose(..) => self.apply_buffering(i, x)?,
        })
    }

    /// The steps that remember earlier inputs: `distinct`, `dedupe`, the partitions, `interpose`.
    fn apply_buffering(&mut self, i: &mut Interp<'_>, x: Value) -> EvalResult<Out> {
        Ok(match self {
            XStep::Distinct(seen) => match seen.insert(x.clone()) {
                true => Out::One(x),
                false => Out::Skip,
            },
            XStep::Dedupe(prev) if prev.as_ref() == Some(&x) => Out::Skip,
            XStep::Dedupe(prev) => {
                *prev = Some(x.clone());
                Out::One(x)
            }
            XStep::PartitionAll(n, buf) => {
                buf.push(x);
                // As in Clojure, the transducer forms emit vectors.
                match buf.len() < *n {
                    true => Out::Skip,
                    false => Out::One(Value::vector(std::mem::take(buf))),
                }
            }
            XStep::PartitionBy(f, key, buf) => {
                let k = i.apply1(f, x.clone())?;
                let split = key.as_ref().is_some_and(|old| *old != k);
                *key = Some(k);
                if split {
                    return Ok(Out::One(Value::vector(std::mem::replace(buf, vec![x]))));
                }
                buf.push(x);
                Out::Skip
            }
            XStep::Interpose(sep, started) if *started => Out::Two(sep.clone(), x),
            XStep::Interpose(_, started) => {
                *started = true;
                Out::One(x)
            }
            // Not reached: `apply` sends only the steps above here.
            _ => Out::One(x),
        })
    }
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
