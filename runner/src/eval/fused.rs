//! Two calls the pipelines nest, in one pass. `(reduce g init (keep f xs))`, how LLMs join and
//! sum (`(->> orders (keep (fn [o] ... {:customer (:name c) :total (:total o)})) (reduce (fn
//! [acc r] (update acc (:customer r) (fnil + 0) (:total r))) {}))`), built a record for every
//! kept element and a list of them, then called `g` on each to read two fields back; `(into {}
//! (map (fn [c] [(:id c) c]) cs))`, how they index, built a pair and a list of them for `into`
//! to take apart. When `f` has register code (`code`) (and `g` is a quick reducer, `reducer`),
//! each element goes through `f`'s code straight into the accumulator: a record or a pair
//! literal `f` answers with is never built; its values are read where the code holds them
//! (`code::Take`).
//!
//! The analyzer marks the call (`analyze::fuse`: [`KEEP_REDUCE`] or [`INTO_MAP`] in the outer
//! builtin's place); the node evaluates what the two calls would, in their order, with their
//! steps and positions, then tries the pass. Invariants:
//! - **Same answers.** The pass takes only the answers the shortcuts give on their own:
//!   `Code::run_fields` under `Code::run`'s rules, `Reducer::reduce` under `quick_reduce`'s,
//!   and `conj`'s own insert of a pair's two values (or `conj` itself). A record's fields read
//!   from its unbuilt values are the record's reads.
//! - **All or nothing.** The fns are pure, and the pass works on a copy of the accumulator it
//!   is given (the first change copies it), so a pass that stops (an element a shortcut
//!   declines, a kept element past `max_iterations`, steps past the budget, the deadline)
//!   leaves nothing behind: the two builtins then run as written, from the start, and meet the
//!   error or the limit themselves, where they would have.
//! - **Same steps.** A finished pass charges at once what the two builtins would have (`keep`:
//!   one before the walk and one per element; `reduce`: one per kept element; `map`: one per
//!   element, one at least; `into`: one per element) and the fns' own. It stops short of the
//!   budget rather than charge past it, and checks the deadline as often as the walk would
//!   (every 1024 steps).
//! - **Memory is the pass's own.** No list between the two is built: a run may fit its heap
//!   fused that would not have fitted unfused (a limit not reached, never one reached that was
//!   not).

use super::code::{Fields, Take, pair_value};
use super::reducer::{Elem, Reducer};
use super::{Env, Interp, Lambda};
use crate::analyze::{Call, Expr};
use crate::builtins::{self, BuiltinDef, coll};
use crate::error::EvalResult;
use crate::pvec::PVec;
use crate::value::{MapImpl, Value};
use std::rc::Rc;

/// Steps between two deadline checks, as `Interp::tick` spaces them.
const DEADLINE_EVERY: u64 = 1024;

