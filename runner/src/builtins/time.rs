//! Dates and times, the common cases of java.time: `LocalDate/parse`, `Instant/parse`,
//! `Duration/between`, `System/currentTimeMillis`, and their methods. Values are integers
//! underneath (epoch days, epoch milliseconds, milliseconds), so they compare and hash simply.
//! ISO-8601 text in and out.

use super::BuiltinDef;
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::{Temporal, Value};

/// `LocalDate/...`.
pub static LOCAL_DATE_TABLE: &[BuiltinDef] = &[
    def!(
        "parse",
        1,
        1,
        "Parses an ISO-8601 date (yyyy-MM-dd).",
        "(LocalDate/parse \"2024-01-31\")",
        |_, a| {
            let s = super::string::text(&a[0], "LocalDate/parse")?;
            parse_date(s)
                .map(|d| Value::Temporal(Temporal::LocalDate(d)))
                .ok_or_else(|| bad(s, "a LocalDate"))
        }
    ),
    def!(
        "now",
        0,
        0,
        "Today's date in UTC.",
        "(LocalDate/now)",
        |_, _| Ok(Value::Temporal(Temporal::LocalDate(
            now_ms().div_euclid(86_400_000)
        )))
    ),
    def!(
        "of",
        3,
        3,
        "The date of a year, month (1-12) and day.",
        "(LocalDate/of 2024 1 31)",
        |_, a| {
            let n = |k: usize| super::math::int_arg(&a[k], "LocalDate/of");
            let (y, m, d) = (n(0)?, n(1)?, n(2)?);
            if !(-999_999..=999_999).contains(&y)
                || !(1..=12).contains(&m)
                || d < 1
                || d > days_in_month(y, m)
            {
                return Err(EvalError::arg(
                    "LocalDate/of",
                    format!("invalid date {y}-{m}-{d}"),
                ));
            }
            Ok(Value::Temporal(Temporal::LocalDate(days_from_civil(
                y, m, d,
            ))))
        }
    ),
];

/// `Instant/...`.
/// clojure.core's names for instants: `inst?` and `inst-ms`.
pub static CORE_TABLE: &[BuiltinDef] = &[
    def!(
        "inst?",
        1,
        1,
        "True for an instant (Instant/parse, java.util.Date.).",
        "(inst? (java.util.Date. 0)) ;=> true",
        |_, a| Ok(Value::Bool(matches!(
            a[0],
            Value::Temporal(Temporal::Instant(_))
        )))
    ),
    def!(
        "inst-ms",
        1,
        1,
        "Milliseconds since the epoch of an instant.",
        "(inst-ms (java.util.Date. 5)) ;=> 5",
        |_, a| match &a[0] {
            Value::Temporal(Temporal::Instant(ms)) => Ok(Value::Int(*ms)),
            other => Err(super::expected("inst-ms", "an instant", other)),
        }
    ),
];

/// `java.util.Date`: only its constructor, `(java.util.Date. ms)` or `(java.util.Date.)`; a date
/// is an instant (milliseconds since the epoch) with the `.getTime .before .after` methods.
pub static DATE_TABLE: &[BuiltinDef] = &[def!(
    "new",
    0,
    1,
    "A java.util.Date: the instant at milliseconds since the epoch (now without an argument).",
    "(.getTime (java.util.Date. 1000)) ;=> 1000",
    |_, a| Ok(Value::Temporal(Temporal::Instant(match a.first() {
        Some(ms) => super::math::int_arg(ms, "java.util.Date.")?,
        None => now_ms(),
    })))
)];

pub static INSTANT_TABLE: &[BuiltinDef] = &[
    def!(
        "parse",
        1,
        1,
        "Parses an ISO-8601 instant (2024-01-31T10:00:00Z, or with a ±hh:mm offset).",
        "(Instant/parse \"2024-01-31T10:00:00Z\")",
        |_, a| {
            let s = super::string::text(&a[0], "Instant/parse")?;
            parse_instant(s)
                .map(|ms| Value::Temporal(Temporal::Instant(ms)))
                .ok_or_else(|| bad(s, "an Instant"))
        }
    ),
    def!(
        "now",
        0,
        0,
        "The current instant.",
        "(Instant/now)",
        |_, _| Ok(Value::Temporal(Temporal::Instant(now_ms())))
    ),
    def!(
        "ofEpochMilli",
        1,
        1,
        "The instant at milliseconds since the epoch.",
        "(Instant/ofEpochMilli 0)",
        |_, a| Ok(Value::Temporal(Temporal::Instant(super::math::int_arg(
            &a[0],
            "ofEpochMilli"
        )?)))
    ),
];

