//! `ptc trace FILE.jsonl --html OUT.html` checked in a real browser: the README's example mission
//! (replayed through the real runner) is rendered by headless Chromium (Debian's `chromium`),
//! which must load the page without errors (the page's script marks the DOM once it has drawn
//! everything, and counts errors) and take a screenshot; a hostile trace (markup in prints, tool
//! errors, agent names) must render as text, with nothing injected; bad input is a usage error
//! that leaves no page behind.
//!
//! Chromium missing: the browser tests skip loudly, and fail under `CI=true` (`.ci/run` installs
//! it). `PTC_TRACE_SCREENSHOT=PATH` also copies the example's screenshot there (that is how
//! `docs/trace-example.png` is made).
#![allow(clippy::unwrap_used)]

mod common;

use common::{real_runner, temp_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ptc(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptc"))
        .args(args)
        .current_dir(dir)
        .env("PTC_RUNNER", real_runner())
        .output()
        .unwrap()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Debian's `chromium`, or `None` after a loud skip (a failure under CI).
fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("chromium"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        common::skip("`chromium` is not installed (apt-get install -y chromium)");
    }
    found
}

/// Runs headless Chromium on `page` with `mode` (`--dump-dom` or `--screenshot=...`); its
/// stdout and stderr. Killed after 90 s (a browser that hangs must not hang the suite).
fn browse(chromium: &Path, page: &Path, mode: &str) -> (String, String) {
    let profile = temp_dir("chromium-profile");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1280,1100",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "chromium failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).to_string(), stderr)
}

/// The page's DOM after its script ran; asserts it drew everything without an error, and that
/// the browser logged no console message for it (uncaught errors, refused loads).
fn rendered_dom(chromium: &Path, page: &Path) -> String {
    let (dom, stderr) = browse(chromium, page, "--dump-dom");
    assert!(dom.contains("data-rendered=\"ok\""), "not rendered:\n{dom}");
    assert!(dom.contains("data-errors=\"0\""), "page errors:\n{dom}");
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(!stderr.contains("Uncaught"), "{stderr}");
    dom
}

#[test]
fn the_readme_example_renders_in_chromium_with_a_screenshot() {
    let d = temp_dir("trace-html");
    let trace = d.join("mission.jsonl");
    let mission = std::fs::read_to_string(repo().join("examples/agent/mission.txt")).unwrap();
    // The README's command, word for word apart from the paths.
    let out = ptc(
        &repo(),
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
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = d.join("mission.html");
    let out = ptc(&d, &["trace", "mission.jsonl", "--html", "mission.html"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "the page goes to the file only");
    let Some(chromium) = chromium() else { return };
    let dom = rendered_dom(&chromium, &html);
    for needle in [
        "rendered 2 turn(s), 0 error(s)",
        "(tool/orders {:region data/region})", // turn 1's program
        "orders: ",                            // its println
        "\"Chen\"",                            // turn 2's returned value
        "returned",
        "LLM requests",
        "class=\"seg llm\"", // the timeline
    ] {
        assert!(dom.contains(needle), "{needle:?} not in the page:\n{dom}");
    }
    let png = d.join("mission.png");
    browse(&chromium, &html, &format!("--screenshot={}", png.display()));
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(bytes.len() > 20_000, "a blank page? {} bytes", bytes.len());
    if let Some(keep) = std::env::var_os("PTC_TRACE_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A two-run trace whose program output, tool error, failure message and agent name are markup.
fn hostile_trace() -> String {
    const EVIL: &str = "</script><img src=x onerror=\"document.title='pwned'\"><b>bold</b>";
    let turn = |id: u64, run: u64, parent: Option<u64>, agent: &str, fail: bool| {
        serde_json::json!({
            "id": id, "run": run, "parent": parent, "agent": agent, "depth": u64::from(parent.is_some()),
            "turn": 1, "model": "m<i>", "llm_text": EVIL, "program": format!("(println \"{EVIL}\")"),
            "result": {"k": EVIL}, "returned": !fail,
            "fail": if fail { serde_json::json!({"reason": "failed", "kind": "program", "message": EVIL}) } else { serde_json::Value::Null },
            "prints": [EVIL], "memory_delta": {},
            "tool_calls": [{"name": "t", "args": {"q": EVIL}, "result": null, "error": EVIL, "duration_us": 1500}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "requests": 1, "llm_ms": 20, "exec_ms": 7},
        })
        .to_string()
    };
    [
        turn(2, 3, Some(1), &format!("main/{EVIL}"), true),
        turn(1, 0, None, "main", false),
    ]
    .join("\n")
}

#[test]
fn markup_in_a_trace_renders_as_text() {
    let d = temp_dir("trace-html-evil");
    std::fs::write(d.join("evil.jsonl"), hostile_trace()).unwrap();
    let out = ptc(&d, &["trace", "evil.jsonl", "--html", "evil.html"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(d.join("evil.html")).unwrap();
    assert!(
        !page.contains("<img") && !page.contains("<b>"),
        "raw markup in the page"
    );
    let Some(chromium) = chromium() else { return };
    let dom = rendered_dom(&chromium, &d.join("evil.html"));
    assert!(
        !dom.to_lowercase().contains("<img"),
        "an image was injected:\n{dom}"
    );
    assert!(!dom.contains("<b>bold"), "markup was injected:\n{dom}");
    assert!(dom.contains("<title>ptc mission trace</title>"), "{dom}");
    assert!(dom.contains("&lt;/script&gt;&lt;img src=x"), "{dom}");
    // The nested run is drawn inside the turn of `main` that called it.
    let tree = &dom[dom.find("id=\"tree\"").unwrap()..];
    let main = tree.find("main [m&lt;i&gt;]").unwrap();
    let turn = tree.find("turn 1").unwrap();
    let child = tree.find("main/&lt;/script&gt;").unwrap();
    assert!(main < turn && turn < child, "{tree}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_traces_are_usage_errors_and_leave_no_page() {
    let d = temp_dir("trace-html-bad");
    std::fs::write(d.join("bad.jsonl"), "{\"id\": 1}\nnot json\n").unwrap();
    let out = ptc(&d, &["trace", "bad.jsonl", "--html", "bad.html"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: usage: line 2: "), "{err}");
    assert!(!d.join("bad.html").exists());
    std::fs::write(d.join("num.jsonl"), "42\n").unwrap();
    let out = ptc(&d, &["trace", "num.jsonl", "--html", "num.html"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a trace entry"));
    std::fs::write(d.join("ok.jsonl"), hostile_trace()).unwrap();
    let out = ptc(&d, &["trace", "ok.jsonl", "--html", "no/such/dir/x.html"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write no/such/dir/x.html"), "{err}");
    assert!(
        std::fs::read_dir(&d).unwrap().count() == 3,
        "no temporary file left"
    );
    let _ = std::fs::remove_dir_all(&d);
}
