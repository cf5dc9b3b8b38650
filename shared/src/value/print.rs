//! Printing like Clojure: `pr-str` (readable: strings quoted, keywords with `:`) and `str`/`print`
//! (strings bare). Floats print like Java's `Double.toString`, which is what Clojure shows.

use super::Value;
use std::fmt::Write;

/// Clojure's `pr-str` of a value: `{:a 1, :b "x"}`.
pub fn pr_str(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, true, usize::MAX);
    out
}

/// Clojure's `print-str` of a value: like `pr-str` but strings inside print bare.
pub fn print_str(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, false, usize::MAX);
    out
}

/// Whether `pr-str` of `v` is longer than `max` bytes. Printing stops once past `max`, so a
/// size limit is checked without building a string larger than the limit.
pub fn pr_str_exceeds(v: &Value, max: usize) -> bool {
    let mut out = String::new();
    write_value(&mut out, v, true, max)
}

/// `pr-str` of `v` cut to at most `max` bytes (on a char boundary), and whether it was cut.
/// Printing stops soon after `max`, so a huge value costs no more than its preview.
pub fn pr_str_capped(v: &Value, max: usize) -> (String, bool) {
    let mut out = String::new();
    // A long string stops `write_value` before it writes anything; quote it whole instead.
    let over = match v {
        Value::Str(s) => {
            write_quoted(&mut out, s);
            false
        }
        _ => write_value(&mut out, v, true, max),
    };
    if !over && out.len() <= max {
        return (out, false);
    }
    let mut end = max.min(out.len());
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    (out, true)
}

/// Appends `v`; returns true (and stops early) once `out` is longer than `cap`.
fn write_value(out: &mut String, v: &Value, readably: bool, cap: usize) -> bool {
    match v {
        Value::Nil => out.push_str("nil"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&format_float(*f)),
        Value::Str(s) if out.len().saturating_add(s.len()) > cap => return true,
        Value::Str(s) if readably => write_quoted(out, s),
        Value::Str(s) => out.push_str(s),
        Value::Keyword(k) => {
            out.push(':');
            out.push_str(k);
        }
        Value::Vector(xs) => return write_seq(out, "[", "]", xs.iter(), readably, cap),
        Value::List(xs) => return write_seq(out, "(", ")", xs.iter(), readably, cap),
        Value::Set(xs) => return write_seq(out, "#{", "}", xs.iter(), readably, cap),
        Value::Map(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if write_value(out, k, readably, cap) {
                    return true;
                }
                out.push(' ');
                if write_value(out, x, readably, cap) {
                    return true;
                }
            }
            out.push('}');
        }
    }
    out.len() > cap
}

fn write_seq<'a>(
    out: &mut String,
    open: &str,
    close: &str,
    xs: impl Iterator<Item = &'a Value>,
    readably: bool,
    cap: usize,
) -> bool {
    out.push_str(open);
    for (i, x) in xs.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if write_value(out, x, readably, cap) {
            return true;
        }
    }
    out.push_str(close);
    out.len() > cap
}

/// Writes a string the way Clojure's reader would read it back.
pub fn write_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Formats a double as Java's `Double.toString` does: `2.0`, `0.001`, `1.0E7`, `1.0E-4`, `NaN`.
///
/// Java uses plain notation for 1e-3 <= |x| < 1e7 and computerized scientific otherwise. The
/// digits are the shortest that round-trip, which Rust's formatter also produces.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return "##NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "##Inf" } else { "##-Inf" }.to_string();
    }
    let a = f.abs();
    if a == 0.0 || (1e-3..1e7).contains(&a) {
        let s = format!("{f}");
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    // Rust's `{:e}` gives the shortest round-trip digits as `d.ddde-x`.
    let s = format!("{f:e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_string()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_java() {
        assert_eq!(format_float(2.0), "2.0");
        assert_eq!(format_float(1.0e7), "1.0E7");
        assert_eq!(format_float(12345678.9), "1.23456789E7");
        assert_eq!(format_float(1.0e-4), "1.0E-4");
        assert_eq!(format_float(0.001), "0.001");
        assert_eq!(format_float(-0.5), "-0.5");
        assert_eq!(format_float(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn size_check_stops_at_the_cap() {
        let big = Value::Vector(vec![Value::string("x".repeat(1000)); 1000]);
        assert!(pr_str_exceeds(&big, 10_000));
        assert!(!pr_str_exceeds(&big, 2_000_000));
        assert_eq!(
            pr_str_exceeds(&Value::Int(12345), 4),
            pr_str(&Value::Int(12345)).len() > 4
        );
        assert!(!pr_str_exceeds(&Value::Int(12345), 5));
    }

    #[test]
    fn pr_str_and_print_str() {
        let v = Value::Vector(vec![Value::string("a\"b"), Value::keyword("k"), Value::Nil]);
        assert_eq!(pr_str(&v), r#"["a\"b" :k nil]"#);
        assert_eq!(print_str(&v), r#"[a"b :k nil]"#);
    }
}
