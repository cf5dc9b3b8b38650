//! The compiler of register code (see the parent module): walks a fn's analyzed body once and
//! emits ops, or answers `None` for any form it does not take, and the fn keeps the walker.

use super::{Code, MAX_REGS, Op, Src};
use crate::analyze::{Expr, FnTemplate, Pattern};
use crate::builtins::{self, BuiltinDef, Fast, Lookup};
use crate::eval::prim::{Fixed, Prim};
use crate::value::{KeyHint, Shape, Text, Value};
use std::rc::Rc;

impl Code {
    /// The code of a fn, if it has one: one arity of one plain parameter, and a body of the
    /// forms [`Compiler`] takes, fitting in [`MAX_REGS`] registers.
    pub fn of(t: &FnTemplate) -> Option<Code> {
        let a = t.plain_arity(1)?;
        let param = slot(*a.raw.first()?)?;
        let frame = usize::try_from(a.frame_size).ok()?.max(1);
        let mut c = Compiler {
            ops: Vec::new(),
            consts: Vec::new(),
            args: Vec::new(),
            keys: Vec::new(),
            shapes: Vec::new(),
            fixed: Vec::new(),
            next: frame,
        };
        let dst = c.temp()?;
        c.value(&a.body, dst)?;
        c.ops.push(Op::Return { src: dst });
        mark_tails(&mut c.ops);
        Some(Code {
            ops: c.ops.into(),
            consts: c.consts.into(),
            args: c.args.into(),
            keys: c.keys.into(),
            shapes: c.shapes.into(),
            fixed: c.fixed.into(),
            param,
            used: u8::try_from(c.next).ok()?,
            temps: u8::try_from(frame).ok()?,
        })
    }
}

/// Marks each record or vector op whose register the fn answers right after it: only jumps
/// lie between it and the `Return` of that register.
fn mark_tails(ops: &mut [Op]) {
    for i in 0..ops.len() {
        let dst = match ops.get(i) {
            Some(Op::Record { dst, .. } | Op::Vector { dst, .. }) => *dst,
            _ => continue,
        };
        let (mut pc, mut hops) = (i + 1, 0);
        let ends = loop {
            match ops.get(pc) {
                // A chain of jumps is at most as long as the ops (no loops are emitted).
                Some(Op::Jump { to }) if hops < ops.len() => {
                    (pc, hops) = (usize::from(*to), hops + 1)
                }
                Some(Op::Return { src }) => break *src == dst,
                _ => break false,
            }
        };
        if let Some(Op::Record { tail, .. } | Op::Vector { tail, .. }) = ops.get_mut(i) {
            *tail = ends;
        }
    }
}

/// Emits the ops of a body; each method answers `None` for a form it does not take.
struct Compiler {
    ops: Vec<Op>,
    consts: Vec<Value>,
    args: Vec<Src>,
    keys: Vec<(Text, KeyHint)>,
    shapes: Vec<Rc<Shape>>,
    fixed: Vec<(Fixed, bool, u16)>,
    /// The next free temporary register.
    next: usize,
}

impl Compiler {
    fn temp(&mut self) -> Option<u8> {
        let r = u8::try_from(self.next)
            .ok()
            .filter(|_| self.next < MAX_REGS)?;
        self.next += 1;
        Some(r)
    }

    fn here(&self) -> Option<u16> {
        u16::try_from(self.ops.len()).ok()
    }

    /// An operand: a leaf where it is, anything else computed into a temporary.
    fn src(&mut self, e: &Expr) -> Option<Src> {
        Some(match e {
            Expr::Const(v) => {
                let i = u16::try_from(self.consts.len()).ok()?;
                self.consts.push(v.clone());
                Src::Const(i)
            }
            Expr::Local(s) | Expr::Move(s) => Src::Reg(slot(*s)?),
            Expr::Capture(i) => Src::Capture(*i),
            e => {
                let t = self.temp()?;
                self.value(e, t)?;
                Src::Reg(t)
            }
        })
    }

