//! The `lisp_eval` wire protocol: the single source of truth for what an LLM-facing surface
//! (the `ptc mcp` server, an in-process agent exposing `lisp_eval` as a native tool) says.
//!
//! - [`Profile`]: the tool description for each capability profile, one fixed string each
//!   (never assembled at run time). A description states capabilities only.
//! - [`Reason`]: the closed set of error reasons on this surface. [`Reason::of`] is the one
//!   mapping from our [`FailReason`]s: compute budgets (wall clock, CPU, steps) are `timeout`,
//!   the heap (and a session's stored memory) is `memory_limit`, every other limit is `runtime_error` with the limit named.
//! - [`render_success`] / [`render_error`] (and [`render_step`], which picks one): the JSON
//!   payloads, keys in a fixed order so the bytes are stable (golden tests pin them). Options
//!   are structs with `Default`; read from JSON ([`SuccessOptions::from_json`]) unknown options
//!   are ignored, so a newer caller never breaks an older renderer.
//! - [`session`]: the stateful session tools (names, descriptions, their own payloads).
//! - [`validate_program`], [`to_json_value`] (errors name the path, `rows[0].ts`) and
//!   [`parse_signature`] for callers outside this crate.
//!
//! Invariants: rendering never fails and never panics, whatever the Step holds; every piece a
//! program controls (result preview, prints, memory previews, `validated`) is capped and a cut
//! is marked with `truncated: true`. Transport (JSON-RPC, MCP envelopes) is not here.

pub mod session;

use crate::signature::{Signature, SignatureError};
use crate::step::{Fail, FailReason, Step};
use crate::value::{MAX_DEPTH, Value, pr_str, pr_str_capped};
use serde::{Deserialize, Serialize};
use serde_json::{Map as JMap, Value as Json};
use session::SESSION_MEMORY_LIMIT;

/// The tool's name on every surface.
pub const TOOL_NAME: &str = "lisp_eval";

/// Which capabilities a surface offers; each has one fixed description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// An in-process agent whose programs call the app's tools; `lisp_eval` is its only native tool.
    InProcessWithAppTools,
    /// An in-process agent in text mode: app tools are native tools too, and callable inside.
    InProcessTextMode,
    /// `ptc mcp`: no app tools inside programs, data through `context`, calls independent.
    McpNoTools,
}

/// [`Profile::InProcessWithAppTools`]'s description.
pub const DESCRIPTION_IN_PROCESS_WITH_APP_TOOLS: &str = "Runs a PTC-Lisp program (a Clojure subset) in a sandbox. Use it to compute, filter, aggregate and reshape data deterministically, and to orchestrate the app's tools: call them inside the program as `(tool/NAME {...})`. The app's tools are not callable directly; `lisp_eval` is the only native tool.";

/// [`Profile::InProcessTextMode`]'s description.
pub const DESCRIPTION_IN_PROCESS_TEXT_MODE: &str = "Runs a PTC-Lisp program (a Clojure subset) in a sandbox. Use it to compute, filter, aggregate and reshape data deterministically. App tools exposed to programs are called inside it as `(tool/NAME {...})`; they are also native tools of this conversation, but not in the same turn as a `lisp_eval` call.";

/// [`Profile::McpNoTools`]'s description (what `ptc mcp` advertises).
pub const DESCRIPTION_MCP_NO_TOOLS: &str = "Runs a PTC-Lisp program (a Clojure subset) in a fresh sandboxed process. Use it to compute, filter, aggregate and reshape data deterministically. No tools are callable inside the program. Pass data in the `context` argument (an object; each key is read as `data/KEY`). Every call is independent: nothing is remembered between calls. With `output_schema` (a JSON Schema) the return value is checked and returned as JSON in `validated`.";

impl Profile {
    /// The fixed description string of this profile.
    pub const fn description(self) -> &'static str {
        match self {
            Profile::InProcessWithAppTools => DESCRIPTION_IN_PROCESS_WITH_APP_TOOLS,
            Profile::InProcessTextMode => DESCRIPTION_IN_PROCESS_TEXT_MODE,
            Profile::McpNoTools => DESCRIPTION_MCP_NO_TOOLS,
        }
    }
}

