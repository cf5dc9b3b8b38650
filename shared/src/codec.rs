//! The wire codec: length-prefixed bincode frames. The ONLY module that touches bincode.
//!
//! A frame is a `u32` big-endian body length followed by the body, one bincode-encoded message.
//! Encoding is bincode 1.3.3 `DefaultOptions` (little-endian, **varint** integers, trailing bytes
//! rejected) always with `with_limit(max)`: varint keeps small counters and tags one byte, and
//! the limit bounds every length-prefixed string or sequence inside the body, so a hostile
//! header inside the body cannot make the decoder allocate more than the frame holds.
//!
//! Invariants:
//! - The length header is checked against `max` before any buffer is allocated; the body buffer
//!   then grows only as bytes actually arrive (a peer that claims 64 MiB and sends 10 bytes costs
//!   10 bytes).
//! - End of stream exactly at a frame boundary is `Ok(None)`; anywhere inside a header or a body
//!   it is [`CodecError::Truncated`].
//! - Nothing here panics on any input (RUSTSEC-2025-0141: bincode is unmaintained; we pin 1.3.3,
//!   decode only from an in-memory, length-checked slice, and never through its unlimited API).

use crate::protocol::PROTOCOL_VERSION;
use bincode::Options;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::{ErrorKind, Read, Write};

/// Size of the length header.
pub const HEADER_LEN: usize = 4;

/// A sensible default maximum body size for supervisor ↔ runner frames (64 MiB).
pub const DEFAULT_MAX_FRAME: u32 = 64 << 20;

/// Everything that can go wrong reading or writing a frame.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("i/o error on the frame stream: {0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge { len: u64, max: u64 },
    #[error("stream ended inside a frame")]
    Truncated,
    #[error("malformed frame: {0}")]
    Decode(String),
    #[error("message cannot be encoded: {0}")]
    Encode(String),
    #[error("protocol version mismatch: ours is {ours}, the peer speaks {theirs}")]
    Version { ours: u32, theirs: u32 },
}

impl CodecError {
    /// The message alone, for a decode error inside a larger one (a field of a frame): the
    /// frame's own error then says "malformed frame" once.
    pub fn into_detail(self) -> String {
        match self {
            CodecError::Decode(m) => m,
            other => other.to_string(),
        }
    }
}

/// A message type that carries the protocol version somewhere in it.
///
/// `version()` is checked after every decode; `peek_version` lets a decoder name a version
/// mismatch even when a newer layout no longer decodes as ours.
pub trait Message: Serialize + DeserializeOwned {
    /// The version this message declares, if this kind of message carries one.
    fn version(&self) -> Option<u32> {
        None
    }

    /// The version from the raw body of a message that failed to decode, if recognisable.
    fn peek_version(_body: &[u8]) -> Option<u32> {
        None
    }
}

fn options(max: u32) -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .reject_trailing_bytes()
        .with_limit(u64::from(max))
}

fn check_len(len: u64, max: u32) -> Result<usize, CodecError> {
    if len > u64::from(max) {
        return Err(CodecError::TooLarge {
            len,
            max: u64::from(max),
        });
    }
    usize::try_from(len).map_err(|_| CodecError::TooLarge {
        len,
        max: u64::from(max),
    })
}

/// The size of `msg`'s encoded body, counted without writing it.
pub fn encoded_len<T: Serialize + ?Sized>(msg: &T) -> Result<u64, CodecError> {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .serialized_size(msg)
        .map_err(|e| CodecError::Encode(e.to_string()))
}

/// The header of `msg`'s frame and its body size, refusing bodies larger than `max`. Sizing
/// counts bytes without writing them, so the exact length is known before any buffer is used.
fn frame_header<T: Serialize + ?Sized>(
    msg: &T,
    max: u32,
) -> Result<([u8; HEADER_LEN], usize), CodecError> {
    let len = encoded_len(msg)?;
    let size = check_len(len, max)?;
    let header = u32::try_from(len).map_err(|_| CodecError::TooLarge {
        len,
        max: u64::from(max),
    })?;
    Ok((header.to_be_bytes(), size))
}

/// Encodes `msg` as one complete frame (header + body), refusing bodies larger than `max`.
pub fn encode_frame<T: Serialize + ?Sized>(msg: &T, max: u32) -> Result<Vec<u8>, CodecError> {
    let (header, size) = frame_header(msg, max)?;
    let mut out = Vec::with_capacity(HEADER_LEN + size);
    out.extend_from_slice(&header);
    options(max)
        .serialize_into(&mut out, msg)
        .map_err(|e| CodecError::Encode(e.to_string()))?;
    Ok(out)
}

