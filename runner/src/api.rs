//! The in-process API: `run(source, RunOptions) -> Result<Step, Step>`.
//!
//! Tools reach the interpreter through the [`ToolHost`] trait. In-process callers give closures
//! ([`Tool::new`]); the `ptc-runner` binary implements `ToolHost` by forwarding each call to the
//! supervisor over IPC. Either way the interpreter only sees `call(name, args) -> result`.

use ptc_shared::signature::{Mode, Signature};
use ptc_shared::{Fail, Limits, Step, Value};

/// How a tool call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolFailure {
    /// No tool of that name: the run fails with `tool_not_found`.
    NotFound,
    /// The tool ran and reported an error: `tool_error` with this message (catchable by `try`).
    Error(String),
    /// The host ended the run (deadline passed while the tool ran, validation failed, tool-call
    /// limit, connection lost): the Step fails with exactly this, and `try` cannot catch it.
    Terminal(Fail),
}

/// Where tool calls go. Called synchronously from the interpreter's single thread.
pub trait ToolHost {
    /// Calls tool `name` with `args` (a map with string keys as the program wrote them).
    fn call(&mut self, name: &str, args: Value) -> Result<Value, ToolFailure>;
}

/// A tool the program may call: name, optional signature and description, and its handler.
pub struct Tool {
    pub name: String,
    /// Signature text, e.g. `"(status :string) -> [{total :int}]"`.
    pub signature: Option<String>,
    pub description: Option<String>,
    handler: Box<dyn FnMut(Value) -> Result<Value, ToolFailure>>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("signature", &self.signature)
            .finish()
    }
}

impl Tool {
    /// A tool backed by a closure; an `Err` becomes `tool_error` with that message.
    pub fn new(
        name: impl Into<String>,
        mut handler: impl FnMut(Value) -> Result<Value, String> + 'static,
    ) -> Tool {
        Tool::with_failure(name, move |args| handler(args).map_err(ToolFailure::Error))
    }

    /// A tool whose closure may also end the run ([`ToolFailure::Terminal`], e.g. a deadline).
    pub fn with_failure(
        name: impl Into<String>,
        handler: impl FnMut(Value) -> Result<Value, ToolFailure> + 'static,
    ) -> Tool {
        Tool {
            name: name.into(),
            signature: None,
            description: None,
            handler: Box::new(handler),
        }
    }

    /// Sets the signature text.
    pub fn signature(mut self, sig: impl Into<String>) -> Tool {
        self.signature = Some(sig.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Tool {
        self.description = Some(d.into());
        self
    }
}

/// Everything a run needs besides its source.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// The context map (`data/k`, `ctx/k`); `Nil` means empty.
    pub context: Value,
    /// The user namespace from earlier runs (`def`s); `Nil` means empty.
    pub memory: Value,
    /// `*1 *2 *3`, newest first.
    pub history: Vec<Value>,
    /// Tools with in-process handlers. Ignored by [`run_with_host`], which takes `tool_names`.
    pub tools: Vec<Tool>,
    pub limits: Limits,
    /// The program's signature (shorthand or Malli-lite): validates the context and the result.
    pub signature: Option<String>,
    /// How strictly signatures are applied (default `enabled`).
    pub validation: Mode,
    /// The signature of the step that produced this run's context: its output fields become
    /// this run's inputs (see `Signature::chain`), so types need not be restated.
    pub context_signature: Option<String>,
}

/// A `ToolHost` over in-process closures, checking declared tool signatures around each call.
struct ClosureHost<'a> {
    tools: &'a mut [Tool],
    signatures: Vec<Option<Signature>>,
    mode: Mode,
}

impl ToolHost for ClosureHost<'_> {
    fn call(&mut self, name: &str, args: Value) -> Result<Value, ToolFailure> {
        let i = self
            .tools
            .iter()
            .position(|t| t.name == name)
            .ok_or(ToolFailure::NotFound)?;
        let sig = self.signatures.get(i).and_then(Option::as_ref);
        let args = match sig {
            Some(s) => {
                crate::validate::tool_args(name, s, args, self.mode)
                    .map_err(ToolFailure::Terminal)?
                    .0
            }
            None => args,
        };
        let tool = self.tools.get_mut(i).ok_or(ToolFailure::NotFound)?;
        let out = (tool.handler)(args)?;
        match sig {
            Some(s) => Ok(crate::validate::tool_result(name, s, out, self.mode)
                .map_err(ToolFailure::Terminal)?
                .0),
            None => Ok(out),
        }
    }
}

/// Parses the tools' signatures; strict validation requires every tool to have one.
fn tool_signatures(tools: &[Tool], mode: Mode) -> Result<Vec<Option<Signature>>, Fail> {
    let mut out = Vec::with_capacity(tools.len());
    for t in tools {
        match t.signature.as_deref() {
            Some(s) => out.push(Some(crate::validate::parse(
                s,
                &format!("tool {}", t.name),
            )?)),
            None if mode == Mode::Strict => {
                let msg = format!(
                    "strict validation requires a signature for every tool; `{}` has none",
                    t.name
                );
                return Err(Fail::new(ptc_shared::FailReason::ValidationError, msg));
            }
            None => out.push(None),
        }
    }
    Ok(out)
}

/// Runs a program in-process with closure tools. `Ok` is a successful Step, `Err` a failed one.
pub fn run(source: &str, mut opts: RunOptions) -> Result<Step, Step> {
    let mut tools = std::mem::take(&mut opts.tools);
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    let signatures = tool_signatures(&tools, opts.validation).map_err(Step::failed)?;
    let mut host = ClosureHost {
        tools: &mut tools,
        signatures,
        mode: opts.validation,
    };
    run_with_host(source, &opts, &names, &mut host)
}

/// Runs a program with an arbitrary tool host; `tool_names` are the declared tools (checked by
/// the analyzer and by `call`).
pub fn run_with_host(
    source: &str,
    opts: &RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Result<Step, Step> {
    // A last line of defence for in-process hosts: every program-reachable recursion is bounded
    // and nothing is meant to panic, but a panic that slipped through must not unwind into (or
    // abort) the host. The interpreter's state is dropped with the closure, so nothing broken
    // is reused. (A stack overflow cannot be caught; that is what the bounds are for.)
    let run =
        std::panic::AssertUnwindSafe(|| crate::session::execute(source, opts, tool_names, host));
    std::panic::catch_unwind(run)
        .unwrap_or_else(|_| {
            let msg =
                "the interpreter failed unexpectedly (a bug in ptc-runner, not in the program)";
            Step::failed(Fail::new(ptc_shared::FailReason::RunnerCrashed, msg))
        })
        .into_result()
}
