//! Stateful `lisp_eval` sessions on the wire: the five tools' names and fixed descriptions, and
//! the payloads of the ones that do not run a program (`start`, `inspect`, `list`, `close`).
//!
//! A session keeps what a chain of `ptc run`s keeps between runs (the Step's `memory` and
//! `history`, i.e. `def`s and `*1 *2 *3`); the server that holds sessions owns their table, TTL,
//! cap and memory bound. `lisp_session_eval` answers with [`super::render_step`] and
//! `include_memory`, so its payload is `lisp_eval`'s plus `memory`; its failures use the closed
//! [`Reason`](super::Reason) set (an unknown id is `unknown_session`, an idle one `session_expired`, a full
//! table `session_limit`, stored memory over the bound `memory_limit` naming
//! [`SESSION_MEMORY_LIMIT`]).
//!
//! Invariants: descriptions are constants; payload keys come in a fixed order (golden tests pin
//! the bytes); every preview is capped by [`Caps::memory_preview_bytes`] and a cut is marked
//! with `truncated`.

use super::{Caps, Payload, key_text, preview};
use crate::step::{Fail, FailReason};
use crate::value::Value;
use serde_json::{Map as JMap, Value as Json};

/// The limit named (in `details.limit` and the message) when a session's memory outgrows its
/// bound; [`Reason::of`](super::Reason::of) maps it to `memory_limit`.
pub const SESSION_MEMORY_LIMIT: &str = "session_memory_bytes";

/// The session tools, in the order a server lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionTool {
    Start,
    Eval,
    Inspect,
    List,
    Close,
}

/// `lisp_session_start`'s description.
pub const DESCRIPTION_START: &str = "Starts a PTC-Lisp session and returns its `session_id`. A session remembers what its programs `def` (readable later by name or as `memory/NAME`) and the last three results (`*1`, `*2`, `*3`) from one `lisp_session_eval` call to the next. It ends when closed, or after `idle_ttl_ms` without a call; the server keeps a limited number of sessions.";

/// `lisp_session_eval`'s description.
pub const DESCRIPTION_EVAL: &str = "Runs a PTC-Lisp program (a Clojure subset) in a fresh sandboxed process, inside a session: the session's `def`s and `*1 *2 *3` are visible, and the ones this program makes are kept for the next call (a failed call keeps nothing). Takes `session_id`, `program`, and like `lisp_eval` an optional `context` (each key read as `data/KEY`, not kept) and `output_schema`. The answer adds `memory`: names changed by this call with a preview of each, and every stored name. No tools are callable inside the program.";

/// `lisp_session_inspect`'s description.
pub const DESCRIPTION_INSPECT: &str =
    "Shows a session's stored names with a preview of each value, and `*1 *2 *3`.";

/// `lisp_session_list`'s description.
pub const DESCRIPTION_LIST: &str =
    "Lists the open sessions: their ids, stored names, size, calls made and idle time.";

/// `lisp_session_close`'s description.
pub const DESCRIPTION_CLOSE: &str =
    "Closes a session and forgets its memory. Further calls with its id are `unknown_session`.";

impl SessionTool {
    /// Every session tool, in listing order.
    pub const ALL: [SessionTool; 5] = [
        SessionTool::Start,
        SessionTool::Eval,
        SessionTool::Inspect,
        SessionTool::List,
        SessionTool::Close,
    ];

