//! Literal tokens: strings, characters, numbers, keywords and symbols.

use super::{FormKind, ParseError, Reader};
use crate::value::Text;

impl Reader {
    /// Reads a `"..."` string (the opening quote is next); also used for `#"regex"` bodies,
    /// where escapes other than `\"` are kept as written for the regex engine.
    pub(crate) fn read_string(&mut self) -> Result<String, ParseError> {
        let pos = self.pos();
        let regex = self.i > 0 && self.chars.get(self.i - 1) == Some(&'#');
        self.bump();
        let mut s = String::new();
        loop {
            let Some(c) = self.bump() else {
                return Err(self.err(pos, "string is never closed", Some("add the closing `\"`")));
            };
            match c {
                '"' => return Ok(s),
                '\\' if regex => {
                    let e = self
                        .bump()
                        .ok_or_else(|| self.err(pos, "string is never closed", None))?;
                    if e != '"' {
                        s.push('\\');
                    }
                    s.push(e);
                }
                '\\' => s.push(self.read_escape(pos)?),
                c => s.push(c),
            }
        }
    }

    fn read_escape(&mut self, pos: crate::error::Pos) -> Result<char, ParseError> {
        let at = self.pos();
        let Some(e) = self.bump() else {
            return Err(self.err(pos, "string is never closed", None));
        };
        Ok(match e {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'b' => '\u{8}',
            'f' => '\u{c}',
            '"' => '"',
            '\\' => '\\',
            '0' => '\0',
            'u' => {
                let hex: String = (0..4).filter_map(|_| self.bump()).collect();
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| {
                        self.err(
                            at,
                            format!("bad unicode escape \\u{hex}"),
                            Some("use four hex digits, e.g. \\u00e9"),
                        )
                    })?
            }
            other => {
                return Err(self.err(
                    at,
                    format!("unsupported escape \\{other}"),
                    Some("use \\n \\t \\r \\\" \\\\ or \\uXXXX"),
                ));
            }
        })
    }

    /// Reads a character literal: `\a`, `\newline`, `\space`, `\tab`, `\uXXXX`.
    pub(crate) fn read_char(&mut self) -> Result<char, ParseError> {
        let pos = self.pos();
        self.bump();
        let Some(first) = self.bump() else {
            return Err(self.err(pos, "character literal is missing its character", None));
        };
        let mut name = String::from(first);
        while let Some(c) = self.peek() {
            if c.is_alphanumeric() {
                name.push(c);
                self.bump();
            } else {
                break;
            }
        }
        if name.chars().count() == 1 {
            return Ok(first);
        }
        let named = match name.as_str() {
            "newline" => Some('\n'),
            "space" => Some(' '),
            "tab" => Some('\t'),
            "return" => Some('\r'),
            "backspace" => Some('\u{8}'),
            "formfeed" => Some('\u{c}'),
            _ => None,
        };
        if let Some(c) = named {
            return Ok(c);
        }
        if let Some(hex) = name.strip_prefix('u')
            && let Some(c) = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
        {
            return Ok(c);
        }
        Err(self.err(
            pos,
            format!("unknown character literal \\{name}"),
            Some("use \\a, \\newline, \\space, \\tab or \\uXXXX"),
        ))
    }

    /// Numbers, keywords, symbols, `nil`, `true`, `false`.
    pub(crate) fn read_atom(&mut self) -> Result<FormKind, ParseError> {
        let pos = self.pos();
        let tok = self.take_token();
        if tok.is_empty() {
            let c = self.peek().unwrap_or(' ');
            self.bump();
            return Err(self.err(pos, format!("unexpected character `{c}`"), None));
        }
        let first = tok.chars().next().unwrap_or(' ');
        let signed_digit = (first == '-' || first == '+')
            && tok.chars().nth(1).is_some_and(|c| c.is_ascii_digit());
        if first.is_ascii_digit() || signed_digit {
            return self.parse_number(&tok, pos);
        }
        if let Some(k) = tok.strip_prefix(':') {
            let k = k.strip_prefix(':').unwrap_or(k);
            if k.is_empty() {
                return Err(self.err(pos, "empty keyword", Some("write a name after `:`")));
            }
            return Ok(FormKind::Keyword(self.intern(k)));
        }
        Ok(match tok.as_str() {
            "nil" => FormKind::Nil,
            "true" => FormKind::Bool(true),
            "false" => FormKind::Bool(false),
            _ => FormKind::Symbol(Text::from(tok.as_str())),
        })
    }

    /// `2r1010`, `36rZZ`, `-16rFF`: Clojure's radix integers (radix 2 to 36).
    fn radix_literal(&self, body: &str, pos: crate::error::Pos) -> Result<Option<i64>, ParseError> {
        let (neg, digits) = match body.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, body),
        };
        let Some((radix, value)) = digits.split_once(['r', 'R']) else {
            return Ok(None);
        };
        let Ok(radix) = radix.parse::<u32>() else {
            return Ok(None);
        };
        if !(2..=36).contains(&radix) {
            return Err(self.err(
                pos,
                format!("radix {radix} out of range"),
                Some("use a radix from 2 to 36, e.g. 2r1010"),
            ));
        }
        let v = i64::from_str_radix(value, radix)
            .map_err(|_| self.err(pos, format!("invalid number {body}"), None))?;
        Ok(Some(if neg { -v } else { v }))
    }

    fn parse_number(&self, tok: &str, pos: crate::error::Pos) -> Result<FormKind, ParseError> {
        if tok.ends_with('N') || tok.ends_with('M') {
            return Err(self.err(
                pos,
                format!("big number literal {tok} is not supported"),
                Some("numbers are 64-bit integers or doubles; drop the N/M suffix"),
            ));
        }
        if tok.contains('/')
            && tok.split('/').all(|p| {
                p.trim_start_matches(['-', '+'])
                    .chars()
                    .all(|c| c.is_ascii_digit())
            })
        {
            return Err(self.err(
                pos,
                format!("ratio literal {tok} is not supported"),
                Some("write a division, e.g. (/ 1 2), which gives a double"),
            ));
        }
        let body = tok.strip_prefix('+').unwrap_or(tok);
        let (sign, unsigned) = match body.strip_prefix('-') {
            Some(u) => (-1, u),
            None => (1, body),
        };
        if let Some(hex) = unsigned
            .strip_prefix("0x")
            .or_else(|| unsigned.strip_prefix("0X"))
        {
            return i64::from_str_radix(hex, 16)
                .map(|v| FormKind::Int(sign * v))
                .map_err(|_| self.err(pos, format!("bad hex number {tok}"), None));
        }
        if let Some(v) = self.radix_literal(body, pos)? {
            return Ok(FormKind::Int(v));
        }
        let is_float = body.contains(['.', 'e', 'E']);
        // Like Clojure (Java), a leading 0 makes an integer octal: 010 is 8 and 08 is an error.
        let digits = body.trim_start_matches('-');
        if !is_float && digits.len() > 1 && digits.starts_with('0') {
            let sign = if body.starts_with('-') { -1 } else { 1 };
            return i64::from_str_radix(digits, 8)
                .map(|n| FormKind::Int(sign * n))
                .map_err(|_| {
                    self.err(
                        pos,
                        format!("invalid number {tok}"),
                        Some("a leading 0 makes an octal number; drop the 0"),
                    )
                });
        }
        if !is_float {
            return body.parse::<i64>().map(FormKind::Int).map_err(|_| {
                if body
                    .trim_start_matches('-')
                    .chars()
                    .all(|c| c.is_ascii_digit())
                {
                    self.err(
                        pos,
                        format!("integer literal {tok} does not fit in 64 bits"),
                        Some("integers range from -9223372036854775808 to 9223372036854775807"),
                    )
                } else {
                    self.err(pos, format!("bad number {tok}"), None)
                }
            });
        }
        body.parse::<f64>()
            .map(FormKind::Float)
            .map_err(|_| self.err(pos, format!("bad number {tok}"), None))
    }
}
