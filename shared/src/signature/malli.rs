//! The Malli-lite schema type and its data-form parser.
//!
//! [`Schema`] is a closed subset of Malli. Map fields precompute the keys they are looked up by
//! (keyword, string, and the other hyphen/underscore spelling) so validation never allocates a
//! key. Invariant: every schema built by this module is at most [`MAX_SCHEMA_DEPTH`] deep and has
//! no two fields in one map whose names are equal after folding `-` to `_`.

use super::edn::{Edn, EdnKind};
use super::{MAX_SCHEMA_DEPTH, SignatureError};
use crate::value::Value;

/// A Malli-lite schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    Any,
    Nil,
    String,
    Int,
    Double,
    Boolean,
    Keyword,
    /// ISO-8601 date-time text with an offset (`2024-05-01T10:00:00Z`); an extension to Malli.
    Datetime,
    /// `[:vector T]`: a vector only.
    Vector(Box<Schema>),
    /// `[:sequential T]`: a vector or a list (what shorthand `[T]` means).
    Sequential(Box<Schema>),
    Set(Box<Schema>),
    Map(MapSchema),
    MapOf(Box<Schema>, Box<Schema>),
    Tuple(Vec<Schema>),
    Enum(Vec<Value>),
    Or(Vec<Schema>),
    And(Vec<Schema>),
    Maybe(Box<Schema>),
    /// `[:> n]`, `[:>= n]`, `[:< n]`, `[:<= n]`; the bound is an `Int` or a finite `Float`.
    Compare(CmpOp, Value),
    /// `[:re "pattern"]`: a string containing a match (Malli's `re-find`).
    Re(Pattern),
}

/// A numeric refinement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Gt,
    Ge,
    Lt,
    Le,
}

impl CmpOp {
    /// The Malli spelling (`">="`).
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
        }
    }
}

/// A compiled `:re` pattern; equal when the source text is equal.
#[derive(Debug, Clone)]
pub struct Pattern(regex::Regex);

impl Pattern {
    /// Compiles a pattern with a size limit, so a hostile pattern cannot take unbounded memory.
    pub fn new(source: &str) -> Result<Pattern, regex::Error> {
        regex::RegexBuilder::new(source)
            .size_limit(1 << 20)
            .build()
            .map(Pattern)
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.0.is_match(s)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.as_str() == other.as_str()
    }
}

/// `[:map ...]`: named fields; `closed` rejects keys the schema does not name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MapSchema {
    pub fields: Vec<Field>,
    pub closed: bool,
}

/// One map field, or one input of a signature.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub schema: Schema,
    /// The key may be absent (shorthand `?`, Malli `{:optional true}`, JSON Schema non-required).
    pub optional: bool,
    /// Filled in on inputs when the key is absent.
    pub default: Option<Value>,
    /// The name starts with `_`: validated as usual, left out of LLM-visible text.
    pub hidden: bool,
    pub(crate) keys: FieldKeys,
}

/// Inputs of a signature are fields of the context map.
pub type Param = Field;

/// Precomputed lookup keys of a field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldKeys {
    pub keyword: Value,
    pub string: Value,
    /// The name with `-` and `_` swapped, when it has either (keyword, string).
    pub alt: Option<(Value, Value)>,
}

impl Field {
    /// A required field.
    pub fn new(name: impl Into<String>, schema: Schema) -> Field {
        let name = name.into();
        let swapped: Option<String> = (name.contains('-') || name.contains('_')).then(|| {
            name.chars()
                .map(|c| match c {
                    '-' => '_',
                    '_' => '-',
                    c => c,
                })
                .collect()
        });
        let keys = FieldKeys {
            keyword: Value::Keyword(name.clone()),
            string: Value::Str(name.clone()),
            alt: swapped.map(|s| (Value::Keyword(s.clone()), Value::Str(s))),
        };
        let hidden = name.starts_with('_');
        Field {
            name,
            schema,
            optional: false,
            default: None,
            hidden,
            keys,
        }
    }

    /// Marks the field optional.
    pub fn optional(mut self) -> Field {
        self.optional = true;
        self
    }