    /// The tool's name, e.g. `"lisp_session_eval"`.
    pub const fn name(self) -> &'static str {
        match self {
            SessionTool::Start => "lisp_session_start",
            SessionTool::Eval => "lisp_session_eval",
            SessionTool::Inspect => "lisp_session_inspect",
            SessionTool::List => "lisp_session_list",
            SessionTool::Close => "lisp_session_close",
        }
    }

    /// The tool's fixed description.
    pub const fn description(self) -> &'static str {
        match self {
            SessionTool::Start => DESCRIPTION_START,
            SessionTool::Eval => DESCRIPTION_EVAL,
            SessionTool::Inspect => DESCRIPTION_INSPECT,
            SessionTool::List => DESCRIPTION_LIST,
            SessionTool::Close => DESCRIPTION_CLOSE,
        }
    }

    /// The tool called `name`, if it is a session tool.
    pub fn from_name(name: &str) -> Option<SessionTool> {
        SessionTool::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The failure of an eval whose resulting memory (with `*1 *2 *3`, encoded) is `bytes`, over
/// the session's bound `max`.
pub fn memory_limit_fail(bytes: u64, max: u64) -> Fail {
    let msg = format!(
        "the session's memory and *1 *2 *3 would be {bytes} bytes, over its bound of {max}; \
         nothing from this call was kept (def smaller values)"
    );
    Fail::new(FailReason::LimitExceeded, msg).with_detail("limit", SESSION_MEMORY_LIMIT)
}

/// What `lisp_session_start` answers: `{"status":"ok","session_id","idle_ttl_ms",
/// "max_memory_bytes"}`.
pub fn render_started(id: &str, idle_ttl_ms: u64, max_memory_bytes: u64) -> Payload {
    let mut o = ok(id);
    o.insert("idle_ttl_ms".into(), idle_ttl_ms.into());
    o.insert("max_memory_bytes".into(), max_memory_bytes.into());
    done(o)
}

/// What `lisp_session_inspect` answers: `{"status":"ok","session_id","memory":{name:
/// preview},"history":[preview, ...],"memory_bytes","truncated"}`.
pub fn render_inspect(
    id: &str,
    memory: &Value,
    history: &[Value],
    memory_bytes: u64,
    caps: &Caps,
) -> Payload {
    let mut truncated = false;
    let mut names = JMap::new();
    if let Value::Map(m) = memory {
        for (k, v) in m.iter() {
            let p = preview(v, caps.memory_preview_bytes, &mut truncated);
            names.insert(key_text(k), p.into());
        }
    }
    let history: Vec<Json> = history
        .iter()
        .map(|v| preview(v, caps.memory_preview_bytes, &mut truncated).into())
        .collect();
    let mut o = ok(id);
    o.insert("memory".into(), Json::Object(names));
    o.insert("history".into(), Json::Array(history));
    o.insert("memory_bytes".into(), memory_bytes.into());
    o.insert("truncated".into(), truncated.into());
    done(o)
}

/// One open session as `lisp_session_list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    pub id: String,
    /// Stored names, in the order they were first defined.
    pub stored_keys: Vec<String>,
    /// Encoded size of its memory and history.
    pub memory_bytes: u64,
    /// Evals that finished (successful or not).
    pub evals: u64,
    /// Time since its last call ended (0 while one runs).
    pub idle_ms: u64,
    /// An eval is running in it now.
    pub running: bool,
}

/// What `lisp_session_list` answers: `{"status":"ok","sessions":[{"session_id",
/// "stored_keys","memory_bytes","evals","idle_ms","running"}, ...],"max_sessions"}`.
pub fn render_list(sessions: &[SessionSummary], max_sessions: usize) -> Payload {
    let list: Vec<Json> = sessions
        .iter()
        .map(|s| {
            let mut o = JMap::new();
            o.insert("session_id".into(), s.id.clone().into());
            o.insert("stored_keys".into(), s.stored_keys.clone().into());
            o.insert("memory_bytes".into(), s.memory_bytes.into());
            o.insert("evals".into(), s.evals.into());
            o.insert("idle_ms".into(), s.idle_ms.into());
            o.insert("running".into(), s.running.into());
            Json::Object(o)
        })
        .collect();
    let mut o = JMap::new();
    o.insert("status".into(), "ok".into());
    o.insert("sessions".into(), Json::Array(list));
    o.insert("max_sessions".into(), max_sessions.into());
    done(o)
}

