//! The loop itself: one [`AgentRun`] per agent run, turn after turn, over state shared by the
//! whole agent tree ([`Tree`]: ids, the turn budget, token and request counts, the trace, and
//! the first tree-wide failure).
//!
//! Invariant: every turn that started ends in exactly one trace entry, also when the mission
//! ends in it; a turn whose mission was cut by `mission_timeout` is the one exception (its
//! future was dropped, and its runner killed with it).

use super::exec::{self, Turn};
use super::llm::{Llm, LlmSet, call_with_retry};
use super::tools::{TurnTools, declarations};
use super::{RESERVED_TOOL_NAMES, extract, prompt};
use crate::engine::{BoxFuture, Engine, ToolHandler};
use ptc_shared::llm::{LlmMessage, LlmRequest, Role};
use ptc_shared::mission::{AgentSpec as Agent, MissionInput, MissionOptions, MissionRequest};
use ptc_shared::signature::Signature;
use ptc_shared::signature::check as validate;
use ptc_shared::{Fail, FailReason, Step, TraceEntry, Usage, Value};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// State shared by every agent of one mission.
pub(super) struct Tree {
    pub engine: Arc<Engine>,
    pub llms: LlmSet,
    pub host: Arc<dyn ToolHandler>,
    pub options: MissionOptions,
    next_id: AtomicU64,
    turns: AtomicU32,
    requests: AtomicU32,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    trace: Mutex<Vec<TraceEntry>>,
    abort: Mutex<Option<Fail>>,
}

impl Tree {
    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn record(&self, entry: TraceEntry) {
        if let Ok(mut t) = self.trace.lock() {
            t.push(entry);
        }
    }

    /// Ends the whole mission with `fail` (the first such failure wins).
    pub fn abort(&self, fail: Fail) {
        if let Ok(mut a) = self.abort.lock() {
            a.get_or_insert(fail);
        }
    }

    fn aborted(&self) -> Option<Fail> {
        self.abort.lock().ok().and_then(|a| a.clone())
    }

    /// Tree totals for the root Step.
    fn usage(&self, started: Instant) -> Usage {
        let (i, o) = (
            self.input_tokens.load(Ordering::Relaxed),
            self.output_tokens.load(Ordering::Relaxed),
        );
        Usage {
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            input_tokens: Some(i),
            output_tokens: Some(o),
            total_tokens: Some(i + o),
            requests: self.requests.load(Ordering::Relaxed),
            turns: self.turns.load(Ordering::Relaxed),
            ..Usage::default()
        }
    }

    fn sorted_trace(&self) -> Vec<TraceEntry> {
        let mut t = self.trace.lock().map(|t| t.clone()).unwrap_or_default();
        t.sort_by_key(|e| e.id);
        t
    }
}

/// Where an agent run sits in the tree.
#[derive(Debug, Clone)]
pub(super) struct Place {
    pub path: String,
    pub depth: u32,
    /// The parent's turn that called this run.
    pub parent: Option<u64>,
}

/// Runs a mission: checks, then the root agent under the mission deadline.
pub(super) async fn mission(
    engine: Arc<Engine>,
    llms: LlmSet,
    host: Arc<dyn ToolHandler>,
    request: MissionRequest,
) -> Step {
    let started = Instant::now();
    if let Err(f) = request.check() {
        return finish_failed(f, started);
    }
    let MissionRequest {
        agent,
        input,
        options,
        ..
    } = request;
    let prepared = prepare(&llms, &agent, input, &options);
    let (context, llm) = match prepared {
        Ok(p) => p,
        Err(f) => return finish_failed(f, started),
    };
    let deadline = options.mission_timeout;
    let tree = Arc::new(Tree {
        engine,
        llms,
        host,
        options,
        next_id: AtomicU64::new(0),
        turns: AtomicU32::new(0),
        requests: AtomicU32::new(0),
        input_tokens: AtomicU64::new(0),
        output_tokens: AtomicU64::new(0),
        trace: Mutex::new(Vec::new()),
        abort: Mutex::new(None),
    });
    let place = Place {
        path: agent.name.clone(),
        depth: 0,
        parent: None,
    };
    let model = agent.model.clone();
    let run = run_agent(
        Arc::clone(&tree),
        Arc::new(agent),
        context,
        place,
        llm,
        model,
    );
    let mut step = match deadline {
        None => run.await,
        Some(d) => match tokio::time::timeout(d, run).await {
            Ok(step) => step,
            Err(_) => {
                let msg = format!("the mission ran past its {} ms timeout", d.as_millis());
                Step::failed(
                    Fail::new(FailReason::MissionTimeout, msg),
                    Value::Nil,
                    Vec::new(),
                )
            }
        },
    };
    step.usage = tree.usage(started);
    step.trace = tree.sorted_trace();
    step
}

