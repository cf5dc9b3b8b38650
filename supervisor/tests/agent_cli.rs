//! `ptc agent` and `ptc trace` as a user runs them: `--llm-cmd` scripts, record and replay,
//! `--agents` nesting, exit codes and error lines, and `--llm-url` against a mock
//! OpenAI-compatible server on 127.0.0.1; `--connect` to a real `ptc serve`.
#![allow(clippy::unwrap_used)]

mod common;
mod daemon_support;

use common::{real_runner, temp_dir};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

fn ptc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .current_dir(dir)
        .env("PTC_RUNNER", real_runner())
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// An executable `/bin/sh` script in `dir`.
/// Asserts that `ptc` exited 1 with every one of `needles` on stderr.
fn fails_with(out: &Output, needles: &[&str]) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    for needle in needles {
        stderr_has(out, needle);
    }
}

fn stderr_has(out: &Output, needle: &str) {
    let err = stderr(out);
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A two-turn LLM: explore, then return (the second answer as a JSON object with usage).
const TWO_TURNS: &str = r#"req=$(cat)
case "$req" in
  *'"turn":1,'*) printf 'Looking.\n```clojure\n(def open (filter #(= "open" (:status %%)) data/orders))\n(count open)\n```\n' ;;
  *) printf '{"content": "```clojure\\n(return {:count (count open)})\\n```", "usage": {"input_tokens": 100, "output_tokens": 20}}' ;;
esac"#;

