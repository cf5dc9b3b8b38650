//! The core macros, expanded into special forms before analysis: `when when-not if-not cond
//! condp if-let when-let if-some when-some when-first -> ->> as-> cond-> cond->> some-> some->>
//! dotimes defn defn- comment assert`. Hidden temporaries use names a program cannot write.

use super::{AResult, AnalysisError, Analyzer, err};
use crate::error::Pos;
use crate::reader::{Form, FormKind};

fn sym(name: &str, pos: Pos) -> Form {
    Form::sym(name, pos)
}

fn list(items: Vec<Form>, pos: Pos) -> Form {
    Form::list(items, pos)
}

fn vector(items: Vec<Form>, pos: Pos) -> Form {
    Form {
        kind: FormKind::Vector(items),
        pos,
    }
}

fn prepend(head: Vec<Form>, rest: &[Form], pos: Pos) -> Form {
    let mut items = head;
    items.extend_from_slice(rest);
    list(items, pos)
}

/// Expands macro `name` applied to `args`, or `None` if `name` is not a macro.
pub(super) fn expand(
    a: &mut Analyzer<'_>,
    name: &str,
    args: &[Form],
    pos: Pos,
) -> AResult<Option<Form>> {
    let need = |n: usize, shape: &str| -> AResult<()> {
        if args.len() < n {
            Err(malformed(name, shape, pos))
        } else {
            Ok(())
        }
    };
    // These expand one argument (or pair) into one nesting level: refuse before building a
    // tree too deep to analyze or even to drop.
    let nests = matches!(name, "cond" | "condp" | "->" | "->>");
    if nests && args.len() > 2 * super::MAX_EXPANDED_DEPTH as usize {
        return Err(err(
            pos,
            format!(
                "({name} ...) with {} forms expands deeper than {} levels",
                args.len(),
                super::MAX_EXPANDED_DEPTH
            ),
            Some("split the chain with `let`".into()),
        ));
    }
    let f = match name {
        "when" => when_like(name, "if", false, args, pos)?,
        "when-not" => when_like(name, "if", true, args, pos)?,
        "if-not" => {
            need(2, "(if-not test then else?)")?;
            let els = args.get(2).cloned().unwrap_or(Form {
                kind: FormKind::Nil,
                pos,
            });
            list(
                vec![sym("if", pos), args[0].clone(), els, args[1].clone()],
                pos,
            )
        }
        "assert" => assert(args, pos)?,
        "cond" => cond(args, pos)?,
        "condp" => condp(a, args, pos)?,
        "if-let" | "if-some" => if_let(a, name, args, pos)?,
        "when-let" => when_like(name, "if-let", false, args, pos)?,
        "when-some" => when_like(name, "if-some", false, args, pos)?,
        "when-first" => when_first(a, args, pos)?,
        "->" | "->>" => thread(name == "->>", args, pos)?,
        "as->" => as_thread(args, pos)?,
        "cond->" | "cond->>" => cond_thread(a, name == "cond->>", args, pos)?,
        "some->" | "some->>" => some_thread(a, name == "some->>", args, pos)?,
        "dotimes" => dotimes(args, pos)?,
        "defn" | "defn-" => defn(args, pos)?,
        "lazy-cat" => prepend(vec![sym("clojure.core/concat", pos)], args, pos),
        "letfn" => letfn(a, args, pos)?,
        "comment" => Form {
            kind: FormKind::Nil,
            pos,
        },
        _ => return Ok(None),
    };
    Ok(Some(f))
}

/// `when`, `when-not`, `when-let` and `when-some`: `(HEAD test [nil] (do body...))`, with `nil`
/// as the then-branch for `when-not`.
fn when_like(name: &str, head: &str, nil_first: bool, args: &[Form], pos: Pos) -> AResult<Form> {
    let Some((test, body)) = args.split_first() else {
        let shape = if head == "if" {
            format!("({name} test body...)")
        } else {
            "(when-let [x test] body...)".to_string()
        };
        return Err(malformed(name, &shape, pos));
    };
    let mut items = vec![sym(head, pos), test.clone()];
    if nil_first {
        items.push(Form {
            kind: FormKind::Nil,
            pos,
        });
    }
    items.push(prepend(vec![sym("do", pos)], body, pos));
    Ok(list(items, pos))
}

