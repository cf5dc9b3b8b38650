//! Tests of the frame codec through its public functions.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::protocol::{RunnerToSupervisor, SupervisorToRunner};
use crate::{Step, Value};
use proptest::prelude::*;
use std::io::Cursor;

const MAX: u32 = 1 << 20;

fn finished(v: Value) -> RunnerToSupervisor {
    RunnerToSupervisor::Finished(Box::new(Step {
        return_value: Some(v),
        ..Step::default()
    }))
}

/// A reader that yields `0xff` forever and counts how many bytes were taken from it.
struct Endless {
    taken: usize,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        buf.fill(0xff);
        self.taken += buf.len();
        Ok(buf.len())
    }
}

/// A reader that hands out one byte per call, to exercise partial reads.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((b, rest)), Some(slot)) => {
                *slot = *b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[test]
fn frames_round_trip_then_clean_eof() {
    let msgs = vec![
        finished(Value::string("hello")),
        RunnerToSupervisor::MemoryExceeded { peak_bytes: 12345 },
        finished(Value::Vector((0..1000).map(Value::Int).collect())),
    ];
    let mut stream = Vec::new();
    for m in &msgs {
        write_frame(&mut stream, m, MAX).unwrap();
    }
    let mut r = Trickle(&stream);
    for m in &msgs {
        assert_eq!(
            read_frame::<RunnerToSupervisor, _>(&mut r, MAX)
                .unwrap()
                .as_ref(),
            Some(m)
        );
    }
    assert!(
        read_frame::<RunnerToSupervisor, _>(&mut r, MAX)
            .unwrap()
            .is_none()
    );
}

#[test]
fn header_is_big_endian_body_length() {
    let frame = encode_frame(&RunnerToSupervisor::MemoryExceeded { peak_bytes: 1 }, MAX).unwrap();
    let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(len, frame.len() - HEADER_LEN);
}

#[test]
fn four_gib_length_prefix_is_rejected_before_reading_the_body() {
    let mut r = Endless { taken: 0 };
    let err = read_frame::<SupervisorToRunner, _>(&mut r, DEFAULT_MAX_FRAME).unwrap_err();
    assert!(
        matches!(err, CodecError::TooLarge { len: 0xffff_ffff, max } if max == u64::from(DEFAULT_MAX_FRAME))
    );
    assert_eq!(
        r.taken, HEADER_LEN,
        "the codec must not read past a rejected header"
    );
}

#[test]
fn oversized_messages_are_not_encoded() {
    let big = finished(Value::string("x".repeat(2048)));
    assert!(matches!(
        encode_frame(&big, 1024),
        Err(CodecError::TooLarge { max: 1024, .. })
    ));
}

#[test]
fn truncation_is_distinct_from_clean_eof() {
    let frame = encode_frame(&finished(Value::Int(42)), MAX).unwrap();
    assert!(
        read_frame::<RunnerToSupervisor, _>(&mut Cursor::new(Vec::new()), MAX)
            .unwrap()
            .is_none()
    );
    for cut in [1, 2, 3] {
        let err =
            read_frame::<RunnerToSupervisor, _>(&mut Cursor::new(&frame[..cut]), MAX).unwrap_err();
        assert!(
            matches!(err, CodecError::Truncated),
            "header cut at {cut}: {err:?}"
        );
    }
    for cut in [HEADER_LEN, frame.len() - 1] {
        let err =
            read_frame::<RunnerToSupervisor, _>(&mut Cursor::new(&frame[..cut]), MAX).unwrap_err();
        assert!(
            matches!(err, CodecError::Truncated),
            "body cut at {cut}: {err:?}"
        );
    }
}

#[test]
fn a_frame_claiming_more_than_it_sends_is_truncated_not_allocated() {
    // Claims the maximum, sends ten bytes.
    let mut stream = DEFAULT_MAX_FRAME.to_be_bytes().to_vec();
    stream.extend_from_slice(&[0u8; 10]);
    let err = read_frame_bytes(&mut Cursor::new(stream), DEFAULT_MAX_FRAME).unwrap_err();
    assert!(matches!(err, CodecError::Truncated));
}

#[test]
fn trailing_bytes_and_garbage_are_decode_errors() {
    let mut frame =
        encode_frame(&RunnerToSupervisor::MemoryExceeded { peak_bytes: 1 }, MAX).unwrap();
    frame.push(0);
    assert!(matches!(
        decode_body::<RunnerToSupervisor>(&frame[HEADER_LEN..], MAX),
        Err(CodecError::Decode(_))
    ));
    assert!(matches!(
        decode_body::<RunnerToSupervisor>(&[0xff; 8], MAX),
        Err(CodecError::Decode(_))
    ));
}

