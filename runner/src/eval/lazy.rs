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

use super::Interp;
use super::seq::SeqIter;
use crate::error::{EvalError, EvalResult, Limit};
use crate::value::{Coll, PVec, Value};
use std::cell::RefCell;
use std::collections::{HashSet, VecDeque};
use std::rc::Rc;

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

/// One more of `left` (forever when `None`): false once none is left.
fn count_down(left: &mut Option<u64>) -> bool {
    match left {
        Some(0) => false,
        Some(n) => {
            *n -= 1;
            true
        }
        None => true,
    }
}

/// The next element of `src` that `pass` accepts; each one skipped is a step more.
fn next_passing(
    src: &mut SeqIter,
    interp: &mut Interp<'_>,
    mut pass: impl FnMut(&mut Interp<'_>, &Value) -> EvalResult<bool>,
) -> EvalResult<Option<Value>> {
    loop {
        let Some(x) = src.next(interp)? else {
            return Ok(None);
        };
        if pass(interp, &x)? {
            return Ok(Some(x));
        }
        interp.tick()?;
    }
}

fn map_step(
    f: &Value,
    srcs: &mut [SeqIter],
    index: &mut Option<i64>,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    let mut args = Vec::with_capacity(srcs.len() + 1);
    if let Some(ix) = index {
        args.push(Value::Int(*ix));
        *ix += 1;
    }
    for s in srcs.iter_mut() {
        match s.next(interp)? {
            Some(x) => args.push(x),
            None => return Ok(None),
        }
    }
    interp.apply(&f.clone(), args).map(Some)
}

fn filter_step(
    pred: &Value,
    src: &mut SeqIter,
    keep: bool,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    next_passing(src, interp, |i, x| {
        Ok(i.apply1(&pred.clone(), x.clone())?.truthy() == keep)
    })
}

/// `keep`/`keep-indexed`: the next non-nil result of `f`; each nil is a step more.
fn keep_step(
    f: &Value,
    src: &mut SeqIter,
    index: &mut Option<i64>,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    loop {
        let Some(x) = src.next(interp)? else {
            return Ok(None);
        };
        let y = match index {
            Some(ix) => {
                *ix += 1;
                interp.apply2(&f.clone(), Value::Int(*ix - 1), x)?
            }
            None => interp.apply1(&f.clone(), x)?,
        };
        if !y.is_nil() {
            return Ok(Some(y));
        }
        interp.tick()?;
    }
}

fn drop_while_step(
    pred: &Value,
    src: &mut SeqIter,
    dropping: &mut bool,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    next_passing(src, interp, |i, x| {
        if !*dropping || !i.apply1(&pred.clone(), x.clone())?.truthy() {
            *dropping = false;
            return Ok(true);
        }
        Ok(false)
    })
}

fn interleave_step(
    srcs: &mut [SeqIter],
    queue: &mut VecDeque<Value>,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    if queue.is_empty() && !srcs.is_empty() {
        let mut round = Vec::with_capacity(srcs.len());
        for s in srcs.iter_mut() {
            match s.next(interp)? {
                Some(x) => round.push(x),
                None => return Ok(None),
            }
        }
        queue.extend(round);
    }
    Ok(queue.pop_front())
}

fn interpose_step(
    sep: &Value,
    src: &mut SeqIter,
    queue: &mut VecDeque<Value>,
    started: &mut bool,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    if queue.is_empty()
        && let Some(x) = src.next(interp)?
    {
        if *started {
            queue.push_back(sep.clone());
        }
        *started = true;
        queue.push_back(x);
    }
    Ok(queue.pop_front())
}

/// A transducer over a source: what one source element (or the end) makes, queued.
fn xform_step(
    run: &mut crate::builtins::xform::XRun,
    src: &mut SeqIter,
    queue: &mut VecDeque<Value>,
    ended: &mut bool,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    loop {
        if let Some(v) = queue.pop_front() {
            return Ok(Some(v));
        }
        if *ended {
            return Ok(None);
        }
        let mut out = Vec::new();
        match src.next(interp)? {
            Some(x) if !run.is_done() => run.feed(interp, x, &mut out)?,
            _ => {
                run.finish(interp, &mut out)?;
                *ended = true;
            }
        }
        if run.is_done() && !*ended {
            run.finish(interp, &mut out)?;
            *ended = true;
        }
        queue.extend(out);
    }
}

/// A finite integer range as a list, built in one loop. Steps and limits are counted as the
/// generator would count them (one step per element plus the end), so budgets hit the same way.
pub(crate) fn int_range_list(
    interp: &mut Interp<'_>,
    start: i64,
    end: i64,
    step: i64,
) -> EvalResult {
    let span = if step > 0 {
        i128::from(end) - i128::from(start)
    } else {
        i128::from(start) - i128::from(end)
    };
    let step_abs = i128::from(step).abs().max(1);
    let n = u64::try_from((span.max(0) + step_abs - 1) / step_abs).unwrap_or(u64::MAX);
    let max = interp.limits.max_iterations;
    if n > max {
        interp.tick_n(max.saturating_add(1))?;
        return Err(too_long(interp));
    }
    interp.tick_n(n.saturating_add(1))?;
    let mut out = PVec::new();
    let mut x = start;
    for _ in 0..n {
        out.push_back(Value::Int(x));
        x = x.wrapping_add(step);
    }
    Ok(Value::List(Coll::new(out)))
}

/// Integer ranges, the usual case, without the generic numeric comparisons; `None` when an
/// operand is not an integer.
fn int_range_step(
    next: &mut Value,
    step: &Value,
    end: Option<&Value>,
) -> Option<EvalResult<Option<Value>>> {
    let (Value::Int(n), Value::Int(st)) = (&*next, step) else {
        return None;
    };
    let end = match end {
        None => None,
        Some(Value::Int(e)) => Some(*e),
        Some(_) => return None,
    };
    let (n, st) = (*n, *st);
    if end.is_some_and(|e| if st >= 0 { n >= e } else { n <= e }) {
        return Some(Ok(None));
    }
    Some(crate::builtins::add2(next, step).map(|after| Some(std::mem::replace(next, after))))
}

fn range_step(next: &mut Value, step: &Value, end: Option<&Value>) -> EvalResult<Option<Value>> {
    use std::cmp::Ordering::{Greater, Less};
    if let Some(r) = int_range_step(next, step, end) {
        return r;
    }
    if let Some(end) = end {
        let going_up = crate::builtins::num_cmp(step, &Value::Int(0))? != Less;
        let ord = crate::builtins::num_cmp(next, end)?;
        if (going_up && ord != Less) || (!going_up && ord != Greater) {
            return Ok(None);
        }
    }
    let v = next.clone();
    *next = crate::builtins::add2(next, step)?;
    Ok(Some(v))
}

fn mapcat_step(
    f: &Value,
    srcs: &mut [SeqIter],
    cur: &mut Option<SeqIter>,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    loop {
        if let Some(c) = cur
            && let Some(x) = c.next(interp)?
        {
            return Ok(Some(x));
        }
        let mut args = Vec::with_capacity(srcs.len());
        for s in srcs.iter_mut() {
            match s.next(interp)? {
                Some(x) => args.push(x),
                None => return Ok(None),
            }
        }
        let coll = interp.apply(f, args)?;
        *cur = Some(SeqIter::new(interp, &coll)?);
        interp.tick()?;
    }
}

/// `partition`/`partition-all`: windows of `n` elements, `step` apart.
#[derive(Debug, Clone)]
pub struct Partition {
    pub src: SeqIter,
    pub n: usize,
    pub step: usize,
    /// Fills the last, short window (`partition` with a pad); without one it is dropped.
    pub pad: Option<Rc<Vec<Value>>>,
    /// `partition-all`: a short last window is kept as it is.
    pub all: bool,
    pub window: VecDeque<Value>,
    pub ended: bool,
}

impl Partition {
    fn step(&mut self, interp: &mut Interp<'_>) -> EvalResult<Option<Value>> {
        let n = self.n;
        while !self.ended && self.window.len() < n {
            match self.src.next(interp)? {
                Some(x) => self.window.push_back(x),
                None => self.ended = true,
            }
        }
        if self.window.is_empty() {
            return Ok(None);
        }
        let full = self.window.len() >= n;
        let mut chunk: Vec<Value> = self.window.iter().take(n).cloned().collect();
        if !full && !self.all {
            self.window.clear();
            let Some(p) = &self.pad else {
                return Ok(None);
            };
            chunk.extend(p.iter().take(n - chunk.len()).cloned());
            self.ended = true;
            return Ok(Some(Value::list(chunk)));
        }
        // Advance by `step`: from the window first, then past the source.
        let from_window = self.step.min(self.window.len());
        self.window.drain(..from_window);
        for _ in from_window..self.step {
            if self.ended || self.src.next(interp)?.is_none() {
                self.ended = true;
                break;
            }
        }
        Ok(Some(Value::list(chunk)))
    }
}

fn partition_by_step(
    f: &Value,
    src: &mut SeqIter,
    pending: &mut Option<(Value, Value)>,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    let (key, first) = match pending.take() {
        Some(p) => p,
        None => match src.next(interp)? {
            Some(x) => (interp.apply1(f, x.clone())?, x),
            None => return Ok(None),
        },
    };
    let mut run = vec![first];
    while let Some(x) = src.next(interp)? {
        interp.tick()?;
        let k = interp.apply1(f, x.clone())?;
        if k != key {
            *pending = Some((k, x));
            break;
        }
        run.push(x);
    }
    Ok(Some(Value::list(run)))
}

fn reductions_step(
    f: &Value,
    src: &mut SeqIter,
    acc: &mut Option<Value>,
    ended: &mut bool,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    if *ended {
        return Ok(None);
    }
    let Some(prev) = acc.take() else {
        // No init: the first element (or `(f)` of an empty seq) comes first.
        let first = match src.next(interp)? {
            Some(x) => x,
            None => {
                *ended = true;
                interp.apply(f, vec![])?
            }
        };
        *acc = Some(first.clone());
        return Ok(Some(first));
    };
    let Some(x) = src.next(interp)? else {
        *ended = true;
        return Ok(None);
    };
    let next = interp.apply2(f, prev, x)?;
    if let Some(v) = crate::builtins::hof::unreduced(&next) {
        *ended = true;
        return Ok(Some(v));
    }
    *acc = Some(next.clone());
    Ok(Some(next))
}

fn tree_step(
    branch: &Value,
    children: &Value,
    root: &mut Option<Value>,
    stack: &mut Vec<SeqIter>,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
    let node = match root.take() {
        Some(r) => r,
        None => loop {
            let Some(top) = stack.last_mut() else {
                return Ok(None);
            };
            match top.next(interp)? {
                Some(x) => break x,
                None => {
                    stack.pop();
                }
            }
        },
    };
    if interp.apply1(branch, node.clone())?.truthy() {
        let kids = interp.apply1(children, node.clone())?;
        stack.push(SeqIter::new(interp, &kids)?);
    }
    Ok(Some(node))
}

/// Whether `flatten` descends into a value (Clojure's `sequential?`).
pub fn is_sequential(v: &Value) -> bool {
    matches!(v, Value::Vector(_) | Value::List(_) | Value::Lazy(_))
}

fn flatten_step(stack: &mut Vec<SeqIter>, interp: &mut Interp<'_>) -> EvalResult<Option<Value>> {
    loop {
        let Some(top) = stack.last_mut() else {
            return Ok(None);
        };
        match top.next(interp)? {
            Some(x) if is_sequential(&x) => {
                let it = SeqIter::new(interp, &x)?;
                stack.push(it);
                interp.tick()?;
            }
            Some(x) => return Ok(Some(x)),
            None => {
                stack.pop();
            }
        }
    }
}
