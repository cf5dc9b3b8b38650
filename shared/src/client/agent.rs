//! The mission side of the client API: [`Agent`], a builder for a SubAgent mission (a prompt
//! template, a signature, tools, nested agents, budgets, and the LLMs that answer it).
//!
//! The builder keeps what stays in the client process (tool closures, LLMs) apart from what is
//! sent: [`Agent::into_parts`] splits it into the one wire description of a mission
//! ([`MissionRequest`]), the tools of the whole agent tree, and the LLM set. The supervisor
//! (daemon or embedded) runs the loop and calls back for every tool call and LLM request.
//!
//! Mission-wide settings (budgets, retries, the LLMs) are read from the agent handed to
//! `Client::delegate`; on a nested agent they are ignored.

use super::run::{IntoToolValue, Tool, ToolSet};
use crate::llm::{Llm, LlmSet, Retry};
use crate::mission::{AgentSpec, MissionInput, MissionOptions, MissionRequest};
use crate::protocol::ToolDecl;
use crate::signature::Mode;
use crate::{Step, Value};
use std::collections::HashMap;
use std::time::Duration;

/// A mission's agent: build it, then hand it to `Client::delegate` with its context.
///
/// ```
/// use ptc_shared::client::{Agent, Tool};
/// use ptc_shared::llm::{Llm, LlmRequest, LlmResponse};
/// use serde_json::json;
/// let agent = Agent::new("How many open orders are in {{region}}?")
///     .signature("(region :string) -> {count :int}")
///     .tool(Tool::new("orders", |_| async move { Ok::<_, String>(json!([{"id": 1}])) })
///         .description("Open orders"))
///     .agent(Agent::new("Summarise {{text}}.").name("summarise").description("One line"))
///     .max_turns(4)
///     .llm(Llm::new(|_req: LlmRequest| async move {
///         Ok(LlmResponse::text("```clojure\n(return {:count (count (tool/orders))})\n```"))
///     }));
/// let (request, _tools, _llms) = agent.into_parts(json!({"region": "eu"})).unwrap();
/// assert_eq!(request.agent.agents[0].name, "summarise");
/// ```
#[derive(Debug, Clone)]
pub struct Agent {
    /// Everything but the nested agents (in `children`) and the callable tools (in `tools`).
    spec: AgentSpec,
    tools: Vec<Tool>,
    children: Vec<Agent>,
    llms: LlmSet,
    options: MissionOptions,
}

impl Agent {
    /// An agent named `main` with the defaults (5 turns; a 20-turn budget for the whole tree).
    pub fn new(prompt: impl Into<String>) -> Agent {
        Agent {
            spec: AgentSpec::new(prompt),
            tools: Vec::new(),
            children: Vec::new(),
            llms: LlmSet::default(),
            options: MissionOptions::default(),
        }
    }

    /// The agent's name: its tool name when nested (`main` by default).
    pub fn name(mut self, name: impl Into<String>) -> Agent {
        self.spec.name = name.into();
        self
    }

    /// The mission's signature: inputs and output, e.g. `"(query :string) -> {count :int}"`.
    pub fn signature(mut self, signature: impl Into<String>) -> Agent {
        self.spec.signature = Some(signature.into());
        self
    }

    /// What the agent does, for its parent's prompt (required on a nested agent).
    pub fn description(mut self, description: impl Into<String>) -> Agent {
        self.spec.description = Some(description.into());
        self
    }

    /// A tool the agent's programs may call (hosted in this process).
    pub fn tool(mut self, tool: Tool) -> Agent {
        self.tools.push(tool);
        self
    }

    /// A tool shown in the prompt for planning only: a call is `tool_not_found`.
    pub fn catalog(mut self, decl: ToolDecl) -> Agent {
        self.spec.catalog.push(decl);
        self
    }

    /// A nested agent, callable by this agent's programs as `(tool/NAME {...})`.
    pub fn agent(mut self, child: Agent) -> Agent {
        self.children.push(child);
        self
    }

    /// Turns this agent may take (default 5): past them, `max_turns_exceeded`.
    pub fn max_turns(mut self, n: u32) -> Agent {
        self.spec.max_turns = n;
        self
    }

    /// The model this agent's requests go to (an LLM given with [`Agent::model_llm`], or any
    /// name when the default LLM takes any); unset, a nested agent inherits its parent's.
    pub fn model(mut self, model: impl Into<String>) -> Agent {
        self.spec.model = Some(model.into());
        self
    }

