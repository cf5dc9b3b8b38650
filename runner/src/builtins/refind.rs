//! `re-find`: the first match of a regex, and how its groups are found cheaply (issue 15: out
//! of `regex.rs`, whose builtins it serves).
//!
//! A pattern gets a [`Plan`] the first time it is used (kept for a few patterns, by the regex's
//! address, so the group count is not asked of the engine on every call): without groups, a
//! search for its match's span alone; with groups, a walk back over a class for `LIT(C+)$`
//! ([`Suffix`], no engine), a search for the match alone when the one group sits at fixed
//! offsets from its ends ([`Plan::Fixed`]), else capture slots reused from call to call. Each plan answers as the engine's `captures` (tests below and
//! `runner/tests/text_paths.rs`).

use crate::value::{Coll, PVec, Value};
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// How `re-find` gets a pattern's groups.
enum Plan {
    /// The pattern has no groups: its match's span alone is searched for.
    Whole,
    /// The pattern's one group sits at fixed byte offsets from its match's two ends (in
    /// `@(\w+)\.com$`, one byte after the start and four before the end): the search for the
    /// match alone, much cheaper than filling capture slots, gives it.
    Fixed { front: usize, back: usize },
    /// The pattern is a literal and one group of a repeated ASCII class that runs to the end of
    /// the text (`@([a-z0-9.-]+)$`): answered by a walk back over the class, no engine at all.
    Suffix(Suffix),
    /// Anything else: the engine fills capture slots, reused from call to call.
    Slots(regex::CaptureLocations),
}

/// How many patterns' plans `re-find` keeps (a loop alternating a few patterns plans each once).
const PLANS: usize = 8;

thread_local! {
    /// The plans of the last patterns `re-find` ran with groups, most recent first, each with a
    /// weak handle on its regex: the handle keeps the regex's allocation (so its address cannot
    /// come back as another regex's, and a plan is only used with the very pattern it was made
    /// for) but not the compiled regex, which goes when the program drops it, as without plans.
    static HELD: RefCell<Vec<(Weak<regex::Regex>, Plan)>> = const { RefCell::new(Vec::new()) };
}

/// `re-find`: the first match, as [`groups`] shapes it; nil when there is none. Without groups
/// only the match's span is searched for; with groups, by the pattern's [`Plan`].
pub(super) fn re_find(r: &Rc<regex::Regex>, s: &str) -> Value {
    HELD.with(|cell| {
        let mut held = cell.borrow_mut();
        let at = match held
            .iter()
            .position(|(h, _)| std::ptr::eq(h.as_ptr(), Rc::as_ptr(r)))
        {
            Some(at) => at,
            None => {
                held.truncate(PLANS - 1);
                held.insert(0, (Rc::downgrade(r), plan_of(r)));
                0
            }
        };
        // The match's and its group's spans, for the two plans that find them without slots.
        let spans = match held.get_mut(at).map(|(_, plan)| plan) {
            Some(Plan::Whole) => {
                return r
                    .find(s)
                    .map(|m| Value::str(m.as_str()))
                    .unwrap_or_default();
            }
            Some(Plan::Fixed { front, back }) => r.find(s).map(|m| {
                let group = (m.start() + *front, m.end().saturating_sub(*back));
                ((m.start(), m.end()), group)
            }),
            Some(Plan::Suffix(p)) => p
                .find(s)
                .map(|(start, group)| ((start, s.len()), (group, s.len()))),
            Some(Plan::Slots(locs)) => {
                return match r.captures_read(locs, s) {
                    Some(_) => located_groups(s, locs),
                    None => Value::Nil,
                };
            }
            None => None,
        };
        spans.map_or(Value::Nil, |(whole, group)| pair(s, whole, group))
    })
}

/// The plan for a pattern with groups: [`Plan::Suffix`] when [`Suffix::of`] reads the pattern
/// as one, [`Plan::Fixed`] when [`fixed_group`] finds its one group at fixed offsets, else
/// capture slots.
fn plan_of(r: &regex::Regex) -> Plan {
    if r.captures_len() == 1 {
        return Plan::Whole;
    }
    if r.captures_len() == 2
        && let Some(suffix) = Suffix::of(r.as_str())
    {
        return Plan::Suffix(suffix);
    }
    match fixed_group(r.as_str()) {
        Some((front, back)) if r.captures_len() == 2 => Plan::Fixed { front, back },
        _ => Plan::Slots(r.capture_locations()),
    }
}

