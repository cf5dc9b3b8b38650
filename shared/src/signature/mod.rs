//! Signatures: the contract of a program, a tool or an agent, e.g.
//! `(user_id :int, limit :int) -> {name :string, orders [:map]}`.
//!
//! A signature is written in compact *shorthand* or in *Malli-lite* data form; both compile to one
//! [`Schema`] type. It validates what goes in (with coercion) and what comes out (without), is
//! rendered into prompts, and exports to JSON Schema.
//!
//! # Shorthand → Malli-lite
//!
//! | Shorthand                          | Malli-lite                                             |
//! |------------------------------------|--------------------------------------------------------|
//! | `:string`                          | `:string`                                              |
//! | `:int`                             | `:int`                                                 |
//! | `:float` (also `:double`)          | `:double`                                              |
//! | `:bool` (also `:boolean`)          | `:boolean`                                             |
//! | `:keyword`                         | `:keyword`                                             |
//! | `:any`                             | `:any`                                                 |
//! | `:nil`                             | `:nil`                                                 |
//! | `:map` (any map)                   | `:map` (= `[:map]`)                                    |
//! | `:datetime` (ISO-8601 with offset) | `:datetime` (an extension)                             |
//! | `[T]` (list of T)                  | `[:sequential T]`                                      |
//! | `{id :int, name :string}`          | `[:map [:id :int] [:name :string]]`                    |
//! | `{:id :int :email :string?}`       | `[:map [:id :int] [:email {:optional true} [:maybe :string]]]` |
//! | `T?` outside a map field           | `[:maybe T]`                                           |
//! | `(a :int, b [:string]) -> T`       | `[:=> [:cat [:map [:a :int] [:b [:sequential :string]]]] T]` |
//! | `() -> T`, or just `T`             | `[:=> [:cat] T]`                                       |
//! | `[:enum "a" "b"]` (any Malli data) | the same data                                          |
//!
//! Shorthand accepts Malli-lite data wherever a type goes: a `[` followed by a Malli operator
//! (`[:enum ...]`, `[:or ...]`, `[:map [:k T]]`, `["map", ...]`) is data form; `[:map]` alone
//! stays "list of maps". That is how [`Signature::render`] writes what shorthand cannot express.
//!
//! # Validation
//! Errors carry paths (`results[0].customer.id: expected int, got string "abc"`). Map fields are
//! found under keyword or string keys and in hyphen or underscore spelling; the checked value uses
//! the signature's spelling (keeping keyword-ness). Inputs are coerced with a warning per value;
//! outputs never are. See [`Mode`] for what each mode does. The `validate_*` methods return a
//! copy of the value; the `validate_*_owned` variants take the value and copy nothing when it
//! needs no change (validating 10,000 five-field maps is about 1.5 ms; copying them costs more).
//!
//! Invariant: schemas are at most [`MAX_SCHEMA_DEPTH`] deep; every parser, walk and renderer
//! here is bounded by that, so hostile text or data cannot exhaust the stack.

pub mod check;
mod coerce;
mod cursor;
mod edn;
mod json_schema;
mod malli;
mod owned;
mod parse;
mod render;
mod stream;
mod validate;

pub use malli::{CmpOp, Field, MapSchema, Param, Pattern, Schema};
pub use stream::CheckedEncoded;
pub use validate::MAX_ERRORS;

use crate::value::{Map, Value};
use render::Style;
use validate::{Opts, Walker};

/// Deepest schema nesting accepted anywhere.
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// Why a signature or schema could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SignatureError {
    /// Text that does not parse; `line` and `column` are 1-based (0 when the input was JSON).
    #[error("{}", fmt_parse(message, *line, *column, hint.as_deref()))]
    Parse {
        line: usize,
        column: usize,
        message: String,
        hint: Option<String>,
    },
    #[error("schema nested deeper than {MAX_SCHEMA_DEPTH} levels{}", fmt_at(*line, *column))]
    TooDeep { line: usize, column: usize },
    /// A JSON Schema outside the supported subset; `path` is a JSON pointer (`#/properties/a`).
    #[error("JSON Schema at {path}: {message}")]
    JsonSchema { path: String, message: String },
    #[error("unknown validation mode `{0}` (expected enabled, warn_only, disabled or strict)")]
    UnknownMode(String),
}

fn fmt_at(line: usize, column: usize) -> String {
    match (line, column) {
        (0, _) => String::new(),
        (1, c) => format!(" at column {c}"),
        (l, c) => format!(" at line {l}, column {c}"),
    }
}

fn fmt_parse(message: &str, line: usize, column: usize, hint: Option<&str>) -> String {
    let hint = hint.map(|h| format!("; hint: {h}")).unwrap_or_default();
    format!("{message}{}{hint}", fmt_at(line, column))
}

