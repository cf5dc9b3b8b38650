//! The analyzer: forms → resolved `Expr` trees, before anything runs.
//!
//! It checks special-form shapes, resolves every symbol (locals to frame slots, closures'
//! free variables to capture lists, builtins to their table entries, user definitions to
//! globals), rejects `recur` outside tail position, unknown tools and things PTC-Lisp does not
//! have (with a hint), and expands the core macros (`when`, `->`, `cond`, ...) into special forms.
//! The whole program is analyzed before the first form runs, so an analysis error never leaves
//! half a program executed.

mod destructure;
pub mod expr;
pub(crate) mod fold;
mod forms;
mod fuse;
pub mod hints;
mod liveness;
mod macros;

pub use expr::*;
pub use forms::quote as quote_form;

use crate::builtins::{self, Lookup};
use crate::error::Pos;
use crate::reader::{Form, FormKind};
use crate::value::Value;
use std::collections::HashSet;
use std::rc::Rc;

/// An analysis error: what, where, and a hint.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at {pos}{}", hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
pub struct AnalysisError {
    pub message: String,
    pub pos: Pos,
    pub hint: Option<String>,
    /// Set when the error is a call to an undeclared tool: reported as `tool_not_found`
    /// (found before anything runs, with the available tools listed).
    pub unknown_tool: bool,
}

pub type AResult<T = Expr> = Result<T, AnalysisError>;

pub(crate) fn err(pos: Pos, message: impl Into<String>, hint: Option<String>) -> AnalysisError {
    AnalysisError {
        message: message.into(),
        pos,
        hint,
        unknown_tool: false,
    }
}

/// Where a captured value comes from in the enclosing scope.
#[derive(Debug)]
struct Capture {
    name: Rc<str>,
    source: Expr,
}

/// One function's scope: visible locals (innermost last), slots, captures.
#[derive(Debug, Default)]
struct Scope {
    locals: Vec<(Rc<str>, u32)>,
    next_slot: u32,
    frame_size: u32,
    captures: Vec<Capture>,
    self_name: Option<Rc<str>>,
}

/// The recur target currently in tail position: how many values it takes.
#[derive(Debug, Clone, Copy)]
struct RecurTarget {
    arity: usize,
}

/// Analyzer state for one program.
#[derive(Debug)]
pub struct Analyzer<'a> {
    scopes: Vec<Scope>,
    /// User definitions known so far (earlier forms, input memory, `declare`).
    globals: HashSet<Rc<str>>,
    tools: &'a [String],
    recur: Option<RecurTarget>,
    gensym: u32,
    /// How many forms deep the current `analyze` call is (see [`MAX_EXPANDED_DEPTH`]).
    depth: u32,
}

/// How deeply forms may nest once macros are expanded. The reader caps written nesting at
/// `max_nesting`, but `->`, `cond` and friends turn a flat list of 50,000 steps into 50,000
/// nested calls; everything after the analyzer (liveness, evaluation, dropping the tree) recurses
/// once per level, so this cap is what keeps those walks on a bounded stack.
pub const MAX_EXPANDED_DEPTH: u32 = 1024;

/// An analyzed program: one expression per top-level form and the top frame's size.
#[derive(Debug)]
pub struct Program {
    pub forms: Vec<Expr>,
    pub frame_size: u32,
}

/// Analyzes a whole program. `known` are names already defined (from memory).
pub fn analyze_program(
    forms: &[Form],
    known: impl IntoIterator<Item = Rc<str>>,
    tools: &[String],
) -> AResult<Program> {
    let mut a = Analyzer::new(known.into_iter().collect(), tools);
    let mut out = Vec::with_capacity(forms.len());
    for f in forms {
        out.push(a.analyze(f, false)?);
    }
    let frame_size = a.scopes.first().map_or(0, |s| s.frame_size);
    liveness::mark_moves_seq(&mut out);
    Ok(Program {
        forms: out,
        frame_size,
    })
}

/// What a Clojure name means to PTC-Lisp, for the checked-in inventory (docs/inventory.tsv).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// A builtin function of the namespace.
    Builtin,
    /// A special form or macro the analyzer handles in operator position.
    Form,
    /// Deliberately absent, with a hint (randomness, state, I/O, ...).
    Unavailable,
    /// Not known at all.
    Unknown,
}

