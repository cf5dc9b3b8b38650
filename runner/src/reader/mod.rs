//! The reader: program text → `Form`s with positions.
//!
//! Recursive descent over chars. Invariants: nesting depth is capped (`max_nesting`, so hostile
//! input cannot overflow the stack), the program size is checked before reading, and every error
//! carries line:column and a one-line hint. `#(...)` is expanded here into `(fn [%1 ...] ...)`.

mod form;
mod lit;

pub use form::{Form, FormKind};

use crate::error::Pos;
use crate::value::Text;

/// A reader error: where, what, and a hint for the author.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} at {pos}{}", hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
pub struct ParseError {
    pub message: String,
    pub pos: Pos,
    pub hint: Option<String>,
}

/// Reads every top-level form of `src`.
pub fn read_all(src: &str, max_bytes: u64, max_nesting: u32) -> Result<Vec<Form>, ParseError> {
    if src.len() as u64 > max_bytes {
        return Err(ParseError {
            message: format!(
                "program is {} bytes, over the limit of {max_bytes}",
                src.len()
            ),
            pos: Pos { line: 1, col: 1 },
            hint: Some("send less code; put data in the context instead".into()),
        });
    }
    let mut r = Reader {
        chars: src.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
        depth: 0,
        max_nesting,
        in_anon_fn: false,
        keywords: std::collections::HashMap::new(),
    };
    let mut forms = Vec::new();
    loop {
        r.skip_ws()?;
        if r.peek().is_none() {
            return Ok(forms);
        }
        if let Some(f) = r.read_form()? {
            forms.push(f);
        }
    }
}

pub(crate) struct Reader {
    pub(crate) chars: Vec<char>,
    pub(crate) i: usize,
    line: u32,
    col: u32,
    depth: u32,
    max_nesting: u32,
    in_anon_fn: bool,
    /// One `Rc` per distinct keyword, so keyword comparisons are usually a pointer check.
    keywords: std::collections::HashMap<String, Text>,
}

impl Reader {
    pub(crate) fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    /// The shared `Rc` of keyword `k`.
    pub(crate) fn intern(&mut self, k: &str) -> Text {
        if let Some(rc) = self.keywords.get(k) {
            return rc.clone();
        }
        let rc = Text::from(k);
        self.keywords.insert(k.to_string(), rc.clone());
        rc
    }