impl SignatureError {
    /// A parse error about byte offset `pos` of `text`.
    pub(crate) fn at(
        text: &str,
        pos: usize,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> SignatureError {
        let (line, column) = line_col(text, pos);
        SignatureError::Parse {
            line,
            column,
            message: message.into(),
            hint,
        }
    }
}

/// 1-based line and column (in characters) of byte offset `pos`; (0, 0) when unknown.
pub(crate) fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let Some(before) = text.get(..pos.min(text.len())) else {
        return (0, 0);
    };
    if pos == edn::NO_POS {
        return (0, 0);
    }
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// One validation failure: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// `results[0].customer.id`; empty for the value itself.
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// How strictly to validate. Crosses the wire (snake_case, as `as_str`) in `protocol::Execute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Fail on errors; extra map fields are allowed.
    #[default]
    Enabled,
    /// Report errors as warnings and carry on with the (coerced) value.
    WarnOnly,
    /// No checks, no coercion.
    Disabled,
    /// Like `Enabled`, and also reject undeclared map fields and require every declared input.
    Strict,
}

impl Mode {
    /// The name `FromStr` accepts (`"warn_only"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enabled => "enabled",
            Mode::WarnOnly => "warn_only",
            Mode::Disabled => "disabled",
            Mode::Strict => "strict",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = SignatureError;
    fn from_str(s: &str) -> Result<Mode, SignatureError> {
        match s {
            "enabled" => Ok(Mode::Enabled),
            "warn_only" => Ok(Mode::WarnOnly),
            "disabled" => Ok(Mode::Disabled),
            "strict" => Ok(Mode::Strict),
            other => Err(SignatureError::UnknownMode(other.to_string())),
        }
    }
}

/// A value that passed validation (or was let through by the mode), with what was noticed.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub value: Value,
    /// Coercions (`limit: coerced string "10" to int`) and, in `WarnOnly`, the errors.
    pub warnings: Vec<String>,
}

/// A parsed signature: named inputs and an output schema.
#[derive(Debug, Clone)]
pub struct Signature {
    params: Vec<Param>,
    output: Schema,
    text: String,
}

impl PartialEq for Signature {
    /// Signatures are equal when they accept the same things, however they were written.
    fn eq(&self, other: &Signature) -> bool {
        self.params == other.params && self.output == other.output
    }
}

/// Validates `value` against `schema`, returning every error (no coercion, extra keys allowed).
pub fn validate(schema: &Schema, value: &Value) -> Vec<ValidationError> {
    let mut w = Walker::new(Opts::default());
    w.check(schema, value, 1);
    w.into_errors().0
}

impl Signature {
    /// Parses shorthand or Malli-lite data form (`[:=> [:cat ...] T]`, or a bare schema = output only).
    pub fn parse(text: &str) -> Result<Signature, SignatureError> {
        let (params, output) = parse::parse_signature(text)?;
        Ok(Signature {
            params,
            output,
            text: text.trim().to_string(),
        })
    }

    /// Builds a signature from schemas; `text` becomes the rendered shorthand.
    pub fn new(params: Vec<Param>, output: Schema) -> Signature {
        let mut sig = Signature {
            params,
            output,
            text: String::new(),
        };
        sig.text = sig.render();
        sig
    }

    /// A signature from Malli-lite data given as JSON arrays (`["=>", ["cat"], "int"]` or a bare schema).
    pub fn from_malli_json(data: &serde_json::Value) -> Result<Signature, SignatureError> {
        let edn = edn::Edn::from_json(data)?;
        let is_fn = matches!(&edn.kind, edn::EdnKind::Vector(xs)
            if matches!(xs.first().map(|h| &h.kind), Some(edn::EdnKind::Str(s) | edn::EdnKind::Keyword(s)) if s == "=>"));
        let (params, output) = if is_fn {
            parse::function_from_edn(&edn, "")?
        } else {
            (Vec::new(), malli::from_edn(&edn, "", 1)?)
        };
        Ok(Signature::new(params, output))
    }

    /// A signature from JSON Schemas: `input` must be an object schema (its properties are the inputs).
    pub fn from_json_schema(
        input: &serde_json::Value,
        output: &serde_json::Value,
    ) -> Result<Signature, SignatureError> {
        let params = match input {
            serde_json::Value::Object(o) => match json_schema::import(input, "#", 1)? {
                Schema::Map(ms) => ms.fields,
                Schema::Any if o.get("type").is_none() && o.get("properties").is_none() => {
                    Vec::new()
                }
                _ => {
                    return Err(SignatureError::JsonSchema {
                        path: "#".into(),
                        message: "the input schema must be an object".into(),
                    });
                }
            },
            _ => {
                return Err(SignatureError::JsonSchema {
                    path: "#".into(),
                    message: "the input schema must be an object".into(),
                });
            }
        };
        let output = json_schema::import(output, "#", 1)?;
        Ok(Signature::new(params, output))
    }

