//! The `ptc` command-line contract, as scripts see it: exit codes (0 success, 1 the program
//! failed, 2 usage), `error: <reason>: <message>` on stderr, the result on stdout (EDN), the
//! whole Step as JSON with `--format json` (also on failure), data files in JSON or EDN.

use ptc_tests::bins::bin;
use std::io::Write;
use std::process::{Command, Output};

fn ptc(args: &[&str]) -> Output {
    Command::new(bin("ptc"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running ptc: {e}"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

/// A file in the temp dir, named per process, removed when the guard drops.
fn temp_file(name: &str, body: &str) -> TempFile {
    let path = std::env::temp_dir().join(format!("ptc-cli-{}-{name}", std::process::id()));
    let mut f = std::fs::File::create(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = f.write_all(body.as_bytes());
    TempFile(path)
}

struct TempFile(std::path::PathBuf);

impl std::ops::Deref for TempFile {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn success_prints_the_result_like_pr_str() {
    let o = ptc(&["run", "--in-process", "-e", "{:a [1 2.5 \"x\"] :b nil}"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), r#"{:a [1 2.5 "x"], :b nil}"#);
}

#[test]
fn failure_is_exit_1_with_reason_on_stderr() {
    let o = ptc(&["run", "--in-process", "-e", "(+ 1 \"a\")"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("error: eval_error: "),
        "{}",
        stderr(&o)
    );
    let o = ptc(&["run", "--in-process", "-e", "(+ 1"]);
    assert!(
        stderr(&o).starts_with("error: parse_error: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn usage_errors_are_exit_2() {
    assert_eq!(ptc(&["run"]).status.code(), Some(2));
    assert_eq!(ptc(&["run", "/no/such/file.clj"]).status.code(), Some(2));
    assert_eq!(
        ptc(&["run", "-e", "1", "--context", "/no/such.json"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn json_format_prints_the_step_also_on_failure() {
    let o = ptc(&[
        "run",
        "--in-process",
        "--format",
        "json",
        "-e",
        "(def x 1) (fail {:reason \"nope\"})",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let step: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
    assert_eq!(step["fail"]["reason"], "failed");
    assert_eq!(step["fail"]["message"], "nope");
    assert_eq!(
        step["memory"],
        serde_json::json!({}),
        "memory is unchanged on failure"
    );
}

#[test]
fn context_and_memory_files_in_json_and_edn() {
    let ctx = temp_file("ctx.json", r#"{"orders": [{"total": 5}, {"total": 7}]}"#);
    let mem = temp_file("mem.edn", "{:seen [1 2]}");
    let ctx_s = ctx.to_string_lossy().to_string();
    let mem_s = mem.to_string_lossy().to_string();
    let o = ptc(&[
        "run",
        "--in-process",
        "--context",
        &ctx_s,
        "--memory",
        &mem_s,
        "-e",
        "[(->> data/orders (map :total) (reduce +)) (count memory/seen)]",
    ]);
    assert_eq!(stdout(&o), "[12 2]", "{}", stderr(&o));
}

#[test]
fn limits_from_flags() {
    let o = ptc(&[
        "run",
        "--in-process",
        "--timeout",
        "50",
        "--max-steps",
        "1000000000000",
        "-e",
        "(loop [] (recur))",
    ]);
    assert!(stderr(&o).starts_with("error: timeout: "), "{}", stderr(&o));
    let o = ptc(&[
        "run",
        "--in-process",
        "--max-steps",
        "100",
        "-e",
        "(loop [] (recur))",
    ]);
    assert!(
        stderr(&o).starts_with("error: limit_exceeded: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn signature_validation_failure_lists_paths() {
    let o = ptc(&[
        "run",
        "--in-process",
        "--signature",
        "() -> [{id :int}]",
        "-e",
        "[{:id 1} {:id \"2\"}]",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: validation_error: ") && err.contains("[1].id"),
        "{err}"
    );
}

#[test]
fn command_and_fixed_tools() {
    let tools = temp_file("tools.json", r#"{"orders": [{"total": 5}, {"total": 7}]}"#);
    let tools_s = tools.to_string_lossy().to_string();
    let o = ptc(&[
        "run",
        "--in-process",
        "--tools",
        &tools_s,
        "--tool",
        "echo=cat",
        "-e",
        "[(reduce + (map :total (tool/orders {}))) (tool/echo {:user-id 7})]",
    ]);
    assert_eq!(stdout(&o), r#"[12 {"user-id" 7}]"#, "{}", stderr(&o));
    let o = ptc(&[
        "run",
        "--in-process",
        "--tool",
        "bad=echo broken >&2; exit 3",
        "-e",
        "(tool/bad {})",
    ]);
    assert!(
        stderr(&o).contains("tool_error") && stderr(&o).contains("broken"),
        "{}",
        stderr(&o)
    );
    let o = ptc(&[
        "run",
        "--in-process",
        "--timeout",
        "200",
        "--tool",
        "slow=sleep 5",
        "-e",
        "(try (tool/slow {}) (catch Exception e :caught))",
    ]);
    assert!(
        stderr(&o).starts_with("error: timeout: "),
        "a hung tool ends the run: {}",
        stderr(&o)
    );
}

/// Processes alive (not zombies) whose command line contains `needle`.
fn live_processes_with(needle: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| {
            let p = e.path();
            let cmdline = std::fs::read(p.join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(p.join("stat")).ok()?;
            let state = stat.rsplit(") ").next()?.chars().next()?;
            (cmdline.contains(needle) && state != 'Z').then_some(cmdline)
        })
        .collect()
}

#[test]
fn a_tool_still_running_at_the_deadline_is_killed_with_everything_it_started() {
    // `sleep` is a grandchild here (the `echo` after it keeps `sh` from exec'ing it), so only a
    // kill of the tool's whole process group reaches it. A unique duration identifies it.
    let marker = format!("sleep 29.{}", std::process::id());
    let tool = format!("slow={marker}; echo 1");
    // The first `bin` call of a test process builds the binaries: not part of what is timed.
    bin("ptc");
    for mode in [None, Some("--in-process")] {
        let mut args = vec!["run", "--timeout", "500", "--tool", &tool];
        args.extend(mode);
        args.extend(["-e", "(tool/slow {})"]);
        let began = std::time::Instant::now();
        let o = ptc(&args);
        let took = began.elapsed();
        assert!(
            stderr(&o).starts_with("error: timeout: "),
            "{mode:?}: {}",
            stderr(&o)
        );
        assert!(
            took < std::time::Duration::from_secs(10),
            "{mode:?}: took {took:?}"
        );
        let mut left = live_processes_with(&marker);
        for _ in 0..50 {
            if left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            left = live_processes_with(&marker);
        }
        assert!(left.is_empty(), "{mode:?}: still running: {left:?}");
    }
}

#[test]
fn default_run_is_sandboxed_in_a_runner_process() {
    let o = ptc(&["run", "--format", "json", "-e", "(reduce + (range 10))"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let step: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
    assert_eq!(step["return"], 45);
    // Only a runner process measures its heap: in-process runs report 0.
    assert!(
        step["usage"]["memory_bytes"].as_u64().unwrap_or(0) > 0,
        "{step}"
    );
}

#[test]
fn sandboxed_limits_and_tools_from_the_cli() {
    let o = ptc(&["run", "--timeout", "200", "-e", "(loop [] (recur))"]);
    assert!(stderr(&o).starts_with("error: timeout: "), "{}", stderr(&o));
    // Looser than the policy: refused with the field, the policy's value and what to do.
    let o = ptc(&["run", "--timeout", "3000", "-e", "1"]);
    assert!(
        stderr(&o).starts_with("error: invalid_request: `timeout_ms` of 3000 is looser than policy `default` allows (1000)"),
        "{}",
        stderr(&o)
    );
    let o = ptc(&["run", "--tool", "echo=cat", "-e", "(tool/echo {:k 1})"]);
    assert_eq!(stdout(&o), r#"{"k" 1}"#, "{}", stderr(&o));
    let o = ptc(&["run", "--policy", "no-such-policy", "-e", "1"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn check_reports_the_host() {
    let o = ptc(&["check", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
    assert!(report.get("seccomp").is_some(), "{}", stdout(&o));
    assert_eq!(
        o.status.code(),
        Some(if report["seccomp"] == true { 0 } else { 1 })
    );
}

#[test]
fn context_signature_chains_the_previous_steps_output_types() {
    let sig = "() -> {count :int, names [:string]}";
    let good = temp_file(
        "prev-good.json",
        r#"{"count": 3, "names": ["a", "b", "c"]}"#,
    );
    let bad = temp_file("prev-bad.json", r#"{"count": "many", "names": []}"#);
    let (good, bad) = (
        good.to_string_lossy().to_string(),
        bad.to_string_lossy().to_string(),
    );
    for mode in [&["--in-process"][..], &[][..]] {
        let mut args = vec![
            "run",
            "--format",
            "json",
            "--context",
            &good,
            "--context-signature",
            sig,
            "-e",
            "(* 2 data/count)",
        ];
        args.extend_from_slice(mode);
        let o = ptc(&args);
        let step: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
        assert_eq!(step["return"], 6, "{}", stderr(&o));
        assert_eq!(step["signature"], "(count :int, names [:string]) -> :any");
        let mut args = vec![
            "run",
            "--context",
            &bad,
            "--context-signature",
            sig,
            "-e",
            "data/count",
        ];
        args.extend_from_slice(mode);
        let o = ptc(&args);
        assert!(
            stderr(&o).starts_with("error: validation_error: ") && stderr(&o).contains("count:"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn an_oversized_result_is_a_result_limit_not_a_memory_death() {
    // ~15 MB of text, 15x max_result_bytes, in a 64 MiB-heap runner (48 MiB of it heap budget,
    // the rest pays for the stack): measuring the result must not print it whole first.
    let program = format!("(apply str (repeat 130000 \"{}\"))", "x".repeat(115));
    // A policy with room for the time this takes in a debug build (asking for more than the
    // default policy's 1000 ms would be refused, not clamped).
    let seccomp = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../policies/seccomp/runner.json"
    );
    let policy = temp_file(
        "slow.toml",
        &format!(
            "[limits]\ntimeout_ms = 20000\ncpu_ms = 20000\n[isolation]\nseccomp = \"{seccomp}\"\n[pool]\nwarm = 0\n"
        ),
    );
    let policy = policy.to_string_lossy().to_string();
    let o = ptc(&["run", "--policy", &policy, "-e", &program]);
    assert!(
        stderr(&o).starts_with("error: limit_exceeded: result is over"),
        "{}",
        stderr(&o)
    );
}
