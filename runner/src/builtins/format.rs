//! `format`: Java's `String.format` for the conversions programs use: `%s %S %d %x %X %o %f %e
//! %E %g %b %c %% %n`, with argument indexes (`%2$s`, `%<s`), width, precision and the flags
//! `- 0 + space , ( #`.
//!
//! Numbers keep Java's types: `%d %x %o` need an integer and `%f %e %g` a float (Clojure passes a
//! Long or a Double to the JVM, which refuses the other). Decimal rounding is Java's: HALF_UP on
//! the shortest decimal form of the double (what `Double.toString` shows), so `(format "%.2f"
//! 2.675)` is "2.68" although the binary value is slightly below 2.675.

use super::BuiltinDef;
use crate::def;
use crate::error::{ErrorKind, EvalError, EvalResult};
use crate::eval::Interp;
use crate::value::Value;

pub static TABLE: &[BuiltinDef] = &[def!(
    "format",
    1,
    _,
    "Java String.format: %s %d %.2f %x %e %% %n, widths and flags -0+,.",
    "(format \"%s: %.2f\" \"total\" 2.5) ;=> \"total: 2.50\"",
    format
)];

/// The largest width or precision accepted.
const MAX_WIDTH: usize = 10_000;

fn err(msg: impl Into<String>) -> EvalError {
    EvalError::new(ErrorKind::ArgumentError, "format", msg)
}

/// One parsed `%...` specifier.
#[derive(Default)]
struct Spec {
    index: Option<usize>,
    relative: bool,
    flags: String,
    width: Option<usize>,
    precision: Option<usize>,
    conv: char,
}

impl Spec {
    fn has(&self, f: char) -> bool {
        self.flags.contains(f)
    }
}

fn format(_: &mut Interp<'_>, a: Vec<Value>) -> EvalResult {
    let fmt = super::string::text(&a[0], "format")?;
    let args = a.get(1..).unwrap_or(&[]);
    let mut out = String::with_capacity(fmt.len());
    let mut chars = fmt.chars().peekable();
    let (mut next, mut last): (usize, Option<usize>) = (0, None);
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let spec = parse_spec(&mut chars)?;
        match spec.conv {
            '%' => out.push_str(&pad(&spec, "%".into())),
            'n' => out.push('\n'),
            _ => {
                let k = if spec.relative {
                    last.ok_or_else(|| err(format!("Missing format argument for %<{}", spec.conv)))?
                } else if let Some(i) = spec.index {
                    i.checked_sub(1)
                        .ok_or_else(|| err("Illegal format argument index 0"))?
                } else {
                    next += 1;
                    next - 1
                };
                let arg = args.get(k).ok_or_else(|| {
                    err(format!("Format specifier '%{}' has no argument", spec.conv))
                })?;
                last = Some(k);
                out.push_str(&convert(&spec, arg)?);
            }
        }
    }
    Ok(Value::str(&out))
}

fn parse_spec(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> EvalResult<Spec> {
    let mut spec = Spec::default();
    let mut digits = String::new();
    if chars.peek() == Some(&'<') {
        chars.next();
        spec.relative = true;
    }
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() && !(c == '0' && digits.is_empty()) {
            digits.push(c);
            chars.next();
        } else if c == '$' && !digits.is_empty() {
            chars.next();
            spec.index = digits.parse().ok();
            digits.clear();
        } else if digits.is_empty() && "-#+ 0,(".contains(c) {
            spec.flags.push(c);
            chars.next();
        } else {
            break;
        }
    }
    if !digits.is_empty() {
        spec.width = Some(bounded(&digits, "width")?);
    }
    if chars.peek() == Some(&'.') {
        chars.next();
        let mut p = String::new();
        while let Some(d) = chars.next_if(char::is_ascii_digit) {
            p.push(d);
        }
        spec.precision = Some(bounded(&p, "precision")?);
    }
    spec.conv = chars
        .next()
        .ok_or_else(|| err("Format string ends inside a % specifier"))?;
    Ok(spec)
}

