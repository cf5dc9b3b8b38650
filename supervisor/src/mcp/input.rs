//! The server's input stream: stdin with the frame limit and end-of-input made visible.
//!
//! MCP over stdio is newline-delimited JSON-RPC. rmcp drops a line over its limit silently,
//! which would leave the client waiting forever; [`FramedInput`] enforces [`MAX_FRAME_BYTES`]
//! itself so an oversized request gets a typed answer: it holds each line back until its
//! newline (so memory is bounded by the limit), and a line over the limit is discarded and
//! replaced by a small request with the same id (read from the first [`HEAD_BYTES`] of the
//! line, where clients put `jsonrpc`, `id` and `method`): a `tools/call` carrying the size in
//! `_meta["ptc/frame_bytes"]` (answered `args_error` by the handler), or a call of an unknown
//! method (answered "method not found"). A line whose id is not in its head is dropped and
//! logged: there is nobody to answer.
//!
//! End of input (a 0-byte read) flips the `eof` flag, so running calls stop at once
//! (`shutting_down`) instead of finishing after the client has gone.

use super::direct::Direct;
use super::preparse::Preparser;
use serde_json::Value as Json;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

/// The largest request line accepted (8 MiB).
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;
/// How much of an oversized line is kept to find its id and method.
pub const HEAD_BYTES: usize = 4096;
/// The `_meta` key of a replaced oversized `tools/call`.
pub const FRAME_BYTES_META: &str = "ptc/frame_bytes";

const CHUNK: usize = 64 * 1024;

/// stdin (or any reader) with the frame limit and an end-of-input flag.
#[derive(Debug)]
pub struct FramedInput<R> {
    inner: R,
    max_frame: usize,
    /// The current line while it is within the limit.
    line: Vec<u8>,
    /// Set while discarding an oversized line: its head and its size so far.
    oversized: Option<(Vec<u8>, usize)>,
    /// Complete lines ready to hand out, from `out_pos`.
    out: Vec<u8>,
    out_pos: usize,
    /// The read buffer, allocated once.
    scratch: Vec<u8>,
    eof: watch::Sender<bool>,
    /// Offered every complete line within the limit (the `lisp_eval` fast path).
    preparser: Option<Preparser>,
    /// Offered every complete line within the limit first (the direct path).
    direct: Option<Direct>,
}

impl<R: AsyncRead + Unpin> FramedInput<R> {
    /// Wraps `inner`; `eof` is set to `true` when it ends.
    pub fn new(inner: R, max_frame: usize, eof: watch::Sender<bool>) -> FramedInput<R> {
        FramedInput {
            inner,
            max_frame,
            line: Vec::new(),
            oversized: None,
            out: Vec::new(),
            out_pos: 0,
            scratch: vec![0; CHUNK],
            eof,
            preparser: None,
            direct: None,
        }
    }

    /// Offers each complete line to `direct` first, which may take it (see [`super::direct`]).
    pub fn with_direct(mut self, direct: Direct) -> FramedInput<R> {
        self.direct = Some(direct);
        self
    }

    /// Offers each complete line to `preparser`, which may replace it (see [`super::preparse`]).
    pub fn with_preparser(mut self, preparser: Preparser) -> FramedInput<R> {
        self.preparser = Some(preparser);
        self
    }

