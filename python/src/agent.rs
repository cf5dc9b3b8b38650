//! Python agents: the client library's `Agent` built from the Python layer's description, with
//! the LLM a Python callable.
//!
//! The LLM gets the request as a dict (`system`, `messages` [{`role`, `content`}], `turn`,
//! `agent`, `model`) and answers with the text, or `{"content": str, "usage": {"input_tokens",
//! "output_tokens"}}`. It runs like a tool: on tokio's blocking pool, attached only while Python
//! code runs. Raising `ptc_sandbox.RetryableLlmError` is a retryable LLM error (retried with
//! backoff, no turn spent); any other exception ends the mission with `llm_error`.

use crate::{convert, tools};
use ptc_shared::llm::{Llm, LlmError, LlmRequest, LlmResponse};
use ptc_supervisor::client::{Agent, Tool};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// One agent of the tree, as the Python layer passes it (a dict with these keys).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct AgentArgs {
    prompt: String,
    name: Option<String>,
    description: Option<String>,
    signature: Option<String>,
    tools: Vec<tools::ToolSpec>,
    agents: Vec<AgentArgs>,
    max_turns: Option<u32>,
    model: Option<String>,
    turn_timeout_ms: Option<u64>,
    policy: Option<String>,
    llm: Option<Py<PyAny>>,
    turn_budget: Option<u32>,
    max_depth: Option<u32>,
    mission_timeout_ms: Option<u64>,
    token_budget: Option<u64>,
}

/// Tools already built, by name, with the Python callable they wrap: one tool used by several
/// agents of the tree stays one closure (the client library refuses two under one name).
type Built = HashMap<String, (usize, Tool)>;

impl AgentArgs {
    pub fn into_agent(self) -> Agent {
        self.build(&mut HashMap::new())
    }

    fn build(mut self, built: &mut Built) -> Agent {
        let prompt = std::mem::take(&mut self.prompt);
        let mut agent = self.options(Agent::new(prompt));
        if let Some(n) = self.name {
            agent = agent.name(n);
        }
        if let Some(d) = self.description {
            agent = agent.description(d);
        }
        if let Some(s) = self.signature {
            agent = agent.signature(s);
        }
        for spec in self.tools {
            agent = agent.tool(shared_tool(built, spec));
        }
        for child in self.agents {
            agent = agent.agent(child.build(built));
        }
        match self.llm {
            Some(llm) => agent.llm(py_llm(llm)),
            None => agent,
        }
    }

    fn options(&self, mut agent: Agent) -> Agent {
        if let Some(n) = self.max_turns {
            agent = agent.max_turns(n);
        }
        if let Some(m) = &self.model {
            agent = agent.model(m.clone());
        }
        if let Some(ms) = self.turn_timeout_ms {
            agent = agent.turn_timeout(Duration::from_millis(ms));
        }
        if let Some(p) = &self.policy {
            agent = agent.policy(p.clone());
        }
        if let Some(n) = self.turn_budget {
            agent = agent.turn_budget(n);
        }
        if let Some(n) = self.max_depth {
            agent = agent.max_depth(n);
        }
        if let Some(ms) = self.mission_timeout_ms {
            agent = agent.mission_timeout(Duration::from_millis(ms));
        }
        if let Some(n) = self.token_budget {
            agent = agent.token_budget(n);
        }
        agent
    }
}

fn shared_tool(built: &mut Built, spec: tools::ToolSpec) -> Tool {
    let (name, id) = (spec.0.clone(), spec.1.as_ptr() as usize);
    if let Some((known, tool)) = built.get(&name)
        && *known == id
    {
        return tool.clone();
    }
    let tool = tools::into_tool(spec);
    built.insert(name, (id, tool.clone()));
    tool
}

/// An LLM whose answers come from a Python callable.
fn py_llm(invoke: Py<PyAny>) -> Llm {
    let invoke = Arc::new(invoke);
    Llm::new(move |req: LlmRequest| {
        let invoke = Arc::clone(&invoke);
        async move {
            let job = tokio::task::spawn_blocking(move || call_llm(&invoke, &req));
            job.await
                .unwrap_or_else(|e| Err(LlmError::Fatal(format!("the LLM's thread failed: {e}"))))
        }
    })
}

fn call_llm(invoke: &Py<PyAny>, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
    let json = serde_json::to_value(req).map_err(|e| LlmError::Fatal(e.to_string()))?;
    Python::attach(|py| {
        let arg = convert::json_to_py(py, &json).map_err(|e| fatal(py, &e))?;
        match invoke.call1(py, (arg,)) {
            Ok(answer) => response(answer.bind(py)),
            Err(e) if is_retryable(py, &e) => {
                Err(LlmError::Retryable(tools::error_message(py, &e)))
            }
            Err(e) => Err(fatal(py, &e)),
        }
    })
}

fn fatal(py: Python<'_>, e: &PyErr) -> LlmError {
    LlmError::Fatal(tools::error_message(py, e))
}

fn is_retryable(py: Python<'_>, e: &PyErr) -> bool {
    let class = py
        .import("ptc_sandbox._errors")
        .and_then(|m| m.getattr("RetryableLlmError"));
    class.is_ok_and(|c| e.value(py).is_instance(&c).unwrap_or(false))
}

/// The callable's answer: text, or a dict in the shape of [`LlmResponse`].
fn response(answer: &Bound<'_, PyAny>) -> Result<LlmResponse, LlmError> {
    if let Ok(s) = answer.cast::<PyString>() {
        let text = s.to_cow().map_err(|e| LlmError::Fatal(e.to_string()))?;
        return Ok(LlmResponse::text(text));
    }
    let shape = "the LLM must answer a str or {\"content\": str, \"usage\": {...}}";
    let value =
        convert::to_value(answer, "LLM answer").map_err(|e| LlmError::Fatal(e.to_string()))?;
    let json = value
        .to_json()
        .map_err(|e| LlmError::Fatal(format!("{shape}: {e}")))?;
    serde_json::from_value(json).map_err(|e| LlmError::Fatal(format!("{shape}: {e}")))
}
