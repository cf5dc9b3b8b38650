//! Bad input on the client socket: truncated frames, a 4 GiB length prefix, random bytes, a
//! wrong protocol version, frames out of order. Each is answered (a `Refused` frame) or dropped,
//! closes only its own connection, never disturbs a client working alongside, and does not make
//! the daemon grow.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::FailReason;
use ptc_shared::client_protocol::{CLIENT_PROTOCOL_VERSION, ClientToServer, ServerToClient};
use ptc_shared::codec::encode_frame;
use ptc_supervisor::client::{Client, Run};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn refused_with(msg: Option<ServerToClient>, reason: FailReason) -> String {
    match msg {
        Some(ServerToClient::Refused { reason: r, message }) if r == reason => message,
        other => panic!("expected Refused({reason}), got {other:?}"),
    }
}

/// Each kind of abuse, once; every one ends with the connection closed.
fn abuse_once(socket: &Path, seed: u64) {
    // Random bytes instead of a Hello.
    let mut r = Raw::connect(socket);
    let junk: Vec<u8> = (0..64u64)
        .map(|i| {
            let x = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(i.wrapping_mul(1442695040888963407));
            x.to_be_bytes()[2]
        })
        .collect();
    r.send_bytes(&[0, 0, 0, 60]);
    r.send_bytes(&junk[..60]);
    let _ = r.recv();
    assert!(r.recv().is_none());

    // A wrong protocol version is named in the refusal.
    let mut r = Raw::connect(socket);
    r.send(&ClientToServer::Hello {
        version: CLIENT_PROTOCOL_VERSION + 7,
        client: "future".into(),
    });
    let msg = refused_with(r.recv(), FailReason::InvalidRequest);
    assert!(msg.contains("version"), "{msg}");
    assert!(r.recv().is_none());

    // A 4 GiB length prefix after a good handshake: refused before any allocation.
    let mut r = Raw::connect(socket);
    assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
    r.send_bytes(&[0xff, 0xff, 0xff, 0xff]);
    let msg = refused_with(r.recv(), FailReason::InvalidRequest);
    assert!(msg.contains("exceeds"), "{msg}");
    assert!(r.recv().is_none());

    // A truncated frame: the header promises more than ever arrives, then the client leaves.
    let mut r = Raw::connect(socket);
    assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
    let frame = encode_frame(&ClientToServer::Cancel { request_id: 1 }, 1 << 20).unwrap();
    r.send_bytes(&frame[..frame.len() - 1]);
    drop(r);

    // A malformed body after the handshake (an unknown message tag).
    let mut r = Raw::connect(socket);
    assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
    r.send_bytes(&[0, 0, 0, 2, 99, 0]);
    refused_with(r.recv(), FailReason::InvalidRequest);
    assert!(r.recv().is_none());

    // A Run before the Hello.
    let mut r = Raw::connect(socket);
    r.send(&ClientToServer::Cancel { request_id: 3 });
    refused_with(r.recv(), FailReason::InvalidRequest);
}

/// Runs `abuse_once` for each seed, off the runtime's worker threads.
async fn abuse(socket: &Path, seeds: std::ops::Range<u64>) {
    let socket = socket.to_path_buf();
    tokio::task::spawn_blocking(move || {
        for seed in seeds {
            abuse_once(&socket, seed);
        }
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_closes_only_its_own_connection() {
    let d = TestDaemon::start("").await;
    // A well-behaved client keeps running programs the whole time.
    let good = Client::connect(&d.socket).await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = tokio::spawn({
        let (good, stop) = (good.clone(), Arc::clone(&stop));
        async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let step = good.run(Run::new(format!("(+ {n} 1)"))).await.unwrap();
                assert_eq!(
                    step.return_value,
                    Some(ptc_shared::Value::Int(i64::try_from(n).unwrap() + 1))
                );
                n += 1;
            }
            n
        }
    });
    abuse(&d.socket, 0..5).await;
    // Growth with the amount of abuse is what a leak looks like; a one-time step (a new thread's
    // allocator arena, the runtime's caches) is not. So: warm up, then two equal rounds, and the
    // second round must not grow the process the way the first may have.
    let mid = rss_kib();
    abuse(&d.socket, 5..205).await;
    let first = rss_kib();
    abuse(&d.socket, 205..405).await;
    let second = rss_kib();
    stop.store(true, Ordering::Relaxed);
    let runs = tokio::time::timeout(Duration::from_secs(10), worker)
        .await
        .unwrap()
        .unwrap();
    assert!(runs > 0);
    // The test process is the daemon here (1,200 abusive connections per round).
    assert!(
        second < first + 2 * 1024 && second < mid + 16 * 1024,
        "RSS grew from {mid} KiB to {first} KiB, then to {second} KiB"
    );
    // The daemon still accepts new clients.
    let c = Client::connect(&d.socket).await.unwrap();
    assert!(c.run(Run::new("1")).await.is_ok());
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_results_and_cancels_for_unknown_ids_are_ignored() {
    let d = TestDaemon::start("").await;
    let socket = d.socket.clone();
    tokio::task::spawn_blocking(move || {
        let mut r = Raw::connect(&socket);
        assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
        r.send(&ClientToServer::ToolResult {
            request_id: 77,
            call_id: 1,
            result: Ok(ptc_shared::Value::Nil),
        });
        r.send(&ClientToServer::Cancel { request_id: 78 });
        r.send(&ClientToServer::Run {
            id: 5,
            request: Box::new(ptc_shared::client_protocol::RunRequest {
                program: "(* 6 7)".into(),
                ..Default::default()
            }),
        });
        match r.recv() {
            Some(ServerToClient::Step {
                request_id: 5,
                step,
            }) => {
                assert_eq!(step.return_value, Some(ptc_shared::Value::Int(42)));
            }
            other => panic!("{other:?}"),
        }
    })
    .await
    .unwrap();
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_are_told_busy() {
    let d = TestDaemon::start("max_connections = 2").await;
    let socket = d.socket.clone();
    tokio::task::spawn_blocking(move || {
        let mut a = Raw::connect(&socket);
        let mut b = Raw::connect(&socket);
        assert!(matches!(a.hello(), ServerToClient::Welcome { .. }));
        assert!(matches!(b.hello(), ServerToClient::Welcome { .. }));
        let mut c = Raw::connect(&socket);
        refused_with(c.recv(), FailReason::Busy);
        // Once one leaves, a new connection is served again.
        drop(a);
        // Generous: this checks that the slot comes back, not how fast (CI machines are busy).
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let mut n = Raw::connect(&socket);
            // Still busy, the daemon may refuse and close before the Hello is written.
            let hello = ClientToServer::Hello {
                version: CLIENT_PROTOCOL_VERSION,
                client: "again".into(),
            };
            n.send_bytes(&encode_frame(&hello, u32::MAX).unwrap());
            match n.recv() {
                Some(ServerToClient::Welcome { .. }) => break,
                _ if std::time::Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                other => panic!("never served again: {other:?}"),
            }
        }
    })
    .await
    .unwrap();
    d.stop().await;
}
