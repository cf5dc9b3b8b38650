//! Evaluation of `case`, `try`, `throw`, `for`/`doseq`, and tool calls; and a test value's
//! truthiness taken by value (`truthy`: `if`, `:when`/`:while` and `filter`'s test share it).

use super::{Env, Interp};
use crate::analyze::{Case, ExClass, For, ForClause, Pattern, Try};
use crate::api::ToolFailure;
use crate::error::{ErrorBody, ErrorKind, EvalError, EvalResult, Limit, Pos};
use crate::value::{ExInfo, Value};
use std::rc::Rc;

/// `(throw x)`: only exceptions can be thrown, as in Clojure.
pub(super) fn throw_value(v: Value, pos: Pos) -> EvalError {
    match v {
        Value::Error(_) => ErrorBody::Thrown(v).into(),
        other => EvalError::type_err(
            "throw",
            format!(
                "cannot throw {}: throw an exception made with ex-info",
                other.type_name()
            ),
        )
        .at(pos),
    }
}

/// Whether an error is an instance of the class a `catch` names.
fn class_matches(class: ExClass, e: &EvalError) -> bool {
    let kind = match e.body() {
        Some(ErrorBody::Runtime(r)) => Some(r.kind),
        _ => None,
    };
    match class {
        ExClass::Any => true,
        ExClass::ExInfo => matches!(e.body(), Some(ErrorBody::Thrown(_) | ErrorBody::Tool(_))),
        ExClass::Arithmetic => kind == Some(ErrorKind::ArithmeticError),
        ExClass::IndexOutOfBounds => kind == Some(ErrorKind::IndexOutOfBounds),
        ExClass::ClassCast => matches!(kind, Some(ErrorKind::TypeError | ErrorKind::NotCallable)),
        ExClass::IllegalArgument => matches!(
            kind,
            Some(
                ErrorKind::ArgumentError
                    | ErrorKind::ArityError
                    | ErrorKind::NoMatchingClause
                    | ErrorKind::ParseError
            )
        ),
        ExClass::Arity => kind == Some(ErrorKind::ArityError),
        ExClass::NumberFormat => kind == Some(ErrorKind::ParseError),
        ExClass::NullPointer | ExClass::IllegalState | ExClass::UnsupportedOperation => false,
    }
}

/// The value a `catch` binds for an error.
fn caught_value(e: EvalError) -> Value {
    let body = match e {
        EvalError::Body(b) => *b,
        recur @ EvalError::Recur => {
            return Value::Error(Rc::new(ExInfo {
                message: recur.to_string(),
                data: Value::Nil,
                kind: None,
            }));
        }
    };
    match body {
        ErrorBody::Thrown(v) => v,
        ErrorBody::Runtime(r) => Value::Error(Rc::new(ExInfo {
            message: r.message,
            data: Value::Nil,
            kind: Some(r.kind.as_str()),
        })),
        other => Value::Error(Rc::new(ExInfo {
            message: other.to_string(),
            data: Value::Nil,
            kind: Some("tool_error"),
        })),
    }
}

/// A binding that walked past `max_iterations` elements.
#[cold]
fn walked_too_far(collect: bool, max: u64) -> EvalError {
    EvalError::limit(
        Limit::Iterations,
        format!(
            "{} binding walked more than {max} elements (for is eager: use take on an infinite seq first)",
            if collect { "for" } else { "doseq" },
        ),
    )
}

/// A test's value as a condition, taken by value: a boolean or nil, the usual answers, have
/// nothing to drop, so they are forgotten (for `:when`, `if` and `filter`'s test). Forgotten
/// explicitly: a `Bool(b)` arm alone still passed the value to `Value`'s out-of-line drop
/// (10,000 calls an evaluation of p5's first `:when`).
#[inline(always)]
pub(crate) fn truthy(v: Value) -> bool {
    match v {
        Value::Bool(b) => {
            std::mem::forget(v);
            b
        }
        Value::Nil => {
            std::mem::forget(v);
            false
        }
        v => v.truthy(),
    }
}

enum ForFlow {
    Continue,
    /// A `:while` failed: stop the innermost binding's iteration.
    Break,
}

