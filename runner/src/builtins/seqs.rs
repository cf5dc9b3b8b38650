//! Sequence shaping: `partition partition-all partition-by interleave interpose flatten dedupe
//! split-at split-with take-last drop-last butlast nthnext nthrest ffirst ... tree-seq` and the
//! generators `iterate repeat cycle`.
//!
//! Each lazy-capable function builds an `eval::lazy::Gen`: lazy over a lazy source, drained at
//! once over finite data. `tree-seq` may walk an infinite tree from finite data, so it realizes
//! a bounded prefix and stays lazy only when the walk goes on (see `list_if_short`).

use super::coll::{nth_opt, rest_of};
use super::xform::{XStep, xform};
use super::{BuiltinDef, expected};
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::eval::lazy::{Gen, LazySeq, Partition, lazy_or_list, list_if_short};
use crate::eval::seq::SeqIter;
use crate::value::{Coll, Value};
use std::collections::VecDeque;
use std::rc::Rc;

/// `tree-seq` realizes this many nodes before deciding the tree may be infinite.
const TREE_EAGER: usize = 10_000;
/// `(repeat n x)` with a larger n is lazy.
const REPEAT_EAGER: i64 = 100_000;

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "partition",
        2,
        4,
        "Lists of n items every step items; a final short one only with a pad.",
        "(partition 2 [1 2 3]) ;=> ((1 2))",
        |i, a| partition(i, a, false)
    ),
    def!(
        "partition-all",
        1,
        3,
        "Lists of up to n items every step items, including short ones at the end.",
        "(partition-all 2 [1 2 3]) ;=> ((1 2) (3))",
        |i, a| partition(i, a, true)
    ),
    def!(
        "partition-by",
        1,
        2,
        "Splits into runs of items with the same (f x).",
        "(partition-by odd? [1 3 2]) ;=> ((1 3) (2))",
        partition_by
    ),
    def!(
        "interleave",
        0,
        _,
        "First items of each collection, then second items, ... until one runs out.",
        "(interleave [1 2] [:a :b]) ;=> (1 :a 2 :b)",
        interleave
    ),
    def!(
        "interpose",
        1,
        2,
        "The items with sep between them.",
        "(interpose \",\" [\"a\" \"b\"]) ;=> (\"a\" \",\" \"b\")",
        interpose
    ),
    def!(
        "flatten",
        1,
        1,
        "The non-sequential items of nested sequential collections, in order.",
        "(flatten [1 [2 [3]]]) ;=> (1 2 3)",
        flatten
    ),
    def!(
        "dedupe",
        0,
        1,
        "Items with consecutive duplicates removed.",
        "(dedupe [1 1 2 1]) ;=> (1 2 1)",
        dedupe
    ),
    def!(
        "split-at",
        2,
        2,
        "[(take n coll) (drop n coll)].",
        "(split-at 1 [1 2 3]) ;=> [(1) (2 3)]",
        |i, a| {
            let taken = super::call_named(i, "take", a.clone())?;
            let dropped = super::call_named(i, "drop", a)?;
            Ok(Value::vector([taken, dropped]))
        }
    ),
    def!(
        "split-with",
        2,
        2,
        "[(take-while pred coll) (drop-while pred coll)].",
        "(split-with odd? [1 2 3]) ;=> [(1) (2 3)]",
        |i, a| {
            let taken = super::call_named(i, "take-while", a.clone())?;
            let dropped = super::call_named(i, "drop-while", a)?;
            Ok(Value::vector([taken, dropped]))
        }
    ),
    def!(
        "take-last",
        2,
        2,
        "The last n items, or nil.",
        "(take-last 2 [1 2 3]) ;=> (2 3)",
        |i, a| {
            let n = super::math::int_arg(&a[0], "take-last")?;
            let xs = i.seq_vec(&a[1])?;
            let n = usize::try_from(n).unwrap_or(0).min(xs.len());
            Ok(seq_or_nil(xs.into_iter().skip_last_from(n)))
        }
    ),
    def!(
        "drop-last",
        1,
        2,
        "All but the last n (default 1) items.",
        "(drop-last [1 2 3]) ;=> (1 2)",
        drop_last
    ),
    def!(
        "butlast",
        1,
        1,
        "All but the last item, or nil.",
        "(butlast [1 2 3]) ;=> (1 2)",
        |i, a| {
            let mut xs = i.seq_vec(&a[0])?;
            xs.pop();
            Ok(seq_or_nil(xs))
        }
    ),
    def!(
        "nthnext",
        2,
        2,
        "The seq after the first n items, or nil.",
        "(nthnext [1 2 3] 2) ;=> (3)",
        |i, a| nth_rest(i, a, true)
    ),
    def!(
        "nthrest",
        2,
        2,
        "The items after the first n (coll itself when n <= 0).",
        "(nthrest [1 2 3] 2) ;=> (3)",
        |i, a| nth_rest(i, a, false)
    ),
    def!(
        "ffirst",
        1,
        1,
        "(first (first coll)).",
        "(ffirst [[1 2]]) ;=> 1",
        |i, a| {
            let f = nth_opt(i, &a[0], 0)?;
            nth_opt(i, &f, 0)
        }
    ),
    def!(
        "fnext",
        1,
        1,
        "(first (next coll)).",
        "(fnext [1 2]) ;=> 2",
        |i, a| nth_opt(i, &a[0], 1)
    ),
    def!(
        "nfirst",
        1,
        1,
        "(next (first coll)).",
        "(nfirst [[1 2]]) ;=> (2)",
        |i, a| {
            let f = nth_opt(i, &a[0], 0)?;
            rest_of(i, &f)
        }
    ),
    def!(
        "nnext",
        1,
        1,
        "(next (next coll)).",
        "(nnext [1 2 3]) ;=> (3)",
        |i, a| {
            let r = rest_of(i, &a[0])?;
            rest_of(i, &r)
        }
    ),
    def!(
        "tree-seq",
        3,
        3,
        "Depth-first walk: nodes, descending into (children n) where (branch? n).",
        "(tree-seq vector? seq [1 [2]]) ;=> ([1 [2]] 1 [2] 2)",
        |i, mut a| {
            let root = a.pop().unwrap_or_default();
            let children = a.pop().unwrap_or_default();
            let branch = a.pop().unwrap_or_default();
            let g = Gen::Tree {
                branch,
                children,
                root: Some(root),
                stack: Vec::new(),
            };
            list_if_short(g, TREE_EAGER, i)
        }
    ),
    def!(
        "iterate",
        2,
        2,
        "The infinite lazy seq x, (f x), (f (f x)), ...",
        "(take 3 (iterate inc 0)) ;=> (0 1 2)",
        |_, mut a| {
            let next = a.pop().unwrap_or_default();
            let f = a.pop().unwrap_or_default();
            Ok(LazySeq::value(Gen::Iterate { f, next }))
        }
    ),
    def!(
        "repeat",
        1,
        2,
        "x forever (lazy), or n times.",
        "(repeat 2 :x) ;=> (:x :x)",
        repeat
    ),
    def!(
        "repeatedly",
        1,
        2,
        "Calls f (no arguments) forever (lazy), or n times.",
        "(repeatedly 2 (constantly 1)) ;=> (1 1)",
        |i, mut a| {
            let f = a.pop().unwrap_or_default();
            let Some(n) = a.pop() else {
                return Ok(LazySeq::value(Gen::Repeatedly { f, left: None }));
            };
            let n = super::math::int_arg(&n, "repeatedly")?.max(0);
            let g = Gen::Repeatedly {
                f,
                left: Some(n.unsigned_abs()),
            };
            lazy_or_list(g, n > REPEAT_EAGER, i)
        }
    ),
    def!(
        "cycle",
        1,
        1,
        "The items repeated forever (lazy); empty for an empty coll.",
        "(take 3 (cycle [1 2])) ;=> (1 2 1)",
        |i, a| {
            let items = i.seq_vec(&a[0])?;
            if items.is_empty() {
                return Ok(Value::list([]));
            }
            Ok(LazySeq::value(Gen::Cycle {
                items: Rc::new(items),
                i: 0,
            }))
        }
    ),
    def!(
        "take-nth",
        1,
        2,
        "Every nth item, starting with the first.",
        "(take-nth 2 [1 2 3]) ;=> (1 3)",
        take_nth
    ),
    def!(
        "peek",
        1,
        1,
        "The last item of a vector, the first of a list; nil when empty.",
        "(peek [1 2]) ;=> 2",
        |_, a| match &a[0] {
            Value::Nil => Ok(Value::Nil),
            Value::Vector(xs) => Ok(xs.last().cloned().unwrap_or_default()),
            Value::List(xs) => Ok(xs.front().cloned().unwrap_or_default()),
            other => Err(expected("peek", "a vector or list", other)),
        }
    ),
    def!(
        "pop",
        1,
        1,
        "A vector without its last item, a list without its first.",
        "(pop [1 2]) ;=> [1]",
        pop
    ),
    def!(
        "subvec",
        2,
        3,
        "The items of a vector from start (inclusive) to end (exclusive).",
        "(subvec [1 2 3] 1) ;=> [2 3]",
        subvec
    ),
    def!(
        "rseq",
        1,
        1,
        "The items of a vector (or sorted coll) in reverse, or nil when empty.",
        "(rseq [1 2]) ;=> (2 1)",
        |i, a| match &a[0] {
            v @ (Value::Vector(_) | Value::Map(_) | Value::Set(_)) => {
                let sorted = match v {
                    Value::Map(m) => matches!(**m, crate::value::MapImpl::Sorted(_)),
                    Value::Set(s) => matches!(**s, crate::value::SetImpl::Sorted(_)),
                    _ => true,
                };
                if !sorted {
                    return Err(expected("rseq", "a vector or sorted collection", v));
                }
                let mut xs = i.seq_vec(v)?;
                xs.reverse();
                Ok(seq_or_nil(xs))
            }
            other => Err(expected("rseq", "a vector or sorted collection", other)),
        }
    ),
    def!(
        "list*",
        1,
        _,
        "A seq of the arguments followed by the items of the last one.",
        "(list* 1 [2 3]) ;=> (1 2 3)",
        |i, mut a| {
            let last = a.pop().unwrap_or_default();
            let rest = i.seq_vec(&last)?;
            a.extend(rest);
            Ok(seq_or_nil(a))
        }
    ),
    def!(
        "empty",
        1,
        1,
        "An empty collection of the same kind, or nil.",
        "(empty [1 2]) ;=> []",
        |_, a| Ok(match &a[0] {
            Value::Vector(_) => Value::vector([]),
            Value::List(_) | Value::Lazy(_) => Value::list([]),
            Value::Map(m) => Value::map(m.empty_like()),
            Value::Set(s) => super::coll::set_like(s, []),
            _ => Value::Nil,
        })
    ),
    def!(
        "not-empty",
        1,
        1,
        "coll if it has items, else nil.",
        "(not-empty []) ;=> nil",
        |i, mut a| {
            let empty = super::call_named(i, "empty?", vec![a[0].clone()])?;
            Ok(if empty.truthy() {
                Value::Nil
            } else {
                a.remove(0)
            })
        }
    ),
    def!(
        "doall",
        1,
        1,
        "Realizes a lazy seq (an infinite one hits the limits) and returns it.",
        "(doall (map inc [1])) ;=> (2)",
        |i, mut a| i.realize_deep(a.remove(0))
    ),
    def!(
        "dorun",
        1,
        1,
        "Realizes a lazy seq for its effects; nil.",
        "(dorun (map inc [1])) ;=> nil",
        |i, a| {
            i.seq_vec(&a[0])?;
            Ok(Value::Nil)
        }
    ),
];