/// `(when-first [x coll] body...)`: `coll` is evaluated once, through a fresh local.
fn when_first(a: &mut Analyzer<'_>, args: &[Form], pos: Pos) -> AResult<Form> {
    if args.is_empty() {
        return Err(malformed(
            "when-first",
            "(when-first [x coll] body...)",
            pos,
        ));
    }
    let b = super::forms::binding_vector("when-first", args.first(), pos)?;
    let [x, coll] = b else {
        return Err(err(pos, "when-first takes one binding", None));
    };
    let tmp = a.fresh_name("wf");
    let bind = vector(
        vec![
            sym(&tmp, pos),
            list(vec![sym("seq", pos), coll.clone()], pos),
        ],
        pos,
    );
    let inner = list(
        vec![
            sym("let", pos),
            vector(
                vec![
                    x.clone(),
                    list(vec![sym("first", pos), sym(&tmp, pos)], pos),
                ],
                pos,
            ),
            prepend(vec![sym("do", pos)], &args[1..], pos),
        ],
        pos,
    );
    Ok(list(vec![sym("when-let", pos), bind, inner], pos))
}

/// `(as-> expr name forms...)`: a `let` rebinding `name` to each form in turn.
fn as_thread(args: &[Form], pos: Pos) -> AResult<Form> {
    let [expr, name, forms @ ..] = args else {
        return Err(malformed("as->", "(as-> expr name forms...)", pos));
    };
    let mut bindings = vec![name.clone(), expr.clone()];
    for f in forms {
        bindings.push(name.clone());
        bindings.push(f.clone());
    }
    Ok(list(
        vec![sym("let", pos), vector(bindings, pos), name.clone()],
        pos,
    ))
}

/// `(dotimes [i n] body...)`: a `doseq` over `(range n)`.
fn dotimes(args: &[Form], pos: Pos) -> AResult<Form> {
    let b = super::forms::binding_vector("dotimes", args.first(), pos)?;
    let [i, n] = b else {
        return Err(err(
            pos,
            "dotimes takes one binding",
            Some("write (dotimes [i n] body)".into()),
        ));
    };
    let range = list(vec![sym("range", pos), n.clone()], pos);
    Ok(prepend(
        vec![sym("doseq", pos), vector(vec![i.clone(), range], pos)],
        &args[1..],
        pos,
    ))
}

/// The error of a macro called with too few forms.
fn malformed(name: &str, shape: &str, pos: Pos) -> AnalysisError {
    err(
        pos,
        format!("malformed ({name} ...)"),
        Some(format!("expected {shape}")),
    )
}

fn cond(args: &[Form], pos: Pos) -> AResult<Form> {
    if !args.len().is_multiple_of(2) {
        return Err(err(
            pos,
            "cond needs an even number of forms",
            Some("write (cond test expr ... :else expr)".into()),
        ));
    }
    let mut out = Form {
        kind: FormKind::Nil,
        pos,
    };
    for pair in args.chunks(2).rev() {
        if let [t, e] = pair {
            out = list(vec![sym("if", t.pos), t.clone(), e.clone(), out], t.pos);
        }
    }
    Ok(out)
}

