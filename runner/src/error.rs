//! The interpreter's error type and its one mapping onto the wire's `FailReason`.
//!
//! Catchable errors (`try`/`catch` sees them): runtime errors, thrown values, tool errors.
//! Terminal ones: limits (deadline, steps, depth, sizes), `return`/`fail`, and failures the tool
//! host declares terminal. `catchable()` is the single place that decides.

use crate::value::Value;
use ptc_shared::{Fail, FailReason};

/// Source position (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// Kinds of runtime errors (`details.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    TypeError,
    ArityError,
    ArithmeticError,
    IndexOutOfBounds,
    NotCallable,
    ArgumentError,
    NoMatchingClause,
    ParseError,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::TypeError => "type_error",
            ErrorKind::ArityError => "arity_error",
            ErrorKind::ArithmeticError => "arithmetic_error",
            ErrorKind::IndexOutOfBounds => "index_out_of_bounds",
            ErrorKind::NotCallable => "not_callable",
            ErrorKind::ArgumentError => "argument_error",
            ErrorKind::NoMatchingClause => "no_matching_clause",
            ErrorKind::ParseError => "parse_error",
        }
    }
}

/// Which limit was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Timeout,
    Steps,
    Depth,
    Iterations,
    ResultSize,
    Nesting,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::Timeout => "timeout_ms",
            Limit::Steps => "max_steps",
            Limit::Depth => "max_depth",
            Limit::Iterations => "max_iterations",
            Limit::ResultSize => "max_result_bytes",
            Limit::Nesting => "max_nesting",
        }
    }
}

/// An evaluation error: one pointer wide, so that an `EvalResult<Value>` is no bigger than a
/// `Value` (two words, returned in registers: every `eval` returns one). The body is boxed;
/// `Recur`, the one raised per loop iteration, carries nothing and allocates nothing.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Body(Box<ErrorBody>),
    /// Internal control flow: `recur` on its way to its loop or fn. The analyzer only allows
    /// `recur` in tail position, so it never escapes one.
    #[error("recur outside a loop")]
    Recur,
}

/// What an evaluation error is.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ErrorBody {
    #[error("{}", .0.message)]
    Runtime(RuntimeError),
    /// `(throw x)`: the thrown value (an exception from `ex-info`, or anything).
    #[error("{}", thrown_message(.0))]
    Thrown(Value),
    #[error("tool {} failed: {}", .0.tool, .0.message)]
    Tool(ToolError),
    #[error("{0}")]
    ToolNotFound(String),
    #[error("{}", .0.message)]
    Limit(LimitError),
    #[error("return")]
    Return(Value),
    #[error("fail")]
    Fail(Value),
    #[error("{}", .0.message)]
    Terminal(Fail),
}

impl From<ErrorBody> for EvalError {
    fn from(body: ErrorBody) -> EvalError {
        EvalError::Body(Box::new(body))
    }
}

/// A runtime error: what went wrong, in which builtin or form, where.
#[derive(Debug, Clone)]
pub struct RuntimeError {
    pub kind: ErrorKind,
    pub message: String,
    pub op: Option<String>,
    pub pos: Option<Pos>,
}

/// A tool that answered with an error.
#[derive(Debug, Clone)]
pub struct ToolError {
    pub tool: String,
    pub message: String,
}

/// A limit hit.
#[derive(Debug, Clone)]
pub struct LimitError {
    pub limit: Limit,
    pub message: String,
}

fn thrown_message(v: &Value) -> String {
    match v {
        Value::Error(e) => e.message.clone(),
        other => format!("thrown: {}", crate::print::pr_str(other)),
    }
}

pub type EvalResult<T = Value> = Result<T, EvalError>;

// The point of boxing every payload: a result is no bigger than a value (on 64-bit targets).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<EvalResult>() == std::mem::size_of::<Value>());

impl EvalError {
    /// A runtime error of `kind` raised by builtin or form `op`.
    pub fn new(kind: ErrorKind, op: &str, message: impl Into<String>) -> EvalError {
        ErrorBody::Runtime(RuntimeError {
            kind,
            message: message.into(),
            op: Some(op.to_string()),
            pos: None,
        })
        .into()
    }

    pub fn type_err(op: &str, message: impl Into<String>) -> EvalError {
        EvalError::new(ErrorKind::TypeError, op, message)
    }

    pub fn arg(op: &str, message: impl Into<String>) -> EvalError {
        EvalError::new(ErrorKind::ArgumentError, op, message)
    }

