//! `ptc trace FILE.jsonl`: a mission's trace (as `ptc agent --trace` writes it) as an indented
//! tree of agents and turns a person can read, or with `--html OUT.html` as one self-contained
//! page (see `trace_html`).

use clap::Args;
use serde_json::Value as J;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A trace written by `ptc agent --trace FILE.jsonl`.
    file: PathBuf,
    /// Write one self-contained HTML page (timeline, agents and turns) here instead of the tree.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
}

/// Prints the tree (or writes the page); exit 2 when the file cannot be read or parsed, or the
/// page cannot be written (no partial page is left behind).
pub fn trace(args: TraceArgs) -> ExitCode {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| format!("cannot read {}: {e}", args.file.display()));
    let done = match &args.html {
        None => text.and_then(|t| render(&t)).map(|tree| print!("{tree}")),
        Some(out) => text
            .and_then(|t| parse(&t))
            .and_then(|entries| super::trace_html::page(&entries))
            .and_then(|page| super::trace_html::write(out, &page)),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: usage: {e}");
            ExitCode::from(2)
        }
    }
}

/// Deepest nesting drawn (a hand-made file could make runs call each other in a cycle).
const MAX_DEPTH: usize = 32;

/// The entries of a trace file, in the order they started (by `id`); each line must be a JSON
/// object (blank lines are skipped).
pub fn parse(jsonl: &str) -> Result<Vec<J>, String> {
    let mut entries: Vec<J> = Vec::new();
    for (i, line) in jsonl
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let entry: J = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        if !entry.is_object() {
            return Err(format!("line {}: not a trace entry (a JSON object)", i + 1));
        }
        entries.push(entry);
    }
    entries.sort_by_key(|e| e["id"].as_u64().unwrap_or(0));
    Ok(entries)
}

/// The tree as text: each agent run under the turn that called it.
pub fn render(jsonl: &str) -> Result<String, String> {
    let entries = parse(jsonl)?;
    // Runs by the turn that called them (`None`: the root), in the order they started.
    let mut runs: BTreeMap<Option<u64>, Vec<u64>> = BTreeMap::new();
    for e in &entries {
        let (run, parent) = (e["run"].as_u64().unwrap_or(0), e["parent"].as_u64());
        let list = runs.entry(parent).or_default();
        if !list.contains(&run) {
            list.push(run);
        }
    }
    let mut out = String::new();
    for root in runs.get(&None).into_iter().flatten() {
        render_run(&mut out, &entries, &runs, *root, 0);
    }
    Ok(out)
}

/// One run: its agent, then each turn followed by the runs that turn called.
fn render_run(
    out: &mut String,
    entries: &[J],
    runs: &BTreeMap<Option<u64>, Vec<u64>>,
    run: u64,
    depth: usize,
) {
    let pad = "  ".repeat(depth * 2);
    if depth > MAX_DEPTH {
        let _ = writeln!(out, "{pad}…");
        return;
    }
    let mut turns: Vec<&J> = entries
        .iter()
        .filter(|e| e["run"].as_u64() == Some(run))
        .collect();
    turns.sort_by_key(|t| t["turn"].as_u64().unwrap_or(0));
    let Some(first) = turns.first() else { return };
    let model = first["model"]
        .as_str()
        .map(|m| format!(" [{m}]"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{pad}{}{model}",
        first["agent"].as_str().unwrap_or("?")
    );
    for t in &turns {
        out.push_str(&turn_line(t, &pad));
        for child in runs.get(&t["id"].as_u64()).into_iter().flatten() {
            render_run(out, entries, runs, *child, depth + 1);
        }
    }
}

fn turn_line(t: &J, pad: &str) -> String {
    let outcome = if t["returned"].as_bool() == Some(true) {
        format!("returned {}", short(&t["result"].to_string()))
    } else if let Some(f) = t["fail"].as_object() {
        format!(
            "failed {}: {}",
            f.get("reason").and_then(J::as_str).unwrap_or("?"),
            short(f.get("message").and_then(J::as_str).unwrap_or(""))
        )
    } else {
        format!("-> {}", short(&t["result"].to_string()))
    };
    let program = t["program"]
        .as_str()
        .map(|p| short(&p.replace('\n', " ")))
        .unwrap_or_else(|| "(no program)".into());
    let u = &t["usage"];
    format!(
        "{pad}  turn {}: {program}  {outcome}  ({} tok, {} req, {} ms llm, {} ms run)\n",
        t["turn"],
        u["input_tokens"].as_u64().unwrap_or(0) + u["output_tokens"].as_u64().unwrap_or(0),
        u["requests"],
        u["llm_ms"],
        u["exec_ms"]
    )
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}
