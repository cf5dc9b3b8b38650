//! Reading data files for the CLI: JSON, or EDN when the file name ends in `.edn`
//! (keywords stay keywords).

use ptc_shared::Value;
use std::path::Path;

/// Reads a JSON or EDN file into a value.
pub fn read_data_file(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_data(&text, path.extension().is_some_and(|e| e == "edn"))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses data text as EDN or JSON.
pub fn parse_data(text: &str, edn: bool) -> Result<Value, String> {
    if edn {
        return ptc_runner::edn::parse(text);
    }
    // Straight into a Value: a multi-megabyte context costs one pass, not a tree and a copy.
    Value::from_json_text(text.as_bytes()).map_err(|e| format!("invalid JSON: {e}"))
}