    /// Gives the field a default (which also makes it optional, as in Malli).
    pub fn with_default(mut self, value: Value) -> Field {
        self.default = Some(value);
        self.optional = true;
        self
    }
}

/// The name with hyphens folded to underscores: two spellings match when these are equal.
pub(crate) fn fold_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Checks that no two fields share a name up to `-`/`_`; returns the first duplicate.
pub(crate) fn duplicate_field(fields: &[Field]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    fields
        .iter()
        .find(|f| !seen.insert(fold_name(&f.name)))
        .map(|f| f.name.as_str())
}

impl Schema {
    /// Nesting depth (a primitive is 1); iterative, so safe on schemas built in code.
    pub fn depth(&self) -> usize {
        let mut max = 0;
        let mut stack = vec![(self, 1usize)];
        while let Some((s, d)) = stack.pop() {
            max = max.max(d);
            for child in s.children() {
                stack.push((child, d + 1));
            }
        }
        max
    }

    /// Direct child schemas.
    pub fn children(&self) -> Vec<&Schema> {
        match self {
            Schema::Vector(t) | Schema::Sequential(t) | Schema::Set(t) | Schema::Maybe(t) => {
                vec![t]
            }
            Schema::MapOf(k, v) => vec![k, v],
            Schema::Map(m) => m.fields.iter().map(|f| &f.schema).collect(),
            Schema::Tuple(xs) | Schema::Or(xs) | Schema::And(xs) => xs.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// Parses Malli-lite data written as EDN text (`[:map [:id :int]]`) or JSON text.
    pub fn parse_data(text: &str) -> Result<Schema, SignatureError> {
        let (edn, end) = super::edn::read_at(text, 0)?;
        super::parse::expect_end(text, end)?;
        from_edn(&edn, text, 1)
    }

    /// Parses Malli-lite data given as JSON arrays (`["map", ["id", "int"]]`).
    pub fn from_json_data(json: &serde_json::Value) -> Result<Schema, SignatureError> {
        from_edn(&Edn::from_json(json)?, "", 1)
    }
}

/// Malli operators that take arguments and are supported.
const COMPOSITE_OPS: &[&str] = &[
    "vector",
    "sequential",
    "set",
    "map",
    "map-of",
    "tuple",
    "enum",
    "or",
    "and",
    "maybe",
    "cat",
    "=>",
    ">",
    ">=",
    "<",
    "<=",
    "re",
];

/// Malli operators that are recognised but deliberately not supported.
const UNSUPPORTED_OPS: &[&str] = &[
    "ref",
    "schema",
    "multi",
    "orn",
    "catn",
    "altn",
    "not",
    "fn",
    "merge",
    "union",
    "select-keys",
    "function",
    "repeat",
    "*",
    "+",
    "?",
    "=",
    "not=",
    "string?",
    "qualified-keyword",
    "uuid",
];

/// Whether `word` names a Malli operator (so `[:word ...]` in shorthand is data form).
pub(crate) fn is_malli_op(word: &str) -> bool {
    COMPOSITE_OPS.contains(&word) || UNSUPPORTED_OPS.contains(&word)
}

fn primitive(name: &str) -> Option<Schema> {
    Some(match name {
        "any" => Schema::Any,
        "nil" => Schema::Nil,
        "string" => Schema::String,
        "int" => Schema::Int,
        "double" | "float" => Schema::Double,
        "boolean" => Schema::Boolean,
        "keyword" => Schema::Keyword,
        "datetime" => Schema::Datetime,
        "map" => Schema::Map(MapSchema::default()),
        _ => return None,
    })
}

fn err(text: &str, node: &Edn, message: impl Into<String>) -> SignatureError {
    SignatureError::at(text, node.pos, message, None)
}

/// A type name: a keyword, or a string in JSON-array data.
fn op_name(e: &Edn) -> Option<&str> {
    match &e.kind {
        EdnKind::Keyword(k) | EdnKind::Str(k) => Some(k),
        _ => None,
    }
}

/// Converts schema data to a schema; `depth` is the depth of this node (1 at the top).
pub(crate) fn from_edn(e: &Edn, text: &str, depth: usize) -> Result<Schema, SignatureError> {
    if depth > MAX_SCHEMA_DEPTH {
        let (line, column) = super::line_col(text, e.pos);
        return Err(SignatureError::TooDeep { line, column });
    }
    if let Some(name) = op_name(e) {
        return named(e, name, text);
    }
    let EdnKind::Vector(items) = &e.kind else {
        return Err(err(text, e, "expected a schema such as :int or [:map ...]"));
    };
    let Some((head, rest)) = items.split_first() else {
        return Err(err(text, e, "expected a schema, found an empty vector"));
    };
    let Some(op) = op_name(head) else {
        return Err(err(
            text,
            head,
            "expected a schema name such as :map or :vector",
        ));
    };
    let (props, args) = split_props(rest);
    compound(e, op, props, args, text, depth)
}

fn named(e: &Edn, name: &str, text: &str) -> Result<Schema, SignatureError> {
    if let Some(s) = primitive(name) {
        return Ok(s);
    }
    if UNSUPPORTED_OPS.contains(&name) || name == "cat" || name == "=>" {
        return Err(unsupported(text, e, name));
    }
    if COMPOSITE_OPS.contains(&name) {
        return Err(err(
            text,
            e,
            format!("`:{name}` needs arguments: [:{name} ...]"),
        ));
    }
    let hint = name
        .strip_suffix('?')
        .filter(|b| primitive(b).is_some())
        .map(|b| format!("the `?` suffix is shorthand; in data form write [:maybe :{b}]"));
    Err(SignatureError::at(
        text,
        e.pos,
        format!("unknown schema `:{name}`"),
        hint,
    ))
}

fn unsupported(text: &str, e: &Edn, name: &str) -> SignatureError {
    let message = if name == "cat" || name == "=>" {
        format!("`:{name}` is only allowed at the top of a signature: [:=> [:cat ...] T]")
    } else {
        format!(
            "unsupported Malli schema `:{name}` (refs, registries and multi-schemas are not supported)"
        )
    };
    err(text, e, message)
}

/// Splits an optional leading properties map off a schema's arguments.
fn split_props(rest: &[Edn]) -> (&[(Edn, Edn)], &[Edn]) {
    match rest.split_first() {
        Some((
            Edn {
                kind: EdnKind::Map(kvs),
                ..
            },
            args,
        )) => (kvs, args),
        _ => (&[], rest),
    }
}

/// Reads a properties map, allowing only `allowed` keys (plus documentation keys, ignored).
fn props<'a>(
    text: &str,
    kvs: &'a [(Edn, Edn)],
    allowed: &[&str],
) -> Result<Vec<(&'a str, &'a Edn)>, SignatureError> {
    let mut out = Vec::new();
    for (k, v) in kvs {
        let Some(name) = op_name(k) else {
            return Err(err(text, k, "property names must be keywords"));
        };
        if allowed.contains(&name) {
            out.push((name, v));
        } else if !matches!(name, "description" | "title") {
            return Err(err(text, k, format!("unsupported property `:{name}`")));
        }
    }
    Ok(out)
}

fn one<'a>(text: &str, e: &Edn, op: &str, args: &'a [Edn]) -> Result<&'a Edn, SignatureError> {
    match args {
        [x] => Ok(x),
        _ => Err(err(
            text,
            e,
            format!("[:{op} ...] takes exactly one argument, got {}", args.len()),
        )),
    }
}