/// Encodes `msg` as one frame into `out` without allocating, refusing bodies larger than `max`
/// or frames longer than `out`; returns the frame's length. For loops that must not touch the
/// heap (the zygote's: every page it writes after a fork is a copy-on-write fault).
pub fn encode_frame_into<T: Serialize + ?Sized>(
    msg: &T,
    max: u32,
    out: &mut [u8],
) -> Result<usize, CodecError> {
    let (header, size) = frame_header(msg, max)?;
    let total = HEADER_LEN + size;
    let room = out.len() as u64;
    let frame = out.get_mut(..total).ok_or(CodecError::TooLarge {
        len: total as u64,
        max: room,
    })?;
    let (head, mut body) = frame.split_at_mut(HEADER_LEN);
    head.copy_from_slice(&header);
    options(max)
        .serialize_into(&mut body, msg)
        .map_err(|e| CodecError::Encode(e.to_string()))?;
    Ok(total)
}

/// Decodes one frame body (without its header) and checks its protocol version.
pub fn decode_body<T: Message>(body: &[u8], max: u32) -> Result<T, CodecError> {
    check_len(body.len() as u64, max)?;
    let budget = crate::value::wire::decode_budget(body.len());
    match crate::value::wire::with_budget(budget, || options(max).deserialize::<T>(body)) {
        Ok(msg) => match msg.version() {
            Some(theirs) if theirs != PROTOCOL_VERSION => Err(CodecError::Version {
                ours: PROTOCOL_VERSION,
                theirs,
            }),
            _ => Ok(msg),
        },
        Err(e) => match T::peek_version(body) {
            Some(theirs) if theirs != PROTOCOL_VERSION => Err(CodecError::Version {
                ours: PROTOCOL_VERSION,
                theirs,
            }),
            _ => Err(CodecError::Decode(e.to_string())),
        },
    }
}

/// Reads the leading `(u32, u32)` of a body leniently: the enum tag and, for messages whose
/// first field is the version, that version. Used only by [`Message::peek_version`].
pub fn peek_tag_and_u32(body: &[u8]) -> Option<(u32, u32)> {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .allow_trailing_bytes()
        .with_limit(64)
        .deserialize::<(u32, u32)>(body)
        .ok()
}

