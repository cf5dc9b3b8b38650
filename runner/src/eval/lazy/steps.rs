//! The generators' own steps, one function per kind of [`Gen`](super::Gen) that needs more than a
//! line: [`super::step`] charges the step and dispatches here. Each function makes at most one
//! element (or says the generator has ended); none keeps state outside its generator's fields,
//! so a generator taken out of its seq while it runs (see the parent module) stays consistent.

use super::too_long;
use crate::error::EvalResult;
use crate::eval::Interp;
use crate::eval::seq::SeqIter;
use crate::value::{Coll, PVec, Value};
use std::collections::VecDeque;
use std::rc::Rc;

/// One more of `left` (forever when `None`): false once none is left.
pub(super) fn count_down(left: &mut Option<u64>) -> bool {
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
pub(super) fn next_passing(
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

pub(super) fn map_step(
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

pub(super) fn filter_step(
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
pub(super) fn keep_step(
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

pub(super) fn drop_while_step(
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

pub(super) fn interleave_step(
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

pub(super) fn interpose_step(
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
pub(super) fn xform_step(
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
    // A plain `Vec` of the exact size, handed over whole: a push to the list itself checked
    // its form and grew its buffer ten times for 1,000 elements (4.5 % of interp p5).
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut x = start;
    for _ in 0..n {
        out.push(Value::Int(x));
        x = x.wrapping_add(step);
    }
    Ok(Value::List(Coll::new(PVec::from_vec(out))))
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

pub(super) fn range_step(
    next: &mut Value,
    step: &Value,
    end: Option<&Value>,
) -> EvalResult<Option<Value>> {
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

pub(super) fn mapcat_step(
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
    pub(super) fn step(&mut self, interp: &mut Interp<'_>) -> EvalResult<Option<Value>> {
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

pub(super) fn partition_by_step(
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

pub(super) fn reductions_step(
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

pub(super) fn tree_step(
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

pub(super) fn flatten_step(
    stack: &mut Vec<SeqIter>,
    interp: &mut Interp<'_>,
) -> EvalResult<Option<Value>> {
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
