//! The SubAgent loop: a mission solved by an LLM writing PTC-Lisp, turn by turn.
//!
//! Each turn the LLM answers with one ```clojure program ([`extract`]); the program runs in a
//! fresh sandboxed runner through the engine ([`exec`], the only file that knows the engine's
//! request); what it did is fed back ([`prompt`]) until a program calls `(return v)` with a
//! value matching the signature, or `(fail v)`. The result is one [`Step`], like a single run's,
//! with `usage` (tokens, requests, turns) and a flat `trace` (see [`ptc_shared::trace`]).
//!
//! Design:
//! - The client owns the LLM ([`Llm`]); the loop never opens a connection.
//! - Memory carries across turns as across `ptc run`s (memory, `*1 *2 *3`); after a failed turn
//!   the next program reads the failure as `ctx/fail`.
//! - Budgets end a mission with typed reasons from the closed [`FailReason`] set:
//!   `max_turns_exceeded` (per agent), `turn_budget_exhausted` (across the agent tree),
//!   `max_depth_exceeded`, `mission_timeout`, `token_budget_exhausted`, `llm_error` (after
//!   retries, which spend no turn). A program's own `(fail {:reason :x})` keeps reason `failed`
//!   with `x` as its program reason (`Fail::reason_name`), so it can never pose as one of these.
//! - A nested agent is a tool of its parent: it runs its own loop with its own `max_turns`, its
//!   LLM by model name or inherited, and its turns enter the trace under the parent's turn.
//!   Tree-wide budgets it hits end the whole mission; its other failures are a `tool_error` the
//!   parent's program sees. It runs inside the parent turn's program deadline, so a parent that
//!   calls agents needs a `turn_timeout_ms` long enough for them.
//! - Dropping the mission future ends it and kills its runner (the engine's invariant).
//! - The mission's Step: `return`/`fail`, the last memory and history, the returning turn's
//!   prints, tool calls and memory delta (every turn's are in the trace), `usage` totals of the
//!   whole tree (tokens, LLM requests with retries, turns, wall time) and the tree's trace.

mod exec;
pub mod extract;
pub mod llm;
pub mod prompt;
mod run;
mod tools;

pub use llm::{Llm, LlmFn, LlmSet, Retry};
pub use ptc_shared::llm::{LlmError, LlmMessage, LlmRequest, LlmResponse, Role, TokenCounts};

use crate::engine::{Engine, ToolHandler};
use ptc_shared::protocol::ToolDecl;
use ptc_shared::signature::Mode;
use ptc_shared::{FailReason, Step, Value};
use std::sync::Arc;
use std::time::Duration;

/// Names a tool or agent may not have: the program's own `return` and `fail`.
pub const RESERVED_TOOL_NAMES: [&str; 2] = ["return", "fail"];

/// One agent: what it is asked, what it must return, and what it may use.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The agent's name (its tool name when nested; `main` at the root).
    pub name: String,
    /// The mission, a template: `{{name}}` is filled from the context.
    pub prompt: String,
    /// Signature of the mission (`"(query :string) -> {count :int}"`): inputs and the output.
    pub signature: Option<String>,
    /// Required when the agent is given to another as a tool.
    pub description: Option<String>,
    /// Callable tools (answered by the mission's tool handler).
    pub tools: Vec<ToolDecl>,
    /// Tools shown for planning only; a call is `tool_not_found`.
    pub catalog: Vec<ToolDecl>,
    /// Nested agents, callable as tools.
    pub agents: Vec<Arc<Agent>>,
    pub max_turns: u32,
    /// The model by name; `None` inherits the parent's (the default at the root).
    pub model: Option<String>,
    /// Each program's wall-clock limit; `None` is the policy's. It may only tighten the policy's:
    /// a looser one runs under the policy's limit, and each turn's Step says so in `warnings`.
    pub turn_timeout_ms: Option<u64>,
    pub policy: Option<String>,
    /// Replaces the whole system prompt.
    pub system_prompt: Option<String>,
    pub prompt_prefix: Option<String>,
    pub prompt_suffix: Option<String>,
}

impl Agent {
    /// An agent named `main` with the defaults (5 turns, the policy's wall clock per program).
    pub fn new(prompt: impl Into<String>) -> Agent {
        Agent {
            name: "main".into(),
            prompt: prompt.into(),
            signature: None,
            description: None,
            tools: Vec::new(),
            catalog: Vec::new(),
            agents: Vec::new(),
            max_turns: 5,
            model: None,
            turn_timeout_ms: None,
            policy: None,
            system_prompt: None,
            prompt_prefix: None,
            prompt_suffix: None,
        }
    }