/// A width or precision; capped so one specifier cannot allocate without bound.
fn bounded(digits: &str, what: &str) -> EvalResult<usize> {
    digits
        .parse()
        .ok()
        .filter(|n| *n <= MAX_WIDTH)
        .ok_or_else(|| {
            err(format!(
                "format {what} {digits} is over the limit of {MAX_WIDTH}"
            ))
        })
}

/// Pads to the width: left-justified with `-`, else right-justified with spaces.
fn pad(spec: &Spec, s: String) -> String {
    let n = s.chars().count();
    match spec.width {
        Some(w) if w > n => {
            let fill = " ".repeat(w - n);
            if spec.has('-') { s + &fill } else { fill + &s }
        }
        _ => s,
    }
}

fn convert(spec: &Spec, arg: &Value) -> EvalResult<String> {
    let bad = || {
        err(format!(
            "%{} cannot format {} {}",
            spec.conv,
            arg.type_name(),
            crate::print::pr_str_short(arg)
        ))
    };
    let upper = spec.conv.is_ascii_uppercase();
    let s = match (spec.conv.to_ascii_lowercase(), arg) {
        // Java formats a null argument as "null" for every conversion but %b.
        (c, Value::Nil) if c != 'b' && "sdxofegc".contains(c) => "null".to_string(),
        ('s', v) => {
            let s = match v {
                Value::Nil => "null".to_string(),
                v => crate::print::str_of(v),
            };
            match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s,
            }
        }
        ('b', v) => {
            let b = if matches!(v, Value::Nil | Value::Bool(false)) {
                "false"
            } else {
                "true"
            };
            b.to_string()
        }
        ('c', Value::Char(c)) => c.to_string(),
        ('c', Value::Int(n)) => u32::try_from(*n)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| err(format!("Illegal code point {n}")))?
            .to_string(),
        ('d', Value::Int(n)) => {
            return Ok(number(
                spec,
                *n < 0,
                group(spec, &n.unsigned_abs().to_string()),
            ));
        }
        ('x', Value::Int(n)) => radix(spec, format!("{:x}", n.cast_unsigned()), "0x"),
        ('o', Value::Int(n)) => radix(spec, format!("{:o}", n.cast_unsigned()), "0"),
        ('f' | 'e' | 'g', Value::Float(x)) => return Ok(float(spec, *x)),
        _ => return Err(bad()),
    };
    let s = if upper { s.to_uppercase() } else { s };
    Ok(pad(spec, s))
}

fn radix(spec: &Spec, digits: String, prefix: &str) -> String {
    let body = if spec.has('#') {
        format!("{prefix}{digits}")
    } else {
        digits
    };
    zero_pad(spec, "", body)
}

/// Sign handling (`+`, space, `(`) then zero padding, then width.
fn number(spec: &Spec, negative: bool, body: String) -> String {
    let (pre, post) = match (negative, spec.has('('), spec.has('+'), spec.has(' ')) {
        (true, true, _, _) => ("(", ")"),
        (true, false, _, _) => ("-", ""),
        (false, _, true, _) => ("+", ""),
        (false, _, _, true) => (" ", ""),
        _ => ("", ""),
    };
    zero_pad(spec, pre, body + post)
}

fn zero_pad(spec: &Spec, sign: &str, body: String) -> String {
    let n = sign.chars().count() + body.chars().count();
    match spec.width {
        Some(w) if spec.has('0') && w > n => format!("{sign}{}{body}", "0".repeat(w - n)),
        _ => pad(spec, format!("{sign}{body}")),
    }
}

