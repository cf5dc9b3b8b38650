//! The request side of the client API: [`Run`] (a builder for one execution) and [`Tool`] (a named
//! async closure the program may call, with its signature and description).
//!
//! Tools run in the client process, outside the sandbox: the supervisor forwards each call of the
//! program to the tool's closure and sends its result back to the runner.

use crate::Value;
use crate::client_protocol::RunRequest;
use crate::protocol::ToolDecl;
use crate::value::EncodedValue;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a tool closure may return: a ptc [`Value`] or a `serde_json::Value`.
pub trait IntoToolValue {
    /// Converts to a [`Value`]; `Err` becomes a `tool_error`.
    fn into_tool_value(self) -> Result<Value, String>;
}

impl IntoToolValue for Value {
    fn into_tool_value(self) -> Result<Value, String> {
        Ok(self)
    }
}

impl IntoToolValue for serde_json::Value {
    fn into_tool_value(self) -> Result<Value, String> {
        Value::from_json(&self).map_err(|e| e.to_string())
    }
}

/// What [`Run::context`] takes: a [`Value`], a `serde_json::Value`, or a context already in the
/// wire encoding ([`EncodedValue::from_json_text`] reads JSON text straight into one, with no
/// tree in between: the way for large contexts).
pub trait IntoContext {
    /// The context's encoding; `Err` becomes an `invalid_request`.
    fn into_context(self) -> Result<EncodedValue, String>;
}

impl<T: IntoToolValue> IntoContext for T {
    fn into_context(self) -> Result<EncodedValue, String> {
        self.into_tool_value().map(EncodedValue::from)
    }
}

impl IntoContext for EncodedValue {
    fn into_context(self) -> Result<EncodedValue, String> {
        Ok(self)
    }
}

type ToolFn = dyn Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync;

/// A tool hosted by the client: a name, an async closure, and what the program is told about it.
#[derive(Clone)]
pub struct Tool {
    decl: ToolDecl,
    call: Arc<ToolFn>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool").field("decl", &self.decl).finish()
    }
}

impl Tool {
    /// A tool from an async closure. The closure gets the call's argument (a map for
    /// `(tool/name {:k v})`, `nil` for `(tool/name)`); an `Err` is a `tool_error` the program
    /// can catch with `try`.
    ///
    /// ```
    /// use ptc_shared::client::Tool;
    /// use serde_json::json;
    /// let t = Tool::new("orders", |_args| async move { Ok::<_, String>(json!([{"total": 5}])) })
    ///     .signature("(status :string) -> [{total :int}]")
    ///     .description("Open orders");
    /// assert_eq!(t.name(), "orders");
    /// ```
    pub fn new<F, Fut, R, E>(name: impl Into<String>, f: F) -> Tool
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: IntoToolValue,
        E: fmt::Display,
    {
        let call = move |args: Value| -> BoxFuture<'static, Result<Value, String>> {
            let fut = f(args);
            Box::pin(async move {
                match fut.await {
                    Ok(r) => r.into_tool_value(),
                    Err(e) => Err(e.to_string()),
                }
            })
        };
        Tool {
            decl: ToolDecl::new(name, None),
            call: Arc::new(call),
        }
    }

    /// A tool from a plain (blocking-free, quick) closure, for callers without async code.
    pub fn sync<F, R, E>(name: impl Into<String>, f: F) -> Tool
    where
        F: Fn(Value) -> Result<R, E> + Send + Sync + 'static,
        R: IntoToolValue + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let f = Arc::new(f);
        Tool::new(name, move |args| {
            let f = Arc::clone(&f);
            async move { f(args) }
        })
    }

    /// The signature the program's calls are checked against, e.g. `"(id :int) -> :map"`.
    pub fn signature(mut self, signature: impl Into<String>) -> Tool {
        self.decl.signature = Some(signature.into());
        self
    }

    /// A one-line description (for the LLM's prompt).
    pub fn description(mut self, description: impl Into<String>) -> Tool {
        self.decl.description = Some(description.into());
        self
    }

    pub fn name(&self) -> &str {
        &self.decl.name
    }

    /// What is sent to the supervisor about this tool.
    pub fn decl(&self) -> &ToolDecl {
        &self.decl
    }

    /// Whether `other` is this tool (a clone of it), closure and all.
    pub fn same(&self, other: &Tool) -> bool {
        Arc::ptr_eq(&self.call, &other.call) && self.decl == other.decl
    }

    /// Calls the closure.
    pub fn call(&self, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        (self.call)(args)
    }
}

/// The tools of one run, by name. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    tools: Arc<HashMap<String, Tool>>,
}

impl ToolSet {
    pub(crate) fn from_map(tools: HashMap<String, Tool>) -> ToolSet {
        ToolSet {
            tools: Arc::new(tools),
        }
    }

