//! JSON Schema export (for MCP tool input and output schemas) and import of a subset.
//!
//! Export covers every schema (tuples as `prefixItems`, refinements as `minimum`/`pattern`...).
//! Import reads `type` (one or a list with `"null"`), `properties`, `required`, `items`, `enum`,
//! `additionalProperties` (`false` makes a closed map, a schema makes a map-of), `anyOf`/`oneOf`,
//! `format: date-time`, `const`, `nullable`, `minimum`/`maximum`/`exclusive*`/`pattern` (as
//! refinements) and property `default`s. Annotations and the length/size constraints are ignored
//! (so validation is looser, never stricter); anything else (`$ref`, `allOf`, ...) is a clear
//! error. Invariant: both walks stop at `MAX_SCHEMA_DEPTH`.

use super::malli::{CmpOp, Field, MapSchema, Pattern, Schema, duplicate_field};
use super::{MAX_SCHEMA_DEPTH, SignatureError};
use crate::value::Value;
use serde_json::{Map as JMap, Value as Json, json};

/// JSON Schema of a schema.
pub(crate) fn export(s: &Schema) -> Json {
    export_at(s, 1)
}

/// `{"type": "object", "properties": ..., "required": [...]}` for a list of fields.
pub(crate) fn export_object(fields: &[Field], closed: bool, depth: usize) -> Json {
    let mut props = JMap::new();
    let mut required = Vec::new();
    for f in fields {
        let mut p = export_at(&f.schema, depth + 1);
        if let (Some(d), Json::Object(o)) = (&f.default, &mut p)
            && let Ok(j) = d.to_json()
        {
            o.insert("default".into(), j);
        }
        props.insert(f.name.clone(), p);
        if !f.optional {
            required.push(Json::String(f.name.clone()));
        }
    }
    let mut o = JMap::new();
    o.insert("type".into(), json!("object"));
    o.insert("properties".into(), Json::Object(props));
    if !required.is_empty() {
        o.insert("required".into(), Json::Array(required));
    }
    if closed {
        o.insert("additionalProperties".into(), json!(false));
    }
    Json::Object(o)
}

fn export_at(s: &Schema, depth: usize) -> Json {
    if depth > MAX_SCHEMA_DEPTH {
        return json!({});
    }
    let d = depth + 1;
    match s {
        Schema::Any => json!({}),
        Schema::Nil => json!({"type": "null"}),
        Schema::String | Schema::Keyword => json!({"type": "string"}),
        Schema::Int => json!({"type": "integer"}),
        Schema::Double => json!({"type": "number"}),
        Schema::Boolean => json!({"type": "boolean"}),
        Schema::Datetime => json!({"type": "string", "format": "date-time"}),
        Schema::Vector(t) | Schema::Sequential(t) => {
            json!({"type": "array", "items": export_at(t, d)})
        }
        Schema::Set(t) => json!({"type": "array", "items": export_at(t, d), "uniqueItems": true}),
        Schema::Map(ms) => export_object(&ms.fields, ms.closed, depth),
        Schema::MapOf(_, v) => json!({"type": "object", "additionalProperties": export_at(v, d)}),
        Schema::Tuple(ts) => json!({
            "type": "array",
            "prefixItems": ts.iter().map(|t| export_at(t, d)).collect::<Vec<_>>(),
            "minItems": ts.len(),
            "maxItems": ts.len(),
        }),
        Schema::Enum(vals) => {
            json!({"enum": vals.iter().filter_map(|v| v.to_json().ok()).collect::<Vec<_>>()})
        }
        Schema::Or(ts) => json!({"anyOf": ts.iter().map(|t| export_at(t, d)).collect::<Vec<_>>()}),
        Schema::And(ts) => json!({"allOf": ts.iter().map(|t| export_at(t, d)).collect::<Vec<_>>()}),
        Schema::Maybe(t) => json!({"anyOf": [export_at(t, d), {"type": "null"}]}),
        Schema::Compare(op, b) => {
            let key = match op {
                CmpOp::Gt => "exclusiveMinimum",
                CmpOp::Ge => "minimum",
                CmpOp::Lt => "exclusiveMaximum",
                CmpOp::Le => "maximum",
            };
            let mut o = JMap::new();
            o.insert(key.into(), b.to_json().unwrap_or(Json::Null));
            Json::Object(o)
        }
        Schema::Re(p) => json!({"type": "string", "pattern": p.as_str()}),
    }
}

