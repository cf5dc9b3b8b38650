//! Builtin functions, declared in one table per namespace.
//!
//! Each entry carries its name, arity, a one-line doc and an example; the registry maps every
//! alias of a namespace (`clojure.string/`, `str/`, `string/`) to its table. Arity is checked
//! here, once, before a builtin runs, so implementations may index their arguments freely up to
//! `min` (they still use `get` for optional ones).

pub mod bits;
pub mod coll;
pub mod compat;
pub mod core;
pub mod format;
mod groups;
pub mod hof;
pub mod hofseq;
pub mod interop;
pub mod io;
pub mod json;
mod keyed;
pub mod maps;
pub mod math;
mod msort;
pub mod pred;
pub mod ptc;
mod refind;
pub mod regex;
pub mod seqs;
pub mod set;
pub mod sorted;
pub mod string;
pub mod time;
pub mod walk;
pub mod xform;

use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

pub use hof::NativeFn;
pub(crate) use keyed::put_entry;
pub use math::{add2, compare_total, num_cmp};

/// A builtin's implementation: owned arguments, so `conj`/`assoc` can update in place.
pub type BuiltinFn = fn(&mut Interp<'_>, Vec<Value>) -> EvalResult;

/// An allocation-free entry point for the commonest argument types of a hot builtin.
///
/// It answers `None` for anything it does not handle, and the evaluator then calls `f` with an
/// argument vector; when it answers, the answer is the one `f` would give (a test checks this
/// for every fast path over a grid of sample values).
#[derive(Clone, Copy, Debug)]
pub enum Fast {
    None,
    /// Called with exactly one argument.
    One(fn(&Value) -> Option<EvalResult>),
    /// Called with exactly two arguments.
    Two(fn(&Value, &Value) -> Option<EvalResult>),
    /// A number operation with an inline path (see `eval::prim`); also what the analyzer turns
    /// `(op x y)` into.
    Prim(crate::eval::prim::Prim),
    /// Called, by a call written in the source, with any number of arguments its arity allows,
    /// left where the evaluator put them: on the interpreter's value stack from the index
    /// given (the builtin pops them or leaves them to the caller, who truncates the stack back
    /// after the call). It always answers, as `f` would (a test checks this): a builtin with
    /// three or more arguments (`assoc`, `update`, `str`) gets no argument vector to allocate
    /// and free.
    Stacked(StackFn),
}

/// A builtin's entry for [`Fast::Stacked`]: its arguments are `interp.stack[base..]`.
pub type StackFn = fn(&mut Interp<'_>, usize) -> EvalResult;

/// One builtin: name, arity, doc, example, implementation.
pub struct BuiltinDef {
    pub name: &'static str,
    pub min: u8,
    /// `None` for variadic.
    pub max: Option<u8>,
    pub doc: &'static str,
    pub example: &'static str,
    pub f: BuiltinFn,
    pub fast: Fast,
}

impl std::fmt::Debug for BuiltinDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#builtin[{}]", self.name)
    }
}

/// Declares a table entry: `def!("inc", 1, 1, "doc", "(inc 1) ;=> 2", inc)`; `max` `_` = variadic;
/// an optional last argument is the entry's [`Fast`] path.
#[macro_export]
macro_rules! def {
    (@fast) => {
        $crate::builtins::Fast::None
    };
    (@fast $fast:expr) => {
        $fast
    };
    ($name:expr, $min:expr, _, $doc:expr, $ex:expr, $f:expr $(, $fast:expr)?) => {
        $crate::builtins::BuiltinDef {
            name: $name,
            min: $min,
            max: None,
            doc: $doc,
            example: $ex,
            f: $f,
            fast: $crate::def!(@fast $($fast)?),
        }
    };
    ($name:expr, $min:expr, $max:expr, $doc:expr, $ex:expr, $f:expr $(, $fast:expr)?) => {
        $crate::builtins::BuiltinDef {
            name: $name,
            min: $min,
            max: Some($max),
            doc: $doc,
            example: $ex,
            f: $f,
            fast: $crate::def!(@fast $($fast)?),
        }
    };
}

