//! Fast paths of the string and regex builtins, each checked against a general path through the
//! public `run` (printed result or error, and steps charged, also at exact step budgets):
//!
//! - `re-find` answers a pattern `LIT(C+)$` (a literal, one group repeating an ASCII class, the
//!   end) by a walk back over the class (`regex::Suffix`), no engine. The same pattern with its
//!   end written twice (`$$`, the same language) is declined by the plan and found by the engine:
//!   random patterns of that shape (some the plan declines) over random texts, and nil, must
//!   give the same outcome both ways, and the first match of `re-seq`.
//! - `str/split` at a one-byte separator walks a short text's bytes (`position` per piece) and
//!   fills its pieces' vector inline: random texts, separators and limits must give what the
//!   same separator in a group (`#"(?:,)"`, cut by the engine) gives, with the same steps; and
//!   a one-byte pattern that is regex syntax (`#"."`, `#"|"`) must not be taken literally.
//! - `(first (str/split s sep))` written in the source is fused (`analyze::fuse`): split keeps
//!   only its first piece. Random texts (empty, separators only, leading and repeated ones,
//!   non-strings) and separators (plain, regex, empty, a string, not a separator) must give what
//!   the same `first` bound to a local (not fused) gives: result or error with its position,
//!   and steps, also at every step budget up to the last.
//! - `upper-case`/`lower-case` of ASCII text change a copy of the exact length in place: random
//!   texts must give what changing each character alone and joining gives, and the very string
//!   back (`identical?`) when nothing changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/rng.rs"]
mod rng;

#[path = "support/outcome.rs"]
mod support;

use ptc_shared::Limits;
use rng::Rng;
use support::outcome;

/// A random `re-find` pattern of the suffix plan's shape: literal, group of a repeated class,
/// end (only ends that a second `$` leaves meaning the same).
fn suffix_pattern(rng: &mut Rng) -> String {
    let lit = rng.pick(&["", "@", "é", "x@", "\\.", "-", "ab", "a"]);
    let class = rng.pick(&[
        "[a-z0-9.-]",
        "[a-c]",
        "[a@]",
        "(?-u:\\w)",
        "[.\\n]",
        "\\d",
        "[^a]",
    ]);
    let count = rng.pick(&["+", "*", "{2,}", "+?", "{1,3}"]);
    let end = rng.pick(&["$", "\\z"]);
    format!("{lit}({class}{count}){end}")
}

/// A random text, as a string literal (or nil).
fn text(rng: &mut Rng) -> String {
    if rng.below(12) == 0 {
        return "nil".into();
    }
    let parts = [
        "a", "@", "b", "1", ".", "é", "-", "K", "x", "c", "\\n", "_", "ab@", "mail.org",
    ];
    let body: String = (0..rng.below(8)).map(|_| rng.pick(&parts)).collect();
    format!("\"{body}\"")
}

#[test]
fn re_find_by_suffix_answers_as_the_engine() {
    let mut rng = Rng(0x5eed_0027);
    let mut matched = 0;
    for round in 0..300 {
        let p = suffix_pattern(&mut rng);
        let texts: Vec<String> = (0..rng.below(12)).map(|_| text(&mut rng)).collect();
        let texts = texts.join(" ");
        let program = |pattern: &str, find: &str| {
            format!(
                "(mapv (fn [s] (try ({find} #\"{pattern}\" s) \
                 (catch Exception e (str \"error: \" (ex-message e))))) [{texts}])"
            )
        };
        let planned = outcome(&program(&p, "re-find"), Limits::default());
        let general = outcome(&program(&format!("{p}$"), "re-find"), Limits::default());
        assert_eq!(planned, general, "round {round}: {p} over {texts}");
        let seq = outcome(
            &program(&p, "(fn [p s] (first (re-seq p s)))"),
            Limits::default(),
        );
        // The same errors, named after the op that raised them.
        let seq = seq.0.replace("re-seq", "re-find");
        assert_eq!(planned.0, seq, "round {round}: {p} over {texts}");
        matched += planned.0.matches("[\"").count();
    }
    assert!(matched > 150, "matches found: {matched}");
}