fn finish_failed(fail: Fail, started: Instant) -> Step {
    let mut step = Step::failed(fail, Value::Nil, Vec::new());
    step.usage.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    step
}

/// Everything checked before the first LLM call: the input, the agent tree, the context
/// against the signature. Returns the context and the root's LLM.
fn prepare(
    llms: &LlmSet,
    agent: &Agent,
    input: MissionInput,
    options: &MissionOptions,
) -> Result<(Value, Llm), Fail> {
    let (context, previous_sig) = match input {
        MissionInput::Context(v) => (v, options.context_signature.clone()),
        MissionInput::Step(step) => match (step.fail, step.return_value) {
            (Some(f), _) => {
                let msg = format!(
                    "the context is a failed Step ({}: {})",
                    f.reason_name(),
                    f.message
                );
                return Err(Fail::new(FailReason::ChainedFailure, msg));
            }
            (None, v) => (v.unwrap_or_default(), step.signature),
        },
    };
    check_tree(llms, agent, 0, options.max_depth)?;
    let sig_text = match &previous_sig {
        Some(prev) => Some(validate::chained(prev, agent.signature.as_deref())?),
        None => agent.signature.clone(),
    };
    let context = match sig_text {
        Some(text) => {
            let sig = validate::parse(&text, "mission")?;
            validate::context(&sig, context, options.validation)?.0
        }
        None => context,
    };
    let llm = llms
        .resolve(agent.model.as_deref())
        .ok_or_else(|| unknown_model(agent))?;
    Ok((context, llm))
}

fn unknown_model(agent: &Agent) -> Fail {
    let m = agent.model.as_deref().unwrap_or_default();
    Fail::new(
        FailReason::ModelNotFound,
        format!(
            "agent `{}` names model `{m}`, which the client does not know",
            agent.name
        ),
    )
}

/// Reserved names, descriptions, models and signatures of the whole agent tree.
fn check_tree(llms: &LlmSet, agent: &Agent, depth: u32, max_depth: u32) -> Result<(), Fail> {
    if let Some(sig) = &agent.signature {
        validate::parse(sig, &format!("agent {}", agent.name))?;
    }
    if agent.model.is_some() && llms.resolve(agent.model.as_deref()).is_none() {
        return Err(unknown_model(agent));
    }
    let names = agent.tools.iter().chain(&agent.catalog).map(|t| &t.name);
    for name in names.chain(agent.agents.iter().map(|a| &a.name)) {
        if RESERVED_TOOL_NAMES.contains(&name.as_str()) {
            let msg = format!("`{name}` is reserved for the program's own (return v) / (fail v)");
            return Err(Fail::new(FailReason::ReservedToolName, msg));
        }
    }
    // Past max_depth the run-time check ends the mission; no need to walk (or loop) further.
    if depth > max_depth {
        return Ok(());
    }
    for child in &agent.agents {
        if child
            .description
            .as_deref()
            .is_none_or(|d| d.trim().is_empty())
        {
            let msg = format!("nested agent `{}` needs a description", child.name);
            return Err(Fail::new(FailReason::InvalidRequest, msg));
        }
        check_tree(llms, child, depth + 1, max_depth)?;
    }
    Ok(())
}