    /// The ops that leave `e`'s value in register `dst`.
    fn value(&mut self, e: &Expr, dst: u8) -> Option<()> {
        let op = match e {
            Expr::Const(_) | Expr::Local(_) | Expr::Move(_) | Expr::Capture(_) => Op::Copy {
                dst,
                src: self.src(e)?,
            },
            Expr::Call(c) => self.call(c, dst)?,
            Expr::Prim(p) => {
                let (x, y) = (self.src(&p.x)?, self.src(&p.y)?);
                Op::Prim {
                    dst,
                    op: p.op,
                    x,
                    y,
                }
            }
            Expr::If(b) => return self.branch(b, dst),
            Expr::And(xs) => return self.and_or(xs, true, dst),
            Expr::Or(xs) => return self.and_or(xs, false, dst),
            Expr::Let(l) => {
                for (p, init) in &l.bindings {
                    let Pattern::Bind(s) = p else {
                        return None;
                    };
                    self.value(init, slot(*s)?)?;
                }
                return self.value(&l.body, dst);
            }
            Expr::Record(pairs, Some(shape)) => {
                let args = self.operands(pairs.iter().map(|(_, v)| v))?;
                let at = u16::try_from(self.shapes.len()).ok()?;
                self.shapes.push(shape.clone());
                Op::Record {
                    dst,
                    shape: at,
                    args,
                    tail: false,
                }
            }
            Expr::Vector(items) => Op::Vector {
                dst,
                args: self.operands(items.iter())?,
                tail: false,
            },
            _ => return None,
        };
        self.ops.push(op);
        Some(())
    }

    /// A keyword call of one argument, a call of the builtin `get` with two, or of a builtin
    /// with a fast entry for its argument count (pure: they see no interpreter).
    fn call(&mut self, c: &crate::analyze::Call, dst: u8) -> Option<Op> {
        match (&c.f, c.args.as_slice()) {
            (Expr::Const(Value::Keyword(k)), [m]) => {
                let src = self.src(m)?;
                let key = self.key(k)?;
                Some(match src {
                    Src::Reg(src) => Op::FieldR { dst, src, key },
                    src => Op::Field { dst, src, key },
                })
            }
            (Expr::Builtin(b), [m, k]) if is_get(b) => {
                let (map, key) = (self.src(m)?, self.src(k)?);
                Some(match (map, key) {
                    (Src::Capture(map), Src::Reg(key)) => Op::GetCapR { dst, map, key },
                    (map, key) => Op::Get { dst, map, key },
                })
            }
            (Expr::Builtin(b), [x]) if let Fast::One(f) = b.fast => Some(Op::Call1 {
                dst,
                f,
                x: self.src(x)?,
            }),
            (Expr::Builtin(b), [x, y]) if let Fast::Two(f) = b.fast => {
                let (x, y) = (self.src(x)?, self.src(y)?);
                Some(Op::Call2 { dst, f, x, y })
            }
            _ => None,
        }
    }

    /// A field read's keyword, with a hint of its own.
    fn key(&mut self, k: &Text) -> Option<u16> {
        let at = u16::try_from(self.keys.len()).ok()?;
        self.keys.push((k.clone(), KeyHint::default()));
        Some(at)
    }

    /// `(op (:k local) c)` or `(op c (:k local))` with a decoded constant, as one `TestField`.
    fn test_field(&mut self, p: &crate::analyze::PrimCall) -> Option<Op> {
        let (f, c) = match (&p.x, &p.y) {
            (Expr::Call(f), Expr::Const(c)) | (Expr::Const(c), Expr::Call(f)) => (f, c),
            _ => return None,
        };
        let (Expr::Const(Value::Keyword(k)), [Expr::Local(s) | Expr::Move(s)]) =
            (&f.f, f.args.as_slice())
        else {
            return None;
        };
        if matches!(Fixed::of(p.op, c), Fixed::No) {
            return None;
        }
        let src = slot(*s)?;
        let key = self.key(k)?;
        let fixed = self.fixed(p.op, &p.x, &p.y)??;
        Some(Op::TestField {
            src,
            key,
            op: p.op,
            fixed,
            to: 0,
        })
    }

    /// `if`: a prim test jumps by itself, anything else is computed and tested.
    fn branch(&mut self, b: &(Expr, Expr, Expr), dst: u8) -> Option<()> {
        let (t, then, els) = b;
        match t {
            Expr::Prim(p) if let Some(op) = self.test_field(p) => {
                let test_at = self.ops.len();
                self.ops.push(op);
                self.arms(test_at, then, els, dst)
            }
            Expr::Prim(p) => {
                let (x, y) = (self.src(&p.x)?, self.src(&p.y)?);
                let fixed = self.fixed(p.op, &p.x, &p.y)?;
                let test_at = self.ops.len();
                self.ops.push(Op::Test {
                    op: p.op,
                    x,
                    y,
                    to: 0,
                    fixed,
                });
                self.arms(test_at, then, els, dst)
            }
            t => {
                let r = self.temp()?;
                self.value(t, r)?;
                let test_at = self.ops.len();
                self.ops.push(Op::Unless { src: r, to: 0 });
                self.arms(test_at, then, els, dst)
            }
        }
    }

