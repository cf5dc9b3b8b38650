//! Sequential access to any seqable value, lazily where the value is lazy.
//!
//! `SeqIter` walks vectors and lists in place, materializes maps (as `[k v]` entries), sets and
//! strings (as characters) once, and pulls lazy seqs element by element, so consumers like
//! `take` or `first` never realize more of an infinite seq than they need.
//!
//! `realize_deep` turns every lazy seq inside a value into a list (within the limits): `=` uses
//! it, and so does the run's end, so that a finite lazy result leaves the program as data.

use super::Interp;
use super::lazy::LazySeq;
use crate::error::{EvalError, EvalResult};
use crate::value::{Coll, PVec, Value};
use std::rc::Rc;

/// A cursor over a seqable value.
#[derive(Debug, Clone)]
pub enum SeqIter {
    Vec(Coll<PVec>, usize),
    Items(Rc<Vec<Value>>, usize),
    Lazy(Rc<LazySeq>, usize),
}

impl SeqIter {
    /// A cursor over `v`; an error if `v` is not seqable.
    pub fn new(_interp: &mut Interp<'_>, v: &Value) -> EvalResult<SeqIter> {
        Ok(match v {
            Value::Nil => SeqIter::Items(Rc::new(Vec::new()), 0),
            Value::Vector(xs) | Value::List(xs) => SeqIter::Vec(xs.clone(), 0),
            Value::Map(m) => SeqIter::Items(
                Rc::new(
                    m.iter()
                        .map(|(k, x)| Value::vector([k.clone(), x.clone()]))
                        .collect(),
                ),
                0,
            ),
            Value::Set(s) => SeqIter::Items(Rc::new(s.iter().cloned().collect()), 0),
            Value::Str(s) => SeqIter::Items(Rc::new(s.chars().map(Value::Char).collect()), 0),
            Value::Lazy(l) => SeqIter::Lazy(l.clone(), 0),
            other => {
                return Err(EvalError::type_err(
                    "seq",
                    format!(
                        "don't know how to create a sequence from {}",
                        other.type_name()
                    ),
                ));
            }
        })
    }

    /// The next element, or `None` at the end.
    pub fn next(&mut self, interp: &mut Interp<'_>) -> EvalResult<Option<Value>> {
        match self {
            SeqIter::Vec(xs, i) => {
                let v = xs.get(*i).cloned();
                *i += 1;
                Ok(v)
            }
            SeqIter::Items(xs, i) => {
                let v = xs.get(*i).cloned();
                *i += 1;
                Ok(v)
            }
            SeqIter::Lazy(l, i) => {
                let v = l.nth(interp, *i)?;
                *i += 1;
                Ok(v)
            }
        }
    }

    /// Whether the source is a lazy (possibly infinite) seq.
    pub fn is_lazy(&self) -> bool {
        matches!(self, SeqIter::Lazy(..))
    }

    /// What is left, as a list, or nil if nothing is; stays lazy for lazy sources.
    pub fn rest_value(self, interp: &mut Interp<'_>) -> EvalResult<Value> {
        match self {
            SeqIter::Lazy(l, i) => {
                if l.nth(interp, i)?.is_none() {
                    return Ok(Value::Nil);
                }
                Ok(Value::Lazy(Rc::new(LazySeq::drop_from(l, i))))
            }
            mut other => {
                let mut out = PVec::new();
                while let Some(x) = other.next(interp)? {
                    out.push_back(x);
                }
                Ok(if out.is_empty() {
                    Value::Nil
                } else {
                    Value::List(Coll::new(out))
                })
            }
        }
    }
}

impl Interp<'_> {
    /// All elements of a seqable value; realizing a lazy seq counts against the limits.
    pub fn seq_vec(&mut self, v: &Value) -> EvalResult<Vec<Value>> {
        if let Value::Vector(xs) | Value::List(xs) = v {
            self.tick_n(xs.len() as u64)?;
            return Ok(xs.iter().cloned().collect());
        }
        let mut it = SeqIter::new(self, v)?;
        let mut out = Vec::new();
        while let Some(x) = it.next(self)? {
            self.tick()?;
            out.push(x);
        }
        Ok(out)
    }

    /// `v` with every lazy seq in it (at any depth) realized into a list. Values without a
    /// lazy seq are returned as they are, without copying.
    pub fn realize_deep(&mut self, v: Value) -> EvalResult<Value> {
        if !has_lazy(&v) {
            return Ok(v);
        }
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.realize_inner(v))
    }

    fn realize_inner(&mut self, v: Value) -> EvalResult<Value> {
        Ok(match v {
            Value::Lazy(_) => {
                let items = self.seq_vec(&v)?;
                let mut out = PVec::new();
                for x in items {
                    out.push_back(self.realize_deep(x)?);
                }
                Value::List(Coll::new(out))
            }
            Value::Vector(xs) => Value::Vector(Coll::new(self.realize_all(&xs)?)),
            Value::List(xs) => Value::List(Coll::new(self.realize_all(&xs)?)),
            Value::Map(m) => {
                let mut out = m.empty_like();
                for (k, x) in m.iter() {
                    let k = self.realize_deep(k.clone())?;
                    out.insert(k, self.realize_deep(x.clone())?);
                }
                Value::map(out)
            }
            Value::Set(s) => {
                let mut out = Vec::with_capacity(s.len());
                for x in s.iter() {
                    out.push(self.realize_deep(x.clone())?);
                }
                crate::builtins::coll::set_like(&s, out)
            }
            other => other,
        })
    }

    fn realize_all(&mut self, xs: &PVec) -> EvalResult<PVec> {
        let mut out = PVec::new();
        for x in xs.iter() {
            out.push_back(self.realize_deep(x.clone())?);
        }
        Ok(out)
    }
}

/// Whether a lazy seq occurs anywhere in `v`.
pub fn has_lazy(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        match x {
            Value::Lazy(_) => return true,
            Value::Vector(xs) | Value::List(xs) => stack.extend(xs.iter()),
            Value::Map(m) => {
                for (k, x) in m.iter() {
                    stack.push(k);
                    stack.push(x);
                }
            }
            Value::Set(s) => stack.extend(s.iter()),
            _ => {}
        }
    }
    false
}
