//! A small, bounded reader for schema data written as EDN-ish text (`[:map [:id :int]]`) or as
//! JSON arrays (`["map", ["id", "int"]]`), producing a position-annotated tree.
//!
//! It reads only what schemas need: vectors, maps, keywords, strings, numbers, `nil`, `true`,
//! `false`; commas are whitespace, so JSON text reads too. Invariant: nesting is bounded by
//! [`MAX_SCHEMA_DEPTH`](super::MAX_SCHEMA_DEPTH) while reading (the reader recurses at most that
//! deep, twice the schema limit because map entries add a level), and every node carries the byte offset where it starts so errors can name a column.

use super::cursor::Cursor as Reader;
use super::{MAX_SCHEMA_DEPTH, SignatureError};

/// Data nesting allowed while reading: map entries add one level per schema level.
const MAX_DATA_DEPTH: usize = 2 * MAX_SCHEMA_DEPTH + 2;
use crate::value::{Map, Value};

/// One node of schema data with the byte offset where it starts (`usize::MAX` when unknown).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Edn {
    pub kind: EdnKind,
    pub pos: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EdnKind {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Keyword(String),
    Vector(Vec<Edn>),
    Map(Vec<(Edn, Edn)>),
}

/// Offset used for nodes that came from `serde_json` and have no text position.
pub(crate) const NO_POS: usize = usize::MAX;

impl Edn {
    /// The node as a plain value (used for `:enum` members and `:default`s).
    pub fn to_value(&self) -> Value {
        match &self.kind {
            EdnKind::Nil => Value::Nil,
            EdnKind::Bool(b) => Value::Bool(*b),
            EdnKind::Int(i) => Value::Int(*i),
            EdnKind::Float(f) => Value::Float(*f),
            EdnKind::Str(s) => Value::Str(s.clone()),
            EdnKind::Keyword(k) => Value::Keyword(k.clone()),
            EdnKind::Vector(xs) => Value::Vector(xs.iter().map(Edn::to_value).collect()),
            EdnKind::Map(kvs) => {
                let mut m = Map::with_capacity(kvs.len());
                for (k, v) in kvs {
                    m.insert(k.to_value(), v.to_value());
                }
                Value::Map(Box::new(m))
            }
        }
    }

    /// Converts parsed JSON, bounded by the schema depth limit.
    pub fn from_json(j: &serde_json::Value) -> Result<Edn, SignatureError> {
        from_json_at(j, 0)
    }
}