/// One agent run as a boxed future (nested agents recurse through their parent's tools).
pub(super) fn run_agent(
    tree: Arc<Tree>,
    agent: Arc<Agent>,
    context: Value,
    place: Place,
    llm: Llm,
    model: Option<String>,
) -> BoxFuture<'static, Step> {
    Box::pin(async move {
        let run_id = tree.id();
        let mission_text = match prompt::fill_template(&agent.prompt, &context) {
            Ok(t) => t,
            Err(f) => return Step::failed(f, Value::Nil, Vec::new()),
        };
        let sig = match agent
            .signature
            .as_deref()
            .map(|s| validate::parse(s, "agent"))
        {
            Some(Err(f)) => return Step::failed(f, Value::Nil, Vec::new()),
            Some(Ok(s)) => Some(s),
            None => None,
        };
        let first = prompt::first_message(&prompt::FirstMessage {
            mission: &mission_text,
            context: &context,
            tools: &declarations(&agent),
            catalog: &agent.catalog,
            signature: sig.as_ref(),
            max_turns: agent.max_turns,
            limit: prompt_limit(&tree.options),
        });
        let system = prompt::system_prompt(
            agent.system_prompt.as_deref(),
            agent.prompt_prefix.as_deref(),
            agent.prompt_suffix.as_deref(),
        );
        let mut run = AgentRun {
            tree,
            agent,
            place,
            run_id,
            llm,
            model,
            sig,
            system,
            messages: vec![message(Role::User, first)],
            context,
            memory: Value::Nil,
            history: Vec::new(),
            last_fail: None,
        };
        run.run().await
    })
}

/// `prompt_limit` as a length (checked against `MAX_PROMPT_LIMIT` before the mission starts).
fn prompt_limit(options: &MissionOptions) -> usize {
    usize::try_from(options.prompt_limit).unwrap_or(usize::MAX)
}

fn message(role: Role, content: String) -> LlmMessage {
    LlmMessage { role, content }
}

struct AgentRun {
    tree: Arc<Tree>,
    agent: Arc<Agent>,
    place: Place,
    run_id: u64,
    llm: Llm,
    model: Option<String>,
    sig: Option<Signature>,
    system: String,
    messages: Vec<LlmMessage>,
    context: Value,
    memory: Value,
    history: Vec<Value>,
    /// The previous turn's failure, readable as `ctx/fail`.
    last_fail: Option<Fail>,
}

impl AgentRun {
    async fn run(&mut self) -> Step {
        let max = self.agent.max_turns;
        for n in 1..=max {
            if let Some(step) = self.turn(n).await {
                return step;
            }
        }
        let msg = format!(
            "agent `{}` made no valid (return v) in {max} turns",
            self.place.path
        );
        self.failed(Fail::new(FailReason::MaxTurnsExceeded, msg))
    }

    /// One turn; `Some` ends the agent run.
    async fn turn(&mut self, n: u32) -> Option<Step> {
        if let Some(f) = self.budget_check() {
            return Some(self.failed(f));
        }
        let mut entry = self.entry(n);
        let answer = match self.ask(n, &mut entry).await {
            Ok(a) => a,
            Err(f) => {
                entry.fail = Some(f.clone());
                self.tree.record(entry);
                return Some(self.failed(f));
            }
        };
        let end = self.handle_answer(n, answer, &mut entry).await;
        self.tree.record(entry);
        end
    }

    /// Tree-wide failures and budgets, checked before a turn starts (this spends the turn).
    fn budget_check(&self) -> Option<Fail> {
        if let Some(f) = self.tree.aborted() {
            return Some(f);
        }
        let used = self.tree.turns.fetch_add(1, Ordering::Relaxed) + 1;
        let budget = self.tree.options.turn_budget;
        if used > budget {
            self.tree.turns.fetch_sub(1, Ordering::Relaxed);
            let msg = format!("the agent tree used its turn budget of {budget} turns");
            let f = Fail::new(FailReason::TurnBudgetExhausted, msg);
            self.tree.abort(f.clone());
            return Some(f);
        }
        None
    }