    /// The decoded constant of a test `(op x y)` whose one operand is a constant (kept as
    /// `Some(None)` when it has no decoded form).
    fn fixed(&mut self, op: Prim, x: &Expr, y: &Expr) -> Option<Option<u16>> {
        let (c, other_first) = match (x, y) {
            (_, Expr::Const(c)) => (c, true),
            (Expr::Const(c), _) => (c, false),
            _ => return Some(None),
        };
        let f = Fixed::of(op, c);
        if matches!(f, Fixed::No) {
            return Some(None);
        }
        let konst = u16::try_from(self.consts.len()).ok()?;
        self.consts.push(c.clone());
        let at = u16::try_from(self.fixed.len()).ok()?;
        self.fixed.push((f, other_first, konst));
        Some(Some(at))
    }

    /// `and` / `or`: each value in turn into `dst`, the first falsy (`and`) or truthy (`or`)
    /// one answering, as `Interp::eval_and_or` does; no step of its own.
    fn and_or(&mut self, xs: &[Expr], and: bool, dst: u8) -> Option<()> {
        let Some((last, init)) = xs.split_last() else {
            let src = self.src(&Expr::Const(if and {
                Value::Bool(true)
            } else {
                Value::Nil
            }))?;
            self.ops.push(Op::Copy { dst, src });
            return Some(());
        };
        let mut exits = Vec::with_capacity(init.len());
        for x in init {
            self.value(x, dst)?;
            exits.push(self.ops.len());
            self.ops.push(if and {
                Op::Unless { src: dst, to: 0 }
            } else {
                Op::When { src: dst, to: 0 }
            });
        }
        self.value(last, dst)?;
        let end = self.here()?;
        for at in exits {
            match self.ops.get_mut(at)? {
                Op::Unless { to, .. } | Op::When { to, .. } => *to = end,
                _ => return None,
            }
        }
        Some(())
    }

    /// The two arms after the test at `test_at`, which jumps to the second.
    fn arms(&mut self, test_at: usize, then: &Expr, els: &Expr, dst: u8) -> Option<()> {
        self.value(then, dst)?;
        let jump_at = self.ops.len();
        self.ops.push(Op::Jump { to: 0 });
        let else_at = self.here()?;
        match self.ops.get_mut(test_at)? {
            Op::Test { to, .. } | Op::TestField { to, .. } | Op::Unless { to, .. } => {
                *to = else_at;
            }
            _ => return None,
        }
        self.value(els, dst)?;
        let end = self.here()?;
        match self.ops.get_mut(jump_at)? {
            Op::Jump { to } => *to = end,
            _ => return None,
        }
        Some(())
    }

    /// The operands of a literal, in order, as a range of `args`.
    fn operands<'e>(&mut self, es: impl Iterator<Item = &'e Expr>) -> Option<(u16, u16)> {
        let srcs = es.map(|e| self.src(e)).collect::<Option<Vec<_>>>()?;
        let start = u16::try_from(self.args.len()).ok()?;
        self.args.extend(srcs);
        Some((start, u16::try_from(self.args.len()).ok()?))
    }
}

fn slot(s: u32) -> Option<u8> {
    u8::try_from(s).ok().filter(|s| usize::from(*s) < MAX_REGS)
}

/// Whether `b` is the builtin `get`.
fn is_get(b: &BuiltinDef) -> bool {
    b.name == "get"
        && matches!(builtins::lookup(None, "get"), Lookup::Found(d) if std::ptr::eq(d, b))
}

#[cfg(test)]
mod code_tests {
    use crate::value::Value;

    fn edn(text: &str) -> Value {
        crate::edn::parse(text).map_or(Value::Nil, crate::convert::import)
    }