/// `(condp pred expr test1 r1 test2 r2 default?)` → nested ifs on `(pred test expr)`.
fn condp(a: &mut Analyzer<'_>, args: &[Form], pos: Pos) -> AResult<Form> {
    let [pred, expr, clauses @ ..] = args else {
        return Err(err(
            pos,
            "malformed (condp ...)",
            Some("write (condp = x 1 :one 2 :two :default)".into()),
        ));
    };
    let (p, x) = (a.fresh_name("pred"), a.fresh_name("expr"));
    // Clauses are `test result` or `test :>> result-fn`; one form left over is the default.
    let mut tests: Vec<(&Form, &Form, bool)> = Vec::new();
    let mut rest = clauses;
    let default = loop {
        match rest {
            [] => break None,
            [d] => break Some(d.clone()),
            [t, arrow, f, more @ ..] if is_keyword(arrow, ">>") => {
                tests.push((t, f, true));
                rest = more;
            }
            [t, r, more @ ..] => {
                tests.push((t, r, false));
                rest = more;
            }
        }
    };
    let mut out = default.unwrap_or_else(|| no_matching_clause(pos));
    for (t, r, arrow) in tests.into_iter().rev() {
        let test = list(vec![sym(&p, pos), t.clone(), sym(&x, pos)], pos);
        out = if arrow {
            // `(let [tmp (pred test expr)] (if tmp (f tmp) out))`
            let tmp = a.fresh_name("condp");
            let call = list(vec![r.clone(), sym(&tmp, pos)], pos);
            list(
                vec![
                    sym("let", pos),
                    vector(vec![sym(&tmp, pos), test], pos),
                    list(vec![sym("if", pos), sym(&tmp, pos), call, out], pos),
                ],
                pos,
            )
        } else {
            list(vec![sym("if", pos), test, r.clone(), out], pos)
        };
    }
    Ok(list(
        vec![
            sym("let", pos),
            vector(
                vec![sym(&p, pos), pred.clone(), sym(&x, pos), expr.clone()],
                pos,
            ),
            out,
        ],
        pos,
    ))
}

/// `(assert x msg?)` → `(if x nil (throw (ex-info (str "Assert failed: " msg? "\n"? "x") {})))`.
fn assert(args: &[Form], pos: Pos) -> AResult<Form> {
    let (test, msg) = match args {
        [t] => (t, None),
        [t, m] => (t, Some(m)),
        _ => {
            return Err(err(
                pos,
                "malformed (assert ...)",
                Some("write (assert test) or (assert test message)".into()),
            ));
        }
    };
    let text = |s: String| Form {
        kind: FormKind::Str(s.into()),
        pos,
    };
    let shown = crate::print::pr_str(&super::forms::quote(test));
    let mut parts = vec![sym("str", pos), text("Assert failed: ".into())];
    if let Some(m) = msg {
        parts.push(m.clone());
        parts.push(text("\n".into()));
    }
    parts.push(text(shown));
    let data = Form {
        kind: FormKind::Map(vec![]),
        pos,
    };
    let thrown = list(
        vec![
            sym("throw", pos),
            list(vec![sym("ex-info", pos), list(parts, pos), data], pos),
        ],
        pos,
    );
    let nil = Form {
        kind: FormKind::Nil,
        pos,
    };
    Ok(list(vec![sym("if", pos), test.clone(), nil, thrown], pos))
}

fn is_keyword(f: &Form, name: &str) -> bool {
    matches!(&f.kind, FormKind::Keyword(k) if &**k == name)
}

/// `(throw (ex-info "No matching clause in condp" {}))`.
fn no_matching_clause(pos: Pos) -> Form {
    let msg = Form {
        kind: FormKind::Str("No matching clause in condp".into()),
        pos,
    };
    let data = Form {
        kind: FormKind::Map(vec![]),
        pos,
    };
    list(
        vec![
            sym("throw", pos),
            list(vec![sym("ex-info", pos), msg, data], pos),
        ],
        pos,
    )
}

/// `(if-let [x test] then else)` → `(let [tmp test] (if tmp (let [x tmp] then) else))`.
fn if_let(a: &mut Analyzer<'_>, name: &str, args: &[Form], pos: Pos) -> AResult<Form> {
    let b = super::forms::binding_vector(name, args.first(), pos)?;
    let [x, test] = b else {
        return Err(err(
            pos,
            format!("{name} takes exactly one binding"),
            Some(format!("write ({name} [x test] then else)")),
        ));
    };
    let Some(then) = args.get(1) else {
        return Err(err(pos, format!("{name} needs a then branch"), None));
    };
    let els = args.get(2).cloned().unwrap_or(Form {
        kind: FormKind::Nil,
        pos,
    });
    let tmp = a.fresh_name("test");
    let cond = if name == "if-some" {
        list(vec![sym("some?", pos), sym(&tmp, pos)], pos)
    } else {
        sym(&tmp, pos)
    };
    let inner = list(
        vec![
            sym("let", pos),
            vector(vec![x.clone(), sym(&tmp, pos)], pos),
            then.clone(),
        ],
        pos,
    );
    Ok(list(
        vec![
            sym("let", pos),
            vector(vec![sym(&tmp, pos), test.clone()], pos),
            list(vec![sym("if", pos), cond, inner, els], pos),
        ],
        pos,
    ))
}