#[test]
fn inner_length_beyond_the_limit_is_refused() {
    // Finished(Step{return: Some(Vector with a Str token claiming a huge length)}): crafted by
    // hand so the string header claims far more than the frame holds.
    let msg = finished(Value::string("abc"));
    let frame = encode_frame(&msg, MAX).unwrap();
    let body = &frame[HEADER_LEN..];
    let pos = body
        .windows(4)
        .position(|w| w == [3, b'a', b'b', b'c'])
        .unwrap();
    let mut evil = body.to_vec();
    // varint marker 0xfd = u64 follows: claim 2^40 bytes.
    evil.splice(pos..pos + 1, [0xfd, 0, 0, 0, 0, 0, 1, 0, 0]);
    assert!(matches!(
        decode_body::<RunnerToSupervisor>(&evil, MAX),
        Err(CodecError::Decode(_))
    ));
}

#[test]
fn a_well_formed_frame_is_refused_one_byte_over_the_limit() {
    // The size bound of decoding is `check_len` on the body (bincode 1.3.3 ignores `with_limit`
    // when it deserializes from a slice: it swaps in an infinite limit), so it is pinned at its
    // boundary: a valid body of exactly `max` bytes decodes, the same body under `max - 1` is
    // TooLarge, through `decode_body` and through `read_frame`.
    let msg = finished(Value::string("x".repeat(300)));
    let frame = encode_frame(&msg, MAX).unwrap();
    let body = &frame[HEADER_LEN..];
    let max = u32::try_from(body.len()).unwrap();
    assert_eq!(decode_body::<RunnerToSupervisor>(body, max).unwrap(), msg);
    assert!(matches!(
        decode_body::<RunnerToSupervisor>(body, max - 1),
        Err(CodecError::TooLarge { len, max: m }) if len == u64::from(max) && m == u64::from(max - 1)
    ));
    let read = |limit: u32| read_frame::<RunnerToSupervisor, _>(&mut &frame[..], limit);
    assert_eq!(read(max).unwrap(), Some(msg.clone()));
    assert!(matches!(read(max - 1), Err(CodecError::TooLarge { .. })));
    assert!(matches!(
        encode_frame(&msg, max - 1),
        Err(CodecError::TooLarge { .. })
    ));
}

#[test]
fn u64_frame_matches_bincode_for_every_varint_width() {
    let pre = U64Frame::new(&RunnerToSupervisor::MemoryExceeded { peak_bytes: 0 }).unwrap();
    let edges = [
        0,
        1,
        250,
        251,
        0xffff,
        0x1_0000,
        0xffff_ffff,
        0x1_0000_0000,
        u64::MAX,
    ];
    for v in edges {
        let mut buf = [0u8; U64_FRAME_MAX];
        let n = pre.write(v, &mut buf);
        let expected =
            encode_frame(&RunnerToSupervisor::MemoryExceeded { peak_bytes: v }, MAX).unwrap();
        assert_eq!(&buf[..n], &expected[..], "value {v}");
    }
}

#[test]
fn u64_frame_refuses_a_template_without_a_trailing_zero() {
    assert!(U64Frame::new(&RunnerToSupervisor::MemoryExceeded { peak_bytes: 7 }).is_err());
    assert!(U64Frame::new(&finished(Value::Nil)).is_err());
}

fn drain(bytes: &[u8]) {
    let mut r = Cursor::new(bytes);
    while let Ok(Some(_)) = read_frame::<SupervisorToRunner, _>(&mut r, MAX) {}
    let mut r = Cursor::new(bytes);
    while let Ok(Some(_)) = read_frame::<RunnerToSupervisor, _>(&mut r, MAX) {}
    let _ = decode_body::<SupervisorToRunner>(bytes, MAX);
    let _ = decode_body::<RunnerToSupervisor>(bytes, MAX);
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        drain(&bytes);
    }

    #[test]
    fn mutated_frames_never_panic(pos in 0usize..64, byte in any::<u8>(), n in 0i64..50) {
        let frame = encode_frame(&finished(Value::Vector((0..n).map(Value::Int).collect())), MAX).unwrap();
        let mut bytes = frame.clone();
        let i = pos % bytes.len();
        bytes[i] = byte;
        drain(&bytes);
        // With a valid header, the body alone must also be safe.
        drain(&frame[HEADER_LEN..]);
    }
}

