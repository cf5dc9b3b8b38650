//! The shorthand parser: `(user_id :int, limit :int?) -> {name :string, orders [:map]}`.
//!
//! Recursive descent over the text with a byte cursor. Grammar (commas are whitespace):
//! `sig := '(' (name type)* ')' '->' type | type`; `type := base '?'?`;
//! `base := :prim | '[' type ']' | '{' (':'? name type)* '}' | malli-data`.
//! A `[` followed by a Malli operator (`[:enum ...]`, `[:map [:k T]]`, `["map", ...]`) is read as
//! Malli-lite data, so every schema can be written (and rendered) inside shorthand. `[:map]` stays
//! shorthand: a list of maps. Invariant: recursion is bounded by `MAX_SCHEMA_DEPTH`; every error
//! carries the byte offset it is about, turned into a line and column for the message.

use super::cursor::Cursor as Parser;
use super::edn::{self, is_word_char};
use super::malli::{self, Field, MapSchema, Schema, duplicate_field, is_malli_op};
use super::{MAX_SCHEMA_DEPTH, SignatureError};

/// Parsed signature parts: inputs and output.
pub(crate) type Parts = (Vec<Field>, Schema);

/// Parses a whole signature in shorthand or Malli-lite data form.
pub(crate) fn parse_signature(text: &str) -> Result<Parts, SignatureError> {
    let mut p = Parser { text, pos: 0 };
    p.skip_ws();
    if p.peek().is_none() {
        return Err(p.err(
            0,
            "empty signature: expected `(inputs) -> output` or an output type",
        ));
    }
    let parts = if p.peek() == Some('(') {
        let params = p.params()?;
        p.skip_ws();
        if !p.rest().starts_with("->") {
            return Err(p.err(p.pos, "expected `->` after the inputs"));
        }
        p.pos += 2;
        (params, p.ty(1)?.0)
    } else if p.data_op().as_deref() == Some("=>") {
        let (data, end) = edn::read_at(text, p.pos)?;
        p.pos = end;
        function_from_edn(&data, text)?
    } else {
        let (out, _) = p.ty(1)?;
        p.skip_ws();
        if p.rest().starts_with("->") {
            return Err(p.hint(
                p.pos,
                "inputs must be in parentheses",
                "write `(a :int, b :string) -> T`",
            ));
        }
        (Vec::new(), out)
    };
    expect_end(text, p.pos)?;
    Ok(parts)
}

/// Fails unless only whitespace follows `pos`.
pub(crate) fn expect_end(text: &str, pos: usize) -> Result<(), SignatureError> {
    let rest = text.get(pos..).unwrap_or("");
    let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
    match trimmed.chars().next() {
        None => Ok(()),
        Some(c) => {
            let at = pos + (rest.len() - trimmed.len());
            Err(SignatureError::at(
                text,
                at,
                format!("unexpected `{c}` after the end of the signature"),
                None,
            ))
        }
    }
}

/// `[:=> [:cat] T]` or `[:=> [:cat [:map ...]] T]`: the inputs are the fields of the one map.
pub(crate) fn function_from_edn(data: &edn::Edn, text: &str) -> Result<Parts, SignatureError> {
    use edn::EdnKind;
    let err = |pos, m: &str| SignatureError::at(text, pos, m, None);
    let EdnKind::Vector(items) = &data.kind else {
        return Err(err(data.pos, "expected [:=> [:cat ...] T]"));
    };
    let [_, cat, out] = items.as_slice() else {
        return Err(err(
            data.pos,
            "[:=> ...] takes an input [:cat ...] and an output schema",
        ));
    };
    let args = match &cat.kind {
        EdnKind::Vector(xs) if xs.first().is_some_and(|h| is_name(h, "cat")) => {
            xs.get(1..).unwrap_or(&[])
        }
        _ => return Err(err(cat.pos, "the inputs of [:=> ...] must be [:cat ...]")),
    };
    let params = match args {
        [] => Vec::new(),
        [m] => match malli::from_edn(m, text, 2)? {
            Schema::Map(MapSchema { fields, .. }) => fields,
            _ => {
                return Err(err(
                    m.pos,
                    "[:cat ...] takes one [:map ...] of named inputs",
                ));
            }
        },
        _ => {
            return Err(err(
                cat.pos,
                "[:cat ...] takes one [:map ...] of named inputs (positional inputs are not supported)",
            ));
        }
    };
    Ok((params, malli::from_edn(out, text, 1)?))
}

