//! A mission: the one description of a SubAgent request, used unchanged by the client library
//! (`client::Agent` builds one), the client protocol (`ClientToServer::Mission`), the daemon and
//! the supervisor's agent loop (which is its only interpreter: defaults and checks are there,
//! in [`MissionRequest::check`], called by the loop before anything runs).
//!
//! Invariants:
//! - The agent tree crosses the wire flat (each agent names its parent's index, parents first),
//!   and decoding refuses a tree deeper than [`MAX_AGENT_TREE_DEPTH`]: no frame can make the
//!   decoder, the checks or `Drop` recurse without bound.
//! - Every knob a client can grow is bounded by a limit here ([`MAX_TURN_BUDGET`],
//!   [`MAX_PROMPT_LIMIT`], [`MAX_LLM_ATTEMPTS`], and `llm::MAX_ANSWER_BYTES` per answer), so
//!   a mission's conversation and trace cannot grow a daemon's memory without bound.

use crate::llm::{LlmNames, Retry};
use crate::protocol::ToolDecl;
use crate::signature::Mode;
use crate::{Fail, FailReason, Step, Value};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How deep an agent tree may nest (the root is level 1).
pub const MAX_AGENT_TREE_DEPTH: usize = 16;
/// The most turns a mission's agent tree may be given.
pub const MAX_TURN_BUDGET: u32 = 100;
/// The largest `prompt_limit` (characters of one value shown in a prompt).
pub const MAX_PROMPT_LIMIT: u64 = 64 << 10;
/// The most LLM attempts per exchange.
pub const MAX_LLM_ATTEMPTS: u32 = 10;