/// A namespace: its aliases and its tables.
struct Namespace {
    aliases: &'static [&'static str],
    tables: &'static [&'static [BuiltinDef]],
}

const NAMESPACES: &[Namespace] = &[
    Namespace {
        aliases: &["clojure.core", "core"],
        tables: &[
            core::TABLE,
            math::TABLE,
            coll::TABLE,
            hof::TABLE,
            hofseq::TABLE,
            seqs::TABLE,
            maps::TABLE,
            sorted::TABLE,
            compat::TABLE,
            time::CORE_TABLE,
            pred::TABLE,
            bits::TABLE,
            xform::TABLE,
            io::TABLE,
            string::CORE_TABLE,
            regex::TABLE,
            interop::TABLE,
            format::TABLE,
            ptc::TABLE,
        ],
    },
    Namespace {
        aliases: &["clojure.string", "str", "string"],
        tables: &[string::TABLE],
    },
    Namespace {
        aliases: &["clojure.set", "set"],
        tables: &[set::TABLE],
    },
    Namespace {
        aliases: &["clojure.walk", "walk"],
        tables: &[walk::TABLE],
    },
    Namespace {
        aliases: &["json"],
        tables: &[json::TABLE],
    },
    Namespace {
        aliases: &["regex"],
        tables: &[regex::TABLE],
    },
    Namespace {
        aliases: &["memory", "mem"],
        tables: &[io::MEMORY_TABLE],
    },
    Namespace {
        aliases: &["Math"],
        tables: &[math::MATH_TABLE],
    },
    Namespace {
        aliases: &["LocalDate", "java.time.LocalDate"],
        tables: &[time::LOCAL_DATE_TABLE],
    },
    Namespace {
        aliases: &["Instant", "java.time.Instant"],
        tables: &[time::INSTANT_TABLE],
    },
    Namespace {
        aliases: &["java.util.Date"],
        tables: &[time::DATE_TABLE],
    },
    Namespace {
        aliases: &["Duration", "java.time.Duration"],
        tables: &[time::DURATION_TABLE],
    },
    Namespace {
        aliases: &["System", "java.lang.System"],
        tables: &[time::SYSTEM_TABLE],
    },
    Namespace {
        aliases: &[
            "Integer",
            "Long",
            "Double",
            "Boolean",
            "java.lang.Integer",
            "java.lang.Long",
            "java.lang.Double",
            "java.lang.Boolean",
            "Float",
            "java.lang.Float",
        ],
        tables: &[interop::PARSE_TABLE],
    },
];

/// What a name resolved to.
#[derive(Debug)]
pub enum Lookup {
    Found(&'static BuiltinDef),
    /// The namespace exists but has no such name; a "did you mean" hint.
    NotInNs(Option<String>),
    UnknownNs,
}

impl Lookup {
    pub fn found(self) -> Option<&'static BuiltinDef> {
        match self {
            Lookup::Found(b) => Some(b),
            _ => None,
        }
    }
}

type Registry = HashMap<&'static str, HashMap<&'static str, &'static BuiltinDef>>;

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| {
        let mut reg: Registry = HashMap::new();
        for ns in NAMESPACES {
            let mut names = HashMap::new();
            for table in ns.tables {
                for b in table.iter() {
                    names.insert(b.name, b);
                }
            }
            for alias in ns.aliases {
                reg.insert(alias, names.clone());
            }
        }
        reg
    })
}

/// Resolves `ns/name` (or a bare name in clojure.core).
pub fn lookup(ns: Option<&str>, name: &str) -> Lookup {
    let ns_name = ns.unwrap_or("clojure.core");
    let Some(table) = registry().get(ns_name) else {
        return Lookup::UnknownNs;
    };
    match table.get(name) {
        Some(b) => Lookup::Found(b),
        None => {
            let s = crate::analyze::hints::suggest(name, table.keys().copied())
                .map(|s| format!("did you mean `{ns_name}/{s}`?"));
            Lookup::NotInNs(s.or_else(|| Some(format!("`{ns_name}` has no `{name}`"))))
        }
    }
}

