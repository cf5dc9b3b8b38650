//! The reader's output: forms with their source positions.

use crate::error::Pos;
use crate::value::Text;

/// A form and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    pub kind: FormKind,
    pub pos: Pos,
}

/// What a form is.
#[derive(Debug, Clone, PartialEq)]
pub enum FormKind {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Text),
    Char(char),
    Keyword(Text),
    Symbol(Text),
    List(Vec<Form>),
    Vector(Vec<Form>),
    /// Keys and values alternate.
    Map(Vec<Form>),
    Set(Vec<Form>),
    Regex(Text),
}

impl Form {
    pub fn sym(name: &str, pos: Pos) -> Form {
        Form {
            kind: FormKind::Symbol(Text::from(name)),
            pos,
        }
    }

    pub fn list(items: Vec<Form>, pos: Pos) -> Form {
        Form {
            kind: FormKind::List(items),
            pos,
        }
    }

    /// The symbol's name, if this is a symbol.
    pub fn as_sym(&self) -> Option<&str> {
        match &self.kind {
            FormKind::Symbol(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is the symbol `name`.
    pub fn is_sym(&self, name: &str) -> bool {
        self.as_sym() == Some(name)
    }

    /// Literal equality for duplicate detection in set literals (positions ignored).
    pub fn same_literal(&self, other: &Form) -> bool {
        match (&self.kind, &other.kind) {
            (FormKind::List(a), FormKind::List(b))
            | (FormKind::Vector(a), FormKind::Vector(b))
            | (FormKind::Map(a), FormKind::Map(b))
            | (FormKind::Set(a), FormKind::Set(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_literal(y))
            }
            (FormKind::Float(a), FormKind::Float(b)) => a == b,
            (a, b) => a == b,
        }
    }

    /// A short description for error messages: the symbol name or the kind.
    pub fn describe(&self) -> String {
        match &self.kind {
            FormKind::Symbol(s) => s.to_string(),
            FormKind::List(_) => "a list".into(),
            FormKind::Vector(_) => "a vector".into(),
            FormKind::Map(_) => "a map".into(),
            FormKind::Set(_) => "a set".into(),
            FormKind::Keyword(k) => format!(":{k}"),
            FormKind::Str(_) => "a string".into(),
            FormKind::Int(i) => i.to_string(),
            _ => "a literal".into(),
        }
    }
}

/// Renames `%` to `%1` in an anonymous fn body and returns (highest `%n`, whether `%&` is used).
pub(crate) fn scan_anon_args(forms: &mut [Form]) -> (usize, bool) {
    let mut max = 0;
    let mut rest = false;
    for f in forms {
        match &mut f.kind {
            FormKind::Symbol(s) => {
                if &**s == "%" {
                    *s = Text::from("%1");
                    max = max.max(1);
                } else if &**s == "%&" {
                    rest = true;
                } else if let Some(n) = s.strip_prefix('%').and_then(|d| d.parse::<usize>().ok()) {
                    max = max.max(n.min(20));
                }
            }
            FormKind::List(xs) | FormKind::Vector(xs) | FormKind::Map(xs) | FormKind::Set(xs) => {
                let (m, r) = scan_anon_args(xs);
                max = max.max(m);
                rest |= r;
            }
            _ => {}
        }
    }
    (max, rest)
}