/// One agent: what it is asked, what it must return, and what it may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "FlatTree", try_from = "FlatTree")]
pub struct AgentSpec {
    /// The agent's name (its tool name when nested; `main` at the root).
    pub name: String,
    /// The mission, a template: `{{name}}` is filled from the context.
    pub prompt: String,
    /// Signature of the mission (`"(query :string) -> {count :int}"`): inputs and the output.
    pub signature: Option<String>,
    /// Required when the agent is given to another as a tool.
    pub description: Option<String>,
    /// Callable tools (hosted by the client).
    pub tools: Vec<ToolDecl>,
    /// Tools shown for planning only; a call is `tool_not_found`.
    pub catalog: Vec<ToolDecl>,
    /// Nested agents, callable as tools.
    pub agents: Vec<AgentSpec>,
    /// Turns this agent may take (default 5).
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

impl AgentSpec {
    /// An agent named `main` with the defaults (5 turns, the policy's wall clock per program).
    pub fn new(prompt: impl Into<String>) -> AgentSpec {
        AgentSpec {
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

    pub fn name(mut self, name: impl Into<String>) -> AgentSpec {
        self.name = name.into();
        self
    }

    pub fn signature(mut self, sig: impl Into<String>) -> AgentSpec {
        self.signature = Some(sig.into());
        self
    }

    pub fn description(mut self, d: impl Into<String>) -> AgentSpec {
        self.description = Some(d.into());
        self
    }

    pub fn tool(mut self, decl: ToolDecl) -> AgentSpec {
        self.tools.push(decl);
        self
    }

    pub fn catalog_tool(mut self, decl: ToolDecl) -> AgentSpec {
        self.catalog.push(decl);
        self
    }

    pub fn agent(mut self, child: AgentSpec) -> AgentSpec {
        self.agents.push(child);
        self
    }

    pub fn max_turns(mut self, n: u32) -> AgentSpec {
        self.max_turns = n;
        self
    }

    pub fn model(mut self, m: impl Into<String>) -> AgentSpec {
        self.model = Some(m.into());
        self
    }

    pub fn turn_timeout_ms(mut self, ms: u64) -> AgentSpec {
        self.turn_timeout_ms = Some(ms);
        self
    }

    /// Levels of this tree (1 for an agent without nested agents). Iterative.
    pub fn tree_depth(&self) -> usize {
        let mut deepest = 0;
        let mut stack = vec![(self, 1usize)];
        while let Some((a, d)) = stack.pop() {
            deepest = deepest.max(d);
            stack.extend(a.agents.iter().map(|c| (c, d + 1)));
        }
        deepest
    }
}

/// What a mission starts from: a context, or a previous Step (its return value becomes the
/// context and its signature the context signature; a failed Step is `chained_failure`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MissionInput {
    Context(Value),
    Step(Box<Step>),
}

impl Default for MissionInput {
    fn default() -> MissionInput {
        MissionInput::Context(Value::Nil)
    }
}

/// Budgets and knobs for a whole mission (all agents in its tree).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissionOptions {
    /// Turns across the whole agent tree (default 20, at most [`MAX_TURN_BUDGET`]).
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
    pub prompt_limit: u64,
    /// Older exchanges than this many are compacted to one line each.
    pub keep_turns: u32,
}

impl Default for MissionOptions {
    fn default() -> MissionOptions {
        MissionOptions {
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

/// One mission from a client: the agent tree, its input, its budgets, and the model names the
/// client's LLMs answer (the LLMs themselves stay with the client).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissionRequest {
    pub agent: AgentSpec,
    pub input: MissionInput,
    pub options: MissionOptions,
    pub models: LlmNames,
}

impl MissionRequest {
    /// The limits every mission must keep (`invalid_request` naming the field otherwise).
    pub fn check(&self) -> Result<(), Fail> {
        let o = &self.options;
        let bad = |msg: String| Err(Fail::new(FailReason::InvalidRequest, msg));
        if o.turn_budget > MAX_TURN_BUDGET {
            return bad(format!(
                "turn_budget {} is over the limit of {MAX_TURN_BUDGET}",
                o.turn_budget
            ));
        }
        if o.prompt_limit > MAX_PROMPT_LIMIT {
            return bad(format!(
                "prompt_limit {} is over the limit of {MAX_PROMPT_LIMIT}",
                o.prompt_limit
            ));
        }
        if o.retry.attempts > MAX_LLM_ATTEMPTS {
            return bad(format!(
                "LLM attempts {} are over the limit of {MAX_LLM_ATTEMPTS}",
                o.retry.attempts
            ));
        }
        let depth = self.agent.tree_depth();
        if depth > MAX_AGENT_TREE_DEPTH {
            return bad(format!(
                "the agent tree is {depth} levels deep, over the limit of {MAX_AGENT_TREE_DEPTH}"
            ));
        }
        Ok(())
    }
}

/// One agent on the wire: its fields, less its children, plus its parent's index.
#[derive(Serialize, Deserialize)]
struct FlatAgent {
    /// `None` for the root (index 0); otherwise an index smaller than this agent's.
    parent: Option<u32>,
    name: String,
    prompt: String,
    signature: Option<String>,
    description: Option<String>,
    tools: Vec<ToolDecl>,
    catalog: Vec<ToolDecl>,
    max_turns: u32,
    model: Option<String>,
    turn_timeout_ms: Option<u64>,
    policy: Option<String>,
    system_prompt: Option<String>,
    prompt_prefix: Option<String>,
    prompt_suffix: Option<String>,
}

/// An agent tree on the wire: its agents in pre-order.
#[derive(Serialize, Deserialize)]
struct FlatTree(Vec<FlatAgent>);

impl From<AgentSpec> for FlatTree {
    fn from(root: AgentSpec) -> FlatTree {
        let mut out = Vec::new();
        // (agent, parent index), children pushed in reverse so they come out in order.
        let mut stack = vec![(root, None)];
        while let Some((mut a, parent)) = stack.pop() {
            let index = u32::try_from(out.len()).unwrap_or(u32::MAX);
            let children = std::mem::take(&mut a.agents);
            stack.extend(children.into_iter().rev().map(|c| (c, Some(index))));
            out.push(flat(a, parent));
        }
        FlatTree(out)
    }
}

fn flat(a: AgentSpec, parent: Option<u32>) -> FlatAgent {
    FlatAgent {
        parent,
        name: a.name,
        prompt: a.prompt,
        signature: a.signature,
        description: a.description,
        tools: a.tools,
        catalog: a.catalog,
        max_turns: a.max_turns,
        model: a.model,
        turn_timeout_ms: a.turn_timeout_ms,
        policy: a.policy,
        system_prompt: a.system_prompt,
        prompt_prefix: a.prompt_prefix,
        prompt_suffix: a.prompt_suffix,
    }
}

fn unflat(f: FlatAgent) -> AgentSpec {
    AgentSpec {
        name: f.name,
        prompt: f.prompt,
        signature: f.signature,
        description: f.description,
        tools: f.tools,
        catalog: f.catalog,
        agents: Vec::new(),
        max_turns: f.max_turns,
        model: f.model,
        turn_timeout_ms: f.turn_timeout_ms,
        policy: f.policy,
        system_prompt: f.system_prompt,
        prompt_prefix: f.prompt_prefix,
        prompt_suffix: f.prompt_suffix,
    }
}

impl TryFrom<FlatTree> for AgentSpec {
    type Error = String;

    /// Rebuilds the tree bottom-up: every parent index must point to an earlier agent, and no
    /// agent may sit deeper than [`MAX_AGENT_TREE_DEPTH`].
    fn try_from(tree: FlatTree) -> Result<AgentSpec, String> {
        let mut depths: Vec<usize> = Vec::with_capacity(tree.0.len());
        let mut parents = Vec::with_capacity(tree.0.len());
        let mut nodes: Vec<Option<AgentSpec>> = Vec::with_capacity(tree.0.len());
        for (i, f) in tree.0.into_iter().enumerate() {
            let parent = match (i, f.parent) {
                (0, None) => None,
                (_, Some(p)) if (p as usize) < i => Some(p as usize),
                _ => return Err(format!("agent {i}: bad parent index in the agent tree")),
            };
            let depth = parent.and_then(|p| depths.get(p)).map_or(1, |d| d + 1);
            if depth > MAX_AGENT_TREE_DEPTH {
                return Err(format!(
                    "the agent tree is deeper than {MAX_AGENT_TREE_DEPTH} levels"
                ));
            }
            depths.push(depth);
            parents.push(parent);
            nodes.push(Some(unflat(f)));
        }
        // Children are attached last-first, then each list is put back in order.
        for i in (1..nodes.len()).rev() {
            let child = nodes.get_mut(i).and_then(Option::take);
            let parent = parents.get(i).copied().flatten();
            if let (Some(c), Some(p)) = (child, parent.and_then(|p| nodes.get_mut(p))) {
                if let Some(p) = p.as_mut() {
                    p.agents.push(c);
                }
            }
        }
        let mut root = nodes
            .into_iter()
            .next()
            .flatten()
            .ok_or_else(|| "an empty agent tree".to_string())?;
        reverse_children(&mut root);
        Ok(root)
    }
}

/// Restores the order of every agent's children (iterative; the tree is depth-checked anyway).
fn reverse_children(root: &mut AgentSpec) {
    let mut stack = vec![root];
    while let Some(a) = stack.pop() {
        a.agents.reverse();
        stack.extend(a.agents.iter_mut());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::codec::{HEADER_LEN, Message, decode_body, encode_frame};

    impl Message for AgentSpec {}
    impl Message for FlatTree {}

    fn round_trip(a: &AgentSpec) -> Result<AgentSpec, crate::codec::CodecError> {
        let frame = encode_frame(a, 1 << 20).unwrap();
        decode_body(&frame[HEADER_LEN..], 1 << 20)
    }

    #[test]
    fn a_tree_round_trips_in_order() {
        let tree = AgentSpec::new("root")
            .agent(
                AgentSpec::new("a")
                    .name("a")
                    .agent(AgentSpec::new("a1").name("a1"))
                    .agent(AgentSpec::new("a2").name("a2")),
            )
            .agent(AgentSpec::new("b").name("b").model("m"));
        assert_eq!(round_trip(&tree).unwrap(), tree);
    }

    fn chain(levels: usize) -> AgentSpec {
        let mut a = AgentSpec::new("leaf");
        for _ in 1..levels {
            a = AgentSpec::new("x").agent(a);
        }
        a
    }

    #[test]
    fn a_tree_deeper_than_the_limit_is_refused_on_decode_and_by_check() {
        assert!(round_trip(&chain(MAX_AGENT_TREE_DEPTH)).is_ok());
        let err = round_trip(&chain(MAX_AGENT_TREE_DEPTH + 1)).unwrap_err();
        assert!(err.to_string().contains("deeper than 16"), "{err}");
        let req = MissionRequest {
            agent: chain(MAX_AGENT_TREE_DEPTH + 1),
            input: MissionInput::default(),
            options: MissionOptions::default(),
            models: LlmNames::default(),
        };
        let f = req.check().unwrap_err();
        assert_eq!(f.reason, FailReason::InvalidRequest);
        assert!(f.message.contains("17 levels"), "{}", f.message);
    }

    #[test]
    fn forged_parent_indices_are_refused() {
        let forged = FlatTree(vec![
            flat(AgentSpec::new("r"), None),
            flat(AgentSpec::new("c"), Some(1)),
        ]);
        let frame = encode_frame(&forged, 1 << 20).unwrap();
        assert!(decode_body::<AgentSpec>(&frame[HEADER_LEN..], 1 << 20).is_err());
        let two_roots = FlatTree(vec![
            flat(AgentSpec::new("r"), None),
            flat(AgentSpec::new("c"), None),
        ]);
        let frame = encode_frame(&two_roots, 1 << 20).unwrap();
        assert!(decode_body::<AgentSpec>(&frame[HEADER_LEN..], 1 << 20).is_err());
        let frame = encode_frame(&FlatTree(Vec::new()), 1 << 20).unwrap();
        assert!(decode_body::<AgentSpec>(&frame[HEADER_LEN..], 1 << 20).is_err());
    }

    #[test]
    fn each_option_limit_is_enforced() {
        let base = MissionRequest {
            agent: AgentSpec::new("x"),
            input: MissionInput::default(),
            options: MissionOptions::default(),
            models: LlmNames::default(),
        };
        assert!(base.check().is_ok());
        let mut r = base.clone();
        r.options.turn_budget = MAX_TURN_BUDGET + 1;
        assert!(r.check().unwrap_err().message.contains("turn_budget"));
        let mut r = base.clone();
        r.options.prompt_limit = MAX_PROMPT_LIMIT + 1;
        assert!(r.check().unwrap_err().message.contains("prompt_limit"));
        let mut r = base;
        r.options.retry.attempts = MAX_LLM_ATTEMPTS + 1;
        assert!(r.check().unwrap_err().message.contains("attempts"));
    }
}