/// Inserts `x` into `step` as the first (`->`) or last (`->>`) argument.
fn thread_into(last: bool, x: Form, step: &Form) -> Form {
    match &step.kind {
        FormKind::List(items) if !items.is_empty() => {
            let mut items = items.clone();
            if last {
                items.push(x)
            } else {
                items.insert(1, x)
            }
            list(items, step.pos)
        }
        _ => list(vec![step.clone(), x], step.pos),
    }
}

fn thread(last: bool, args: &[Form], pos: Pos) -> AResult<Form> {
    let Some((first, steps)) = args.split_first() else {
        return Err(err(pos, "threading macro needs an initial value", None));
    };
    Ok(steps
        .iter()
        .fold(first.clone(), |acc, s| thread_into(last, acc, s)))
}

/// `(cond-> x t1 f1 t2 f2)` → `(let [g x g (if t1 (-> g f1) g) ...] g)`.
fn cond_thread(a: &mut Analyzer<'_>, last: bool, args: &[Form], pos: Pos) -> AResult<Form> {
    let Some((first, pairs)) = args.split_first() else {
        return Err(err(pos, "cond-> needs an initial value", None));
    };
    if pairs.len() % 2 != 0 {
        return Err(err(pos, "cond-> needs test/form pairs", None));
    }
    let g = a.fresh_name("cond");
    let mut bindings = vec![sym(&g, pos), first.clone()];
    for pair in pairs.chunks(2) {
        if let [t, f] = pair {
            bindings.push(sym(&g, pos));
            bindings.push(list(
                vec![
                    sym("if", pos),
                    t.clone(),
                    thread_into(last, sym(&g, pos), f),
                    sym(&g, pos),
                ],
                pos,
            ));
        }
    }
    Ok(list(
        vec![sym("let", pos), vector(bindings, pos), sym(&g, pos)],
        pos,
    ))
}

/// `(some-> x f g)` → stops at the first nil.
fn some_thread(a: &mut Analyzer<'_>, last: bool, args: &[Form], pos: Pos) -> AResult<Form> {
    let Some((first, steps)) = args.split_first() else {
        return Err(err(pos, "some-> needs an initial value", None));
    };
    let g = a.fresh_name("some");
    let mut bindings = vec![sym(&g, pos), first.clone()];
    for s in steps {
        bindings.push(sym(&g, pos));
        let nil_test = list(vec![sym("nil?", pos), sym(&g, pos)], pos);
        bindings.push(list(
            vec![
                sym("if", pos),
                nil_test,
                Form {
                    kind: FormKind::Nil,
                    pos,
                },
                thread_into(last, sym(&g, pos), s),
            ],
            pos,
        ));
    }
    Ok(list(
        vec![sym("let", pos), vector(bindings, pos), sym(&g, pos)],
        pos,
    ))
}

/// `(defn name doc? attr-map? [params] body)` → `(def name (fn name [params] body))`.
fn defn(args: &[Form], pos: Pos) -> AResult<Form> {
    let Some(name) = args.first().filter(|f| f.as_sym().is_some()) else {
        return Err(err(
            pos,
            "defn needs a name",
            Some("write (defn name [params] body)".into()),
        ));
    };
    let mut rest = &args[1..];
    if matches!(rest.first().map(|f| &f.kind), Some(FormKind::Str(_))) && rest.len() > 1 {
        rest = &rest[1..];
    }
    if matches!(rest.first().map(|f| &f.kind), Some(FormKind::Map(_))) {
        rest = &rest[1..];
    }
    if rest.is_empty() {
        return Err(err(
            pos,
            "defn needs a parameter vector",
            Some("write (defn name [params] body)".into()),
        ));
    }
    let f = prepend(vec![sym("fn", pos), name.clone()], rest, pos);
    Ok(list(vec![sym("def", pos), name.clone(), f], pos))
}

