#![allow(clippy::unwrap_used, clippy::cast_possible_wrap)]

use super::*;
use crate::codec::{DEFAULT_MAX_FRAME, HEADER_LEN, encode_frame};
use crate::value::{Map, Set};

/// What bincode itself writes for `v` (the frame body, without its header).
fn bincode_of(v: &Value) -> Vec<u8> {
    encode_frame(v, DEFAULT_MAX_FRAME).unwrap()[HEADER_LEN..].to_vec()
}

fn samples() -> Vec<Value> {
    let mut m = Map::new();
    m.insert(Value::keyword("k"), Value::Int(-1));
    m.insert(Value::string("s"), Value::Vector(vec![]));
    m.insert(Value::Int(3), Value::Nil);
    let mut out = vec![
        Value::Nil,
        Value::Bool(true),
        Value::Bool(false),
        Value::Float(-0.0),
        Value::Float(f64::NAN),
        Value::Float(1e300),
        Value::string(""),
        Value::string("é\u{1F600}\0"),
        Value::keyword("a/b"),
        Value::Map(Box::new(m)),
        Value::Map(Box::new(Map::new())),
        Value::Set(Box::new(
            [Value::Int(1), Value::string("x")]
                .into_iter()
                .collect::<Set>(),
        )),
        Value::List(vec![Value::Nil, Value::Vector(vec![Value::List(vec![])])]),
    ];
    // Varint boundaries: integers (zig-zag), string lengths, collection counts.
    for n in [
        0i64,
        1,
        -1,
        125,
        126,
        127,
        32767,
        32768,
        -32768,
        -32769,
        i64::MAX,
        i64::MIN,
    ] {
        out.push(Value::Int(n));
    }
    for len in [250usize, 251, 65535, 65536] {
        out.push(Value::string("x".repeat(len)));
        out.push(Value::Vector(vec![Value::Nil; len]));
    }
    out
}

#[test]
fn encoding_is_bincodes_byte_for_byte() {
    for v in samples() {
        let e = EncodedValue::encode(&v);
        assert_eq!(e.as_bytes(), bincode_of(&v).as_slice(), "{v:?}");
        assert_eq!(
            e.encoded_len(),
            crate::codec::encoded_len(&v).unwrap(),
            "{v:?}"
        );
        let back = e.to_value().unwrap();
        assert_eq!(crate::value::pr_str(&back), crate::value::pr_str(&v));
    }
    assert!(EncodedValue::default().is_nil());
    assert!(!EncodedValue::encode(&Value::Int(0)).is_nil());
}

/// A collection written with `open`/`close` (count unknown up front) encodes as one written
/// with its count: at every width of the count, nested too.
#[test]
fn open_and_close_write_what_header_writes() {
    for n in [0usize, 1, 250, 251, 65535, 65536] {
        let mut w = TokenWriter::new();
        let outer = w.open(Kind::Vector);
        let inner = w.open(Kind::Map);
        for i in 0..n {
            w.str(&i.to_string());
            w.int(i as i64);
        }
        w.close(inner, n);
        w.bool(true);
        w.close(outer, 2);
        let mut m = Map::new();
        for i in 0..n {
            m.insert(Value::string(i.to_string()), Value::Int(i as i64));
        }
        let v = Value::Vector(vec![Value::Map(Box::new(m)), Value::Bool(true)]);
        assert_eq!(w.finish().as_bytes(), bincode_of(&v).as_slice(), "{n}");
    }
}

#[test]
fn a_later_value_moves_over_an_earlier_one() {
    // [1 "a" 3] with "a" replaced by a longer value, then by a shorter one.
    let mut w = TokenWriter::new();
    let h = w.open(Kind::Vector);
    w.int(1);
    let at = w.position();
    w.str("a");
    let end = w.position();
    w.int(3);
    let from = w.position();
    w.header(Kind::Vector, 2);
    w.nil();
    w.str("long");
    let delta = w.move_into(from, at, end);
    // The new value (3 tokens, 9 bytes) replaced a 3-byte string.
    assert_eq!(delta, 6);
    w.close(h, 3);
    let long = Value::Vector(vec![Value::Nil, Value::string("long")]);
    let v = Value::Vector(vec![Value::Int(1), long, Value::Int(3)]);
    assert_eq!(w.finish().as_bytes(), bincode_of(&v).as_slice());
    let mut w = TokenWriter::new();
    let at = w.position();
    w.str("gone");
    w.truncate(at);
    w.nil();
    assert!(w.finish().is_nil());
}