    /// Each op answers its usual operands itself (an op that always declined would leave the
    /// side-by-side tests green: the walker answers for it), with its steps.
    #[test]
    fn each_op_answers_its_usual_operands() {
        // `by` is the fn's capture, where it has one.
        let check = |src: &str, by: &str, x: &str, want: &str, steps: u64| {
            let t = crate::eval::testing::first_fn(src).expect("a fn");
            let code = t.code.as_ref().unwrap_or_else(|| panic!("compiled: {src}"));
            let (mut charged, captures) = (0, [edn(by)]);
            let got = code.run(&captures, &edn(x), &mut charged);
            assert_eq!(got, Some(edn(want)), "{src}");
            assert_eq!(charged, steps, "{src}");
        };
        // A field of a capture (`Field`), beside one of the element (`FieldR`).
        check(
            "(let [by {}] (fn [o] [(:x by) (:k o)]))",
            "{:x 5}",
            "{:k 1}",
            "[5 1]",
            2,
        );
        // `get` of the element by a constant (`Get`); of a captured nil (`GetCapR`).
        check("(fn [o] (get o :k))", "", "{:k 2}", "2", 1);
        check(
            "(let [by {}] (fn [o] (get by (:k o))))",
            "nil",
            "{:k 2}",
            "nil",
            2,
        );
        // A builtin's two-argument entry (`Call2`) and prims (`Prim`) as values.
        let two = "(fn [o] [(not= (:k o) 1) (+ (:k o) 1)])";
        check(two, "", "{:k 1}", "[false 2]", 4);
        let prims = "(fn [o] (let [v (:k o)] [(* v 2.5) (< v 2)]))";
        check(prims, "", "{:k 2}", "[5.0 false]", 3);
        // A prim as a test (`Test`), and `or`'s jump on a truthy value (`When`).
        let test = "(fn [o] (let [v (:k o)] (if (= 1 v) :one :other)))";
        check(test, "", "{:k 1}", ":one", 2);
        check("(fn [o] (or (:j o) (:k o) 3))", "", "{:k 4}", "4", 2);
        // A field of nil, in a register (`FieldR`) and in a capture (`Field`).
        check("(fn [o] (:x (:j o)))", "", "{:k 4}", "nil", 2);
        check(
            "(let [by {}] (fn [o] [(:x by) (:k o)]))",
            "nil",
            "{:k 1}",
            "[nil 1]",
            2,
        );
    }

    /// What the registers own is let go when the run ends: the vector the body builds holds
    /// the captured map, which is held once again after the run (also when a borrowed value is
    /// written after the owned one).
    #[test]
    fn owned_registers_are_let_go() {
        for (src, want) in [
            ("(let [by {}] (fn [o] (count [by (:k o)])))", 2),
            // The last write, a capture's field, borrows (through `put`).
            ("(let [by {}] (fn [o] (let [v [by 1]] (:x by))))", 1),
        ] {
            let t = crate::eval::testing::first_fn(src);
            let code = t.as_ref().and_then(|t| t.code.as_ref()).expect("compiled");
            let mut captures = [edn("{:x 1}")];
            let mut steps = 0;
            let got = code.run(&captures, &edn("{:k 1}"), &mut steps);
            assert_eq!(got, Some(Value::Int(want)), "{src}");
            match &mut captures[0] {
                Value::Map(m) => assert!(m.unique_mut().is_some(), "still held: {src}"),
                other => panic!("{other:?}"),
            }
        }
    }

