//! Tools for command-line use: `--tool NAME=COMMAND` runs COMMAND through `sh -c` outside the
//! sandbox with the call's arguments as JSON on stdin and takes JSON from its stdout (a non-zero
//! exit is a `tool_error` with its stderr); `--tools FILE.json` maps tool names to fixed results.
//!
//! A command tool runs in a process group of its own, and the group is SIGKILLed when the run's
//! deadline passes or the run ends first (the engine drops the pending call): a hung tool ends
//! the run with `timeout` instead of hanging the CLI, and leaves no process behind.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use ptc_shared::{Fail, FailReason, Value};
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

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
    /// Calls the tool. A command still running at `deadline`, or when this future is dropped
    /// (the run ended first), is killed with everything it started.
    pub async fn call_async(
        &self,
        name: &str,
        args: &Value,
        deadline: Instant,
    ) -> Result<Value, CliToolError> {
        match self {
            CliTool::Fixed(v) => Ok(v.clone()),
            CliTool::Command(cmd) => run_command(name, cmd, args, deadline).await,
        }
    }
}

/// SIGKILLs a tool's whole process group (`sh` and whatever it started) when dropped, unless
/// disarmed. It is disarmed once `sh` has been reaped: until then its pid, which is the group's
/// id, cannot be reused, so the signal can reach only the tool's own processes.
struct GroupKill(Option<Pid>);

impl GroupKill {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

async fn run_command(
    name: &str,
    cmd: &str,
    args: &Value,
    deadline: Instant,
) -> Result<Value, CliToolError> {
    let input = args
        .to_json()
        .map_err(|e| CliToolError::Error(format!("arguments are not JSON: {e}")))?
        .to_string();
    // Its own process group, so the deadline kill reaches what `sh` started too; kill_on_drop
    // also has tokio reap `sh` once the handle is gone.
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| CliToolError::Error(format!("cannot start `{cmd}`: {e}")))?;
    // Declared after `child`, so dropped before it: the group is killed while `sh` is unreaped.
    let mut group = GroupKill(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    );
    let ended = tokio::time::timeout_at(deadline.into(), converse(&mut child, input)).await;
    let Ok(ended) = ended else {
        let msg = format!("tool {name} was still running at the deadline and was killed");
        return Err(CliToolError::Terminal(
            Fail::new(FailReason::Timeout, msg).with_detail("limit", "timeout_ms"),
        ));
    };
    let (status, stdout, stderr) =
        ended.map_err(|e| CliToolError::Error(format!("running `{cmd}`: {e}")))?;
    group.disarm();
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

/// Feeds the arguments, reads both outputs to their end, then reaps `sh` (last, so that until
/// then a kill of its group cannot miss: see [`GroupKill`]).
async fn converse(
    child: &mut tokio::process::Child,
    input: String,
) -> std::io::Result<(std::process::ExitStatus, String, String)> {
    let stdin = child.stdin.take();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A tool that ignores its input may close stdin early; that is not an error.
            let _ = stdin.write_all(input.as_bytes()).await;
        }
    };
    let (_, stdout, stderr) = tokio::join!(
        feed,
        read_all(child.stdout.take()),
        read_all(child.stderr.take())
    );
    let status = child.wait().await?;
    Ok((status, stdout?, stderr?))
}

async fn read_all(pipe: Option<impl AsyncRead + Unpin>) -> std::io::Result<String> {
    let mut text = String::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_string(&mut text).await?;
    }
    Ok(text)
}