/// Why a `lisp_eval` call failed: the closed set this surface speaks. Adding a member means
/// adding it here, to [`Reason::ALL`] and to [`Reason::as_str`]; the renderer has no other
/// per-reason code (only `fail` carries a `result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The program text does not read.
    ParseError,
    /// Every other program error, and limits other than compute and heap (named in the message).
    RuntimeError,
    /// A compute budget ran out: wall clock, CPU time or evaluation steps.
    Timeout,
    /// The heap limit, or a session's bound on its stored memory.
    MemoryLimit,
    /// The call's arguments are malformed or too large.
    ArgsError,
    /// The program called `(fail v)`; the only reason whose payload carries `result`.
    Fail,
    /// The return value does not match the output schema.
    ValidationError,
    /// Server: every execution slot is taken (answered at once, never queued).
    Busy,
    /// Server: the client cancelled the call.
    Cancelled,
    /// Server: the server is stopping (its input closed).
    ShuttingDown,
    /// Sessions: no live session has this id (never started, or closed).
    UnknownSession,
    /// Sessions: the session was idle longer than its TTL and was ended.
    SessionExpired,
    /// Sessions: as many sessions are open as the server allows.
    SessionLimit,
}

impl Reason {
    /// Every member, in declaration order.
    pub const ALL: [Reason; 13] = [
        Reason::ParseError,
        Reason::RuntimeError,
        Reason::Timeout,
        Reason::MemoryLimit,
        Reason::ArgsError,
        Reason::Fail,
        Reason::ValidationError,
        Reason::Busy,
        Reason::Cancelled,
        Reason::ShuttingDown,
        Reason::UnknownSession,
        Reason::SessionExpired,
        Reason::SessionLimit,
    ];

    /// The wire name, e.g. `"memory_limit"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::ParseError => "parse_error",
            Reason::RuntimeError => "runtime_error",
            Reason::Timeout => "timeout",
            Reason::MemoryLimit => "memory_limit",
            Reason::ArgsError => "args_error",
            Reason::Fail => "fail",
            Reason::ValidationError => "validation_error",
            Reason::Busy => "busy",
            Reason::Cancelled => "cancelled",
            Reason::ShuttingDown => "shutting_down",
            Reason::UnknownSession => "unknown_session",
            Reason::SessionExpired => "session_expired",
            Reason::SessionLimit => "session_limit",
        }
    }

    /// The one mapping from a failed Step's [`Fail`] to this surface: the reason and the
    /// message to show. Limits that are not a compute budget or the heap keep their name in
    /// the message (`limit max_depth exceeded: ...`).
    pub fn of(fail: &Fail) -> (Reason, String) {
        use FailReason as F;
        let reason = match fail.reason {
            F::ParseError => Reason::ParseError,
            F::Timeout => Reason::Timeout,
            F::MemoryExceeded => Reason::MemoryLimit,
            F::ValidationError => Reason::ValidationError,
            F::Failed => Reason::Fail,
            F::Busy => Reason::Busy,
            F::Cancelled => Reason::Cancelled,
            F::InvalidRequest => Reason::ArgsError,
            F::LimitExceeded => return limit_reason(fail),
            F::AnalysisError
            | F::EvalError
            | F::ToolError
            | F::ToolNotFound
            | F::SandboxViolation
            | F::RunnerCrashed
            | F::PermissionDenied => Reason::RuntimeError,
            // A mission's own reasons (never from a single `lisp_eval` program, but the map is
            // total): its budgets are compute budgets, a malformed mission is a bad argument.
            F::MissionTimeout
            | F::MaxTurnsExceeded
            | F::TurnBudgetExhausted
            | F::TokenBudgetExhausted
            | F::MaxDepthExceeded => Reason::Timeout,
            F::TemplateError | F::ChainedFailure | F::ReservedToolName | F::ModelNotFound => {
                Reason::ArgsError
            }
            F::LlmError => Reason::RuntimeError,
        };
        (reason, fail.message.clone())
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `limit_exceeded` Fail: compute budgets are `timeout`, the heap and a session's memory `memory_limit`, the rest
/// `runtime_error`; the limit's name (from `details.limit`) is always in the message.
fn limit_reason(fail: &Fail) -> (Reason, String) {
    let limit = match &fail.details {
        Value::Map(m) => m.get(&Value::string("limit")).and_then(|v| match v {
            Value::Str(s) | Value::Keyword(s) => Some(s.as_str()),
            _ => None,
        }),
        _ => None,
    };
    let reason = match limit {
        Some("timeout_ms" | "cpu" | "cpu_ms" | "max_steps") => Reason::Timeout,
        Some("heap_bytes" | "grant_bytes" | SESSION_MEMORY_LIMIT) => Reason::MemoryLimit,
        _ => Reason::RuntimeError,
    };
    let name = limit.unwrap_or("a resource limit");
    (reason, format!("limit {name} exceeded: {}", fail.message))
}

/// Caps on what a payload carries; a cut sets `truncated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Caps {
    /// Bytes of the `result` preview (after `user=> `).
    pub result_bytes: usize,
    /// Bytes of all prints together.
    pub prints_bytes: usize,
    /// Bytes of one print.
    pub print_entry_bytes: usize,
    /// Bytes of `validated` as JSON text; a larger value is left out.
    pub validated_bytes: usize,
    /// Bytes of one memory preview.
    pub memory_preview_bytes: usize,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            result_bytes: 64 * 1024,
            // Below the default policy's 64 KiB, so a cut is made (and marked) here: the
            // runner's own cut only leaves a marker line in the prints.
            prints_bytes: 32 * 1024,
            print_entry_bytes: 4 * 1024,
            validated_bytes: 1024 * 1024,
            memory_preview_bytes: 256,
        }
    }
}

