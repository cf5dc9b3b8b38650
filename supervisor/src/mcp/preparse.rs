//! The fast path of `tools/call lisp_eval`: its arguments read from the request line once,
//! the context straight into its wire encoding ([`EncodedValue`]), before rmcp sees the line.
//!
//! rmcp reads a JSON-RPC line by buffering it whole into serde's generic content tree and
//! trying each message shape, then hands the tool a `serde_json` object that the server turns
//! into its encoding again: for a 1,000-record context that is three copies and most of the
//! server's CPU per call. Here [`FramedInput`](super::input::FramedInput) offers every
//! complete line to [`Preparser::offer`]; a plain `lisp_eval` call (exactly `jsonrpc`, `id`,
//! `method`, `params: {name, arguments}`, optionally `_meta` with only a `progressToken` (rmcp's
//! client sends one on every request), and the three known arguments, a context object) has
//! its arguments parsed here, parked in a small table, and the line is replaced by a small
//! call carrying only the id, the progress token if any and `_meta["ptc/preparsed"] = key`. The handler takes the parked
//! arguments back by key ([`Preparser::take`]) and checks them with the same code as the slow
//! path ([`args::check`](super::args::check)).
//!
//! Invariants:
//! - Same answers: a line is taken only if it parses completely under the strict shape;
//!   anything else (an unknown field, `_meta` with more than a progress token, a context that is not an object, an error of
//!   any kind, a line over [`FAST_LINE_MAX`]) goes to rmcp unchanged and meets the general
//!   path, which names the problem. The context size limit (on compact JSON) stays exact: a
//!   taken line is at most a fifth of it, and no JSON text grows by more than 4.5x when
//!   written compactly (the worst token is a float like `1e15`, 18 bytes as
//!   `1000000000000000.0`; whitespace, escapes and repeated keys only shrink).
//! - Bounded: at most [`PARKED_MAX`] calls are parked, each at most [`FAST_LINE_MAX`] of text
//!   and together at most [`PARKED_BYTES_MAX`] (one frame: parked values never hold more than
//!   the general path holds for one oversized-but-legal line); when full, lines take the
//!   general path. A parked call not taken within its TTL ([`PARKED_TTL`] unless the server
//!   was given another; rmcp refused the request before the handler ran) is dropped at the
//!   next offer.
//! - One client per server (stdio): keys are only unique, not secret.

use super::args::MAX_CONTEXT_BYTES;
use ptc_shared::value::EncodedValue;
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `_meta` key of a call whose arguments were parked here.
pub const PREPARSED_META: &str = "ptc/preparsed";
/// The longest line taken: a fifth of the context limit, so the limit stays exact (see above).
pub const FAST_LINE_MAX: usize = MAX_CONTEXT_BYTES / 5;
/// Calls parked at once.
pub const PARKED_MAX: usize = 64;
/// Text of all parked calls together.
pub const PARKED_BYTES_MAX: usize = super::input::MAX_FRAME_BYTES;
/// How long a parked call waits for its handler, by default.
pub const PARKED_TTL: Duration = Duration::from_secs(10);

/// A call's arguments, parsed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parsed {
    pub program: Json,
    #[serde(default, deserialize_with = "context")]
    pub context: Option<EncodedValue>,
    #[serde(default)]
    pub output_schema: Option<Json>,
}

/// A context: null (none), or a JSON object read straight into its wire encoding (what the
/// run sends the runner: no tree is built). The bound is a backstop: a taken line is at most
/// [`FAST_LINE_MAX`] of text, and no encoding is much larger than its text.
fn context<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<EncodedValue>, D::Error> {
    let encoded = EncodedValue::deserialize_json(d, super::input::MAX_FRAME_BYTES)?;
    if encoded.is_nil() {
        Ok(None)
    } else if encoded.is_map() {
        Ok(Some(encoded))
    } else {
        Err(serde::de::Error::custom("not an object"))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    jsonrpc: String,
    id: Json,
    method: String,
    params: Params,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    name: String,
    arguments: Parsed,
    #[serde(default, rename = "_meta")]
    meta: Option<Meta>,
}

/// The `_meta` a plain call may carry: rmcp's client puts a progress token on every request.
/// It is passed on in the stub, for rmcp to read as it would have.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    #[serde(rename = "progressToken")]
    progress_token: Json,
}