trait SkipLast: Iterator + Sized {
    /// The last `n` items of an exact-size iterator.
    fn skip_last_from(self, n: usize) -> std::iter::Skip<Self>;
}

impl<I: ExactSizeIterator> SkipLast for I {
    fn skip_last_from(self, n: usize) -> std::iter::Skip<Self> {
        let len = self.len();
        self.skip(len - n.min(len))
    }
}

/// A list of the items, or nil when there are none (`next`-style results).
fn seq_or_nil(items: impl IntoIterator<Item = Value>) -> Value {
    let v: Vec<Value> = items.into_iter().collect();
    if v.is_empty() {
        Value::Nil
    } else {
        Value::list(v)
    }
}

fn usize_arg(v: &Value, op: &str) -> EvalResult<usize> {
    let n = super::math::int_arg(v, op)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

fn partition(i: &mut Interp<'_>, a: Vec<Value>, all: bool) -> EvalResult {
    let op = if all { "partition-all" } else { "partition" };
    let (n, step, pad, coll) = match a.as_slice() {
        [n] if all => {
            let n = usize_arg(n, op)?;
            return Ok(xform(vec![XStep::PartitionAll(n.max(1), Vec::new())]));
        }
        [n, coll] => (n, n, None, coll),
        [n, step, coll] => (n, step, None, coll),
        [n, step, pad, coll] if !all => (n, step, Some(pad), coll),
        _ => {
            return Err(EvalError::new(
                ErrorKind::ArityError,
                op,
                format!("wrong number of args ({}) passed to {op}", a.len()),
            ));
        }
    };
    let (n, step) = (usize_arg(n, op)?, usize_arg(step, op)?);
    if n == 0 || step == 0 {
        return Err(EvalError::arg(
            op,
            format!("{op} needs a positive size and step"),
        ));
    }
    let pad = match pad {
        Some(p) => Some(Rc::new(i.seq_vec(p)?)),
        None => None,
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = Gen::Partition(Partition {
        src,
        n,
        step,
        pad,
        all,
        window: VecDeque::new(),
        ended: false,
    });
    lazy_or_list(g, lazy, i)
}

fn partition_by(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let f = a[0].clone();
    let Some(coll) = a.get(1) else {
        return Ok(xform(vec![XStep::PartitionBy(f, None, Vec::new())]));
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = Gen::PartitionBy {
        f,
        src,
        pending: None,
    };
    lazy_or_list(g, lazy, i)
}

fn interleave(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    if a.is_empty() {
        return Ok(Value::list([]));
    }
    let srcs = a
        .iter()
        .map(|c| SeqIter::new(i, c))
        .collect::<EvalResult<Vec<_>>>()?;
    let lazy = srcs.iter().all(SeqIter::is_lazy);
    let g = Gen::Interleave {
        srcs,
        queue: VecDeque::new(),
    };
    lazy_or_list(g, lazy, i)
}

fn interpose(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let sep = a[0].clone();
    let Some(coll) = a.get(1) else {
        return Ok(xform(vec![XStep::Interpose(sep, false)]));
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    let g = Gen::Interpose {
        sep,
        src,
        queue: VecDeque::new(),
        started: false,
    };
    lazy_or_list(g, lazy, i)
}

fn flatten(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    if !crate::eval::lazy::is_sequential(&a[0]) {
        return Ok(Value::list([]));
    }
    let src = SeqIter::new(i, &a[0])?;
    let lazy = src.is_lazy();
    lazy_or_list(Gen::Flatten { stack: vec![src] }, lazy, i)
}

fn dedupe(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let Some(coll) = a.first() else {
        return Ok(xform(vec![XStep::Dedupe(None)]));
    };
    let src = SeqIter::new(i, coll)?;
    let lazy = src.is_lazy();
    lazy_or_list(Gen::Dedupe { src, prev: None }, lazy, i)
}

fn drop_last(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let (n, coll) = match a.as_slice() {
        [coll] => (1, coll),
        [n, coll] => (super::math::int_arg(n, "drop-last")?, coll),
        _ => return Ok(Value::list([])),
    };
    let mut xs = i.seq_vec(coll)?;
    xs.truncate(xs.len().saturating_sub(usize::try_from(n).unwrap_or(0)));
    Ok(Value::list(xs))
}

fn nth_rest(i: &mut Interp<'_>, a: Vec<Value>, next: bool) -> EvalResult {
    let n = super::math::int_arg(&a[1], if next { "nthnext" } else { "nthrest" })?;
    let coll = &a[0];
    if coll.is_nil() {
        return Ok(Value::Nil);
    }
    if n <= 0 {
        // nthrest returns the collection itself; nthnext its seq.
        return if next {
            super::call_named(i, "seq", vec![coll.clone()])
        } else {
            Ok(coll.clone())
        };
    }
    let r = super::call_named(i, "drop", vec![Value::Int(n), coll.clone()])?;
    if next {
        super::call_named(i, "seq", vec![r])
    } else {
        Ok(r)
    }
}

fn repeat(i: &mut Interp<'_>, mut a: Vec<Value>) -> EvalResult {
    let x = a.pop().unwrap_or_default();
    let Some(n) = a.pop() else {
        return Ok(LazySeq::value(Gen::Repeat { x, left: None }));
    };
    let n = super::math::int_arg(&n, "repeat")?.max(0);
    let g = Gen::Repeat {
        x,
        left: Some(n.unsigned_abs()),
    };
    lazy_or_list(g, n > REPEAT_EAGER, i)
}

fn take_nth(i: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let n = super::math::int_arg(&a[0], "take-nth")?;
    let Some(coll) = a.get(1) else {
        return Err(EvalError::arg(
            "take-nth",
            "take-nth without a collection (a transducer) is not supported",
        ));
    };
    let mut it = SeqIter::new(i, coll)?;
    // Clojure's step is `(drop n s)`, which for n <= 0 is `s` again: the first element forever.
    let Some(n) = usize::try_from(n).ok().filter(|&n| n > 0) else {
        return Ok(match it.next(i)? {
            Some(x) => LazySeq::value(Gen::Repeat { x, left: None }),
            None => Value::list(Vec::new()),
        });
    };
    if it.is_lazy() {
        return Ok(LazySeq::value(Gen::TakeNth {
            src: it,
            n,
            seen: 0,
        }));
    }
    let mut out = Vec::new();
    let mut k = 0usize;
    while let Some(x) = it.next(i)? {
        if k.is_multiple_of(n) {
            out.push(x);
        }
        k += 1;
    }
    Ok(Value::List(Coll::new(out.into_iter().collect())))
}

fn pop(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let empty = || EvalError::arg("pop", "can't pop an empty collection");
    match a.into_iter().next().unwrap_or_default() {
        Value::Nil => Ok(Value::Nil),
        Value::Vector(mut xs) => {
            xs.make_mut().pop_back().ok_or_else(empty)?;
            Ok(Value::Vector(xs))
        }
        Value::List(mut xs) => {
            xs.make_mut().pop_front().ok_or_else(empty)?;
            Ok(Value::List(xs))
        }
        other => Err(expected("pop", "a vector or list", &other)),
    }
}

fn subvec(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let Value::Vector(xs) = &a[0] else {
        return Err(expected("subvec", "a vector", &a[0]));
    };
    let start = super::math::int_arg(&a[1], "subvec")?;
    let end = match a.get(2) {
        Some(e) => super::math::int_arg(e, "subvec")?,
        None => i64::try_from(xs.len()).unwrap_or(i64::MAX),
    };
    let len = i64::try_from(xs.len()).unwrap_or(i64::MAX);
    if start < 0 || end > len || start > end {
        return Err(EvalError::new(
            ErrorKind::IndexOutOfBounds,
            "subvec",
            format!("subvec {start}..{end} out of bounds for vector of {len}"),
        ));
    }
    let (s, e) = (
        usize::try_from(start).unwrap_or(0),
        usize::try_from(end).unwrap_or(0),
    );
    Ok(Value::Vector(Coll::new(xs.slice(s..e))))
}
