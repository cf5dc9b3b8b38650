//! Lazy sequences, for the infinite generators (`(range)`, `iterate`, `repeat`, `cycle`) and
//! the transformations of them (`map`, `filter`, `partition`, ... over a lazy source).
//!
//! Only possibly-infinite (or too long to realize cheaply) seqs are lazy; everything over finite
//! data is eager. The sequence functions are written once, as generators (`Gen`): over a lazy
//! source the generator is wrapped in a `LazySeq`; over finite data it is run to the end at once
//! ([`drain`]), so both paths share one implementation and one semantics.
//!
//! A `LazySeq` keeps the elements realized so far and the generator that makes the next ones.
//! The generator is taken out while it runs, so a fn that re-enters the same seq gets a clear
//! error, not a panic. Each realized element ticks the step budget, and a seq longer than
//! `max_iterations` is a `limit_exceeded`: realizing an infinite seq ends with a limit, never a
//! hang.

mod steps;

use super::Interp;
use super::seq::SeqIter;
use crate::error::{EvalError, EvalResult, Limit};
use crate::value::{Coll, PVec, Value};
use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::rc::Rc;
pub(crate) use steps::int_range_list;
pub use steps::{Partition, is_sequential};
use steps::{
    count_down, drop_while_step, filter_step, flatten_step, interleave_step, interpose_step,
    keep_step, map_step, mapcat_step, next_passing, partition_by_step, range_step, reductions_step,
    tree_step, xform_step,
};

/// What makes the next element.
#[derive(Debug, Clone)]
pub enum Gen {
    /// Integers or floats from `next` by `step`, up to `end` (exclusive) when given.
    Range {
        next: Value,
        step: Value,
        end: Option<Value>,
    },
    Iterate {
        f: Value,
        next: Value,
    },
    /// `x` forever, or `left` more times.
    Repeat {
        x: Value,
        left: Option<u64>,
    },
    Cycle {
        items: Rc<Vec<Value>>,
        i: usize,
    },
    /// `(f)` forever, or `left` more times.
    Repeatedly {
        f: Value,
        left: Option<u64>,
    },
    /// `map` / `map-indexed` (with `index`).
    Map {
        f: Value,
        srcs: Vec<SeqIter>,
        index: Option<i64>,
    },
    Filter {
        pred: Value,
        src: SeqIter,
        keep: bool,
    },
    /// `keep` / `keep-indexed`: non-nil results of `f`.
    Keep {
        f: Value,
        src: SeqIter,
        index: Option<i64>,
    },
    Concat {
        srcs: VecDeque<SeqIter>,
    },
    /// Elements of `src` from `offset` on.
    Drop {
        src: Rc<LazySeq>,
        offset: usize,
    },
    DropWhile {
        pred: Value,
        src: SeqIter,
        dropping: bool,
    },
    /// `mapcat`: the items of `(f x ...)`, one collection after another.
    MapCat {
        f: Value,
        srcs: Vec<SeqIter>,
        cur: Option<SeqIter>,
    },
    Distinct {
        src: SeqIter,
        seen: HashSet<Value>,
    },
    Dedupe {
        src: SeqIter,
        prev: Option<Value>,
    },
    /// `take-nth`: every `n`th element of `src`, from the first (`seen` counts those read).
    TakeNth {
        src: SeqIter,
        n: usize,
        seen: usize,
    },
    /// `partition` (`all` false, optional `pad`) and `partition-all` (`all` true).
    Partition(Partition),
    PartitionBy {
        f: Value,
        src: SeqIter,
        pending: Option<(Value, Value)>,
    },
    Interleave {
        srcs: Vec<SeqIter>,
        queue: VecDeque<Value>,
    },
    Interpose {
        sep: Value,
        src: SeqIter,
        queue: VecDeque<Value>,
        started: bool,
    },
    /// `reductions`: `acc` is `None` until the first element is known.
    Reductions {
        f: Value,
        src: SeqIter,
        acc: Option<Value>,
        ended: bool,
    },
    /// Depth-first walk (`tree-seq`): a stack of child cursors.
    Tree {
        branch: Value,
        children: Value,
        root: Option<Value>,
        stack: Vec<SeqIter>,
    },
    /// `flatten`: the non-sequential leaves of nested sequential collections.
    Flatten {
        stack: Vec<SeqIter>,
    },
    /// A transducer applied to a source (`sequence`).
    Xform {
        run: crate::builtins::xform::XRun,
        src: SeqIter,
        queue: VecDeque<Value>,
        ended: bool,
    },
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) buf: Vec<Value>,
    pub(super) generator: Option<Gen>,
    done: bool,
    /// A runtime error met while making the next element; every later read repeats it (the
    /// generator's state after a failure is not meaningful, so it is never run again).
    failed: Option<EvalError>,
}

