//! The direct path of a plain `lisp_eval` call: answered by the server without passing
//! through rmcp's dispatch.
//!
//! Why: for `(+ 1 2)` rmcp's parse of even a 150-byte stub line was a quarter of the server's
//! instructions per call (BENCHMARKS.md, "Where a `ptc mcp` call's wake-ups and instructions
//! go"), and its dispatch adds two task hops (a handler task, then a response-send task after
//! a channel back to its loop). Here the input stream ([`FramedInput`](super::input)) hands a
//! line that [`preparse::plain_call`] reads to [`Direct::take`], which spawns one task that runs
//! the call with the same code as rmcp's handler ([`LispEval::run_call`]) and queues the answer
//! line on the shared output ([`super::out`]); rmcp never sees the line.
//!
//! Invariants:
//! - Same answers, same bytes: the arguments are checked by [`args::check`], the payload is
//!   rendered by the same code, and the answer line ([`answer_line`]) holds the bytes rmcp
//!   writes for that payload (its handler's result shape for the protocol versions this server
//!   speaks, one JSON line), with the payload serialised once instead of twice; a test
//!   compares the bytes of both paths, for a success and an error.
//! - The answer is written by the call's own task when the output is idle ([`super::out`]):
//!   from the runner's Step to the answer's write there is no other task.
//! - Only after `notifications/initialized` (before, lines take the stub path to rmcp, which
//!   answers as the protocol says), and only for an id no direct call in flight has; at most
//!   [`DIRECT_MAX`] direct calls at once (beyond, the stub path).
//! - `notifications/cancelled` reaches rmcp, which calls [`DirectCalls::cancel`] through
//!   `on_cancelled`: the call's run is dropped at once (killing its runner) and it is not
//!   answered, as rmcp does for its own calls. A call that ends while the input closes is
//!   answered `shutting_down` by the same wait as rmcp's; the server's output stays open until
//!   every direct call has answered.

