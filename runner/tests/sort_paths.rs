//! `sort` and `sort-by` with a builtin comparator (`compare`, `<`, `>`, `:asc`, `:desc`, none)
//! order keys natively when they are all integers, all numbers without NaN (integers within
//! 2^53), or all texts (`builtins::msort::native_order`); anything else takes the general
//! merge. Random key vectors of every kind and mix, many of them with ties, are sorted both
//! ways through the public `run`: with the builtin comparator, and with a fn that calls it
//! (which is always the general merge, one call per comparison). Results, including the order
//! of equal keys (stability), must be the same, and so must failure; the steps charged too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/outcome.rs"]
mod support;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

const SMALL_INTS: [&str; 5] = ["0", "1", "-1", "3", "2"];
const WIDE_INTS: [&str; 6] = [
    "9007199254740993",
    "9007199254740992",
    "-9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "9007199254740991",
];
const FLOATS: [&str; 8] = [
    "0.5",
    "-0.0",
    "0.0",
    "2.0",
    "##Inf",
    "##-Inf",
    "1.0",
    "9.007199254740992E15",
];
const TEXTS: [&str; 8] = [
    "\"b\"",
    "\"a\"",
    "\"\"",
    "\"ab\"",
    "\"\u{1F600}\"",
    "\"\u{FFFF}\"",
    "\"B\"",
    "\"a\"",
];
const ODD: [&str; 6] = ["nil", "##NaN", ":k", "[1]", "true", "\\c"];

/// A key vector of one flavour: some pure kinds (the native path), some mixes (the general).
fn keys(rng: &mut Rng, flavour: u64, n: usize) -> Vec<&'static str> {
    let pools: Vec<&[&str]> = match flavour {
        0 => vec![&SMALL_INTS],
        1 => vec![&SMALL_INTS, &WIDE_INTS],
        2 => vec![&FLOATS],
        3 => vec![&SMALL_INTS, &FLOATS],
        4 => vec![&WIDE_INTS, &FLOATS],
        5 => vec![&TEXTS],
        6 => vec![&TEXTS, &SMALL_INTS],
        _ => vec![&SMALL_INTS, &FLOATS, &ODD],
    };
    (0..n)
        .map(|_| {
            let pool = pools[rng.below(pools.len())];
            rng.pick(pool)
        })
        .collect()
}

/// The printed result, or just `failed` (the native and the general path word some errors
/// differently), and the steps charged.
fn outcome(src: &str) -> (String, u64) {
    let (text, steps) = support::outcome(src, ptc_shared::Limits::default());
    if text.starts_with("failed") {
        ("failed".into(), steps)
    } else {
        (text, steps)
    }
}

/// `sort-by :k` over records `{:k key :i index}` of `ks` answers the same with each builtin
/// comparator as with the fn that stands for it (through the general merge), and with none as
/// with `compare`. A fn comparator costs a call per comparison while the keys' and the walk's
/// steps are the same, so only the results are compared. Returns how many of them failed.
fn sort_by_agrees(comparators: &[(&str, &str)], ks: &[impl std::fmt::Display]) -> usize {
    let rows: Vec<String> = ks
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{{:k {k} :i {i}}}"))
        .collect();
    let rows = format!("[{}]", rows.join(" "));
    let by = |cmp: &str| outcome(&format!("(mapv :i (sort-by :k {cmp} {rows}))")).0;
    let mut failed = 0;
    for (builtin, general) in comparators {
        let fast = by(builtin);
        assert_eq!(fast, by(general), "sort-by {builtin} over {rows}");
        failed += usize::from(fast == "failed");
    }
    assert_eq!(by(""), by("compare"), "sort-by over {rows}");
    failed
}

