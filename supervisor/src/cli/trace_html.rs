//! `ptc trace FILE.jsonl --html OUT.html`: a mission's trace as one self-contained page.
//!
//! The page (`trace_page.html`, compiled in) carries its CSS and JavaScript inline and loads
//! nothing: its Content-Security-Policy forbids every fetch, image and frame. The trace entries go
//! in as JSON inside a `<script type="application/json">` block, and the page's script draws the
//! budgets used, a timeline of LLM and program time per agent run, and the tree of agents and
//! turns (program, result or failure, prints, tool calls with durations, tokens).
//!
//! Escaping, the one rule that keeps program output from becoming markup: everything from the
//! trace is untrusted. Here, every `<`, `>` and `&` in the JSON (they can only occur inside JSON
//! strings) is written as a `\u00XX` escape, so no byte sequence of the data can close the script
//! block or open a tag; U+2028/U+2029 are escaped too. In the page, strings reach the document
//! only through `textContent` and `setAttribute`, never as HTML.

use serde_json::Value as J;
use std::path::Path;

/// The page, with `/*TRACE_DATA*/` where the entries go.
const TEMPLATE: &str = include_str!("trace_page.html");
const SLOT: &str = "/*TRACE_DATA*/";

/// The whole page for these entries.
pub fn page(entries: &[J]) -> Result<String, String> {
    let json =
        serde_json::to_string(entries).map_err(|e| format!("cannot encode the trace: {e}"))?;
    let (head, tail) = TEMPLATE
        .split_once(SLOT)
        .ok_or_else(|| "the page template has no data slot".to_string())?;
    let mut out = String::with_capacity(TEMPLATE.len() + json.len() + json.len() / 8);
    out.push_str(head);
    escape_into(&mut out, &json);
    out.push_str(tail);
    Ok(out)
}

/// JSON text made inert inside an HTML `<script>` element (still the same JSON when parsed).
fn escape_into(out: &mut String, json: &str) {
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
}

/// Writes the page through a temporary file renamed into place, so a failed write leaves no
/// partial page (and an existing page stays whole).
pub fn write(path: &Path, page: &str) -> Result<(), String> {
    let name = path
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::write(&tmp, page).and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn data_cannot_close_the_script_block_and_parses_back() {
        let hostile = "</script><img src=x onerror=alert(1)> & <!-- \u{2028}";
        let entries = vec![serde_json::json!({"id": 1, "prints": [hostile]})];
        let page = page(&entries).unwrap();
        assert_eq!(
            page.matches("</script>").count(),
            2,
            "only the page's own two"
        );
        assert!(!page.contains("<img"));
        let start = page.find("id=\"trace-data\">").unwrap() + "id=\"trace-data\">".len();
        let end = start + page[start..].find("</script>").unwrap();
        let back: Vec<J> = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(back, entries);
    }

    #[test]
    fn the_page_loads_nothing_from_outside() {
        let page = page(&[]).unwrap();
        for needle in ["http:", "https:", "src=", "<link", "@import", "url("] {
            assert!(!page.contains(needle), "{needle}");
        }
        assert!(page.contains("default-src 'none'"));
    }
}
