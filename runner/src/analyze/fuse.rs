//! Calls fused where the source writes them together: `(first (str/split s sep))`, the usual way
//! to take a name's first word, built every piece of `s` (two allocations each) and a vector,
//! then kept one.
//!
//! The fused form keeps both calls, each at its position: the outer call becomes
//! [`FOLDED`] (one step, answers its argument), the inner one [`SPLIT_HEAD`], `split` keeping
//! only its first piece (`regex::split_head`). Invariants:
//! - **Same answers.** `split`'s first piece or nil, a new text as `split`'s pieces are.
//! - **Same steps, same places.** Two calls, charged in the order they were (outer, then inner
//!   before its arguments), with the same nesting.
//! - **Same errors.** `first` of a vector never fails; `SPLIT_HEAD` runs `split`'s own checks,
//!   under `split`'s name, at the inner call's position. Only the two-argument form is fused.
//! - **Only the builtins.** A `first` or `split` the program bound to something else is not a
//!   builtin in call position and is left alone.

use super::expr::Expr;
use crate::builtins::{self, BuiltinDef, Fast, Lookup, regex};

/// `str/split` that answers its first piece (the fused inner call). Its errors are `split`'s,
/// under its name.
pub static SPLIT_HEAD: BuiltinDef = crate::def!(
    "split",
    2,
    2,
    "The first piece of a split.",
    "",
    |_, a| regex::split_head(a),
    Fast::Two(regex::split_head_fast)
);

/// The fused outer call: one step, then its argument (the inner call's answer). Never fails, so
/// the name in its table entry is never shown.
pub static FOLDED: BuiltinDef = crate::def!(
    "folded-call",
    1,
    1,
    "One step, then its argument.",
    "",
    |_, mut a| Ok(a.pop().unwrap_or_default()),
    Fast::One(|x| Some(Ok(x.clone())))
);

/// The hook where calls are analysed: fuses `(first (str/split s sep))`, and marks
/// `(reduce g init (keep f xs))` and `(into to (map f xs))` for one pass (`eval::fused`).
pub(crate) fn fuse_call(f: &mut Expr, args: &mut [Expr]) {
    if let Some(fused) = one_pass(f, args) {
        *f = Expr::Builtin(fused);
        return;
    }
    let (Expr::Builtin(outer), [Expr::Call(inner)]) = (&*f, &mut *args) else {
        return;
    };
    let Expr::Builtin(split) = &inner.f else {
        return;
    };
    // Names first (a string compare), the registry only for the rare call that has them.
    if inner.args.len() == 2
        && outer.name == "first"
        && split.name == "split"
        && is(outer, None, "first")
        && is(split, Some("str"), "split")
    {
        inner.f = Expr::Builtin(&SPLIT_HEAD);
        *f = Expr::Builtin(&FOLDED);
    }
}

/// The fused builtin that runs `(reduce g init (keep f xs))` or `(into to (map f xs))` in one
/// pass (`eval::fused`), for a call of one of them.
fn one_pass(f: &Expr, args: &[Expr]) -> Option<&'static BuiltinDef> {
    let (Expr::Builtin(outer), Some((Expr::Call(inner), rest))) = (f, args.split_last()) else {
        return None;
    };
    let Expr::Builtin(g) = &inner.f else {
        return None;
    };
    let fused = match (outer.name, rest.len(), g.name, inner.args.len()) {
        ("reduce", 2, "keep", 2) => &crate::eval::fused::KEEP_REDUCE,
        ("into", 1, "map", 2) => &crate::eval::fused::INTO_MAP,
        _ => return None,
    };
    // Names first (a string compare), the registry only for the rare call that has them.
    (is(outer, None, outer.name) && is(g, None, g.name)).then_some(fused)
}

/// Whether `b` is the builtin `ns/name`.
fn is(b: &BuiltinDef, ns: Option<&str>, name: &str) -> bool {
    matches!(builtins::lookup(ns, name), Lookup::Found(d) if std::ptr::eq(d, b))
}
