//! EDN data → `ptc_shared::Value`, using the PTC-Lisp reader: one form, read as quoted data.
//! Used for `--context`/`--memory` files ending in `.edn` and for test expectations.

use crate::convert::to_shared;
use crate::reader::read_all;
use ptc_shared::Value;

/// Parses one EDN value. Symbols read as strings; no code is evaluated.
pub fn parse(text: &str) -> Result<Value, String> {
    let forms = read_all(text, 64 << 20, 256).map_err(|e| e.to_string())?;
    match forms.as_slice() {
        [one] => to_shared(&crate::analyze::quote_form(one)),
        [] => Err("no EDN value found".into()),
        _ => Err(format!("expected one EDN value, found {}", forms.len())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_nested_data() {
        let v = super::parse(r#"{:a [1 2.5 "x" nil true] "b" #{:k}}"#).unwrap_or_default();
        assert_eq!(
            ptc_shared::value::pr_str(&v),
            r#"{:a [1 2.5 "x" nil true], "b" #{:k}}"#
        );
        assert!(super::parse("(1").is_err());
    }
}