    fn entry(&self, n: u32) -> TraceEntry {
        TraceEntry {
            id: self.tree.id(),
            run: self.run_id,
            parent: self.place.parent,
            agent: self.place.path.clone(),
            depth: self.place.depth,
            turn: n,
            model: self.model.clone(),
            ..TraceEntry::default()
        }
    }

    /// Asks the LLM (with retries); counts requests and tokens.
    async fn ask(&mut self, n: u32, entry: &mut TraceEntry) -> Result<String, Fail> {
        let req = LlmRequest {
            system: self.system.clone(),
            messages: self.compacted(),
            turn: n,
            agent: self.place.path.clone(),
            model: self.model.clone(),
        };
        let began = Instant::now();
        let (answer, attempts) = call_with_retry(&self.llm, &req, self.tree.options.retry).await;
        entry.usage.llm_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        entry.usage.requests = attempts;
        self.tree.requests.fetch_add(attempts, Ordering::Relaxed);
        let answer = answer.map_err(|e| {
            let msg = format!("the LLM failed after {attempts} attempt(s): {e}");
            Fail::new(FailReason::LlmError, msg)
        })?;
        let tokens = answer.usage.unwrap_or_default();
        entry.usage.input_tokens = tokens.input_tokens;
        entry.usage.output_tokens = tokens.output_tokens;
        let t = &self.tree;
        let i = t
            .input_tokens
            .fetch_add(tokens.input_tokens, Ordering::Relaxed);
        let o = t
            .output_tokens
            .fetch_add(tokens.output_tokens, Ordering::Relaxed);
        entry.llm_text.clone_from(&answer.content);
        if let Some(budget) = t.options.token_budget {
            let used = i + o + tokens.input_tokens + tokens.output_tokens;
            if used > budget {
                let msg = format!("the mission used {used} tokens, over its budget of {budget}");
                let f = Fail::new(FailReason::TokenBudgetExhausted, msg);
                t.abort(f.clone());
                return Err(f);
            }
        }
        self.messages
            .push(message(Role::Assistant, answer.content.clone()));
        Ok(answer.content)
    }

    async fn handle_answer(
        &mut self,
        n: u32,
        answer: String,
        entry: &mut TraceEntry,
    ) -> Option<Step> {
        let max = self.agent.max_turns;
        let program = match extract::extract(&answer) {
            Ok(p) => p,
            Err(e) => {
                let problem = e.to_string();
                self.feedback(prompt::no_program(n, max, &problem));
                let f = Fail::new(FailReason::ParseError, problem);
                entry.fail = Some(f.clone());
                self.last_fail = Some(f);
                return None;
            }
        };
        entry.program = Some(program.clone());
        let step = self.execute(program, entry.id).await;
        entry.usage.exec_ms = step.usage.duration_ms;
        entry.prints.clone_from(&step.prints);
        entry.tool_calls.clone_from(&step.tool_calls);
        entry.memory_delta = step.memory_delta.clone();
        entry.result.clone_from(&step.return_value);
        if let Some(f) = self.tree.aborted() {
            entry.fail = Some(f.clone());
            return Some(self.failed(f));
        }
        self.judge(n, step, entry)
    }

