//! A driver for the context import's cost (issue 15): reads a JSON file into the wire encoding,
//! as `ptc run --context` does, then imports it into interpreter values, as the runner does, and
//! prints the resident memory the import added (from `/proc/self/statm`) and the values' count.
//! Under `valgrind --tool=callgrind --toggle-collect=ptc_runner::convert::import_encoded` it
//! gives the import's instructions alone.
//!
//! Usage: `import_rss CONTEXT.json`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use ptc_shared::value::EncodedValue;

/// Resident bytes of this process now.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .expect("resident pages");
    pages * 4096
}

fn main() {
    let path = std::env::args().nth(1).expect("CONTEXT.json");
    let text = std::fs::read(&path).expect("context file");
    let encoded = EncodedValue::from_json_text(&text, usize::MAX).expect("JSON");
    drop(text);
    let before = rss();
    let value = ptc_runner::convert::import_encoded(&encoded).expect("imports");
    let after = rss();
    let count = match &value {
        ptc_runner::value::Value::Map(m) => m.iter().count(),
        _ => 0,
    };
    println!(
        "import added {:.1} MiB resident ({count} top-level entries)",
        (after.saturating_sub(before)) as f64 / (1024.0 * 1024.0)
    );
    std::hint::black_box(value);
}
