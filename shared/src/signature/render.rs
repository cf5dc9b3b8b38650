//! Rendering schemas and signatures back to text.
//!
//! Two forms: Malli-lite data (exact, always possible) and compact shorthand. Shorthand embeds
//! Malli data for the parts it cannot express (enums, unions, tuples, closed maps, optional fields
//! that are not nullable), which the shorthand parser reads back, so `parse(render(s)) == s` for
//! every schema. Tool rendering (for prompts) leaves out hidden `_` fields and shows optional
//! fields with `?` even when they are not nullable. Invariant: recursion stops at
//! `MAX_SCHEMA_DEPTH` (deeper parts of a schema built in code render as `:any`).

use super::MAX_SCHEMA_DEPTH;
use super::edn::is_word_char;
use super::malli::{Field, MapSchema, Schema};
use crate::value::{Value, pr_str};

/// How to render.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Style {
    /// Prompt text: hide `_` fields, mark every optional field with `?`.
    pub visible: bool,
}

/// Malli-lite data text of a schema.
pub(crate) fn malli(s: &Schema, style: Style) -> String {
    let mut out = String::new();
    write_malli(&mut out, s, style, 1);
    out
}

/// Compact shorthand of a schema (with embedded Malli data where needed).
pub(crate) fn shorthand(s: &Schema, style: Style) -> String {
    let mut out = String::new();
    write_short(&mut out, s, style, 1);
    out
}

fn prim(s: &Schema) -> Option<(&'static str, &'static str)> {
    // (shorthand, malli)
    Some(match s {
        Schema::Any => (":any", ":any"),
        Schema::Nil => (":nil", ":nil"),
        Schema::String => (":string", ":string"),
        Schema::Int => (":int", ":int"),
        Schema::Double => (":float", ":double"),
        Schema::Boolean => (":bool", ":boolean"),
        Schema::Keyword => (":keyword", ":keyword"),
        Schema::Datetime => (":datetime", ":datetime"),
        Schema::Map(MapSchema {
            fields,
            closed: false,
        }) if fields.is_empty() => (":map", ":map"),
        _ => return None,
    })
}

fn write_malli(out: &mut String, s: &Schema, style: Style, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        out.push_str(":any");
        return;
    }
    if let Some((_, m)) = prim(s) {
        out.push_str(m);
        return;
    }
    let d = depth + 1;
    let list = |out: &mut String, op: &str, xs: &[&Schema]| {
        out.push_str("[:");
        out.push_str(op);
        for x in xs {
            out.push(' ');
            write_malli(out, x, style, d);
        }
        out.push(']');
    };
    match s {
        Schema::Vector(t) => list(out, "vector", &[t]),
        Schema::Sequential(t) => list(out, "sequential", &[t]),
        Schema::Set(t) => list(out, "set", &[t]),
        Schema::Maybe(t) => list(out, "maybe", &[t]),
        Schema::MapOf(k, v) => list(out, "map-of", &[k, v]),
        Schema::Tuple(ts) => list(out, "tuple", &ts.iter().collect::<Vec<_>>()),
        Schema::Or(ts) => list(out, "or", &ts.iter().collect::<Vec<_>>()),
        Schema::And(ts) => list(out, "and", &ts.iter().collect::<Vec<_>>()),
        Schema::Enum(vals) => {
            out.push_str("[:enum");
            for v in vals {
                out.push(' ');
                out.push_str(&pr_str(v));
            }
            out.push(']');
        }
        Schema::Compare(op, b) => out.push_str(&format!("[:{} {}]", op.as_str(), pr_str(b))),
        Schema::Re(p) => out.push_str(&format!(
            "[:re {}]",
            pr_str(&Value::Str(p.as_str().to_string()))
        )),
        Schema::Map(ms) => write_malli_map(out, ms, style, depth),
        _ => out.push_str(":any"),
    }
}