    /// What a program's Step means for the mission.
    fn judge(&mut self, n: u32, step: Step, entry: &mut TraceEntry) -> Option<Step> {
        let max = self.agent.max_turns;
        let limit = prompt_limit(&self.tree.options);
        if let Some(mut f) = step.fail.clone() {
            entry.fail = Some(f.clone());
            if f.reason == FailReason::Failed {
                return Some(self.failed(f));
            }
            self.catalog_hint(&mut f);
            let mut shown = step;
            shown.fail = Some(f.clone());
            entry.fail = Some(f.clone());
            self.feedback(prompt::after_program(n, max, &shown, limit));
            self.last_fail = Some(f);
            return None;
        }
        self.memory = step.memory.clone();
        self.history = step.history.clone();
        self.last_fail = None;
        if !step.returned {
            self.feedback(prompt::after_program(n, max, &step, limit));
            return None;
        }
        let value = step.return_value.clone().unwrap_or_default();
        let checked = match &self.sig {
            Some(sig) => validate::result(sig, value, self.tree.options.validation),
            None => Ok((value, Vec::new())),
        };
        match checked {
            Ok((v, warnings)) => {
                entry.returned = true;
                Some(self.succeeded(step, v, warnings))
            }
            Err(f) => {
                self.feedback(prompt::bad_return(n, max, &f));
                entry.fail = Some(f.clone());
                self.last_fail = Some(f);
                None
            }
        }
    }

    /// A call to a catalog-only tool says so.
    fn catalog_hint(&self, f: &mut Fail) {
        if f.reason != FailReason::ToolNotFound {
            return;
        }
        if let Some(t) = self
            .agent
            .catalog
            .iter()
            .find(|t| f.message.contains(&t.name))
        {
            f.message.push_str(&format!(
                " (hint: `{}` is in the tool catalog for planning only; it cannot be called)",
                t.name
            ));
        }
    }

    async fn execute(&self, program: String, turn_id: u64) -> Step {
        let tools = Arc::new(TurnTools {
            tree: Arc::clone(&self.tree),
            agent: Arc::clone(&self.agent),
            turn_id,
            path: self.place.path.clone(),
            depth: self.place.depth,
            llm: self.llm.clone(),
            model: self.model.clone(),
        });
        let turn = Turn {
            program,
            context: self.turn_context(),
            memory: self.memory.clone(),
            history: self.history.clone(),
            tools: declarations(&self.agent),
            policy: self.agent.policy.clone(),
            timeout_ms: self.agent.turn_timeout_ms,
            validation: self.tree.options.validation,
        };
        exec::execute(&self.tree.engine, turn, tools).await
    }

    /// The context, with `fail` set after a failed turn.
    fn turn_context(&self) -> Value {
        let Some(f) = &self.last_fail else {
            return self.context.clone();
        };
        let mut fail = ptc_shared::value::Map::new();
        fail.insert(Value::keyword("reason"), Value::keyword(f.reason_name()));
        fail.insert(Value::keyword("message"), Value::string(f.message.clone()));
        let mut ctx = match &self.context {
            Value::Map(m) => m.clone(),
            _ => Box::new(ptc_shared::value::Map::new()),
        };
        ctx.insert(Value::string("fail"), Value::Map(Box::new(fail)));
        Value::Map(ctx)
    }

    fn feedback(&mut self, text: String) {
        self.messages.push(message(Role::User, text));
    }

    /// The conversation for the next request: the first message, and the last `keep_turns`
    /// exchanges in full; older ones are cut to one line each.
    fn compacted(&self) -> Vec<LlmMessage> {
        let keep = (self.tree.options.keep_turns.max(1) as usize).saturating_mul(2);
        let old = self.messages.len().saturating_sub(1 + keep);
        self.messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if i == 0 || i > old {
                    return m.clone();
                }
                let line = m.content.lines().next().unwrap_or_default();
                let content = match m.role {
                    Role::Assistant => "(an earlier program, compacted)".to_string(),
                    Role::User => format!("{line} (details compacted)"),
                };
                message(m.role, content)
            })
            .collect()
    }

    fn failed(&self, fail: Fail) -> Step {
        Step {
            signature: self.agent.signature.clone(),
            ..Step::failed(fail, self.memory.clone(), self.history.clone())
        }
    }

    fn succeeded(&self, step: Step, value: Value, warnings: Vec<String>) -> Step {
        let mut out = step;
        out.return_value = Some(value);
        out.warnings.extend(warnings);
        out.signature.clone_from(&self.agent.signature);
        out
    }
}