fn orders(dir: &Path) -> String {
    let p = dir.join("orders.json");
    std::fs::write(
        &p,
        r#"{"orders": [{"id": 1, "status": "open"}, {"id": 2, "status": "closed"}, {"id": 3, "status": "open"}]}"#,
    )
    .unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_mission_with_llm_cmd_traces_records_and_replays() {
    let d = temp_dir("agent-cli");
    let llm = script(&d, "llm.sh", TWO_TURNS);
    let ctx = orders(&d);
    let base = [
        "agent",
        "How many orders are open?",
        "--context",
        &ctx,
        "--signature",
        "{count :int}",
    ];
    let mut args = base.to_vec();
    args.extend([
        "--llm-cmd",
        llm.to_str().unwrap(),
        "--trace",
        "t.jsonl",
        "--record",
        "rec.jsonl",
    ]);
    let out = ptc(&d, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{:count 2}");

    let tree = ptc(&d, &["trace", "t.jsonl"]);
    let tree_text = stdout(&tree);
    assert!(tree_text.starts_with("main"), "{tree_text}");
    assert!(tree_text.contains("  turn 1: (def open") && tree_text.contains("turn 2: (return"));
    assert!(tree_text.contains("returned {\"count\":2}"), "{tree_text}");

    // The recording answers the same mission without the LLM ...
    let mut args = base.to_vec();
    args.extend(["--replay", "rec.jsonl", "--format", "json"]);
    let out = ptc(&d, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["return"], serde_json::json!({"count": 2}));
    assert_eq!(step["usage"]["turns"], 2);
    assert_eq!(step["usage"]["total_tokens"], 120);
    assert_eq!(step["trace"].as_array().unwrap().len(), 2);

    // ... and a different mission misses, naming the request's hash.
    let out = ptc(
        &d,
        &[
            "agent",
            "Other?",
            "--context",
            &ctx,
            "--replay",
            "rec.jsonl",
        ],
    );
    fails_with(&out, &["error: llm_error: ", "for request "]);
}

#[test]
fn exit_75_is_retried_and_other_exits_are_llm_errors() {
    let d = temp_dir("agent-cli-retry");
    let flaky = script(
        &d,
        "flaky.sh",
        r#"cat >/dev/null
if [ ! -e tried ]; then touch tried; echo "rate limited" >&2; exit 75; fi
printf '```clojure\n(return 7)\n```\n'"#,
    );
    let out = ptc(
        &d,
        &[
            "agent",
            "Seven.",
            "--llm-cmd",
            flaky.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["return"], 7);
    assert_eq!(
        (
            step["usage"]["requests"].as_u64(),
            step["usage"]["turns"].as_u64()
        ),
        (Some(2), Some(1))
    );

    let broken = script(
        &d,
        "broken.sh",
        "cat >/dev/null; echo 'bad key' >&2; exit 3",
    );
    let out = ptc(&d, &["agent", "x", "--llm-cmd", broken.to_str().unwrap()]);
    fails_with(&out, &["error: llm_error: ", "bad key"]);
}

#[test]
fn failures_keep_their_reasons_on_the_error_line() {
    let d = temp_dir("agent-cli-fail");
    let fail = script(
        &d,
        "fail.sh",
        r#"cat >/dev/null; printf '```clojure\n(fail {:reason :not_found :message "User 123"})\n```\n'"#,
    );
    let out = ptc(&d, &["agent", "Find.", "--llm-cmd", fail.to_str().unwrap()]);
    fails_with(&out, &["error: not_found: User 123"]);

    // The same for a single run, sandboxed; a string :reason stays a message under `failed`.
    let out = ptc(
        &d,
        &[
            "run",
            "--format",
            "json",
            "-e",
            "(fail {:reason :not_found :message \"User 123\"})",
        ],
    );
    stderr_has(&out, "error: not_found: User 123");
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            step["fail"]["reason"].as_str(),
            step["fail"]["kind"].as_str()
        ),
        (Some("not_found"), Some("program"))
    );
    let out = ptc(&d, &["run", "-e", "(fail {:reason \"nope\"})"]);
    stderr_has(&out, "error: failed: nope");

    let chatty = script(
        &d,
        "chatty.sh",
        "cat >/dev/null; printf '```clojure\\n1\\n```\\n'",
    );
    let out = ptc(
        &d,
        &[
            "agent",
            "x",
            "--max-turns",
            "2",
            "--llm-cmd",
            chatty.to_str().unwrap(),
        ],
    );
    fails_with(&out, &["error: max_turns_exceeded: "]);

    let out = ptc(
        &d,
        &[
            "agent",
            "Hi {{name}}",
            "--llm-cmd",
            chatty.to_str().unwrap(),
        ],
    );
    fails_with(&out, &["error: template_error: "]);

    let out = ptc(&d, &["agent", "x"]);
    assert_eq!(out.status.code(), Some(2), "no LLM source is a usage error");
}

#[test]
fn agents_from_a_file_nest_three_levels() {
    let d = temp_dir("agent-cli-nested");
    let llm = script(
        &d,
        "llm.sh",
        r#"req=$(cat)
case "$req" in
  *'"agent":"main/researcher/fetcher"'*) printf '```clojure\n(return {:v 21})\n```' ;;
  *'"agent":"main/researcher"'*) printf '```clojure\n(return {:n (* 2 (:v (tool/fetcher {:q "y"})))})\n```' ;;
  *) printf '```clojure\n(return (tool/researcher {:topic "x"}))\n```' ;;
