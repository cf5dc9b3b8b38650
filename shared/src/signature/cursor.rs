//! A position in a signature's text: the primitives both of its readers advance with (the
//! shorthand parser in `parse` and the EDN reader for Malli-lite in `edn`), written once.

use super::SignatureError;

/// The text being read and the byte offset reached.
pub(super) struct Cursor<'a> {
    pub text: &'a str,
    pub pos: usize,
}

impl Cursor<'_> {
    pub fn peek(&self) -> Option<char> {
        self.text.get(self.pos..).and_then(|s| s.chars().next())
    }

    /// Skips whitespace and commas (commas are whitespace in both notations).
    pub fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == ',' {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
    }

    pub fn err(&self, pos: usize, message: impl Into<String>) -> SignatureError {
        SignatureError::at(self.text, pos, message, None)
    }
}