/// `1234567` → `1,234,567` with the `,` flag.
fn group(spec: &Spec, int_digits: &str) -> String {
    if !spec.has(',') {
        return int_digits.to_string();
    }
    let mut out = String::new();
    for (i, c) in int_digits.chars().enumerate() {
        if i > 0 && (int_digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn float(spec: &Spec, x: f64) -> String {
    if !x.is_finite() {
        let s = if x.is_nan() { "NaN" } else { "Infinity" };
        return pad(spec, format!("{}{s}", if x < 0.0 { "-" } else { "" }));
    }
    let negative = x.is_sign_negative();
    let d = Decimal::of(x.abs());
    let p = spec.precision.unwrap_or(6);
    let body = match spec.conv {
        'f' => d.fixed(p, spec),
        'e' | 'E' => d.sci(p, spec.conv == 'E'),
        _ => d.general(p, spec),
    };
    number(spec, negative, body)
}

fn wide(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A non-negative double as its shortest decimal digits: value = 0.d1d2... × 10^point.
struct Decimal {
    digits: Vec<u8>,
    point: i64,
}

impl Decimal {
    fn of(x: f64) -> Decimal {
        if x == 0.0 {
            return Decimal {
                digits: vec![0],
                point: 1,
            };
        }
        // `{:e}` prints the shortest round-trip digits, like Java's Double.toString.
        let s = format!("{x:e}");
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let digits: Vec<u8> = mant
            .bytes()
            .filter(u8::is_ascii_digit)
            .map(|b| b - b'0')
            .collect();
        let exp: i64 = exp.parse().unwrap_or(0);
        Decimal {
            digits,
            point: exp + 1,
        }
    }

    /// Keeps `keep` leading digits, rounding HALF_UP; may carry into a new leading digit.
    fn round(&self, keep: i64) -> Decimal {
        let len = wide(self.digits.len());
        if keep >= len {
            return Decimal {
                digits: self.digits.clone(),
                point: self.point,
            };
        }
        let Ok(k) = usize::try_from(keep) else {
            return Decimal {
                digits: vec![0],
                point: self.point,
            };
        };
        let up = self.digits.get(k).is_some_and(|&d| d >= 5);
        let mut digits: Vec<u8> = self.digits.get(..k).unwrap_or(&[]).to_vec();
        let mut point = self.point;
        if up {
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, 1);
                    point += 1;
                    break;
                }
                i -= 1;
                match digits.get_mut(i) {
                    Some(d) if *d == 9 => *d = 0,
                    Some(d) => {
                        *d += 1;
                        break;
                    }
                    None => break,
                }
            }
        }
        if digits.is_empty() {
            digits.push(0);
        }
        Decimal { digits, point }
    }

    fn digit(&self, i: i64) -> char {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.digits.get(i))
            .map_or('0', |d| char::from(b'0' + d))
    }

    /// `%.pf`: fixed notation, `p` fraction digits.
    fn fixed(&self, p: usize, spec: &Spec) -> String {
        let r = self.round(self.point + wide(p));
        let int: String = if r.point <= 0 {
            "0".into()
        } else {
            (0..r.point).map(|i| r.digit(i)).collect()
        };
        let mut s = group(spec, &int);
        if p > 0 {
            s.push('.');
            s.extend((0..wide(p)).map(|i| r.digit(r.point + i)));
        }
        s
    }

    /// `%.pe`: one digit, `p` fraction digits, exponent with sign and at least two digits.
    fn sci(&self, p: usize, upper: bool) -> String {
        let zero = self.digits.iter().all(|&d| d == 0);
        let r = self.round(wide(p) + 1);
        let mut s = String::from(r.digit(0));
        if p > 0 {
            s.push('.');
            s.extend((1..=wide(p)).map(|i| r.digit(i)));
        }
        let exp = if zero { 0 } else { r.point - 1 };
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{s}{}{sign}{:02}", if upper { 'E' } else { 'e' }, exp.abs())
    }

    /// `%g`: Java picks fixed for 1e-4 <= x < 10^p after rounding, else scientific.
    fn general(&self, p: usize, spec: &Spec) -> String {
        let p = p.max(1);
        let r = self.round(wide(p));
        let zero = self.digits.iter().all(|&d| d == 0);
        let exp = r.point - 1;
        if zero || (-4..wide(p)).contains(&exp) {
            let frac = usize::try_from(wide(p) - 1 - exp).unwrap_or(0);
            self.fixed(frac, spec)
        } else {
            self.sci(p - 1, spec.conv == 'G')
        }
    }
}