esac"#,
    );
    let agents = d.join("agents.json");
    std::fs::write(
        &agents,
        r#"{
  "researcher": {"prompt": "Research {{topic}}.", "signature": "(topic :string) -> {n :int}",
                 "description": "Researches a topic", "tools": ["fetcher"]},
  "fetcher": {"prompt": "Fetch {{q}}.", "signature": "(q :string) -> {v :int}",
              "description": "Fetches a number", "max_turns": 2}
}"#,
    )
    .unwrap();
    let out = ptc(
        &d,
        &[
            "agent",
            "Solve.",
            "--signature",
            "{n :int}",
            "--agents",
            "agents.json",
            "--turn-timeout",
            "20000",
            "--llm-cmd",
            llm.to_str().unwrap(),
            "--trace",
            "t.jsonl",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{:n 42}");
    let tree = stdout(&ptc(&d, &["trace", "t.jsonl"]));
    let lines: Vec<&str> = tree.lines().collect();
    assert_eq!(lines[0], "main", "{tree}");
    assert!(lines[2].starts_with("    main/researcher"), "{tree}");
    assert!(
        lines[4].starts_with("        main/researcher/fetcher"),
        "{tree}"
    );
}

/// A mock chat-completions server: answers the scripted (status, body) pairs in order and
/// keeps each request (head and body).
fn mock_server(answers: Vec<(u16, String)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/v1/chat/completions",
        listener.local_addr().unwrap()
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for (status, body) in answers {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut buf = vec![0; len];
            reader.read_exact(&mut buf).unwrap();
            log.lock()
                .unwrap()
                .push(format!("{head}\n{}", String::from_utf8_lossy(&buf)));
            let mut stream = reader.into_inner();
            let reply = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(reply.as_bytes()).unwrap();
        }
    });
    (url, seen)
}

#[test]
fn llm_url_talks_to_an_openai_compatible_endpoint_with_retries() {
    let d = temp_dir("agent-cli-http");
    let ok = serde_json::json!({
        "choices": [{"message": {"role": "assistant", "content": "```clojure\n(return 5)\n```"}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 4}
    });
    let (url, seen) = mock_server(vec![(429, "{}".into()), (200, ok.to_string())]);
    let out = Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args([
            "agent",
            "Five.",
            "--llm-url",
            &url,
            "--model",
            "m-1",
            "--api-key-env",
            "MOCK_KEY",
        ])
        .args(["--format", "json"])
        .current_dir(&d)
        .env("PTC_RUNNER", real_runner())
        .env("MOCK_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(step["return"], 5);
    assert_eq!(step["usage"]["requests"], 2, "the 429 was retried");
    assert_eq!(step["usage"]["input_tokens"], 11);
    let seen = seen.lock().unwrap();
    let last = seen.last().unwrap();
    assert!(
        last.to_ascii_lowercase()
            .contains("authorization: bearer sk-test"),
        "{last}"
    );
    assert!(
        last.contains("\"model\":\"m-1\"") && last.contains("\"role\":\"system\""),
        "{last}"
    );

    // An agent naming another model than the endpoint's is model_not_found.
    std::fs::write(
        d.join("agents.json"),
        r#"{"helper": {"prompt": "x", "description": "d", "model": "other"}}"#,
    )
    .unwrap();
    let out = ptc(
        &d,
        &[
            "agent",
            "x",
            "--llm-url",
            &url,
            "--model",
            "m-1",
            "--agents",
            "agents.json",
        ],
    );
    fails_with(&out, &["error: model_not_found: "]);
}

#[test]
fn the_readme_mission_replays() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mission = std::fs::read_to_string(root.join("examples/agent/mission.txt")).unwrap();
    let out = ptc(
        &root,
        &[
            "agent",
            mission.trim_end(),
            "--context",
            "examples/shop.json",
            "--tools",
            "examples/shop_tools.json",
            "--signature",
            "{customer :string, revenue :float, _order_ids [:int]}",
            "--replay",
            "examples/agent/replay.jsonl",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "re-record with examples/agent/record.sh: {}",
        stderr(&out)
    );
    assert_eq!(
        stdout(&out),
        r#"{:customer "Chen", :revenue 228.75, :_order_ids [104 105]}"#
    );
}

#[test]
fn a_previous_step_chains_and_a_failed_one_is_chained_failure() {
    let d = temp_dir("agent-cli-chain");
    let double = script(
        &d,
        "double.sh",
        "cat >/dev/null; printf '```clojure\\n(return (* 2 data/count))\\n```\\n'",
    );
    let prev = ptc(
        &d,
        &[
            "run",
            "--format",
            "json",
            "--signature",
            "{count :int}",
            "-e",
            "{:count 21}",
        ],
    );
    assert_eq!(prev.status.code(), Some(0), "{}", stderr(&prev));
    std::fs::write(d.join("prev.json"), &prev.stdout).unwrap();
    let out = ptc(
        &d,
        &[
            "agent",
            "Double {{count}}.",
            "--context-step",
            "prev.json",
            "--llm-cmd",
            double.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "42");

    let failed = ptc(&d, &["run", "--format", "json", "-e", "(/ 1 0)"]);
    std::fs::write(d.join("failed.json"), &failed.stdout).unwrap();
    let out = ptc(
        &d,
        &[
            "agent",
            "x",
            "--context-step",
            "failed.json",
            "--llm-cmd",
            double.to_str().unwrap(),
        ],
    );
    fails_with(
        &out,
        &["error: chained_failure: the context is a failed Step (eval_error"],
    );
}

#[test]
fn prompt_overrides_reach_the_system_prompt() {
    let d = temp_dir("agent-cli-prompt");
    let llm = script(
        &d,
        "llm.sh",
        r#"req=$(cat)
case "$req" in
  *'"system":"PREFIX-MARK'*'SUFFIX-MARK"'*) printf '```clojure\n(return :both)\n```\n' ;;
  *'"system":"WHOLE-MARK"'*) printf '```clojure\n(return :whole)\n```\n' ;;
  *) printf '```clojure\n(return :none)\n```\n' ;;
esac"#,
    );
    let cmd = llm.to_str().unwrap();
    let out = ptc(
        &d,
        &[
            "agent",
            "x",
            "--prompt-prefix",
            "PREFIX-MARK",
            "--prompt-suffix",
            "SUFFIX-MARK",
            "--llm-cmd",
            cmd,
        ],
    );
    assert_eq!(stdout(&out), ":both", "{}", stderr(&out));
    std::fs::write(d.join("system.txt"), "WHOLE-MARK").unwrap();
    let out = ptc(
        &d,
        &[
            "agent",
            "x",
            "--system-prompt",
            "system.txt",
            "--llm-cmd",
            cmd,
        ],
    );
    assert_eq!(stdout(&out), ":whole", "{}", stderr(&out));
}

