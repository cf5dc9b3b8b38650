//! The client side of the CLI: the tools the CLI hosts for a run (`--tool NAME=COMMAND`,
//! `--tools FILE.json`: see `cli::tools`), the same in every mode of `ptc run`, plus the client
//! `ptc bench` drives. Tools run here, outside the sandbox; the daemon only forwards the calls.

use super::tools::{CliTool, CliToolError};
use clap::ValueEnum;
use ptc_shared::Value;
use ptc_supervisor::client::{Client, Embedded, Tool};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// A `--tool`/`--tools` tool hosted by this process (for a daemon, sandboxed or in-process run). A command tool runs on a
/// blocking thread and is killed after `budget` (the daemon's deadline usually comes first).
pub fn client_tool(name: String, tool: CliTool, budget: Duration) -> Tool {
    let tool = Arc::new(tool);
    let tool_name = name.clone();
    Tool::new(name, move |args: Value| {
        let (tool, name) = (Arc::clone(&tool), tool_name.clone());
        async move {
            let deadline = Instant::now() + budget;
            let r = tokio::task::spawn_blocking(move || tool.call(&name, &args, deadline))
                .await
                .map_err(|e| format!("tool task failed: {e}"))?;
            r.map_err(|e| match e {
                CliToolError::Error(m) => m,
                CliToolError::Terminal(f) => f.message,
            })
        }
    })
}
