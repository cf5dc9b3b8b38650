//! The `lisp_eval` call's arguments: checked, bounded, and turned into a client [`Run`].
//!
//! Every problem is an [`ArgsError`] with a message naming the argument; nothing here runs a
//! program. The limits are the surface's own (the engine's policy limits apply after them).

use super::preparse::Parsed;
use crate::client::Run;
use ptc_shared::lisp_eval::{ArgsError, json_kind, validate_program};
use ptc_shared::signature::{Schema, Signature};
use ptc_shared::value::EncodedValue;
use serde_json::{Map as JMap, Value as Json};

/// The largest `program` (64 KiB of UTF-8).
pub const MAX_PROGRAM_BYTES: usize = 64 * 1024;
/// The largest `context`, as compact JSON (4 MiB).
pub const MAX_CONTEXT_BYTES: usize = 4 * 1024 * 1024;
/// The arguments `lisp_eval` takes.
pub const ARGUMENTS: [&str; 3] = ["program", "context", "output_schema"];

/// A checked call: the run to start, and whether its return value was checked by a schema.
#[derive(Debug)]
pub struct Call {
    pub run: Run,
    pub schema: bool,
}

/// Checks the arguments of one `lisp_eval` call and builds its run (the context moves into the
/// run, uncopied).
pub fn parse(args: Option<JMap<String, Json>>) -> Result<Call, ArgsError> {
    let args = args.unwrap_or_default();
    only(
        &args,
        &ARGUMENTS,
        "lisp_eval takes program, context and output_schema",
    )?;
    parse_checked(args)
}

/// Checks `lisp_eval`'s arguments in the call of another tool (which removed its own first);
/// `takes` names all the tool's arguments for the message about an unknown one.
pub fn parse_as(args: JMap<String, Json>, takes: &str) -> Result<Call, ArgsError> {
    only(&args, &ARGUMENTS, takes)?;
    parse_checked(args)
}

/// An unknown argument (one not in `known`) is an error; `takes` says what the tool takes.
pub fn only(args: &JMap<String, Json>, known: &[&str], takes: &str) -> Result<(), ArgsError> {
    match args.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(ArgsError(format!("unknown argument `{k}` ({takes})"))),
        None => Ok(()),
    }
}

fn parse_checked(mut args: JMap<String, Json>) -> Result<Call, ArgsError> {
    let ctx = args.remove("context");
    let program = program(args.get("program"))?;
    let ctx = context(ctx)?;
    build(program, ctx, args.get("output_schema"))
}

/// Checks arguments the fast path read ([`super::preparse`]): the same checks, in the same
/// order, as [`parse`] (the context there is already a checked object within the limit).
pub fn check(parsed: Parsed) -> Result<Call, ArgsError> {
    let program = program(Some(&parsed.program))?;
    build(program, parsed.context, parsed.output_schema.as_ref())
}

/// `program`: a non-blank string of at most [`MAX_PROGRAM_BYTES`].
fn program(program: Option<&Json>) -> Result<&str, ArgsError> {
    let program = validate_program(program)?;
    if program.len() > MAX_PROGRAM_BYTES {
        return Err(ArgsError(format!(
            "`program` is {} bytes, over the limit of {MAX_PROGRAM_BYTES}",
            program.len()
        )));
    }
    Ok(program)
}

/// The run of checked parts; the output schema is checked last.
fn build(
    program: &str,
    context: Option<EncodedValue>,
    output_schema_json: Option<&Json>,
) -> Result<Call, ArgsError> {
    let mut run = Run::new(program);
    if let Some(ctx) = context {
        run = run.context(ctx);
    }
    let schema = output_schema(output_schema_json)?;
    let checked = schema.is_some();
    if let Some(s) = schema {
        run = run.signature(Signature::new(Vec::new(), s).render());
    }
    Ok(Call {
        run,
        schema: checked,
    })
}

/// `context`: absent or null, or an object of at most [`MAX_CONTEXT_BYTES`], encoded for the
/// run straight from the JSON object (no `Value` tree in between).
fn context(ctx: Option<Json>) -> Result<Option<EncodedValue>, ArgsError> {
    match ctx {
        None | Some(Json::Null) => Ok(None),
        Some(c @ Json::Object(_)) => {
            let size = json_size(&c);
            if size > MAX_CONTEXT_BYTES {
                return Err(ArgsError(format!(
                    "`context` is {size} bytes as JSON, over the limit of {MAX_CONTEXT_BYTES}"
                )));
            }
            EncodedValue::deserialize_json(c, super::input::MAX_FRAME_BYTES)
                .map(Some)
                .map_err(|e| ArgsError(format!("`context`: {e}")))
        }
        Some(other) => Err(ArgsError(format!(
            "`context` must be an object (each key is read as data/KEY), got {}",
            json_kind(&other)
        ))),
    }
}

/// `output_schema`: absent or null, or a JSON Schema in the supported subset.
fn output_schema(schema: Option<&Json>) -> Result<Option<Schema>, ArgsError> {
    match schema {
        None | Some(Json::Null) => Ok(None),
        Some(s @ Json::Object(_)) => Schema::from_json_schema(s)
            .map(Some)
            .map_err(|e| ArgsError(format!("`output_schema` is not usable: {e}"))),
        Some(other) => Err(ArgsError(format!(
            "`output_schema` must be a JSON Schema object, got {}",
            json_kind(other)
        ))),
    }
}

/// Bytes of `j` as compact JSON, counted without building the text.
fn json_size(j: &Json) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(b.len());
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, j);
    c.0
}

/// The tool's input schema.
pub fn input_schema() -> JMap<String, Json> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "program": {
                "type": "string",
                "description": "PTC-Lisp source (a Clojure subset); the value of its last expression is the result.",
                "maxLength": MAX_PROGRAM_BYTES,
            },
            "context": {
                "type": "object",
                "description": "Data for the program: each key KEY is read as data/KEY.",
            },
            "output_schema": {
                "type": "object",
                "description": "A JSON Schema (string, integer, number, boolean, array with items, object with properties and required) the return value must match; the checked value comes back as JSON in `validated`.",
            },
        },
        "required": ["program"],
        "additionalProperties": false,
    });
    match schema {
        Json::Object(o) => o,
        _ => JMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(args: Json) -> String {
        match parse(args.as_object().cloned()) {
            Ok(_) => String::new(),
            Err(e) => e.0,
        }
    }

    #[test]
    fn bad_arguments_are_named() {
        assert!(
            err(json!({"program": "(+ 1 2)", "extra": 1})).contains("unknown argument `extra`")
        );
        assert!(err(json!({"program": "x", "context": [1]})).contains("got an array"));
        assert!(err(json!({"program": "x", "output_schema": "int"})).contains("got a string"));
        assert!(
            err(json!({"program": "x", "output_schema": {"$ref": "#/x"}}))
                .starts_with("`output_schema` is not usable")
        );
        assert!(err(json!({})).contains("needs a `program`"));
    }

    #[test]
    fn sizes_are_bounded() {
        let big = "1".repeat(MAX_PROGRAM_BYTES + 1);
        assert!(err(json!({"program": big})).contains("over the limit of 65536"));
        let ctx = json!({"k": "x".repeat(MAX_CONTEXT_BYTES)});
        assert!(err(json!({"program": "1", "context": ctx})).contains("over the limit of 4194304"));
        let ok = parse(
            json!({"program": "1", "context": {"k": 1}, "output_schema": {"type": "integer"}})
                .as_object()
                .cloned(),
        );
        assert!(ok.is_ok_and(|c| c.schema && c.run.request().signature.is_some()));
    }
}
