#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)]

use super::*;
use crate::value::Value;

const BIG: usize = 64 << 20;

/// Today's path: the text read into a `Value`, then encoded.
fn through_a_tree(text: &str) -> Result<Vec<u8>, String> {
    Value::from_json_text(text.as_bytes())
        .map(|v| EncodedValue::encode(&v).as_bytes().to_vec())
        .map_err(|e| e.to_string())
}

/// The transcoder and today's path agree: the same bytes, or both refuse; and so does the
/// transcoder fed by a deserializer (a field of a larger message, as `ptc mcp` reads one).
fn agree(text: &str) {
    let direct = EncodedValue::from_json_text(text.as_bytes(), BIG);
    let mut de = serde_json::Deserializer::from_str(text);
    let seeded = EncodedValue::deserialize_json(&mut de, BIG).and_then(|e| de.end().map(|()| e));
    let seeded = seeded.ok().map(|e| e.as_bytes().to_vec());
    let from_text = direct.as_ref().ok().map(|e| e.as_bytes().to_vec());
    assert_eq!(seeded, from_text, "{text}");
    match (through_a_tree(text), direct) {
        (Ok(tree), Ok(direct)) => assert_eq!(direct.as_bytes(), tree.as_slice(), "{text}"),
        (Err(_), Err(_)) => {}
        (tree, direct) => panic!("{text}: tree {tree:?}, direct {direct:?}"),
    }
}

#[test]
fn hand_picked_inputs_agree() {
    let deep = |n: usize, open: &str, close: &str| format!("{}{}", open.repeat(n), close.repeat(n));
    let mut cases: Vec<String> = [
        "null",
        "true",
        "false",
        "0",
        "-0",
        "-0.0",
        "1e2",
        "1E-7",
        "0.1",
        "1.7976931348623157e308",
        "1e309",
        "-1e400",
        "5e-324",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
        r#""""#,
        r#""plain""#,
        r#""esc \" \\ \/ \b \f \n \r \t""#,
        r#""\u00e9\u0000\u001f\u4e2d""#,
        r#""\ud83d\ude00 pair""#,
        r#""\ud83d lone""#,
        r#""\ude00 lone trail""#,
        "\"raw é 中 😀\"",
        "\"ctl \u{1}\"",
        "[]",
        "{}",
        "[[], {}, [{}], {\"a\": []}]",
        r#"{"a":1,"a":2}"#,
        r#"{"a":1,"b":2,"a":[3,4,{"c":5}]}"#,
        r#"{"a":[1,2,3],"b":"x","a":null}"#,
        r#"{"a":{"x":1,"x":2},"b":1,"a":{"y":1,"y":[1],"y":true}}"#,
        r#"{"a":1,"a":2,"a":3,"b":4,"b":5}"#,
        r#"{"\u0061":1,"a":2}"#,
        r#"{"":0,"":1}"#,
        " \n\t [ 1 , \"a\" ] \r\n",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "{\"a\" 1}",
        "{1:2}",
        "[1] x",
        "",
        "   ",
        "[",
        "{\"a\":",
        "\"unterminated",
        "nul",
        "[NaN]",
        "[Infinity]",
        "+1",
        "01",
        "1.",
        ".5",
        "[1e]",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for n in [1, 2, 127, 128, 129, 600] {
        cases.push(deep(n, "[", "]"));
        cases.push(format!("{}1{}", "{\"k\":".repeat(n), "}".repeat(n)));
    }
    // Counts and lengths across the varint widths; a large object (hash-indexed keys) with
    // repeats early and late.
    for n in [250usize, 251, 300, 70_000] {
        cases.push(format!("[{}]", vec!["0"; n].join(",")));
        cases.push(format!("\"{}\"", "y".repeat(n)));
    }
    let mut keys: Vec<String> = (0..300).map(|i| format!("\"k{i}\":{i}")).collect();
    keys.extend(["\"k0\":\"first again\"".into(), "\"k299\":[299]".into()]);
    keys.extend(["\"k17\":{\"z\":1}".into(), "\"k3\":null".into()]);
    cases.push(format!("{{{}}}", keys.join(",")));
    for c in &cases {
        agree(c);
    }
}

/// A small deterministic generator of JSON texts: objects with keys from a small set (so keys
/// repeat), numbers at the edges, escapes, surrogate pairs, every nesting shape.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }

    fn string(&mut self) -> String {
        let parts = [
            "a",
            "key",
            "é",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\\n",
            "\\\"",
            "😀",
            "\\u0000",
            " ",
            "中",
        ];
        let n = self.next() % 4;
        let body: String = (0..n).map(|_| self.pick(&parts)).collect();
        format!("\"{body}\"")
    }

    fn value(&mut self, depth: usize) -> String {
        let nums = [
            "0",
            "-1",
            "250",
            "251",
            "65536",
            "9223372036854775807",
            "-9223372036854775808",
            "1.5",
            "-0.0",
            "1e-5",
            "2.5E+3",
            "123456789012345678901",
            "4294967296",
            "9223372036854775808",
            "18446744073709551615",
        ];
        let leaf = depth > 6 || self.next().is_multiple_of(3);
        match (leaf, self.next() % 6) {
            (true, 0) => self.pick(&["null", "true", "false"]).to_string(),
            (true, 1 | 2) => self.pick(&nums).to_string(),
            (true, _) => self.string(),
            (false, 0..=2) => {
                let n = self.next() % 6;
                let xs: Vec<String> = (0..n).map(|_| self.value(depth + 1)).collect();
                format!("[{}]", xs.join(","))
            }
            (false, _) => {
                let n = self.next() % 7;
                let keys = ["\"a\"", "\"b\"", "\"c\"", "\"\\u0061\"", "\"\""];
                let xs: Vec<String> = (0..n)
                    .map(|_| format!("{}: {}", self.pick(&keys), self.value(depth + 1)))
                    .collect();
                format!("{{ {} }}", xs.join(", "))
            }
        }
    }
}