    /// Each program's wall-clock limit (default: the policy's; a looser one runs under the
    /// policy's, with a warning).
    pub fn turn_timeout(mut self, timeout: Duration) -> Agent {
        self.spec.turn_timeout_ms = Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// The policy this agent's programs run under (the server's default otherwise).
    pub fn policy(mut self, policy: impl Into<String>) -> Agent {
        self.spec.policy = Some(policy.into());
        self
    }

    /// Replaces the whole system prompt.
    pub fn system_prompt(mut self, text: impl Into<String>) -> Agent {
        self.spec.system_prompt = Some(text.into());
        self
    }

    /// Text put before the system prompt.
    pub fn prompt_prefix(mut self, text: impl Into<String>) -> Agent {
        self.spec.prompt_prefix = Some(text.into());
        self
    }

    /// Text put after the system prompt.
    pub fn prompt_suffix(mut self, text: impl Into<String>) -> Agent {
        self.spec.prompt_suffix = Some(text.into());
        self
    }

    /// The default LLM, for agents naming no model (and any model name, until
    /// [`Agent::model_llm`] names one).
    pub fn llm(mut self, llm: Llm) -> Agent {
        let named = std::mem::take(&mut self.llms);
        let names = named.names();
        let mut set = LlmSet::new(llm);
        for n in &names.named {
            if let Some(l) = named.resolve(Some(n)) {
                set = set.with_model(n.clone(), l);
            }
        }
        self.llms = set;
        self
    }

    /// An LLM for agents naming `model`. Once one is named, an unknown model is
    /// `model_not_found`.
    pub fn model_llm(mut self, model: impl Into<String>, llm: Llm) -> Agent {
        self.llms = std::mem::take(&mut self.llms).with_model(model, llm);
        self
    }

    /// All LLMs at once (replaces those given before).
    pub fn llms(mut self, llms: LlmSet) -> Agent {
        self.llms = llms;
        self
    }

    /// Turns across the whole agent tree (default 20): past them, `turn_budget_exhausted`.
    pub fn turn_budget(mut self, turns: u32) -> Agent {
        self.options.turn_budget = turns;
        self
    }

    /// How deep agents may nest (the root is depth 0; default 3): `max_depth_exceeded`.
    pub fn max_depth(mut self, depth: u32) -> Agent {
        self.options.max_depth = depth;
        self
    }

    /// The whole mission's wall-clock limit: `mission_timeout`.
    pub fn mission_timeout(mut self, timeout: Duration) -> Agent {
        self.options.mission_timeout = Some(timeout);
        self
    }

    /// Tokens the whole mission may use: `token_budget_exhausted`.
    pub fn token_budget(mut self, tokens: u64) -> Agent {
        self.options.token_budget = Some(tokens);
        self
    }

    /// How retryable LLM errors are retried (default 3 attempts, from 500 ms, doubling).
    pub fn retry(mut self, retry: Retry) -> Agent {
        self.options.retry = retry;
        self
    }

    /// How strictly signatures are applied (default `enabled`).
    pub fn validation(mut self, mode: Mode) -> Agent {
        self.options.validation = mode;
        self
    }

    /// The signature of the step that produced the context.
    pub fn context_signature(mut self, signature: impl Into<String>) -> Agent {
        self.options.context_signature = Some(signature.into());
        self
    }

    /// All mission-wide options at once (replaces those set before).
    pub fn options(mut self, options: MissionOptions) -> Agent {
        self.options = options;
        self
    }

    /// Splits into the wire request, the tools of the whole tree, and the LLMs. A tool name
    /// given twice with different closures is an error (one name, one tool per mission).
    pub fn into_parts(
        self,
        input: impl IntoMissionInput,
    ) -> Result<(MissionRequest, ToolSet, LlmSet), String> {
        let input = input.into_mission_input()?;
        let mut tools = HashMap::new();
        let (options, llms) = (self.options.clone(), self.llms.clone());
        let agent = self.into_spec(&mut tools)?;
        let request = MissionRequest {
            agent,
            input,
            options,
            models: llms.names(),
        };
        Ok((request, ToolSet::from_map(tools), llms))
    }

    /// This agent's spec with its tools declared and its children in place; their closures
    /// go into `tools`.
    fn into_spec(self, tools: &mut HashMap<String, Tool>) -> Result<AgentSpec, String> {
        let mut spec = self.spec;
        for t in self.tools {
            spec.tools.push(t.decl().clone());
            match tools.get(t.name()) {
                Some(known) if !known.same(&t) => {
                    return Err(format!(
                        "tool `{}` is given twice with different closures",
                        t.name()
                    ));
                }
                Some(_) => {}
                None => {
                    tools.insert(t.name().to_string(), t);
                }
            }
        }
        for child in self.children {
            spec.agents.push(child.into_spec(tools)?);
        }
        Ok(spec)
    }
}

/// What a mission can start from: a context (a [`Value`] or JSON), or a previous [`Step`]
/// (its return value is the context, its signature the context signature; a failed Step is
/// `chained_failure`).
pub trait IntoMissionInput {
    fn into_mission_input(self) -> Result<MissionInput, String>;
}

impl IntoMissionInput for Value {
    fn into_mission_input(self) -> Result<MissionInput, String> {
        Ok(MissionInput::Context(self))
    }
}

impl IntoMissionInput for serde_json::Value {
    fn into_mission_input(self) -> Result<MissionInput, String> {
        self.into_tool_value()
            .map(MissionInput::Context)
            .map_err(|e| format!("context: {e}"))
    }
}

impl IntoMissionInput for Step {
    fn into_mission_input(self) -> Result<MissionInput, String> {
        Ok(MissionInput::Step(Box::new(self)))
    }
}

impl IntoMissionInput for MissionInput {
    fn into_mission_input(self) -> Result<MissionInput, String> {
        Ok(self)
    }
}