#[test]
fn a_suffix_re_find_ends_on_the_step_budget_where_the_engine_does() {
    let src = |end: &str| {
        format!(
            "(count (keep (fn [s] (second (re-find #\"@([a-z0-9.-]+){end}\" s))) \
             (map (fn [i] (str \"u\" i \"@d\" (mod i 7) \".org\")) (range 60))))"
        )
    };
    let (planned, general) = (src("$"), src("$$"));
    let at = |steps| Limits {
        max_steps: steps,
        ..Limits::default()
    };
    let (text, steps) = outcome(&planned, Limits::default());
    assert_eq!(text, "60");
    assert_eq!((text.clone(), steps), outcome(&general, Limits::default()));
    for n in steps - 30..=steps + 1 {
        let fast = outcome(&planned, at(n));
        assert_eq!(fast, outcome(&general, at(n)), "{n}");
        assert_eq!(fast.0 == "60", n >= steps, "{n}: {fast:?}");
    }
}

#[test]
fn split_at_one_byte_answers_as_the_engine() {
    let mut rng = Rng(0x5eed_0028);
    for round in 0..300 {
        let sep = rng.pick(&[" ", ",", "@", "a", ";", ".", "|", "$", "^"]);
        let parts = [
            "a", " ", ",", "@", "é", ";", "bc", "  ", ",,", "x", ".", "|", "$",
        ];
        let n = if round % 10 == 0 { 40 } else { rng.below(9) };
        let body: String = (0..n).map(|_| rng.pick(&parts)).collect();
        let limit = rng.pick(&["", " -1", " 0", " 1", " 2", " 3"]);
        let program = |sep: &str| format!("(str/split \"{body}\" #\"{sep}\"{limit})");
        let walked = outcome(&program(sep), Limits::default());
        let general = outcome(&program(&format!("(?:{sep})")), Limits::default());
        assert_eq!(walked, general, "round {round}: {}", program(sep));
    }
}

#[test]
fn first_of_a_split_answers_and_charges_as_first_of_the_whole_split() {
    let mut rng = Rng(0x5eed_0029);
    let seps = [
        "#\" \"",
        "#\",\"",
        "#\"ab\"",
        "#\"\\s+\"",
        "#\"\"",
        "#\"é\"",
        "\" \"",
        "\"\"",
        "nil",
        "1",
    ];
    let parts = ["a", " ", ",", "ab", "é", "  ", ",,", "x", "\\n"];
    let at = |steps| Limits {
        max_steps: steps,
        ..Limits::default()
    };
    for round in 0..300 {
        let sep = rng.pick(&seps);
        let s = match rng.below(10) {
            0 => "nil".to_string(),
            1 => "42".to_string(),
            _ => {
                let body: String = (0..rng.below(7)).map(|_| rng.pick(&parts)).collect();
                format!("\"{body}\"")
            }
        };
        // Same text up to the inner call, so errors name the same position on both.
        let fused = format!("(let [f first] (first (str/split {s} {sep})))");
        let general = format!("(let [f first] (f     (str/split {s} {sep})))");
        let (text, steps) = outcome(&fused, Limits::default());
        assert_eq!(
            (text.clone(), steps),
            outcome(&general, Limits::default()),
            "round {round}: {fused}"
        );
        if round % 10 == 0 {
            for n in 1..=steps {
                assert_eq!(
                    outcome(&fused, at(n)),
                    outcome(&general, at(n)),
                    "{fused} at {n}"
                );
            }
        }
    }
    // Shadowed names are not the builtins: no fusion, the program's own fns run.
    let own = "(let [first count] (first (str/split \"a b c\" #\" \")))";
    assert_eq!(outcome(own, Limits::default()).0, "3");
}

#[test]
fn case_changes_answer_as_each_character_changed() {
    let mut rng = Rng(0x5eed_0029);
    let parts = [
        "a", "Z", "q", "M", "0", "@", ".", " ", "ab", "CD", "é", "ß", "-",
    ];
    for round in 0..300 {
        let body: String = (0..rng.below(14)).map(|_| rng.pick(&parts)).collect();
        let (op, want) = if round % 2 == 0 {
            ("str/upper-case", body.to_uppercase())
        } else {
            ("str/lower-case", body.to_lowercase())
        };
        let src = format!(
            "(let [s \"{body}\" t ({op} s)] [(= t (apply str (map (fn [c] ({op} (str c))) s))) \
             (= (identical? s t) (= s t)) t])"
        );
        let (text, _) = outcome(&src, Limits::default());
        assert_eq!(
            text,
            format!("[true true \"{want}\"]"),
            "round {round}: {src}"
        );
    }
}
