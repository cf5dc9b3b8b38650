//! The five session tools of `ptc mcp --sessions`: their arguments, schemas and handlers.
//!
//! `lisp_session_eval` is `lisp_eval` with a session: the same argument checks
//! ([`args::parse_as`]), the same execution slot and the same wait ([`LispEval::wait`]), with
//! the session's memory and history put into the run and the Step's taken back
//! ([`Sessions::checkout`] / [`Lease::commit`](super::sessions::Lease::commit)). The other four
//! only read or change the table. Payloads come from `ptc_shared::lisp_eval` (and its
//! `session` module).

use super::sessions::Sessions;
use super::{LispEval, args, render};
use ptc_shared::Step;
use ptc_shared::lisp_eval::session::SessionTool;
use ptc_shared::lisp_eval::{ArgsError, Caps, Payload, json_kind, render_step};
use rmcp::RoleServer;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::service::RequestContext;
use serde_json::{Map as JMap, Value as Json};
use std::sync::Arc;

const SESSION_ID: &str = "session_id";

impl LispEval {
    /// Answers one call of a session tool.
    pub(super) async fn session_call(
        &self,
        sessions: &Sessions,
        tool: SessionTool,
        arguments: Option<JsonObject>,
        ctx: RequestContext<RoleServer>,
    ) -> Payload {
        let mut a = arguments.unwrap_or_default();
        let takes = takes(tool);
        let answer = match tool {
            SessionTool::Eval => {
                let id = match session_id(&mut a) {
                    Ok(id) => id,
                    Err(e) => return e.render(),
                };
                return self.session_eval(sessions, &id, a, takes, ctx).await;
            }
            SessionTool::Start | SessionTool::List => {
                if let Err(e) = args::only(&a, &[], takes) {
                    return e.render();
                }
                match tool {
                    SessionTool::Start => sessions.start(),
                    _ => Ok(sessions.list()),
                }
            }
            SessionTool::Inspect | SessionTool::Close => {
                let id = match session_id(&mut a)
                    .and_then(|id| args::only(&a, &[], takes).map(|()| id))
                {
                    Ok(id) => id,
                    Err(e) => return e.render(),
                };
                match tool {
                    SessionTool::Inspect => sessions.inspect(&id, &Caps::default()),
                    _ => sessions.close(&id),
                }
            }
        };
        answer.unwrap_or_else(|e| e.render())
    }

    /// One eval in a session: checked like `lisp_eval`, run with the session's memory and
    /// history, and kept only if it succeeded and fits the session's bound.
    async fn session_eval(
        &self,
        sessions: &Sessions,
        id: &str,
        a: JsonObject,
        takes: &str,
        ctx: RequestContext<RoleServer>,
    ) -> Payload {
        let call = match args::parse_as(a, takes) {
            Ok(c) => c,
            Err(e) => return e.render(),
        };
        let Some(_slot) = self.slot() else {
            return self.busy();
        };
        let lease = match sessions.checkout(id) {
            Ok(l) => l,
            Err(e) => return e.render(),
        };
        let run = call
            .run
            .memory(lease.memory.clone())
            .history(lease.history.clone());
        let step = match self.wait(self.start(run), ctx.ct.cancelled_owned()).await {
            Ok(step) => step,
            Err(stopped) => return stopped,
        };
        let payload = render(&step, call.schema, true);
        if payload.is_error {
            return payload;
        }
        let (memory, history) = (lease.memory.clone(), lease.history.clone());
        match lease.commit(&step) {
            Ok(()) => payload,
            Err(fail) => render_step(&Step::failed(fail, memory, history), &Default::default()),
        }
    }
}

/// Takes `session_id` out of the arguments: a string, required.
fn session_id(a: &mut JsonObject) -> Result<String, ArgsError> {
    match a.remove(SESSION_ID) {
        Some(Json::String(s)) => Ok(s),
        None | Some(Json::Null) => Err(ArgsError(
            "this tool needs a `session_id` argument (from lisp_session_start)".into(),
        )),
        Some(other) => Err(ArgsError(format!(
            "`session_id` must be a string, got {}",
            json_kind(&other)
        ))),
    }
}

/// What a session tool takes, for the message about an unknown argument.
fn takes(tool: SessionTool) -> &'static str {
    match tool {
        SessionTool::Start | SessionTool::List => "it takes no arguments",
        SessionTool::Eval => "it takes session_id, program, context and output_schema",
        SessionTool::Inspect | SessionTool::Close => "it takes only session_id",
    }
}

/// The session tools as tools/list shows them (after `lisp_eval`).
pub fn tools() -> Vec<Tool> {
    SessionTool::ALL
        .into_iter()
        .map(|t| {
            Tool::new(t.name(), t.description(), Arc::new(input_schema(t))).with_annotations(
                ToolAnnotations::new()
                    .read_only(matches!(t, SessionTool::Inspect | SessionTool::List))
                    .destructive(t == SessionTool::Close)
                    .idempotent(matches!(t, SessionTool::Inspect | SessionTool::List))
                    .open_world(false),
            )
        })
        .collect()
}

fn input_schema(tool: SessionTool) -> JMap<String, Json> {
    let id = serde_json::json!({
        "type": "string",
        "description": "The id lisp_session_start returned, e.g. \"s1\".",
    });
    let mut schema = match tool {
        SessionTool::Eval => args::input_schema(),
        _ => {
            match serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
            {
                Json::Object(o) => o,
                _ => JMap::new(),
            }
        }
    };
    if matches!(tool, SessionTool::Start | SessionTool::List) {
        return schema;
    }
    if let Some(Json::Object(props)) = schema.get_mut("properties") {
        props.insert(SESSION_ID.into(), id);
    }
    let mut required = vec![Json::from(SESSION_ID)];
    if tool == SessionTool::Eval {
        required.push("program".into());
    }
    schema.insert("required".into(), Json::Array(required));
    schema
}