/// Named options of [`render_success`]; unknown ones are ignored when read from JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SuccessOptions {
    /// A preview to show instead of the one printed from the return value.
    pub result: Option<String>,
    /// What the model should read; by default the Step's warnings (one a line), else `null`.
    pub feedback: Option<String>,
    /// Adds the `memory` object (stateful callers only).
    pub include_memory: bool,
    /// The return value as JSON after it was checked against an output schema.
    pub validated: Option<Json>,
    pub caps: Caps,
}

/// Named options of [`render_error`]; unknown ones are ignored when read from JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ErrorOptions {
    /// What the model should read; defaults to the message.
    pub feedback: Option<String>,
    /// The failed value's preview; rendered (as `null` if absent) only for [`Reason::Fail`].
    pub result: Option<String>,
}

macro_rules! from_json_options {
    ($t:ty) => {
        impl $t {
            /// Options from a JSON object; unknown keys are ignored, a bad value is an error.
            pub fn from_json(j: &Json) -> Result<$t, String> {
                <$t>::deserialize(j).map_err(|e| e.to_string())
            }
        }
    };
}
from_json_options!(SuccessOptions);
from_json_options!(ErrorOptions);

/// A rendered payload: the JSON object and whether it reports an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    pub is_error: bool,
    pub json: Json,
}

impl Payload {
    /// The payload as compact JSON text (the bytes the golden tests pin).
    pub fn text(&self) -> String {
        self.json.to_string()
    }
}

/// The success payload: `{"status":"ok","result":"user=> 3","prints":[...],"feedback":...,
/// "truncated":bool}`, then `memory` (with `include_memory`) and `validated` (when given).
/// `result` is left out when there is neither a preview option nor a non-nil return value.
pub fn render_success(step: &Step, opts: &SuccessOptions) -> Payload {
    let caps = &opts.caps;
    let mut truncated = false;
    let mut o = JMap::new();
    o.insert("status".into(), "ok".into());
    let value = step.return_value.as_ref().filter(|v| **v != Value::Nil);
    let preview = match (&opts.result, value) {
        (Some(p), _) => Some(cut(p, caps.result_bytes, &mut truncated)),
        (None, Some(v)) => Some(preview(v, caps.result_bytes, &mut truncated)),
        (None, None) => None,
    };
    if let Some(p) = preview {
        o.insert("result".into(), format!("user=> {p}").into());
    }
    o.insert("prints".into(), prints(&step.prints, caps, &mut truncated));
    let feedback = match &opts.feedback {
        Some(f) => Json::String(f.clone()),
        None if step.warnings.is_empty() => Json::Null,
        None => Json::String(step.warnings.join("\n")),
    };
    o.insert("feedback".into(), feedback);
    let validated = opts.validated.as_ref().and_then(|v| {
        let fits = v.to_string().len() <= caps.validated_bytes;
        truncated |= !fits;
        fits.then(|| v.clone())
    });
    o.insert("truncated".into(), truncated.into());
    if opts.include_memory {
        o.insert("memory".into(), memory(step, caps));
    }
    if let Some(v) = validated {
        o.insert("validated".into(), v);
    }
    Payload {
        is_error: false,
        json: Json::Object(o),
    }
}

