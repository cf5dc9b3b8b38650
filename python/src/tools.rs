//! Python callables as client-library tools.
//!
//! The Python side hands each tool over as one `invoke(args)` callable that already knows how to
//! call the user's function (keyword arguments, awaiting a coroutine on the right event loop).
//! Here it becomes an async [`Tool`] whose call runs on tokio's blocking pool, attached to the
//! interpreter only while Python code runs: tool calls of concurrent runs proceed in parallel
//! with each other and with the run that waits (that thread is detached). An exception is the
//! tool's error message (`tool_error` for the program); a result that does not convert is one
//! too, naming the path (`result of tool orders[0]['when']: cannot convert datetime`).

use crate::convert;
use ptc_shared::Value;
use ptc_supervisor::client::Tool;
use pyo3::prelude::*;
use std::sync::Arc;

/// One tool as the Python layer passes it: `(name, invoke, signature, description)`.
pub type ToolSpec = (String, Py<PyAny>, Option<String>, Option<String>);

/// The client library's tool calling `invoke(args)`.
pub fn into_tool((name, invoke, signature, description): ToolSpec) -> Tool {
    let invoke = Arc::new(invoke);
    let mut tool = Tool::new(name.clone(), move |args: Value| {
        let (invoke, name) = (Arc::clone(&invoke), name.clone());
        async move {
            let job = tokio::task::spawn_blocking(move || call(&invoke, &name, &args));
            job.await
                .unwrap_or_else(|e| Err(format!("the tool's thread failed: {e}")))
        }
    });
    if let Some(s) = signature {
        tool = tool.signature(s);
    }
    if let Some(d) = description {
        tool = tool.description(d);
    }
    tool
}

/// Calls `invoke(args)` and converts its result; any exception becomes the error message.
pub fn call(invoke: &Py<PyAny>, name: &str, args: &Value) -> Result<Value, String> {
    Python::attach(|py| {
        let args = convert::to_py(py, args).map_err(|e| error_message(py, &e))?;
        let result = invoke
            .call1(py, (args,))
            .map_err(|e| error_message(py, &e))?;
        let root = format!("result of tool {name}");
        convert::to_value(result.bind(py), &root).map_err(|e| e.to_string())
    })
}

/// An exception's message (`str(e)`), or its type's name when that is empty.
pub fn error_message(py: Python<'_>, e: &PyErr) -> String {
    let text = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if text.is_empty() {
        e.get_type(py)
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "exception".into())
    } else {
        text
    }
}
