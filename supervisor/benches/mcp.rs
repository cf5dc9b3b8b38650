//! `lisp_eval` through `ptc mcp` against the same programs through the engine, in one run.
//!
//! Baseline: the client library over an embedded engine in this process (`client.run`), what
//! `ptc run --context FILE` does: the context is JSON text, transcoded per call straight into
//! the runner's wire encoding (`EncodedValue::from_json_text`, `ptc run`'s own reader).
//! Measured: `ptc mcp` child processes (the release `ptc`, each with its own embedded engine,
//! same default policy and runner), one call at a time, driven over stdio by two clients:
//! rmcp's client (the official Rust SDK: the real client's view, its own JSON encoding of the
//! arguments included) and a minimal JSON-RPC client, which measures the server. Programs:
//! `(+ 1 2)`, and summing 1,000 records passed as `context`.
//!
//! Fairness: the engine side and the minimal client start from the same form, bytes made once:
//! the engine side holds the context's JSON text, the minimal client the request line's text
//! (built once, the id written into it per call). Neither re-encodes its input per call; the
//! engine transcodes its text and the server parses its whole line, context included, per call.
//! The minimal client then reads the answer line and parses it. rmcp's client rows serialise
//! the arguments per call, as an SDK client does (a cost of that client, not of the server).
//! The runner processes' CPU is in no side's figures. The sides take turns in blocks of
//! [`BLOCK`] calls, so a change of machine load during the run falls on all of them. What only
//! the MCP sides pay: the request line's parse, the argument checks, the payload rendering, the
//! answer line, the pipe both ways and the client's read of the answer.
//!
//! Printed: p50/p99 of each, the p50 the MCP layer adds and the ratio; then CPU per call (all
//! threads, from `/proc/PID/task/*/schedstat`, nanosecond clocks): this process during the
//! engine blocks (client library + engine), and during the MCP blocks the `ptc mcp` server and
//! this process (the client). Run with `cargo bench -p ptc-supervisor --bench mcp` (`-- --quick`
//! for fewer iterations).
//!
//! Before/after: with `PTC_MCP_BEFORE=PATH` (another build's `ptc`), a third MCP side drives that
//! binary with the minimal client, in the same blocks, so a change to the server is measured
//! against the build without it in one run (printed as client `minimal, before`).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "support/mod.rs"]
mod support;

use ptc_shared::codec::DEFAULT_MAX_FRAME;
use ptc_shared::value::EncodedValue;
use ptc_supervisor::client::{Client, Embedded, Run};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Calls per side before the other side's turn.
const BLOCK: usize = 10;

/// Builds `ptc` and `ptc-runner` next to this bench (a no-op when current).
fn build_bins() {
    support::cargo_build(&["-p", "ptc-runner", "-p", "ptc-supervisor", "--bins"]);
}

/// CPU time of every thread of `pid` so far (threads that already ended are not counted).
fn cpu_of(pid: u32) -> Duration {
    let mut ns = 0u64;
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    for t in tasks.flatten() {
        let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(ns)
}

/// One side's latencies and CPU (this process's, and the server's when there is one).
#[derive(Default)]
struct Side {
    times: Vec<Duration>,
    cpu_here: Duration,
    cpu_server: Duration,
}

impl Side {
    async fn block<F, Fut>(&mut self, f: &mut F, server: Option<u32>, record: bool)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let (here0, srv0) = (cpu_of(std::process::id()), server.map(cpu_of));
        for _ in 0..BLOCK {
            let t = Instant::now();
            f().await;
            if record {
                self.times.push(t.elapsed());
            }
        }
        if record {
            self.cpu_here += cpu_of(std::process::id()).saturating_sub(here0);
            if let (Some(pid), Some(s0)) = (server, srv0) {
                self.cpu_server += cpu_of(pid).saturating_sub(s0);
            }
        }
    }

    fn p(&mut self, pct: usize) -> Duration {
        self.times.sort();
        support::percentile(&self.times, pct)
    }

    fn per_call(&self, d: Duration) -> f64 {
        d.as_secs_f64() * 1e6 / self.times.len().max(1) as f64
    }
}

async fn mcp_client() -> (RunningService<RoleClient, ()>, u32) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ptc"));
    cmd.args(["mcp", "--max-concurrency", "1"]);
    let child = TokioChildProcess::new(cmd).unwrap();
    let pid = child.id().unwrap();
    (().serve(child).await.unwrap(), pid)
}

/// The least a client can do: write a request line, read the answer line and parse it.
struct RawClient {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    /// The line being written, reused.
    buf: Vec<u8>,
}

/// A request line made once: the text before and after its id.
struct Line {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Line {
    fn new(method: &str, params: &Value) -> Line {
        let tail = json!({"method": method, "params": params}).to_string();
        Line {
            head: br#"{"jsonrpc":"2.0","id":"#.to_vec(),
            // `{"method":...}` without its `{`, after the id's comma.
            tail: format!(",{}\n", &tail[1..]).into_bytes(),
        }
    }
}

impl RawClient {
    async fn start(ptc: &str) -> (RawClient, u32) {
        let mut cmd = tokio::process::Command::new(ptc);
        cmd.args(["mcp", "--max-concurrency", "1"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let pid = child.id().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut c = RawClient {
            _child: child,
            stdin,
            lines,
            next_id: 1,
            buf: Vec::new(),
        };
        c.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        )
        .await;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        c.stdin
            .write_all(format!("{note}\n").as_bytes())
            .await
            .unwrap();
        (c, pid)
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.send(&Line::new(method, &params)).await
    }

    /// Writes `line` with the next id, reads the answer line and parses it whole.
    async fn send(&mut self, line: &Line) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.buf.clear();
        self.buf.extend_from_slice(&line.head);
        self.buf.extend_from_slice(id.to_string().as_bytes());
        self.buf.extend_from_slice(&line.tail);
        self.stdin.write_all(&self.buf).await.unwrap();
        let answer = self.lines.next_line().await.unwrap().unwrap();
        let mut answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["id"], id);
        answer["result"].take()
    }
}

