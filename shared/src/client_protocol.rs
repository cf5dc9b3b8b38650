//! Client ↔ supervisor messages, carried as [`crate::codec`] frames over a local stream socket.
//!
//! ```text
//! client: Hello{version}           server: Welcome{version,..} | Refused{reason,message} (then closes)
//! client: Run{id, request}         (any number, concurrently; ids are the client's, unique per connection)
//! server: ToolCall{request_id, call_id, name, args}  ⇄  client: ToolResult{request_id, call_id, result}
//! client: Cancel{request_id}       (the request's runner is killed; its Step says `cancelled`)
//! client: Status{id}               server: Status{request_id, status} (the daemon's live state)
//! server: Step{request_id, step}   (exactly one per Run, also for busy / invalid / cancelled)
//! client: Mission{id, request}     (a SubAgent mission; the daemon runs the loop, and asks the
//!                                   client for every tool call and LLM answer:)
//! server: LlmCall{request_id, call_id, request}  ⇄  client: LlmResult{request_id, call_id, result}
//! server: Step{request_id, step}   (exactly one per Mission too; Cancel ends it the same way)
//! ```
//! Invariants:
//! - `Hello` and `Welcome` are variant 0 and carry the version as their first field, so a peer of
//!   any version can read the other's version (see [`peek_hello_version`]); a mismatch is
//!   answered with `Refused{invalid_request}` naming both versions.
//! - Every `Run` gets exactly one `Step` with its id, whatever happens; a `ToolResult` or
//!   `Cancel` for an unknown id is ignored (it may race with the Step).
//! - The connection is the unit of failure: a malformed or oversized frame closes that
//!   connection only, and closing a connection cancels all of its requests.
//!
//! - `Run` and `Mission` share one id space per connection; an `LlmResult` for an unknown call
//!   is ignored, like a late `ToolResult`.
//!
//! New variants are appended at the end of each enum, so existing tags keep their numbers.

use crate::codec::{Message, peek_tag_and_u32};
use crate::llm::{LlmError, LlmRequest, LlmResponse};
pub use crate::mission::MissionRequest;
use crate::protocol::ToolDecl;
use crate::value::EncodedValue;
use crate::{FailReason, Limits, Step, Value};
use serde::{Deserialize, Serialize};

/// Bumped on every incompatible change to these messages (independent of the runner protocol;
/// 2: the `Step` carried by `Step` frames changed, see `protocol::PROTOCOL_VERSION`; 3: the
/// `Mission`, `LlmCall`, `LlmResult` and `Status` frames; 4: `RunRequest.context` is one byte
/// string of value tokens, `value::EncodedValue`).
pub const CLIENT_PROTOCOL_VERSION: u32 = 4;

/// Default maximum frame body on a client connection (16 MiB; the daemon's config may lower it).
pub const CLIENT_MAX_FRAME: u32 = 16 << 20;

/// One execution request: the one description of a request from a client to the engine, used
/// unchanged by the client library, the daemon, the embedded engine and (inside the runner's
/// `Execute` frame) the runner. Only the engine normalises it (policy default, limit checks:
/// see `ptc_supervisor::engine`): a request looser than its policy is `invalid_request` naming
/// the field, never silently clamped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    pub program: String,
    /// The context map (`data/k`), already in the wire encoding (a JSON context is transcoded
    /// straight into it, `EncodedValue::from_json_text`); `nil` means empty.
    pub context: EncodedValue,
    /// The user namespace from earlier runs; `Nil` means empty.
    pub memory: Value,
    /// `*1 *2 *3`, newest first.
    pub history: Vec<Value>,
    /// The tools the client hosts; the program may call only these.
    pub tools: Vec<ToolDecl>,
    /// Signature text the result is checked against, e.g. `"() -> :int"`.
    pub signature: Option<String>,
    /// The signature of the step that produced `context`: its output fields become this run's
    /// inputs (`Signature::chain`), so types need not be restated.
    pub context_signature: Option<String>,
    /// Policy name; `None` is the server's default.
    pub policy: Option<String>,
    /// A complete set of limits, each at most the policy's.
    pub limits: Option<Limits>,
    /// Tightens only the wall-clock timeout (of `limits`, else of the policy).
    pub timeout_ms: Option<u64>,
    /// Tightens only the evaluation step budget (of `limits`, else of the policy).
    pub max_steps: Option<u64>,
    /// How strictly `signature` and the tools' signatures are applied.
    pub validation: crate::signature::Mode,
}

/// Frames a client sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientToServer {
    /// First frame of every connection.
    Hello {
        version: u32,
        client: String,
    },
    Run {
        id: u64,
        request: Box<RunRequest>,
    },
    /// The answer to `ToolCall{request_id, call_id}`. `Err` is a `tool_error` with that message.
    ToolResult {
        request_id: u64,
        call_id: u64,
        result: Result<Value, String>,
    },
    Cancel {
        request_id: u64,
    },
    /// A SubAgent mission; answered by exactly one `Step` with this id.
    Mission {
        id: u64,
        request: Box<MissionRequest>,
    },
    /// The answer to `LlmCall{request_id, call_id}`: the LLM's text and token usage, or a typed
    /// error (a retryable one is retried by the loop, with backoff, spending no turn).
    LlmResult {
        request_id: u64,
        call_id: u64,
        result: Result<LlmResponse, LlmError>,
    },
    /// Asks for the daemon's live state; answered by one `Status{request_id: id}`. Served
    /// without admission (no runner), filtered by the connection's peer uid.
    Status {
        id: u64,
    },
}