/// Annotations, and constraints this subset does not enforce (validation is then looser than the
/// JSON Schema, never stricter).
const IGNORED: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];
const KNOWN: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "additionalProperties",
    "anyOf",
    "oneOf",
    "format",
    "nullable",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "pattern",
];

fn jerr(path: &str, message: impl Into<String>) -> SignatureError {
    SignatureError::JsonSchema {
        path: if path.is_empty() {
            "#".into()
        } else {
            path.into()
        },
        message: message.into(),
    }
}

/// Imports a JSON Schema; `path` names the spot for errors (`#/properties/limit`).
pub(crate) fn import(j: &Json, path: &str, depth: usize) -> Result<Schema, SignatureError> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(jerr(
            path,
            format!("schema nested deeper than {MAX_SCHEMA_DEPTH} levels"),
        ));
    }
    let o = match j {
        Json::Bool(true) => return Ok(Schema::Any),
        Json::Object(o) => o,
        _ => return Err(jerr(path, "expected a JSON Schema object")),
    };
    if let Some(k) = o
        .keys()
        .find(|k| !KNOWN.contains(&k.as_str()) && !IGNORED.contains(&k.as_str()))
    {
        return Err(jerr(path, format!("unsupported JSON Schema keyword `{k}`")));
    }
    if let Some(c) = o.get("const") {
        return Value::from_json(c)
            .map(|v| Schema::Enum(vec![v]))
            .map_err(|e| jerr(path, e.to_string()));
    }
    if let Some(vals) = o.get("enum") {
        let Json::Array(vals) = vals else {
            return Err(jerr(path, "`enum` must be an array"));
        };
        let vals = vals
            .iter()
            .map(Value::from_json)
            .collect::<Result<Vec<_>, _>>();
        return vals
            .map(Schema::Enum)
            .map_err(|e| jerr(path, e.to_string()));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = o.get(key) {
            let Json::Array(alts) = alts else {
                return Err(jerr(path, format!("`{key}` must be an array")));
            };
            let alts = alts
                .iter()
                .enumerate()
                .map(|(i, a)| import(a, &format!("{path}/{key}/{i}"), depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(match <[Schema; 2]>::try_from(alts) {
                Ok([t, Schema::Nil] | [Schema::Nil, t]) => Schema::Maybe(Box::new(t)),
                Ok(pair) => Schema::Or(pair.into()),
                Err(alts) => Schema::Or(alts),
            });
        }
    }
    let base = typed_any(o, path, depth)?;
    let base = with_refinements(o, base, path)?;
    Ok(if o.get("nullable") == Some(&Json::Bool(true)) {
        Schema::Maybe(Box::new(base))
    } else {
        base
    })
}

/// `minimum`, `maximum`, `exclusive*` and `pattern` become `[:and T [:>= n] ...]`.
fn with_refinements(
    o: &JMap<String, Json>,
    base: Schema,
    path: &str,
) -> Result<Schema, SignatureError> {
    let mut parts = Vec::new();
    for (key, op) in [
        ("minimum", CmpOp::Ge),
        ("maximum", CmpOp::Le),
        ("exclusiveMinimum", CmpOp::Gt),
        ("exclusiveMaximum", CmpOp::Lt),
    ] {
        if let Some(n) = o.get(key) {
            match Value::from_json(n) {
                Ok(b @ (Value::Int(_) | Value::Float(_))) => parts.push(Schema::Compare(op, b)),
                _ => return Err(jerr(path, format!("`{key}` must be a number"))),
            }
        }
    }
    if let Some(p) = o.get("pattern") {
        let pattern = p.as_str().and_then(|p| Pattern::new(p).ok());
        parts.push(Schema::Re(pattern.ok_or_else(|| {
            jerr(path, "`pattern` must be a valid regular expression")
        })?));
    }
    if parts.is_empty() {
        return Ok(base);
    }
    parts.insert(0, base);
    Ok(Schema::And(parts))
}

fn typed_any(o: &JMap<String, Json>, path: &str, depth: usize) -> Result<Schema, SignatureError> {
    match o.get("type") {
        None => Ok(Schema::Any),
        Some(Json::String(t)) => typed(o, t, path, depth),
        Some(Json::Array(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Json::as_str).collect();
            let non_null: Vec<&str> = names.iter().copied().filter(|t| *t != "null").collect();
            match (non_null.as_slice(), names.len() - non_null.len()) {
                ([t], 1) => Ok(Schema::Maybe(Box::new(typed(o, t, path, depth)?))),
                ([t], 0) => typed(o, t, path, depth),
                _ => {
                    let alts = names
                        .iter()
                        .map(|t| typed(o, t, path, depth))
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(Schema::Or(alts))
                }
            }
        }
        Some(_) => Err(jerr(path, "`type` must be a string or an array of strings")),
    }
}

fn typed(
    o: &JMap<String, Json>,
    t: &str,
    path: &str,
    depth: usize,
) -> Result<Schema, SignatureError> {
    Ok(match t {
        "string" if o.get("format").and_then(Json::as_str) == Some("date-time") => Schema::Datetime,
        "string" => Schema::String,
        "integer" => Schema::Int,
        "number" => Schema::Double,
        "boolean" => Schema::Boolean,
        "null" => Schema::Nil,
        "array" => match o.get("items") {
            Some(items) => Schema::Sequential(Box::new(import(
                items,
                &format!("{path}/items"),
                depth + 1,
            )?)),
            None => Schema::Sequential(Box::new(Schema::Any)),
        },
        "object" => object(o, path, depth)?,
        other => return Err(jerr(path, format!("unsupported type `{other}`"))),
    })
}

fn object(o: &JMap<String, Json>, path: &str, depth: usize) -> Result<Schema, SignatureError> {
    let props = match o.get("properties") {
        None => None,
        Some(Json::Object(p)) => Some(p),
        Some(_) => return Err(jerr(path, "`properties` must be an object")),
    };
    let additional = o.get("additionalProperties");
    if props.is_none()
        && let Some(extra @ Json::Object(_)) = additional
    {
        let v = import(extra, &format!("{path}/additionalProperties"), depth + 1)?;
        return Ok(Schema::MapOf(Box::new(Schema::String), Box::new(v)));
    }
    let fields = object_fields(o, props, path, depth)?;
    let closed = matches!(additional, Some(Json::Bool(false)));
    Ok(Schema::Map(MapSchema { fields, closed }))
}

/// The fields of an object schema; properties not listed in `required` are optional.
pub(crate) fn object_fields(
    o: &JMap<String, Json>,
    props: Option<&JMap<String, Json>>,
    path: &str,
    depth: usize,
) -> Result<Vec<Field>, SignatureError> {
    let required: Vec<&str> = match o.get("required") {
        None => Vec::new(),
        Some(Json::Array(r)) => r.iter().filter_map(Json::as_str).collect(),
        Some(_) => return Err(jerr(path, "`required` must be an array of names")),
    };
    let mut fields = Vec::new();
    for (name, p) in props.into_iter().flatten() {
        let schema = import(p, &format!("{path}/properties/{name}"), depth + 1)?;
        let field = Field::new(name.clone(), schema);
        let default = p.get("default").map(Value::from_json).transpose();
        fields.push(match default.map_err(|e| jerr(path, e.to_string()))? {
            Some(d) => field.with_default(d),
            None if required.contains(&name.as_str()) => field,
            None => field.optional(),
        });
    }
    if let Some(missing) = required
        .iter()
        .find(|r| !fields.iter().any(|f| f.name == **r))
    {
        return Err(jerr(
            path,
            format!("`required` names `{missing}`, which is not in `properties`"),
        ));
    }
    if let Some(dup) = duplicate_field(&fields) {
        return Err(jerr(
            path,
            format!(
                "properties `{dup}` collide (hyphen and underscore spellings are the same field)"
            ),
        ));
    }
    Ok(fields)
}