/// The error payload: `{"status":"error","reason","message","feedback"}`, plus `result` for
/// [`Reason::Fail`] only.
pub fn render_error(reason: Reason, message: &str, opts: &ErrorOptions) -> Payload {
    let mut o = JMap::new();
    o.insert("status".into(), "error".into());
    o.insert("reason".into(), reason.as_str().into());
    o.insert("message".into(), message.into());
    let feedback = opts.feedback.as_deref().unwrap_or(message);
    o.insert("feedback".into(), feedback.into());
    if reason == Reason::Fail {
        o.insert("result".into(), opts.result.clone().into());
    }
    Payload {
        is_error: true,
        json: Json::Object(o),
    }
}

/// Renders any Step: [`render_success`] with `opts`, or [`render_error`] with the reason
/// and message from [`Reason::of`] (and, for `fail`, the failed value's preview as `result`).
pub fn render_step(step: &Step, opts: &SuccessOptions) -> Payload {
    let Some(fail) = &step.fail else {
        return render_success(step, opts);
    };
    let (reason, message) = Reason::of(fail);
    // An error payload has no `truncated`: a cut preview shows its `…`.
    let result = (reason == Reason::Fail).then(|| {
        let mut clipped = false;
        match &fail.details {
            Value::Map(m) => m.get(&Value::string("value")).map_or_else(
                || fail.message.clone(),
                |v| preview(v, opts.caps.result_bytes, &mut clipped),
            ),
            _ => fail.message.clone(),
        }
    });
    render_error(
        reason,
        &message,
        &ErrorOptions {
            feedback: None,
            result,
        },
    )
}

fn preview(v: &Value, max: usize, truncated: &mut bool) -> String {
    let (text, cut) = pr_str_capped(v, max);
    *truncated |= cut;
    if cut { format!("{text}…") } else { text }
}

/// `s` cut to `max` bytes on a char boundary, marked with `…` when cut.
fn cut(s: &str, max: usize, truncated: &mut bool) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    *truncated = true;
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn prints(prints: &[String], caps: &Caps, truncated: &mut bool) -> Json {
    let mut out = Vec::new();
    let mut used = 0usize;
    for p in prints {
        let entry = cut(p, caps.print_entry_bytes, truncated);
        if used.saturating_add(entry.len()) > caps.prints_bytes {
            *truncated = true;
            break;
        }
        used += entry.len();
        out.push(Json::String(entry));
    }
    Json::Array(out)
}

fn memory(step: &Step, caps: &Caps) -> Json {
    let mut truncated = false;
    let mut changed = JMap::new();
    if let Value::Map(m) = &step.memory_delta {
        for (k, v) in m.iter() {
            changed.insert(
                key_text(k),
                preview(v, caps.memory_preview_bytes, &mut truncated).into(),
            );
        }
    }
    let stored: Vec<Json> = match &step.memory {
        Value::Map(m) => m.keys().map(|k| Json::String(key_text(k))).collect(),
        _ => Vec::new(),
    };
    let mut o = JMap::new();
    o.insert("changed".into(), Json::Object(changed));
    o.insert("stored_keys".into(), Json::Array(stored));
    o.insert("truncated".into(), truncated.into());
    Json::Object(o)
}

/// A map key as JSON object key: strings and keywords as they are, anything else printed.
fn key_text(k: &Value) -> String {
    match k {
        Value::Str(s) | Value::Keyword(s) => s.clone(),
        other => pr_str(other),
    }
}

/// `program` is missing, not a string, or empty/blank.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgsError(pub String);

