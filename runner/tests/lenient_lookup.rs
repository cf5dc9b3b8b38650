//! The one-pass lenient keyword lookup in small maps (`MapImpl::get_lenient`) against its
//! definition (`get_lenient_general`: the exact key, else the string key with the same text),
//! over maps mixing keyword and string keys in every order, small and hashed.
#![allow(clippy::unwrap_used)]

use ptc_runner::value::{KeyHint, MapImpl, Text, Value};

fn key(i: usize, text: &str) -> Value {
    match i % 3 {
        0 => Value::kw(text),
        1 => Value::str(text),
        _ => Value::Int(i64::try_from(text.len()).unwrap_or(0)),
    }
}

#[test]
fn one_pass_lenient_lookup_agrees_with_its_definition() {
    let texts = ["a", "b", "status", "ab", "a/b", ""];
    let wanted: Vec<Value> = texts
        .iter()
        .flat_map(|t| [Value::kw(t), Value::str(t), Value::Int(1)])
        .chain([Value::kw("missing"), Value::Nil])
        .collect();
    let mut checked = 0;
    // Every map of up to 10 entries whose keys take the texts in turn, as keyword, string or int.
    for n in 0..=10 {
        for shape in 0..27usize {
            let mut m = MapImpl::default();
            for i in 0..n {
                let text = texts[(i + shape) % texts.len()];
                m.insert(
                    key(i + shape / 3 + shape % 3 * i, text),
                    Value::Int(i64::try_from(i).unwrap_or(0)),
                );
            }
            for k in &wanted {
                assert_eq!(m.get_lenient(k), m.get_lenient_general(k), "{m:?} {k:?}");
                checked += 1;
            }
        }
    }
    assert!(checked > 5000);
}

#[test]
fn the_keyword_key_wins_over_the_string_key_wherever_it_stands() {
    for keyword_first in [true, false] {
        let mut m = MapImpl::default();
        let (kw, st) = (
            (Value::kw("a"), Value::Int(1)),
            (Value::str("a"), Value::Int(2)),
        );
        let (first, second) = if keyword_first { (kw, st) } else { (st, kw) };
        m.insert(first.0, first.1);
        m.insert(second.0, second.1);
        assert_eq!(m.get_lenient(&Value::kw("a")), Some(&Value::Int(1)));
        assert_eq!(m.get_lenient(&Value::str("a")), Some(&Value::Int(2)));
    }
}

/// The call-site lookup of `(:k m)` (`get_keyword_hinted`) against `get_lenient_general`, from
/// every starting hint (right, wrong, past the end) and with the hint it leaves carried on to
/// the next map, as a call site carries it from record to record.
#[test]
fn the_hinted_keyword_lookup_agrees_with_its_definition() {
    let texts = ["a", "b", "status", "ab", "a/b", ""];
    let wanted: Vec<Text> = texts
        .iter()
        .chain(&["missing"])
        .map(|t| Text::from(*t))
        .collect();
    let mut checked = 0;
    for k in &wanted {
        // One call site per key: its hint carries from map to map.
        let carried = KeyHint::default();
        for n in 0..=10 {
            for shape in 0..27usize {
                let mut m = MapImpl::default();
                for i in 0..n {
                    let text = texts[(i + shape) % texts.len()];
                    m.insert(
                        key(i + shape / 3 + shape % 3 * i, text),
                        Value::Int(i64::try_from(i).unwrap_or(0)),
                    );
                }
                let want = m.get_lenient_general(&Value::Keyword(k.clone()));
                assert_eq!(m.get_keyword_hinted(k, &carried), want, "{m:?} {k:?}");
                for start in 0..12 {
                    let hint = KeyHint::starting_at(start);
                    assert_eq!(m.get_keyword_hinted(k, &hint), want, "{m:?} {k:?} @{start}");
                    // A second lookup from the hint left behind still agrees.
                    assert_eq!(m.get_keyword_hinted(k, &hint), want, "{m:?} {k:?} again");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 20_000, "{checked}");
}

/// Records of one shape with string keys (JSON rows): the identical keyword of the program and
/// a keyword with the same text but another allocation both find the value.
#[test]
fn the_hinted_lookup_finds_json_keys_from_any_keyword_with_their_text() {
    let row = |i: i64| {
        let mut m = MapImpl::default();
        for (k, v) in [("id", i), ("status", i * 2), ("total", i * 3)] {
            m.insert(Value::str(k), Value::Int(v));
        }
        m
    };
    let hint = KeyHint::default();
    let status = Text::from("status");
    for i in 0..5 {
        assert_eq!(
            row(i).get_keyword_hinted(&status, &hint),
            Some(&Value::Int(i * 2))
        );
        assert_eq!(hint.at(), 1, "the hint points at the key");
    }
    let mut mixed = row(7);
    mixed.insert(Value::kw("status"), Value::str("kw"));
    assert_eq!(
        mixed.get_keyword_hinted(&status, &hint),
        Some(&Value::str("kw")),
        "a keyword key wins over the string key the hint points at"
    );
}

/// Through the evaluator: `(:a m)` written in the source and the keyword fns of `map`,
/// `filter`, `group-by` and `sort-by` (which keep a hint from map to map) answer as `get` does
/// (the unhinted lookup), over maps whose shapes change from one element to the next.
#[test]
fn keyword_calls_over_changing_shapes_answer_as_get() {
    let maps = r#"[{"a" 1 "b" 2} {"b" 3 "a" 4} {:a 5 "a" 6} {"a" 7 :a 8} {:b 9} {"x" 1 "y" 2 "z" 3 "a" 10}
                   {"a" 11} nil {"q" 1 "r" 2 "s" 3 "t" 4 "u" 5 "v" 6 "w" 7 "x" 8 "a" 12} [0 1] {"a" 13 "b" 2}]"#;
    let src = format!(
        "(let [ms {maps} want (mapv #(get % :a) ms)]
           [want
            (= want (mapv (fn [m] (:a m)) ms) (map :a ms) (mapv :a ms))
            (= (filter #(get % :a) ms) (filter :a ms))
            (= (group-by #(get % :a) ms) (group-by :a ms))
            (= (sort-by #(or (get % :a) 0) (remove nil? ms)) (sort-by #(or (:a %) 0) (remove nil? ms)))])"
    );
    let step = ptc_runner::run(&src, ptc_runner::RunOptions::default()).unwrap();
    assert_eq!(
        step.return_value.map(|v| v.to_string()).unwrap_or_default(),
        "[[1 4 5 8 nil 10 11 nil 12 nil 13] true true true true]"
    );
}
