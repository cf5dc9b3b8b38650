//! The fast path of `tools/call lisp_eval`: its arguments read from the request line once,
//! straight into a [`Value`], before rmcp sees the line.
//!
//! rmcp reads a JSON-RPC line by buffering it whole into serde's generic content tree and
//! trying each message shape, then hands the tool a `serde_json` object that the server turns
//! into a `Value` again: for a 1,000-record context that is three copies and most of the
//! server's CPU per call. Here [`FramedInput`](super::input::FramedInput) offers every
//! complete line to [`Preparser::offer`]; a plain `lisp_eval` call (exactly `jsonrpc`, `id`,
//! `method`, `params: {name, arguments}` and the three known arguments, a context object) has
//! its arguments parsed here, parked in a small table, and the line is replaced by a small
//! call carrying only the id and `_meta["ptc/preparsed"] = key`. The handler takes the parked
//! arguments back by key ([`Preparser::take`]) and checks them with the same code as the slow
//! path ([`args::check`](super::args::check)).
//!
//! Invariants:
//! - Same answers: a line is taken only if it parses completely under the strict shape;
//!   anything else (an unknown field, `_meta`, a context that is not an object, an error of
//!   any kind, a line over [`FAST_LINE_MAX`]) goes to rmcp unchanged and meets the general
//!   path, which names the problem. The context size limit (on compact JSON) stays exact: a
//!   taken line is at most a fifth of it, and no JSON text grows by more than 4.5x when
//!   written compactly (the worst token is a float like `1e15`, 18 bytes as
//!   `1000000000000000.0`; whitespace, escapes and repeated keys only shrink).
//! - Bounded: at most [`PARKED_MAX`] calls are parked, each at most [`FAST_LINE_MAX`] of text;
//!   when full, lines take the general path. A parked call not taken within [`PARKED_TTL`]
//!   (rmcp refused the request before the handler ran) is dropped at the next offer.
//! - One client per server (stdio): keys are only unique, not secret.

use super::args::MAX_CONTEXT_BYTES;
use ptc_shared::Value;
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
/// How long a parked call waits for its handler.
pub const PARKED_TTL: Duration = Duration::from_secs(10);

/// A call's arguments, parsed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parsed {
    pub program: Json,
    #[serde(default, deserialize_with = "context")]
    pub context: Option<Value>,
    #[serde(default)]
    pub output_schema: Option<Json>,
}

/// A context: null (none), or a JSON object read straight into a map.
fn context<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    match Value::deserialize_json(d)? {
        Value::Nil => Ok(None),
        m @ Value::Map(_) => Ok(Some(m)),
        _ => Err(serde::de::Error::custom("not an object")),
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
}

#[derive(Debug, Default)]
struct Parked {
    next: u64,
    calls: VecDeque<(u64, Instant, Parsed)>,
}

/// The table of parked calls, shared by the input stream and the handler.
#[derive(Debug, Clone, Default)]
pub struct Preparser(Arc<Mutex<Parked>>);

impl Preparser {
    /// The line to hand rmcp instead of `line`, if the call was parked.
    pub fn offer(&self, line: &[u8]) -> Option<Vec<u8>> {
        if line.len() > FAST_LINE_MAX || !contains(line, b"\"tools/call\"") {
            return None;
        }
        let mut parked = self.0.lock().ok()?;
        let now = Instant::now();
        while parked
            .calls
            .front()
            .is_some_and(|(_, at, _)| now.duration_since(*at) > PARKED_TTL)
        {
            parked.calls.pop_front();
        }
        if parked.calls.len() >= PARKED_MAX {
            return None;
        }
        let call: Line = serde_json::from_slice(line).ok()?;
        let plain = call.jsonrpc == "2.0"
            && call.method == "tools/call"
            && call.params.name == ptc_shared::lisp_eval::TOOL_NAME
            && (call.id.is_string() || call.id.is_number());
        if !plain {
            return None;
        }
        let key = parked.next;
        parked.next = key.wrapping_add(1);
        parked.calls.push_back((key, now, call.params.arguments));
        let stub = serde_json::json!({"jsonrpc": "2.0", "id": call.id, "method": "tools/call",
            "params": {"name": call.params.name, "arguments": {}, "_meta": {PREPARSED_META: key}}});
        Some(stub.to_string().into_bytes())
    }

    /// The parked arguments of `key`, once.
    pub fn take(&self, key: u64) -> Option<Parsed> {
        let mut parked = self.0.lock().ok()?;
        let at = parked.calls.iter().position(|(k, _, _)| *k == key)?;
        parked.calls.remove(at).map(|(_, _, p)| p)
    }
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
        let ctx = Value::from_json(&json!({"a": [1, "x"]})).ok();
        assert_eq!(parsed, Some((json!("(+ 1 2)"), ctx)));
        assert!(p.take(key).is_none(), "taken once");
    }

    #[test]
    fn the_rmcp_clients_request_takes_the_fast_path() {
        use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage};
        let Json::Object(a) = json!({"program": "1", "context": {"k": 1}}) else {
            return;
        };
        let params = CallToolRequestParams::new("lisp_eval").with_arguments(a);
        let msg = ClientJsonRpcMessage::request(
            CallToolRequest::new(params).into(),
            rmcp::model::NumberOrString::Number(3),
        );
        let text = serde_json::to_vec(&msg).unwrap_or_default();
        assert!(
            Preparser::default().offer(&text).is_some(),
            "{}",
            String::from_utf8_lossy(&text)
        );
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
                json!({"name": "lisp_eval", "arguments": {"program": "1"}, "_meta": {"progressToken": 1}}),
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
}
