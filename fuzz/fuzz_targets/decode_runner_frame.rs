//! The runner protocol's decoders on arbitrary bytes. The supervisor trusts nothing a runner
//! sends (`RunnerToSupervisor` from a runner that may be running a hostile program, `Report`
//! from the zygote), and the runner decodes the supervisor's frames (`SupervisorToRunner`) and
//! the zygote the engine's `Request`: each must decode or fail with a `CodecError`, never
//! panic, and what decodes must survive a re-encode (see `common.rs`). The first byte picks the
//! message type; the rest is the body, also read as a stream of frames.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use ptc_shared::codec::read_frame_bytes;
use ptc_shared::protocol::{RunnerToSupervisor, SupervisorToRunner, zygote};

fuzz_target!(|data: &[u8]| {
    let Some((which, body)) = data.split_first() else {
        return;
    };
    let decode: fn(&[u8]) = match which % 4 {
        0 => common::decode_and_round_trip::<RunnerToSupervisor>,
        1 => common::decode_and_round_trip::<zygote::Report>,
        2 => common::decode_and_round_trip::<SupervisorToRunner>,
        _ => common::decode_and_round_trip::<zygote::Request>,
    };
    decode(body);
    let mut stream = std::io::Cursor::new(body);
    while let Ok(Some(frame)) = read_frame_bytes(&mut stream, common::MAX) {
        decode(&frame);
    }
});
