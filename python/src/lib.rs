//! `ptc_sandbox._native`: the Python package's native half, a thin layer over the client library
//! (`ptc_supervisor::client`: `Client::embedded` / `Client::connect`, `Run`, `Tool`). It never
//! speaks the wire protocol itself.
//!
//! Design: one tokio runtime per process (two workers, built on first use) drives every client;
//! a `NativeClient` is a cheap `Client` handle that any number of Python threads may share. A
//! blocking `run` detaches from the interpreter while it waits (other Python threads run, and
//! this run's tool calls attach on tokio's blocking pool), waking every 100 ms only to let
//! Ctrl-C cancel the run. `start` is the asyncio path: it returns at once and calls `done` with
//! the Step from a pool thread. `delegate` / `start_delegate` do the same for agent missions
//! ([`agent`]). The idiomatic API (Step, exceptions, Tool, Agent) is Python
//! code in `ptc_sandbox/`; this module returns Steps as dicts (see [`convert::step_to_py`]).

mod agent;
mod convert;
mod tools;

use ptc_shared::{FailReason, Step, Value};
use ptc_supervisor::client::{Client, Embedded, Run, RunHandle};
use ptc_supervisor::engine::EngineConfig;
use ptc_supervisor::policy::PolicySource;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::runtime::Runtime;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The process's runtime, built on first use.
fn runtime() -> PyResult<&'static Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ptc-python")
        .enable_all()
        .build()
        .map_err(|e| error("ClientError", format!("cannot start a runtime: {e}")))?;
    // Another thread may have won the race; its runtime is used and this one dropped.
    let _ = RUNTIME.set(rt);
    RUNTIME
        .get()
        .ok_or_else(|| error("ClientError", "no runtime".to_string()))
}

/// An exception of class `name` from `ptc_sandbox._errors` (the Python side defines them all).
fn error(name: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let class = py
            .import("ptc_sandbox._errors")
            .and_then(|m| m.getattr(name));
        match class.and_then(|c| c.call1((message.clone(),))) {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        }
    })
}

/// A ptc value kept exactly (keywords stay keywords): a Step's memory, handed back to the next
/// run unchanged.
#[pyclass(frozen, module = "ptc_sandbox._native")]
#[derive(Debug)]
pub struct NativeValue(pub Value);

#[pymethods]
impl NativeValue {
    fn __repr__(&self) -> String {
        format!("NativeValue({})", ptc_shared::value::pr_str(&self.0))
    }
}

/// A started asyncio run: `cancel()` kills its runner (the Step then says `cancelled`).
#[pyclass(frozen, module = "ptc_sandbox._native")]
pub struct NativeRun {
    cancel: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for NativeRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeRun").finish_non_exhaustive()
    }
}

#[pymethods]
impl NativeRun {
    fn cancel(&self) {
        (self.cancel)();
    }
}

/// What one run is given, as the Python layer passes it (a dict with these keys).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct RunArgs {
    program: String,
    tools: Vec<tools::ToolSpec>,
    context: Option<Py<PyAny>>,
    memory: Option<Py<PyAny>>,
    signature: Option<String>,
    timeout_ms: Option<u64>,
    max_steps: Option<u64>,
    policy: Option<String>,
}

impl RunArgs {
    /// The client library's `Run`; data that does not convert raises `ConversionError`.
    fn into_run(self, py: Python<'_>) -> PyResult<Run> {
        let mut run = Run::new(self.program);
        if let Some(c) = &self.context {
            run = run.context(to_value(c.bind(py), "context")?);
        }
        if let Some(m) = &self.memory {
            let m = m.bind(py);
            run = match m.cast::<NativeValue>() {
                Ok(exact) => run.memory(exact.get().0.clone()),
                Err(_) => run.memory(to_value(m, "memory")?),
            };
        }
        for spec in self.tools {
            run = run.tool(tools::into_tool(spec));
        }
        if let Some(s) = self.signature {
            run = run.signature(s);
        }
        if let Some(ms) = self.timeout_ms {
            run = run.timeout(Duration::from_millis(ms));
        }
        if let Some(n) = self.max_steps {
            run = run.max_steps(n);
        }
        if let Some(p) = self.policy {
            run = run.policy(p);
        }
        Ok(run)
    }
}

fn to_value(obj: &Bound<'_, PyAny>, root: &str) -> PyResult<Value> {
    convert::to_value(obj, root).map_err(|e| {
        let err = error("ConversionError", e.to_string());
        Python::attach(|py| {
            let _ = err.value(py).setattr("path", e.path.clone());
        });
        err
    })
}

/// A client handle: an embedded engine or a daemon connection.
#[pyclass(frozen, module = "ptc_sandbox._native")]
#[derive(Debug)]
pub struct NativeClient {
    client: Client,
}