/// Every clojure.core name, for suggestions.
pub fn core_names() -> impl Iterator<Item = &'static str> {
    registry()
        .get("clojure.core")
        .into_iter()
        .flat_map(|t| t.keys().copied())
}

/// Every namespace alias with its entries, for documentation.
pub fn all_entries() -> Vec<(&'static str, &'static BuiltinDef)> {
    let mut out = Vec::new();
    for ns in NAMESPACES {
        for t in ns.tables {
            out.extend(t.iter().map(|b| (ns.aliases[0], b)));
        }
    }
    out
}

/// Calls a builtin after checking its arity. Out of line, as it was before the check moved to
/// [`check_arity`]: inlined into its callers it changed their code (`call1`, the prims'
/// fallbacks) for no gain.
#[inline(never)]
pub fn call(interp: &mut Interp<'_>, b: &'static BuiltinDef, args: Vec<Value>) -> EvalResult {
    check_arity(b, args.len())?;
    (b.f)(interp, args)
}

/// The one arity check of a builtin called with `n` arguments, whichever way they are passed.
#[inline]
pub(crate) fn check_arity(b: &BuiltinDef, n: usize) -> EvalResult<()> {
    if n < usize::from(b.min) || b.max.is_some_and(|m| n > usize::from(m)) {
        return Err(arity_error(b, n));
    }
    Ok(())
}

/// The arity error, built out of line so that the check inlined into its callers stays small.
#[cold]
#[inline(never)]
fn arity_error(b: &BuiltinDef, n: usize) -> EvalError {
    EvalError::new(
        ErrorKind::ArityError,
        b.name,
        format!("wrong number of args ({n}) passed to {}", b.name),
    )
}

/// A [`Fast::Stacked`] builtin's arguments taken off the value stack into the vector its
/// general entry takes (for the arguments it has no path of its own for).
pub(crate) fn stack_args(interp: &mut Interp<'_>, base: usize) -> Vec<Value> {
    interp.stack.drain(base.min(interp.stack.len())..).collect()
}

/// Calls a builtin with one argument: its fast path when it has one that takes the argument,
/// else the general entry.
pub fn call1(interp: &mut Interp<'_>, b: &'static BuiltinDef, x: Value) -> EvalResult {
    if let Fast::One(g) = b.fast
        && let Some(r) = g(&x)
    {
        return r;
    }
    if let Fast::Prim(op) = b.fast {
        return call1_prim(interp, b, op, x);
    }
    call(interp, b, vec![x])
}

/// [`call1`] of a number op (`(- x)`): its one-operand answer, else the general entry. Out of
/// line, so that `call1`'s usual path stays as small as it was.
#[inline(never)]
fn call1_prim(
    interp: &mut Interp<'_>,
    b: &'static BuiltinDef,
    op: crate::eval::prim::Prim,
    x: Value,
) -> EvalResult {
    match op.apply1(&x) {
        Some(r) => r,
        None => call(interp, b, vec![x]),
    }
}

/// Calls a builtin with two arguments, as [`call1`] does with one.
#[inline]
pub fn call2(interp: &mut Interp<'_>, b: &'static BuiltinDef, x: Value, y: Value) -> EvalResult {
    let fast = match b.fast {
        Fast::Two(g) => g(&x, &y),
        Fast::Prim(op) => op.apply(&x, &y),
        _ => None,
    };
    match fast {
        Some(r) => r,
        None => call(interp, b, vec![x, y]),
    }
}

/// Lets go of `v`, the kinds a builtin usually holds at the end of a call (a number, a text
/// or keyword, a map, a native fn) given back inline: `Value`'s own drop is out of line.
#[inline(always)]
pub(crate) fn release(v: Value) {
    match v {
        v if v.holds_nothing() => std::mem::forget(v),
        Value::Str(t) | Value::Keyword(t) => drop(t),
        Value::Map(m) => drop(m),
        Value::Native(n) => drop(n),
        v => drop(v),
    }
}