impl Interp<'_> {
    pub(super) fn eval_case(&mut self, c: &Case, env: &Env<'_>) -> EvalResult {
        let v = self.eval(&c.subject, env)?;
        for (keys, body) in &c.clauses {
            if keys.contains(&v) {
                return self.eval(body, env);
            }
        }
        match &c.default {
            Some(d) => self.eval(d, env),
            None => Err(EvalError::new(
                ErrorKind::NoMatchingClause,
                "case",
                format!("no matching clause: {}", crate::print::pr_str_short(&v)),
            )
            .at(c.pos)),
        }
    }

    pub(super) fn eval_try(&mut self, t: &Try, env: &Env<'_>) -> EvalResult {
        let result = match self.eval(&t.body, env) {
            Err(e) if e.catchable() => {
                match t.catches.iter().find(|c| class_matches(c.class, &e)) {
                    Some(c) => {
                        self.set_slot(env, c.slot, caught_value(e));
                        self.eval(&c.handler, env)
                    }
                    None => Err(e),
                }
            }
            other => other,
        };
        // `finally` runs for values and catchable errors; a limit or return ends the run now.
        if let Some(f) = &t.finally
            && result.as_ref().err().is_none_or(EvalError::catchable)
        {
            self.eval(f, env)?;
        }
        result
    }

    pub(super) fn eval_for(&mut self, f: &For, env: &Env<'_>) -> EvalResult {
        let mut out = Vec::new();
        self.for_clause(f, 0, env, &mut out)?;
        Ok(if f.collect {
            Value::list_of(out)
        } else {
            Value::Nil
        })
    }

    /// Clauses from `i` on, for the values bound so far. `:let`, `:when` and `:while` are
    /// taken in a loop here; only a binding (one call per element) or the body ends it.
    fn for_clause(
        &mut self,
        f: &For,
        mut i: usize,
        env: &Env<'_>,
        out: &mut Vec<Value>,
    ) -> EvalResult<ForFlow> {
        loop {
            let Some(clause) = f.clauses.get(i) else {
                return self.for_body(f, env, out);
            };
            match clause {
                ForClause::Bind(p, coll) => return self.for_bind(f, i, p, coll, env, out),
                ForClause::Let(bs) => {
                    for (p, init) in bs {
                        let v = self.literal_item(init, env)?;
                        self.bind(p, v, env)?;
                    }
                }
                ForClause::When(_) => match self.for_whens(f, i, env)? {
                    Some(next) => {
                        i = next;
                        continue;
                    }
                    None => return Ok(ForFlow::Continue),
                },
                ForClause::While(t) => {
                    if !truthy(self.eval(t, env)?) {
                        return Ok(ForFlow::Break);
                    }
                }
            }
            i += 1;
        }
    }

    /// The `:when` clauses from `i` on, in order: the index of the first clause that is not one
    /// (or the end), or `None` as soon as a test fails.
    #[inline(always)]
    fn for_whens(&mut self, f: &For, mut i: usize, env: &Env<'_>) -> EvalResult<Option<usize>> {
        while let Some(ForClause::When(t)) = f.clauses.get(i) {
            if !truthy(self.eval_test(t, env)?) {
                return Ok(None);
            }
            i += 1;
        }
        Ok(Some(i))
    }

    /// The body, for one combination of bound values: one step, its value kept by `for`.
    fn for_body(&mut self, f: &For, env: &Env<'_>, out: &mut Vec<Value>) -> EvalResult<ForFlow> {
        self.tick()?;
        let v = self.eval(&f.body, env)?;
        if f.collect {
            if out.len() as u64 >= self.limits.max_iterations {
                return Err(EvalError::limit(
                    Limit::Iterations,
                    format!(
                        "for produced more than {} elements",
                        self.limits.max_iterations
                    ),
                ));
            }
            out.push(v);
        }
        Ok(ForFlow::Continue)
    }

    /// Binding clause `i`: each element of `coll` bound by `p`, then the clauses after it.
    fn for_bind(
        &mut self,
        f: &For,
        i: usize,
        p: &Pattern,
        coll: &crate::analyze::Expr,
        env: &Env<'_>,
        out: &mut Vec<Value>,
    ) -> EvalResult<ForFlow> {
        let coll = self.eval(coll, env)?;
        // A vector or list is walked in place; anything else through a seq.
        if let Value::Vector(xs) | Value::List(xs) = &coll {
            for (n, x) in (1u64..).zip(xs.iter()) {
                if n > self.limits.max_iterations {
                    return Err(walked_too_far(f.collect, self.limits.max_iterations));
                }
                let flow = match p {
                    // The `:when`s right after the binding are tested here: an element they
                    // drop costs no call of the clauses after them.
                    Pattern::Bind(slot) => {
                        self.put_slot(env, *slot, x);
                        match self.for_whens(f, i + 1, env)? {
                            Some(next) => self.for_clause(f, next, env, out)?,
                            None => ForFlow::Continue,
                        }
                    }
                    p => self.for_element(f, i, p, x.clone(), env, out)?,
                };
                if let ForFlow::Break = flow {
                    break;
                }
            }
            return Ok(ForFlow::Continue);
        }
        let mut it = super::seq::SeqIter::new(self, &coll)?;
        let mut n: u64 = 0;
        while let Some(x) = it.next(self)? {
            // `for` is eager (DIV-3): an infinite source must end with a limit, quickly.
            n += 1;
            if n > self.limits.max_iterations {
                return Err(walked_too_far(f.collect, self.limits.max_iterations));
            }
            if let ForFlow::Break = self.for_element(f, i, p, x, env, out)? {
                break;
            }
        }
        Ok(ForFlow::Continue)
    }

    /// A `:when` test. The usual one, a prim (`(= "shipped" (:status o))`), is evaluated as
    /// `eval` would (its step, its position on errors) without the general dispatch.
    #[inline]
    fn eval_test(&mut self, t: &crate::analyze::Expr, env: &Env<'_>) -> EvalResult {
        match t {
            crate::analyze::Expr::Prim(p) => self.prim_step(p, env),
            t => self.eval(t, env),
        }
    }

    /// One element of a binding clause: bound (a plain name straight into its slot), then the
    /// clauses after it.
    #[inline]
    fn for_element(
        &mut self,
        f: &For,
        i: usize,
        p: &Pattern,
        x: Value,
        env: &Env<'_>,
        out: &mut Vec<Value>,
    ) -> EvalResult<ForFlow> {
        match p {
            Pattern::Bind(slot) => self.set_slot(env, *slot, x),
            p => self.bind(p, x, env)?,
        }
        self.for_clause(f, i + 1, env, out)
    }

    /// `(tool/name args)`: the declared tool, called with a string-keyed map.
    pub(super) fn call_tool(&mut self, name: &str, args: Vec<Value>) -> EvalResult {
        self.call_named_tool(name, args)
    }

    /// Calls a tool by name through the host, recording the call in the trace.
    pub(crate) fn call_named_tool(&mut self, name: &str, args: Vec<Value>) -> EvalResult {
        match name {
            "return" => {
                return Err(ErrorBody::Return(args.into_iter().next().unwrap_or_default()).into());
            }
            "fail" => {
                return Err(ErrorBody::Fail(args.into_iter().next().unwrap_or_default()).into());
            }
            _ => {}
        }
        if !self.tool_names.iter().any(|t| t == name) {
            let available = if self.tool_names.is_empty() {
                "no tools are available".into()
            } else {
                format!("available: {}", self.tool_names.join(", "))
            };
            return Err(
                ErrorBody::ToolNotFound(format!("unknown tool `{name}` ({available})")).into(),
            );
        }
        self.check_deadline()?;
        let arg = match args.len() {
            0 => Value::empty_map(),
            1 => args.into_iter().next().unwrap_or_default(),
            _ => Value::vector(args),
        };
        let shared_args =
            crate::convert::to_tool_args(&arg).map_err(|m| EvalError::type_err(name, m))?;
        // The host owns the tool-call checks (limit, signatures) and the trace.
        let result = self.host.call(name, shared_args);
        // A tool that returned after the deadline ends the run, also with an error the program
        // could catch; a terminal failure of its own wins.
        if !matches!(result, Err(ToolFailure::Terminal(_))) {
            self.check_deadline()?;
        }
        match result {
            Ok(v) => Ok(crate::convert::from_shared(&v)),
            Err(ToolFailure::NotFound) => {
                Err(ErrorBody::ToolNotFound(format!("unknown tool `{name}`")).into())
            }
            Err(ToolFailure::Error(m)) => Err(ErrorBody::Tool(crate::error::ToolError {
                tool: name.to_string(),
                message: m,
            })
            .into()),
            Err(ToolFailure::Terminal(f)) => Err(ErrorBody::Terminal(f).into()),
        }
    }
}
