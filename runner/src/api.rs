//! The in-process API: `run(source, RunOptions) -> Result<Step, Step>`.
//!
//! Tools reach the interpreter through the [`ToolHost`] trait. In-process callers give closures
//! ([`Tool::new`]); the `ptc-runner` binary implements `ToolHost` by forwarding each call to the
//! supervisor over IPC. Either way the interpreter only sees `call(name, args) -> result`.

use ptc_shared::client_protocol::RunRequest;
use ptc_shared::protocol::ToolDecl;
use ptc_shared::tool_calls::ToolCalls;
use ptc_shared::{Limits, Step, Value};
use std::time::Instant;

pub use ptc_shared::tool_calls::ToolFailure;

/// Where tool calls go. Called synchronously from the interpreter's single thread.
pub trait ToolHost {
    /// Calls tool `name` with `args` (a map with string keys as the program wrote them).
    fn call(&mut self, name: &str, args: Value) -> Result<Value, ToolFailure>;

    /// Called once per run, just before the program starts, when the granted data (context,
    /// memory, history) is in interpreter values and the request's copy of the context is gone.
    /// The program's clock (deadline, steps) starts right after it returns. The runner process
    /// re-bases its heap budget here, sets the program's CPU limit and tells the engine to start
    /// its deadline: granted data is not the program's allocation, nor its time
    /// (docs/ARCHITECTURE.md, "Granted data"). An `Err` ends the run before the program starts.
    fn imported(&mut self) -> Result<(), ptc_shared::Fail> {
        Ok(())
    }

    /// Called once per run when the program has ended, before its Step is made, with the
    /// granted context (the program's result may still share parts of it). A host that lives on
    /// drops it (the default); the runner process, which exits once its Step is sent, hands it
    /// to the kernel with the rest of its memory instead of freeing it value by value first.
    fn done_with(&mut self, context: crate::value::Value) {
        drop(context);
    }
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
        f.debug_struct("Tool").field("decl", &self.decl()).finish()
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

    /// What the program is told about this tool (and what its calls are checked against).
    pub fn decl(&self) -> ToolDecl {
        ToolDecl {
            name: self.name.clone(),
            signature: self.signature.clone(),
            description: self.description.clone(),
        }
    }
}

/// Everything a run needs besides its source.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// The run's data and checks, described once for every layer: `context`, `memory`,
    /// `history`, `signature`, `context_signature` and `validation` are read here. Its `program`
    /// and `tools` are not (the source is `run`'s argument, the tools are [`RunOptions::tools`]),
    /// nor its policy and limit fields (`limits` holds what they resolve to).
    pub request: RunRequest,
    /// Tools with in-process handlers. Ignored by [`run_with_host`], which takes `tool_names`.
    pub tools: Vec<Tool>,
    pub limits: Limits,
    /// The context already in interpreter values (the runner process decodes its `Execute`
    /// context straight into them); when set, `request.context` is not read.
    pub context_value: Option<crate::value::Value>,
}

impl RunOptions {
    /// The options of a client's request, run under `limits` (which the engine resolved from
    /// the request and its policy): the one place a [`RunRequest`] becomes `RunOptions`, for
    /// the runner process and for in-process runs alike. Returns the program and the declared
    /// tools beside them (closure tools are the caller's to add).
    pub fn from_request(
        mut request: RunRequest,
        limits: Limits,
    ) -> (String, Vec<ToolDecl>, RunOptions) {
        let program = std::mem::take(&mut request.program);
        let decls = std::mem::take(&mut request.tools);
        let opts = RunOptions {
            request,
            tools: Vec::new(),
            limits,
            context_value: None,
        };
        (program, decls, opts)
    }
}

/// A `ToolHost` over in-process closures; [`ToolCalls`] checks and records each call.
struct ClosureHost {
    tools: Vec<Tool>,
    calls: ToolCalls,
}

impl ToolHost for ClosureHost {
    fn call(&mut self, name: &str, args: Value) -> Result<Value, ToolFailure> {
        let args = self.calls.begin(name, args)?;
        let out = match self.tools.iter_mut().find(|t| t.name == name) {
            Some(tool) => (tool.handler)(args),
            None => Err(ToolFailure::NotFound),
        };
        self.calls.finish(out)
    }
}

/// Runs a program in-process with closure tools. `Ok` is a successful Step, `Err` a failed one.
/// Here the tools' host ([`ToolCalls`]) fills the Step's tool-call trace, and this entry point
/// sets `usage.duration_ms` (in a runner process, the engine does both).
pub fn run(source: &str, mut opts: RunOptions) -> Result<Step, Step> {
    let started = Instant::now();
    let tools = std::mem::take(&mut opts.tools);
    let decls: Vec<ToolDecl> = tools.iter().map(Tool::decl).collect();
    let names: Vec<String> = decls.iter().map(|d| d.name.clone()).collect();
    let calls = match ToolCalls::new(&decls, opts.request.validation, opts.limits.max_tool_calls) {
        Ok(c) => c,
        Err(fail) => {
            return Err(Step::failed(
                fail,
                opts.request.memory,
                opts.request.history,
            ));
        }
    };
    let mut host = ClosureHost { tools, calls };
    let mut step = crate::session::execute(source, &mut opts, &names, &mut host);
    step.tool_calls = host.calls.into_records();
    step.usage.tool_calls = u32::try_from(step.tool_calls.len()).unwrap_or(u32::MAX);
    step.usage.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    step.into_result()
}

/// Runs a program with an arbitrary tool host; `tool_names` are the declared tools (checked by
/// the analyzer). The host owns the tool-call checks and trace, and the caller the clock: the
/// Step's `tool_calls` are empty and `usage.duration_ms` is 0. The options are consumed: the
/// context moves into the interpreter rather than being copied.
pub fn run_with_host(
    source: &str,
    mut opts: RunOptions,
    tool_names: &[String],
    host: &mut dyn ToolHost,
) -> Result<Step, Step> {
    // A last line of defence for in-process hosts: every program-reachable recursion is bounded
    // and nothing is meant to panic, but a panic that slipped through must not unwind into (or
    // abort) the host. The interpreter's state is dropped with the closure, so nothing broken
    // is reused. (A stack overflow cannot be caught; that is what the bounds are for.)
    let run = std::panic::AssertUnwindSafe(|| {
        crate::session::execute(source, &mut opts, tool_names, host)
    });
    std::panic::catch_unwind(run)
        .unwrap_or_else(|_| {
            let msg =
                "the interpreter failed unexpectedly (a bug in ptc-runner, not in the program)";
            let fail = ptc_shared::Fail::new(ptc_shared::FailReason::RunnerCrashed, msg);
            Step::failed(
                fail,
                opts.request.memory.clone(),
                opts.request.history.clone(),
            )
        })
        .into_result()
}
