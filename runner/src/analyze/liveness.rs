//! Last-use analysis: turns the final read of a local into a move.
//!
//! Persistent collections are updated in place only when unshared. In
//! `(reduce #(assoc %1 %2 %2) {} xs)` the accumulator sits in the fn's slot while `assoc` runs, so
//! a plain read would share it and every `assoc` would copy a path of the map. This pass walks
//! each frame's code backwards, tracking which slots may still be read, and marks a read as a
//! `Move` when no later read can happen on any path.
//!
//! Soundness rules (conservative where control flow repeats or jumps):
//! - `if`/`case`/`and`/`or`: a read is last only if it is last on every branch that follows.
//! - `loop` and fn bodies: at a `recur`, every slot the body reads that it does not bind itself is
//!   live (the next iteration reads it again), as is everything live after the loop.
//! - `try`: everything a catch or finally reads stays live through the whole body.
//! - `for`/`doseq` repeat their body: nothing they read is moved.
//! - nested fns are separate frames, analyzed when they are built; only their captures are
//!   reads of this frame.

use super::expr::*;
use std::collections::HashSet;

type Live = HashSet<u32>;

/// Marks moves in a fn arity's body: `raw` are its argument slots, `patterns` the
/// destructuring of some of them.
pub fn mark_moves_fn(body: &mut Expr, raw: &[u32], patterns: &[(Pattern, u32)]) {
    let mut bound: Live = raw.iter().copied().collect();
    for (p, _) in patterns {
        pattern_slots(p, &mut bound);
    }
    let recur_live = fn_recur_live(body, bound);
    let mut live = Live::new();
    visit(body, &mut live, Some(&recur_live));
}

/// Marks moves in a sequence of top-level forms sharing one frame.
pub fn mark_moves_seq(forms: &mut [Expr]) {
    let mut live = Live::new();
    for f in forms.iter_mut().rev() {
        visit(f, &mut live, None);
    }
}

/// The slots a fn arity must keep live at its `recur`: what the body reads but does not bind.
fn fn_recur_live(body: &Expr, mut bound: Live) -> Live {
    bound_in(body, &mut bound);
    let mut r = Live::new();
    reads(body, &mut r);
    r.retain(|s| !bound.contains(s));
    r
}

/// One expression, on a stack `stacker` grows (expressions nest up to `MAX_EXPANDED_DEPTH`).
fn visit(e: &mut Expr, live: &mut Live, recur_live: Option<&Live>) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || visit_inner(e, live, recur_live));
}

fn visit_inner(e: &mut Expr, live: &mut Live, recur_live: Option<&Live>) {
    match e {
        Expr::Local(s) => {
            if live.insert(*s) {
                *e = Expr::Move(*s);
            }
        }
        Expr::Move(s) => {
            live.insert(*s);
        }
        Expr::Vector(xs)
        | Expr::Set(xs)
        | Expr::Do(xs)
        | Expr::Tool(_, xs, _)
        | Expr::DynTool(xs, _)
        | Expr::Method(_, xs, _) => {
            visit_rev(xs, live, recur_live);
        }
        Expr::Map(pairs) | Expr::Record(pairs, _) => {
            for (k, v) in pairs.iter_mut().rev() {
                visit(v, live, recur_live);
                visit(k, live, recur_live);
            }
        }
        Expr::If(b) => {
            let (t, then, els) = &mut **b;
            branches(live, recur_live, [then, els].into_iter());
            visit(t, live, recur_live);
        }
        Expr::Let(l) => {
            visit(&mut l.body, live, recur_live);
            for (p, init) in l.bindings.iter_mut().rev() {
                visit_pattern(p, live, recur_live);
                visit(init, live, recur_live);
            }
        }
        Expr::Loop(l) => visit_loop(l, live, recur_live),
        Expr::Recur(args, _) => {
            *live = recur_live.cloned().unwrap_or_default();
            visit_rev(args, live, recur_live);
        }
        Expr::Fn(_, caps) => visit_rev(caps, live, recur_live),
        Expr::Call(c) => {
            visit_rev(&mut c.args, live, recur_live);
            visit(&mut c.f, live, recur_live);
        }
        Expr::Prim(p) => {
            visit(&mut p.y, live, recur_live);
            visit(&mut p.x, live, recur_live);
        }
        Expr::Def(_, v) | Expr::DefOnce(_, v) | Expr::Throw(v, _) => visit(v, live, recur_live),
        Expr::And(xs) | Expr::Or(xs) => visit_either(xs, live, recur_live),
        Expr::Case(c) => visit_case(c, live, recur_live),
        Expr::Try(t) => visit_try(t, live, recur_live),
        Expr::For(_) => {
            // The body repeats: keep everything it reads live, and mark nothing inside.
            let mut all = Live::new();
            reads(e, &mut all);
            live.extend(all);
        }
        Expr::Const(_)
        | Expr::Folded(_)
        | Expr::Capture(_)
        | Expr::SelfFn
        | Expr::Global(..)
        | Expr::Builtin(_)
        | Expr::Ctx(_)
        | Expr::Memory(_)
        | Expr::History(_) => {}
    }
}