#[cfg(feature = "tokio")]
mod async_tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn an_async_body_cut_short_is_truncated() {
        block_on(async {
            let frame = encode_frame(&finished(Value::string("cut")), MAX).unwrap();
            let mut short = &frame[..frame.len() - 1];
            assert!(matches!(
                read_frame_bytes_async(&mut short, MAX).await,
                Err(CodecError::Truncated)
            ));
            let mut whole = &frame[..];
            assert_eq!(
                read_frame_bytes_async(&mut whole, MAX).await.unwrap(),
                Some(frame[HEADER_LEN..].to_vec())
            );
        });
    }

    #[test]
    fn async_round_trip_and_eof_kinds() {
        block_on(async {
            let (mut a, mut b) = tokio::io::duplex(64);
            let msg = finished(Value::string("async"));
            let writer = async {
                write_frame_async(&mut a, &msg, MAX).await.unwrap();
                a.write_all(&[0, 0]).await.unwrap();
                drop(a);
            };
            let reader = async {
                let got = read_frame_async::<RunnerToSupervisor, _>(&mut b, MAX)
                    .await
                    .unwrap();
                let err = read_frame_async::<RunnerToSupervisor, _>(&mut b, MAX)
                    .await
                    .unwrap_err();
                (got, err)
            };
            let ((), (got, err)) = tokio::join!(writer, reader);
            assert_eq!(got, Some(msg.clone()));
            assert!(matches!(err, CodecError::Truncated));
            let mut empty: &[u8] = &[];
            assert!(
                read_frame_async::<RunnerToSupervisor, _>(&mut empty, MAX)
                    .await
                    .unwrap()
                    .is_none()
            );
            let mut huge: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1, 2];
            let err = read_frame_async::<RunnerToSupervisor, _>(&mut huge, MAX)
                .await
                .unwrap_err();
            assert!(matches!(err, CodecError::TooLarge { .. }));
        });
    }
}

#[test]
fn a_malformed_body_declaring_our_version_is_a_decode_error_not_a_version_mismatch() {
    let setup = SupervisorToRunner::Setup(crate::protocol::Setup::for_limits(
        &crate::Limits::default(),
        vec![1; 8],
        true,
    ));
    let frame = encode_frame(&setup, MAX).unwrap();
    let mut body = frame[HEADER_LEN..].to_vec();
    body.push(0); // a trailing byte: the body no longer decodes, its version still reads as ours
    assert!(matches!(
        decode_body::<SupervisorToRunner>(&body, MAX),
        Err(CodecError::Decode(_))
    ));
}

/// A reader that fails with `kind` on its first `fails` calls, then reads from `data`.
struct Flaky<'a> {
    kind: std::io::ErrorKind,
    fails: usize,
    data: &'a [u8],
}

impl Read for Flaky<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.fails > 0 {
            self.fails -= 1;
            return Err(self.kind.into());
        }
        self.data.read(buf)
    }
}

#[test]
fn an_interrupted_header_read_is_retried_and_other_errors_are_not() {
    let msg = finished(Value::Int(5));
    let frame = encode_frame(&msg, MAX).unwrap();
    let mut interrupted = Flaky {
        kind: std::io::ErrorKind::Interrupted,
        fails: 3,
        data: &frame,
    };
    assert_eq!(
        read_frame::<RunnerToSupervisor, _>(&mut interrupted, MAX).unwrap(),
        Some(msg)
    );
    // A persistent error ends the read at once (retrying it would spin forever).
    let mut broken = Flaky {
        kind: std::io::ErrorKind::BrokenPipe,
        fails: usize::MAX,
        data: &frame,
    };
    assert!(matches!(
        read_frame::<RunnerToSupervisor, _>(&mut broken, MAX),
        Err(CodecError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe
    ));
}

#[test]
fn encoding_into_a_buffer_writes_the_same_frame_and_refuses_one_too_small() {
    let msg = finished(Value::string("abc"));
    let want = encode_frame(&msg, MAX).unwrap();
    let mut buf = [0u8; 256];
    let n = encode_frame_into(&msg, MAX, &mut buf).unwrap();
    assert_eq!(&buf[..n], &want[..]);
    // One byte short of the frame: refused, naming both sizes.
    let mut short = vec![0u8; want.len() - 1];
    match encode_frame_into(&msg, MAX, &mut short) {
        Err(CodecError::TooLarge { len, max }) => {
            assert_eq!((len, max), (want.len() as u64, short.len() as u64));
        }
        other => panic!("{other:?}"),
    }
    // A body over `max` is refused before anything is written.
    let small_max = u32::try_from(want.len() - HEADER_LEN - 1).unwrap();
    assert!(matches!(
        encode_frame_into(&msg, small_max, &mut buf),
        Err(CodecError::TooLarge { .. })
    ));
}