/// What `lisp_session_close` answers: `{"status":"ok","session_id","closed":true}`.
pub fn render_closed(id: &str) -> Payload {
    let mut o = ok(id);
    o.insert("closed".into(), true.into());
    done(o)
}

/// The stored names of a memory map, as JSON keys.
pub fn stored_keys(memory: &Value) -> Vec<String> {
    match memory {
        Value::Map(m) => m.keys().map(key_text).collect(),
        _ => Vec::new(),
    }
}

fn ok(id: &str) -> JMap<String, Json> {
    let mut o = JMap::new();
    o.insert("status".into(), "ok".into());
    o.insert("session_id".into(), id.into());
    o
}

fn done(o: JMap<String, Json>) -> Payload {
    Payload {
        is_error: false,
        json: Json::Object(o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lisp_eval::Reason;
    use crate::value::Map;

    fn memory() -> Value {
        let mut m = Map::new();
        m.insert(Value::string("x"), Value::Int(5));
        m.insert(Value::string("s"), Value::string("abcdefgh"));
        Value::Map(Box::new(m))
    }

    #[test]
    fn tool_names_and_descriptions_are_fixed() {
        let names: Vec<&str> = SessionTool::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            [
                "lisp_session_start",
                "lisp_session_eval",
                "lisp_session_inspect",
                "lisp_session_list",
                "lisp_session_close"
            ]
        );
        for t in SessionTool::ALL {
            assert_eq!(SessionTool::from_name(t.name()), Some(t));
            assert!(!t.description().is_empty());
        }
        assert_eq!(SessionTool::from_name("lisp_eval"), None);
        assert!(DESCRIPTION_EVAL.contains("a failed call keeps nothing"));
    }

    #[test]
    fn started_closed_and_list_golden() {
        assert_eq!(
            render_started("s1", 600_000, 1_048_576).text(),
            r#"{"status":"ok","session_id":"s1","idle_ttl_ms":600000,"max_memory_bytes":1048576}"#
        );
        assert_eq!(
            render_closed("s1").text(),
            r#"{"status":"ok","session_id":"s1","closed":true}"#
        );
        let s = SessionSummary {
            id: "s2".into(),
            stored_keys: stored_keys(&memory()),
            memory_bytes: 40,
            evals: 3,
            idle_ms: 12,
            running: false,
        };
        assert_eq!(
            render_list(&[s], 16).text(),
            r#"{"status":"ok","sessions":[{"session_id":"s2","stored_keys":["x","s"],"memory_bytes":40,"evals":3,"idle_ms":12,"running":false}],"max_sessions":16}"#
        );
        assert_eq!(
            render_list(&[], 4).text(),
            r#"{"status":"ok","sessions":[],"max_sessions":4}"#
        );
    }

    #[test]
    fn inspect_golden_and_capped() {
        let caps = Caps::default();
        let got = render_inspect("s1", &memory(), &[Value::Int(3), Value::Nil], 33, &caps);
        assert_eq!(
            got.text(),
            r#"{"status":"ok","session_id":"s1","memory":{"x":"5","s":"\"abcdefgh\""},"history":["3","nil"],"memory_bytes":33,"truncated":false}"#
        );
        let small = Caps {
            memory_preview_bytes: 4,
            ..Caps::default()
        };
        let got = render_inspect("s1", &memory(), &[], 33, &small);
        assert_eq!(
            got.text(),
            r#"{"status":"ok","session_id":"s1","memory":{"x":"5","s":"\"abc…"},"history":[],"memory_bytes":33,"truncated":true}"#
        );
    }

    #[test]
    fn the_memory_bound_is_a_memory_limit_naming_itself() {
        let (reason, msg) = Reason::of(&memory_limit_fail(2000, 1000));
        assert_eq!(reason, Reason::MemoryLimit);
        assert!(
            msg.starts_with("limit session_memory_bytes exceeded: ")
                && msg.contains("2000 bytes, over its bound of 1000"),
            "{msg}"
        );
    }
}
