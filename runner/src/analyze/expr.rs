//! The analyzer's output: a resolved expression tree.
//!
//! Symbols are resolved before evaluation: locals to frame slots, closed-over values to capture
//! indexes, builtins to their table entry, user definitions to global names. Destructuring is
//! compiled to `Pattern`s that write frame slots.

use crate::builtins::BuiltinDef;
use crate::error::Pos;
use crate::value::Value;
use std::rc::Rc;

/// An analyzed expression.
#[derive(Debug)]
pub enum Expr {
    Const(Value),
    /// A slot of the current frame.
    Local(u32),
    /// A value captured by the current closure.
    Capture(u32),
    /// The current named fn itself (self-recursion).
    SelfFn,
    /// A user definition (`def`), looked up when evaluated.
    Global(Rc<str>, Pos),
    Builtin(&'static BuiltinDef),
    /// `data/k` and `ctx/k`: key `k` of the context.
    Ctx(Rc<str>),
    /// `memory/k` / `mem/k`: user definition `k`, nil when absent.
    Memory(Rc<str>),
    /// `*1` `*2` `*3` (0-based).
    History(usize),
    Vector(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Set(Vec<Expr>),
    If(Box<(Expr, Expr, Expr)>),
    Do(Vec<Expr>),
    Let(Box<Let>),
    Loop(Box<Loop>),
    /// `recur` with new values for the innermost loop or fn's raw slots.
    Recur(Vec<Expr>, Pos),
    Fn(Rc<FnTemplate>, Vec<Expr>),
    Call(Box<Call>),
    Def(Rc<str>, Box<Expr>),
    /// `defonce`: defines only when the name has no value yet.
    DefOnce(Rc<str>, Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Case(Box<Case>),
    Try(Box<Try>),
    Throw(Box<Expr>, Pos),
    For(Box<For>),
    /// `(tool/name arg)` or `(call "name" arg)`.
    Tool(Rc<str>, Vec<Expr>, Pos),
    /// `(call name-expr arg)` where the name is computed.
    DynTool(Vec<Expr>, Pos),
    /// `(.method target args...)`.
    Method(Rc<str>, Vec<Expr>, Pos),
}

/// A function call.
#[derive(Debug)]
pub struct Call {
    pub f: Expr,
    pub args: Vec<Expr>,
    pub pos: Pos,
    /// What the call is, for error messages (`map`, `my-fn`).
    pub name: Rc<str>,
}

#[derive(Debug)]
pub struct Let {
    pub bindings: Vec<(Pattern, Expr)>,
    pub body: Expr,
}

#[derive(Debug)]
pub struct Loop {
    /// Raw slots the loop values live in (recur writes these).
    pub slots: Vec<u32>,
    pub inits: Vec<Expr>,
    /// Destructuring applied to the raw slots on every iteration.
    pub patterns: Vec<(Pattern, u32)>,
    pub body: Expr,
}

/// A destructuring pattern.
#[derive(Debug)]
pub enum Pattern {
    Bind(u32),
    Seq {
        items: Vec<Pattern>,
        rest: Option<Box<Pattern>>,
        as_slot: Option<u32>,
    },
    Map {
        entries: Vec<MapEntryPat>,
        as_slot: Option<u32>,
    },
}

#[derive(Debug)]
pub struct MapEntryPat {
    pub key: Value,
    pub pattern: Pattern,
    pub default: Option<Expr>,
}

/// A compiled `fn`: its arities, fixed at analysis time; captures are filled at creation.
#[derive(Debug)]
pub struct FnTemplate {
    pub name: Option<Rc<str>>,
    pub arities: Vec<Arity>,
}

#[derive(Debug)]
pub struct Arity {
    /// Required positional parameters.
    pub required: usize,
    pub variadic: bool,
    pub frame_size: u32,
    /// Destructuring of each raw argument slot (0..required, then the rest slot).
    pub patterns: Vec<(Pattern, u32)>,
    pub body: Expr,
}

#[derive(Debug)]
pub struct Case {
    pub subject: Expr,
    pub clauses: Vec<(Vec<Value>, Expr)>,
    pub default: Option<Expr>,
    pub pos: Pos,
}

#[derive(Debug)]
pub struct Try {
    pub body: Expr,
    /// Slot bound to the caught exception, and the handler.
    pub catch: Option<(u32, Expr)>,
    pub finally: Option<Expr>,
}

/// `for` / `doseq`: nested iteration clauses then a body.
#[derive(Debug)]
pub struct For {
    pub clauses: Vec<ForClause>,
    pub body: Expr,
    /// `doseq` returns nil and keeps nothing.
    pub collect: bool,
    pub pos: Pos,
}

#[derive(Debug)]
pub enum ForClause {
    Bind(Pattern, Expr),
    Let(Vec<(Pattern, Expr)>),
    When(Expr),
    While(Expr),
}