fn from_json_at(j: &serde_json::Value, depth: usize) -> Result<Edn, SignatureError> {
    use serde_json::Value as J;
    if depth > MAX_DATA_DEPTH {
        return Err(SignatureError::TooDeep { line: 0, column: 0 });
    }
    let kind = match j {
        J::Null => EdnKind::Nil,
        J::Bool(b) => EdnKind::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => EdnKind::Int(i),
            None => EdnKind::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => EdnKind::Str(s.clone()),
        J::Array(xs) => EdnKind::Vector(
            xs.iter()
                .map(|x| from_json_at(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        J::Object(o) => {
            let mut kvs = Vec::with_capacity(o.len());
            for (k, v) in o {
                let key = Edn {
                    kind: EdnKind::Str(k.clone()),
                    pos: NO_POS,
                };
                kvs.push((key, from_json_at(v, depth + 1)?));
            }
            EdnKind::Map(kvs)
        }
    };
    Ok(Edn { kind, pos: NO_POS })
}

/// Reads one form of `text` starting at byte offset `start`; returns it and the offset after it.
pub(crate) fn read_at(text: &str, start: usize) -> Result<(Edn, usize), SignatureError> {
    let mut r = Reader { text, pos: start };
    let form = r.form(0)?;
    Ok((form, r.pos))
}

/// Characters allowed in keywords and bare words.
pub(crate) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(
            c,
            '-' | '_' | '.' | '/' | '?' | '!' | '*' | '+' | '<' | '>' | '='
        )
}

impl Reader<'_> {
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn form(&mut self, depth: usize) -> Result<Edn, SignatureError> {
        self.skip_ws();
        let pos = self.pos;
        if depth > MAX_DATA_DEPTH {
            let (line, column) = super::line_col(self.text, pos);
            return Err(SignatureError::TooDeep { line, column });
        }
        let kind = match self.peek() {
            None => return Err(self.err(pos, "expected a schema form, found the end of the text")),
            Some('[') => {
                self.bump();
                EdnKind::Vector(self.seq(']', depth)?)
            }
            Some('{') => {
                self.bump();
                self.map(depth)?
            }
            Some('"') => EdnKind::Str(self.string()?),
            Some(':') => {
                self.bump();
                let word = self.word();
                if word.is_empty() {
                    return Err(self.err(pos, "expected a keyword name after `:`"));
                }
                EdnKind::Keyword(word.to_string())
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => self.number(pos)?,
            Some(c) if is_word_char(c) => match self.word().to_string().as_str() {
                "nil" | "null" => EdnKind::Nil,
                "true" => EdnKind::Bool(true),
                "false" => EdnKind::Bool(false),
                w => return Err(self.err(pos, format!("unexpected symbol `{w}` in schema data"))),
            },
            Some(c) => {
                return Err(self.err(pos, format!("unexpected character `{c}` in schema data")));
            }
        };
        Ok(Edn { kind, pos })
    }

    fn seq(&mut self, close: char, depth: usize) -> Result<Vec<Edn>, SignatureError> {
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(c) if c == close => {
                    self.bump();
                    return Ok(items);
                }
                None => {
                    return Err(self.err(self.pos, format!("expected `{close}` before the end")));
                }
                Some(']' | '}') => return Err(self.err(self.pos, format!("expected `{close}`"))),
                Some(_) => items.push(self.form(depth + 1)?),
            }
        }
    }

    fn map(&mut self, depth: usize) -> Result<EdnKind, SignatureError> {
        let start = self.pos;
        let items = self.seq('}', depth)?;
        if items.len() % 2 != 0 {
            return Err(self.err(start, "map literal needs an even number of forms"));
        }
        let mut kvs = Vec::with_capacity(items.len() / 2);
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            kvs.push((k, v));
        }
        Ok(EdnKind::Map(kvs))
    }

    fn word(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(is_word_char) {
            self.bump();
        }
        self.text.get(start..self.pos).unwrap_or("")
    }

    fn string(&mut self) -> Result<String, SignatureError> {
        let start = self.pos;
        self.bump();
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err(self.err(start, "unterminated string")),
                Some('"') => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some(c @ ('"' | '\\' | '/')) => out.push(c),
                    _ => return Err(self.err(self.pos, "unsupported escape in string")),
                },
                Some(c) => out.push(c),
            }
        }
    }

    fn number(&mut self, pos: usize) -> Result<EdnKind, SignatureError> {
        let start = self.pos;
        self.bump();
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        {
            self.bump();
        }
        let lit = self.text.get(start..self.pos).unwrap_or("");
        if let Ok(i) = lit.parse::<i64>() {
            return Ok(EdnKind::Int(i));
        }
        match lit.parse::<f64>() {
            Ok(f) if f.is_finite() && lit.chars().any(|c| c.is_ascii_digit()) => {
                Ok(EdnKind::Float(f))
            }
            _ => Err(self.err(pos, format!("invalid number `{lit}`"))),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn read(s: &str) -> Result<Edn, SignatureError> {
        read_at(s, 0).map(|(e, _)| e)
    }

    #[test]
    fn reads_edn_and_json_spellings_alike() {
        let a = read(r#"[:map [:id :int] {:optional true} "x" -2 1.5 nil]"#)
            .unwrap()
            .to_value();
        assert_eq!(
            crate::value::pr_str(&a),
            r#"[:map [:id :int] {:optional true} "x" -2 1.5 nil]"#
        );
        let b = read(r#"["map", ["id", "int"]]"#).unwrap().to_value();
        assert_eq!(crate::value::pr_str(&b), r#"["map" ["id" "int"]]"#);
    }

    #[test]
    fn reports_columns_and_bounds_depth() {
        let e = read("[:map [:id :int}").unwrap_err().to_string();
        assert!(e.contains("column 16"), "{e}");
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(matches!(read(&deep), Err(SignatureError::TooDeep { .. })));
        let mut deep_json = serde_json::json!(1);
        for _ in 0..200 {
            deep_json = serde_json::json!([deep_json]);
        }
        assert!(matches!(
            Edn::from_json(&deep_json),
            Err(SignatureError::TooDeep { .. })
        ));
    }

    #[test]
    fn rejects_junk() {
        assert!(
            read("[:a foo]")
                .unwrap_err()
                .to_string()
                .contains("unexpected symbol `foo`")
        );
        assert!(
            read("\"abc")
                .unwrap_err()
                .to_string()
                .contains("unterminated string")
        );
        assert!(
            read("{:a}")
                .unwrap_err()
                .to_string()
                .contains("even number")
        );
        assert!(
            read("1.2.3")
                .unwrap_err()
                .to_string()
                .contains("invalid number")
        );
    }
}