#[test]
fn connect_runs_the_mission_in_a_daemon_with_the_same_result() {
    let d = temp_dir("agent-cli-connect");
    let daemon = daemon_support::DaemonProcess::start("");
    let llm = script(&d, "llm.sh", TWO_TURNS);
    let ctx = orders(&d);
    let socket = daemon.socket.to_str().unwrap().to_string();
    let base = [
        "agent",
        "How many orders are open?",
        "--context",
        &ctx,
        "--signature",
        "{count :int}",
        "--llm-cmd",
        llm.to_str().unwrap(),
        "--format",
        "json",
    ];
    let embedded = ptc(&d, &base);
    let mut args = base.to_vec();
    args.extend(["--connect", &socket]);
    let via_daemon = ptc(&d, &args);
    let mut steps = Vec::new();
    for out in [&embedded, &via_daemon] {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        let step: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        steps.push(step);
    }
    for key in ["return", "fail", "memory", "signature"] {
        assert_eq!(steps[0][key], steps[1][key], "{key}");
    }
    assert_eq!(steps[1]["return"], serde_json::json!({"count": 2}));
    for key in ["turns", "requests", "total_tokens"] {
        assert_eq!(steps[0]["usage"][key], steps[1]["usage"][key], "{key}");
    }
    let programs = |s: &serde_json::Value| -> Vec<serde_json::Value> {
        let trace = s["trace"].as_array().unwrap();
        trace.iter().map(|e| e["program"].clone()).collect()
    };
    assert_eq!(programs(&steps[0]), programs(&steps[1]));

    // A socket nobody listens on is a usage error naming it, not a hang.
    let mut args = base.to_vec();
    let nowhere = d.join("nowhere.sock");
    args.extend(["--connect", nowhere.to_str().unwrap()]);
    let out = ptc(&d, &args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    stderr_has(&out, "nowhere.sock");
}
