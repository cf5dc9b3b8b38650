//! The daemon's side of a client connection, and the client's side of the daemon's answers, on
//! arbitrary bytes: framing (`read_frame_bytes` over the whole input) and decoding of either
//! direction's message must fail with a `CodecError`, never panic, and never cost more than the
//! budget `value::wire::decode_budget` allows (a body of 1-byte `nil` tokens is the worst case;
//! see shared/src/value/wire.rs). What decodes must survive a re-encode (see `common.rs`).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ptc_shared::client_protocol::{ClientToServer, ServerToClient};
use ptc_shared::codec::read_frame_bytes;

fuzz_target!(|data: &[u8]| {
    // As a stream: header then body, as `conn.rs` reads it.
    let mut stream = std::io::Cursor::new(data);
    while let Ok(Some(body)) = read_frame_bytes(&mut stream, common::MAX) {
        common::decode_and_round_trip::<ClientToServer>(&body);
    }
    // As bare bodies, both directions.
    common::decode_and_round_trip::<ClientToServer>(data);
    common::decode_and_round_trip::<ServerToClient>(data);
});
