//! Quick fns: the fns LLM pipelines hand to `filter`, `remove`, `map`, `sort-by`, `group-by`
//! (`#(= "paid" (:status %))`, `#(> (:total %) n)`, `#(:id %)`) are answered by the builtin's
//! loop without entering them: no frame, no body walk. The answer is taken only when it is the
//! general path's, with no error possible: the inline prim answered (`Prim::apply` gave a
//! value), the call would not have passed `max_depth`, and the steps the body would charge
//! (one per call node: the keyword read, and the prim around it) neither exhaust the budget nor
//! reach a deadline check. Otherwise the fn is entered as usual, so errors and limits are the
//! general path's own (`tests/quick_fns.rs` runs both paths side by side). A fn with no quick
//! form may have register code (`code.rs`), tried here under the same rules.

use super::Interp;
use super::prim::{Fixed, Prim};
use crate::analyze::{Expr, FnTemplate};
use crate::error::EvalResult;
use crate::value::{KeyHint, Value};
use std::rc::Rc;

/// A one-parameter fn whose body is a keyword read of its parameter, alone or compared by a
/// prim with a constant or a captured value; made by the analyzer (see [`Quick::of`]). The
/// field is at a fixed place for both shapes: reading it takes no match on the shape.
#[derive(Debug)]
pub struct Quick {
    /// The keyword read, as a value (for `get` on what is not a map) and as its text.
    key: Value,
    name: crate::value::Text,
    hint: KeyHint,
    /// `None`: `(fn [m] (:k m))`, one step, the keyword call. Some: `(fn [m] (op (:k m) c))`
    /// or `(fn [m] (op c (:k m)))`, two steps, the prim and the call.
    test: Option<QuickTest>,
}

/// The prim of a [`Quick`] fn and the operand beside the field.
#[derive(Debug)]
pub struct QuickTest {
    op: Prim,
    other: Other,
    field_first: bool,
    /// The constant operand decoded at analysis, for the tests answered inline.
    fixed: Fixed,
}

impl QuickTest {
    fn new(op: Prim, other: Other, field_first: bool) -> QuickTest {
        let fixed = match &other {
            Other::Const(c) => Fixed::of(op, c),
            Other::Capture(_) => Fixed::No,
        };
        QuickTest {
            op,
            other,
            field_first,
            fixed,
        }
    }
}

/// The operand beside the field of a [`QuickTest`].
#[derive(Debug)]
pub enum Other {
    Const(Value),
    Capture(u32),
}

impl Quick {
    /// The quick form of a fn, if it has one: a single arity of one plain parameter whose body
    /// is one of the [`Quick`] shapes over that parameter.
    pub fn of(t: &FnTemplate) -> Option<Quick> {
        let a = t.plain_arity(1)?;
        let param = *a.raw.first()?;
        let field = |e: &Expr| match e {
            Expr::Call(c) => match (&c.f, c.args.as_slice()) {
                (Expr::Const(kv @ Value::Keyword(k)), [Expr::Local(s) | Expr::Move(s)])
                    if *s == param =>
                {
                    Some((kv.clone(), k.clone()))
                }
                _ => None,
            },
            _ => None,
        };
        let other = |e: &Expr| match e {
            Expr::Const(v) => Some(Other::Const(v.clone())),
            Expr::Capture(i) => Some(Other::Capture(*i)),
            _ => None,
        };
        let quick = |(key, name), test| Quick {
            key,
            name,
            hint: KeyHint::default(),
            test,
        };
        let test = |other, field_first, op| Some(QuickTest::new(op, other, field_first));
        match &a.body {
            Expr::Prim(p) => match (field(&p.x), other(&p.y)) {
                (Some(key), Some(o)) => Some(quick(key, test(o, true, p.op))),
                _ => Some(quick(field(&p.y)?, test(other(&p.x)?, false, p.op))),
            },
            body => Some(quick(field(body)?, None)),
        }
    }
}