/// A pattern `LIT(C{min,})$`: a literal (perhaps empty) whose last byte is not in the ASCII
/// class `C`, then one group repeating `C` at least `min` times up to the end of the text
/// (`$` and `\z` without `(?m)`). Every match ends at the end, and its group cannot start
/// inside the run of class bytes that ends the text (the literal would have to end on a class
/// byte) nor after its start (the byte before would be a class byte, not the literal's): so
/// the one candidate is the whole run, preceded by the literal, and it is the match.
struct Suffix {
    lit: Box<[u8]>,
    /// Whether each byte is in the class (only ASCII ones can be): a load per byte of the walk.
    class: Box<[bool; 256]>,
    min: usize,
}

impl Suffix {
    /// The suffix form of `pattern`, parsed as the `regex` crate parses it; `None` for any other
    /// shape (case-insensitive letters, a class with non-ASCII characters, a bounded count,
    /// anything after the group but the end), which the general plans answer.
    #[inline(never)]
    fn of(pattern: &str) -> Option<Suffix> {
        use regex_syntax::hir::{HirKind, Look};
        let hir = regex_syntax::parse(pattern).ok()?;
        let HirKind::Concat(parts) = hir.kind() else {
            return None;
        };
        let (lit, group, end): (&[u8], _, _) = match parts.as_slice() {
            [lit, group, end] => match lit.kind() {
                HirKind::Literal(l) => (&l.0, group, end),
                _ => return None,
            },
            [group, end] => (&[], group, end),
            _ => return None,
        };
        if !matches!(end.kind(), HirKind::Look(Look::End)) {
            return None;
        }
        let HirKind::Capture(cap) = group.kind() else {
            return None;
        };
        let HirKind::Repetition(rep) = cap.sub.kind() else {
            return None;
        };
        let class = match (rep.max, rep.sub.kind()) {
            (None, HirKind::Class(c)) => ascii_class(c)?,
            _ => return None,
        };
        let plan = Suffix {
            lit: lit.into(),
            class,
            min: usize::try_from(rep.min).ok()?,
        };
        match lit.last() {
            Some(&b) if plan.has(b) => None,
            _ => Some(plan),
        }
    }

    fn has(&self, b: u8) -> bool {
        self.class.get(usize::from(b)).copied().unwrap_or(false)
    }

    /// The match's start and its group's start in `s` (both end at its end), or `None`.
    fn find(&self, s: &str) -> Option<(usize, usize)> {
        let bytes = s.as_bytes();
        let run = bytes.iter().rev().take_while(|&&b| self.has(b)).count();
        if run < self.min {
            return None;
        }
        let group = bytes.len() - run;
        let start = group.checked_sub(self.lit.len())?;
        // Compared byte by byte: the literal is short (`@`), shorter than a `bcmp` call.
        let before = bytes.get(start..group)?;
        before.iter().eq(self.lit.iter()).then_some((start, group))
    }
}

/// The bytes of a class of ASCII characters only, as a table; `None` when it holds others.
fn ascii_class(class: &regex_syntax::hir::Class) -> Option<Box<[bool; 256]>> {
    use regex_syntax::hir::Class;
    let ranges: Vec<(u32, u32)> = match class {
        Class::Unicode(c) => c
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        Class::Bytes(c) => c
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
    };
    let mut table = Box::new([false; 256]);
    for (lo, hi) in ranges {
        if hi >= 128 {
            return None;
        }
        for b in lo..=hi {
            if let Some(slot) = usize::try_from(b).ok().and_then(|b| table.get_mut(b)) {
                *slot = true;
            }
        }
    }
    Some(table)
}

/// The byte offsets of a pattern's only group from the start and the end of every match, when
/// the pattern is a sequence of parts each matching text of one fixed byte length but that
/// group (which holds no other group). Parsed as the `regex` crate parses it (the same default
/// syntax); `None` whenever it cannot tell, so the general path answers.
fn fixed_group(pattern: &str) -> Option<(usize, usize)> {
    use regex_syntax::hir::{Hir, HirKind};
    let hir = regex_syntax::parse(pattern).ok()?;
    if hir.properties().explicit_captures_len() != 1 {
        return None;
    }
    let parts: &[Hir] = match hir.kind() {
        HirKind::Concat(parts) => parts,
        _ => std::slice::from_ref(&hir),
    };
    let at = parts
        .iter()
        .position(|h| matches!(h.kind(), HirKind::Capture(_)))?;
    let fixed_len = |hs: &[Hir]| {
        hs.iter().try_fold(0usize, |n, h| {
            let p = h.properties();
            let len = p
                .minimum_len()
                .filter(|&min| Some(min) == p.maximum_len())?;
            (p.explicit_captures_len() == 0).then_some(n + len)
        })
    };
    let (before, rest) = parts.split_at(at);
    Some((fixed_len(before)?, fixed_len(rest.get(1..)?)?))
}