impl Interp<'_> {
    /// A fused call `c` of `b` ([`KEEP_REDUCE`] or [`INTO_MAP`]), its own step already charged
    /// (`builtin_node`): evaluates the outer call's other arguments, then the inner call as
    /// `builtin_node` would (its step, its two arguments under its position), tries the pass,
    /// and else calls the inner builtin and then the outer one with those values. Out of line:
    /// inlined, it made the node dispatcher it is called from slower for every other call.
    #[inline(never)]
    pub(super) fn fused_call(
        &mut self,
        b: &'static BuiltinDef,
        c: &Call,
        env: &Env<'_>,
    ) -> EvalResult {
        let (inner, outer, inner_b) = match c.args.split_last() {
            Some((Expr::Call(inner), outer)) => match (&inner.f, inner.args.len()) {
                (Expr::Builtin(inner_b), 2) => (inner, outer, *inner_b),
                _ => return self.call_general(b, &c.args, env),
            },
            _ => return self.call_general(b, &c.args, env),
        };
        // `eval_all`, not an operand each: four more inlined operand reads here made the
        // node dispatcher slower for every other program.
        let mut args = self.eval_all(outer, env)?;
        self.tick()?;
        let inner_args = self
            .eval_all(&inner.args, env)
            .map_err(|e| e.at(inner.pos))?;
        let passed = match (args.as_slice(), inner_args.as_slice()) {
            ([g, init], [f, xs]) if std::ptr::eq(b, &KEEP_REDUCE) => {
                self.keep_reduce_pass(g, init, f, xs)
            }
            ([to], [f, xs]) if std::ptr::eq(b, &INTO_MAP) => self.conj_pass(to, f, xs),
            _ => None,
        };
        if let Some((acc, steps)) = passed {
            #[cfg(test)]
            tests::PASSES.with(|n| n.set(n.get() + 1));
            // Within the budget (the pass checked); where the count lands on a deadline
            // check, `tick`'s check is the one the walk would have made.
            self.tick_n(steps)?;
            return Ok(acc);
        }
        let inner_v = builtins::call(self, inner_b, inner_args).map_err(|e| e.at(inner.pos))?;
        args.push(inner_v);
        builtins::call(self, b, args)
    }

    /// A call whose arguments are not the fused shape (the analyzer marks only that one).
    fn call_general(&mut self, b: &'static BuiltinDef, args: &[Expr], env: &Env<'_>) -> EvalResult {
        let args = self.eval_all(args, env)?;
        builtins::call(self, b, args)
    }

    /// `(reduce g init (keep f xs))`'s pass, where `f` has code, `g` a quick reducer and `xs` is
    /// a vector or a list: the accumulator and the steps to charge; `None` for the two calls.
    fn keep_reduce_pass(
        &self,
        g: &Value,
        init: &Value,
        f: &Value,
        xs: &Value,
    ) -> Option<(Value, u64)> {
        let (Value::Fn(fl), Value::Fn(gl)) = (f, g) else {
            return None;
        };
        let (Value::Vector(xs) | Value::List(xs)) = xs else {
            return None;
        };
        self.pass(fl, gl, init, xs)
    }

    /// The pass itself (see the module header): the accumulator and the steps to charge.
    fn pass(&self, fl: &Lambda, gl: &Lambda, init: &Value, xs: &PVec) -> Option<(Value, u64)> {
        let code = fl.template.code.as_ref()?;
        let r = gl.template.reducer.as_ref()?;
        // `f`'s code runs at this depth, `g`'s folded `fnil` deeper (`Interp::code_answer`,
        // `quick_reduce`).
        if self.depth.saturating_add(r.depth()) >= self.limits.max_depth {
            return None;
        }
        let mut meter = Meter::new(self)?;
        let per_kept = 1 + r.steps();
        let (mut acc, mut steps, mut kept) = (init.clone(), 1u64, 0u64);
        for x in looking_ahead(xs) {
            let mut s = 0;
            let took = code.run_fields(&fl.captures, x, &mut s, Kept { r, acc: &mut acc })?;
            steps = steps.saturating_add(s + 1);
            if took {
                if kept >= self.limits.max_iterations {
                    return None;
                }
                kept += 1;
                steps = steps.saturating_add(per_kept);
            }
            meter.within(self, steps)?;
        }
        Some((acc, steps))
    }
}

impl Interp<'_> {
    /// `(into to (map f xs))`'s pass, where `f` has code and `xs` is a vector or a list: each
    /// answer conj'd into `to` (see [`Conj`]); the collection and the steps `map` (one per
    /// element, one at least) and `into` (one per element) and `f` would have charged.
    fn conj_pass(&self, to: &Value, f: &Value, xs: &Value) -> Option<(Value, u64)> {
        let (Value::Fn(fl), Value::Vector(xs) | Value::List(xs)) = (f, xs) else {
            return None;
        };
        let code = fl.template.code.as_ref()?;
        if self.depth >= self.limits.max_depth {
            return None;
        }
        let mut meter = Meter::new(self)?;
        let (mut acc, mut steps) = (to.clone(), (xs.len() as u64).max(1));
        for x in looking_ahead(xs) {
            let mut s = 0;
            code.run_fields(&fl.captures, x, &mut s, Conj { acc: &mut acc })?;
            steps = steps.saturating_add(s + 1);
            meter.within(self, steps)?;
        }
        Some((acc, steps))
    }
}