impl Interp<'_> {
    /// The answer of lambda `l` for argument `x` when it is quick (see the module header), or
    /// `None`, with nothing changed, for the general call.
    #[inline]
    pub(crate) fn quick_call(&mut self, l: &super::Lambda, x: &Value) -> Option<Value> {
        match &l.template.quick {
            Some(q) => self.quick_answer(q, &l.captures, x),
            None => self.code_answer(l, x),
        }
    }

    /// The answer of lambda `l`'s register code for `x` (`code.rs`), with its steps charged,
    /// or `None`, with nothing changed, for the general call: no code, a call that would pass
    /// `max_depth`, an operand the code declines, or steps that would end the run or reach a
    /// deadline check.
    #[inline(always)]
    fn code_answer(&mut self, l: &super::Lambda, x: &Value) -> Option<Value> {
        let code = l.template.code.as_ref()?;
        if self.depth >= self.limits.max_depth {
            return None;
        }
        let mut steps = 0;
        let v = code.run(&l.captures, x, &mut steps)?;
        self.quick_steps(v, steps)
    }

    /// Calls lambda `l` with a borrowed argument: its quick answer, read in place, else a
    /// call with a copy. For the builtins' loops over a fn (keywords keep `apply1_ref`). The
    /// usual element (a record of the shape the fn's hint saw, a decoded constant) is answered
    /// here, inlined into the loop; anything else goes to the out-of-line `quick_answer`.
    #[inline(always)]
    pub fn apply1_fn(&mut self, l: &Rc<super::Lambda>, x: &Value) -> EvalResult {
        if let Some(q) = &l.template.quick {
            if let Some(v) = self.quick_seen(q, x) {
                return Ok(v);
            }
            if let Some(v) = self.quick_answer(q, &l.captures, x) {
                return Ok(v);
            }
        }
        if let Some(v) = self.code_answer(l, x) {
            return Ok(v);
        }
        self.enter1(l, crate::builtins::hofseq::share(x))
    }

    /// [`Interp::quick_answer`] for a record the hint knows and a test it can answer inline
    /// (or a plain field read); `None` for everything else, with nothing changed.
    #[inline(always)]
    fn quick_seen(&mut self, q: &Quick, x: &Value) -> Option<Value> {
        let Value::Map(m) = x else {
            return None;
        };
        let crate::value::MapImpl::Record(r) = &**m else {
            return None;
        };
        let field = r.get_seen(&q.name, &q.hint)?;
        if self.depth >= self.limits.max_depth {
            return None;
        }
        match &q.test {
            None => self.quick_steps(field.clone(), 1),
            Some(t) => {
                let b = t.fixed.answer(t.op, field, t.field_first)?;
                self.quick_steps(Value::Bool(b), 2)
            }
        }
    }

    #[inline(never)]
    fn quick_answer(&mut self, q: &Quick, captures: &[Value], x: &Value) -> Option<Value> {
        if self.depth >= self.limits.max_depth {
            return None;
        }
        let owned;
        let field = match x {
            Value::Map(m) => m
                .get_keyword_hinted(&q.name, &q.hint)
                .unwrap_or(&Value::Nil),
            _ => {
                owned = crate::builtins::coll::get(x, &q.key).unwrap_or_default();
                &owned
            }
        };
        let (v, steps) = match &q.test {
            None => (field.clone(), 1),
            Some(t) => {
                if let Some(b) = t.fixed.answer(t.op, field, t.field_first) {
                    return self.quick_steps(Value::Bool(b), 2);
                }
                let c = match &t.other {
                    Other::Const(c) => c,
                    Other::Capture(i) => captures.get(*i as usize)?,
                };
                let (a, b) = if t.field_first {
                    (field, c)
                } else {
                    (c, field)
                };
                match t.op.apply(a, b) {
                    Some(Ok(v)) => (v, 2),
                    _ => return None,
                }
            }
        };
        self.quick_steps(v, steps)
    }

    /// Answer `v` of a quick fn whose body charges `steps`, with them charged, unless one of
    /// them would end the run or check the deadline (pass `tick_limit`: the budget, or the
    /// end of the current 1024-step block).
    #[inline(always)]
    fn quick_steps(&mut self, v: Value, steps: u64) -> Option<Value> {
        let after = self.steps.checked_add(steps)?;
        if after > self.tick_limit {
            return None;
        }
        self.steps = after;
        Some(v)
    }
}

#[cfg(test)]
mod quick_tests {
    use crate::analyze::{Expr, analyze_program};

    /// Whether the first form of `src` is a fn (or a `let` whose body is one) with a quick form.
    fn quick(src: &str) -> bool {
        crate::eval::testing::first_fn(src).is_some_and(|t| t.quick.is_some())
    }

    #[test]
    fn the_quick_shapes_and_only_they_are_recognised() {
        for yes in [
            r#"#(= "paid" (:status %))"#,
            "#(> (:total %) 250)",
            "#(< 2.5 (:total %))",
            "#(:id %)",
            "(fn [o] (mod (:n o) 7))",
            "(let [n 3] (fn [o] (>= (:n o) n)))",
            "(let [n 3] (fn [o] (>= n (:n o))))",
        ] {
            assert!(quick(yes), "{yes}");
        }
        for no in [
            // The `(do nil ...)` the integration tests compare against must stay general.
            r#"(fn [m] (do nil (= "paid" (:status m))))"#,
            "(fn [m] (do nil (:id m)))",
            "(fn [a b] (> (:t a) b))",
            "(fn [m & r] (:id m))",
            "(fn [{:keys [id]}] (= id 1))",
            "(fn ([m] (:id m)) ([m n] n))",
            "(fn [m] (= (:a m) (:b m)))",
            "(fn [m] (:id m 0))",
            "(fn [m] (get m :id))",
            "(fn [m] (inc (:id m)))",
            "(fn [m] (= 1 (:id {:id m})))",
        ] {
            assert!(!quick(no), "{no}");
        }
    }

    /// The shape of the first prim node in the first form of `src` (a fn's body, or the
    /// `let` around one), after analysis and liveness.
    fn shape(src: &str) -> Option<crate::eval::prim::Shape> {
        let forms = crate::reader::read_all(src, 1 << 20, 256).ok()?;
        let fs = analyze_program(&forms, [], &[]).ok()?.forms;
        let mut e = fs.first()?;
        loop {
            e = match e {
                Expr::Let(l) => &l.body,
                Expr::Fn(t, _) => &t.arities.first()?.body,
                Expr::Prim(p) => return Some(p.shape),
                _ => return None,
            };
        }
    }

    #[test]
    fn prim_shapes_are_fixed_at_analysis_and_survive_moves() {
        use crate::eval::prim::Shape::*;
        for (src, want) in [
            ("(fn [m] (> (:t m) 1))", FieldConst),
            ("(let [m {:t 1}] (fn [] (> (:t m) 1)))", FieldConst),
            ("(let [n 2] (fn [m] (= n (:t m))))", General),
            (r#"(fn [m] (= "a" (:t m)))"#, ConstField),
            ("(fn [m] (* (:a m) (:b m)))", Fields),
            ("(fn [m] (+ 1 (inc m)))", ConstAny),
            ("(fn [i] (* i 3))", SlotConst),
            ("(fn [i] (let [j i] (mod j 7)))", SlotConst),
            ("(fn [i j] (< i j))", General),
            ("(fn [m] (< (:a m) (:b {:b 1})))", General),
        ] {
            assert_eq!(shape(src), Some(want), "{src}");
        }
    }
}