    pub fn params(&self) -> &[Param] {
        &self.params
    }

    pub fn output(&self) -> &Schema {
        &self.output
    }

    /// The text the signature was parsed from (trimmed), or its rendering when built from data.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether validating a context under `mode` gives it back exactly as it is, with no error or
    /// warning, whatever it holds: checks disabled, or no declared inputs (nothing to check,
    /// coerce or require) outside strict mode (which refuses every undeclared field), for a
    /// context that is a map or nil (`map_or_nil`; anything else is an error). A caller may then
    /// skip the validation, and the tree of the context it needs (the runner imports such a
    /// context straight from its encoding).
    pub fn context_passes_unchanged(&self, mode: Mode, map_or_nil: bool) -> bool {
        mode == Mode::Disabled || (self.params.is_empty() && mode != Mode::Strict && map_or_nil)
    }

    /// Validates (and coerces) a context map against the inputs. `nil` counts as an empty map.
    pub fn validate_input(
        &self,
        context: &Value,
        mode: Mode,
    ) -> Result<Checked, Vec<ValidationError>> {
        if mode == Mode::Disabled {
            return Ok(Checked {
                value: context.clone(),
                warnings: Vec::new(),
            });
        }
        let (w, new) = self.check_input(context, mode);
        finish(w, || new.unwrap_or_else(|| context.clone()), mode)
    }

    /// [`validate_input`](Self::validate_input) taking the context by value: nothing is copied
    /// when the context needs no change.
    pub fn validate_input_owned(
        &self,
        context: Value,
        mode: Mode,
    ) -> Result<Checked, Vec<ValidationError>> {
        if mode == Mode::Disabled {
            return Ok(Checked {
                value: context,
                warnings: Vec::new(),
            });
        }
        let strict = mode == Mode::Strict;
        let mut w = Walker::new(Opts {
            coerce: true,
            strict,
        });
        let value = match context {
            Value::Map(m) => Value::Map(Box::new(w.fields_owned(
                &self.params,
                *m,
                strict,
                strict,
                1,
            ))),
            Value::Nil => {
                let m = w.fields_owned(&self.params, Map::new(), strict, strict, 1);
                if m.is_empty() {
                    Value::Nil
                } else {
                    Value::Map(Box::new(m))
                }
            }
            other => w.check_owned(&ANY_MAP, other, 1),
        };
        finish(w, || value, mode)
    }

    fn check_input(&self, context: &Value, mode: Mode) -> (Walker<'_>, Option<Value>) {
        let strict = mode == Mode::Strict;
        let mut w = Walker::new(Opts {
            coerce: true,
            strict,
        });
        let new = match context {
            Value::Map(m) => w
                .fields(&self.params, m, strict, strict, 1)
                .map(|x| Value::Map(Box::new(x))),
            Value::Nil => w
                .fields(&self.params, &Map::new(), strict, strict, 1)
                .map(|x| Value::Map(Box::new(x))),
            other => w.check(&ANY_MAP, other, 1),
        };
        (w, new)
    }

    /// Validates a result against the output schema. Never coerces; keys are respelled to the
    /// signature's spelling.
    pub fn validate_output(
        &self,
        value: &Value,
        mode: Mode,
    ) -> Result<Checked, Vec<ValidationError>> {
        if mode == Mode::Disabled {
            return Ok(Checked {
                value: value.clone(),
                warnings: Vec::new(),
            });
        }
        let (w, new) = self.check_output(value, mode);
        finish(w, || new.unwrap_or_else(|| value.clone()), mode)
    }

    /// [`validate_output`](Self::validate_output) taking the value by value: nothing is copied
    /// when it needs no change.
    pub fn validate_output_owned(
        &self,
        value: Value,
        mode: Mode,
    ) -> Result<Checked, Vec<ValidationError>> {
        if mode == Mode::Disabled {
            return Ok(Checked {
                value,
                warnings: Vec::new(),
            });
        }
        let mut w = Walker::new(Opts {
            coerce: false,
            strict: mode == Mode::Strict,
        });
        let value = w.check_owned(&self.output, value, 1);
        finish(w, || value, mode)
    }

    fn check_output(&self, value: &Value, mode: Mode) -> (Walker<'_>, Option<Value>) {
        let mut w = Walker::new(Opts {
            coerce: false,
            strict: mode == Mode::Strict,
        });
        let new = w.check(&self.output, value, 1);
        (w, new)
    }

    /// Compact shorthand (`(a :int) -> {n :int}`); the exact data form when the inputs need it.
    pub fn render(&self) -> String {
        let style = Style::default();
        match render::short_params(&self.params, style) {
            Some(params) => format!("{params} -> {}", render::shorthand(&self.output, style)),
            None => render::malli_function(&self.params, &self.output, style),
        }
    }