/// The step budget and the deadline as a pass meets them: it stops short of the one and checks
/// the other as often as the walk would.
struct Meter {
    budget: u64,
    check_at: u64,
}

impl Meter {
    /// The budget left to `i`'s run (`None`: none).
    fn new(i: &Interp<'_>) -> Option<Meter> {
        Some(Meter {
            budget: i.limits.max_steps.checked_sub(i.steps)?,
            check_at: DEADLINE_EVERY,
        })
    }

    /// `None` once the pass's `steps` pass the budget, or the deadline has passed at one of its
    /// checks.
    #[inline(always)]
    fn within(&mut self, i: &Interp<'_>, steps: u64) -> Option<()> {
        if steps > self.budget {
            return None;
        }
        if steps >= self.check_at {
            i.check_deadline().ok()?;
            self.check_at = steps.saturating_add(DEADLINE_EVERY);
        }
        Some(())
    }
}

/// The elements of `xs`, each handed out after a [`touch`] of the one after it.
fn looking_ahead(xs: &PVec) -> impl Iterator<Item = &Value> {
    let mut next = xs.iter().skip(1);
    xs.iter().inspect(move |_| {
        if let Some(n) = next.next() {
            touch(n);
        }
    })
}

/// Reads where the next element's record keeps its kind and its shape, so that the miss on a
/// row not yet in cache overlaps this element's work instead of starting the next one.
#[inline(always)]
fn touch(x: &Value) {
    if let Value::Map(m) = x
        && let crate::value::MapImpl::Record(r) = &**m
    {
        std::hint::black_box(Rc::as_ptr(r.shape()));
    }
}

/// `f`'s answer for one element, into the accumulator by `g`'s shortcut: kept (`true`) or
/// not (nil); `None` where the shortcut declines (the accumulator is then of no further use:
/// the pass stops).
struct Kept<'r> {
    r: &'r Reducer,
    acc: &'r mut Value,
}

impl Kept<'_> {
    #[inline(always)]
    fn step<E: Elem + ?Sized>(self, x: &E) -> Option<bool> {
        *self.acc = self.r.reduce(std::mem::take(self.acc), x).ok()?;
        Some(true)
    }
}

impl Take for Kept<'_> {
    type Out = bool;

    #[inline(always)]
    fn value(self, v: Value) -> Option<bool> {
        match v {
            Value::Nil => Some(false),
            v => self.step(&v),
        }
    }

    #[inline(always)]
    fn fields(self, f: &Fields<'_>) -> Option<bool> {
        self.step(f)
    }

    fn pair(self, a: &Value, b: &Value) -> Option<bool> {
        self.step(&pair_value(a, b))
    }
}

/// `f`'s answer for one element, conj'd into `into`'s map: a pair `[k v]` left unbuilt is
/// inserted as `conj` inserts a pair's two values, anything else goes through `conj` itself;
/// `None` where that fails (the pass stops; the two calls meet the error).
struct Conj<'r> {
    acc: &'r mut Value,
}

impl Take for Conj<'_> {
    type Out = ();

    #[inline(always)]
    fn value(self, v: Value) -> Option<()> {
        *self.acc = coll::conj(std::mem::take(self.acc), v).ok()?;
        Some(())
    }

    fn fields(self, f: &Fields<'_>) -> Option<()> {
        self.value(f.to_value())
    }

    #[inline(always)]
    fn pair(self, k: &Value, v: &Value) -> Option<()> {
        match self.acc {
            // Not a sorted map: `conj`'s key check is a sorted map's.
            Value::Map(m) if !matches!(&**m, MapImpl::Sorted(_)) => {
                m.make_mut().insert(k.clone(), v.clone());
                Some(())
            }
            _ => self.value(pair_value(k, v)),
        }
    }
}