fn compound(
    e: &Edn,
    op: &str,
    kvs: &[(Edn, Edn)],
    args: &[Edn],
    text: &str,
    depth: usize,
) -> Result<Schema, SignatureError> {
    let child = |x: &Edn| from_edn(x, text, depth + 1).map(Box::new);
    let all = |xs: &[Edn]| -> Result<Vec<Schema>, SignatureError> {
        xs.iter().map(|x| from_edn(x, text, depth + 1)).collect()
    };
    if UNSUPPORTED_OPS.contains(&op) || op == "cat" || op == "=>" {
        return Err(unsupported(text, e, op));
    }
    if op == "map" {
        return map_schema(e, kvs, args, text, depth);
    }
    props(text, kvs, &[])?;
    let nonempty = |what: &str| {
        if args.is_empty() {
            Err(err(
                text,
                e,
                format!("[:{op} ...] needs at least one {what}"),
            ))
        } else {
            Ok(())
        }
    };
    Ok(match op {
        "vector" => Schema::Vector(child(one(text, e, op, args)?)?),
        "sequential" => Schema::Sequential(child(one(text, e, op, args)?)?),
        "set" => Schema::Set(child(one(text, e, op, args)?)?),
        "maybe" => Schema::Maybe(child(one(text, e, op, args)?)?),
        "map-of" => match args {
            [k, v] => Schema::MapOf(child(k)?, child(v)?),
            _ => return Err(err(text, e, "[:map-of K V] takes a key and a value schema")),
        },
        "tuple" => Schema::Tuple(all(args)?),
        "or" => {
            nonempty("schema")?;
            Schema::Or(all(args)?)
        }
        "and" => {
            nonempty("schema")?;
            Schema::And(all(args)?)
        }
        "enum" => {
            nonempty("value")?;
            Schema::Enum(args.iter().map(Edn::to_value).collect())
        }
        ">" | ">=" | "<" | "<=" => compare(e, op, args, text)?,
        "re" => match &one(text, e, op, args)?.kind {
            EdnKind::Str(src) => Schema::Re(
                Pattern::new(src).map_err(|x| err(text, e, format!("invalid :re pattern: {x}")))?,
            ),
            _ => return Err(err(text, e, "[:re ...] takes a pattern string")),
        },
        name if args.is_empty() => named(e, name, text)?,
        name if primitive(name).is_some() => {
            return Err(err(text, e, format!("`:{name}` takes no arguments")));
        }
        name => {
            return Err(named(e, name, text)
                .err()
                .unwrap_or_else(|| unsupported(text, e, name)));
        }
    })
}