impl ArgsError {
    /// The error payload for this (`args_error`).
    pub fn render(&self) -> Payload {
        render_error(Reason::ArgsError, &self.0, &ErrorOptions::default())
    }
}

/// Checks the `program` argument: present, a string, not blank.
pub fn validate_program(program: Option<&Json>) -> Result<&str, ArgsError> {
    match program {
        None | Some(Json::Null) => Err(ArgsError(
            "lisp_eval needs a `program` argument: a string of PTC-Lisp source".into(),
        )),
        Some(Json::String(s)) if s.is_empty() => {
            Err(ArgsError("`program` is an empty string".into()))
        }
        Some(Json::String(s)) if s.trim().is_empty() => {
            Err(ArgsError("`program` holds only whitespace".into()))
        }
        Some(Json::String(s)) => Ok(s),
        Some(other) => Err(ArgsError(format!(
            "`program` must be a string, got {}",
            json_kind(other)
        ))),
    }
}

/// "a number", "an object", ... for messages about JSON arguments.
pub fn json_kind(j: &Json) -> &'static str {
    match j {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// A value with no JSON form, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("non-JSON-encodable value at {path}: {why}")]
pub struct NotJson {
    /// `rows[0].ts`; `(root)` for the value itself.
    pub path: String,
    pub why: String,
}

/// A value as JSON: keywords become strings, lists and sets arrays, maps objects keyed by
/// their keys' text (strings and keywords as they are, other keys printed). A non-finite
/// float, two keys with the same text, or nesting past [`MAX_DEPTH`] is an error naming the
/// path. (Functions, regexes and lazy seqs never leave the interpreter: a result holding one
/// fails there with a message that says so.)
pub fn to_json_value(v: &Value) -> Result<Json, NotJson> {
    let mut path = Vec::new();
    json_at(v, &mut path)
}

enum Seg {
    Key(String),
    Index(usize),
}

fn json_at(v: &Value, path: &mut Vec<Seg>) -> Result<Json, NotJson> {
    if path.len() > MAX_DEPTH {
        return Err(not_json(
            path,
            format!("nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    Ok(match v {
        Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => Json::Number(n),
            None => {
                return Err(not_json(
                    path,
                    format!("the float {} has no JSON form", pr_str(v)),
                ));
            }
        },
        Value::Str(s) | Value::Keyword(s) => Json::String(s.clone()),
        Value::Vector(xs) | Value::List(xs) => array(xs.iter(), path)?,
        Value::Set(xs) => array(xs.iter(), path)?,
        Value::Map(m) => {
            let mut o = JMap::with_capacity(m.len());
            for (k, x) in m.iter() {
                let key = key_text(k);
                path.push(Seg::Key(key.clone()));
                if o.contains_key(&key) {
                    return Err(not_json(path, "two keys print as the same JSON key".into()));
                }
                let j = json_at(x, path)?;
                path.pop();
                o.insert(key, j);
            }
            Json::Object(o)
        }
    })
}

fn array<'a>(xs: impl Iterator<Item = &'a Value>, path: &mut Vec<Seg>) -> Result<Json, NotJson> {
    let mut out = Vec::new();
    for (i, x) in xs.enumerate() {
        path.push(Seg::Index(i));
        out.push(json_at(x, path)?);
        path.pop();
    }
    Ok(Json::Array(out))
}

fn not_json(path: &[Seg], why: String) -> NotJson {
    NotJson {
        path: render_path(path),
        why,
    }
}

/// `rows[0].ts`; keys that are not plain identifiers are quoted: `["a b"]`.
fn render_path(path: &[Seg]) -> String {
    if path.is_empty() {
        return "(root)".into();
    }
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::Key(k) if is_plain(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Key(k) => out.push_str(&format!("[{}]", Json::String(k.clone()))),
        }
    }
    out
}

fn is_plain(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '?' | '!'))
}

/// Parses a signature (shorthand or Malli-lite), for callers outside this crate.
pub fn parse_signature(text: &str) -> Result<Signature, SignatureError> {
    Signature::parse(text)
}

#[cfg(test)]
#[path = "lisp_eval_tests.rs"]
mod tests;
