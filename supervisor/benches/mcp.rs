//! `lisp_eval` through `ptc mcp` against the same programs through the engine, in one run.
//!
//! Baseline: the client library over an embedded engine in this process (`client.run`), what
//! `ptc run` does. Measured: a `ptc mcp` child process (the release `ptc`, its own embedded
//! engine with the same default policy) driven by rmcp's client over stdio, one call at a time.
//! Programs: `(+ 1 2)`, and summing 1,000 records passed as `context`. Printed: p50/p99 of
//! each, the p50 the MCP layer adds, and the ratio. Run with
//! `cargo bench -p ptc-supervisor --bench mcp` (`-- --quick` for fewer iterations).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

#[path = "support/mod.rs"]
mod support;

use ptc_supervisor::client::{Client, Embedded, Run};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Builds `ptc` and `ptc-runner` next to this bench (a no-op when current).
fn build_bins() {
    support::cargo_build(&["-p", "ptc-runner", "-p", "ptc-supervisor", "--bins"]);
}

async fn measure<F, Fut>(n: usize, mut f: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..n / 10 {
        f().await;
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f().await;
        times.push(t.elapsed());
    }
    times.sort();
    (
        support::percentile(&times, 50),
        support::percentile(&times, 99),
    )
}

async fn mcp_client() -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ptc"));
    cmd.args(["mcp", "--max-concurrency", "1"]);
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
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
        let mcp = mcp_client().await;
        let rows: Vec<Value> = (0..1000).map(|i| json!({"id": i, "v": i})).collect();
        let cases = [
            ("(+ 1 2)", json!({})),
            ("(->> data/rows (map :v) (reduce +))", json!({ "rows": rows })),
        ];
        println!("| program | engine p50 | engine p99 | ptc mcp p50 | ptc mcp p99 | added p50 | ratio p50 |");
        println!("|---|---|---|---|---|---|---|");
        for (program, context) in cases {
            let (e50, e99) = measure(n, || {
                let run = Run::new(program).context(context.clone());
                let c = engine.clone();
                async move {
                    assert!(c.run(run).await.is_ok());
                }
            })
            .await;
            let Value::Object(ctx) = context.clone() else { unreachable!() };
            let (m50, m99) = measure(n, || {
                let mut args = serde_json::Map::new();
                args.insert("program".into(), program.into());
                args.insert("context".into(), Value::Object(ctx.clone()));
                let params = CallToolRequestParams::new("lisp_eval").with_arguments(args);
                let mcp = &mcp;
                async move {
                    let r = mcp.call_tool(params).await.unwrap();
                    assert_eq!(r.is_error, Some(false));
                }
            })
            .await;
            let us = |d: Duration| d.as_secs_f64() * 1e6;
            println!(
                "| `{}` | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} µs | {:+.0} µs | {:.2} |",
                if program.len() > 20 { "sum of 1,000 records" } else { program },
                us(e50),
                us(e99),
                us(m50),
                us(m99),
                us(m50) - us(e50),
                us(m50) / us(e50)
            );
        }
        mcp.cancel().await.unwrap();
    });
}