/// A lazily realized sequence.
#[derive(Debug)]
pub struct LazySeq {
    pub(super) state: RefCell<State>,
}

impl LazySeq {
    pub fn new(generator: Gen) -> LazySeq {
        LazySeq {
            state: RefCell::new(State {
                buf: Vec::new(),
                generator: Some(generator),
                done: false,
                failed: None,
            }),
        }
    }

    pub fn value(generator: Gen) -> Value {
        Value::Lazy(Rc::new(LazySeq::new(generator)))
    }

    /// The elements of `src` from `offset` on. When `src` itself drops from a seq, the result
    /// drops from that one directly: `rest` of `rest` of ... (a `reduce` calling `rest` 100,000
    /// times) stays one level over its source, as Clojure's `rest` of a range or a chunked seq
    /// is, instead of a chain that reading would walk one level per link.
    pub fn drop_from(src: Rc<LazySeq>, offset: usize) -> LazySeq {
        let flat = src
            .state
            .try_borrow()
            .ok()
            .and_then(|st| match &st.generator {
                // The generator's `offset` has moved past what `src` has buffered already.
                Some(Gen::Drop {
                    src: inner,
                    offset: at,
                }) if !st.done && st.failed.is_none() => {
                    let start = at.checked_sub(st.buf.len())?;
                    Some((inner.clone(), start.checked_add(offset)?))
                }
                _ => None,
            });
        match flat {
            Some((inner, offset)) => LazySeq::new(Gen::Drop { src: inner, offset }),
            None => LazySeq::new(Gen::Drop { src, offset }),
        }
    }

    /// Element `i`, realizing up to it; `None` past the end.
    pub fn nth(&self, interp: &mut Interp<'_>, i: usize) -> EvalResult<Option<Value>> {
        loop {
            let mut generator = {
                let mut st = self.state.try_borrow_mut().map_err(|_| reentrant())?;
                if let Some(v) = st.buf.get(i) {
                    return Ok(Some(v.clone()));
                }
                if st.done {
                    return Ok(None);
                }
                if let Some(e) = &st.failed {
                    return Err(e.clone());
                }
                st.generator.take().ok_or_else(reentrant)?
            };
            // A generator may read another lazy seq (`map` over `map` over ...): one level
            // deeper, charged as a call is, so a chain of 100,000 is a depth limit, not a crash.
            let produced = interp.nested(|interp| step(&mut generator, interp));
            let mut st = self.state.try_borrow_mut().map_err(|_| reentrant())?;
            st.generator = Some(generator);
            let produced = produced.inspect_err(|e| {
                if e.catchable() {
                    st.failed = Some(e.clone());
                }
            });
            match produced? {
                Some(v) => {
                    if st.buf.len() as u64 >= interp.limits.max_iterations {
                        return Err(too_long(interp));
                    }
                    st.buf.push(v);
                }
                None => {
                    st.done = true;
                    st.generator = None;
                }
            }
        }
    }

    /// The realized elements, if the seq has been realized to its end.
    pub fn realized(&self) -> Option<Vec<Value>> {
        let st = self.state.try_borrow().ok()?;
        st.done.then(|| st.buf.clone())
    }
}

fn reentrant() -> EvalError {
    EvalError::type_err(
        "lazy-seq",
        "a lazy sequence was used while it was being realized",
    )
}

/// The error of a sequence realized past `max_iterations`.
pub(crate) fn too_long(interp: &Interp<'_>) -> EvalError {
    EvalError::limit(
        Limit::Iterations,
        format!(
            "sequence longer than {} elements (an infinite seq realized fully?)",
            interp.limits.max_iterations
        ),
    )
}

/// Runs a generator to its end: the eager path for finite sources.
pub fn drain(mut g: Gen, interp: &mut Interp<'_>) -> EvalResult<Vec<Value>> {
    let mut out = Vec::new();
    while let Some(v) = step(&mut g, interp)? {
        if out.len() as u64 >= interp.limits.max_iterations {
            return Err(too_long(interp));
        }
        out.push(v);
    }
    Ok(out)
}

