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

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).trim().to_string()
}

/// Every flag of `ptc run` means the same with `--connect`, sandboxed and in-process (except
/// `--policy`, which has no meaning in-process, and limits looser than the policy, which only a
/// policy refuses).
#[test]
fn every_run_flag_is_honoured_in_every_mode() {
    let d = DaemonProcess::start("");
    let dir = common::temp_dir("flags");
    let file = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p.to_string_lossy().to_string()
    };
    let program = file("p.clj", "[data/x y]");
    let context = file("ctx.json", r#"{"x": 1, "n": 3}"#);
    let bad_context = file("bad.json", r#"{"x": 1, "n": "many"}"#);
    let memory = file("mem.edn", "{y 2}");
    let tools = file("tools.json", r#"{"orders": [{"total": 5}, {"total": 7}]}"#);
    let modes = [
        Mode::Connect(d.socket.clone()),
        Mode::Sandboxed,
        Mode::InProcess,
    ];
    for mode in &modes {
        let ok = |args: &[&str], want: &str| {
            let o = run_in(mode, args);
            assert_eq!(text(&o.stdout), want, "{args:?}: {}", text(&o.stderr));
            assert_eq!(o.status.code(), Some(0));
        };
        let fails = |args: &[&str], want: &str| {
            let o = run_in(mode, args);
            let err = text(&o.stderr);
            assert!(err.starts_with(want), "{args:?}: {err}");
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        };
        ok(
            &[&program, "--context", &context, "--memory", &memory],
            "[1 2]",
        );
        ok(&["-e", "(+ 1 2)"], "3");
        let o = run_in(mode, &["--format", "json", "-e", "(fail \"no\")"]);
        let step: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(step["fail"]["reason"], "failed");
        fails(
            &["--timeout", "100", "-e", "(loop [] (recur))"],
            "error: timeout: ",
        );
        fails(
            &["--max-steps", "100", "-e", "(loop [] (recur))"],
            "error: limit_exceeded: ",
        );
        fails(
            &["--signature", "() -> :string", "-e", "1"],
            "error: validation_error: ",
        );
        ok(
            &[
                "--signature",
                "() -> :string",
                "--validation",
                "disabled",
                "-e",
                "1",
            ],
            "1",
        );
        let chained = [
            "--context-signature",
            "() -> {n :int}",
            "-e",
            "(* 2 data/n)",
        ];
        let o = run_in(
            mode,
            &[&["--format", "json", "--context", &context][..], &chained].concat(),
        );
        let step: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(step["return"], 6, "{}", text(&o.stderr));
        assert_eq!(step["signature"], "(n :int) -> :any");
        fails(
            &[&["--context", &bad_context][..], &chained].concat(),
            "error: validation_error: ",
        );
        let with_tools = ["--tools", &tools, "--tool", "echo=cat", "-e"];
        let both = "[(reduce + (map :total (tool/orders {}))) (tool/echo {:k 1})]";
        ok(&[&with_tools[..], &[both]].concat(), r#"[12 {"k" 1}]"#);
        if let Mode::InProcess = mode {
            // No policy in-process: the flags replace the defaults, and `--policy` is refused.
            ok(&["--timeout", "3000", "-e", "1"], "1");
            let o = run_in(mode, &["--policy", "strict", "-e", "1"]);
            assert_eq!(o.status.code(), Some(2));
            continue;
        }
        // A policy's limits are a ceiling: a looser request is refused, never clamped.
        let o = run_in(mode, &["--timeout", "3000", "-e", "1"]);
        let err = text(&o.stderr);
        assert!(
            err.starts_with("error: invalid_request: `timeout_ms` of 3000")
                && err.contains("policy `default` allows (1000)")
                && err.contains("--policy"),
            "{err}"
        );
        assert_eq!(o.status.code(), Some(1));
        fails(
            &["--policy", "strict", "--max-steps", "5000000", "-e", "1"],
            "error: invalid_request: `max_steps` of 5000000 is looser than policy `strict`",
        );
        // Tools from a file answer inside `ptc` itself: eleven `cat` processes could outlast
        // strict's 250 ms clock on a loaded host, and the limit under test is the tool calls.
        fails(
            &[
                "--policy",
                "strict",
                "-e",
                "(dotimes [i 11] (tool/orders {}))",
                "--tools",
                &tools,
            ],
            "error: limit_exceeded: tool call limit of 10",
        );
    }
}
