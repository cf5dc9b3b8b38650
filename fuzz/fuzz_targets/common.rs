//! Shared by the decoder targets: decode a body as `T`, and when it decodes, check that the
//! message re-encodes to bytes that decode to the same bytes again (a decoder that accepted
//! something its encoder cannot reproduce would make the two sides of a protocol disagree).
//! Comparing encodings, not values, keeps NaN floats (never equal to themselves) out of the way.

use ptc_shared::codec::{Message, decode_body, encode_frame};

/// The frame size the decoders are given: the protocols' default maximum.
pub const MAX: u32 = 16 << 20;

pub fn decode_and_round_trip<T: Message>(body: &[u8]) {
    let Ok(msg) = decode_body::<T>(body, MAX) else {
        return;
    };
    let Ok(once) = encode_frame(&msg, u32::MAX) else {
        return;
    };
    let again: T = match decode_body(&once[4..], u32::MAX) {
        Ok(m) => m,
        Err(e) => panic!("a re-encoded message does not decode: {e}"),
    };
    let twice = encode_frame(&again, u32::MAX).expect("encodes once, encodes twice");
    assert_eq!(once, twice, "encoding is not stable across a round trip");
}