/// `and`/`or`: each operand may be the last one evaluated, so what is live after the form is
/// live after each of them.
fn visit_either(xs: &mut [Expr], live: &mut Live, recur_live: Option<&Live>) {
    let after = live.clone();
    for x in xs.iter_mut().rev() {
        live.extend(after.iter().copied());
        visit(x, live, recur_live);
    }
}

/// `case`: its arms are branches, after the subject.
fn visit_case(c: &mut Case, live: &mut Live, recur_live: Option<&Live>) {
    let mut arms: Vec<&mut Expr> = c.clauses.iter_mut().map(|(_, b)| b).collect();
    if let Some(d) = c.default.as_mut() {
        arms.push(d);
    }
    branches(live, recur_live, arms.into_iter());
    visit(&mut c.subject, live, recur_live);
}

fn visit_rev(xs: &mut [Expr], live: &mut Live, recur_live: Option<&Live>) {
    for x in xs.iter_mut().rev() {
        visit(x, live, recur_live);
    }
}

/// Alternatives: each starts from the same live set; before them, the union is live.
fn branches<'e>(
    live: &mut Live,
    recur_live: Option<&Live>,
    arms: impl Iterator<Item = &'e mut Expr>,
) {
    let after = live.clone();
    let mut union = Live::new();
    for arm in arms {
        let mut l = after.clone();
        visit(arm, &mut l, recur_live);
        union.extend(l);
    }
    *live = union;
}

/// A pattern binds in order (`:as` first, then items or entries, then `& rest`), and a default
/// may read what was bound before it. Walking backwards: each binding kills its slot, then the
/// default evaluated just before it is visited.
fn visit_pattern(p: &mut Pattern, live: &mut Live, recur_live: Option<&Live>) {
    match p {
        Pattern::Bind(s) => {
            live.remove(s);
        }
        Pattern::Seq {
            items,
            rest,
            as_slot,
        } => {
            if let Some(r) = rest {
                visit_pattern(r, live, recur_live);
            }
            for item in items.iter_mut().rev() {
                visit_pattern(item, live, recur_live);
            }
            if let Some(s) = as_slot {
                live.remove(s);
            }
        }
        Pattern::Map { entries, as_slot } => {
            for e in entries.iter_mut().rev() {
                visit_pattern(&mut e.pattern, live, recur_live);
                if let Some(d) = e.default.as_mut() {
                    visit(d, live, recur_live);
                }
            }
            if let Some(s) = as_slot {
                live.remove(s);
            }
        }
    }
}

fn visit_loop(l: &mut Loop, live: &mut Live, recur_live_outer: Option<&Live>) {
    let mut bound: Live = l.slots.iter().copied().collect();
    for (p, _) in &l.patterns {
        pattern_slots(p, &mut bound);
    }
    bound_in(&l.body, &mut bound);
    let mut body_reads = Live::new();
    reads(&l.body, &mut body_reads);
    for (p, _) in &l.patterns {
        pattern_reads(p, &mut body_reads);
    }
    // At a recur: whatever the next iterations read from outside, and what follows the loop.
    let mut at_recur: Live = body_reads
        .into_iter()
        .filter(|s| !bound.contains(s))
        .collect();
    at_recur.extend(live.iter().copied());
    visit(&mut l.body, live, Some(&at_recur));
    for (p, _) in l.patterns.iter_mut().rev() {
        visit_pattern(p, live, Some(&at_recur));
    }
    live.extend(at_recur.iter().filter(|s| !bound.contains(s)).copied());
    // Bindings are sequential: each init may read the slots bound before it.
    for (slot, init) in l.slots.iter().zip(l.inits.iter_mut()).rev() {
        live.remove(slot);
        visit(init, live, recur_live_outer);
    }
}

fn visit_try(t: &mut Try, live: &mut Live, recur_live: Option<&Live>) {
    if let Some(f) = t.finally.as_mut() {
        visit(f, live, recur_live);
    }
    let after = live.clone();
    let mut handlers = after.clone();
    for c in t.catches.iter_mut() {
        let mut l = after.clone();
        visit(&mut c.handler, &mut l, recur_live);
        l.remove(&c.slot);
        handlers.extend(l);
    }
    // Any point of the body may jump to a handler, so what handlers read stays live throughout
    // (recur cannot cross a try, so nothing inside resets the live set).
    let mut body_live = handlers.clone();
    visit(&mut t.body, &mut body_live, recur_live);
    body_live.extend(handlers);
    *live = body_live;
}

/// Every slot read (by `Local`/`Move`) in this frame's code, not inside nested fn bodies.
fn reads(e: &Expr, out: &mut Live) {
    walk(e, &mut |x| {
        if let Expr::Local(s) | Expr::Move(s) = x {
            out.insert(*s);
        }
    });
}

