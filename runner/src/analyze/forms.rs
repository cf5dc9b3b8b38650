//! Special forms: `quote def fn let loop recur if do try throw case and or for doseq letfn
//! declare call`. Each checks its shape and reports a clear analysis error with a hint.

use super::{AResult, Analyzer, err};
use crate::analyze::expr::*;
use crate::error::Pos;
use crate::reader::{Form, FormKind};
use crate::value::Value;
use std::rc::Rc;

/// Symbols with a meaning of their own in value position.
pub(super) fn special_symbol(s: &str) -> Option<Expr> {
    match s {
        "*1" => Some(Expr::History(0)),
        "*2" => Some(Expr::History(1)),
        "*3" => Some(Expr::History(2)),
        _ => None,
    }
}

/// Compiles a regex literal once, at analysis time.
pub(super) fn regex_literal(src: &str, pos: Pos) -> AResult {
    crate::builtins::regex::compile(src)
        .map(|r| Expr::Const(Value::Regex(r)))
        .map_err(|e| {
            err(
                pos,
                format!("invalid regex: {e}"),
                Some("the regex syntax is Rust's: no backreferences or lookaround".into()),
            )
        })
}

/// Clojure's special forms (not macros): in operator position they win over a local of the
/// same name (`(let [if inc] (if true 1 2))` is 1), while a local shadows a macro's name.
pub fn is_special_form(name: &str) -> bool {
    matches!(
        name,
        "quote" | "var" | "do" | "if" | "def" | "recur" | "throw" | "try" | "fn*" | "let*"
    )
}

/// Converts a quoted form to a value.
pub fn quote(f: &Form) -> Value {
    match &f.kind {
        FormKind::Nil => Value::Nil,
        FormKind::Bool(b) => Value::Bool(*b),
        FormKind::Int(i) => Value::Int(*i),
        FormKind::Float(x) => Value::Float(*x),
        FormKind::Str(s) => Value::Str(s.clone()),
        FormKind::Char(c) => Value::Char(*c),
        FormKind::Keyword(k) => Value::Keyword(k.clone()),
        FormKind::Symbol(s) => Value::Symbol(s.clone()),
        FormKind::Regex(s) => Value::Str(s.clone()),
        FormKind::List(xs) => Value::list(xs.iter().map(quote)),
        FormKind::Vector(xs) => Value::vector(xs.iter().map(quote)),
        FormKind::Set(xs) => Value::set(xs.iter().map(quote)),
        FormKind::Map(xs) => {
            let mut m = crate::value::MapImpl::default();
            for pair in xs.chunks(2) {
                if let [k, v] = pair {
                    m.insert(quote(k), quote(v));
                }
            }
            Value::map(m)
        }
    }
}

fn arg_count(
    op: &str,
    args: &[Form],
    min: usize,
    max: Option<usize>,
    pos: Pos,
    shape: &str,
) -> AResult<()> {
    let ok = args.len() >= min && max.is_none_or(|m| args.len() <= m);
    if ok {
        Ok(())
    } else {
        Err(err(
            pos,
            format!("malformed ({op} ...): got {} argument(s)", args.len()),
            Some(format!("expected {shape}")),
        ))
    }
}

pub(super) fn binding_vector<'f>(op: &str, f: Option<&'f Form>, pos: Pos) -> AResult<&'f [Form]> {
    match f.map(|f| &f.kind) {
        Some(FormKind::Vector(items)) if items.len() % 2 == 0 => Ok(items),
        Some(FormKind::Vector(_)) => Err(err(
            pos,
            format!("{op} bindings need an even number of forms"),
            Some(format!("write ({op} [name value ...] body)")),
        )),
        _ => Err(err(
            pos,
            format!("{op} needs a binding vector"),
            Some(format!("write ({op} [name value ...] body)")),
        )),
    }
}