use super::out::Lines;
use super::preparse::{FAST_LINE_MAX, PARKED_MAX, plain_call};
use super::{LispEval, args};
use ptc_shared::lisp_eval::Payload;
use rmcp::model::RequestId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Direct calls in flight at once, at most (each holds at most a [`FAST_LINE_MAX`] line's
/// arguments).
pub const DIRECT_MAX: usize = PARKED_MAX;

/// The direct calls in flight, by JSON-RPC id, each with the way to cancel it.
#[derive(Debug, Default)]
pub struct DirectCalls {
    /// Set once the client said `notifications/initialized`.
    pub(super) initialized: AtomicBool,
    calls: Mutex<HashMap<RequestId, oneshot::Sender<()>>>,
}

impl DirectCalls {
    /// Registers a call; false if the table is full or `id` is already in flight.
    fn insert(&self, id: RequestId, cancel: oneshot::Sender<()>) -> bool {
        let Ok(mut calls) = self.calls.lock() else {
            return false;
        };
        if calls.len() >= DIRECT_MAX || calls.contains_key(&id) {
            return false;
        }
        calls.insert(id, cancel);
        true
    }

    /// Cancels the call `id` if it is a direct call in flight.
    pub fn cancel(&self, id: &RequestId) {
        let cancel = self.calls.lock().ok().and_then(|mut c| c.remove(id));
        if let Some(tx) = cancel {
            let _ = tx.send(());
        }
    }

    /// Removes a finished call; false if it was cancelled meanwhile (then it is not answered).
    fn finish(&self, id: &RequestId) -> bool {
        self.calls.lock().is_ok_and(|mut c| c.remove(id).is_some())
    }
}

/// What the input stream calls for each complete line.
#[derive(Debug)]
pub struct Direct {
    server: Arc<LispEval>,
    out: Lines,
}

impl Direct {
    pub(super) fn new(server: Arc<LispEval>, out: Lines) -> Direct {
        Direct { server, out }
    }

    /// Takes `line` if it is a plain `lisp_eval` call the direct path may answer: the call
    /// runs in its own task and the line must not be passed on. False: pass it on.
    pub fn take(&self, line: &[u8]) -> bool {
        let calls = &self.server.direct;
        if line.len() > FAST_LINE_MAX || !calls.initialized.load(Ordering::Acquire) {
            return false;
        }
        let Some(call) = plain_call(line) else {
            return false;
        };
        let Ok(id) = serde_json::from_value::<RequestId>(call.id) else {
            return false;
        };
        let (tx, rx) = oneshot::channel();
        if !calls.insert(id.clone(), tx) {
            return false;
        }
        let server = Arc::clone(&self.server);
        let out = self.out.clone();
        tokio::spawn(async move {
            let cancelled = async move {
                if rx.await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let payload = server.run_call(args::check(call.args), cancelled).await;
            if !server.direct.finish(&id) {
                return;
            }
            match answer_line(&id, &payload) {
                Ok(line) => {
                    if let Err(e) = out.send(line).await {
                        tracing::warn!(%e, "could not write an answer");
                    }
                }
                Err(e) => tracing::error!(%e, "could not serialise an answer"),
            }
        });
        true
    }
}

/// The answer line of a direct call: the bytes rmcp writes for the same payload (its
/// `JsonRpcMessage` response around `CallToolResult::structured` or `structured_error`, as
/// shaped for the protocol versions this server speaks), with the payload's JSON serialised
/// once: rmcp's path writes it as the `content` text, then serialises the same tree again as
/// `structuredContent` (about a quarter of the server's instructions per `(+ 1 2)` call went to
/// the answer; BENCHMARKS.md). A test compares the two paths' bytes, success and error.
fn answer_line(id: &RequestId, p: &Payload) -> serde_json::Result<Vec<u8>> {
    let text = serde_json::to_string(&p.json)?;
    let mut line = Vec::with_capacity(2 * text.len() + 128);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut line, id)?;
    line.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    serde_json::to_writer(&mut line, &text)?;
    line.extend_from_slice(br#"}],"structuredContent":"#);
    line.extend_from_slice(text.as_bytes());
    line.extend_from_slice(if p.is_error {
        br#","isError":true}}"#.as_slice()
    } else {
        br#","isError":false}}"#.as_slice()
    });
    line.push(b'\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use crate::client::{Client, Embedded};
    use crate::mcp::{Options, PROTOCOL_VERSIONS, serve};
    use rmcp::model::ProtocolVersion;

    /// The direct path shapes its answers as rmcp does for peers before 2026-07-28.
    #[test]
    fn every_version_spoken_is_a_legacy_one_for_rmcps_result_shape() {
        for v in PROTOCOL_VERSIONS {
            assert!(v.as_str() < ProtocolVersion::V_2026_07_28.as_str(), "{v}");
        }
    }
    use serde_json::{Value as Json, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// The same call answered by the direct path and, with a `_meta` entry that only the
    /// general path accepts, by rmcp's dispatch: the answers are the same bytes but the id,
    /// for a success and for an error (escapes in the text, a string id).
    #[tokio::test]
    async fn direct_answers_are_rmcps_bytes_and_both_paths_serve() {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server_end);
        let server = tokio::spawn(serve(Client::in_process(), Options::default(), sr, sw));
        let (cr, mut cw) = tokio::io::split(client_end);
        let mut lines = BufReader::new(cr).lines();
        let mut send = async |m: Json| cw.write_all(format!("{m}\n").as_bytes()).await.is_ok();
        let call = |id: Json, program: &str, meta: Json| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "lisp_eval", "arguments": {"program": program}, "_meta": meta}})
        };
        assert!(
            send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}})
            )
            .await
        );
        let init = lines.next_line().await.ok().flatten().unwrap_or_default();
        assert!(init.contains("\"id\":0"), "{init}");
        assert!(send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await);
        // rmcp calls `on_initialized` from a task of its own: give it a moment (were it later,
        // both calls would take rmcp's path and the comparison would only be weaker).
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let cases = [
            (json!(1000), json!(1001), "(println \"p\") {:a [1 2]}"),
            (
                json!("s-1"),
                json!("s-2"),
                "(println \"q\\\"t\") (fail {:a \"é\"})",
            ),
        ];
        let mut answers = Vec::new();
        for (direct_id, general_id, program) in cases {
            assert!(
                send(call(
                    direct_id.clone(),
                    program,
                    json!({"progressToken": 5})
                ))
                .await
            );
            let direct = lines.next_line().await.ok().flatten().unwrap_or_default();
            let meta = json!({"progressToken": 5, "other": 1});
            assert!(send(call(general_id.clone(), program, meta)).await);
            let general = lines.next_line().await.ok().flatten().unwrap_or_default();
            let (d, g) = (direct_id.to_string(), general_id.to_string());
            assert!(
                direct.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{d},")),
                "{direct}"
            );
            assert_eq!(direct.replacen(&d, &g, 1), general);
            answers.push(direct);
        }
        assert!(
            answers[0].contains(r#"\"result\":\"user=> {:a [1 2]}\",\"prints\":[\"p\"]"#),
            "{}",
            answers[0]
        );
        assert!(
            answers[0].ends_with(r#""isError":false}}"#),
            "{}",
            answers[0]
        );
        assert!(
            answers[1].ends_with(r#""isError":true}}"#),
            "{}",
            answers[1]
        );
        assert!(answers[1].contains(r#""reason":"fail""#), "{}", answers[1]);
        assert!(cw.shutdown().await.is_ok());
        assert!(matches!(server.await, Ok(Ok(()))));
    }
}