fn is_name(e: &edn::Edn, name: &str) -> bool {
    matches!(&e.kind, edn::EdnKind::Keyword(k) | edn::EdnKind::Str(k) if k == name)
}

/// Words that are not types, with the hint to give.
fn hint_for(word: &str) -> Option<&'static str> {
    Some(match word {
        "list" | "array" | "vector" | "seq" | "sequential" => {
            "for a list write [T], e.g. [:int] or [{id :int}]"
        }
        "object" | "dict" | "hash" | "record" | "struct" => {
            "for a map write {field :type, ...}, or :map for any map"
        }
        "number" | "integer" | "long" | "i64" => "use :int or :float",
        "str" | "text" => "use :string",
        "boolean" | "double" => return None,
        "null" | "none" => "use :nil, or a `?` suffix for an optional value",
        _ => return None,
    })
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn hint(&self, pos: usize, message: impl Into<String>, hint: &str) -> SignatureError {
        SignatureError::at(self.text, pos, message, Some(hint.to_string()))
    }

    /// Reads characters while `ok` holds; returns the word.
    fn take_while(&mut self, ok: impl Fn(char) -> bool) -> &str {
        let start = self.pos;
        while let Some(c) = self.peek().filter(|c| ok(*c)) {
            self.pos += c.len_utf8();
        }
        self.text.get(start..self.pos).unwrap_or("")
    }

    /// When the cursor is at `[` that opens Malli data, the operator name (`"enum"`, `"=>"`).
    fn data_op(&self) -> Option<String> {
        let rest = self.text.get(self.pos..)?.strip_prefix('[')?;
        let rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if let Some(quoted) = rest.strip_prefix('"') {
            // JSON-array data: `["map", ...]`, `["=>", ...]`.
            return Some(quoted.split('"').next().unwrap_or_default().to_string());
        }
        let after = rest.strip_prefix(':')?;
        let word: String = after
            .chars()
            .take_while(|c| is_word_char(*c) && *c != '?')
            .collect();
        let next = after
            .get(word.len()..)
            .unwrap_or("")
            .trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        // `[:map]` and `[:map?]` are shorthand lists of maps; `[:map [:k T]]` is data.
        let list_of_maps = word == "map" && (next.starts_with(']') || next.starts_with('?'));
        if next.starts_with('{') || (is_malli_op(&word) && !list_of_maps) {
            Some(word)
        } else {
            None
        }
    }

    fn params(&mut self) -> Result<Vec<Field>, SignatureError> {
        let open = self.pos;
        self.pos += 1;
        let fields = self.fields(')', 1)?;
        if let Some(dup) = duplicate_field(&fields) {
            return Err(self.err(open, format!("input `{dup}` appears twice")));
        }
        Ok(fields)
    }

    /// Reads `name type` pairs up to `close`.
    fn fields(&mut self, close: char, depth: usize) -> Result<Vec<Field>, SignatureError> {
        let mut fields = Vec::new();
        loop {
            self.skip_ws();
            let at = self.pos;
            match self.peek() {
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(fields);
                }
                None => return Err(self.err(at, format!("expected `{close}` before the end"))),
                Some(_) => {}
            }
            if self.peek() == Some(':') {
                self.pos += 1;
            }
            let name = self.take_while(is_word_char).to_string();
            if name.is_empty() {
                let c = self.peek().unwrap_or(' ');
                return Err(self.err(
                    self.pos,
                    format!("expected a field name or `{close}`, found `{c}`"),
                ));
            }
            if name == "->" {
                return Err(self.err(
                    self.pos - 2,
                    format!("expected `{close}` to close the inputs before `->`"),
                ));
            }
            self.skip_ws();
            if matches!(self.peek(), None | Some(',' | '}' | ')')) {
                return Err(self.hint(
                    self.pos,
                    format!("expected a type after `{name}`"),
                    "e.g. `name :string`",
                ));
            }
            let (schema, question) = self.ty(depth + 1)?;
            let field = Field::new(name, schema);
            fields.push(if question { field.optional() } else { field });
        }
    }

    /// Reads a type and its `?` suffix; returns the schema and whether `?` was present.
    fn ty(&mut self, depth: usize) -> Result<(Schema, bool), SignatureError> {
        self.skip_ws();
        let at = self.pos;
        if depth > MAX_SCHEMA_DEPTH {
            let (line, column) = super::line_col(self.text, at);
            return Err(SignatureError::TooDeep { line, column });
        }
        let base = match self.peek() {
            Some(':') => self.primitive()?,
            Some('[') if self.data_op().is_some() => {
                let (data, end) = edn::read_at(self.text, at)?;
                self.pos = end;
                malli::from_edn(&data, self.text, depth)?
            }
            Some('[') => self.list(depth)?,
            Some('{') => {
                self.pos += 1;
                let fields = self.fields('}', depth)?;
                if let Some(dup) = duplicate_field(&fields) {
                    return Err(self.err(at, format!("field `{dup}` appears twice (hyphen and underscore spellings are the same field)")));
                }
                Schema::Map(MapSchema {
                    fields,
                    closed: false,
                })
            }
            Some(c) if is_word_char(c) => {
                let word = self.take_while(is_word_char).to_string();
                let hint = match (word.as_str(), hint_for(&word)) {
                    ("->", _) => "a signature without inputs is `() -> T`, or just `T`".to_string(),
                    (_, Some(h)) => h.to_string(),
                    _ => format!("types start with a colon, e.g. `:{word}`"),
                };
                return Err(self.hint(at, format!("expected a type, found `{word}`"), &hint));
            }
            Some(c) => {
                return Err(self.err(
                    at,
                    format!("expected a type such as :int, [T] or {{field :type}}, found `{c}`"),
                ));
            }
            None => {
                return Err(self.err(
                    at,
                    "expected a type such as :int, [T] or {field :type}, found the end",
                ));
            }
        };
        if self.peek() == Some('?') {
            self.pos += 1;
            return Ok((Schema::Maybe(Box::new(base)), true));
        }
        Ok((base, false))
    }

    fn primitive(&mut self) -> Result<Schema, SignatureError> {
        let at = self.pos;
        self.pos += 1;
        let word = self.take_while(|c| is_word_char(c) && c != '?').to_string();
        Ok(match word.as_str() {
            "string" => Schema::String,
            "int" => Schema::Int,
            "float" | "double" => Schema::Double,
            "bool" | "boolean" => Schema::Boolean,
            "keyword" => Schema::Keyword,
            "any" => Schema::Any,
            "map" => Schema::Map(MapSchema::default()),
            "nil" => Schema::Nil,
            "datetime" => Schema::Datetime,
            "" => return Err(self.err(at, "expected a type name after `:`")),
            w => {
                let message = format!("unknown type `:{w}`");
                return Err(match hint_for(w) {
                    Some(h) => self.hint(at, message, h),
                    None => self.hint(at, message, "types are :string :int :float :bool :keyword :any :map :nil :datetime, [T] and {field :type}"),
                });
            }
        })
    }

    fn list(&mut self, depth: usize) -> Result<Schema, SignatureError> {
        let open = self.pos;
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(']') {
            return Err(self.hint(
                open,
                "a list type needs an element type",
                "write [:any] for a list of anything",
            ));
        }
        let (elem, _) = self.ty(depth + 1)?;
        self.skip_ws();
        match self.peek() {
            Some(']') => {
                self.pos += 1;
                Ok(Schema::Sequential(Box::new(elem)))
            }
            None => Err(self.err(self.pos, "expected `]` before the end")),
            Some(_) => Err(self.hint(
                self.pos,
                "a list type takes exactly one element type: [T]",
                "use [:tuple A B] for fixed positions",
            )),
        }
    }
}
