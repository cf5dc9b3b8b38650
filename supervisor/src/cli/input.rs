//! Reading data files for the CLI: JSON, or EDN when the file name ends in `.edn`
//! (keywords stay keywords).
//!
//! A context file goes straight into the wire encoding the runner decodes
//! ([`EncodedValue::from_json_text`]): no tree of the data is built in this process, so a
//! multi-megabyte context costs its text and its encoding, nothing more.

use ptc_shared::Value;
use ptc_shared::codec::DEFAULT_MAX_FRAME;
use ptc_shared::value::EncodedValue;
use std::path::Path;

/// Reads a JSON or EDN file into a value.
pub fn read_data_file(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_data(&text, is_edn(path)).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a context file into its wire encoding: JSON transcoded as it is read, EDN parsed and
/// encoded. The encoding is bounded by the largest frame a runner accepts (the policy's
/// `max_context_bytes`, usually far smaller, is the engine's to check).
pub fn read_context_file(path: &Path) -> Result<EncodedValue, String> {
    if is_edn(path) {
        return read_data_file(path).map(EncodedValue::from);
    }
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    EncodedValue::from_json_text(&text, DEFAULT_MAX_FRAME as usize)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn is_edn(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "edn")
}

/// Parses data text as EDN or JSON.
pub fn parse_data(text: &str, edn: bool) -> Result<Value, String> {
    if edn {
        return ptc_runner::edn::parse(text);
    }
    // Straight into a Value: a multi-megabyte context costs one pass, not a tree and a copy.
    Value::from_json_text(text.as_bytes()).map_err(|e| format!("invalid JSON: {e}"))
}