    pub(crate) fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }

    pub(crate) fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    pub(crate) fn err(
        &self,
        pos: Pos,
        message: impl Into<String>,
        hint: Option<&str>,
    ) -> ParseError {
        ParseError {
            message: message.into(),
            pos,
            hint: hint.map(str::to_string),
        }
    }

    /// Skips whitespace, commas and `;` comments.
    fn skip_ws(&mut self) -> Result<(), ParseError> {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == ',' {
                self.bump();
            } else if c == ';' {
                while let Some(c) = self.bump() {
                    if c == '\n' {
                        break;
                    }
                }
            } else {
                break;
            }
        }
        Ok(())
    }

    /// Reads one form; `None` for a `#_` discard that consumed a form.
    fn read_form(&mut self) -> Result<Option<Form>, ParseError> {
        let pos = self.pos();
        let Some(c) = self.peek() else {
            return Err(self.err(pos, "unexpected end of input", Some("a form is missing")));
        };
        let kind = match c {
            '(' | '[' | '{' => self.read_coll(c)?,
            ')' | ']' | '}' => {
                return Err(self.err(
                    pos,
                    format!("unexpected `{c}`"),
                    Some("unbalanced brackets: remove it or add the opening one"),
                ));
            }
            '"' => FormKind::Str(Text::from(self.read_string()?)),
            '\\' => FormKind::Char(self.read_char()?),
            '\'' => {
                self.bump();
                let inner = self.read_required(pos)?;
                FormKind::List(vec![Form::sym("quote", pos), inner])
            }
            '#' => return self.read_dispatch(pos),
            '@' => {
                return Err(self.err(
                    pos,
                    "`@` (deref) is not supported",
                    Some("there are no atoms or refs in PTC-Lisp"),
                ));
            }
            '`' | '~' => {
                return Err(self.err(
                    pos,
                    "syntax-quote is not supported",
                    Some("macros are not available"),
                ));
            }
            _ => self.read_atom()?,
        };
        Ok(Some(Form { kind, pos }))
    }

    /// Reads a form where one must follow (after `'`, `#'`, `#_`), skipping `#_` discards.
    /// A prefix nests what follows (`''x` is `(quote (quote x))`, `#_#_` recurses), so it counts
    /// against `max_nesting` like a bracket: a long run of prefixes cannot overflow the stack.
    fn read_required(&mut self, at: Pos) -> Result<Form, ParseError> {
        self.nested(at, |r| r.read_required_inner(at))
    }

    /// Runs `f` one nesting level deeper (or fails with the `max_nesting` error at `pos`), on a
    /// stack that `stacker` grows: `max_nesting` is policy data, not a promise about the stack
    /// of whichever thread reads.
    fn nested<T>(
        &mut self,
        pos: Pos,
        f: impl FnOnce(&mut Self) -> Result<T, ParseError>,
    ) -> Result<T, ParseError> {
        if self.depth >= self.max_nesting {
            return Err(self.err(
                pos,
                format!("nesting deeper than {} levels", self.max_nesting),
                Some("flatten the program or its data"),
            ));
        }
        self.depth += 1;
        let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || f(self));
        self.depth -= 1;
        r
    }

    fn read_required_inner(&mut self, at: Pos) -> Result<Form, ParseError> {
        loop {
            self.skip_ws()?;
            if self.peek().is_none() {
                return Err(self.err(
                    at,
                    "unexpected end of input",
                    Some("a form is missing after a prefix"),
                ));
            }
            if let Some(f) = self.read_form()? {
                return Ok(f);
            }
        }
    }

    fn read_coll(&mut self, open: char) -> Result<FormKind, ParseError> {
        let pos = self.pos();
        self.bump();
        let items = self.read_items(open, pos)?;
        Ok(match open {
            '(' => FormKind::List(items),
            '[' => FormKind::Vector(items),
            _ => {
                if items.len() % 2 != 0 {
                    return Err(self.err(
                        pos,
                        "map literal has an odd number of forms",
                        Some("every key needs a value"),
                    ));
                }
                self.check_unique_keys(&items)?;
                FormKind::Map(items)
            }
        })
    }

    /// Reads forms up to the closing bracket of `open`.
    fn read_items(&mut self, open: char, pos: Pos) -> Result<Vec<Form>, ParseError> {
        let close = match open {
            '(' => ')',
            '[' => ']',
            _ => '}',
        };
        self.nested(pos, |r| r.read_items_inner(open, close, pos))
    }

    fn read_items_inner(
        &mut self,
        open: char,
        close: char,
        pos: Pos,
    ) -> Result<Vec<Form>, ParseError> {
        let mut items = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => {
                    return Err(self.err(
                        pos,
                        format!("`{open}` is never closed"),
                        Some(&format!("add `{close}`")),
                    ));
                }
                Some(c) if c == close => {
                    self.bump();
                    break;
                }
                Some(c @ (')' | ']' | '}')) => {
                    return Err(self.err(
                        self.pos(),
                        format!("expected `{close}` but found `{c}`"),
                        Some(&format!("the `{open}` at {pos} is closed by `{close}`")),
                    ));
                }
                Some(_) => {
                    if let Some(f) = self.read_form()? {
                        items.push(f);
                    }
                }
            }
        }
        Ok(items)
    }

    /// A map literal may not repeat a key (as in Clojure's reader).
    fn check_unique_keys(&self, items: &[Form]) -> Result<(), ParseError> {
        let keys: Vec<&Form> = items.iter().step_by(2).collect();
        for (i, k) in keys.iter().enumerate() {
            if keys[..i].iter().any(|b| b.same_literal(k)) {
                let hint = Some("a map literal may not repeat a key");
                return Err(self.err(k.pos, "duplicate key in map literal", hint));
            }
        }
        Ok(())
    }

    fn read_dispatch(&mut self, pos: Pos) -> Result<Option<Form>, ParseError> {
        self.bump();
        let kind = match self.peek() {
            Some('{') => {
                self.bump();
                let items = self.read_items('{', pos)?;
                for (i, a) in items.iter().enumerate() {
                    if items[..i].iter().any(|b| b.same_literal(a)) {
                        return Err(self.err(
                            a.pos,
                            "duplicate element in set literal",
                            Some("a set literal may not repeat an element"),
                        ));
                    }
                }
                FormKind::Set(items)
            }
            Some('_') => {
                self.bump();
                self.read_required(pos)?;
                return Ok(None);
            }
            Some('"') => FormKind::Regex(Text::from(self.read_string()?)),
            Some('\'') => {
                self.bump();
                let inner = self.read_required(pos)?;
                FormKind::List(vec![Form::sym("var", pos), inner])
            }
            Some('(') => return self.read_anon_fn(pos).map(Some),
            Some('#') => {
                self.bump();
                let name: String = self.take_token();
                match name.as_str() {
                    "Inf" => FormKind::Float(f64::INFINITY),
                    "-Inf" => FormKind::Float(f64::NEG_INFINITY),
                    "NaN" => FormKind::Float(f64::NAN),
                    _ => {
                        return Err(self.err(
                            pos,
                            format!("unknown symbolic value ##{name}"),
                            Some("use ##Inf, ##-Inf or ##NaN"),
                        ));
                    }
                }
            }
            _ => {
                return Err(self.err(
                    pos,
                    "unsupported `#` dispatch",
                    Some("supported: #{...} #\"regex\" #(...) #_ #' ##Inf"),
                ));
            }
        };
        Ok(Some(Form { kind, pos }))
    }

    /// `#(+ % %2)` → `(fn [%1 %2] (+ %1 %2))`; `%&` becomes the rest parameter.
    fn read_anon_fn(&mut self, pos: Pos) -> Result<Form, ParseError> {
        if self.in_anon_fn {
            return Err(self.err(
                pos,
                "nested #() is not allowed",
                Some("use (fn [x] ...) for the inner function"),
            ));
        }
        self.in_anon_fn = true;
        self.bump();
        let body = self.read_items('(', pos);
        self.in_anon_fn = false;
        let mut body = body?;
        let (max, rest) = form::scan_anon_args(&mut body);
        let mut params: Vec<Form> = (1..=max)
            .map(|i| Form::sym(&format!("%{i}"), pos))
            .collect();
        if rest {
            params.push(Form::sym("&", pos));
            params.push(Form::sym("%&", pos));
        }
        let call = Form {
            kind: FormKind::List(body),
            pos,
        };
        Ok(Form {
            kind: FormKind::List(vec![
                Form::sym("fn", pos),
                Form {
                    kind: FormKind::Vector(params),
                    pos,
                },
                call,
            ]),
            pos,
        })
    }

    /// The characters of a symbol/number token.
    pub(crate) fn take_token(&mut self) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() || matches!(c, ',' | '(' | ')' | '[' | ']' | '{' | '}' | '"' | ';')
            {
                break;
            }
            s.push(c);
            self.bump();
        }
        s
    }
}

#[cfg(test)]
mod tests;
