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
    Vec(VecCursor),
    Items(Rc<Vec<Value>>, usize),
    Lazy(Rc<LazySeq>, usize),
}

/// A cursor over a vector or list. A flat one is indexed directly; indexing the persistent
/// tree costs a walk per element (≈ 140 instructions at 10,000 elements), so over a tree the
/// cursor copies one leaf chunk at a time (up to 64 elements, one walk) and hands them out in order.
#[derive(Debug, Clone)]
pub struct VecCursor {
    xs: Coll<PVec>,
    /// Index in `xs` of the first element not yet handed out or in `buf`.
    next: usize,
    /// The rest of the current chunk of a tree, last element first (taken with `pop`).
    buf: Vec<Value>,
}

impl VecCursor {
    pub fn new(xs: Coll<PVec>) -> VecCursor {
        VecCursor {
            xs,
            next: 0,
            buf: Vec::new(),
        }
    }
}

impl Iterator for VecCursor {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        if let Some(flat) = self.xs.as_slice() {
            let x = flat.get(self.next).cloned();
            self.next += usize::from(x.is_some());
            return x;
        }
        if self.buf.is_empty() && self.next < self.xs.len() {
            self.next = self.xs.chunk_rev_into(self.next, &mut self.buf);
        }
        self.buf.pop()
    }
}

impl SeqIter {
    /// A cursor over `v`; an error if `v` is not seqable.
    pub fn new(_interp: &mut Interp<'_>, v: &Value) -> EvalResult<SeqIter> {
        Ok(match v {
            Value::Nil => SeqIter::Items(Rc::new(Vec::new()), 0),
            Value::Vector(xs) | Value::List(xs) => SeqIter::Vec(VecCursor::new(xs.clone())),
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
            SeqIter::Vec(c) => Ok(c.next()),
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
    match v {
        Value::Lazy(_) => return true,
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => {}
        // The usual argument: no work list to allocate.
        _ => return false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunked cursor yields exactly the elements that indexing the vector gives, for
    /// vectors of one chunk, at chunk boundaries, deep trees, and trees built by concatenation
    /// (whose chunks are not all full).
    #[test]
    fn the_vector_cursor_yields_what_indexing_gives() {
        let ints = |n: i64| (0..n).map(Value::Int).collect::<PVec>();
        let mut joined = ints(100);
        joined.append(ints(37));
        joined.append(ints(5000));
        let mut cases: Vec<PVec> = [0, 1, 63, 64, 65, 1000, 4097].map(ints).into();
        cases.push(joined);
        cases.push(ints(3000).skip(71));
        for xs in cases {
            let want: Vec<Value> = (0..xs.len()).filter_map(|i| xs.get(i).cloned()).collect();
            let mut cursor = VecCursor::new(Coll::new(xs));
            let got: Vec<Value> = cursor.by_ref().collect();
            assert_eq!(got, want);
            assert_eq!(cursor.next(), None, "the cursor stays at its end");
        }
    }
}