/// Reads into `buf` until it is full; `Ok(0)` if the stream ended before the first byte,
/// `Truncated` if it ended after some.
fn fill_header<R: Read + ?Sized>(
    r: &mut R,
    buf: &mut [u8; HEADER_LEN],
) -> Result<usize, CodecError> {
    let mut filled = 0;
    while filled < HEADER_LEN {
        let Some(rest) = buf.get_mut(filled..) else {
            break;
        };
        match r.read(rest) {
            Ok(0) if filled == 0 => return Ok(0),
            Ok(0) => return Err(CodecError::Truncated),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(filled)
}

/// Reads one raw frame body. `Ok(None)` on a clean end of stream at a frame boundary.
pub fn read_frame_bytes<R: Read + ?Sized>(
    r: &mut R,
    max: u32,
) -> Result<Option<Vec<u8>>, CodecError> {
    let mut header = [0u8; HEADER_LEN];
    if fill_header(r, &mut header)? == 0 {
        return Ok(None);
    }
    let len = check_len(u64::from(u32::from_be_bytes(header)), max)?;
    // Grow with the data actually received, not with what the header claims.
    let mut body = Vec::with_capacity(len.min(64 << 10));
    let got = r.take(len as u64).read_to_end(&mut body)?;
    if got < len {
        return Err(CodecError::Truncated);
    }
    Ok(Some(body))
}

/// Reads and decodes one frame. `Ok(None)` on a clean end of stream at a frame boundary.
pub fn read_frame<T: Message, R: Read + ?Sized>(
    r: &mut R,
    max: u32,
) -> Result<Option<T>, CodecError> {
    match read_frame_bytes(r, max)? {
        Some(body) => decode_body(&body, max).map(Some),
        None => Ok(None),
    }
}

/// Encodes and writes one frame with a single `write_all`, then flushes.
pub fn write_frame<T: Serialize + ?Sized, W: Write + ?Sized>(
    w: &mut W,
    msg: &T,
    max: u32,
) -> Result<(), CodecError> {
    let frame = encode_frame(msg, max)?;
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

/// The body encoding by hand, for values that are streamed rather than built (the JSON context
/// transcoder and the context's decoder, `value::encoded`): bincode 1.3.3 with varint integers,
/// as [`encode_frame`] writes and [`decode_body`] reads. Each piece is pinned against bincode
/// itself by tests (`value::encoded`'s).
pub mod raw {
    /// An unsigned integer (a length, a count, an enum tag).
    pub fn put_varint(out: &mut Vec<u8>, v: u64) {
        let mut buf = [0u8; 9];
        let n = super::bincode_varint(v, &mut buf);
        out.extend_from_slice(&buf[..n]);
    }

    /// The bytes [`put_varint`] writes for `v`.
    pub fn varint_len(v: u64) -> usize {
        match v {
            0..=250 => 1,
            251..=0xFFFF => 3,
            0x1_0000..=0xFFFF_FFFF => 5,
            _ => 9,
        }
    }

    /// A signed integer: zig-zag, then varint.
    pub fn put_i64(out: &mut Vec<u8>, i: i64) {
        put_varint(out, ((i << 1) ^ (i >> 63)).cast_unsigned());
    }

    /// A float: its 8 bytes, little-endian (floats are never varint).
    pub fn put_f64(out: &mut Vec<u8>, f: f64) {
        out.extend_from_slice(&f.to_le_bytes());
    }

    /// A string: its byte length, then its bytes.
    pub fn put_str(out: &mut Vec<u8>, s: &str) {
        put_varint(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
    /// Reads what the `put_*` functions write, from a slice, with bincode's checks (a varint
    /// marker it does not know, a `u32` out of range, a bool other than 0 or 1, a string that
    /// is not UTF-8 or runs past the end): each is an error, never a panic. Strings borrow.
    #[derive(Debug)]
    pub struct Reader<'a> {
        bytes: &'a [u8],
    }

    impl<'a> Reader<'a> {
        pub fn new(bytes: &'a [u8]) -> Reader<'a> {
            Reader { bytes }
        }

        /// Whether every byte has been read.
        pub fn is_empty(&self) -> bool {
            self.bytes.is_empty()
        }

        #[inline]
        fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
            if n > self.bytes.len() {
                return Err("the encoding ends inside a value");
            }
            let (head, rest) = self.bytes.split_at(n);
            self.bytes = rest;
            Ok(head)
        }

        #[inline]
        fn le<const N: usize>(&mut self) -> Result<[u8; N], &'static str> {
            let mut out = [0u8; N];
            out.copy_from_slice(self.take(N)?);
            Ok(out)
        }

        #[inline]
        pub fn u8(&mut self) -> Result<u8, &'static str> {
            Ok(self.le::<1>()?[0])
        }

        #[inline]
        pub fn varint(&mut self) -> Result<u64, &'static str> {
            match self.u8()? {
                small @ 0..=250 => Ok(u64::from(small)),
                251 => Ok(u64::from(u16::from_le_bytes(self.le()?))),
                252 => Ok(u64::from(u32::from_le_bytes(self.le()?))),
                253 => Ok(u64::from_le_bytes(self.le()?)),
                _ => Err("a varint marker this encoding never writes"),
            }
        }

        /// A `u32` (an enum tag, a collection count).
        #[inline]
        pub fn u32(&mut self) -> Result<u32, &'static str> {
            u32::try_from(self.varint()?).map_err(|_| "a u32 out of range")
        }

        #[inline]
        pub fn bool(&mut self) -> Result<bool, &'static str> {
            match self.u8()? {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err("a bool other than 0 or 1"),
            }
        }

        #[inline]
        pub fn i64(&mut self) -> Result<i64, &'static str> {
            let z = self.varint()?;
            Ok((z >> 1).cast_signed() ^ -(z & 1).cast_signed())
        }

        #[inline]
        pub fn f64(&mut self) -> Result<f64, &'static str> {
            Ok(f64::from_le_bytes(self.le()?))
        }

        #[inline]
        pub fn str(&mut self) -> Result<&'a str, &'static str> {
            utf8(self.bytes()?)
        }

        /// A string's bytes, not yet checked as UTF-8 (see [`utf8`]).
        #[inline]
        pub fn bytes(&mut self) -> Result<&'a [u8], &'static str> {
            let len = usize::try_from(self.varint()?).map_err(|_| "a length out of range")?;
            self.take(len)
        }
    }

    /// The check [`Reader::str`] makes of a string's bytes.
    #[inline]
    pub fn utf8(bytes: &[u8]) -> Result<&str, &'static str> {
        std::str::from_utf8(bytes).map_err(|_| "a string that is not UTF-8")
    }
}

/// Bytes of the longest frame a [`U64Frame`] writes.
pub const U64_FRAME_MAX: usize = HEADER_LEN + U64_FRAME_PREFIX_MAX + 9;
const U64_FRAME_PREFIX_MAX: usize = 16;

/// A frame whose body is a fixed prefix then one `u64`, finished later without allocating.
///
/// Built once from a template message whose last field is a `u64` set to 0 (varint 0 is the one
/// byte `0`). [`U64Frame::write`] then emits the frame for any value into a stack buffer: the
/// runner's allocator uses it to report `MemoryExceeded { peak_bytes }` at a moment when
/// allocating is impossible. The varint rules below are bincode 1.3.3's, checked by tests.
#[derive(Debug, Clone, Copy)]
pub struct U64Frame {
    prefix: [u8; U64_FRAME_PREFIX_MAX],
    prefix_len: usize,
}