impl Analyzer<'_> {
    /// Analyzes a special form, or returns `None` if `name` is not one.
    /// `(def name value)`, or `(def name "doc" value)`: a third form needs a docstring first.
    fn def_value(&mut self, args: &[Form], pos: Pos) -> AResult {
        Ok(match args {
            [_, v] => self.analyze(v, false)?,
            [_, doc, v] if matches!(doc.kind, FormKind::Str(_)) => self.analyze(v, false)?,
            [_, _, _] => {
                return Err(err(
                    pos,
                    "too many arguments to def",
                    Some("write (def name value) or (def name \"doc\" value)".into()),
                ));
            }
            _ => Expr::Const(Value::Nil),
        })
    }

    pub(super) fn special(
        &mut self,
        name: &str,
        args: &[Form],
        pos: Pos,
        tail: bool,
    ) -> AResult<Option<Expr>> {
        let e = match name {
            "quote" => {
                arg_count("quote", args, 1, Some(1), pos, "(quote form)")?;
                Expr::Const(quote(&args[0]))
            }
            "var" => {
                arg_count("var", args, 1, Some(1), pos, "#'name")?;
                self.analyze(&args[0], false)?
            }
            "do" => self.body(args, tail)?,
            "if" => self.if_form(args, pos, tail)?,
            "def" => self.def_form(args, pos, false)?,
            "defonce" => self.def_form(args, pos, true)?,
            "declare" => {
                for a in args {
                    let n = a
                        .as_sym()
                        .ok_or_else(|| err(a.pos, "declare takes symbols", None))?;
                    self.define_global(n);
                }
                Expr::Const(Value::Nil)
            }
            "fn" | "fn*" => self.fn_form(args, pos)?,
            "let" | "let*" => self.let_form(args, pos, tail)?,
            "loop" => self.loop_form(args, pos)?,
            "recur" => self.recur_form(args, pos, tail)?,
            "and" => Expr::And(self.analyze_all(args)?),
            "or" => Expr::Or(self.analyze_all(args)?),
            "throw" => {
                arg_count("throw", args, 1, Some(1), pos, "(throw exception)")?;
                Expr::Throw(Box::new(self.analyze(&args[0], false)?), pos)
            }
            "try" => self.try_form(args, pos)?,
            "case" => self.case_form(args, pos, tail)?,
            "for" => self.for_form(args, pos, true)?,
            "doseq" => self.for_form(args, pos, false)?,
            "call" => self.call_form(args, pos)?,
            "defmacro" | "defmulti" | "defmethod" | "defprotocol" | "defrecord" | "deftype"
            | "ns" | "require" | "import" => {
                return Err(super::hints::unavailable(name, pos));
            }
            _ => return Ok(None),
        };
        Ok(Some(e))
    }

    fn if_form(&mut self, args: &[Form], pos: Pos, tail: bool) -> AResult {
        arg_count("if", args, 2, Some(3), pos, "(if test then else?)")?;
        let test = self.analyze(&args[0], false)?;
        let then = self.analyze_tail(&args[1], tail)?;
        let els = match args.get(2) {
            Some(f) => self.analyze_tail(f, tail)?,
            None => Expr::Const(Value::Nil),
        };
        Ok(Expr::If(Box::new((test, then, els))))
    }

    fn def_form(&mut self, args: &[Form], pos: Pos, once: bool) -> AResult {
        arg_count("def", args, 1, Some(3), pos, "(def name value)")?;
        let name = args[0]
            .as_sym()
            .filter(|n| !n.contains('/'))
            .ok_or_else(|| {
                err(
                    args[0].pos,
                    "def needs a plain symbol name",
                    Some("write (def name value)".into()),
                )
            })?;
        // The name is visible to its own value (recursive fns) and to later forms.
        self.define_global(name);
        let value = self.def_value(args, pos)?;
        let name: Rc<str> = Rc::from(name);
        Ok(if once {
            Expr::DefOnce(name, Box::new(value))
        } else {
            Expr::Def(name, Box::new(value))
        })
    }

    /// `(fn name? [params] body...)` or `(fn name? ([params] body...) ...)`.
    pub(super) fn fn_form(&mut self, args: &[Form], pos: Pos) -> AResult {
        let (name, rest) = match args.first().and_then(Form::as_sym) {
            Some(n) => (Some(Rc::<str>::from(n)), &args[1..]),
            None => (None, args),
        };
        let clauses: Vec<(&[Form], &[Form])> = match rest.first().map(|f| &f.kind) {
            Some(FormKind::Vector(params)) => vec![(params.as_slice(), &rest[1..])],
            Some(FormKind::List(_)) => rest
                .iter()
                .map(|c| match &c.kind {
                    FormKind::List(items) => match items.first().map(|f| &f.kind) {
                        Some(FormKind::Vector(p)) => Ok((p.as_slice(), &items[1..])),
                        _ => Err(err(
                            c.pos,
                            "each fn arity needs a parameter vector",
                            Some("write ([x] body) ([x y] body)".into()),
                        )),
                    },
                    _ => Err(err(
                        c.pos,
                        "each fn arity must be a list",
                        Some("write (fn ([x] ...) ([x y] ...))".into()),
                    )),
                })
                .collect::<AResult<_>>()?,
            _ => {
                return Err(err(
                    pos,
                    "fn needs a parameter vector",
                    Some("write (fn [x] body)".into()),
                ));
            }
        };
        self.push_scope(name.clone());
        let arities = clauses
            .into_iter()
            .map(|(p, b)| self.arity(p, b, pos))
            .collect::<AResult<Vec<_>>>();
        let (_, captures) = self.pop_scope();
        let mut arities = arities?;
        arities.sort_by_key(|a| (a.variadic, a.required));
        let fixed: Vec<usize> = arities
            .iter()
            .filter(|a| !a.variadic)
            .map(|a| a.required)
            .collect();
        if fixed.windows(2).any(|w| w[0] == w[1])
            || arities.iter().filter(|a| a.variadic).count() > 1
        {
            return Err(err(
                pos,
                "fn has two arities with the same parameter count",
                None,
            ));
        }
        let mut t = FnTemplate {
            name,
            arities,
            quick: None,
            reducer: None,
            code: None,
        };
        t.quick = crate::eval::quick::Quick::of(&t);
        t.reducer = crate::eval::reducer::Reducer::of(&t);
        if t.quick.is_none() {
            t.code = crate::eval::code::Code::of(&t);
        }
        Ok(Expr::Fn(Rc::new(t), captures))
    }

    /// One arity: a slot per positional arg (and the rest), then destructuring, then body.
    /// A plain-symbol parameter is its own slot; only patterns get a separate raw slot.
    fn arity(&mut self, params: &[Form], body: &[Form], pos: Pos) -> AResult<Arity> {
        let amp = params.iter().position(|p| p.is_sym("&"));
        let (fixed, rest) = match amp {
            Some(i) => match &params[i + 1..] {
                [r] => (&params[..i], Some(r)),
                _ => {
                    return Err(err(
                        pos,
                        "`&` must be followed by exactly one parameter",
                        None,
                    ));
                }
            },
            None => (params, None),
        };
        let all: Vec<&Form> = fixed.iter().chain(rest).collect();
        // Argument slots come first, in order: the evaluator writes args to slots 0..n.
        let raw: Vec<u32> = all.iter().map(|p| self.param_slot(p)).collect();
        let mut patterns = Vec::new();
        for (p, slot) in all.iter().zip(&raw) {
            if p.as_sym().is_none() {
                patterns.push((self.pattern(p)?, *slot));
            }
        }
        let mut body = self.with_recur(all.len(), |a| a.body(body, true))?;
        super::liveness::mark_moves_fn(&mut body, &raw, &patterns);
        let frame_size = self.scopes.last().map_or(0, |s| s.frame_size);
        if let Some(s) = self.scopes.last_mut() {
            s.locals.clear();
            s.next_slot = 0;
        }
        Ok(Arity {
            required: fixed.len(),
            variadic: rest.is_some(),
            frame_size,
            raw,
            patterns,
            body,
        })
    }

    /// The slot of a positional parameter: the symbol's own, or a raw slot for a pattern.
    fn param_slot(&mut self, p: &Form) -> u32 {
        match p.as_sym() {
            Some(name) => self.bind_local(name),
            None => self.alloc_slot(),
        }
    }

    fn let_form(&mut self, args: &[Form], pos: Pos, tail: bool) -> AResult {
        let pairs = binding_vector("let", args.first(), pos)?;
        let mark = self.mark();
        let mut bindings = Vec::with_capacity(pairs.len() / 2);
        for pair in pairs.chunks(2) {
            if let [p, v] = pair {
                let init = self.analyze(v, false)?;
                bindings.push((self.pattern(p)?, init));
            }
        }
        let body = self.body(&args[1..], tail)?;
        self.reset(mark);
        Ok(Expr::Let(Box::new(Let { bindings, body })))
    }

    fn loop_form(&mut self, args: &[Form], pos: Pos) -> AResult {
        let pairs = binding_vector("loop", args.first(), pos)?;
        let mark = self.mark();
        let (mut slots, mut inits, mut patterns) = (Vec::new(), Vec::new(), Vec::new());
        for pair in pairs.chunks(2) {
            if let [p, v] = pair {
                inits.push(self.analyze(v, false)?);
                // A plain name is its own slot; a pattern destructures a raw slot each iteration.
                let raw = self.param_slot(p);
                if p.as_sym().is_none() {
                    patterns.push((self.pattern(p)?, raw));
                }
                slots.push(raw);
            }
        }
        let body = self.with_recur(slots.len(), |a| a.body(&args[1..], true))?;
        self.reset(mark);
        Ok(Expr::Loop(Box::new(Loop {
            slots,
            inits,
            patterns,
            body,
        })))
    }

    fn recur_form(&mut self, args: &[Form], pos: Pos, tail: bool) -> AResult {
        let Some(arity) = self.recur_arity().filter(|_| tail) else {
            return Err(err(
                pos,
                "recur is only allowed in tail position of a loop or fn",
                Some("make recur the last thing the loop or fn does".into()),
            ));
        };
        if args.len() != arity {
            return Err(err(
                pos,
                format!("recur takes {arity} value(s) here, got {}", args.len()),
                Some("pass one value per loop binding or fn parameter".into()),
            ));
        }
        Ok(Expr::Recur(self.analyze_all(args)?, pos))
    }

    fn try_form(&mut self, args: &[Form], _pos: Pos) -> AResult {
        let is_clause = |f: &Form, head: &str| matches!(&f.kind, FormKind::List(items) if items.first().is_some_and(|h| h.is_sym(head)));
        let body_end = args
            .iter()
            .position(|f| is_clause(f, "catch") || is_clause(f, "finally"))
            .unwrap_or(args.len());
        // recur may not cross a try (as in Clojure): the body is not a tail position.
        let body = self.with_recur(0, |a| a.body(&args[..body_end], false))?;
        let mut catches = Vec::new();
        let mut finally = None;
        for clause in &args[body_end..] {
            let FormKind::List(items) = &clause.kind else {
                return Err(err(
                    clause.pos,
                    "only catch and finally may follow the body of try",
                    None,
                ));
            };
            if finally.is_some() {
                return Err(err(
                    clause.pos,
                    "finally must be the last clause of try",
                    None,
                ));
            }
            if is_clause(clause, "catch") {
                catches.push(self.catch_clause(items, clause.pos)?);
            } else if is_clause(clause, "finally") {
                finally = Some(self.body(&items[1..], false)?);
            } else {
                return Err(err(
                    clause.pos,
                    "only catch and finally may follow the body of try",
                    None,
                ));
            }
        }
        Ok(Expr::Try(Box::new(Try {
            body,
            catches,
            finally,
        })))
    }

    fn catch_clause(&mut self, items: &[Form], pos: Pos) -> AResult<Catch> {
        let [_, class, binding, handler @ ..] = items else {
            return Err(err(
                pos,
                "catch needs a class and a name",
                Some("write (catch Exception e ...)".into()),
            ));
        };
        let class_name = match &class.kind {
            FormKind::Symbol(s) => s.to_string(),
            FormKind::Keyword(k) => format!(":{k}"),
            _ => String::new(),
        };
        let class = ExClass::from_name(&class_name).ok_or_else(|| {
            err(
                class.pos,
                format!("unknown exception class `{class_name}`"),
                Some(
                    "catch Exception (or Throwable, ExceptionInfo, ArithmeticException, ...)"
                        .into(),
                ),
            )
        })?;
        let name = binding
            .as_sym()
            .ok_or_else(|| err(binding.pos, "catch binds a symbol", None))?;
        let mark = self.mark();
        let slot = self.bind_local(name);
        let handler = self.body(handler, false)?;
        self.reset(mark);
        Ok(Catch {
            class,
            slot,
            handler,
        })
    }

    /// `(case x 1 :a (2 3) :b :default)`: constants only; grouped constants in a list.
    fn case_form(&mut self, args: &[Form], pos: Pos, tail: bool) -> AResult {
        let Some(subject) = args.first() else {
            return Err(err(
                pos,
                "case needs an expression",
                Some("write (case x 1 :one :other)".into()),
            ));
        };
        let subject = self.analyze(subject, false)?;
        let rest = &args[1..];
        let (pairs, default) = if rest.len() % 2 == 1 {
            (&rest[..rest.len() - 1], rest.last())
        } else {
            (rest, None)
        };
        let mut clauses = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for pair in pairs.chunks(2) {
            if let [k, v] = pair {
                let keys: Vec<Value> = match &k.kind {
                    FormKind::List(items) => items.iter().map(quote).collect(),
                    _ => vec![quote(k)],
                };
                // Clojure compiles `case` to a table: a constant may appear only once.
                if let Some(dup) = keys.iter().find(|key| seen.contains(*key)) {
                    return Err(err(
                        k.pos,
                        format!(
                            "duplicate case test constant: {}",
                            crate::print::pr_str(dup)
                        ),
                        None,
                    ));
                }
                seen.extend(keys.iter().cloned());
                clauses.push((keys, self.analyze_tail(v, tail)?));
            }
        }
        let default = default.map(|d| self.analyze_tail(d, tail)).transpose()?;
        Ok(Expr::Case(Box::new(Case {
            subject,
            clauses,
            default,
            pos,
        })))
    }

    /// `for` (collecting) and `doseq` (for effect): `[x xs :when t :let [...] :while t ...]`.
    fn for_form(&mut self, args: &[Form], pos: Pos, collect: bool) -> AResult {
        let op = if collect { "for" } else { "doseq" };
        let items = binding_vector(op, args.first(), pos)?;
        if items.is_empty() {
            return Err(err(pos, format!("{op} needs at least one binding"), None));
        }
        let mark = self.mark();
        let mut clauses = Vec::new();
        for pair in items.chunks(2) {
            let [k, v] = pair else { continue };
            let clause = match &k.kind {
                FormKind::Keyword(kw) if &**kw == "when" => {
                    ForClause::When(self.analyze(v, false)?)
                }
                FormKind::Keyword(kw) if &**kw == "while" => {
                    ForClause::While(self.analyze(v, false)?)
                }
                FormKind::Keyword(kw) if &**kw == "let" => {
                    let pairs = binding_vector(":let", Some(v), v.pos)?;
                    let mut bs = Vec::new();
                    for p in pairs.chunks(2) {
                        if let [pat, init] = p {
                            let init = self.analyze(init, false)?;
                            bs.push((self.pattern(pat)?, init));
                        }
                    }
                    ForClause::Let(bs)
                }
                FormKind::Keyword(kw) => {
                    return Err(err(
                        k.pos,
                        format!("unknown {op} modifier :{kw}"),
                        Some("use :when, :let or :while".into()),
                    ));
                }
                _ => {
                    let coll = self.analyze(v, false)?;
                    ForClause::Bind(self.pattern(k)?, coll)
                }
            };
            clauses.push(clause);
        }
        let body = self.with_recur(usize::MAX, |a| a.body(&args[1..], false))?;
        self.reset(mark);
        Ok(Expr::For(Box::new(For {
            clauses,
            body,
            collect,
            pos,
        })))
    }

    /// `(call "name" args)`: the old tool-call convention; `return`/`fail` are special names.
    fn call_form(&mut self, args: &[Form], pos: Pos) -> AResult {
        let Some(first) = args.first() else {
            return Err(err(
                pos,
                "call needs a tool name",
                Some("write (call \"tool-name\" {:arg 1})".into()),
            ));
        };
        if let FormKind::Str(name) = &first.kind {
            let rest = self.analyze_all(&args[1..])?;
            return Ok(match &**name {
                "return" | "fail" => {
                    let b = crate::builtins::lookup(None, name)
                        .found()
                        .ok_or_else(|| err(pos, "internal: return/fail missing", None))?;
                    Expr::Call(Box::new(Call {
                        f: Expr::Builtin(b),
                        args: rest,
                        pos,
                        name: Rc::from(&**name),
                        hint: Default::default(),
                    }))
                }
                _ => {
                    self.check_tool(name, pos)?;
                    Expr::Tool(Rc::from(&**name), rest, pos)
                }
            });
        }
        Ok(Expr::DynTool(self.analyze_all(args)?, pos))
    }
}