/// `(letfn [(f [x] ...) (g [y] ...)] body)` with mutual recursion and no mutable cells:
///
/// ```text
/// (let [G (fn G [tag & args] (case tag 0 (apply (fn f [x] (let [g (partial G 1)] ...)) args)
///                                      1 (apply (fn g [y] (let [f (partial G 0)] ...)) args)))
///       f (partial G 0) g (partial G 1)]
///   body)
/// ```
///
/// `G` is a name programs cannot write and the core functions are referred to by their
/// qualified names, so user bindings cannot capture them.
fn letfn(a: &mut Analyzer<'_>, args: &[Form], pos: Pos) -> AResult<Form> {
    let Some(FormKind::Vector(specs)) = args.first().map(|f| &f.kind) else {
        return Err(err(
            pos,
            "letfn needs a vector of function specs",
            Some("write (letfn [(f [x] ...)] body)".into()),
        ));
    };
    let mut names = Vec::with_capacity(specs.len());
    for spec in specs {
        let FormKind::List(parts) = &spec.kind else {
            return Err(err(
                spec.pos,
                "letfn spec must be (name [params] body)",
                None,
            ));
        };
        let name = parts
            .first()
            .and_then(Form::as_sym)
            .ok_or_else(|| err(spec.pos, "letfn spec needs a name", None))?;
        names.push(name.to_string());
    }
    let group = a.fresh_name("letfn");
    let member = |i: usize, p: Pos| {
        let tag = Form {
            kind: FormKind::Int(i64::try_from(i).unwrap_or(0)),
            pos: p,
        };
        list(vec![sym("clojure.core/partial", p), sym(&group, p), tag], p)
    };
    let mut arms = vec![sym("case", pos), sym(" tag", pos)];
    for (i, spec) in specs.iter().enumerate() {
        let FormKind::List(parts) = &spec.kind else {
            continue;
        };
        let siblings: Vec<Form> = names
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(j, n)| [sym(n, spec.pos), member(j, spec.pos)])
            .collect();
        let body = wrap_fn_bodies(&parts[1..], &siblings, spec.pos);
        let mut f = vec![sym("fn", spec.pos), parts[0].clone()];
        f.extend(body);
        let call = list(
            vec![
                sym("clojure.core/apply", spec.pos),
                list(f, spec.pos),
                sym(" args", spec.pos),
            ],
            spec.pos,
        );
        arms.push(Form {
            kind: FormKind::Int(i64::try_from(i).unwrap_or(0)),
            pos: spec.pos,
        });
        arms.push(call);
    }
    let params = vector(
        vec![sym(" tag", pos), sym("&", pos), sym(" args", pos)],
        pos,
    );
    let dispatcher = list(
        vec![sym("fn", pos), sym(&group, pos), params, list(arms, pos)],
        pos,
    );
    let mut bindings = vec![sym(&group, pos), dispatcher];
    for (i, n) in names.iter().enumerate() {
        bindings.push(sym(n, pos));
        bindings.push(member(i, pos));
    }
    Ok(prepend(
        vec![sym("let", pos), vector(bindings, pos)],
        &args[1..],
        pos,
    ))
}

/// Wraps each arity body of a fn spec (`[params] body...` or `([params] body...)...`) in a
/// `let` of the sibling functions.
fn wrap_fn_bodies(rest: &[Form], siblings: &[Form], pos: Pos) -> Vec<Form> {
    let wrap = |params: &Form, body: &[Form]| -> Vec<Form> {
        let inner = prepend(
            vec![sym("let", pos), vector(siblings.to_vec(), pos)],
            body,
            pos,
        );
        vec![params.clone(), inner]
    };
    match rest.first().map(|f| &f.kind) {
        Some(FormKind::Vector(_)) => wrap(&rest[0], &rest[1..]),
        _ => rest
            .iter()
            .map(|arity| match &arity.kind {
                FormKind::List(items) if !items.is_empty() => {
                    list(wrap(&items[0], &items[1..]), arity.pos)
                }
                _ => arity.clone(),
            })
            .collect(),
    }
}