impl U64Frame {
    /// Pre-encodes `template`, which must end with a `u64` field equal to 0.
    pub fn new<T: Serialize + ?Sized>(template: &T) -> Result<U64Frame, CodecError> {
        let frame = encode_frame(template, 1 << 10)?;
        let bad = || CodecError::Encode("template does not end with a zero u64".into());
        let body = frame.get(HEADER_LEN..).ok_or_else(bad)?;
        let (last, head) = body.split_last().ok_or_else(bad)?;
        if *last != 0 || head.len() > U64_FRAME_PREFIX_MAX {
            return Err(bad());
        }
        let mut prefix = [0u8; U64_FRAME_PREFIX_MAX];
        prefix
            .get_mut(..head.len())
            .ok_or_else(bad)?
            .copy_from_slice(head);
        Ok(U64Frame {
            prefix,
            prefix_len: head.len(),
        })
    }

    /// Writes the complete frame for `value` into `out`; returns its length. Never allocates.
    pub fn write(&self, value: u64, out: &mut [u8; U64_FRAME_MAX]) -> usize {
        let mut varint = [0u8; 9];
        let n = bincode_varint(value, &mut varint);
        let body_len = self.prefix_len + n;
        // body_len ≤ 25, so the conversion cannot fail.
        out[..HEADER_LEN].copy_from_slice(&u32::try_from(body_len).unwrap_or(0).to_be_bytes());
        out[HEADER_LEN..HEADER_LEN + self.prefix_len]
            .copy_from_slice(&self.prefix[..self.prefix_len]);
        out[HEADER_LEN + self.prefix_len..HEADER_LEN + body_len].copy_from_slice(&varint[..n]);
        HEADER_LEN + body_len
    }
}

/// bincode 1.3.3's varint form of a `u64`: ≤ 250 in one byte, else a marker byte (251/252/253)
/// then the value as little-endian u16/u32/u64.
fn bincode_varint(value: u64, out: &mut [u8; 9]) -> usize {
    if value <= 250 {
        out[0] = value.to_le_bytes()[0];
        1
    } else if let Ok(v) = u16::try_from(value) {
        out[0] = 251;
        out[1..3].copy_from_slice(&v.to_le_bytes());
        3
    } else if let Ok(v) = u32::try_from(value) {
        out[0] = 252;
        out[1..5].copy_from_slice(&v.to_le_bytes());
        5
    } else {
        out[0] = 253;
        out[1..9].copy_from_slice(&value.to_le_bytes());
        9
    }
}

#[cfg(feature = "tokio")]
mod async_io {
    //! The same framing over tokio's `AsyncRead`/`AsyncWrite`.
    use super::{CodecError, HEADER_LEN, Message, check_len, decode_body, encode_frame};
    use serde::Serialize;
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    /// Reads one raw frame body. `Ok(None)` on a clean end of stream at a frame boundary.
    pub async fn read_frame_bytes_async<R: AsyncRead + Unpin + ?Sized>(
        r: &mut R,
        max: u32,
    ) -> Result<Option<Vec<u8>>, CodecError> {
        let mut header = [0u8; HEADER_LEN];
        let mut filled = 0;
        while filled < HEADER_LEN {
            let Some(rest) = header.get_mut(filled..) else {
                break;
            };
            match r.read(rest).await? {
                0 if filled == 0 => return Ok(None),
                0 => return Err(CodecError::Truncated),
                n => filled += n,
            }
        }
        let len = check_len(u64::from(u32::from_be_bytes(header)), max)?;
        let mut body = Vec::with_capacity(len.min(64 << 10));
        let got = r.take(len as u64).read_to_end(&mut body).await?;
        if got < len {
            return Err(CodecError::Truncated);
        }
        Ok(Some(body))
    }

    /// Reads and decodes one frame. `Ok(None)` on a clean end of stream at a frame boundary.
    pub async fn read_frame_async<T: Message, R: AsyncRead + Unpin + ?Sized>(
        r: &mut R,
        max: u32,
    ) -> Result<Option<T>, CodecError> {
        match read_frame_bytes_async(r, max).await? {
            Some(body) => decode_body(&body, max).map(Some),
            None => Ok(None),
        }
    }

    /// Encodes and writes one frame with a single `write_all`, then flushes.
    pub async fn write_frame_async<T: Serialize + ?Sized, W: AsyncWrite + Unpin + ?Sized>(
        w: &mut W,
        msg: &T,
        max: u32,
    ) -> Result<(), CodecError> {
        let frame = encode_frame(msg, max)?;
        w.write_all(&frame).await?;
        w.flush().await?;
        Ok(())
    }
}

#[cfg(feature = "tokio")]
pub use async_io::{read_frame_async, read_frame_bytes_async, write_frame_async};

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