    /// Sorts a chunk of input into complete lines (`out`), the pending line, or discards.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (seg, rest, newline) = match bytes.iter().position(|b| *b == b'\n') {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            if let Some((head, size)) = &mut self.oversized {
                let room = HEAD_BYTES.saturating_sub(head.len()).min(seg.len());
                head.extend_from_slice(&seg[..room]);
                *size = size.saturating_add(seg.len());
            } else if self.line.len().saturating_add(seg.len()) > self.max_frame {
                let size = self.line.len().saturating_add(seg.len());
                let mut head = std::mem::take(&mut self.line);
                head.truncate(HEAD_BYTES);
                let room = HEAD_BYTES.saturating_sub(head.len()).min(seg.len());
                head.extend_from_slice(&seg[..room]);
                self.oversized = Some((head, size));
            } else {
                self.line.extend_from_slice(seg);
            }
            if newline {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        match self.oversized.take() {
            Some((head, size)) => match replacement(&head, size) {
                Some(line) => self.out.extend_from_slice(line.as_bytes()),
                None => {
                    tracing::warn!(size, "dropped an oversized frame without a readable id");
                    return;
                }
            },
            None if self.direct.as_ref().is_some_and(|d| d.take(&self.line)) => {
                self.line.clear();
                return;
            }
            None => match self.preparser.as_ref().and_then(|p| p.offer(&self.line)) {
                Some(stub) => {
                    self.line.clear();
                    self.out.extend_from_slice(&stub);
                }
                None => self.out.append(&mut self.line),
            },
        }
        self.out.push(b'\n');
    }

    /// Copies pending output into `buf`; true if anything was copied.
    fn hand_out(&mut self, buf: &mut ReadBuf<'_>) -> bool {
        let ready = &self.out[self.out_pos..];
        if ready.is_empty() {
            return false;
        }
        let n = ready.len().min(buf.remaining());
        buf.put_slice(&ready[..n]);
        self.out_pos += n;
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        true
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FramedInput<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.hand_out(buf) {
                return Poll::Ready(Ok(()));
            }
            let mut scratch = std::mem::take(&mut this.scratch);
            let mut rb = ReadBuf::new(&mut scratch);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut rb);
            let n = rb.filled().len();
            let result = match polled {
                Poll::Pending => Some(Poll::Pending),
                Poll::Ready(Err(e)) => Some(Poll::Ready(Err(e))),
                Poll::Ready(Ok(())) if n == 0 => {
                    // An unterminated last line is not a message: nothing more to hand out.
                    this.eof.send_replace(true);
                    Some(Poll::Ready(Ok(())))
                }
                Poll::Ready(Ok(())) => {
                    this.take(&scratch[..n]);
                    None
                }
            };
            this.scratch = scratch;
            if let Some(r) = result {
                return r;
            }
        }
    }
}

/// The small request standing in for an oversized line, if its id can be read.
fn replacement(head: &[u8], size: usize) -> Option<String> {
    let id = value_after(head, b"\"id\"")?;
    if !(id.is_number() || id.is_string()) {
        return None;
    }
    let method = value_after(head, b"\"method\"");
    let msg = if method.as_ref().and_then(Json::as_str) == Some("tools/call") {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": ptc_shared::lisp_eval::TOOL_NAME, "arguments": {},
            "_meta": {FRAME_BYTES_META: size}}})
    } else {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "ptc/frame_too_large",
            "params": {"frame_bytes": size}})
    };
    Some(msg.to_string())
}

/// The JSON value after the first `key` `:` in `head`.
fn value_after(head: &[u8], key: &[u8]) -> Option<Json> {
    let at = head.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &head[at..];
    let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    if rest[colon] != b':' {
        return None;
    }
    let mut values = serde_json::Deserializer::from_slice(&rest[colon + 1..]).into_iter::<Json>();
    values.next()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], max: usize) -> (String, bool) {
        let (tx, rx) = watch::channel(false);
        let mut r = FramedInput::new(input, max, tx);
        let mut out = String::new();
        let _ = r.read_to_string(&mut out).await;
        (out, *rx.borrow())
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_unchanged() {
        let (out, eof) = read_all(b"{\"a\":1}\n{\"b\":2}\npartial", 64).await;
        assert_eq!(out, "{\"a\":1}\n{\"b\":2}\n");
        assert!(eof);
    }

    #[tokio::test]
    async fn an_oversized_tools_call_becomes_a_marked_call_with_its_id() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{{\"x\":\"{}\"}}}}\n{{\"ok\":1}}\n",
            "y".repeat(200)
        );
        let (out, _) = read_all(big.as_bytes(), 100).await;
        let mut lines = out.lines();
        let first: Json = serde_json::from_str(lines.next().unwrap_or("")).unwrap_or_default();
        assert_eq!(first["id"], 7);
        assert_eq!(first["method"], "tools/call");
        assert_eq!(
            first["params"]["_meta"][FRAME_BYTES_META],
            big.find('\n').unwrap_or(0)
        );
        assert_eq!(lines.next(), Some("{\"ok\":1}"));
    }

    #[tokio::test]
    async fn other_oversized_requests_get_an_unknown_method_and_idless_ones_are_dropped() {
        let other = format!(
            "{{\"id\":\"s\",\"method\":\"ping\",\"p\":\"{}\"}}\n",
            "y".repeat(200)
        );
        let (out, _) = read_all(other.as_bytes(), 100).await;
        assert!(out.contains("\"id\":\"s\"") && out.contains("ptc/frame_too_large"));
        let idless = format!("{{\"p\":\"{}\"}}\n{{\"ok\":1}}\n", "y".repeat(200));
        let (out, _) = read_all(idless.as_bytes(), 100).await;
        assert_eq!(out, "{\"ok\":1}\n");
    }
}
