//! A client of a running `ptc-supervisor` daemon: a program over a JSON context that calls a tool
//! hosted here, in this process.
//!
//! ```sh
//! ptc serve --socket /tmp/ptc.sock &
//! cargo run -p ptc-supervisor --example daemon_client -- /tmp/ptc.sock
//! ```
#![allow(clippy::print_stdout)]

use ptc_supervisor::client::{Client, Run, Tool};
use serde_json::json;
use std::time::Duration;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let socket = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/run/ptc/ptc.sock".to_string());
    let client = Client::connect(&socket).await?;
    let program = r#"
      (let [open (tool/orders {:status "open"})]
        {:region data/region
         :open   (count open)
         :total  (->> open (map :total) (reduce +))})"#;
    let orders = Tool::new("orders", |args: ptc_shared::Value| async move {
        // A real agent would query a database or an API here.
        let status = args.to_json().map_err(|e| e.to_string())?["status"].clone();
        Ok::<_, String>(json!([
            {"id": 1, "status": status, "total": 5},
            {"id": 2, "status": status, "total": 7}
        ]))
    })
    .signature("(status :string) -> [{id :int, status :string, total :int}]")
    .description("Orders with the given status");
    let run = Run::new(program)
        .context(json!({"region": "eu"}))
        .tool(orders)
        .timeout(Duration::from_millis(500));
    match client.run(run).await {
        Ok(step) => {
            let value = step.return_value.as_ref().map(ptc_shared::value::pr_str);
            println!("result: {}", value.unwrap_or_default());
            println!(
                "tool calls: {}, took {} ms",
                step.tool_calls.len(),
                step.usage.duration_ms
            );
        }
        Err(step) => {
            let fail = step.fail.map(|f| format!("{}: {}", f.reason, f.message));
            println!("failed: {}", fail.unwrap_or_default());
            std::process::exit(1);
        }
    }
    Ok(())
}