    /// The code runs on its own, not only as the walker's stand-in: the side-by-side tests
    /// cannot tell code that always declines from code that answers, this can.
    #[test]
    fn compiled_code_answers_its_usual_operands_and_declines_the_rest() {
        let src = "(let [by {}] (fn [o] (let [c (get by (:id o))] \
                   (when (= \"gold\" (:tier c)) {:n (:name c) :t (:t o) :k (inc (:k o))}))))";
        let t = crate::eval::testing::first_fn(src).expect("a fn");
        let code = t.code.as_ref().expect("compiled");
        let by = [edn(
            r#"{1 {:tier "gold" :name "A"} 2 {:tier "x" :name "B"}}"#,
        )];
        let run = |x: &str| {
            let mut steps = 0;
            code.run(&by, &edn(x), &mut steps).map(|v| (v, steps))
        };
        // `(:id o)`, `get`, the test and its field, `(:name c)`, `(:t o)`, `(:k o)`, `inc`.
        let gold = run("{:id 1 :t 2.5 :k 1}");
        assert_eq!(gold, Some((edn(r#"{:n "A" :t 2.5 :k 2}"#), 8)));
        // The test fails: `(:id o)`, `get`, the test and its field.
        assert_eq!(run("{:id 2 :t 1}"), Some((Value::Nil, 4)));
        assert_eq!(run("{:id 3}"), Some((Value::Nil, 4)));
        // A field of a vector, `inc` of a text: the walker's to answer.
        assert_eq!(run("[1 2]"), None);
        assert_eq!(run(r#"{:id 1 :k "a"}"#), None);
    }

    /// What [`Code::run_fields`] hands its taker: `Fields` (their keys and values) or a value.
    struct Seen;

    impl super::super::Take for Seen {
        type Out = String;

        fn value(self, v: Value) -> Option<String> {
            Some(format!("value {v:?}"))
        }

        fn fields(self, f: &super::super::Fields<'_>) -> Option<String> {
            let vals: Vec<&Value> = (0..f.shape().len()).map(|i| f.get(i)).collect();
            Some(format!("fields {vals:?} {:?}", f.to_value()))
        }

        fn pair(self, a: &Value, b: &Value) -> Option<String> {
            Some(format!("pair {a:?} {b:?}"))
        }
    }

    /// A record literal the fn answers is handed over unbuilt, on whichever branch; one that is
    /// not the answer (inside a vector, bound and then read) is built.
    #[test]
    fn a_record_answered_is_handed_over_unbuilt_and_no_other() {
        let run = |src: &str, x: &str| {
            let t = crate::eval::testing::first_fn(src).expect("a fn");
            let (mut steps, x) = (0, edn(x));
            let code = t.code.as_ref().expect("compiled");
            code.run_fields(&[], &x, &mut steps, Seen)
        };
        let two = "(fn [o] (if (:k o) {:a (:k o) :b 1} (let [r {:z (:t o)}] r)))";
        assert_eq!(
            run(two, "{:k 5}").as_deref(),
            Some("fields [5, 1] {:a 5, :b 1}")
        );
        assert_eq!(run(two, "{:t 2}").as_deref(), Some("value {:z 2}"));
        let inside = "(fn [o] [{:a (:k o)}])";
        assert_eq!(run(inside, "{:k 5}").as_deref(), Some("value [{:a 5}]"));
        let pair = "(fn [o] (if (:k o) [(:k o) o] [1 2 3]))";
        assert_eq!(run(pair, "{:k 5}").as_deref(), Some("pair 5 {:k 5}"));
        assert_eq!(run(pair, "{}").as_deref(), Some("value [1 2 3]"));
        let last = "(fn [o] (when (:k o) {:a (:k o)}))";
        assert_eq!(run(last, "{}").as_deref(), Some("value nil"));
        assert_eq!(run(last, "[]"), None);
    }

    /// Whether the first form of `src` is a fn (or a `let` whose body is one) with register code.
    fn compiled(src: &str) -> bool {
        crate::eval::testing::first_fn(src).is_some_and(|t| t.code.is_some())
    }

    #[test]
    fn the_forms_it_takes_and_only_they_are_compiled() {
        for yes in [
            "(let [by-id {}] (fn [o] (let [c (get by-id (:customer_id o))] \
             (when (= \"gold\" (:tier c)) {:customer (:name c) :total (:total o)}))))",
            "(fn [c] [(:id c) c])",
            "(fn [m] (if (:k m) (:k (:k m)) :none))",
            "(fn [m] (let [a (:a m) b (:b m)] (+ a b)))",
            "(fn [m] (get m :id))",
            "(fn [m] [1 2 3 4 5 (:k m)])",
            "(fn [m] m)",
            "(fn [m] (and (:a m) (or (:b m) (inc (:c m)))))",
            "(fn [m] (inc (:id m)))",
            "(fn [s] (str/upper-case (first (str/split s #\" \"))))",
        ] {
            assert!(compiled(yes), "{yes}");
        }
        for no in [
            // Quick fns keep their own, cheaper form.
            "(fn [m] (:id m))",
            "(fn [m] (= 1 (:id m)))",
            // The general forms the side-by-side tests compare against.
            "(fn [m] (do nil (:k m)))",
            "(fn [a b] [(:t a) b])",
            "(fn [m & r] [(:id m)])",
            "(fn [{:keys [id]}] [id])",
            "(fn ([m] [(:id m)]) ([m n] n))",
            "(fn [m] (:id m 0))",
            "(fn [m] (get m :id 0))",
            "(fn [m] (let [[a b] m] [a b]))",
            "(fn [m] (str (:id m)))",
            "(fn [m] {(:k m) 1})",
            "(fn [m] (let [a 1 b 2 c 3 d 4 e 5 f 6 g 7 h 8 i 9 j 10 k 11 l 12 n 13 o 14 p 15] [a]))",
        ] {
            assert!(!compiled(no), "{no}");
        }
    }
}