    pub fn limit(limit: Limit, message: impl Into<String>) -> EvalError {
        ErrorBody::Limit(LimitError {
            limit,
            message: message.into(),
        })
        .into()
    }

    /// What the error is; `None` for `recur`.
    pub fn body(&self) -> Option<&ErrorBody> {
        match self {
            EvalError::Body(b) => Some(b),
            EvalError::Recur => None,
        }
    }

    /// Whether `try`/`catch` may see this error. Limits and run endings never are.
    pub fn catchable(&self) -> bool {
        matches!(
            self.body(),
            Some(ErrorBody::Runtime(_) | ErrorBody::Thrown(_) | ErrorBody::Tool(_))
        )
    }

    /// Attaches a position if the error has none yet.
    pub fn at(mut self, at: Pos) -> EvalError {
        if let EvalError::Body(b) = &mut self
            && let ErrorBody::Runtime(r) = &mut **b
            && r.pos.is_none()
        {
            r.pos = Some(at);
        }
        self
    }

    /// The single mapping from interpreter errors to the wire's fail reasons.
    pub fn to_fail(&self) -> Fail {
        match self {
            EvalError::Recur => Fail::new(FailReason::EvalError, "recur outside a loop"),
            EvalError::Body(b) => b.to_fail(),
        }
    }
}

impl ErrorBody {
    fn to_fail(&self) -> Fail {
        match self {
            ErrorBody::Runtime(r) => {
                let RuntimeError {
                    kind,
                    message,
                    op,
                    pos,
                } = r;
                let msg = match pos {
                    Some(p) => format!("{message} (at {p})"),
                    None => message.clone(),
                };
                let mut f =
                    Fail::new(FailReason::EvalError, msg).with_detail("kind", kind.as_str());
                f.op = op.clone();
                f
            }
            ErrorBody::Thrown(v) => {
                let f = Fail::new(FailReason::EvalError, thrown_message(v));
                let f = f.with_detail("kind", "thrown");
                match v {
                    Value::Error(e) => match crate::convert::to_shared(&e.data) {
                        Ok(data) if !matches!(data, ptc_shared::Value::Nil) => {
                            f.with_detail("data", data)
                        }
                        _ => f,
                    },
                    _ => f,
                }
            }
            ErrorBody::Tool(t) => {
                let ToolError { tool, message } = t;
                let mut f = Fail::new(
                    FailReason::ToolError,
                    format!("tool {tool} failed: {message}"),
                );
                f.op = Some(tool.clone());
                f
            }
            ErrorBody::ToolNotFound(message) => {
                Fail::new(FailReason::ToolNotFound, message.clone())
            }
            ErrorBody::Limit(l) => {
                let LimitError { limit, message } = l;
                let reason = if *limit == Limit::Timeout {
                    FailReason::Timeout
                } else {
                    FailReason::LimitExceeded
                };
                Fail::new(reason, message.clone()).with_detail("limit", limit.name())
            }
            ErrorBody::Return(_) => Fail::new(FailReason::EvalError, "return outside a run"),
            ErrorBody::Fail(v) => fail_from_value(v),
            ErrorBody::Terminal(f) => f.clone(),
        }
    }
}

/// `(fail v)`: reason `failed`, with the message from `v` (or its `:message`/`:reason` keys) and,
/// for a keyword `:reason`, that keyword as the program's own reason (see `Fail::program`).
fn fail_from_value(v: &Value) -> Fail {
    let text = |key: &str| match v {
        Value::Map(m) => m.get_lenient(&Value::kw(key)).map(crate::print::str_of),
        _ => None,
    };
    let message = match (text("message"), text("reason")) {
        (Some(m), _) => m,
        (None, Some(r)) => r,
        (None, None) => crate::print::str_of(v),
    };
    // Only a keyword names a reason (`:not_found`); a string `:reason` stays a message, as it
    // always was (`{:reason "no data"}`).
    let reason = match v {
        Value::Map(m) => match m.get_lenient(&Value::kw("reason")) {
            Some(k @ Value::Keyword(_)) => Some(crate::print::str_of(k)),
            _ => None,
        },
        _ => None,
    };
    // `:not_found` prints with its colon; the reason is the keyword's name.
    let reason = reason.map(|r| r.trim_start_matches(':').to_string());
    let mut f = Fail::program(message, reason.as_deref());
    if let Ok(data) = crate::convert::to_shared(v) {
        f = f.with_detail("value", data);
    }
    f
}
