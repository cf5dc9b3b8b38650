//! Finding the program in an LLM's answer: exactly one fenced block tagged `clojure` (or `clj`).
//!
//! The answer is normalised first (CRLF to LF, zero-width characters removed, typographic
//! quotes made plain), because models and chat front-ends insert them and the reader would
//! otherwise fail on text that looks right. No block, or several, is a problem the LLM is told
//! about in the next message (it costs a turn): guessing which block was meant would run code
//! the model did not choose.

/// Why an answer has no single program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractError {
    /// No tagged block; `untagged` counts fenced blocks without a `clojure` tag.
    None {
        untagged: usize,
    },
    Several(usize),
    /// A tagged block whose fence is never closed.
    Unclosed,
}

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractError::None { untagged: 0 } => {
                f.write_str("your answer has no ```clojure code block")
            }
            ExtractError::None { untagged } => write!(
                f,
                "your answer has no ```clojure code block ({untagged} block(s) without the `clojure` tag)"
            ),
            ExtractError::Several(n) => write!(
                f,
                "your answer has {n} ```clojure code blocks; write exactly one program per answer"
            ),
            ExtractError::Unclosed => {
                f.write_str("your ```clojure code block is not closed with ```")
            }
        }
    }
}

/// Makes model output plain: LF line ends, no zero-width characters, ASCII quotes.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.replace("\r\n", "\n").chars() {
        match c {
            '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => {}
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => out.push('"'),
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => out.push('\''),
            '\r' => out.push('\n'),
            c => out.push(c),
        }
    }
    out
}

/// The one program in `answer`, normalised.
pub fn extract(answer: &str) -> Result<String, ExtractError> {
    let text = normalise(answer);
    let mut tagged: Vec<String> = Vec::new();
    let mut untagged = 0usize;
    let mut open: Option<(bool, Vec<&str>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match open.as_mut() {
            None => {
                if let Some(tag) = trimmed.strip_prefix("```") {
                    let tag = tag.trim().to_ascii_lowercase();
                    open = Some((matches!(tag.as_str(), "clojure" | "clj"), Vec::new()));
                }
            }
            Some((is_tagged, body)) => {
                if trimmed.trim_end() == "```" {
                    if *is_tagged {
                        tagged.push(body.join("\n"));
                    } else {
                        untagged += 1;
                    }
                    open = None;
                } else {
                    body.push(line);
                }
            }
        }
    }
    if let Some((true, _)) = open {
        return Err(ExtractError::Unclosed);
    }
    match tagged.len() {
        0 => Err(ExtractError::None { untagged }),
        1 => Ok(tagged.pop().unwrap_or_default()),
        n => Err(ExtractError::Several(n)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_tagged_block_is_the_program() {
        let a = "Let me look.\r\n```clojure\r\n(count data/xs)\r\n```\r\nDone.";
        assert_eq!(extract(a).unwrap(), "(count data/xs)");
        assert_eq!(extract("```clj\n(+ 1 2)\n```").unwrap(), "(+ 1 2)");
    }

    #[test]
    fn invisible_characters_and_smart_quotes_are_normalised() {
        let a = "```clojure\n(str \u{201C}a\u{201D}\u{200B} \u{2018}b)\n```";
        assert_eq!(extract(a).unwrap(), "(str \"a\" 'b)");
    }

    #[test]
    fn none_several_and_unclosed_are_errors() {
        assert_eq!(
            extract("no code here"),
            Err(ExtractError::None { untagged: 0 })
        );
        assert_eq!(
            extract("```\n(+ 1 2)\n```"),
            Err(ExtractError::None { untagged: 1 })
        );
        let two = "```clojure\n1\n```\n```clojure\n2\n```";
        assert_eq!(extract(two), Err(ExtractError::Several(2)));
        assert_eq!(extract("```clojure\n(+ 1"), Err(ExtractError::Unclosed));
        assert!(ExtractError::Several(2).to_string().contains("exactly one"));
    }
}