/// Frames the server sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ServerToClient {
    /// The handshake succeeded; `max_frame` is the largest body the server accepts.
    Welcome {
        version: u32,
        server: String,
        max_frame: u32,
    },
    /// The connection is refused (`permission_denied`, `invalid_request` for a version mismatch
    /// or a bad frame, `busy` for too many connections); the server closes it next.
    Refused { reason: FailReason, message: String },
    /// The program of request `request_id` called a tool the client hosts.
    ToolCall {
        request_id: u64,
        call_id: u64,
        name: String,
        args: Value,
    },
    /// The final answer to `Run{id: request_id}` or `Mission{id: request_id}`.
    Step { request_id: u64, step: Box<Step> },
    /// Mission `request_id` needs an LLM answer: the messages, the turn, the agent's path and
    /// the model name are in `request`.
    LlmCall {
        request_id: u64,
        call_id: u64,
        request: LlmRequest,
    },
    /// The answer to `Status{id: request_id}`.
    Status {
        request_id: u64,
        status: Box<crate::status::DaemonStatus>,
    },
}

const TAG_HELLO: u32 = 0;

impl Message for ClientToServer {}
impl Message for ServerToClient {}

/// The version in a `Hello`/`Welcome` body, even if the rest of it no longer decodes as ours.
pub fn peek_hello_version(body: &[u8]) -> Option<u32> {
    match peek_tag_and_u32(body)? {
        (TAG_HELLO, v) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::codec::{HEADER_LEN, decode_body, encode_frame};
    use crate::{Fail, FailReason};

    fn round_trip<T: Message + PartialEq + std::fmt::Debug>(m: T) {
        let frame = encode_frame(&m, CLIENT_MAX_FRAME).unwrap();
        let back: T = decode_body(&frame[HEADER_LEN..], CLIENT_MAX_FRAME).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn every_message_round_trips() {
        round_trip(ClientToServer::Hello {
            version: CLIENT_PROTOCOL_VERSION,
            client: "t".into(),
        });
        round_trip(ClientToServer::Run {
            id: 9,
            request: Box::new(RunRequest {
                program: "(+ 1 2)".into(),
                tools: vec![ToolDecl {
                    name: "a".into(),
                    signature: Some("() -> :int".into()),
                    description: None,
                }],
                timeout_ms: Some(5),
                limits: Some(Limits::default()),
                ..RunRequest::default()
            }),
        });
        round_trip(ClientToServer::ToolResult {
            request_id: 1,
            call_id: 2,
            result: Err("no".into()),
        });
        round_trip(ClientToServer::Cancel { request_id: 3 });
        round_trip(ClientToServer::Mission {
            id: 5,
            request: Box::new(MissionRequest {
                agent: crate::mission::AgentSpec::new("Go {{x}}.").agent(
                    crate::mission::AgentSpec::new("c")
                        .name("c")
                        .description("d"),
                ),
                input: crate::mission::MissionInput::Context(Value::Int(1)),
                options: crate::mission::MissionOptions::default(),
                models: crate::llm::LlmNames {
                    default: true,
                    any_model: false,
                    named: vec!["m".into()],
                },
            }),
        });
        round_trip(ClientToServer::LlmResult {
            request_id: 5,
            call_id: 1,
            result: Err(LlmError::Retryable("429".into())),
        });
        round_trip(ClientToServer::LlmResult {
            request_id: 5,
            call_id: 2,
            result: Ok(LlmResponse::text("hi")),
        });
        round_trip(ServerToClient::LlmCall {
            request_id: 5,
            call_id: 1,
            request: LlmRequest {
                system: "s".into(),
                messages: vec![crate::llm::LlmMessage {
                    role: crate::llm::Role::User,
                    content: "u".into(),
                }],
                turn: 1,
                agent: "main".into(),
                model: Some("m".into()),
            },
        });
        round_trip(ClientToServer::Status { id: 4 });
        round_trip(ServerToClient::Refused {
            reason: FailReason::PermissionDenied,
            message: "uid 5".into(),
        });
        round_trip(ServerToClient::ToolCall {
            request_id: 1,
            call_id: 2,
            name: "x".into(),
            args: Value::Int(1),
        });
        round_trip(ServerToClient::Step {
            request_id: 4,
            step: Box::new(Step::failed(
                Fail::new(FailReason::Busy, "full"),
                Value::Nil,
                Vec::new(),
            )),
        });
    }

    #[test]
    fn hello_version_is_readable_across_layouts() {
        let hello = ClientToServer::Hello {
            version: 7,
            client: "x".into(),
        };
        let frame = encode_frame(&hello, CLIENT_MAX_FRAME).unwrap();
        assert_eq!(peek_hello_version(&frame[HEADER_LEN..]), Some(7));
        // A future Hello with unknown trailing fields still shows its version.
        let future = encode_frame(&(0u32, 42u32, [1u8; 3], "new"), CLIENT_MAX_FRAME).unwrap();
        assert_eq!(peek_hello_version(&future[HEADER_LEN..]), Some(42));
        let welcome = ServerToClient::Welcome {
            version: 3,
            server: "s".into(),
            max_frame: 1,
        };
        let frame = encode_frame(&welcome, CLIENT_MAX_FRAME).unwrap();
        assert_eq!(peek_hello_version(&frame[HEADER_LEN..]), Some(3));
        let run = encode_frame(&ClientToServer::Cancel { request_id: 1 }, 64).unwrap();
        assert_eq!(peek_hello_version(&run[HEADER_LEN..]), None);
    }
}