    /// Calls tool `name`; an unknown name is an error (the engine reports undeclared tools
    /// itself, so this only happens with a misbehaving server).
    pub fn call(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        match self.tools.get(name) {
            Some(t) => t.call(args),
            None => {
                let msg = format!("no tool named `{name}` on this client");
                Box::pin(async move { Err(msg) })
            }
        }
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// One execution to run: the program, its data, the tools it may call, and how it is checked.
///
/// ```
/// use ptc_shared::client::{Run, Tool};
/// use serde_json::json;
/// use std::time::Duration;
/// let run = Run::new("(->> (tool/orders {:status \"open\"}) (map :total) (reduce +))")
///     .context(json!({"region": "eu"}))
///     .tool(Tool::new("orders", |_| async move { Ok::<_, String>(json!([{"total": 5}, {"total": 7}])) }))
///     .signature("() -> :int")
///     .timeout(Duration::from_millis(500));
/// assert_eq!(run.request().timeout_ms, Some(500));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Run {
    request: RunRequest,
    tools: HashMap<String, Tool>,
    /// A context/memory conversion error, reported as `invalid_request` when the run is sent.
    error: Option<String>,
}

impl Run {
    pub fn new(program: impl Into<String>) -> Run {
        Run {
            request: RunRequest {
                program: program.into(),
                ..RunRequest::default()
            },
            ..Run::default()
        }
    }

    /// The context map (`data/name`), from a [`Value`], a `serde_json::Value` or an
    /// [`EncodedValue`] (see [`IntoContext`]). JSON text is best given encoded: it is read
    /// straight into the wire encoding, with no tree, and a bad text is a typed error naming
    /// the byte where reading stopped.
    ///
    /// ```
    /// use ptc_shared::client::Run;
    /// use ptc_shared::value::{EncodedValue, JsonTextError};
    /// let ctx = EncodedValue::from_json_text(br#"{"rows": [1, 2]}"#, 16 << 20).unwrap();
    /// let run = Run::new("(count data/rows)").context(ctx);
    /// assert_eq!(run.request().context.encoded_len(), 15);
    /// let bad = EncodedValue::from_json_text(br#"{"rows": [1, 2}"#, 16 << 20);
    /// assert!(matches!(bad, Err(JsonTextError::Syntax { offset: 15, .. })));
    /// ```
    pub fn context(mut self, context: impl IntoContext) -> Run {
        match context.into_context() {
            Ok(v) => self.request.context = v,
            Err(e) => self.error = Some(format!("context: {e}")),
        }
        self
    }

    /// Memory from an earlier Step (`step.memory`).
    pub fn memory(mut self, memory: impl IntoToolValue) -> Run {
        match memory.into_tool_value() {
            Ok(v) => self.request.memory = v,
            Err(e) => self.error = Some(format!("memory: {e}")),
        }
        self
    }

    /// `*1 *2 *3` from an earlier Step (`step.history`).
    pub fn history(mut self, history: Vec<Value>) -> Run {
        self.request.history = history;
        self
    }

    /// Adds a tool (a later tool with the same name replaces an earlier one).
    pub fn tool(mut self, tool: Tool) -> Run {
        self.tools.insert(tool.name().to_string(), tool);
        self
    }

    /// The signature the result is validated against, e.g. `"() -> :int"`.
    pub fn signature(mut self, signature: impl Into<String>) -> Run {
        self.request.signature = Some(signature.into());
        self
    }

    /// The signature of the step that produced this run's context (e.g. its `step.signature`):
    /// its output fields become this run's inputs, so types need not be restated (the run's own
    /// signature, if set, keeps its output). An unparsable one fails the run with
    /// `invalid_request`.
    pub fn context_signature(mut self, previous: impl Into<String>) -> Run {
        self.request.context_signature = Some(previous.into());
        self
    }

    /// How strictly signatures are applied (default `enabled`).
    pub fn validation(mut self, mode: crate::signature::Mode) -> Run {
        self.request.validation = mode;
        self
    }

    /// The policy to run under (the server's default otherwise).
    pub fn policy(mut self, policy: impl Into<String>) -> Run {
        self.request.policy = Some(policy.into());
        self
    }

    /// A wall-clock timeout at most the policy's (a looser one is `invalid_request`: choose a
    /// policy that allows it).
    pub fn timeout(mut self, timeout: Duration) -> Run {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.request.timeout_ms = Some(ms);
        self
    }

    /// An evaluation step budget at most the policy's (a looser one is `invalid_request`).
    pub fn max_steps(mut self, steps: u64) -> Run {
        self.request.max_steps = Some(steps);
        self
    }

    /// A full set of limits, each at most the policy's (a looser one is `invalid_request`).
    pub fn limits(mut self, limits: crate::Limits) -> Run {
        self.request.limits = Some(limits);
        self
    }

    /// The wire request this run sends (tool declarations are added by [`Run::into_parts`]).
    pub fn request(&self) -> &RunRequest {
        &self.request
    }

    /// Splits into the wire request (with tool declarations) and the tools, or the conversion
    /// error found while building.
    pub fn into_parts(self) -> Result<(RunRequest, ToolSet), String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut request = self.request;
        let mut decls: Vec<ToolDecl> = self.tools.values().map(|t| t.decl.clone()).collect();
        decls.sort_by(|a, b| a.name.cmp(&b.name));
        request.tools = decls;
        Ok((
            request,
            ToolSet {
                tools: Arc::new(self.tools),
            },
        ))
    }
}
