//! Building a fn of constants once, at analysis: `(update acc k (fnil + 0) x)` in a `reduce`
//! step made and dropped a new `fnil` native on every step, though every one is the same fn.
//!
//! What is folded: a call of a builder whose result depends only on its arguments
//! (`hof::pure_builder`: `fnil`, `comp`, `juxt`, `partial`, ...), every argument a literal, a
//! builtin or such a call itself, written where a builtin only calls the fn it is given
//! ([`called_args`]: `map`'s fn, `update`'s fn, `sort-by`'s key fn and comparator, ...).
//!
//! Invariants:
//! - **No identity shows.** Fns compare by identity, so a folded fn, the same object on every
//!   evaluation, must never reach the program: it is folded only where it is called and never
//!   kept, handed out or returned, and a nested builder only where the outer fn calls it
//!   (`constantly`'s value and `partial`'s fixed arguments are handed to the program, so a
//!   builder there is not folded). Literals were shared between evaluations already.
//! - **Limits charge the same.** The folded node ([`Expr::Folded`]) charges one step per call
//!   folded, one at a time as the calls did (so the deadline is checked at the same step). A
//!   step can only fail with a limit, which has no position, so the calls' positions are not
//!   kept. A builder call does not enter
//!   the depth limit, and the node nests nothing, so it needs no more stack than a literal. The
//!   built fn is part of the compiled program, as a literal is. (Written as one step-charging
//!   builtin call per builder call, the node cost p3's reduce step about 100 instructions an
//!   evaluation: BENCHMARKS.md, session 32.)
//! - **Errors stay where they were.** A builder call that fails (an arity error) is left as it
//!   is, to fail when and if it runs.

use super::expr::{Expr, Folded};
use crate::builtins::hof::pure_builder;
use crate::value::Value;

/// The hook where calls are analysed: a call of builtin `f` folds the builder calls written
/// where `f` only calls them.
pub(crate) fn fold_call_args(f: &Expr, args: &mut [Expr]) {
    let Expr::Builtin(b) = f else { return };
    for k in called_args(b.name, args.len()) {
        if let Some(arg) = args.get_mut(k)
            && let Some((value, calls)) = build(arg)
        {
            *arg = Expr::Folded(Box::new(Folded { value, calls }));
        }
    }
}

/// The arguments that builtin `name`, called with `n` arguments, only ever calls.
fn called_args(name: &str, n: usize) -> std::ops::Range<usize> {
    match (name, n) {
        (
            "map" | "mapv" | "filter" | "filterv" | "remove" | "keep" | "reduce" | "group-by"
            | "some" | "every?" | "max-key" | "min-key",
            _,
        )
        | ("sort-by", 2)
        | ("sort", 2) => 0..1,
        ("sort-by", 3) => 0..2,
        ("update" | "update-in", 3..) => 2..3,
        _ => 0..0,
    }
}

/// The fn a foldable builder call makes, and how many builder calls it stands for (the outer
/// one and the nested ones). `None` if it is not foldable.
fn build(e: &Expr) -> Option<(Value, u32)> {
    let Expr::Call(c) = e else { return None };
    let Expr::Builtin(b) = c.f else { return None };
    let (make, called) = pure_builder(b)?;
    let arity = usize::from(b.min)..=usize::from(b.max.unwrap_or(u8::MAX));
    if !arity.contains(&c.args.len()) {
        return None;
    }
    let mut calls = 1u32;
    let mut values = Vec::with_capacity(c.args.len());
    for (k, a) in c.args.iter().enumerate() {
        values.push(match a {
            Expr::Const(v) => v.clone(),
            Expr::Builtin(b) => Value::Builtin(b),
            nested if called.includes(k) => {
                let (v, inner) = build(nested)?;
                calls = calls.saturating_add(inner);
                v
            }
            _ => return None,
        });
    }
    Some((make(values).ok()?, calls))
}
