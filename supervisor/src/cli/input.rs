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
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    Value::from_json(&json).map_err(|e| e.to_string())
}