#[test]
fn a_peers_bytes_are_checked() {
    let good = bincode_of(&Value::Vector(vec![Value::Int(1), Value::string("x")]));
    assert!(EncodedValue::from_bytes(good.clone()).is_ok());
    let mut trailing = good.clone();
    trailing.push(0);
    let truncated = good[..good.len() - 1].to_vec();
    // A count claiming more tokens than there are; a tag no token has.
    let overclaim = [vec![5u8], good[1..].to_vec()].concat();
    let bad_tag = vec![1u8, 42];
    let deep = EncodedValue::encode(
        &(0..=crate::value::MAX_DEPTH).fold(Value::Nil, |v, _| Value::Vector(vec![v])),
    );
    for (name, bytes) in [
        ("trailing", trailing),
        ("truncated", truncated),
        ("overclaim", overclaim),
        ("bad tag", bad_tag),
        ("too deep", deep.as_bytes().to_vec()),
        ("empty", vec![]),
    ] {
        assert!(EncodedValue::from_bytes(bytes).is_err(), "{name}");
    }
}

#[test]
fn it_travels_as_one_byte_string() {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Carrier {
        before: u32,
        value: EncodedValue,
        after: String,
    }
    let c = Carrier {
        before: 7,
        value: EncodedValue::encode(&Value::Vector(vec![Value::Int(1), Value::Nil])),
        after: "end".into(),
    };
    let frame = encode_frame(&c, 1 << 10).unwrap();
    let body = &frame[HEADER_LEN..];
    // One length, then the tokens as they are: the frame copies them and nothing else.
    let tokens = c.value.as_bytes();
    assert!(body.windows(tokens.len()).any(|w| w == tokens));
    let back: Carrier = crate::codec::read_frame_bytes(&mut &frame[..], 1 << 10)
        .unwrap()
        .map(|b| bincode_decode(&b))
        .unwrap();
    assert_eq!(back, c);
    let json = serde_json::to_string(&c).unwrap();
    assert_eq!(serde_json::from_str::<Carrier>(&json).unwrap(), c);
}

fn bincode_decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> T {
    bincode_read(body).unwrap()
}

/// bincode's own decoder, with the codec's options.
fn bincode_read<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .reject_trailing_bytes()
        .deserialize(body)
        .map_err(|e| e.to_string())
}

/// The hand-written reader accepts exactly what bincode's decoder accepts and reads the same
/// values: every sample, and every sample damaged at every byte (set to each varint marker,
/// to 0, 1, 255 and to its neighbour), cut short at every length, or followed by a byte.
#[test]
fn the_reader_is_bincodes_decoder() {
    let check = |bytes: &[u8]| {
        let ours = EncodedValue::from_bytes(bytes.to_vec()).and_then(|e| e.to_value());
        let theirs = bincode_read::<Value>(bytes);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(crate::value::pr_str(a), crate::value::pr_str(b)),
            (Err(_), Err(_)) => {}
            _ => panic!("{bytes:?}: ours {ours:?}, bincode {theirs:?}"),
        }
    };
    let mut tried = 0;
    for v in samples()
        .into_iter()
        .filter(|v| crate::codec::encoded_len(v).unwrap() < 300)
    {
        let good = bincode_of(&v);
        check(&good);
        for i in 0..good.len() {
            for b in [
                0u8,
                1,
                2,
                4,
                8,
                250,
                251,
                252,
                253,
                254,
                255,
                good[i].wrapping_add(1),
            ] {
                let mut bad = good.clone();
                bad[i] = b;
                check(&bad);
                tried += 1;
            }
            check(&good[..i]);
        }
        check(&[good.as_slice(), &[0]].concat());
    }
    assert!(tried > 1000, "{tried}");
}