    /// One prompt line: `search(query :string, limit :int?) -> [{id :int}]  -- description`.
    /// Hidden (`_`) fields are left out.
    pub fn render_tool(&self, name: &str, description: Option<&str>) -> String {
        let style = Style { visible: true };
        let params = render::short_params(&self.params, style).unwrap_or_else(|| "()".to_string());
        let mut line = format!(
            "{name}{params} -> {}",
            render::shorthand(&self.output, style)
        );
        if let Some(d) = description.map(str::trim).filter(|d| !d.is_empty()) {
            line.push_str("  -- ");
            line.push_str(&d.replace('\n', " "));
        }
        line
    }

    /// `(input object schema, output schema)` as JSON Schema.
    pub fn to_json_schema(&self) -> (serde_json::Value, serde_json::Value) {
        (
            json_schema::export_object(&self.params, false, 1),
            json_schema::export(&self.output),
        )
    }
}

impl Schema {
    /// Compact shorthand of this schema (Malli data embedded where shorthand has no form).
    pub fn to_shorthand(&self) -> String {
        render::shorthand(self, Style::default())
    }

    /// Exact Malli-lite data text.
    pub fn to_malli(&self) -> String {
        render::malli(self, Style::default())
    }

    /// Parses a schema written in shorthand (or Malli data, which shorthand embeds).
    pub fn parse(text: &str) -> Result<Schema, SignatureError> {
        match Signature::parse(text)? {
            Signature { params, output, .. } if params.is_empty() => Ok(output),
            _ => Err(SignatureError::at(
                text,
                0,
                "expected a schema, found a function signature",
                None,
            )),
        }
    }

    /// JSON Schema of this schema.
    pub fn to_json_schema(&self) -> serde_json::Value {
        json_schema::export(self)
    }

    /// Imports the supported JSON Schema subset.
    pub fn from_json_schema(j: &serde_json::Value) -> Result<Schema, SignatureError> {
        json_schema::import(j, "#", 1)
    }
}

/// The schema a non-map context is checked against, for its error message.
static ANY_MAP: Schema = Schema::Map(MapSchema {
    fields: Vec::new(),
    closed: false,
});

fn finish(
    w: Walker<'_>,
    value: impl FnOnce() -> Value,
    mode: Mode,
) -> Result<Checked, Vec<ValidationError>> {
    finish_with(w, value, mode).map(|(value, warnings)| Checked { value, warnings })
}

/// A walk's outcome: its errors, or (none, or `WarnOnly`, which reports them as warnings)
/// `value()` with the warnings.
fn finish_with<T>(
    w: Walker<'_>,
    value: impl FnOnce() -> T,
    mode: Mode,
) -> Result<(T, Vec<String>), Vec<ValidationError>> {
    let (errors, mut warnings) = w.into_errors();
    if errors.is_empty() {
        return Ok((value(), warnings));
    }
    if mode == Mode::WarnOnly {
        for e in &errors {
            tracing::warn!(error = %e, "signature validation (warn_only)");
        }
        warnings.extend(errors.iter().map(ToString::to_string));
        return Ok((value(), warnings));
    }
    Err(errors)
}

#[cfg(test)]
mod tests;

impl Signature {
    /// The signature of a run whose context is what a previous step returned: its inputs are
    /// the fields of `previous`'s output map, and its output is `own`'s (or `:any`). So
    /// `step.return` and `step.signature` chain into the next run without restating types.
    /// A previous output that is not a map with fields gives no inputs (the context is any map).
    pub fn chain(previous: &Signature, own: Option<&Signature>) -> Signature {
        let params = match previous.output() {
            Schema::Map(m) => m.fields.clone(),
            _ => Vec::new(),
        };
        let output = own.map_or(Schema::Any, |s| s.output().clone());
        Signature::new(params, output)
    }
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    #[test]
    fn chained_signature_takes_inputs_from_the_previous_output() {
        let prev = Signature::parse("() -> {count :int, names [:string]}")
            .unwrap_or_else(|e| panic!("{e}"));
        let own = Signature::parse("{total :int}").unwrap_or_else(|e| panic!("{e}"));
        let chained = Signature::chain(&prev, Some(&own));
        assert_eq!(chained.params().len(), 2);
        assert!(
            chained
                .render()
                .starts_with("(count :int, names [:string]) -> "),
            "{}",
            chained.render()
        );
        let bad =
            Value::from_json(&serde_json::json!({"count": "x", "names": []})).unwrap_or_default();
        assert!(chained.validate_input(&bad, Mode::Enabled).is_err());
        // The rendered text parses back to the same signature, so it can travel as text.
        assert_eq!(Signature::parse(&chained.render()).ok(), Some(chained));
    }
}