/// Calls a clojure.core builtin by name (for builtins defined in terms of others).
pub fn call_named(interp: &mut Interp<'_>, name: &str, args: Vec<Value>) -> EvalResult {
    match lookup(None, name) {
        Lookup::Found(b) => call(interp, b, args),
        _ => Err(EvalError::type_err(name, format!("no builtin `{name}`"))),
    }
}

/// Keywords, maps, sets and vectors used as functions.
pub fn apply_data(_interp: &mut Interp<'_>, f: &Value, args: Vec<Value>) -> EvalResult {
    let n = args.len();
    let mut it = args.into_iter();
    let (Some(arg), default) = (it.next(), it.next()) else {
        return Err(EvalError::new(
            ErrorKind::ArityError,
            "invoke",
            format!(
                "wrong number of args ({n}) passed to {}",
                crate::print::pr_str_short(f)
            ),
        ));
    };
    if n > 2 {
        return Err(EvalError::new(
            ErrorKind::ArityError,
            "invoke",
            format!(
                "wrong number of args ({n}) passed to {}",
                crate::print::pr_str_short(f)
            ),
        ));
    }
    let found = match f {
        Value::Keyword(_) => coll::get(&arg, f),
        Value::Map(_) => coll::get(f, &arg),
        Value::Set(s) => s.contains(&arg).then_some(arg),
        Value::Vector(v) => match arg {
            Value::Int(i) => {
                return usize::try_from(i)
                    .ok()
                    .and_then(|i| v.get(i).cloned())
                    .ok_or_else(|| {
                        EvalError::new(
                            ErrorKind::IndexOutOfBounds,
                            "nth",
                            format!("index {i} out of bounds for vector of {}", v.len()),
                        )
                    });
            }
            _ => {
                return Err(EvalError::type_err(
                    "invoke",
                    "a vector called as a function needs an integer index",
                ));
            }
        },
        _ => None,
    };
    Ok(found.or(default).unwrap_or_default())
}

