//! Tools for command-line use: `--tool NAME=COMMAND` runs COMMAND through `sh -c` outside the
//! sandbox with the call's arguments as JSON on stdin and takes JSON from its stdout (a non-zero
//! exit is a `tool_error` with its stderr); `--tools FILE.json` maps tool names to fixed results.
//!
//! A command tool is killed when the run's deadline passes, so a hung tool ends the run with
//! `timeout` instead of hanging the CLI.

use ptc_shared::{Fail, FailReason, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a CLI tool answers.
#[derive(Debug, Clone)]
pub enum CliTool {
    Command(String),
    Fixed(Value),
}

/// A tool's failure: an ordinary error, or one that ends the run (deadline).
#[derive(Debug)]
pub enum CliToolError {
    Error(String),
    Terminal(Fail),
}

/// Parses `NAME=COMMAND`.
pub fn parse_tool_flag(s: &str) -> Result<(String, CliTool), String> {
    let (name, cmd) = s
        .split_once('=')
        .ok_or_else(|| format!("--tool expects NAME=COMMAND, got `{s}`"))?;
    if name.is_empty() || cmd.is_empty() {
        return Err(format!("--tool expects NAME=COMMAND, got `{s}`"));
    }
    Ok((name.to_string(), CliTool::Command(cmd.to_string())))
}

/// Reads `{"name": result, ...}`.
pub fn read_tools_file(path: &Path) -> Result<Vec<(String, CliTool)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: invalid JSON: {e}", path.display()))?;
    let serde_json::Value::Object(map) = json else {
        return Err(format!(
            "{}: expected a JSON object of tool name → result",
            path.display()
        ));
    };
    map.into_iter()
        .map(|(k, v)| {
            Value::from_json(&v)
                .map(|v| (k, CliTool::Fixed(v)))
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

impl CliTool {
    /// Calls the tool; `deadline` bounds how long a command may run.
    pub fn call(&self, name: &str, args: &Value, deadline: Instant) -> Result<Value, CliToolError> {
        match self {
            CliTool::Fixed(v) => Ok(v.clone()),
            CliTool::Command(cmd) => run_command(name, cmd, args, deadline),
        }
    }
}

fn run_command(
    name: &str,
    cmd: &str,
    args: &Value,
    deadline: Instant,
) -> Result<Value, CliToolError> {
    let input = args
        .to_json()
        .map_err(|e| CliToolError::Error(format!("arguments are not JSON: {e}")))?
        .to_string();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CliToolError::Error(format!("cannot start `{cmd}`: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A tool that ignores its input may close stdin early; that is not an error.
        let _ = stdin.write_all(input.as_bytes());
    }
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let reader = std::thread::spawn(move || {
        let (mut o, mut e) = (String::new(), String::new());
        if let Some(s) = out.as_mut() {
            let _ = s.read_to_string(&mut o);
        }
        if let Some(s) = err.as_mut() {
            let _ = s.read_to_string(&mut e);
        }
        (o, e)
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                let msg = format!("tool {name} was still running at the deadline and was killed");
                return Err(CliToolError::Terminal(
                    Fail::new(FailReason::Timeout, msg).with_detail("limit", "timeout_ms"),
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(CliToolError::Error(format!("waiting for `{cmd}`: {e}"))),
        }
    };
    let (stdout, stderr) = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(CliToolError::Error(format!(
            "`{cmd}` exited with {status}: {}",
            stderr.trim()
        )));
    }
    let json: serde_json::Value = serde_json::from_str(stdout.trim())
        .map_err(|e| CliToolError::Error(format!("`{cmd}` did not print JSON: {e}")))?;
    Value::from_json(&json).map_err(|e| CliToolError::Error(e.to_string()))
}
