//! `ptc mcp` driven by the official Rust SDK's client (rmcp, over the child's stdio): the
//! embedded engine and `--connect` to a real daemon give the same payloads. The full
//! behaviour (every reason, limits, cancellation, EOF) is covered through the Python SDK in
//! tests/mcp/test_mcp.py.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::{DaemonProcess, common};
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

async fn connect(extra: &[&str]) -> RunningService<RoleClient, ()> {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ptc"));
    cmd.arg("mcp")
        .args(extra)
        .env("PTC_RUNNER", common::real_runner())
        .env("PTC_POLICIES", common::shipped_policies());
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, args: Value) -> (bool, Value) {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let params = CallToolRequestParams::new("lisp_eval").with_arguments(args);
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(result.content.len(), 1);
    let text = result.content[0].as_text().unwrap().text.clone();
    let structured = result.structured_content.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), structured);
    (result.is_error.unwrap(), structured)
}

async fn check_session(client: RunningService<RoleClient, ()>) {
    let info = client.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "lisp_eval");
    assert_eq!(
        tools[0].description.as_deref(),
        Some(ptc_shared::lisp_eval::DESCRIPTION_MCP_NO_TOOLS)
    );
    let (err, p) = call(&client, json!({"program": "(println \"hi\") (+ 1 2)"})).await;
    assert!(!err);
    assert_eq!(
        p,
        json!({"status": "ok", "result": "user=> 3", "prints": ["hi"], "feedback": null, "truncated": false})
    );
    let (err, p) = call(
        &client,
        json!({"program": "(count data/xs)", "context": {"xs": [1, 2, 3]}, "output_schema": {"type": "integer"}}),
    )
    .await;
    assert!(!err);
    assert_eq!(p["validated"], json!(3));
    let (err, p) = call(&client, json!({"program": "(fail \"no\")"})).await;
    assert!(err);
    assert_eq!(p["reason"], "fail");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_against_the_embedded_engine() {
    check_session(connect(&[]).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_through_a_daemon() {
    let d = DaemonProcess::start("");
    let socket = d.socket.to_str().unwrap().to_string();
    check_session(connect(&["--connect", &socket]).await).await;
}

/// Plain calls take the server's fast path (arguments read before rmcp, see
/// `mcp::preparse`); a call carrying `_meta` takes the general one. Both must answer alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_and_general_paths_answer_alike() {
    let client = connect(&[]).await;
    let rows: Vec<Value> = (0..50)
        .map(|i| json!({"id": i, "v": i as f64 / 4.0, "tag": format!("t\"{i}\u{e9}")}))
        .collect();
    let cases = [
        json!({"program": "(->> data/rows (map :v) (reduce +))", "context": {"rows": rows}}),
        json!({"program": "(count data/xs)", "context": {"xs": [1, 2], "xs": [1, 2, 3]}}),
        json!({"program": "data/n", "context": {"n": null}, "output_schema": {"type": "integer"}}),
        json!({"program": "(first data/xs)", "context": {"xs": ["a"]}, "output_schema": {"type": "string"}}),
        json!({"program": "   "}),
        json!({"program": 5}),
        json!({"program": "(+ 1", "context": null}),
        json!({"program": "1", "output_schema": "int"}),
        json!({"program": "(/ 1 0)"}),
    ];
    for args in cases {
        let Value::Object(a) = args.clone() else {
            unreachable!()
        };
        let fast = client
            .call_tool(CallToolRequestParams::new("lisp_eval").with_arguments(a.clone()))
            .await
            .unwrap();
        let mut params = CallToolRequestParams::new("lisp_eval").with_arguments(a);
        let mut meta = serde_json::Map::new();
        meta.insert("ptc-test/general-path".into(), json!(true));
        params.meta = Some(rmcp::model::RequestMetaObject(meta.into()));
        let general = client.call_tool(params).await.unwrap();
        assert_eq!(fast.is_error, general.is_error, "{args}");
        assert_eq!(
            fast.structured_content, general.structured_content,
            "{args}"
        );
    }
    client.cancel().await.unwrap();
}

/// Arguments the fast path parked expire after the server's TTL (`Options::parked_ttl`, 10 s by
/// default; zero here, so the next line read expires them). Two calls arriving in one chunk
/// are both parked before either handler runs, so the first one's arguments are gone when its
/// handler looks: it is answered `args_error` saying so, and the second runs as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_parked_past_their_ttl_get_a_typed_answer() {
    use ptc_supervisor::client::{Client, Embedded};
    use ptc_supervisor::mcp::{Options, serve};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let policies = ptc_supervisor::policy::load_dir(&common::shipped_policies()).unwrap();
    let config = ptc_supervisor::engine::EngineConfig::new(common::real_runner(), policies);
    let client = Client::embedded_with(config).unwrap();
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(theirs);
    let options = Options {
        parked_ttl: std::time::Duration::ZERO,
        ..Options::default()
    };
    let server = tokio::spawn(serve(client, options, read, write));
    let (from_server, mut to_server) = tokio::io::split(ours);
    let mut lines = BufReader::new(from_server).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    to_server
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    assert!(
        lines
            .next_line()
            .await
            .unwrap()
            .unwrap()
            .contains("\"id\":1")
    );
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}})
    };
    let chunk = format!(
        "{}\n{}\n{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(2),
        call(3)
    );
    to_server.write_all(chunk.as_bytes()).await.unwrap();
    let mut answers = std::collections::BTreeMap::new();
    for _ in 0..2 {
        let line: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        answers.insert(
            line["id"].as_u64().unwrap(),
            line["result"]["structuredContent"].clone(),
        );
    }
    assert_eq!(answers[&2]["reason"], "args_error");
    assert_eq!(
        answers[&2]["message"],
        "the call's arguments are gone (parked too long); send it again"
    );
    assert_eq!(answers[&3]["result"], "user=> 3");
    to_server.shutdown().await.unwrap(); // end of input: the server exits
    server.await.unwrap().unwrap();
}