#[pymethods]
impl NativeClient {
    /// An in-process engine running `runner` (the `ptc-runner` binary), with the built-in
    /// policies (or `$PTC_POLICIES`).
    #[staticmethod]
    fn embedded(py: Python<'_>, runner: PathBuf) -> PyResult<NativeClient> {
        let rt = runtime()?;
        let made = py.detach(|| {
            let _guard = rt.enter();
            let policies = PolicySource::from_env().load().map_err(|e| e.to_string())?;
            Client::embedded_with(EngineConfig::new(runner, policies)).map_err(|e| e.to_string())
        });
        let client = made.map_err(|e| error("ClientError", format!("embedded engine: {e}")))?;
        Ok(NativeClient { client })
    }

    /// A connection to a `ptc-supervisor` daemon's socket.
    #[staticmethod]
    fn connect(py: Python<'_>, path: PathBuf) -> PyResult<NativeClient> {
        let rt = runtime()?;
        let shown = path.display().to_string();
        let made = py.detach(|| rt.block_on(Client::connect(path)));
        let client = made.map_err(|e| error("ClientError", format!("{shown}: {e}")))?;
        Ok(NativeClient { client })
    }

    /// Runs and blocks (detached from the interpreter) until the Step, returned as a dict.
    fn run(&self, py: Python<'_>, args: RunArgs) -> PyResult<Py<PyDict>> {
        let run = args.into_run(py)?;
        self.block(py, |c| c.start(run))
    }

    /// Starts a run and returns at once; `done(step_dict)` is called from another thread.
    fn start(&self, py: Python<'_>, args: RunArgs, done: Py<PyAny>) -> PyResult<NativeRun> {
        let run = args.into_run(py)?;
        self.spawn(|c| c.start(run), done)
    }

    /// Runs a SubAgent mission and blocks until its Step (see `delegate` in the Python layer).
    fn delegate(
        &self,
        py: Python<'_>,
        agent: agent::AgentArgs,
        context: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyDict>> {
        let input = mission_input(py, context)?;
        let agent = agent.into_agent();
        self.block(py, |c| c.start_mission(agent, input))
    }

    /// Starts a mission and returns at once; `done(step_dict)` is called from another thread.
    fn start_delegate(
        &self,
        py: Python<'_>,
        agent: agent::AgentArgs,
        context: Option<Py<PyAny>>,
        done: Py<PyAny>,
    ) -> PyResult<NativeRun> {
        let input = mission_input(py, context)?;
        let agent = agent.into_agent();
        self.spawn(|c| c.start_mission(agent, input), done)
    }
}

impl NativeClient {
    /// Starts with `begin` (inside the runtime) and waits for the Step.
    fn block(
        &self,
        py: Python<'_>,
        begin: impl FnOnce(&Client) -> RunHandle,
    ) -> PyResult<Py<PyDict>> {
        let rt = runtime()?;
        let handle = {
            let _guard = rt.enter();
            begin(&self.client)
        };
        let step = wait(py, rt, handle)?;
        Ok(convert::step_to_py(py, &step)?.unbind())
    }

    /// Starts with `begin` and hands the Step to `done` when it comes.
    fn spawn(
        &self,
        begin: impl FnOnce(&Client) -> RunHandle,
        done: Py<PyAny>,
    ) -> PyResult<NativeRun> {
        let rt = runtime()?;
        let handle = {
            let _guard = rt.enter();
            begin(&self.client)
        };
        let cancel = Box::new(handle.canceller());
        rt.spawn(async move {
            let step = match handle.await {
                Ok(s) | Err(s) => s,
            };
            let _ = tokio::task::spawn_blocking(move || deliver(&done, &step)).await;
        });
        Ok(NativeRun { cancel })
    }
}

/// A mission's context: data (converted like a run's), or nothing (an empty map).
fn mission_input(py: Python<'_>, context: Option<Py<PyAny>>) -> PyResult<Value> {
    match context {
        Some(c) => to_value(c.bind(py), "context"),
        None => Ok(Value::Map(Box::new(ptc_shared::value::Map::new()))),
    }
}

/// Waits for `handle` detached from the interpreter; a pending signal (Ctrl-C) cancels the run,
/// waits for its runner to be gone, and raises.
fn wait(py: Python<'_>, rt: &Runtime, mut handle: RunHandle) -> PyResult<Step> {
    loop {
        let slice = py.detach(|| {
            rt.block_on(async {
                tokio::time::timeout(Duration::from_millis(100), &mut handle).await
            })
        });
        if let Ok(Ok(step) | Err(step)) = slice {
            return Ok(step);
        }
        if let Err(e) = py.check_signals() {
            handle.cancel();
            let _ = py.detach(|| rt.block_on(&mut handle));
            return Err(e);
        }
    }
}

/// Hands a finished Step to the Python callback; a conversion failure is handed over instead.
fn deliver(done: &Py<PyAny>, step: &Step) {
    Python::attach(|py| {
        let payload = match convert::step_to_py(py, step) {
            Ok(d) => d.into_any(),
            Err(e) => e.into_value(py).into_bound(py).into_any(),
        };
        if let Err(e) = done.call1(py, (payload,)) {
            e.write_unraisable(py, None);
        }
    });
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeClient>()?;
    m.add_class::<NativeRun>()?;
    m.add_class::<NativeValue>()?;
    let reasons: Vec<&str> = FailReason::ALL.iter().map(|r| r.as_str()).collect();
    m.add("FAIL_REASONS", reasons)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