/// One parked call: its key, when it was parked, its line's length and its arguments.
#[derive(Debug)]
struct Entry {
    key: u64,
    at: Instant,
    bytes: usize,
    args: Parsed,
}

#[derive(Debug)]
struct Parked {
    next: u64,
    ttl: Duration,
    /// Sum of `bytes` over `calls`.
    bytes: usize,
    calls: VecDeque<Entry>,
}

impl Parked {
    /// Drops the calls parked longer than the TTL ago (the oldest are in front).
    fn expire(&mut self, now: Instant) {
        while let Some(e) = self.calls.front() {
            if now.saturating_duration_since(e.at) < self.ttl {
                break;
            }
            self.bytes = self.bytes.saturating_sub(e.bytes);
            self.calls.pop_front();
        }
    }

    fn has_room(&self, line: usize) -> bool {
        self.calls.len() < PARKED_MAX && self.bytes.saturating_add(line) <= PARKED_BYTES_MAX
    }
}

/// The table of parked calls, shared by the input stream and the handler.
#[derive(Debug, Clone)]
pub struct Preparser(Arc<Mutex<Parked>>);

impl Default for Preparser {
    fn default() -> Preparser {
        Preparser::with_ttl(PARKED_TTL)
    }
}

impl Preparser {
    /// A table whose parked calls are dropped `ttl` after parking (at the next offer).
    pub fn with_ttl(ttl: Duration) -> Preparser {
        Preparser(Arc::new(Mutex::new(Parked {
            next: 0,
            ttl,
            bytes: 0,
            calls: VecDeque::new(),
        })))
    }

    /// The line to hand rmcp instead of `line`, if the call was parked.
    pub fn offer(&self, line: &[u8]) -> Option<Vec<u8>> {
        self.offer_at(line, Instant::now())
    }

    /// [`Preparser::offer`] at a given time (tests move the clock instead of sleeping).
    fn offer_at(&self, line: &[u8], now: Instant) -> Option<Vec<u8>> {
        if line.len() > FAST_LINE_MAX || !contains(line, b"\"tools/call\"") {
            return None;
        }
        let mut parked = self.0.lock().ok()?;
        parked.expire(now);
        if !parked.has_room(line.len()) {
            return None;
        }
        let call = plain_call(line)?;
        let key = parked.next;
        parked.next = key.wrapping_add(1);
        parked.bytes = parked.bytes.saturating_add(line.len());
        parked.calls.push_back(Entry {
            key,
            at: now,
            bytes: line.len(),
            args: call.args,
        });
        let mut meta = serde_json::Map::new();
        if let Some(t) = call.progress_token {
            meta.insert("progressToken".into(), t);
        }
        meta.insert(PREPARSED_META.into(), key.into());
        let stub = serde_json::json!({"jsonrpc": "2.0", "id": call.id, "method": "tools/call",
            "params": {"name": ptc_shared::lisp_eval::TOOL_NAME, "arguments": {}, "_meta": meta}});
        Some(stub.to_string().into_bytes())
    }

    /// The parked arguments of `key`, once.
    pub fn take(&self, key: u64) -> Option<Parsed> {
        let mut parked = self.0.lock().ok()?;
        let at = parked.calls.iter().position(|e| e.key == key)?;
        let entry = parked.calls.remove(at)?;
        parked.bytes = parked.bytes.saturating_sub(entry.bytes);
        Some(entry.args)
    }
}

/// A plain `lisp_eval` call read from its line: its id (a number or a string), its progress
/// token if it had one, and its arguments.
#[derive(Debug)]
pub struct PlainCall {
    pub id: Json,
    pub progress_token: Option<Json>,
    pub args: Parsed,
}