/// A lazy seq over `g` when `lazy`, else the list of all its elements.
pub fn lazy_or_list(g: Gen, lazy: bool, interp: &mut Interp<'_>) -> EvalResult {
    if lazy {
        return Ok(LazySeq::value(g));
    }
    // Straight into the list: no intermediate vector.
    let mut g = g;
    let mut out = PVec::new();
    while let Some(v) = step(&mut g, interp)? {
        if out.len() as u64 >= interp.limits.max_iterations {
            return Err(too_long(interp));
        }
        out.push_back(v);
    }
    Ok(Value::List(Coll::new(out)))
}

/// Realizes up to `cap` elements: a list if the seq ends by then, else the lazy seq. For
/// generators that may or may not be infinite (`tree-seq`), so small results are plain lists.
/// A runtime error while realizing ahead is left in the lazy seq, to surface only if that
/// element is ever read (as it would in Clojure); limits are not deferred.
pub fn list_if_short(g: Gen, cap: usize, interp: &mut Interp<'_>) -> EvalResult {
    let l = Rc::new(LazySeq::new(g));
    match l.nth(interp, cap) {
        Ok(None) => {
            let items = l.realized().unwrap_or_default();
            Ok(Value::List(Coll::new(items.into_iter().collect::<PVec>())))
        }
        Ok(Some(_)) => Ok(Value::Lazy(l)),
        Err(e) if e.catchable() => Ok(Value::Lazy(l)),
        Err(e) => Err(e),
    }
}

/// Produces the next element of a generator: one step charged, then the generator's own step.
fn step(g: &mut Gen, interp: &mut Interp<'_>) -> EvalResult<Option<Value>> {
    interp.tick()?;
    match g {
        Gen::Range { next, step, end } => range_step(next, step, end.as_ref()),
        Gen::Iterate { f, next } => {
            let v = next.clone();
            *next = interp.apply1(&f.clone(), v.clone())?;
            Ok(Some(v))
        }
        Gen::Repeat { x, left } => Ok(count_down(left).then(|| x.clone())),
        Gen::Repeatedly { f, left } => match count_down(left) {
            true => interp.apply(&f.clone(), vec![]).map(Some),
            false => Ok(None),
        },
        Gen::Cycle { items, i } => {
            let v = items.get(*i % items.len().max(1)).cloned();
            *i += 1;
            Ok(v)
        }
        Gen::Map { f, srcs, index } => map_step(f, srcs, index, interp),
        Gen::Filter { pred, src, keep } => filter_step(pred, src, *keep, interp),
        Gen::Keep { f, src, index } => keep_step(f, src, index, interp),
        Gen::Concat { srcs } => {
            while let Some(s) = srcs.front_mut() {
                if let Some(x) = s.next(interp)? {
                    return Ok(Some(x));
                }
                srcs.pop_front();
            }
            Ok(None)
        }
        Gen::Drop { src, offset } => {
            let v = src.nth(interp, *offset)?;
            *offset += 1;
            Ok(v)
        }
        Gen::DropWhile {
            pred,
            src,
            dropping,
        } => drop_while_step(pred, src, dropping, interp),
        Gen::MapCat { f, srcs, cur } => mapcat_step(f, srcs, cur, interp),
        Gen::Distinct { src, seen } => next_passing(src, interp, |_, x| Ok(seen.insert(x.clone()))),
        Gen::Dedupe { src, prev } => next_passing(src, interp, |_, x| {
            let new = prev.as_ref() != Some(x);
            if new {
                *prev = Some(x.clone());
            }
            Ok(new)
        }),
        Gen::TakeNth { src, n, seen } => next_passing(src, interp, |_, _| {
            let take = seen.is_multiple_of(*n);
            *seen += 1;
            Ok(take)
        }),
        Gen::Partition(p) => p.step(interp),
        Gen::PartitionBy { f, src, pending } => partition_by_step(f, src, pending, interp),
        Gen::Interleave { srcs, queue } => interleave_step(srcs, queue, interp),
        Gen::Interpose {
            sep,
            src,
            queue,
            started,
        } => interpose_step(sep, src, queue, started, interp),
        Gen::Reductions { f, src, acc, ended } => reductions_step(f, src, acc, ended, interp),
        Gen::Tree {
            branch,
            children,
            root,
            stack,
        } => tree_step(branch, children, root, stack, interp),
        Gen::Flatten { stack } => flatten_step(stack, interp),
        Gen::Xform {
            run,
            src,
            queue,
            ended,
        } => xform_step(run, src, queue, ended, interp),
    }
}
