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
    #[value(alias = "text")]
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

/// How long after `budget` a command tool is killed from here, if the run has not ended first:
/// the engine (or the daemon) owns the deadline and should be the one to report it.
const BACKSTOP_GRACE: Duration = Duration::from_secs(1);

/// A `--tool`/`--tools` tool hosted by this process for a run. A command tool is killed when the
/// run ends and the pending call is dropped (see `tools.rs`); `budget` plus a grace is only a
/// backstop.
pub fn client_tool(name: String, tool: CliTool, budget: Duration) -> Tool {
    let tool = Arc::new(tool);
    let tool_name = name.clone();
    Tool::new(name, move |args: Value| {
        let (tool, name) = (Arc::clone(&tool), tool_name.clone());
        async move {
            let deadline = Instant::now() + budget + BACKSTOP_GRACE;
            tool.call_async(&name, &args, deadline)
                .await
                .map_err(|e| match e {
                    CliToolError::Error(m) => m,
                    CliToolError::Terminal(f) => f.message,
                })
        }
    })
}
