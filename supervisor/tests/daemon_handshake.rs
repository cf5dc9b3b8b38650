//! The connection's own answers, word for word: each way a handshake can fail is refused with
//! its own message (a version mismatch names both versions, even when the newer client's Hello
//! no longer decodes), and a Run the daemon refuses gives back the memory and history it came
//! with. Raw frames on a real daemon's temp socket.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::client_protocol::ServerToClient;
use ptc_shared::client_protocol::{CLIENT_PROTOCOL_VERSION, ClientToServer, RunRequest};
use ptc_shared::codec::encode_frame;
use ptc_shared::{FailReason, Value};
use std::path::Path;

fn refused(msg: Option<ServerToClient>) -> (FailReason, String) {
    match msg {
        Some(ServerToClient::Refused { reason, message }) => (reason, message),
        other => panic!("expected Refused, got {other:?}"),
    }
}

/// A Hello of `version` whose body is cut short by three bytes (inside the client's name), with
/// a header that matches the shorter body: a whole frame that does not decode.
fn undecodable_hello(version: u32) -> Vec<u8> {
    let hello = ClientToServer::Hello {
        version,
        client: "a client from elsewhere".into(),
    };
    let frame = encode_frame(&hello, u32::MAX).unwrap();
    let body = &frame[4..frame.len() - 3];
    let mut cut = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    cut.extend_from_slice(body);
    cut
}

fn answer_to(socket: &Path, bytes: &[u8]) -> (FailReason, String) {
    let mut r = Raw::connect(socket);
    r.send_bytes(bytes);
    let answer = refused(r.recv());
    assert!(
        r.recv().is_none(),
        "the connection is closed after a refusal"
    );
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failed_handshake_is_refused_with_its_own_message() {
    let d = TestDaemon::start("").await;
    let socket = d.socket.clone();
    tokio::task::spawn_blocking(move || {
        let v = CLIENT_PROTOCOL_VERSION;
        let newer = v + 7;
        let mismatch =
            format!("protocol version mismatch: the supervisor speaks {v}, the client {newer}");
        let hello = ClientToServer::Hello {
            version: newer,
            client: "future".into(),
        };
        let frame = encode_frame(&hello, u32::MAX).unwrap();
        let invalid = FailReason::InvalidRequest;
        assert_eq!(answer_to(&socket, &frame), (invalid, mismatch.clone()));
        // A newer client's Hello may carry fields this daemon cannot decode: the version is
        // still read and named.
        assert_eq!(
            answer_to(&socket, &undecodable_hello(newer)),
            (invalid, mismatch)
        );
        // Our own version that does not decode is a bad frame, not a mismatch.
        let (reason, msg) = answer_to(&socket, &undecodable_hello(v));
        assert_eq!(reason, invalid);
        assert!(msg.starts_with("bad Hello frame: "), "{msg}");
        let run = ClientToServer::Cancel { request_id: 1 };
        let frame = encode_frame(&run, u32::MAX).unwrap();
        assert_eq!(
            answer_to(&socket, &frame),
            (invalid, "the first frame must be Hello".to_string())
        );
        // A client that closes its side before any frame still reads why.
        let mut r = Raw::connect(&socket);
        r.0.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(
            refused(r.recv()),
            (invalid, "closed before Hello".to_string())
        );
    })
    .await
    .unwrap();
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_run_gives_back_its_memory_and_history() {
    let uid = nix::unistd::geteuid().as_raw();
    let d = TestDaemon::start(&format!("[policies_by_uid]\n{uid} = [\"strict\"]")).await;
    let socket = d.socket.clone();
    tokio::task::spawn_blocking(move || {
        let mut r = Raw::connect(&socket);
        assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
        let memory = Value::Map(
            [(Value::keyword("seen"), Value::Int(3))]
                .into_iter()
                .collect::<ptc_shared::value::Map>()
                .into(),
        );
        let history = vec![Value::Int(1), Value::string("two")];
        r.send(&ClientToServer::Run {
            id: 9,
            request: Box::new(RunRequest {
                program: "(+ 1 2)".into(),
                memory: memory.clone(),
                history: history.clone(),
                ..RunRequest::default()
            }),
        });
        let step = match r.recv() {
            Some(ServerToClient::Step {
                request_id: 9,
                step,
            }) => step,
            other => panic!("expected the Step of request 9, got {other:?}"),
        };
        let fail = step.fail.as_ref().unwrap();
        assert_eq!(fail.reason, FailReason::PermissionDenied);
        assert_eq!(
            fail.message,
            format!("uid {uid} may not use policy `default`")
        );
        assert_eq!((step.memory, step.history), (memory, history));
    })
    .await
    .unwrap();
    d.stop().await;
}