/// Argument type error helper: "`op` expects a <what>, got <type>".
pub fn expected(op: &str, what: &str, got: &Value) -> EvalError {
    EvalError::type_err(
        op,
        format!(
            "{op} expects {what}, got {} {}",
            got.type_name(),
            crate::print::pr_str_short(got)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::testing::NoTools;
    use crate::value::MapImpl;

    fn samples() -> Vec<Value> {
        let mut m = MapImpl::default();
        m.insert(Value::kw("a"), Value::Int(1));
        vec![
            Value::Nil,
            Value::Bool(false),
            Value::Bool(true),
            Value::Int(0),
            Value::Int(1),
            Value::Int(-7),
            Value::Int(7),
            Value::Int(i64::MAX),
            Value::Int(i64::MIN),
            Value::Float(2.5),
            Value::Float(-0.0),
            Value::Float(f64::NAN),
            // Equal to `Int(1)` as a number, not by `=`; infinities compare with everything.
            Value::Float(1.0),
            Value::Float(f64::INFINITY),
            Value::Float(f64::NEG_INFINITY),
            Value::Char('x'),
            Value::str("ab"),
            // Equal text in a second allocation: `=` compares contents, not pointers.
            Value::str("ab"),
            Value::str("abc"),
            Value::kw("a"),
            Value::vector([Value::Int(1), Value::Int(2)]),
            Value::list([Value::Int(3)]),
            Value::vector([]),
            Value::map(m),
            Value::set([Value::Int(1)]),
        ]
    }

    /// What a call answered, comparable: the printed value, or the error's text.
    fn outcome(r: EvalResult) -> String {
        match r {
            Ok(v) => crate::print::pr_str(&v),
            Err(e) => format!("error: {e}"),
        }
    }

    /// What a builtin's fast path answers for `args`, if it answers.
    fn fast_answer(b: &BuiltinDef, args: &[Value]) -> Option<EvalResult> {
        match (b.fast, args) {
            (Fast::One(g), [x]) => g(x),
            (Fast::Two(g), [x, y]) => g(x, y),
            (Fast::Prim(op), [x, y]) => op.apply(x, y),
            _ => None,
        }
    }

    #[test]
    fn every_fast_path_answers_as_the_general_entry() {
        let mut host = NoTools;
        let mut interp = Interp::new(&mut host, &[], ptc_shared::Limits::default());
        let (mut unary, mut binary, mut answered) = (0, 0, 0);
        let grid = samples();
        for (_, b) in all_entries() {
            let arg_lists: Vec<Vec<Value>> = match b.fast {
                Fast::None | Fast::Stacked(_) => continue,
                Fast::One(_) => {
                    unary += 1;
                    grid.iter().map(|x| vec![x.clone()]).collect()
                }
                Fast::Two(_) | Fast::Prim(_) => {
                    binary += 1;
                    grid.iter()
                        .flat_map(|x| grid.iter().map(move |y| vec![x.clone(), y.clone()]))
                        .collect()
                }
            };
            for args in arg_lists {
                if let Some(fast) = fast_answer(b, &args) {
                    answered += 1;
                    let slow = (b.f)(&mut interp, args.clone());
                    assert_eq!(outcome(fast), outcome(slow), "({} {args:?})", b.name);
                }
            }
        }
        assert!(
            unary >= 5 && binary >= 13,
            "fast paths: {unary} unary, {binary} binary"
        );
        assert!(
            answered > 1000,
            "the grid reached the fast paths {answered} times"
        );
    }

    /// Every argument list of `n` values drawn from `grid`.
    fn lists_of(grid: &[Value], n: usize) -> Vec<Vec<Value>> {
        (0..n).fold(vec![Vec::new()], |lists, _| {
            lists
                .iter()
                .flat_map(|l| {
                    grid.iter().map(move |x| {
                        let mut l = l.clone();
                        l.push(x.clone());
                        l
                    })
                })
                .collect()
        })
    }

    /// A stacked entry, given its arguments on the value stack above a value that is not its
    /// own, answers as the vector entry (value or error, and steps) and leaves that value.
    #[test]
    fn every_stacked_entry_answers_as_the_general_entry() {
        let mut host = NoTools;
        let mut interp = Interp::new(&mut host, &[], ptc_shared::Limits::default());
        let grid = samples();
        // For three or more arguments, a grid small enough to take every list of, its most
        // useful values first: a map with key `:a` and that key, fns, an index, a vector.
        let fns = ["+", "inc", "str"].map(|f| lookup(None, f).found().map(Value::Builtin));
        let [add, inc, str_fn] = fns.map(Option::unwrap_or_default);
        let short = [
            &grid[23], &grid[19], &add, &grid[3], &inc, &grid[20], &grid[16], &grid[9],
        ]
        .map(Value::clone)
        .into_iter()
        .chain([str_fn, grid[4].clone()])
        .collect::<Vec<_>>();
        let mut stacked = 0;
        for (_, b) in all_entries() {
            let Fast::Stacked(g) = b.fast else { continue };
            stacked += 1;
            let max = usize::from(b.max.unwrap_or(5).min(5));
            for n in usize::from(b.min)..=max {
                let from = if n < 3 {
                    &grid[..]
                } else {
                    &short[..[8, 7, 5][n - 3]]
                };
                for args in lists_of(from, n) {
                    let before = interp.steps;
                    let slow = outcome((b.f)(&mut interp, args.clone()));
                    let slow_steps = interp.steps - before;
                    interp.stack.push(Value::Int(-1));
                    let base = interp.stack.len();
                    interp.stack.extend(args.iter().cloned());
                    let before = interp.steps;
                    let fast = outcome(g(&mut interp, base));
                    assert_eq!(fast, slow, "({} {args:?})", b.name);
                    assert_eq!(interp.steps - before, slow_steps, "({} {args:?})", b.name);
                    interp.stack.truncate(base);
                    assert_eq!(
                        interp.stack.pop().map(|v| outcome(Ok(v))),
                        Some("-1".into())
                    );
                    assert!(interp.stack.is_empty());
                }
            }
        }
        assert!(stacked >= 3, "{stacked} stacked entries");
    }
}