/// `[:map {:closed true} [:a :int] [:b {:optional true} :int]]`.
pub(crate) fn write_malli_map(out: &mut String, ms: &MapSchema, style: Style, depth: usize) {
    out.push_str("[:map");
    if ms.closed {
        out.push_str(" {:closed true}");
    }
    for f in ms.fields.iter().filter(|f| !(style.visible && f.hidden)) {
        out.push_str(" [");
        out.push_str(&malli_key(&f.name));
        match &f.default {
            Some(d) => out.push_str(&format!(" {{:default {}}}", pr_str(d))),
            None if f.optional => out.push_str(" {:optional true}"),
            None => {}
        }
        out.push(' ');
        write_malli(out, &f.schema, style, depth + 1);
        out.push(']');
    }
    out.push(']');
}

fn malli_key(name: &str) -> String {
    if is_plain_name(name) {
        format!(":{name}")
    } else {
        pr_str(&Value::Str(name.to_string()))
    }
}

/// A name the shorthand and EDN readers read back as one word.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_word_char)
}

fn write_short(out: &mut String, s: &Schema, style: Style, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        out.push_str(":any");
        return;
    }
    match s {
        Schema::Maybe(t) => {
            write_base(out, t, style, depth + 1);
            out.push('?');
        }
        _ => write_base(out, s, style, depth),
    }
}

/// Shorthand without a trailing `?`: a nested maybe is written as Malli data.
fn write_base(out: &mut String, s: &Schema, style: Style, depth: usize) {
    if let Some((short, _)) = prim(s) {
        out.push_str(short);
        return;
    }
    match s {
        Schema::Sequential(t) => {
            out.push('[');
            write_short(out, t, style, depth + 1);
            out.push(']');
        }
        Schema::Map(ms) if !ms.closed && ms.fields.iter().all(|f| short_field_ok(f, style)) => {
            out.push('{');
            let mut first = true;
            for f in ms.fields.iter().filter(|f| !(style.visible && f.hidden)) {
                if !first {
                    out.push_str(", ");
                }
                first = false;
                write_short_field(out, f, style, depth + 1);
            }
            out.push('}');
        }
        _ => write_malli(out, s, style, depth),
    }
}

/// Whether a field has a shorthand spelling (`name T`, `name T?`).
fn short_field_ok(f: &Field, style: Style) -> bool {
    let shape = style.visible
        || (f.default.is_none() && (!f.optional || matches!(f.schema, Schema::Maybe(_))));
    (style.visible || is_plain_name(&f.name)) && shape
}

/// `name T` for a required field, `name T?` for an optional nullable one. A required nullable
/// field is `name [:maybe T]`, because `?` on a field also means optional.
fn write_short_field(out: &mut String, f: &Field, style: Style, depth: usize) {
    if is_plain_name(&f.name) {
        out.push_str(&f.name);
    } else {
        // Prompt text only (exact rendering falls back to data form for such names).
        out.push_str(&pr_str(&Value::Str(f.name.clone())));
    }
    out.push(' ');
    match (&f.schema, f.optional) {
        (Schema::Maybe(t), true) => {
            write_base(out, t, style, depth + 1);
            out.push('?');
        }
        (Schema::Maybe(_), false) => write_malli(out, &f.schema, style, depth),
        (s, true) => {
            // Only in prompt text: an optional field is shown with `?`.
            write_base(out, s, style, depth);
            out.push('?');
        }
        (s, false) => write_base(out, s, style, depth),
    }
}

/// `(a :int, b :string?)`, or `None` when some input has no shorthand spelling.
pub(crate) fn short_params(params: &[Field], style: Style) -> Option<String> {
    if !params.iter().all(|f| short_field_ok(f, style)) {
        return None;
    }
    let mut out = String::from("(");
    let mut first = true;
    for f in params.iter().filter(|f| !(style.visible && f.hidden)) {
        if !first {
            out.push_str(", ");
        }
        first = false;
        write_short_field(&mut out, f, style, 2);
    }
    out.push(')');
    Some(out)
}

/// `[:=> [:cat [:map ...]] T]`: the exact data form of a signature.
pub(crate) fn malli_function(params: &[Field], output: &Schema, style: Style) -> String {
    let mut out = String::from("[:=> [:cat");
    if !params.is_empty() {
        out.push(' ');
        write_malli_map(
            &mut out,
            &MapSchema {
                fields: params.to_vec(),
                closed: false,
            },
            style,
            2,
        );
    }
    out.push_str("] ");
    write_malli(&mut out, output, style, 1);
    out.push(']');
    out
}