/// The call on `line` if it has exactly the strict shape described above (and fits
/// [`FAST_LINE_MAX`]); anything else is `None`, for the general path.
pub fn plain_call(line: &[u8]) -> Option<PlainCall> {
    if line.len() > FAST_LINE_MAX || !contains(line, b"\"tools/call\"") {
        return None;
    }
    let call: Line = serde_json::from_slice(line).ok()?;
    let plain = call.jsonrpc == "2.0"
        && call.method == "tools/call"
        && call.params.name == ptc_shared::lisp_eval::TOOL_NAME
        && (call.id.is_string() || call.id.is_number());
    plain.then(|| PlainCall {
        id: call.id,
        progress_token: call.params.meta.map(|m| m.progress_token),
        args: call.params.arguments,
    })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(params: Json) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
            .to_string()
            .into_bytes()
    }

    fn args(arguments: Json) -> Vec<u8> {
        line(json!({"name": "lisp_eval", "arguments": arguments}))
    }

    #[test]
    fn a_plain_call_is_parked_and_replaced_by_a_stub_with_its_id() {
        let p = Preparser::default();
        let stub = p.offer(&args(
            json!({"program": "(+ 1 2)", "context": {"a": [1, "x"]}}),
        ));
        let stub: Json = serde_json::from_slice(&stub.unwrap_or_default()).unwrap_or_default();
        assert_eq!(stub["id"], 7);
        assert_eq!(stub["params"]["arguments"], json!({}));
        let key = stub["params"]["_meta"][PREPARSED_META]
            .as_u64()
            .unwrap_or(u64::MAX);
        let parsed = p.take(key).map(|c| (c.program, c.context));
        let ctx = ptc_shared::Value::from_json(&json!({"a": [1, "x"]}))
            .ok()
            .map(|v| EncodedValue::encode(&v));
        assert_eq!(parsed, Some((json!("(+ 1 2)"), ctx)));
        assert!(p.take(key).is_none(), "taken once");
    }

    /// The bytes rmcp's client really sends (it adds a progress token to every request), read
    /// off a duplex pipe where this test plays the server's part of the handshake.
    #[tokio::test]
    async fn the_rmcp_clients_own_request_takes_the_fast_path_with_its_progress_token() {
        use rmcp::ServiceExt;
        use rmcp::model::CallToolRequestParams;
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (from_client, mut to_client) = tokio::io::split(server_end);
        let mut lines = BufReader::new(from_client).lines();
        let client = tokio::spawn(async move {
            let (r, w) = tokio::io::split(client_end);
            let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(r, w);
            let c = ().serve(transport).await.ok()?;
            let Json::Object(a) = json!({"program": "1", "context": {"k": 1}}) else {
                return None;
            };
            c.call_tool(CallToolRequestParams::new("lisp_eval").with_arguments(a))
                .await
                .ok()
        });
        let init = lines.next_line().await.ok().flatten().unwrap_or_default();
        let init: Json = serde_json::from_str(&init).unwrap_or_default();
        let answer = json!({"jsonrpc": "2.0", "id": init["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "t", "version": "1"}}});
        let _ = to_client.write_all(format!("{answer}\n").as_bytes()).await;
        let mut call = String::new();
        while let Ok(Some(l)) = lines.next_line().await {
            if l.contains("tools/call") {
                call = l;
                break;
            }
        }
        client.abort();
        assert!(call.contains("progressToken"), "{call}");
        let stub: Json = serde_json::from_slice(
            &Preparser::default()
                .offer(call.as_bytes())
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        let sent: Json = serde_json::from_str(&call).unwrap_or_default();
        assert_eq!(stub["id"], sent["id"], "{call}");
        assert_eq!(
            stub["params"]["_meta"]["progressToken"],
            sent["params"]["_meta"]["progressToken"]
        );
        assert!(stub["params"]["_meta"][PREPARSED_META].is_u64());
    }

    #[test]
    fn anything_but_the_strict_shape_goes_to_the_general_path() {
        let p = Preparser::default();
        let declined = [
            args(json!({"program": "1", "extra": 1})),
            args(json!({"program": "1", "context": [1]})),
            args(json!({"program": "1", "context": "x"})),
            args(json!({"program": "1", "context": {"n": 18446744073709551615_u64}})),
            line(
                json!({"name": "lisp_eval", "arguments": {"program": "1"}, "_meta": {"progressToken": 1, "x": 2}}),
            ),
            line(
                json!({"name": "lisp_eval", "arguments": {"program": "1"}, "_meta": {"other": 1}}),
            ),
            line(json!({"name": "other", "arguments": {"program": "1"}})),
            line(json!({"name": "lisp_eval"})),
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".to_vec(),
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",".to_vec(),
            args(json!({"program": "x".repeat(FAST_LINE_MAX)})),
        ];
        for l in declined {
            assert!(
                p.offer(&l).is_none(),
                "{}",
                String::from_utf8_lossy(&l[..l.len().min(200)])
            );
        }
        // Wrong-typed arguments are still taken: the handler's checks name them.
        assert!(p.offer(&args(json!({"program": 5}))).is_some());
    }

    #[test]
    fn the_table_is_bounded() {
        let p = Preparser::default();
        for _ in 0..PARKED_MAX {
            assert!(p.offer(&args(json!({"program": "1"}))).is_some());
        }
        assert!(
            p.offer(&args(json!({"program": "1"}))).is_none(),
            "full: general path"
        );
        assert!(p.take(0).is_some());
        assert!(
            p.offer(&args(json!({"program": "1"}))).is_some(),
            "room again"
        );
    }

    fn key_of(stub: Option<Vec<u8>>) -> u64 {
        let stub: Json = serde_json::from_slice(&stub.unwrap_or_default()).unwrap_or_default();
        stub["params"]["_meta"][PREPARSED_META]
            .as_u64()
            .unwrap_or(u64::MAX)
    }

    #[test]
    fn a_parked_call_is_dropped_once_its_ttl_has_passed_and_not_before() {
        let p = Preparser::default();
        let t0 = Instant::now();
        let call = args(json!({"program": "1"}));
        let first = key_of(p.offer_at(&call, t0));
        let just_before = t0 + PARKED_TTL - Duration::from_millis(1);
        let second = key_of(p.offer_at(&call, just_before));
        let third = key_of(p.offer_at(&call, t0 + PARKED_TTL));
        assert!(p.take(first).is_none(), "parked for the whole TTL: dropped");
        assert!(p.take(second).is_some(), "parked for less: kept");
        assert!(p.take(third).is_some());
    }

    #[test]
    fn the_ttl_is_the_servers_to_set() {
        let p = Preparser::with_ttl(Duration::ZERO);
        let call = args(json!({"program": "1"}));
        let first = key_of(p.offer(&call));
        let second = key_of(p.offer(&call));
        assert!(p.take(first).is_none(), "expired at the next offer");
        assert!(
            p.take(second).is_some(),
            "the newest is taken before any offer"
        );
    }

    #[test]
    fn parked_text_is_bounded_in_bytes_too() {
        let p = Preparser::default();
        let big = args(json!({"program": "x".repeat(FAST_LINE_MAX - 1000)}));
        let fit = PARKED_BYTES_MAX / big.len();
        assert!(fit < PARKED_MAX, "the byte bound is the one hit here");
        let keys: Vec<u64> = (0..fit).map(|_| key_of(p.offer(&big))).collect();
        assert!(keys.iter().all(|k| *k != u64::MAX), "all {fit} parked");
        assert!(p.offer(&big).is_none(), "full in bytes: general path");
        assert!(p.take(keys[0]).is_some());
        assert!(p.offer(&big).is_some(), "room again once taken");
    }
}