    pub fn name(mut self, name: impl Into<String>) -> Agent {
        self.name = name.into();
        self
    }

    pub fn signature(mut self, sig: impl Into<String>) -> Agent {
        self.signature = Some(sig.into());
        self
    }

    pub fn description(mut self, d: impl Into<String>) -> Agent {
        self.description = Some(d.into());
        self
    }

    pub fn tool(mut self, decl: ToolDecl) -> Agent {
        self.tools.push(decl);
        self
    }

    pub fn catalog_tool(mut self, decl: ToolDecl) -> Agent {
        self.catalog.push(decl);
        self
    }

    pub fn agent(mut self, child: Agent) -> Agent {
        self.agents.push(Arc::new(child));
        self
    }

    pub fn max_turns(mut self, n: u32) -> Agent {
        self.max_turns = n;
        self
    }

    pub fn model(mut self, m: impl Into<String>) -> Agent {
        self.model = Some(m.into());
        self
    }

    pub fn turn_timeout_ms(mut self, ms: u64) -> Agent {
        self.turn_timeout_ms = Some(ms);
        self
    }
}

/// What a mission starts from: a context, or a previous Step (its return value becomes the
/// context and its signature the context signature; a failed Step is `chained_failure`).
#[derive(Debug, Clone)]
pub enum Input {
    Context(Value),
    Step(Box<Step>),
}

/// Budgets and knobs for a whole mission (all agents in its tree).
#[derive(Debug, Clone)]
pub struct Options {
    /// Turns across the whole agent tree (default 20).
    pub turn_budget: u32,
    /// How deep agents may nest (the root is depth 0; default 3).
    pub max_depth: u32,
    pub mission_timeout: Option<Duration>,
    pub token_budget: Option<u64>,
    pub retry: Retry,
    /// How strictly signatures are applied.
    pub validation: Mode,
    /// The signature of the step that produced the context (as `ptc run --context-signature`).
    pub context_signature: Option<String>,
    /// Characters of one value shown in a prompt before it is cut.
    pub prompt_limit: usize,
    /// Older exchanges than this many are compacted to one line each.
    pub keep_turns: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            turn_budget: 20,
            max_depth: 3,
            mission_timeout: None,
            token_budget: None,
            retry: Retry::default(),
            validation: Mode::Enabled,
            context_signature: None,
            prompt_limit: 2000,
            keep_turns: 6,
        }
    }
}

/// Runs a mission to its Step. `tools` answers the calls of every agent's callable tools.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use ptc_supervisor::agent::{run_mission, Agent, Input, LlmFn, LlmResponse, LlmSet, Options};
/// use ptc_supervisor::engine::{Engine, EngineConfig, NoTools};
/// use std::sync::Arc;
/// let policies = ptc_supervisor::policy::load_dir("policies".as_ref())?;
/// let engine = Arc::new(Engine::new(EngineConfig::new("target/release/ptc-runner", policies))?);
/// let llm = LlmFn(|_req| async { Ok(LlmResponse::text("```clojure\n(return 42)\n```")) });
/// let agent = Arc::new(Agent::new("Answer.").signature(":int"));
/// let input = Input::Context(ptc_shared::Value::Nil);
/// let step = run_mission(engine, LlmSet::new(Arc::new(llm)), Arc::new(NoTools), agent, input,
///     Options::default()).await;
/// assert_eq!(step.return_value, Some(ptc_shared::Value::Int(42)));
/// # Ok(()) }
/// ```
pub async fn run_mission(
    engine: Arc<Engine>,
    llms: LlmSet,
    tools: Arc<dyn ToolHandler>,
    agent: Arc<Agent>,
    input: Input,
    options: Options,
) -> Step {
    run::mission(engine, llms, tools, agent, input, options).await
}

/// Whether a failure of a nested agent ends the whole mission (tree-wide budgets) rather than
/// being a `tool_error` its parent's program sees.
fn ends_tree(reason: FailReason) -> bool {
    matches!(
        reason,
        FailReason::TurnBudgetExhausted
            | FailReason::MissionTimeout
            | FailReason::TokenBudgetExhausted
            | FailReason::MaxDepthExceeded
    )
}
