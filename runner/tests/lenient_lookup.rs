//! The one-pass lenient keyword lookup in small maps (`MapImpl::get_lenient`) against its
//! definition (`get_lenient_general`: the exact key, else the string key with the same text),
//! over maps mixing keyword and string keys in every order, small and hashed.
#![allow(clippy::unwrap_used)]

use ptc_runner::value::{MapImpl, Value};

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