/// `Duration/...`.
pub static DURATION_TABLE: &[BuiltinDef] = &[
    def!(
        "between",
        2,
        2,
        "Duration between two instants (negative if the second is earlier).",
        "(Duration/between a b)",
        between
    ),
    def!(
        "ofMillis",
        1,
        1,
        "A duration of n milliseconds.",
        "(Duration/ofMillis 1500)",
        |_, a| Ok(Value::Temporal(Temporal::Duration(super::math::int_arg(
            &a[0], "ofMillis"
        )?)))
    ),
];

/// `System/...`.
pub static SYSTEM_TABLE: &[BuiltinDef] = &[def!(
    "currentTimeMillis",
    0,
    0,
    "Milliseconds since the epoch, now.",
    "(System/currentTimeMillis)",
    |_, _| Ok(Value::Int(now_ms()))
)];

fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn bad(text: &str, what: &str) -> EvalError {
    EvalError::new(
        ErrorKind::ArgumentError,
        "parse",
        format!("Text '{text}' could not be parsed as {what}"),
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of days since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn parse_date(s: &str) -> Option<i64> {
    let mut it = s.splitn(3, '-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// `YYYY-MM-DDTHH:MM:SS(.fff)Z` (or with a `±HH:MM` offset) → epoch milliseconds.
fn parse_instant(s: &str) -> Option<i64> {
    let (date, time) = s.split_once('T')?;
    let days = parse_date(date)?;
    let (clock, offset_min) = if let Some(c) = time.strip_suffix('Z') {
        (c, 0)
    } else {
        let k = time.rfind(['+', '-'])?;
        let (c, off) = time.split_at(k);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (h, m) = off.get(1..)?.split_once(':')?;
        (
            c,
            sign * (h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?),
        )
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
    let mut parts = hms.split(':');
    let (h, mi): (i64, i64) = (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
    let sec: i64 = parts.next().map_or(Some(0), |x| x.parse().ok())?;
    if h > 23 || mi > 59 || sec > 59 || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let ms: i64 = format!("{frac:0<3}").get(..3)?.parse().ok()?;
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + sec * 1000 + ms)
}

fn between(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let ms = |v: &Value| match v {
        Value::Temporal(Temporal::Instant(ms)) => Ok(*ms),
        Value::Temporal(Temporal::LocalDate(d)) => Ok(d * 86_400_000),
        other => Err(super::expected("Duration/between", "two instants", other)),
    };
    Ok(Value::Temporal(Temporal::Duration(ms(&a[1])? - ms(&a[0])?)))
}

/// ISO-8601 text: `2024-01-31`, `2024-01-31T10:00:00Z`, `PT1H30M`.
pub fn format_temporal(t: Temporal) -> String {
    match t {
        Temporal::LocalDate(d) => {
            let (y, m, dd) = civil_from_days(d);
            format!("{y:04}-{m:02}-{dd:02}")
        }
        Temporal::Instant(ms) => {
            let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
            let (y, m, d) = civil_from_days(days);
            let (h, mi, s, milli) = (
                rem / 3_600_000,
                rem / 60_000 % 60,
                rem / 1000 % 60,
                rem % 1000,
            );
            if milli == 0 {
                format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
            } else {
                format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
            }
        }
        Temporal::Duration(ms) => {
            let (h, m, s, milli) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
            let mut out = String::from("PT");
            if h != 0 {
                out.push_str(&format!("{h}H"));
            }
            if m != 0 {
                out.push_str(&format!("{m}M"));
            }
            if s != 0 || milli != 0 || out == "PT" {
                if milli == 0 {
                    out.push_str(&format!("{s}S"))
                } else {
                    out.push_str(&format!("{}.{:03}S", s, milli.abs()))
                }
            }
            out
        }
    }
}

/// `LocalDate.plusMonths`: the day is clamped to the target month's length.
fn plus_months(d: i64, months: i64) -> Option<Value> {
    let (y, m, day) = civil_from_days(d);
    let total = (y.checked_mul(12)? + m - 1).checked_add(months)?;
    let (ny, nm) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    if !(-999_999..=999_999).contains(&ny) {
        return None;
    }
    let nd = day.min(days_in_month(ny, nm));
    Some(Value::Temporal(Temporal::LocalDate(days_from_civil(
        ny, nm, nd,
    ))))
}

fn shift(ms: i64, n: i64, unit: i64) -> Option<Value> {
    Some(Value::Temporal(Temporal::Instant(
        ms.checked_add(n.checked_mul(unit)?)?,
    )))
}

/// A date in an `Option`, for [`date_shift`]'s arithmetic: `None` outside the years
/// -999,999..=999,999 that `LocalDate/of` and `plusMonths` accept too.
fn date(d: Option<i64>) -> Option<Value> {
    let range = days_from_civil(-999_999, 1, 1)..=days_from_civil(999_999, 12, 31);
    d.filter(|d| range.contains(d))
        .map(|d| Value::Temporal(Temporal::LocalDate(d)))
}

/// `.plusDays` ... `.minusYears` on a date (epoch days) by a count: `None` when `m` is not one of
/// them; the function gives `None` when the result is out of range.
fn date_shift(m: &str) -> Option<fn(i64, i64) -> Option<Value>> {
    let f: fn(i64, i64) -> Option<Value> = match m {
        "plusDays" => |d, k| date(d.checked_add(k)),
        "minusDays" => |d, k| date(d.checked_sub(k)),
        "plusWeeks" => |d, k| date(k.checked_mul(7).and_then(|w| d.checked_add(w))),
        "minusWeeks" => |d, k| date(k.checked_mul(7).and_then(|w| d.checked_sub(w))),
        "plusMonths" => plus_months,
        "minusMonths" => |d, k| plus_months(d, k.checked_neg()?),
        "plusYears" => |d, k| plus_months(d, k.checked_mul(12)?),
        "minusYears" => |d, k| plus_months(d, k.checked_mul(-12)?),
        _ => return None,
    };
    Some(f)
}

/// Methods on dates, instants and durations.
pub fn method(_: &mut Interp<'_>, t: Temporal, m: &str, args: &[Value]) -> EvalResult {
    let n = |k: usize| super::math::int_arg(args.get(k).unwrap_or(&Value::Nil), m);
    // Comparisons need the same kind, as in Java (a LocalDate is not comparable to an Instant).
    let other = |k: usize| match args.get(k) {
        Some(Value::Temporal(o)) if std::mem::discriminant(o) == std::mem::discriminant(&t) => {
            Ok(*o)
        }
        Some(v) => Err(super::expected(
            m,
            &format!("another {}", Value::Temporal(t).type_name()),
            v,
        )),
        None => Err(EvalError::arg(m, format!(".{m} needs an argument"))),
    };
    let overflow = || EvalError::new(ErrorKind::ArithmeticError, m, "date out of range");
    if let (Temporal::LocalDate(d), Some(shift)) = (t, date_shift(m)) {
        return shift(d, n(0)?).ok_or_else(overflow);
    }
    Ok(match (t, m) {
        (Temporal::LocalDate(d), "getDayOfYear") => {
            let (y, _, _) = civil_from_days(d);
            Value::Int(d - days_from_civil(y, 1, 1) + 1)
        }
        (Temporal::LocalDate(d), "lengthOfMonth") => {
            let (y, mo, _) = civil_from_days(d);
            Value::Int(days_in_month(y, mo))
        }
        (Temporal::LocalDate(d), "isLeapYear") => {
            Value::Bool(days_in_month(civil_from_days(d).0, 2) == 29)
        }
        (Temporal::Instant(ms), "plusMillis") => shift(ms, n(0)?, 1).ok_or_else(overflow)?,
        (Temporal::Instant(ms), "minusMillis") => shift(ms, n(0)?, -1).ok_or_else(overflow)?,
        (Temporal::Instant(ms), "plusSeconds") => shift(ms, n(0)?, 1000).ok_or_else(overflow)?,
        (Temporal::Instant(ms), "minusSeconds") => shift(ms, n(0)?, -1000).ok_or_else(overflow)?,
        (Temporal::Instant(ms), "getEpochSecond") => Value::Int(ms.div_euclid(1000)),
        (Temporal::Duration(ms), "toSeconds") => Value::Int(ms.div_euclid(1000)),
        (Temporal::LocalDate(d), "toEpochDay") => Value::Int(d),
        (Temporal::LocalDate(d), "getYear") => Value::Int(civil_from_days(d).0),
        (Temporal::LocalDate(d), "getMonthValue") => Value::Int(civil_from_days(d).1),
        (Temporal::LocalDate(d), "getDayOfMonth") => Value::Int(civil_from_days(d).2),
        (Temporal::Instant(ms), "toEpochMilli" | "getTime") => Value::Int(ms),
        (Temporal::Duration(ms), "toMillis") => Value::Int(ms),
        (Temporal::Duration(ms), "toDays") => Value::Int(ms / 86_400_000),
        (Temporal::Duration(ms), "toHours") => Value::Int(ms / 3_600_000),
        (Temporal::Duration(ms), "toMinutes") => Value::Int(ms / 60_000),
        (Temporal::Duration(ms), "getSeconds") => Value::Int(ms.div_euclid(1000)),
        (a, "isBefore") => Value::Bool(a < other(0)?),
        (a, "isAfter") => Value::Bool(a > other(0)?),
        // java.util.Date's names for the same comparisons.
        (a @ Temporal::Instant(_), "before") => Value::Bool(a < other(0)?),
        (a @ Temporal::Instant(_), "after") => Value::Bool(a > other(0)?),
        (a, "equals") => Value::Bool(matches!(args.first(), Some(Value::Temporal(o)) if *o == a)),
        (a, "toString") => Value::str(&format_temporal(a)),
        _ => {
            return Err(EvalError::new(
                ErrorKind::TypeError,
                m,
                format!("no method .{m} on {}", Value::Temporal(t).type_name()),
            ));
        }
    })
}