#[test]
fn generated_inputs_agree() {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    let mut refused = 0;
    for _ in 0..3000 {
        let text = g.value(0);
        refused += usize::from(through_a_tree(&text).is_err());
        agree(&text);
        // Damaged copies (cut short, a byte dropped) agree too, mostly as refusals.
        let cut = (g.next() % (text.len() as u64 + 1)) as usize;
        if text.is_char_boundary(cut) {
            agree(&text[..cut]);
        }
    }
    // The generator reaches the refusals too (integers over i64::MAX), not only successes.
    assert!(refused > 10, "{refused}");
}

#[test]
fn errors_are_typed_and_name_the_byte() {
    let err = |t: &str| EncodedValue::from_json_text(t.as_bytes(), BIG).unwrap_err();
    match err("[1, 2,\n  x]") {
        JsonTextError::Syntax {
            offset,
            line,
            column,
            ..
        } => assert_eq!((offset, line, column), (10, 2, 3)),
        e => panic!("{e:?}"),
    }
    let e = err("[1, 18446744073709551615]");
    assert_eq!(
        e,
        JsonTextError::Number {
            number: "18446744073709551615".into(),
            offset: 24
        }
    );
    assert!(e.to_string().contains("at byte 24"), "{e}");
    assert!(matches!(
        err(&format!("{}{}", "[".repeat(200), "]".repeat(200))),
        JsonTextError::TooDeep { offset: 128 }
    ));
    assert!(matches!(
        err("[1] x"),
        JsonTextError::Syntax { offset: 5, .. }
    ));
    assert!(matches!(err(""), JsonTextError::Syntax { offset: 0, .. }));
}

/// The bound is on the encoding: a text whose encoding is exactly the bound is read, one byte
/// less is refused, and reading stops there rather than at the end of the text.
#[test]
fn the_encoding_is_bounded() {
    let text = format!("[{}]", vec!["\"abcdefgh\""; 10_000].join(","));
    let exact = EncodedValue::from_json_text(text.as_bytes(), BIG)
        .unwrap()
        .encoded_len() as usize;
    assert!(EncodedValue::from_json_text(text.as_bytes(), exact).is_ok());
    match EncodedValue::from_json_text(text.as_bytes(), exact - 1) {
        Err(JsonTextError::TooLarge { max, offset }) => {
            assert_eq!(max, exact - 1);
            assert!(offset > text.len() - 20, "{offset}");
        }
        other => panic!("{other:?}"),
    }
    match EncodedValue::from_json_text(text.as_bytes(), 1000) {
        // 1000 bytes of encoding are about 1100 of text (each string's quotes and comma).
        Err(JsonTextError::TooLarge { offset, .. }) => assert!(offset < 1200, "{offset}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_deserializer_s_value_is_encoded_as_its_text_and_bounded() {
    let text = r#"{"rows": [{"v": 1, "v": 2}, {"w": [1.5, "x", null, true]}], "k": {}}"#;
    let json: serde_json::Value = serde_json::from_str(text).unwrap();
    let from_tree = EncodedValue::deserialize_json(json, BIG).unwrap();
    assert_eq!(
        from_tree,
        EncodedValue::from_json_text(text.as_bytes(), BIG).unwrap()
    );
    assert!(from_tree.is_map() && !from_tree.is_nil());
    let many: String = format!("{{\"a\": [{}]}}", vec!["1"; 300].join(","));
    assert!(
        EncodedValue::from_json_text(many.as_bytes(), BIG)
            .unwrap()
            .is_map()
    );
    for not_a_map in ["null", "[1]", "\"m\"", "[{\"a\": 1}]", "1"] {
        let e = EncodedValue::from_json_text(not_a_map.as_bytes(), BIG).unwrap();
        assert!(!e.is_map(), "{not_a_map}");
    }
    let json: serde_json::Value = serde_json::from_str(&many).unwrap();
    let err = EncodedValue::deserialize_json(json, 100).unwrap_err();
    assert!(err.to_string().contains("over 100 bytes"), "{err}");
}
