//! Hints for names PTC-Lisp does not have, and "did you mean" suggestions.
//!
//! LLMs reach for Clojure features that make no sense in a sandbox (I/O, mutable state,
//! randomness, code loading). Each gets an analysis error that says why and what to do instead.

use super::{AnalysisError, err};
use crate::error::Pos;

/// Clojure names deliberately absent, with the hint shown to the program's author.
pub const UNAVAILABLE: &[(&str, &str)] = &[
    ("rand", "randomness is not available: runs are reproducible"),
    (
        "rand-int",
        "randomness is not available: runs are reproducible",
    ),
    (
        "rand-nth",
        "randomness is not available: runs are reproducible",
    ),
    (
        "shuffle",
        "randomness is not available: runs are reproducible",
    ),
    (
        "random-uuid",
        "randomness is not available: runs are reproducible",
    ),
    (
        "atom",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "swap!",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "reset!",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "deref",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "volatile!",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "vswap!",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "ref",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "dosync",
        "mutable state is not available: use let, loop/recur or reduce",
    ),
    (
        "slurp",
        "file and network I/O are not available: data comes from the context (data/...) or tools (tool/...)",
    ),
    (
        "spit",
        "file and network I/O are not available: return the value instead",
    ),
    (
        "*out*",
        "there is no *out*: use println, which records to the run's prints",
    ),
    ("with-open", "file and network I/O are not available"),
    (
        "future",
        "concurrency is not available: the runner is single-threaded",
    ),
    (
        "promise",
        "concurrency is not available: the runner is single-threaded",
    ),
    (
        "deliver",
        "concurrency is not available: the runner is single-threaded",
    ),
    (
        "agent",
        "concurrency is not available: the runner is single-threaded",
    ),
    (
        "send",
        "concurrency is not available: the runner is single-threaded",
    ),
    (
        "thread",
        "concurrency is not available: the runner is single-threaded",
    ),
    (
        "eval",
        "code loading is not available: write the code directly",
    ),
    (
        "read-string",
        "code loading is not available: parse data with json/parse-string or parse-long",
    ),
    ("load-string", "code loading is not available"),
    ("load-file", "code loading is not available"),
    (
        "require",
        "namespaces are preloaded: use clojure.string/..., str/..., set/..., walk/..., json/... directly",
    ),
    (
        "use",
        "namespaces are preloaded: use clojure.string/..., str/..., set/... directly",
    ),
    (
        "import",
        "Java classes are not available beyond the documented interop",
    ),
    (
        "ns",
        "namespaces are preloaded; programs run in the user namespace",
    ),
    (
        "in-ns",
        "namespaces are preloaded; programs run in the user namespace",
    ),
    ("defmacro", "macros are not available: write a function"),
    (
        "defmulti",
        "multimethods are not available: use case or cond on a dispatch value",
    ),
    (
        "defmethod",
        "multimethods are not available: use case or cond on a dispatch value",
    ),
    (
        "defprotocol",
        "protocols are not available: use maps and functions",
    ),
    ("defrecord", "records are not available: use maps"),
    ("deftype", "types are not available: use maps"),
    ("reify", "Java interop is not available"),
    ("proxy", "Java interop is not available"),
    (
        "System/exit",
        "a program ends with its last value, (return v) or (fail v)",
    ),
    ("Thread/sleep", "sleeping is not available"),
    ("println-err", "there is no stderr: use println"),
    (
        "while",
        "mutable loops are not available: use loop/recur, doseq or reduce",
    ),
];

/// The error for a deliberately absent name.
pub fn unavailable(name: &str, pos: Pos) -> AnalysisError {
    let hint = UNAVAILABLE
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, h)| (*h).to_string());
    err(pos, format!("`{name}` is not available in PTC-Lisp"), hint)
}

/// The error for a symbol that resolves to nothing: a hint from the table, or suggestions.
pub fn unbound(name: &str, pos: Pos, candidates: Vec<String>) -> AnalysisError {
    let base = name.rsplit('/').next().unwrap_or(name);
    if UNAVAILABLE.iter().any(|(n, _)| *n == name || *n == base) {
        return unavailable(
            if UNAVAILABLE.iter().any(|(n, _)| *n == name) {
                name
            } else {
                base
            },
            pos,
        );
    }
    if base.starts_with('.')
        || (name.contains('/') && name.chars().next().is_some_and(char::is_uppercase))
    {
        return err(
            pos,
            format!("unsupported Java interop `{name}`"),
            Some(
                "see the documented interop list (strings, Math/, LocalDate/, Instant/, Duration/)"
                    .into(),
            ),
        );
    }
    let hint = suggest(name, candidates.iter().map(String::as_str))
        .map(|s| format!("did you mean `{s}`?"));
    err(
        pos,
        format!("unable to resolve symbol `{name}`"),
        hint.or_else(|| Some("define it with def or let first".into())),
    )
}

/// Names longer than this get no suggestion: no one mistypes one, and the edit distance costs
/// the product of the two lengths per candidate. Without the bound an unresolved 60 KB symbol
/// (a program can be 1 MiB) cost minutes of analysis, in-process where no deadline stops it
/// (found by the `run_program` fuzz target).
const MAX_SUGGEST_CHARS: usize = 64;

/// The closest candidate by edit distance, if close enough to be a likely typo.
pub fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let len = name.chars().count();
    if len > MAX_SUGGEST_CHARS {
        return None;
    }
    let limit = (len / 3).clamp(1, 3);
    // The distance is at least the difference in length: skip what cannot be close (this
    // also keeps long user-defined names out of the quadratic comparison).
    candidates
        .filter(|c| {
            c.len() <= 4 * (MAX_SUGGEST_CHARS + limit) && c.chars().count().abs_diff(len) <= limit
        })
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c.to_string())
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_find_typos() {
        let names = ["group-by", "map", "filter"];
        assert_eq!(
            suggest("groupby", names.iter().copied()),
            Some("group-by".into())
        );
        assert_eq!(suggest("zzzzzz", names.iter().copied()), None);
    }

    #[test]
    fn long_names_get_no_suggestion_and_long_candidates_are_skipped() {
        // Regression (fuzzing): a long unresolved symbol was compared with every candidate.
        let long = "u".repeat(MAX_SUGGEST_CHARS + 1);
        let near = format!("{long}x");
        assert_eq!(suggest(&long, [near.as_str()].into_iter()), None);
        let at_bound = "u".repeat(MAX_SUGGEST_CHARS);
        let typo = format!("{}x", &at_bound[1..]);
        assert_eq!(
            suggest(&at_bound, [typo.as_str()].into_iter()),
            Some(typo.clone())
        );
        let huge = "u".repeat(1 << 20);
        assert_eq!(
            suggest("uuu", [huge.as_str(), "uu"].into_iter()),
            Some("uu".into())
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
