//! `ptc mcp --http` refuses, before binding anything, to serve a non-loopback address without
//! a bearer token. (The transport itself is driven by the official Python SDK's Streamable
//! HTTP client in tests/mcp/test_http.py; servers in tests bind only to loopback.)
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn ptc_mcp(addr: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(["mcp", "--http", addr])
        .env_remove("PTC_MCP_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn a_non_loopback_bind_without_a_token_is_refused() {
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:8080"] {
        let out = ptc_mcp(addr);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addr}: {stderr}");
        assert!(
            stderr.contains("not a loopback address, without a bearer token"),
            "{addr}: {stderr}"
        );
        assert!(!stderr.contains("listening"), "{addr}: {stderr}");
    }
}

#[test]
fn a_malformed_address_is_a_usage_error() {
    let out = ptc_mcp("localhost");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--http"));
}
