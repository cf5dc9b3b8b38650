//! The CLI against a daemon: `ptc run --connect` (exit codes, `error: <reason>: <message>`,
//! `--format json`, CLI-hosted tools), `ptc bench --connect`, and `ptc policies`.
#![allow(clippy::unwrap_used)]

mod daemon_support;

use daemon_support::*;
use std::process::{Command, Output};

fn ptc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn run_connect_keeps_the_run_contract() {
    let d = DaemonProcess::start("");
    let sock = d.socket.to_str().unwrap();
    let out = ptc(&["run", "--connect", sock, "-e", "(+ 1 2)"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3");

    let tools = d.config.with_file_name("tools.json");
    std::fs::write(&tools, r#"{"orders": [{"total": 5}, {"total": 7}]}"#).unwrap();
    let out = ptc(&[
        "run",
        "--connect",
        sock,
        "--tools",
        tools.to_str().unwrap(),
        "--tool",
        "echo=cat",
        "--format",
        "json",
        "-e",
        "[(->> (tool/orders {}) (map :total) (reduce +)) (tool/echo {:a 1})]",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["return"], serde_json::json!([12, {"a": 1}]));
    assert_eq!(step["tool_calls"].as_array().unwrap().len(), 2);

    let out = ptc(&[
        "run",
        "--connect",
        sock,
        "--format",
        "json",
        "-e",
        "(fail \"no\")",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: failed: "));
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["fail"]["reason"], "failed");

    let out = ptc(&[
        "run",
        "--connect",
        sock,
        "--tool",
        "bad=exit 3",
        "-e",
        "(tool/bad {})",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: tool_error: "));

    let missing = d.config.with_file_name("nobody-here.sock");
    let out = ptc(&["run", "--connect", missing.to_str().unwrap(), "-e", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: usage: "));
}

#[test]
fn bench_connect_reports_percentiles_and_rate() {
    let d = DaemonProcess::start("");
    let out = ptc(&[
        "bench",
        "--connect",
        d.socket.to_str().unwrap(),
        "-n",
        "40",
        "-c",
        "4",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["n"], 40);
    assert_eq!(r["failed"], 0);
    let (p50, p99) = (r["p50_us"].as_u64().unwrap(), r["p99_us"].as_u64().unwrap());
    assert!(p50 > 0 && p99 >= p50, "{r}");
    assert!(r["runs_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn policies_lists_and_validates() {
    let out = ptc(&[
        "policies",
        "--dir",
        common::shipped_policies().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = r["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"default") && names.contains(&"strict"),
        "{names:?}"
    );
    let bad = common::temp_dir("badpolicy");
    std::fs::write(bad.join("oops.toml"), "[limits]\ntimeout_msx = 5\n").unwrap();
    let out = ptc(&["policies", "--dir", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("oops.toml") && err.contains("timeout_msx"),
        "{err}"
    );
}