fn compare(e: &Edn, op: &str, args: &[Edn], text: &str) -> Result<Schema, SignatureError> {
    let cmp = match op {
        ">" => CmpOp::Gt,
        ">=" => CmpOp::Ge,
        "<" => CmpOp::Lt,
        _ => CmpOp::Le,
    };
    match &one(text, e, op, args)?.kind {
        EdnKind::Int(i) => Ok(Schema::Compare(cmp, Value::Int(*i))),
        EdnKind::Float(f) if f.is_finite() => Ok(Schema::Compare(cmp, Value::Float(*f))),
        _ => Err(err(text, e, format!("[:{op} n] takes a number"))),
    }
}

fn map_schema(
    e: &Edn,
    kvs: &[(Edn, Edn)],
    args: &[Edn],
    text: &str,
    depth: usize,
) -> Result<Schema, SignatureError> {
    let mut closed = false;
    for (name, v) in props(text, kvs, &["closed"])? {
        if name == "closed" {
            closed = matches!(v.kind, EdnKind::Bool(true));
        }
    }
    let fields = args
        .iter()
        .map(|x| map_entry(x, text, depth))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(dup) = duplicate_field(&fields) {
        return Err(err(
            text,
            e,
            format!(
                "field `{dup}` appears twice (hyphen and underscore spellings are the same field)"
            ),
        ));
    }
    Ok(Schema::Map(MapSchema { fields, closed }))
}

