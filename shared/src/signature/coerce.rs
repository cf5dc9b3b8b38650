//! Input coercions and the ISO-8601 check.
//!
//! Coercion applies to inputs only and never guesses: numeric strings become ints or floats,
//! `"true"`/`"false"` become booleans, strings and keywords convert into each other, and ints widen
//! to floats. Each returns the new value and the warning to report (`None` for the silent int →
//! float widening). Callers decide whether coercion is allowed; these functions only convert.

use super::malli::Schema;
use crate::value::{Value, pr_str};

/// Tries to convert `v` so that it satisfies the primitive `schema`.
pub(crate) fn coerce(schema: &Schema, v: &Value) -> Option<(Value, Option<String>)> {
    let warn = |to: &str| Some(format!("coerced {} {} to {to}", v.type_name(), short(v)));
    match (schema, v) {
        (Schema::Int, Value::Str(s)) => s
            .trim()
            .parse::<i64>()
            .ok()
            .map(|i| (Value::Int(i), warn("int"))),
        #[allow(clippy::cast_precision_loss)]
        (Schema::Double, Value::Int(i)) => Some((Value::Float(*i as f64), None)),
        (Schema::Double, Value::Str(s)) => parse_float(s).map(|f| (Value::Float(f), warn("float"))),
        (Schema::Boolean, Value::Str(s)) => match s.as_str() {
            "true" => Some((Value::Bool(true), warn("boolean"))),
            "false" => Some((Value::Bool(false), warn("boolean"))),
            _ => None,
        },
        (Schema::Keyword, Value::Str(s)) if !s.is_empty() => {
            Some((Value::Keyword(s.clone()), warn("keyword")))
        }
        (Schema::String, Value::Keyword(k)) => Some((Value::Str(k.clone()), warn("string"))),
        (Schema::Enum(members), Value::Str(s)) => {
            let kw = Value::Keyword(s.clone());
            members.contains(&kw).then(|| (kw, warn("keyword")))
        }
        (Schema::Enum(members), Value::Keyword(k)) => {
            let st = Value::Str(k.clone());
            members.contains(&st).then(|| (st, warn("string")))
        }
        _ => None,
    }
}

/// A decimal number in plain or exponent notation; `inf`, `NaN` and hex are not numbers here.
fn parse_float(s: &str) -> Option<f64> {
    let t = s.trim();
    let numeric = !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'))
        && t.chars().any(|c| c.is_ascii_digit());
    if !numeric {
        return None;
    }
    t.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// A short readable form of a scalar for messages; long strings are cut.
pub(crate) fn short(v: &Value) -> String {
    const MAX: usize = 60;
    match v {
        Value::Str(s) if s.chars().count() > MAX => {
            let cut: String = s.chars().take(MAX).collect();
            format!("{}...", pr_str(&Value::Str(cut)))
        }
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => {
            v.type_name().to_string()
        }
        _ => pr_str(v),
    }
}

/// `2024-05-01T10:00:00Z`, `2024-05-01T10:00:00.123+02:00`, `2024-05-01 10:00:00-05:00`.
pub(crate) fn is_datetime(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
    };
    let sep = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    let (Some(year), Some(month), Some(day), Some(h), Some(m), Some(sec)) = (
        digits(0, 4),
        digits(5, 2),
        digits(8, 2),
        digits(11, 2),
        digits(14, 2),
        digits(17, 2),
    ) else {
        return false;
    };
    let shape = sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":");
    if !shape
        || !(1..=12).contains(&month)
        || day == 0
        || day > days_in(year, month)
        || h > 23
        || m > 59
        || sec > 60
    {
        return false;
    }
    let mut i = 19;
    if sep(i, b".") {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        Some(b'Z' | b'z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            matches!((digits(i + 1, 2), digits(i + 4, 2)), (Some(oh), Some(om)) if oh < 24 && om < 60)
                && sep(i + 3, b":")
                && i + 6 == b.len()
        }
        _ => false,
    }
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_coercion_rule() {
        let c = |s: &Schema, v: Value| coerce(s, &v);
        assert_eq!(
            c(&Schema::Int, "10".into()),
            Some((Value::Int(10), Some("coerced string \"10\" to int".into())))
        );
        assert_eq!(c(&Schema::Int, "1.5".into()), None);
        assert_eq!(
            c(&Schema::Double, "1.5".into()),
            Some((
                Value::Float(1.5),
                Some("coerced string \"1.5\" to float".into())
            ))
        );
        assert_eq!(c(&Schema::Double, "NaN".into()), None);
        assert_eq!(
            c(&Schema::Double, Value::Int(2)),
            Some((Value::Float(2.0), None))
        );
        assert_eq!(
            c(&Schema::Boolean, "true".into()),
            Some((
                Value::Bool(true),
                Some("coerced string \"true\" to boolean".into())
            ))
        );
        assert_eq!(
            c(&Schema::Boolean, "false".into()).map(|x| x.0),
            Some(Value::Bool(false))
        );
        assert_eq!(c(&Schema::Boolean, "yes".into()), None);
        assert_eq!(
            c(&Schema::Keyword, "open".into()),
            Some((
                Value::keyword("open"),
                Some("coerced string \"open\" to keyword".into())
            ))
        );
        assert_eq!(
            c(&Schema::String, Value::keyword("open")),
            Some((
                "open".into(),
                Some("coerced keyword :open to string".into())
            ))
        );
        let e = Schema::Enum(vec![Value::keyword("a"), "b".into()]);
        assert_eq!(c(&e, "a".into()).map(|x| x.0), Some(Value::keyword("a")));
        assert_eq!(c(&e, Value::keyword("b")).map(|x| x.0), Some("b".into()));
        assert_eq!(c(&Schema::Int, Value::Float(1.0)), None);
    }

    #[test]
    fn datetimes_need_an_offset() {
        for ok in [
            "2024-05-01T10:00:00Z",
            "2024-02-29T23:59:60.5+02:00",
            "2024-05-01 10:00:00-05:00",
        ] {
            assert!(is_datetime(ok), "{ok}");
        }
        for bad in [
            "2024-05-01T10:00:00",
            "2023-02-29T10:00:00Z",
            "2024-13-01T10:00:00Z",
            "2024-05-01",
            "2024-05-01T10:00:00+0200",
            "x",
            "2024-05-01T10:00:00.Z",
        ] {
            assert!(!is_datetime(bad), "{bad}");
        }
    }

    #[test]
    fn short_cuts_long_strings() {
        assert_eq!(
            short(&"a".repeat(100).into()),
            format!("\"{}\"...", "a".repeat(60))
        );
        assert_eq!(short(&Value::Vector(vec![])), "vector");
    }
}
