//! A signature's check of a context in its encoding (`Signature::validate_input_encoded`,
//! row by row) against the check of its tree (`validate_input_owned`), on contexts built from
//! the bytes: the same errors, warnings and value (compared as encodings), and no panic. The
//! first bytes pick the signature and the mode; the rest build the context (rows of maps
//! under keys the signatures name, in their different spellings, with values to coerce).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptc_shared::Value;
use ptc_shared::signature::{Mode, Signature};
use ptc_shared::value::{EncodedValue, Map};

const SIGNATURES: &[&str] = &[
    "(rows [{id :int, name :string?}], n :int?) -> :any",
    "(rows [:map]?, user_id :int) -> :any",
    "(rows [:vector [:maybe [:map [:id :double]]]], tags [:keyword]) -> :any",
    "(rows :int, n [:sequential [:enum \"a\" :b]]) -> :any",
    "(n [:map {:closed true} [:id :int] [:x {:default 3} :int]]) -> :any",
];
const KEYS: &[&str] = &["rows", "n", "id", "name", "user_id", "user-id", "tags", "x"];
const MODES: [Mode; 4] = [Mode::Enabled, Mode::WarnOnly, Mode::Strict, Mode::Disabled];

fn byte(data: &mut &[u8]) -> u8 {
    let (first, rest) = data.split_first().unwrap_or((&0, &[]));
    *data = rest;
    *first
}

fn key(data: &mut &[u8]) -> Value {
    let b = byte(data);
    let name = KEYS[usize::from(b) % KEYS.len()];
    if b & 0x80 == 0 {
        Value::Str(name.into())
    } else {
        Value::Keyword(name.into())
    }
}

fn value(data: &mut &[u8], depth: u32) -> Value {
    let b = byte(data);
    let n = usize::from(byte(data) % 5);
    match b % 10 {
        0 => Value::Nil,
        1 => Value::Int(i64::from(b)),
        2 => Value::Str(format!("{}", b / 3)),
        3 => Value::Str("a".into()),
        4 => Value::Keyword("b".into()),
        5 => Value::Float(f64::from(b) / 2.0),
        6 => Value::Bool(b & 1 == 0),
        7 | 8 if depth < 4 => Value::Vector((0..n).map(|_| value(data, depth + 1)).collect()),
        9 if depth < 4 => map(data, n, depth + 1),
        _ => Value::List(vec![Value::Int(1)]),
    }
}

fn map(data: &mut &[u8], n: usize, depth: u32) -> Value {
    let mut m = Map::new();
    for _ in 0..n {
        let k = key(data);
        m.insert(k, value(data, depth));
    }
    Value::Map(Box::new(m))
}

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let text = SIGNATURES[usize::from(byte(&mut data)) % SIGNATURES.len()];
    let sig = Signature::parse(text).expect("the signatures parse");
    let mode = MODES[usize::from(byte(&mut data)) % MODES.len()];
    let n = usize::from(byte(&mut data) % 6);
    let ctx = if n == 5 {
        value(&mut data, 0)
    } else {
        map(&mut data, n, 0)
    };
    let encoded = EncodedValue::encode(&ctx);
    let tree = sig.validate_input_owned(ctx, mode);
    let stream = sig.validate_input_encoded(&encoded, mode);
    match (tree, stream) {
        (Ok(t), Ok(s)) => {
            assert_eq!(t.warnings, s.warnings);
            let got = s.value.unwrap_or(encoded);
            assert_eq!(EncodedValue::encode(&t.value), got);
        }
        (Err(t), Err(s)) => assert_eq!(t, s),
        (t, s) => panic!("tree {t:?}, encoded {s:?}"),
    }
});
