//! The client side of the CLI: `ptc run --connect SOCKET` and the tools the CLI hosts for a run
//! (`--tool NAME=COMMAND`, `--tools FILE.json`), plus the client `ptc bench` drives.
//!
//! Tools run here, outside the sandbox: `--tool` runs COMMAND through `sh -c` with the call's
//! argument as JSON on stdin and takes JSON from its stdout (a non-zero exit is a `tool_error`
//! carrying its stderr); `--tools` maps tool names to fixed JSON results.

use clap::ValueEnum;
use ptc_shared::{Step, Value};
use ptc_supervisor::client::{Client, ClientError, Embedded, Run, Tool};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// Output format of `ptc policies` and `ptc bench`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// Connects to a daemon, or builds the embedded engine when `socket` is `None`.
pub async fn open_client(socket: Option<&Path>) -> Result<Client, String> {
    match socket {
        Some(s) => Client::connect(s)
            .await
            .map_err(|e| format!("{}: {e}", s.display())),
        None => Client::embedded().map_err(|e| e.to_string()),
    }
}

/// The tools of `--tool NAME=COMMAND` and `--tools FILE.json`.
pub fn cli_tools(commands: &[String], fixed: Option<&Path>) -> Result<Vec<Tool>, String> {
    let mut out = Vec::new();
    for spec in commands {
        let (name, cmd) = spec
            .split_once('=')
            .ok_or_else(|| format!("--tool {spec}: expected NAME=COMMAND"))?;
        let cmd = Arc::new(cmd.to_string());
        out.push(Tool::new(name, move |args: Value| {
            let cmd = Arc::clone(&cmd);
            async move { command_tool(&cmd, &args).await }
        }));
    }
    if let Some(path) = fixed {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| {
                format!(
                    "{}: expected a JSON object of tool results: {e}",
                    path.display()
                )
            })?;
        for (name, result) in map {
            let v = Value::from_json(&result)
                .map_err(|e| format!("{}: {name}: {e}", path.display()))?;
            out.push(Tool::new(name, move |_args| {
                let v = v.clone();
                async move { Ok::<_, String>(v) }
            }));
        }
    }
    Ok(out)
}

async fn command_tool(cmd: &str, args: &Value) -> Result<Value, String> {
    let input = args.to_json().map_err(|e| e.to_string())?.to_string();
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start `{cmd}`: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that ignores its input may close stdin early; that is not an error.
        let _ = stdin.write_all(input.as_bytes()).await;
    }
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("`{cmd}`: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("`{cmd}` failed ({}): {}", out.status, err.trim()));
    }
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("`{cmd}` did not print JSON: {e}"))?;
    Value::from_json(&json).map_err(|e| e.to_string())
}

/// Runs one program through a daemon. `Err((reason, message))` means nothing ran (exit 2):
/// the daemon refused the connection (its reason, e.g. `permission_denied`) or was unreachable
/// (`usage`).
pub fn run_connected(socket: &Path, run: Run) -> Result<Step, (String, String)> {
    let usage = |m: String| ("usage".to_string(), m);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| usage(format!("cannot start the runtime: {e}")))?;
    rt.block_on(async {
        let client = Client::connect(socket).await.map_err(|e| match e {
            ClientError::Refused { reason, message } => (reason.to_string(), message),
            e => usage(format!("cannot use the daemon at {}: {e}", socket.display())),
        })?;
        Ok(match client.run(run).await {
            Ok(s) | Err(s) => s,
        })
    })
}