/// `[:k T]`, `[:k {:optional true} T]`, `[:k {:default v} T]`.
fn map_entry(x: &Edn, text: &str, depth: usize) -> Result<Field, SignatureError> {
    let EdnKind::Vector(parts) = &x.kind else {
        return Err(err(text, x, "expected a map entry [:key schema]"));
    };
    let Some((key, rest)) = parts.split_first() else {
        return Err(err(text, x, "expected a map entry [:key schema], found []"));
    };
    let Some(name) = op_name(key) else {
        return Err(err(text, key, "map entry keys must be keywords or strings"));
    };
    let (kvs, args) = split_props(rest);
    let [schema] = args else {
        return Err(err(
            text,
            x,
            format!("map entry `{name}` needs exactly one schema"),
        ));
    };
    let mut field = Field::new(name, from_edn(schema, text, depth + 1)?);
    for (prop, v) in props(text, kvs, &["optional", "default"])? {
        match prop {
            "optional" => field.optional = matches!(v.kind, EdnKind::Bool(true)),
            _ => field = field.with_default(v.to_value()),
        }
    }
    Ok(field)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn p(s: &str) -> Schema {
        Schema::parse_data(s).unwrap()
    }

    fn perr(s: &str) -> String {
        Schema::parse_data(s).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_supported_form() {
        assert_eq!(p(":double"), Schema::Double);
        assert_eq!(p("[:vector :int]"), Schema::Vector(Box::new(Schema::Int)));
        assert_eq!(p("[:set :keyword]"), Schema::Set(Box::new(Schema::Keyword)));
        assert_eq!(
            p("[:map-of :string :int]"),
            Schema::MapOf(Box::new(Schema::String), Box::new(Schema::Int))
        );
        assert_eq!(
            p("[:tuple :int :string]"),
            Schema::Tuple(vec![Schema::Int, Schema::String])
        );
        assert_eq!(
            p(r#"[:enum "a" :b 1]"#),
            Schema::Enum(vec!["a".into(), Value::keyword("b"), 1.into()])
        );
        assert_eq!(
            p("[:or :int :nil]"),
            Schema::Or(vec![Schema::Int, Schema::Nil])
        );
        assert_eq!(
            p("[:and :int [:> 0] [:<= 10.5]]"),
            Schema::And(vec![
                Schema::Int,
                Schema::Compare(CmpOp::Gt, 0.into()),
                Schema::Compare(CmpOp::Le, 10.5.into())
            ])
        );
        assert!(matches!(p(r#"[:re "^a+$"]"#), Schema::Re(r) if r.as_str() == "^a+$"));
        let Schema::Map(m) =
            p("[:map {:closed true} [:a :int] [:b {:optional true} :int] [:c {:default 3} :int]]")
        else {
            panic!("not a map")
        };
        assert!(m.closed);
        assert_eq!(m.fields[0], Field::new("a", Schema::Int));
        assert_eq!(m.fields[1], Field::new("b", Schema::Int).optional());
        assert_eq!(
            m.fields[2],
            Field::new("c", Schema::Int).with_default(3.into())
        );
    }

    #[test]
    fn json_arrays_are_the_same_data() {
        let j: serde_json::Value = serde_json::from_str(
            r#"["map", ["id", "int"], ["tags", {"optional": true}, ["vector", "string"]]]"#,
        )
        .unwrap();
        assert_eq!(
            Schema::from_json_data(&j).unwrap(),
            p("[:map [:id :int] [:tags {:optional true} [:vector :string]]]")
        );
    }

    #[test]
    fn unsupported_malli_is_a_clear_error() {
        assert!(perr("[:ref :user]").contains("unsupported Malli schema `:ref`"));
        assert!(perr("[:multi {:dispatch :type}]").contains("unsupported Malli schema `:multi`"));
        assert!(perr("[:map [:a :int?]]").contains("[:maybe :int]"));
        assert!(perr("[:cat :int]").contains("only allowed at the top"));
        assert!(perr("[:string {:min 1}]").contains("unsupported property `:min`"));
        assert!(perr("[:map [:user_id :int] [:user-id :int]]").contains("appears twice"));
        assert!(perr("[:vector :int :int]").contains("exactly one argument"));
        assert!(perr("[:re \"(\"]").contains("invalid :re pattern"));
        assert!(perr(":foo").contains("unknown schema `:foo`"));
    }

    #[test]
    fn depth_is_bounded() {
        let ok = format!("{}:int{}", "[:vector ".repeat(63), "]".repeat(63));
        assert_eq!(p(&ok).depth(), 64);
        let deep = format!("{}:int{}", "[:vector ".repeat(64), "]".repeat(64));
        assert!(matches!(
            Schema::parse_data(&deep),
            Err(SignatureError::TooDeep { .. })
        ));
    }
}
