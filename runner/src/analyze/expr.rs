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
    /// The last read of a slot on every path (see `liveness`): the value is moved out, so a
    /// collection held only there reaches `conj`/`assoc` unshared and is updated in place.
    Move(u32),
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
    /// A map literal whose keys are distinct constants; with the shape of its keys when they can
    /// be a record's (scalars, few enough: then the keys are not evaluated).
    Record(Vec<(Expr, Expr)>, Option<std::rc::Rc<crate::value::Shape>>),
    Set(Vec<Expr>),
    If(Box<(Expr, Expr, Expr)>),
    Do(Vec<Expr>),
    Let(Box<Let>),
    Loop(Box<Loop>),
    /// `recur` with new values for the innermost loop or fn's raw slots.
    Recur(Vec<Expr>, Pos),
    Fn(Rc<FnTemplate>, Vec<Expr>),
    Call(Box<Call>),
    /// A two-argument call of a builtin with an inline integer path.
    Prim(Box<PrimCall>),
    Def(Rc<str>, Box<Expr>),
    /// `defonce`: defines only when the name has no value yet.
    DefOnce(Rc<str>, Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Case(Box<Case>),
    Try(Box<Try>),
    Throw(Box<Expr>, Pos),
    /// A fn built once, at analysis, from builder calls on constants (`analyze::fold`).
    Folded(Box<Folded>),
    For(Box<For>),
    /// `(tool/name arg)` or `(call "name" arg)`.
    Tool(Rc<str>, Vec<Expr>, Pos),
    /// `(call name-expr arg)` where the name is computed.
    DynTool(Vec<Expr>, Pos),
    /// `(.method target args...)`.
    Method(Rc<str>, Vec<Expr>, Pos),
}

/// `(op x y)` for a builtin `op` with an inline integer path; other operands go to `builtin`.
#[derive(Debug)]
pub struct PrimCall {
    pub op: crate::eval::prim::Prim,
    pub builtin: &'static BuiltinDef,
    pub x: Expr,
    pub y: Expr,
    pub pos: Pos,
    /// Which operand kinds these are, fixed at analysis (see [`crate::eval::prim::Shape`]).
    pub shape: crate::eval::prim::Shape,
    /// A constant operand decoded for the field and local tests (`Fixed::No` unless one
    /// operand is a field, or the first a local, and the other a constant).
    pub fixed: crate::eval::prim::Fixed,
}

/// A fn of constants built at analysis, and how many builder calls it stands for: each
/// charges its step when the node is evaluated.
#[derive(Debug)]
pub struct Folded {
    pub value: Value,
    pub calls: u32,
}

/// A function call.
#[derive(Debug)]
pub struct Call {
    pub f: Expr,
    pub args: Vec<Expr>,
    pub pos: Pos,
    /// What the call is, for error messages (`map`, `my-fn`).
    pub name: Rc<str>,
    /// For `(:k m)`: where this call last found its key (records of one shape keep their keys
    /// in one order; see [`crate::value::MapImpl::get_keyword_hinted`]).
    pub hint: crate::value::KeyHint,
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
    /// Destructuring of the raw slots of pattern bindings, applied on every iteration.
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
    /// The answer the sequence builtins may give without entering the fn (`eval::prim`).
    pub quick: Option<crate::eval::quick::Quick>,
    /// The answer `apply2` may give without entering the fn (`eval::reducer`).
    pub reducer: Option<crate::eval::reducer::Reducer>,
    /// The body as register code, run by the sequence builtins with the element borrowed
    /// (`eval::code`).
    pub code: Option<crate::eval::code::Code>,
}

impl FnTemplate {
    /// Its one arity when that arity takes exactly `n` plain parameters (no rest, no
    /// destructuring): the fns the analyzer's shortcuts (quick fns, quick reducers, register
    /// code) consider.
    pub fn plain_arity(&self, n: usize) -> Option<&Arity> {
        match self.arities.as_slice() {
            [a] if !a.variadic && a.required == n && a.patterns.is_empty() => Some(a),
            _ => None,
        }
    }
}

#[derive(Debug)]
pub struct Arity {
    /// Required positional parameters.
    pub required: usize,
    pub variadic: bool,
    pub frame_size: u32,
    /// The slot of each positional argument (0..required, then the rest), in order.
    pub raw: Vec<u32>,
    /// Destructuring of the raw slots of pattern parameters.
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
    /// Tried in order; the first whose class matches handles the error.
    pub catches: Vec<Catch>,
    pub finally: Option<Expr>,
}

/// `(catch Class name handler...)`.
#[derive(Debug)]
pub struct Catch {
    pub class: ExClass,
    /// Slot bound to the caught exception.
    pub slot: u32,
    pub handler: Expr,
}

/// The Java exception classes a `catch` may name, as far as PTC-Lisp errors map onto them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExClass {
    /// `Throwable`, `Exception`, `RuntimeException`, `Object`, `:default`: every catchable error.
    Any,
    /// `ExceptionInfo`: values thrown with `ex-info`, and tool errors.
    ExInfo,
    Arithmetic,
    IndexOutOfBounds,
    ClassCast,
    /// `IllegalArgumentException` and its subclasses (`ArityException`, `NumberFormatException`).
    IllegalArgument,
    Arity,
    NumberFormat,
    NullPointer,
    IllegalState,
    UnsupportedOperation,
}

impl ExClass {
    /// The class a `catch` names (package prefixes allowed), or `None` if unknown.
    pub fn from_name(name: &str) -> Option<ExClass> {
        let short = name.rsplit('.').next().unwrap_or(name);
        Some(match short {
            "Throwable" | "Exception" | "RuntimeException" | "Object" | ":default" => ExClass::Any,
            "ExceptionInfo" => ExClass::ExInfo,
            "ArithmeticException" => ExClass::Arithmetic,
            "IndexOutOfBoundsException"
            | "ArrayIndexOutOfBoundsException"
            | "StringIndexOutOfBoundsException" => ExClass::IndexOutOfBounds,
            "ClassCastException" => ExClass::ClassCast,
            "IllegalArgumentException" => ExClass::IllegalArgument,
            "ArityException" => ExClass::Arity,
            "NumberFormatException" => ExClass::NumberFormat,
            "NullPointerException" => ExClass::NullPointer,
            "IllegalStateException" => ExClass::IllegalState,
            "UnsupportedOperationException" => ExClass::UnsupportedOperation,
            _ => return None,
        })
    }
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
