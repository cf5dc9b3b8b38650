//! Lazy sequences, for the infinite generators (`(range)`, `iterate`, `repeat`, `cycle`) and
//! the transformations of them (`map`, `filter`, ... over a lazy source).
//!
//! Only possibly-infinite seqs are lazy; everything over finite data is eager. A `LazySeq` keeps
//! the elements realized so far and the generator that makes the next ones. The generator is
//! taken out while it runs, so a fn that re-enters the same seq gets a clear error, not a panic.
//! Each realized element ticks the step budget, and a seq longer than `max_iterations` is a
//! `limit_exceeded`: realizing an infinite seq ends with a limit, never a hang.

use super::Interp;
use super::seq::SeqIter;
use crate::error::{EvalError, EvalResult, Limit};
use crate::value::Value;
use std::cell::RefCell;
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
    Repeat {
        x: Value,
    },
    Cycle {
        items: Rc<Vec<Value>>,
        i: usize,
    },
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
    /// `keep`: elements for which `f` is non-nil, mapped.
    Keep {
        f: Value,
        src: SeqIter,
    },
    Concat {
        srcs: Vec<SeqIter>,
    },
    /// Elements of `src` from `offset` on.
    Drop {
        src: Rc<LazySeq>,
        offset: usize,
    },
}

#[derive(Debug)]
struct State {
    buf: Vec<Value>,
    generator: Option<Gen>,
    done: bool,
}

/// A lazily realized sequence.
#[derive(Debug)]
pub struct LazySeq {
    state: RefCell<State>,
}

impl LazySeq {
    pub fn new(generator: Gen) -> LazySeq {
        LazySeq {
            state: RefCell::new(State {
                buf: Vec::new(),
                generator: Some(generator),
                done: false,
            }),
        }
    }

    pub fn value(generator: Gen) -> Value {
        Value::Lazy(Rc::new(LazySeq::new(generator)))
    }

    /// The elements of `src` from `offset` on.
    pub fn drop_from(src: Rc<LazySeq>, offset: usize) -> LazySeq {
        LazySeq::new(Gen::Drop { src, offset })
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
                if st.buf.len() as u64 >= interp.limits.max_iterations {
                    return Err(EvalError::limit(
                        Limit::Iterations,
                        format!(
                            "sequence longer than {} elements (an infinite seq realized fully?)",
                            interp.limits.max_iterations
                        ),
                    ));
                }
                st.generator.take().ok_or_else(reentrant)?
            };
            let produced = step(&mut generator, interp);
            let mut st = self.state.try_borrow_mut().map_err(|_| reentrant())?;
            st.generator = Some(generator);
            match produced? {
                Some(v) => st.buf.push(v),
                None => st.done = true,
            }
        }
    }
}

fn reentrant() -> EvalError {
    EvalError::type_err(
        "lazy-seq",
        "a lazy sequence was used while it was being realized",
    )
}

/// Produces the next element of a generator.
fn step(g: &mut Gen, interp: &mut Interp<'_>) -> EvalResult<Option<Value>> {
    interp.tick()?;
    match g {
        Gen::Range { next, step, end } => {
            if let Some(end) = end {
                let going_up =
                    crate::builtins::num_cmp(step, &Value::Int(0))? != std::cmp::Ordering::Less;
                let ord = crate::builtins::num_cmp(next, end)?;
                if (going_up && ord != std::cmp::Ordering::Less)
                    || (!going_up && ord != std::cmp::Ordering::Greater)
                {
                    return Ok(None);
                }
            }
            let v = next.clone();
            *next = crate::builtins::add2(next, step)?;
            Ok(Some(v))
        }
        Gen::Iterate { f, next } => {
            let v = next.clone();
            *next = interp.apply(&f.clone(), vec![v.clone()])?;
            Ok(Some(v))
        }
        Gen::Repeat { x } => Ok(Some(x.clone())),
        Gen::Cycle { items, i } => {
            let v = items.get(*i % items.len().max(1)).cloned();
            *i += 1;
            Ok(v)
        }
        Gen::Map { f, srcs, index } => {
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
        Gen::Filter { pred, src, keep } => loop {
            let Some(x) = src.next(interp)? else {
                return Ok(None);
            };
            if interp.apply(&pred.clone(), vec![x.clone()])?.truthy() == *keep {
                return Ok(Some(x));
            }
            interp.tick()?;
        },
        Gen::Keep { f, src } => loop {
            let Some(x) = src.next(interp)? else {
                return Ok(None);
            };
            let y = interp.apply(&f.clone(), vec![x])?;
            if !y.is_nil() {
                return Ok(Some(y));
            }
            interp.tick()?;
        },
        Gen::Concat { srcs } => {
            while let Some(s) = srcs.first_mut() {
                if let Some(x) = s.next(interp)? {
                    return Ok(Some(x));
                }
                srcs.remove(0);
            }
            Ok(None)
        }
        Gen::Drop { src, offset } => {
            let v = src.nth(interp, *offset)?;
            *offset += 1;
            Ok(v)
        }
    }
}
