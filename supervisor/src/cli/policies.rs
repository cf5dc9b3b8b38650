//! `ptc policies`: list the policies of a directory, validated and checked against this host.
//!
//! Exit codes: 0 all valid and enforceable here; 1 some policy cannot be enforced on this host;
//! 2 the directory or a policy file is invalid (the message names the file and field).

use super::connect::Format;
use clap::Args;
use ptc_supervisor::check::host_report;
use ptc_supervisor::installed::default_policies_dir;
use ptc_supervisor::policy::load_dir;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct PoliciesArgs {
    /// Policies directory (default: $PTC_POLICIES, /etc/ptc/policies, or the source tree's).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
}

pub fn policies(args: PoliciesArgs) -> ExitCode {
    let dir = args.dir.unwrap_or_else(default_policies_dir);
    let policies = match load_dir(&dir) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: invalid_request: {e}");
            return ExitCode::from(2);
        }
    };
    let host = host_report();
    let mut all_ok = true;
    let mut rows = Vec::new();
    for (name, p) in &policies {
        let enforce = host.enforce(p);
        all_ok &= enforce.is_ok();
        let l = &p.limits;
        rows.push(json!({
            "name": name,
            "file": p.file.display().to_string(),
            "timeout_ms": l.timeout_ms,
            "cpu_ms": l.cpu_ms,
            "heap_bytes": l.heap_bytes,
            "max_tool_calls": l.max_tool_calls,
            "warm": p.warm,
            "namespaces": p.isolation.namespaces.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
            "enforceable": enforce.is_ok(),
            "problems": enforce.err().unwrap_or_default(),
        }));
    }
    match args.format {
        Format::Json => println!(
            "{}",
            json!({"dir": dir.display().to_string(), "policies": rows})
        ),
        Format::Human => print_table(&rows),
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn print_table(rows: &[serde_json::Value]) {
    println!(
        "{:<12} {:>10} {:>8} {:>10} {:>5}  {:<16} status",
        "policy", "timeout_ms", "cpu_ms", "heap_MiB", "warm", "namespaces"
    );
    for r in rows {
        let ns: Vec<String> = r["namespaces"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let status = if r["enforceable"].as_bool().unwrap_or(false) {
            "ok".to_string()
        } else {
            format!("NOT ENFORCEABLE: {}", r["problems"])
        };
        println!(
            "{:<12} {:>10} {:>8} {:>10} {:>5}  {:<16} {status}",
            r["name"].as_str().unwrap_or("?"),
            r["timeout_ms"],
            r["cpu_ms"],
            r["heap_bytes"].as_u64().unwrap_or(0) >> 20,
            r["warm"],
            if ns.is_empty() {
                "-".to_string()
            } else {
                ns.join(",")
            },
        );
    }
}
