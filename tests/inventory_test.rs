//! The checked-in inventory (`docs/inventory.tsv`): every public var of clojure.core,
//! clojure.string, clojure.set and clojure.walk with its status in PTC-Lisp.
//!
//! * `supported`: the name resolves in operator position (a builtin, a special form or a macro);
//! * `divergent`: the reference names a `DIV-n` of docs/divergences.md and Clojure-judged cases
//!   that `conformance/overrides.edn` overrides with that id, and whose programs use the name
//!   (the recorded Clojure answer next to ours shows the difference);
//! * `out-of-scope`: a reason is given, and the name really is absent (so an implemented name
//!   cannot stay listed as missing).
//!
//! Completeness against Clojure itself needs a JVM, so `conformance/regen.sh` checks it.

use ptc_runner::analyze::{Resolution, resolve_name};
use ptc_tests::corpus;
use std::collections::{HashMap, HashSet};

struct Entry {
    line: usize,
    ns: String,
    name: String,
    status: String,
    reference: String,
    note: String,
}

fn inventory() -> Vec<Entry> {
    let path = corpus::root().join("../../docs/inventory.tsv");
    let body = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    body.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(k, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(
                f.len(),
                5,
                "inventory line {}: five tab-separated fields",
                k + 1
            );
            Entry {
                line: k + 1,
                ns: f[0].to_string(),
                name: f[1].to_string(),
                status: f[2].to_string(),
                reference: f[3].to_string(),
                note: f[4].to_string(),
            }
        })
        .collect()
}

/// The alias the interpreter's tables use for a Clojure namespace.
fn ns_arg(ns: &str) -> Option<&str> {
    (ns != "clojure.core").then_some(ns)
}

fn check_divergent(e: &Entry, programs: &HashMap<String, String>, divs: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let overrides = corpus::overrides().unwrap_or_else(|err| panic!("reading overrides: {err}"));
    let Some((div, cases)) = e.reference.split_once(' ') else {
        return vec![format!(
            "line {}: {} needs `DIV-n case-id,...`",
            e.line, e.name
        )];
    };
    if !divs.contains(&format!("| {div} |")) {
        bad.push(format!(
            "line {}: {div} is not in docs/divergences.md",
            e.line
        ));
    }
    for id in cases.split(',') {
        match overrides.get(id) {
            Some((d, _)) if d == div => {}
            _ => bad.push(format!("line {}: {id} is not overridden as {div}", e.line)),
        }
        match programs.get(id) {
            Some(p) if p.contains(e.name.as_str()) => {}
            _ => bad.push(format!(
                "line {}: case {id} does not use `{}`",
                e.line, e.name
            )),
        }
    }
    bad
}

#[test]
fn inventory_statuses_hold() {
    let entries = inventory();
    let programs: HashMap<String, String> = corpus::clojure_cases()
        .unwrap_or_else(|e| panic!("reading corpus: {e}"))
        .into_iter()
        .map(|c| (c.id, c.program))
        .collect();
    let divs = std::fs::read_to_string(corpus::root().join("../../docs/divergences.md"))
        .unwrap_or_else(|e| panic!("reading divergences: {e}"));
    let mut seen = HashSet::new();
    let mut bad = Vec::new();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for e in &entries {
        if !seen.insert((e.ns.clone(), e.name.clone())) {
            bad.push(format!("line {}: {}/{} listed twice", e.line, e.ns, e.name));
        }
        *counts.entry(e.status.as_str()).or_default() += 1;
        let r = resolve_name(ns_arg(&e.ns), &e.name);
        let present = matches!(r, Resolution::Builtin | Resolution::Form);
        match e.status.as_str() {
            "supported" if !present => {
                bad.push(format!(
                    "line {}: {} is supported but {r:?}",
                    e.line, e.name
                ));
            }
            "supported" => {}
            "divergent" => bad.extend(check_divergent(e, &programs, &divs)),
            "out-of-scope" if e.note.is_empty() => {
                bad.push(format!("line {}: {} needs a reason", e.line, e.name));
            }
            "out-of-scope" if present => bad.push(format!(
                "line {}: {} resolves ({r:?}): list it as supported",
                e.line, e.name
            )),
            "out-of-scope" => {}
            other => bad.push(format!("line {}: unknown status {other}", e.line)),
        }
    }
    assert!(bad.is_empty(), "inventory problems:\n{}", bad.join("\n"));
    for ns in [
        "clojure.core",
        "clojure.string",
        "clojure.set",
        "clojure.walk",
    ] {
        assert!(
            entries.iter().any(|e| e.ns == ns),
            "the inventory lists nothing of {ns}"
        );
    }
    assert!(
        counts.get("supported").copied().unwrap_or(0) > 300,
        "statuses: {counts:?}"
    );
}

#[test]
fn resolution_tells_forms_builtins_and_absent_names_apart() {
    assert_eq!(resolve_name(None, "map"), Resolution::Builtin);
    assert_eq!(resolve_name(None, "when"), Resolution::Form);
    assert_eq!(resolve_name(None, "if"), Resolution::Form);
    assert_eq!(resolve_name(None, "atom"), Resolution::Unavailable);
    assert_eq!(resolve_name(None, "lazy-seq"), Resolution::Unknown);
    assert_eq!(
        resolve_name(Some("clojure.string"), "split"),
        Resolution::Builtin
    );
    assert_eq!(
        resolve_name(Some("clojure.walk"), "macroexpand-all"),
        Resolution::Unknown
    );
}
