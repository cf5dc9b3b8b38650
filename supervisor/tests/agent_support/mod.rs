//! Agent test helpers: a scripted LLM (answers per agent path, every request logged) and an
//! engine on the real runner with the shipped policies and no warm runners (so any runner
//! alive after a mission is a leak).
#![allow(dead_code, clippy::unwrap_used)]

use crate::common::{real_runner, shipped_policies};
use ptc_shared::Value;
pub use ptc_supervisor::agent::{
    AgentSpec as Agent, MissionInput as Input, MissionOptions as Options, MissionRequest,
};
use ptc_supervisor::agent::{
    Llm, LlmError, LlmRequest, LlmResponse, LlmSet, LlmSource, Retry, TokenCounts, run_mission,
};
use ptc_supervisor::engine::{BoxFuture, Engine, EngineConfig, NoTools, ToolHandler};
use ptc_supervisor::policy::load_dir;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub type Answer = Result<LlmResponse, LlmError>;

/// Answers from a script per agent path; a path whose script ran out gets a fatal error.
#[derive(Default)]
pub struct Scripted {
    answers: Mutex<HashMap<String, VecDeque<Answer>>>,
    pub log: Mutex<Vec<LlmRequest>>,
    /// How long each answer takes.
    pub delay: Duration,
}

impl Scripted {
    pub fn new(script: &[(&str, Answer)]) -> Arc<Scripted> {
        let s = Scripted::default();
        for (path, a) in script {
            s.answers
                .lock()
                .unwrap()
                .entry((*path).to_string())
                .or_default()
                .push_back(a.clone());
        }
        Arc::new(s)
    }

    pub fn requests(&self) -> Vec<LlmRequest> {
        self.log.lock().unwrap().clone()
    }

    /// Every text any request carried (system prompts and messages).
    pub fn all_prompt_text(&self) -> String {
        let mut s = String::new();
        for r in self.requests() {
            s.push_str(&r.system);
            for m in &r.messages {
                s.push_str(&m.content);
            }
        }
        s
    }

    /// The last message of the `i`th request.
    pub fn last_message(&self, i: usize) -> String {
        let r = &self.requests()[i];
        r.messages.last().unwrap().content.clone()
    }
}

impl LlmSource for Scripted {
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Answer> {
        let answer = self
            .answers
            .lock()
            .unwrap()
            .get_mut(&req.agent)
            .and_then(VecDeque::pop_front)
            .unwrap_or_else(|| Err(LlmError::Fatal(format!("no answer left for {}", req.agent))));
        self.log.lock().unwrap().push(req);
        let delay = self.delay;
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            answer
        })
    }
}

/// An answer holding one program, costing 10 input and 5 output tokens.
pub fn code(program: &str) -> Answer {
    Ok(LlmResponse {
        content: format!("Let me do this.\n```clojure\n{program}\n```\n"),
        usage: Some(TokenCounts {
            input_tokens: 10,
            output_tokens: 5,
        }),
    })
}

pub fn text(t: &str) -> Answer {
    Ok(LlmResponse::text(t))
}

/// The real runner with the shipped policies, no warm pool.
pub fn engine() -> Arc<Engine> {
    let mut policies = load_dir(&shipped_policies()).unwrap();
    for p in policies.values_mut() {
        p.warm = 0;
    }
    Arc::new(Engine::new(EngineConfig::new(real_runner(), policies)).unwrap())
}

/// Fast retries for tests.
pub fn options() -> Options {
    Options {
        retry: Retry {
            attempts: 3,
            base: Duration::from_millis(1),
        },
        ..Options::default()
    }
}

pub fn json(j: serde_json::Value) -> Value {
    Value::from_json(&j).unwrap()
}

/// Runs `agent` on `context` with the scripted LLM and no tools.
pub async fn mission(
    llm: &Arc<Scripted>,
    agent: Agent,
    context: Value,
    options: Options,
) -> ptc_shared::Step {
    mission_with(
        llm,
        agent,
        Input::Context(context),
        options,
        Arc::new(NoTools),
    )
    .await
}

pub async fn mission_with(
    llm: &Arc<Scripted>,
    agent: Agent,
    input: Input,
    options: Options,
    tools: Arc<dyn ToolHandler>,
) -> ptc_shared::Step {
    let set = LlmSet::new(as_llm(llm));
    run_mission(engine(), set, tools, request(agent, input, options)).await
}

/// A scripted LLM as an [`Llm`] handle (the script and its log stay readable).
pub fn as_llm(s: &Arc<Scripted>) -> Llm {
    Llm::from_source(s.clone())
}

/// A mission request from its parts (the model names are the set's business here).
pub fn request(agent: Agent, input: Input, options: Options) -> MissionRequest {
    MissionRequest {
        agent,
        input,
        options,
        models: Default::default(),
    }
}

/// `{"n" 2}` → `{:n 2}` (memory names and returned map keys are keywords).
pub trait Keywordize {
    fn keywordize(self) -> Value;
}

impl Keywordize for Value {
    fn keywordize(self) -> Value {
        match self {
            Value::Map(m) => Value::Map(
                m.into_iter()
                    .map(|(k, v)| match k {
                        Value::Str(s) => (Value::keyword(s), v),
                        k => (k, v),
                    })
                    .collect::<ptc_shared::value::Map>()
                    .into(),
            ),
            v => v,
        }
    }
}
