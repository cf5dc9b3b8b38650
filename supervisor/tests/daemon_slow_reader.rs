//! A client that sends requests and never reads its answers, through a real daemon on a temp
//! socket: the daemon stops reading that connection once `SEND_QUEUE_MAX` bytes of answers wait
//! (backpressure), so its memory stays bounded while another client is served.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use ptc_shared::Value;
use ptc_shared::client_protocol::{ClientToServer, RunRequest, ServerToClient};
use ptc_shared::codec::encode_frame;
use ptc_shared::value::Map;
use std::io::Write;
use std::time::{Duration, Instant};

fn run(id: u64, memory: Value) -> ClientToServer {
    ClientToServer::Run {
        id,
        request: Box::new(RunRequest {
            program: "(+ 1 2)".into(),
            memory,
            ..RunRequest::default()
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_cannot_grow_the_daemon() {
    let daemon = TestDaemon::start("per_uid_max = 4\nper_uid_queue = 4\n").await;
    let base = rss_kib();
    // 400 requests, each carrying 512 KiB of memory that its answer (or refusal) carries back:
    // 200 MiB of answers if the daemon read and buffered them all.
    let mut m = Map::new();
    m.insert(Value::keyword("m"), Value::string("x".repeat(512 << 10)));
    let socket = daemon.socket.clone();
    let hog = std::thread::spawn(move || {
        let mut r = Raw::connect(&socket);
        assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
        r.0.set_write_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut sent = 0;
        for id in 0..400 {
            let frame = encode_frame(&run(id, Value::Map(Box::new(m.clone()))), u32::MAX).unwrap();
            if r.0.write_all(&frame).is_err() {
                break; // The daemon stopped reading: backpressure reached this client.
            }
            sent += 1;
        }
        (r, sent)
    });
    let (hog_conn, sent) = tokio::task::spawn_blocking(move || hog.join().unwrap())
        .await
        .unwrap();
    eprintln!("the non-reading client got {sent} of 400 requests written");
    assert!(
        sent < 100,
        "the daemon kept reading a client that never reads"
    );
    // Another client is served meanwhile.
    let socket = daemon.socket.clone();
    let (answer, took) = tokio::task::spawn_blocking(move || {
        let mut r = Raw::connect(&socket);
        assert!(matches!(r.hello(), ServerToClient::Welcome { .. }));
        let t = Instant::now();
        r.send(&run(1, Value::Nil));
        (r.recv(), t.elapsed())
    })
    .await
    .unwrap();
    answered_three_quickly(answer, took, "the non-reading client");
    let grew = rss_kib().saturating_sub(base);
    eprintln!("daemon grew {grew} KiB with a non-reading client");
    // SEND_QUEUE_MAX (4 MiB) + the socket buffers + two decoded frames waiting + the requests
    // admitted, plus what the allocator keeps of the transient copies: well under the 200 MiB
    // the answers would take if buffered.
    assert!(grew < 64 << 10, "grew {grew} KiB");
    drop(hog_conn);
    daemon.stop().await;
}
