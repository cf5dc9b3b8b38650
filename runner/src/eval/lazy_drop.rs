//! Dropping a lazy seq without recursion. A seq's generator holds its sources (`map` over
//! `map` over ..., `rest` of `rest`, `concat` of `concat`), so a chain of 100,000 links is one
//! `iterate` away, and the compiler's drop glue would recurse once per link: a stack overflow,
//! an abort in-process. Its buffer and everything its generator holds that may nest are moved to
//! `value::drop_nested`'s work list instead, as a collection's elements are.

use super::lazy::{Gen, LazySeq};
use super::seq::SeqIter;
use crate::value::{Value, drop_nested};
use std::rc::Rc;

impl Drop for LazySeq {
    fn drop(&mut self) {
        let state = self.state.get_mut();
        let generator = state.generator.take();
        let buf = std::mem::take(&mut state.buf);
        if generator.is_none() && buf.iter().all(Value::is_scalar) {
            return;
        }
        drop_nested((buf, generator), |(buf, generator), out| {
            out.extend(buf);
            if let Some(g) = generator {
                drain_gen(g, out);
            }
        });
    }
}

/// Moves what a cursor holds that may nest into `out`.
fn drain_iter(it: SeqIter, out: &mut Vec<Value>) {
    match it {
        SeqIter::Lazy(l, _) => out.push(Value::Lazy(l)),
        SeqIter::Items(items, _) => {
            if let Ok(items) = Rc::try_unwrap(items) {
                out.extend(items);
            }
        }
        // A vector's contents drop through their own collection's `Drop` (deferred there).
        SeqIter::Vec(_) => {}
    }
}

fn drain_iters(its: impl IntoIterator<Item = SeqIter>, out: &mut Vec<Value>) {
    for it in its {
        drain_iter(it, out);
    }
}

/// Moves every value and source a generator holds into `out`; what is left drops flat.
fn drain_gen(g: Gen, out: &mut Vec<Value>) {
    match g {
        Gen::Range { next, step, end } => out.extend([next, step].into_iter().chain(end)),
        Gen::Iterate { f, next } => out.extend([f, next]),
        Gen::Repeat { x, .. } => out.push(x),
        Gen::Cycle { items, .. } => {
            if let Ok(items) = Rc::try_unwrap(items) {
                out.extend(items);
            }
        }
        Gen::Repeatedly { f, .. } => out.push(f),
        Gen::Map { f, srcs, .. } | Gen::MapCat { f, srcs, cur: None } => {
            out.push(f);
            drain_iters(srcs, out);
        }
        Gen::MapCat {
            f,
            srcs,
            cur: Some(cur),
        } => {
            out.push(f);
            drain_iters(srcs.into_iter().chain([cur]), out);
        }
        Gen::Filter { pred: f, src, .. }
        | Gen::Keep { f, src, .. }
        | Gen::DropWhile { pred: f, src, .. } => {
            out.push(f);
            drain_iter(src, out);
        }
        Gen::Concat { srcs } => drain_iters(srcs, out),
        Gen::Drop { src, .. } => out.push(Value::Lazy(src)),
        Gen::Distinct { src, seen } => {
            out.extend(seen);
            drain_iter(src, out);
        }
        Gen::TakeNth { src, .. } => drain_iter(src, out),
        Gen::Dedupe { src, prev } => {
            out.extend(prev);
            drain_iter(src, out);
        }
        Gen::Partition(p) => {
            out.extend(p.window);
            drain_iter(p.src, out);
        }
        Gen::PartitionBy { f, src, pending } => {
            out.push(f);
            out.extend(pending.into_iter().flat_map(|(a, b)| [a, b]));
            drain_iter(src, out);
        }
        Gen::Interleave { srcs, queue } => {
            out.extend(queue);
            drain_iters(srcs, out);
        }
        Gen::Interpose {
            sep, src, queue, ..
        } => {
            out.push(sep);
            out.extend(queue);
            drain_iter(src, out);
        }
        Gen::Reductions { f, src, acc, .. } => {
            out.push(f);
            out.extend(acc);
            drain_iter(src, out);
        }
        Gen::Tree {
            branch,
            children,
            root,
            stack,
        } => {
            out.extend([branch, children].into_iter().chain(root));
            drain_iters(stack, out);
        }
        Gen::Flatten { stack } => drain_iters(stack, out),
        Gen::Xform { src, queue, .. } => {
            out.extend(queue);
            drain_iter(src, out);
        }
    }
}