/// `reduce` in the fused call: `reduce`'s own entry (what the call falls back to), recognised
/// by its address where builtins are called with an argument vector
/// (`Interp::call_with_vector`).
pub static KEEP_REDUCE: BuiltinDef = crate::def!(
    "reduce",
    2,
    3,
    "reduce over keep, in one pass.",
    "",
    crate::builtins::hofseq::reduce,
    crate::builtins::Fast::None
);

/// `into` in the fused `(into to (map f xs))`: `into`'s own entry, recognised by its address.
pub static INTO_MAP: BuiltinDef = crate::def!(
    "into",
    0,
    3,
    "into over map, in one pass.",
    "",
    crate::builtins::coll::into,
    crate::builtins::Fast::None
);

#[cfg(test)]
mod tests {
    use crate::eval::testing::{NoTools, first_fn};
    use crate::eval::{Interp, Lambda};
    use crate::value::Value;
    use ptc_shared::Limits;

    thread_local! {
        /// Passes that answered on this thread (the side-by-side tests cannot tell a node that
        /// never takes its pass from one that does; this can).
        pub(super) static PASSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// Whether running `src` took a fused pass.
    fn passed(src: &str) -> bool {
        let before = PASSES.with(std::cell::Cell::get);
        let step = crate::run(src, crate::RunOptions::default()).expect("the program runs");
        assert!(step.fail.is_none(), "{src}: {:?}", step.fail);
        PASSES.with(std::cell::Cell::get) > before
    }

    #[test]
    fn the_nodes_take_their_pass_where_it_answers() {
        let rows = "[{:a 1 :b 2} {:a 2 :b 3} {:a 1 :b 4}]";
        let g = "(fn [acc r] (update acc (:k r) (fnil + 0) (:v r)))";
        assert!(passed(&format!(
            "(reduce {g} {{}} (keep (fn [m] {{:k (:a m) :v (:b m)}}) {rows}))"
        )));
        assert!(passed(&format!(
            "(into {{}} (map (fn [m] [(:a m) m]) {rows}))"
        )));
        // A pair into a reducer, a record into `into` (merged): both handed over unbuilt.
        let count = "(fn [acc r] (update acc r (fnil inc 0)))";
        assert!(passed(&format!(
            "(reduce {count} {{}} (keep (fn [m] [(:a m) 1]) {rows}))"
        )));
        assert!(passed(&format!(
            "(into {{}} (map (fn [m] {{:x (:a m) :y 1}}) {rows}))"
        )));
        // `f` without code, `g` without its shortcut, a pair `conj` refuses: the two calls.
        assert!(!passed(&format!(
            "(reduce {g} {{}} (keep (fn [m] (do nil {{:k 1 :v 1}})) {rows}))"
        )));
        assert!(!passed(&format!(
            "(reduce conj [] (keep (fn [m] (:a m)) {rows}))"
        )));
        assert!(!passed(&format!(
            "(try (into {{}} (map (fn [m] [(:a m)]) {rows})) (catch Exception e 0))"
        )));
    }

    fn edn(text: &str) -> Value {
        crate::edn::parse(text).map_or(Value::Nil, crate::convert::import)
    }

    fn lambda(src: &str) -> Lambda {
        Lambda {
            template: first_fn(src).expect("a fn"),
            captures: Vec::new(),
        }
    }

    /// The pass answers on its own, not only as the two calls' stand-in (the side-by-side tests
    /// in `tests/fused_calls.rs` cannot tell a pass that always stops from one that
    /// answers), with the steps the two calls charge: `keep`'s 1, then per row the fn's (one
    /// read, two more for a kept row) and its own; `reduce`'s per kept row, its own and the
    /// reducer's 4 (`update`, the two reads of the unbuilt record, the folded `fnil` call).
    #[test]
    fn the_pass_answers_its_usual_operands_and_stops_on_the_rest() {
        let f = lambda("(fn [o] (when (:k o) {:name (:k o) :total (:t o)}))");
        let g = lambda("(fn [acc r] (update acc (:name r) (fnil + 0) (:total r)))");
        let xs = |text: &str| match edn(text) {
            Value::Vector(v) => v,
            _ => unreachable!("a vector"),
        };
        let rows = xs("[{:k \"a\" :t 1} {:k nil :t 2} {:k \"b\" :t 3} {:k \"a\" :t 4}]");
        let mut host = NoTools;
        let i = Interp::new(&mut host, &[], Limits::default());
        let (acc, steps) = i.pass(&f, &g, &edn("{}"), &rows).expect("answered");
        assert_eq!(acc, edn("{\"a\" 5 \"b\" 3}"));
        assert_eq!(steps, 1 + 3 * (3 + 1) + (1 + 1) + 3 * (1 + 4));
        // A row the code declines (a field of a vector), an accumulator the reducer declines.
        assert!(
            i.pass(&f, &g, &edn("{}"), &xs("[{:k 1 :t 1} [1]]"))
                .is_none()
        );
        assert!(i.pass(&f, &g, &edn("[]"), &rows).is_none());
        // Limits: exactly the pass's steps answer, one step short does not; kept rows past
        // `max_iterations`.
        let mut host = NoTools;
        let exact = Limits {
            max_steps: steps,
            ..Limits::default()
        };
        let i = Interp::new(&mut host, &[], exact);
        assert!(i.pass(&f, &g, &edn("{}"), &rows).is_some());
        let mut host = NoTools;
        let limits = Limits {
            max_steps: steps - 1,
            ..Limits::default()
        };
        assert!(
            Interp::new(&mut host, &[], limits)
                .pass(&f, &g, &edn("{}"), &rows)
                .is_none()
        );
        let mut host = NoTools;
        let limits = Limits {
            max_iterations: 2,
            ..Limits::default()
        };
        assert!(
            Interp::new(&mut host, &[], limits)
                .pass(&f, &g, &edn("{}"), &rows)
                .is_none()
        );
    }

    /// `into`'s pass answers on its own too: pairs inserted unbuilt, maps merged and nil
    /// skipped as `conj` does, with `map`'s steps (one per row), `into`'s (one per row) and the
    /// fn's (the test's read, then two reads for a pair, one otherwise); it stops where `conj`
    /// would fail.
    #[test]
    fn the_conj_pass_answers_its_usual_operands_and_stops_on_the_rest() {
        let f = Value::Fn(std::rc::Rc::new(lambda(
            "(fn [o] (if (:k o) [(:k o) (:t o)] (:t o)))",
        )));
        let rows = edn("[{:k 1 :t 2} {:t {:z 0}} {:k 3 :t 4} {:t nil}]");
        let mut host = NoTools;
        let i = Interp::new(&mut host, &[], Limits::default());
        let (acc, steps) = i.conj_pass(&edn("{:a 1}"), &f, &rows).expect("answered");
        assert_eq!(acc, edn("{:a 1 1 2 :z 0 3 4}"));
        assert_eq!(steps, 4 + 4 + 2 * 3 + 2 * 2);
        assert_eq!(
            i.conj_pass(&edn("{}"), &f, &edn("[]")),
            Some((edn("{}"), 1))
        );
        // Exactly its steps answer; one short does not.
        for (budget, answers) in [(steps, true), (steps - 1, false)] {
            let mut host = NoTools;
            let limits = Limits {
                max_steps: budget,
                ..Limits::default()
            };
            let i = Interp::new(&mut host, &[], limits);
            assert_eq!(i.conj_pass(&edn("{}"), &f, &rows).is_some(), answers);
        }
        // A pair into a vector is `conj`'s to add; a number into a map is `conj`'s error.
        let (v, _) = i
            .conj_pass(&edn("[]"), &f, &edn("[{:k 1 :t 2}]"))
            .expect("answered");
        assert_eq!(v, edn("[[1 2]]"));
        assert!(i.conj_pass(&edn("{}"), &f, &edn("[{:t 5}]")).is_none());
    }
}
