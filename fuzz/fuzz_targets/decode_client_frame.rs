//! The daemon's decoder on arbitrary frame bodies: any input must decode or fail with a
//! `CodecError`, never panic, and never cost more than the budget `value::wire::decode_budget`
//! allows (a body of 1-byte `nil` tokens is the worst case; see shared/src/value/wire.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptc_shared::client_protocol::ClientToServer;
use ptc_shared::codec::decode_body;

fuzz_target!(|data: &[u8]| {
    let _ = decode_body::<ClientToServer>(data, 16 << 20);
});
