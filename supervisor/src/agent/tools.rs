//! Where a turn's tool calls go: a nested agent runs its own loop (one level deeper, its turns
//! under this turn in the trace); anything else goes to the mission's tool handler.

use super::llm::Llm;
use super::run::{Place, Tree, run_agent};
use crate::engine::{BoxFuture, ToolHandler};
use ptc_shared::mission::AgentSpec as Agent;
use ptc_shared::protocol::ToolDecl;
use ptc_shared::{Fail, FailReason, Value};
use std::sync::Arc;

/// The tool handler of one turn of one agent.
pub(super) struct TurnTools {
    pub tree: Arc<Tree>,
    pub agent: Arc<Agent>,
    /// The id of the turn whose program makes the calls.
    pub turn_id: u64,
    pub path: String,
    pub depth: u32,
    pub llm: Llm,
    pub model: Option<String>,
}

/// The declarations a turn's program may call: the agent's tools and its nested agents.
pub(super) fn declarations(agent: &Agent) -> Vec<ToolDecl> {
    let mut decls = agent.tools.clone();
    decls.extend(agent.agents.iter().map(|a| ToolDecl {
        name: a.name.clone(),
        signature: a.signature.clone(),
        description: a.description.clone(),
    }));
    decls
}

impl ToolHandler for TurnTools {
    fn call(&self, name: String, args: Value) -> BoxFuture<'static, Result<Value, String>> {
        let Some(child) = self.agent.agents.iter().find(|a| a.name == name) else {
            return self.tree.host.call(name, args);
        };
        let depth = self.depth + 1;
        if depth > self.tree.options.max_depth {
            let msg = format!(
                "agent `{name}` would run at depth {depth}, deeper than max_depth {}",
                self.tree.options.max_depth
            );
            self.tree
                .abort(Fail::new(FailReason::MaxDepthExceeded, msg.clone()));
            return Box::pin(async move { Err(msg) });
        }
        let (llm, model) = match &child.model {
            None => (self.llm.clone(), self.model.clone()),
            Some(m) => match self.tree.llms.resolve(Some(m)) {
                Some(l) => (l, Some(m.clone())),
                None => {
                    let msg = format!("agent `{name}` names model `{m}`, which is not known");
                    self.tree
                        .abort(Fail::new(FailReason::ModelNotFound, msg.clone()));
                    return Box::pin(async move { Err(msg) });
                }
            },
        };
        let place = Place {
            path: format!("{}/{name}", self.path),
            depth,
            parent: Some(self.turn_id),
        };
        let tree = Arc::clone(&self.tree);
        let child = Arc::new(child.clone());
        let run = run_agent(tree.clone(), child, args, place, llm, model);
        Box::pin(async move {
            let step = run.await;
            match step.fail {
                None => Ok(step.return_value.unwrap_or_default()),
                Some(f) => {
                    let msg = format!("agent {name} failed: {}: {}", f.reason_name(), f.message);
                    if super::ends_tree(f.reason) {
                        tree.abort(f);
                    }
                    Err(msg)
                }
            }
        })
    }
}