/// Resolves `name` in namespace `ns` (`clojure.core` when `None`) as the analyzer would in
/// operator position: asking the builtin tables, the hint table, and the macro and special-form
/// analysers themselves (with no arguments: a shape error still means the form exists).
pub fn resolve_name(ns: Option<&str>, name: &str) -> Resolution {
    if ns.is_none_or(|n| n == "clojure.core") && hints::UNAVAILABLE.iter().any(|(n, _)| *n == name)
    {
        return Resolution::Unavailable;
    }
    if builtins::lookup(ns, name).found().is_some() {
        return Resolution::Builtin;
    }
    if ns.is_some_and(|n| n != "clojure.core") {
        return Resolution::Unknown;
    }
    let mut a = Analyzer::new(HashSet::new(), &[]);
    let pos = Pos::default();
    let form = !matches!(macros::expand(&mut a, name, &[], pos), Ok(None))
        || !matches!(a.special(name, &[], pos, false), Ok(None))
        || forms::special_symbol(name).is_some();
    if form {
        Resolution::Form
    } else {
        Resolution::Unknown
    }
}

impl<'a> Analyzer<'a> {
    fn new(globals: HashSet<Rc<str>>, tools: &'a [String]) -> Analyzer<'a> {
        Analyzer {
            scopes: vec![Scope::default()],
            globals,
            tools,
            recur: None,
            gensym: 0,
            depth: 0,
        }
    }
}

impl Analyzer<'_> {
    /// Analyzes one form; `tail` says whether it is in tail position of a loop or fn.
    pub(crate) fn analyze(&mut self, f: &Form, tail: bool) -> AResult {
        if self.depth >= MAX_EXPANDED_DEPTH {
            let msg = format!(
                "forms nested deeper than {MAX_EXPANDED_DEPTH} levels after macro expansion"
            );
            let hint = "split long `->`/`cond` chains with `let`".to_string();
            return Err(err(f.pos, msg, Some(hint)));
        }
        self.depth += 1;
        let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.analyze_form(f, tail));
        self.depth -= 1;
        r
    }

    fn analyze_form(&mut self, f: &Form, tail: bool) -> AResult {
        match &f.kind {
            FormKind::Nil => Ok(Expr::Const(Value::Nil)),
            FormKind::Bool(b) => Ok(Expr::Const(Value::Bool(*b))),
            FormKind::Int(i) => Ok(Expr::Const(Value::Int(*i))),
            FormKind::Float(x) => Ok(Expr::Const(Value::Float(*x))),
            FormKind::Str(s) => Ok(Expr::Const(Value::Str(s.clone()))),
            FormKind::Char(c) => Ok(Expr::Const(Value::Char(*c))),
            FormKind::Keyword(k) => Ok(Expr::Const(Value::Keyword(k.clone()))),
            FormKind::Regex(src) => forms::regex_literal(src, f.pos),
            FormKind::Symbol(s) => self.resolve_symbol(s, f.pos),
            FormKind::Vector(items) => self.collection(items, f.pos, Expr::Vector, Value::vector),
            FormKind::Set(items) => self.collection(items, f.pos, Expr::Set, Value::set),
            FormKind::Map(items) => self.map_literal(items),
            FormKind::List(items) => self.list(items, f.pos, tail),
        }
    }

    fn no_tail(&mut self, f: &Form) -> AResult {
        let saved = self.recur.take();
        let r = self.analyze(f, false);
        self.recur = saved;
        r
    }

    pub(crate) fn analyze_all(&mut self, forms: &[Form]) -> AResult<Vec<Expr>> {
        forms.iter().map(|f| self.no_tail(f)).collect()
    }

    /// A vector or set literal; constant when every element is.
    fn collection(
        &mut self,
        items: &[Form],
        _pos: Pos,
        build: fn(Vec<Expr>) -> Expr,
        konst: fn(Vec<Value>) -> Value,
    ) -> AResult {
        let exprs = self.analyze_all(items)?;
        if exprs.iter().all(|e| matches!(e, Expr::Const(_))) {
            let vals = exprs
                .into_iter()
                .filter_map(|e| {
                    if let Expr::Const(v) = e {
                        Some(v)
                    } else {
                        None
                    }
                })
                .collect();
            return Ok(Expr::Const(konst(vals)));
        }
        Ok(build(exprs))
    }

    fn map_literal(&mut self, items: &[Form]) -> AResult {
        let exprs = self.analyze_all(items)?;
        let mut pairs = Vec::with_capacity(exprs.len() / 2);
        let mut it = exprs.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            pairs.push((k, v));
        }
        if pairs
            .iter()
            .all(|(k, v)| matches!((k, v), (Expr::Const(_), Expr::Const(_))))
        {
            let m = pairs.into_iter().filter_map(|(k, v)| match (k, v) {
                (Expr::Const(k), Expr::Const(v)) => Some((k, v)),
                _ => None,
            });
            return Ok(Expr::Const(Value::map(m.collect())));
        }
        if distinct_const_keys(&pairs) {
            let keys = pairs.iter().filter_map(|(k, _)| match k {
                Expr::Const(k) => Some(k.clone()),
                _ => None,
            });
            let shape = crate::value::Shape::new(keys.collect());
            return Ok(Expr::Record(pairs, shape));
        }
        Ok(Expr::Map(pairs))
    }

    /// `(head args...)`: a special form, a macro, a tool call, a method call, or a call.
    fn list(&mut self, items: &[Form], pos: Pos, tail: bool) -> AResult {
        let Some(head) = items.first() else {
            return Ok(Expr::Const(Value::list(Vec::new())));
        };
        let args = &items[1..];
        if let Some(name) = head.as_sym()
            && (!self.is_local(name) || forms::is_special_form(name))
        {
            if let Some(expanded) = macros::expand(self, name, args, pos)? {
                return self.analyze(&expanded, tail);
            }
            if let Some(e) = self.special(name, args, pos, tail)? {
                return Ok(e);
            }
            if let Some(call) = constructor(name, args, pos) {
                return self.analyze(&call, tail);
            }
            if let Some(tool) = name.strip_prefix("tool/") {
                return self.tool_call(tool, args, pos);
            }
            if let Some(method) = name
                .strip_prefix('.')
                .filter(|m| !m.is_empty() && *m != ".")
            {
                return Ok(Expr::Method(Rc::from(method), self.analyze_all(args)?, pos));
            }
        }
        let mut f = self.no_tail(head)?;
        let mut args = self.analyze_all(args)?;
        fold::fold_call_args(&f, &mut args);
        fuse::fuse_call(&mut f, &mut args);
        if let Expr::Builtin(builtin) = f
            && let builtins::Fast::Prim(op) = builtin.fast
            && args.len() == 2
            && let (Some(y), Some(x)) = (args.pop(), args.pop())
        {
            let shape = crate::eval::prim::Shape::of(&x, &y);
            let fixed = match (shape, &x, &y) {
                (
                    crate::eval::prim::Shape::FieldConst | crate::eval::prim::Shape::SlotConst,
                    _,
                    Expr::Const(c),
                )
                | (crate::eval::prim::Shape::ConstField, Expr::Const(c), _) => {
                    crate::eval::prim::Fixed::of(op, c)
                }
                _ => crate::eval::prim::Fixed::No,
            };
            return Ok(Expr::Prim(Box::new(PrimCall {
                op,
                builtin,
                x,
                y,
                pos,
                shape,
                fixed,
            })));
        }
        let name: Rc<str> = Rc::from(head.describe());
        Ok(Expr::Call(Box::new(Call {
            f,
            args,
            pos,
            name,
            hint: Default::default(),
        })))
    }

    fn tool_call(&mut self, tool: &str, args: &[Form], pos: Pos) -> AResult {
        self.check_tool(tool, pos)?;
        Ok(Expr::Tool(Rc::from(tool), self.analyze_all(args)?, pos))
    }

    /// Unknown tools are an analysis error naming the available ones.
    pub(crate) fn check_tool(&self, tool: &str, pos: Pos) -> AResult<()> {
        if self.tools.iter().any(|t| t == tool) {
            return Ok(());
        }
        let available = if self.tools.is_empty() {
            "no tools are available".to_string()
        } else {
            format!("available: {}", self.tools.join(", "))
        };
        let mut e = err(pos, format!("unknown tool `{tool}`"), Some(available));
        e.unknown_tool = true;
        Err(e)
    }

    pub(crate) fn is_local(&self, name: &str) -> bool {
        self.scopes.iter().rev().any(|s| {
            s.locals.iter().any(|(n, _)| &**n == name) || s.self_name.as_deref() == Some(name)
        })
    }

    /// Resolves a symbol in value position.
    fn resolve_symbol(&mut self, s: &crate::value::Text, pos: Pos) -> AResult {
        let depth = self.scopes.len() - 1;
        if let Some(e) = self.resolve_local(s, depth) {
            return Ok(e);
        }
        if let Some(e) = forms::special_symbol(s) {
            return Ok(e);
        }
        if self.globals.contains(&**s) {
            return Ok(Expr::Global(Rc::from(&**s), pos));
        }
        if let Some((ns, name)) = s
            .split_once('/')
            .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
        {
            if let Some(v) = builtins::interop::constant(ns, name) {
                return Ok(Expr::Const(v));
            }
            match ns {
                "data" | "ctx" => return Ok(Expr::Ctx(Rc::from(name))),
                "Math" if name == "PI" => {
                    return Ok(Expr::Const(Value::Float(std::f64::consts::PI)));
                }
                "Math" if name == "E" => return Ok(Expr::Const(Value::Float(std::f64::consts::E))),
                // `memory/put` and `memory/get` are functions; any other name reads a definition.
                "memory" | "mem" if builtins::lookup(Some(ns), name).found().is_none() => {
                    return Ok(Expr::Memory(Rc::from(name)));
                }
                "user" if self.globals.contains(name) => {
                    return Ok(Expr::Global(Rc::from(name), pos));
                }
                _ => {}
            }
            return match builtins::lookup(Some(ns), name) {
                Lookup::Found(b) => Ok(Expr::Builtin(b)),
                Lookup::NotInNs(suggest) => Err(err(pos, format!("`{s}` does not exist"), suggest)),
                Lookup::UnknownNs => Err(hints::unbound(s, pos, self.candidates())),
            };
        }
        match builtins::lookup(None, s) {
            Lookup::Found(b) => Ok(Expr::Builtin(b)),
            _ => Err(hints::unbound(s, pos, self.candidates())),
        }
    }

    /// Everything in scope, for "did you mean" suggestions.
    fn candidates(&self) -> Vec<String> {
        let mut c: Vec<String> = self.globals.iter().map(|g| g.to_string()).collect();
        for s in &self.scopes {
            c.extend(s.locals.iter().map(|(n, _)| n.to_string()));
        }
        c.extend(builtins::core_names().map(str::to_string));
        c
    }

    /// Finds a local in scope `depth` or an enclosing one, adding captures on the way in.
    fn resolve_local(&mut self, name: &str, depth: usize) -> Option<Expr> {
        let scope = self.scopes.get(depth)?;
        if let Some((_, slot)) = scope.locals.iter().rev().find(|(n, _)| &**n == name) {
            return Some(Expr::Local(*slot));
        }
        if let Some(i) = scope.captures.iter().position(|c| &*c.name == name) {
            return Some(Expr::Capture(u32::try_from(i).ok()?));
        }
        if scope.self_name.as_deref() == Some(name) {
            return Some(Expr::SelfFn);
        }
        if depth == 0 {
            return None;
        }
        let source = self.resolve_local(name, depth - 1)?;
        let scope = self.scopes.get_mut(depth)?;
        scope.captures.push(Capture {
            name: Rc::from(name),
            source,
        });
        Some(Expr::Capture(u32::try_from(scope.captures.len() - 1).ok()?))
    }

    /// Allocates a slot in the current frame for `name` and makes it visible.
    pub(crate) fn bind_local(&mut self, name: &str) -> u32 {
        let slot = self.alloc_slot();
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.push((Rc::from(name), slot));
        }
        slot
    }

    /// Allocates an anonymous slot (for raw loop values, hidden temporaries).
    pub(crate) fn alloc_slot(&mut self) -> u32 {
        let Some(scope) = self.scopes.last_mut() else {
            return 0;
        };
        let slot = scope.next_slot;
        scope.next_slot += 1;
        scope.frame_size = scope.frame_size.max(scope.next_slot);
        slot
    }

    /// Remembers the current locals and slot counter, to restore when a binding form ends.
    pub(crate) fn mark(&self) -> (usize, u32) {
        self.scopes
            .last()
            .map_or((0, 0), |s| (s.locals.len(), s.next_slot))
    }

    pub(crate) fn reset(&mut self, mark: (usize, u32)) {
        if let Some(s) = self.scopes.last_mut() {
            s.locals.truncate(mark.0);
            // Slots are not reused: a closure created inside may still read them via captures
            // copied at creation, so reuse would be safe, but distinct slots keep frames simple.
            let _ = mark.1;
        }
    }

    pub(crate) fn fresh_name(&mut self, base: &str) -> String {
        self.gensym += 1;
        format!(" {base}{}", self.gensym)
    }

    pub(crate) fn define_global(&mut self, name: &str) {
        self.globals.insert(Rc::from(name));
    }

    pub(crate) fn push_scope(&mut self, self_name: Option<Rc<str>>) {
        self.scopes.push(Scope {
            self_name,
            ..Scope::default()
        });
    }

    /// Ends a fn scope: its frame size and the capture sources (evaluated in the outer scope).
    pub(crate) fn pop_scope(&mut self) -> (u32, Vec<Expr>) {
        let s = self.scopes.pop().unwrap_or_default();
        (
            s.frame_size,
            s.captures.into_iter().map(|c| c.source).collect(),
        )
    }

    /// Analyzes `f` as the body of a recur target taking `arity` values.
    pub(crate) fn with_recur(
        &mut self,
        arity: usize,
        f: impl FnOnce(&mut Self) -> AResult,
    ) -> AResult {
        let saved = self.recur.replace(RecurTarget { arity });
        let r = f(self);
        self.recur = saved;
        r
    }

    pub(crate) fn recur_arity(&self) -> Option<usize> {
        self.recur.map(|r| r.arity)
    }

    /// Analyzes a body (implicit `do`) whose last form is in tail position if `tail`.
    pub(crate) fn body(&mut self, forms: &[Form], tail: bool) -> AResult {
        match forms {
            [] => Ok(Expr::Const(Value::Nil)),
            [one] => self.analyze(one, tail),
            [init @ .., last] => {
                let mut exprs = self.analyze_all(init)?;
                exprs.push(self.analyze(last, tail)?);
                Ok(Expr::Do(exprs))
            }
        }
    }

    pub(crate) fn analyze_tail(&mut self, f: &Form, tail: bool) -> AResult {
        if tail {
            self.analyze(f, true)
        } else {
            self.no_tail(f)
        }
    }
}

/// Whether every key of a map literal is a constant and no two are equal: such a literal (the
/// usual `{:id x :total y}`) needs no duplicate-key check when evaluated.
fn distinct_const_keys(pairs: &[(Expr, Expr)]) -> bool {
    let mut seen = std::collections::HashSet::new();
    pairs.iter().all(|(k, _)| match k {
        Expr::Const(k) => seen.insert(k),
        _ => false,
    })
}

/// `(Class. args)` or `(new Class args)` for a class with a `new` entry (`java.util.Date`):
/// rewritten to the call `(Class/new args)`. Any other class stays unresolved.
fn constructor(name: &str, args: &[Form], pos: Pos) -> Option<Form> {
    let (class, args) = match name.strip_suffix('.') {
        Some(class) if !class.is_empty() && !class.starts_with('.') => (class, args),
        _ if name == "new" => (args.first()?.as_sym()?, args.get(1..)?),
        _ => return None,
    };
    builtins::lookup(Some(class), "new").found()?;
    let mut items = vec![Form::sym(&format!("{class}/new"), pos)];
    items.extend_from_slice(args);
    Some(Form::list(items, pos))
}
