//! `subseq` and `rsubseq`: a range of a sorted map or set.
//!
//! Sorted collections order by `compare` (DIV-11), so a range test is one of the builtins
//! `< <= > >=` applied to `(compare key bound)` and 0, exactly as Clojure applies it to the
//! collection's comparator; no program function runs, and the walk charges one step per element.
//! Which empty result is nil and which is `()` follows Clojure's definitions: a range that
//! starts by seeking (`subseq` with `>`/`>=`, `rsubseq` with `<`/`<=`, and both five-argument
//! forms) can be nil, one that takes from the start is `()`.

use super::BuiltinDef;
use super::math::compare;
use crate::def;
use crate::error::{EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::{MapImpl, SetImpl, Value};

pub static TABLE: &[BuiltinDef] = &[
    def!(
        "subseq",
        3,
        5,
        "The items of a sorted coll whose keys pass test (< <= > >=) against key, ascending.",
        "(subseq (sorted-set 1 2 3 4) > 2) ;=> (3 4)",
        |i, a| range(i, &a, false)
    ),
    def!(
        "rsubseq",
        3,
        5,
        "As subseq, in descending order.",
        "(rsubseq (sorted-set 1 2 3 4) < 3) ;=> (2 1)",
        |i, a| range(i, &a, true)
    ),
];

/// A range test: which orderings of `(compare key bound)` it accepts.
#[derive(Clone, Copy)]
enum Test {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Test {
    fn of(v: &Value, op: &str) -> EvalResult<Test> {
        match v {
            Value::Builtin(b) => match b.name {
                "<" => Ok(Test::Lt),
                "<=" => Ok(Test::Le),
                ">" => Ok(Test::Gt),
                ">=" => Ok(Test::Ge),
                _ => Err(super::expected(op, "one of < <= > >= as the test", v)),
            },
            _ => Err(super::expected(op, "one of < <= > >= as the test", v)),
        }
    }

    fn holds(self, ord: i64) -> bool {
        match self {
            Test::Lt => ord < 0,
            Test::Le => ord <= 0,
            Test::Gt => ord > 0,
            Test::Ge => ord >= 0,
        }
    }

    /// True for the tests whose range begins by seeking in the walk's direction.
    fn seeks(self, reverse: bool) -> bool {
        matches!(self, Test::Gt | Test::Ge) != reverse
    }
}

/// The items of a sorted collection in ascending order, each with its key.
fn sorted_items(v: &Value, op: &str) -> EvalResult<Vec<(Value, Value)>> {
    match v {
        Value::Map(m) if matches!(**m, MapImpl::Sorted(_)) => Ok(m
            .iter()
            .map(|(k, x)| (k.clone(), Value::vector([k.clone(), x.clone()])))
            .collect()),
        Value::Set(s) if matches!(**s, SetImpl::Sorted(_)) => {
            Ok(s.iter().map(|x| (x.clone(), x.clone())).collect())
        }
        other => Err(super::expected(op, "a sorted map or set", other)),
    }
}

fn range(i: &mut Interp<'_>, a: &[Value], reverse: bool) -> EvalResult {
    let op = if reverse { "rsubseq" } else { "subseq" };
    let mut tests = vec![(Test::of(&a[1], op)?, &a[2])];
    match a.get(3..) {
        Some([t, k]) => tests.push((Test::of(t, op)?, k)),
        Some([]) | None => {}
        Some(_) => {
            return Err(EvalError::arg(
                op,
                format!("{op} takes a test and a key, or two of each"),
            ));
        }
    }
    let mut items = sorted_items(&a[0], op)?;
    i.tick_n(items.len() as u64)?;
    if reverse {
        items.reverse();
    }
    let mut out = Vec::new();
    for (k, x) in items {
        let mut keep = true;
        for (t, bound) in &tests {
            let ord = compare(&k, bound).map_err(|e| EvalError::type_err(op, e.to_string()))?;
            keep &= t.holds(ord);
        }
        if keep {
            out.push(x);
        }
    }
    // Three arguments: an empty seeking range is nil (the seek found nothing, or only the
    // bound itself, which the strict test then drops). Five: nil when the seek finds nothing.
    let nil = match tests.len() {
        1 => tests[0].0.seeks(reverse),
        _ => nothing_from(&a[0], &tests, reverse),
    };
    Ok(if out.is_empty() && nil {
        Value::Nil
    } else {
        Value::list(out)
    })
}

/// Whether the seek to the range's start bound finds no element (so Clojure answers nil).
fn nothing_from(coll: &Value, tests: &[(Test, &Value)], reverse: bool) -> bool {
    // The seek bound: the start test's key (the end test's for `rsubseq` of five arguments).
    let (_, bound) = if reverse && tests.len() == 2 {
        tests[1]
    } else {
        tests[0]
    };
    let Ok(items) = sorted_items(coll, "subseq") else {
        return true;
    };
    !items.iter().any(|(k, _)| match compare(k, bound) {
        Ok(ord) if reverse => ord <= 0,
        Ok(ord) => ord >= 0,
        Err(_) => false,
    })
}