/// Every slot written by a binding in this frame's code.
fn bound_in(e: &Expr, out: &mut Live) {
    walk(e, &mut |x| match x {
        Expr::Let(l) => l.bindings.iter().for_each(|(p, _)| pattern_slots(p, out)),
        Expr::Loop(l) => {
            out.extend(l.slots.iter().copied());
            l.patterns.iter().for_each(|(p, _)| pattern_slots(p, out));
        }
        Expr::Try(t) => out.extend(t.catches.iter().map(|c| c.slot)),
        Expr::For(f) => {
            for c in &f.clauses {
                match c {
                    ForClause::Bind(p, _) => pattern_slots(p, out),
                    ForClause::Let(bs) => bs.iter().for_each(|(p, _)| pattern_slots(p, out)),
                    _ => {}
                }
            }
        }
        _ => {}
    });
}

fn pattern_slots(p: &Pattern, out: &mut Live) {
    match p {
        Pattern::Bind(s) => {
            out.insert(*s);
        }
        Pattern::Seq {
            items,
            rest,
            as_slot,
        } => {
            items.iter().for_each(|i| pattern_slots(i, out));
            if let Some(r) = rest {
                pattern_slots(r, out);
            }
            out.extend(*as_slot);
        }
        Pattern::Map { entries, as_slot } => {
            entries.iter().for_each(|e| pattern_slots(&e.pattern, out));
            out.extend(*as_slot);
        }
    }
}

/// Slots read by a pattern's defaults.
fn pattern_reads(p: &Pattern, out: &mut Live) {
    walk_pattern(p, &mut |x| {
        if let Expr::Local(s) | Expr::Move(s) = x {
            out.insert(*s);
        }
    });
}

/// Calls `f` on `e` and every sub-expression of this frame (not nested fn bodies).
fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || walk_inner(e, f));
}

fn walk_inner(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match e {
        Expr::Vector(xs)
        | Expr::Set(xs)
        | Expr::Do(xs)
        | Expr::Tool(_, xs, _)
        | Expr::DynTool(xs, _)
        | Expr::Method(_, xs, _)
        | Expr::And(xs)
        | Expr::Or(xs)
        | Expr::Recur(xs, _)
        | Expr::Fn(_, xs) => {
            xs.iter().for_each(|x| walk(x, f));
        }
        Expr::Map(pairs) | Expr::Record(pairs, _) => pairs.iter().for_each(|(k, v)| {
            walk(k, f);
            walk(v, f);
        }),
        Expr::If(b) => {
            walk(&b.0, f);
            walk(&b.1, f);
            walk(&b.2, f);
        }
        Expr::Let(l) => {
            for (p, init) in &l.bindings {
                walk(init, f);
                walk_pattern(p, f);
            }
            walk(&l.body, f);
        }
        Expr::Loop(l) => {
            l.inits.iter().for_each(|x| walk(x, f));
            l.patterns.iter().for_each(|(p, _)| walk_pattern(p, f));
            walk(&l.body, f);
        }
        Expr::Call(c) => {
            walk(&c.f, f);
            c.args.iter().for_each(|x| walk(x, f));
        }
        Expr::Prim(p) => {
            walk(&p.x, f);
            walk(&p.y, f);
        }
        Expr::Def(_, v) | Expr::DefOnce(_, v) | Expr::Throw(v, _) => walk(v, f),
        Expr::Case(c) => {
            walk(&c.subject, f);
            c.clauses.iter().for_each(|(_, b)| walk(b, f));
            if let Some(d) = &c.default {
                walk(d, f);
            }
        }
        Expr::Try(t) => {
            walk(&t.body, f);
            t.catches.iter().for_each(|c| walk(&c.handler, f));
            if let Some(x) = &t.finally {
                walk(x, f);
            }
        }
        Expr::For(fr) => walk_for(fr, f),
        Expr::Const(_)
        | Expr::Folded(_)
        | Expr::Local(_)
        | Expr::Move(_)
        | Expr::Capture(_)
        | Expr::SelfFn
        | Expr::Global(..)
        | Expr::Builtin(_)
        | Expr::Ctx(_)
        | Expr::Memory(_)
        | Expr::History(_) => {}
    }
}

/// A `for`'s clauses in order (their collections, patterns and tests), then its body.
fn walk_for(fr: &For, f: &mut dyn FnMut(&Expr)) {
    for c in &fr.clauses {
        match c {
            ForClause::Bind(p, x) => {
                walk(x, f);
                walk_pattern(p, f);
            }
            ForClause::Let(bs) => bs.iter().for_each(|(p, x)| {
                walk(x, f);
                walk_pattern(p, f);
            }),
            ForClause::When(x) | ForClause::While(x) => walk(x, f),
        }
    }
    walk(&fr.body, f);
}

fn walk_pattern(p: &Pattern, f: &mut dyn FnMut(&Expr)) {
    match p {
        Pattern::Bind(_) => {}
        Pattern::Seq { items, rest, .. } => {
            items.iter().for_each(|i| walk_pattern(i, f));
            if let Some(r) = rest {
                walk_pattern(r, f);
            }
        }
        Pattern::Map { entries, .. } => {
            for e in entries {
                if let Some(d) = &e.default {
                    walk(d, f);
                }
                walk_pattern(&e.pattern, f);
            }
        }
    }
}