#[test]
fn native_sorts_order_as_the_general_merge() {
    // Each builtin comparator and a fn that stands for it through the general merge.
    let comparators = [
        ("compare", "(fn [a b] (compare a b))"),
        ("<", "(fn [a b] (< a b))"),
        (">", "(fn [a b] (> a b))"),
        (":asc", "(fn [a b] (compare a b))"),
        (":desc", "(fn [a b] (compare b a))"),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut sorted, mut failed) = (0, 0);
    for round in 0..160u64 {
        let n = rng.below(40);
        let ks = keys(&mut rng, round % 8, n);
        failed += sort_by_agrees(&comparators, &ks);
        let plain = format!("[{}]", ks.join(" "));
        for (builtin, general) in comparators {
            let (fast, _) = outcome(&format!("(sort {builtin} {plain})"));
            let (slow, _) = outcome(&format!("(sort {general} {plain})"));
            assert_eq!(fast, slow, "sort {builtin} over {plain}");
            sorted += 1;
        }
    }
    assert!(failed > 20 && failed < sorted / 2, "{failed} of {sorted}");
}

#[test]
fn native_sorts_charge_the_general_paths_steps() {
    // The same keys, native (all integers) and general (one NaN among them): the sort charges
    // one step per element either way, and a builtin comparator no step per comparison.
    let ints: Vec<String> = (0..200).map(|i| ((i * 37) % 101).to_string()).collect();
    let mut with_nan = ints.clone();
    with_nan[199] = "##NaN".into();
    let steps = |ks: &[String]| outcome(&format!("(sort-by - > [{}])", ks.join(" "))).1;
    assert_eq!(steps(&ints), steps(&with_nan));
    let (text, _) = outcome("(sort-by :t > [{:t 2} {:t 3.5} {:t 2} {:t -1} {:t 2.0}])");
    assert_eq!(text, "({:t 3.5} {:t 2} {:t 2} {:t 2.0} {:t -1})");
    let (text, _) = outcome(r#"(sort ["b" "\u00e9" "a" "B" "" "ab"])"#);
    assert_eq!(text, r#"("" "B" "a" "ab" "b" "é")"#);
}

/// Vector keys (`(juxt (comp - val) key)`): keys of one length whose every column is of one
/// native kind are ordered natively, column by column; other lengths, mixed lengths, and
/// columns of mixed or odd kinds take the general merge. Random keys of several column
/// flavours, with ties, against a fn comparator (always the merge); results, stability and
/// failure must be the same.
#[test]
fn vector_keys_order_as_the_general_merge() {
    let comparators = [
        ("compare", "(fn [a b] (compare a b))"),
        (":asc", "(fn [a b] (compare a b))"),
        (":desc", "(fn [a b] (compare b a))"),
        ("<", "(fn [a b] (< a b))"),
        (">", "(fn [a b] (> a b))"),
    ];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut sorted, mut failed) = (0, 0);
    for round in 0..120u64 {
        let n = rng.below(30);
        // One to five columns (four is the longest native key), each of one flavour; every
        // fifth round some keys are one column shorter.
        let width = 1 + rng.below(5);
        let columns: Vec<Vec<&str>> = (0..width)
            .map(|_| {
                let flavour = rng.below(8) as u64;
                keys(&mut rng, flavour, n)
            })
            .collect();
        let ragged = round % 5 == 4;
        let ks: Vec<String> = (0..n)
            .map(|i| {
                let cut = if ragged && rng.below(3) == 0 { 1 } else { 0 };
                let cells: Vec<&str> = columns[..width - cut.min(width - 1)]
                    .iter()
                    .map(|c| c[i])
                    .collect();
                format!("[{}]", cells.join(" "))
            })
            .collect();
        failed += sort_by_agrees(&comparators, &ks);
        sorted += comparators.len();
    }
    assert!(failed > 20 && failed < sorted, "{failed} of {sorted}");
    // The answer itself, ties kept in order: by the first column descending, then the second.
    assert_eq!(
        outcome("(sort-by (juxt (comp - val) key) {\"b\" 2 \"a\" 2 \"c\" 3 \"d\" 2.5})").0,
        r#"(["c" 3] ["d" 2.5] ["a" 2] ["b" 2])"#
    );
}