fn main() {
    build_bins();
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 300 } else { 2000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let engine = Client::embedded().unwrap();
        let (mcp, server_pid) = mcp_client().await;
        let (raw, raw_pid) = RawClient::start(env!("CARGO_BIN_EXE_ptc")).await;
        let raw = tokio::sync::Mutex::new(raw);
        let before_bin = std::env::var("PTC_MCP_BEFORE").ok();
        let before = match &before_bin {
            Some(path) => Some(RawClient::start(path).await),
            None => None,
        };
        let before_pid = before.as_ref().map(|(_, pid)| *pid);
        let before = before.map(|(c, _)| tokio::sync::Mutex::new(c));
        let rows: Vec<Value> = (0..1000).map(|i| json!({"id": i, "v": i})).collect();
        let cases = [
            ("(+ 1 2)", json!({})),
            ("(->> data/rows (map :v) (reduce +))", json!({ "rows": rows })),
        ];
        let mut cpu_rows = Vec::new();
        println!("| program | client | engine p50 | engine p99 | ptc mcp p50 | ptc mcp p99 | added p50 | ratio p50 |");
        println!("|---|---|---|---|---|---|---|---|");
        for (program, context) in cases {
            let text = serde_json::to_vec(&context).unwrap();
            let mut on_engine = || {
                let ctx = EncodedValue::from_json_text(&text, DEFAULT_MAX_FRAME as usize).unwrap();
                let run = Run::new(program).context(ctx);
                let c = engine.clone();
                async move {
                    assert!(c.run(run).await.is_ok());
                }
            };
            let Value::Object(ctx) = context.clone() else { unreachable!() };
            let mut on_mcp = || {
                let mut args = serde_json::Map::new();
                args.insert("program".into(), program.into());
                args.insert("context".into(), Value::Object(ctx.clone()));
                let params = CallToolRequestParams::new("lisp_eval").with_arguments(args);
                let mcp = &mcp;
                async move {
                    let r = mcp.call_tool(params).await.unwrap();
                    assert_eq!(r.is_error, Some(false));
                }
            };
            let params = json!({"name": "lisp_eval",
                "arguments": {"program": program, "context": &ctx}});
            let line = Line::new("tools/call", &params);
            let mut on_raw = || {
                let (raw, line) = (&raw, &line);
                async move {
                    let r = raw.lock().await.send(line).await;
                    assert_eq!(r["isError"], false);
                }
            };
            let mut on_before = || {
                let (before, line) = (before.as_ref(), &line);
                async move {
                    if let Some(b) = before {
                        let r = b.lock().await.send(line).await;
                        assert_eq!(r["isError"], false);
                    }
                }
            };
            let (mut e, mut m, mut r) = (Side::default(), Side::default(), Side::default());
            let mut b = Side::default();
            let warm = n / 10 / BLOCK;
            for round in 0..warm + n / BLOCK {
                e.block(&mut on_engine, None, round >= warm).await;
                m.block(&mut on_mcp, Some(server_pid), round >= warm).await;
                r.block(&mut on_raw, Some(raw_pid), round >= warm).await;
                if before_pid.is_some() {
                    b.block(&mut on_before, before_pid, round >= warm).await;
                }
            }
            let us = |d: Duration| d.as_secs_f64() * 1e6;
            let name = if program.len() > 20 { "sum of 1,000 records" } else { program };
            let (e50, e99) = (e.p(50), e.p(99));
            let mut sides = vec![("rmcp", &mut m), ("minimal", &mut r)];
            if before_pid.is_some() {
                sides.push(("minimal, before", &mut b));
            }
            for (client, side) in sides {
                let m50 = side.p(50);
                println!(
                    "| `{name}` | {client} | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} µs | {:+.0} µs | {:.2} |",
                    us(e50),
                    us(e99),
                    us(m50),
                    us(side.p(99)),
                    us(m50) - us(e50),
                    us(m50) / us(e50)
                );
                cpu_rows.push(format!(
                    "| `{name}` | {client} | {:.0} µs | {:.0} µs | {:.0} µs | {:+.0} µs |",
                    e.per_call(e.cpu_here),
                    side.per_call(side.cpu_server),
                    side.per_call(side.cpu_here),
                    side.per_call(side.cpu_server) - e.per_call(e.cpu_here),
                ));
            }
        }
        println!();
        println!("CPU per call (all threads; runner processes excluded on both sides):");
        println!("| program | client | engine side (client + engine) | `ptc mcp` server | MCP client | server over engine side |");
        println!("|---|---|---|---|---|---|");
        for r in cpu_rows {
            println!("{r}");
        }
        mcp.cancel().await.unwrap();
    });
}