/// `[match group]` of `s` at the two spans, as [`groups`] makes it from `Captures`.
#[inline]
fn pair(s: &str, whole: (usize, usize), group: (usize, usize)) -> Value {
    let text = |(start, end): (usize, usize)| s.get(start..end).map(Value::str);
    // Written into the inline buffer whole: no length check per push.
    let both = [
        text(whole).unwrap_or_default(),
        text(group).unwrap_or_default(),
        Value::Nil,
    ];
    let out = crate::pvec::Flat::from_buf_and_len(both, 2);
    Value::Vector(Coll::new(PVec::from_flat(out)))
}

/// A match with groups (from capture slots), as [`groups`] makes it from `Captures`.
fn located_groups(s: &str, locs: &regex::CaptureLocations) -> Value {
    let mut out = PVec::new();
    for g in 0..locs.len() {
        let text = locs.get(g).and_then(|(start, end)| s.get(start..end));
        out.push_back(text.map(Value::str).unwrap_or_default());
    }
    Value::Vector(Coll::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::regex::{compile, groups};

    /// `re-find`'s fixed-offset plan answers as `captures` does, over patterns made of random
    /// parts around one group (fixed and variable lengths, looks, case-insensitive letters whose
    /// forms differ in length) and random texts; more patterns than `PLANS` interleave, so
    /// plans are evicted and made again.
    #[test]
    fn fixed_group_plans_answer_as_captures() {
        let fixed = [
            "@", "a", "\\d", ".", "é", "^", "$", "\\b", "[a-z]", "(?:ab)", "\\.", "",
        ];
        let varying = ["x?", "(?i)k", "a+", "(?:é|e)", "\\w", "b*?"];
        let group = [
            "([a-z0-9.-]+)",
            "(.*)",
            "(\\w*?)",
            "(é|e)",
            "()",
            "(a|bc)",
            "(k)",
        ];
        let mut rng = crate::test_rng::Rng(0x5eed);
        let part = |rng: &mut crate::test_rng::Rng| {
            let from: &[&str] = if rng.below(4) == 0 { &varying } else { &fixed };
            from[rng.below(from.len())]
        };
        let mut patterns = vec![r"@([a-z0-9.-]+)$".to_string()];
        for _ in 0..40 {
            let mut p = String::new();
            for _ in 0..rng.below(3) {
                p.push_str(part(&mut rng));
            }
            p.push_str(group[rng.below(group.len())]);
            for _ in 0..rng.below(3) {
                p.push_str(part(&mut rng));
            }
            patterns.push(p);
        }
        let regexes: Vec<Rc<regex::Regex>> =
            patterns.iter().filter_map(|p| compile(p).ok()).collect();
        let planned = regexes
            .iter()
            .filter(|r| matches!(plan_of(r), Plan::Fixed { .. }));
        assert!(planned.count() >= 10, "the fixed plan is exercised");
        answers_as_captures(&regexes, "a@b1.é-Kk xe\u{212A}c", 12, 5_000, &mut rng);
    }

    /// `rounds` random texts of up to `max_len` characters of `alphabet`, each searched by a
    /// random one of `regexes`: `re_find`'s plan must answer as the engine's `captures`.
    fn answers_as_captures(
        regexes: &[Rc<regex::Regex>],
        alphabet: &str,
        max_len: usize,
        rounds: usize,
        rng: &mut crate::test_rng::Rng,
    ) {
        let alphabet: Vec<char> = alphabet.chars().collect();
        for _ in 0..rounds {
            let r = &regexes[rng.below(regexes.len())];
            let text: String = (0..rng.below(max_len))
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let general = r.captures(&text).map(|c| groups(&c)).unwrap_or_default();
            assert_eq!(
                re_find(r, &text),
                general,
                "(re-find #{:?} {text:?})",
                r.as_str()
            );
        }
    }

    /// `re-find`'s suffix plan answers as `captures` does, over patterns made of a literal, a
    /// repeated class in a group and an end (some of which the plan declines: a literal ending
    /// in a class byte, a class with non-ASCII characters, a bounded count, a line end) and
    /// texts with class bytes, literals, non-ASCII letters and line ends.
    #[test]
    fn suffix_plans_answer_as_captures() {
        let lits = ["", "@", "é", "x@", "\\.", "-", "@", "ab"];
        let classes = [
            "[a-z0-9.-]",
            "[a-c]",
            "\\d",
            "[a@]",
            "[^a]",
            "(?-u:\\w)",
            "[.\\n]",
            "é",
        ];
        let counts = ["+", "*", "{2,}", "+?", "{1,3}", ""];
        let ends = ["$", "\\z", "$", "(?m:$)", ""];
        let mut rng = crate::test_rng::Rng(0x5eed_5aff);
        let mut regexes = Vec::new();
        for _ in 0..100 {
            let p = format!(
                "{}({}{}){}",
                lits[rng.below(lits.len())],
                classes[rng.below(classes.len())],
                counts[rng.below(counts.len())],
                ends[rng.below(ends.len())]
            );
            regexes.push(compile(&p).unwrap_or_else(|e| panic!("{p}: {e}")));
        }
        let planned = regexes
            .iter()
            .filter(|r| matches!(plan_of(r), Plan::Suffix(_)))
            .count();
        assert!(planned >= 20, "the suffix plan is exercised ({planned})");
        answers_as_captures(&regexes, "a@b1.é-Kxc\n_", 10, 20_000, &mut rng);
    }

    #[test]
    fn suffixes_are_read_only_from_their_shape() {
        let plan = Suffix::of(r"@([a-z0-9.-]+)$").unwrap_or_else(|| panic!("the p4 pattern"));
        assert_eq!((&*plan.lit, plan.min), (&b"@"[..], 1));
        assert!(plan.has(b'a') && plan.has(b'.') && !plan.has(b'@') && !plan.has(b'A'));
        assert!(Suffix::of(r"(\d*)\z").is_none(), "\\d is Unicode");
        assert!(Suffix::of(r"((?-u:\d)*)\z").is_some_and(|p| p.lit.is_empty() && p.min == 0));
        for other in [
            r"@([a-z]+)",
            r"@[a-z]+$",
            r"@([a-z]{1,4})$",
            r"a([a-z]+)$",
            r"(?i)@([a-z]+)$",
            r"(?m)@([a-z]+)$",
            r"@([a-z])$",
            r"@([a-z]+)$$",
            r"^@([a-z]+)$",
            r"@([a-zé]+)$",
        ] {
            assert!(Suffix::of(other).is_none(), "{other}");
        }
    }

    /// A plan holds its regex weakly: the compiled regex goes when the program drops it, and a
    /// regex made later (perhaps where a dropped one was) never gets the dropped one's plan.
    #[test]
    fn plans_neither_keep_regexes_nor_outlive_them() {
        let patterns = [r"@(\w+)$", r"(\d+)x", r"^(a)", r"b(.)", r"(\d)(\d)"];
        for round in 0..60 {
            let p = patterns[round % patterns.len()];
            let r = compile(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            for text in ["ab@cd", "12x", "a", "bé", "123"] {
                let general = r.captures(text).map(|c| groups(&c)).unwrap_or_default();
                assert_eq!(re_find(&r, text), general, "(re-find #{p:?} {text:?})");
            }
            assert_eq!(Rc::strong_count(&r), 1, "only the program holds its regex");
        }
    }

    #[test]
    fn fixed_groups_are_found_only_where_they_are_fixed() {
        assert_eq!(fixed_group(r"@([a-z0-9.-]+)$"), Some((1, 0)));
        assert_eq!(fixed_group(r"(\d+)"), Some((0, 0)));
        assert_eq!(fixed_group(r"é\.(x)ab$"), Some((3, 2)));
        for other in [
            r"a+(b)",
            r"(a)(b)",
            r"((a))",
            r"(a)|b",
            r"(?i)k(a)",
            r"\d+",
            r"(a)x?",
            r"(a)..",
            "(",
        ] {
            assert_eq!(fixed_group(other), None, "{other}");
        }
    }

    /// `re-find` with reused capture slots (and a plain search without groups) answers as
    /// `captures` does, however calls with different patterns interleave.
    #[test]
    fn re_find_answers_as_captures() {
        let patterns = [
            r"@([a-z0-9.-]+)$",
            r"\d+",
            r"(a)|(b)",
            r"(x)?y",
            r"(?<word>\w+)\s(\w+)?",
            r"^$",
            r"é(.)",
        ];
        let texts = [
            "ada@example.com",
            "a1b22",
            "b",
            "y",
            "xy",
            "hi there",
            "",
            "éa",
            "@",
        ];
        let regexes: Vec<Rc<regex::Regex>> = patterns
            .iter()
            .map(|p| compile(p).unwrap_or_else(|e| panic!("{p}: {e}")))
            .collect();
        let mut rng = crate::test_rng::Rng(0x0f1d);
        for _ in 0..500 {
            let r = &regexes[rng.below(regexes.len())];
            let text = texts[rng.below(texts.len())];
            let general = r.captures(text).map(|c| groups(&c)).unwrap_or_default();
            assert_eq!(
                re_find(r, text),
                general,
                "(re-find #{:?} {text:?})",
                r.as_str()
            );
        }
    }
}
