//! `ptc agent`: a mission from the command line, through the client library: an engine
//! embedded in this process by default, or a daemon with `--connect SOCKET` (the loop then runs
//! in the daemon, which calls back here for every LLM request and tool call).
//!
//! One LLM source (`--llm-cmd`, `--llm-url`, `--replay`, optionally `--record`ed); tools from
//! `--tool`/`--tools` (hosted here, outside the sandbox, as for `ptc run`); nested agents from
//! `--agents FILE`. The flags build one `client::Agent`, so every flag means the same in both
//! modes. Prints the return value (EDN) or the whole Step with its trace (JSON), and exits
//! 0 / 1 like `ptc run`; `--trace FILE.jsonl` writes the trace one entry per line.

use super::connect::client_tool;
use super::input::read_data_file;
use super::llm_source::{CmdLlm, HttpLlm, RecordLlm, ReplayLlm};
use super::run::Format;
use super::tools::{CliTool, parse_tool_flag, read_tools_file};
use clap::Args;
use ptc_shared::mission::{MissionInput, MissionOptions};
use ptc_shared::{Step, Value};
use ptc_supervisor::agent::{Llm, LlmSet, Retry};
use ptc_supervisor::client::{Agent, Client, ClientError, Embedded, Tool};
use ptc_supervisor::engine::EngineConfig;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The mission: a prompt template whose {{placeholders}} are filled from the context.
    prompt: String,
    /// Context data (JSON, or EDN for *.edn): data/NAME in programs, {{NAME}} in the prompt.
    #[arg(long)]
    context: Option<PathBuf>,
    /// The mission's signature, e.g. '(query :string) -> {count :int, _ids [:int]}'.
    #[arg(long)]
    signature: Option<String>,
    /// The signature of the step that produced the context.
    #[arg(long, value_name = "SIG")]
    context_signature: Option<String>,
    /// Chain from a previous Step (`--format json` output of `ptc run` or `ptc agent`): its
    /// return value is the context and its signature the context signature; a failed Step is
    /// `chained_failure`.
    #[arg(long, value_name = "STEP.json", conflicts_with_all = ["context", "context_signature"])]
    context_step: Option<PathBuf>,
    /// A tool run outside the sandbox: NAME=COMMAND (args as JSON on stdin, JSON result on stdout).
    #[arg(long = "tool", value_name = "NAME=COMMAND")]
    tool: Vec<String>,
    /// A JSON file mapping tool names to fixed results.
    #[arg(long = "tools", value_name = "FILE.json")]
    tools_file: Option<PathBuf>,
    /// Nested agents: a JSON map of name → {prompt, signature, description, tools, max_turns, model}.
    #[arg(long, value_name = "FILE.json")]
    agents: Option<PathBuf>,
    /// Policy the programs run under (a name in the policies directory, or a policy file).
    #[arg(long)]
    policy: Option<String>,
    #[arg(long, value_enum, default_value = "edn")]
    format: Format,
    #[arg(long, default_value_t = 5)]
    max_turns: u32,
    /// Turns across the whole agent tree.
    #[arg(long, default_value_t = 20)]
    turn_budget: u32,
    #[arg(long, default_value_t = 3)]
    max_depth: u32,
    /// The whole mission's wall-clock limit, in milliseconds.
    #[arg(long, value_name = "MS")]
    mission_timeout: Option<u64>,
    /// Each program's wall-clock limit, in milliseconds (default: the policy's; a looser value
    /// runs under the policy's limit, with a warning).
    #[arg(long, value_name = "MS")]
    turn_timeout: Option<u64>,
    /// LLM attempts in all for retryable errors (exponential backoff).
    #[arg(long, default_value_t = 3)]
    llm_retries: u32,
    /// Tokens the whole mission may use.
    #[arg(long)]
    token_budget: Option<u64>,
    /// Text put before the system prompt (every agent).
    #[arg(long, value_name = "TEXT")]
    prompt_prefix: Option<String>,
    /// Text put after the system prompt (every agent).
    #[arg(long, value_name = "TEXT")]
    prompt_suffix: Option<String>,
    /// A file whose text replaces the whole system prompt (every agent).
    #[arg(long, value_name = "FILE")]
    system_prompt: Option<PathBuf>,
    /// Write the trace here, one JSON entry per line (read it with `ptc trace FILE`).
    #[arg(long, value_name = "FILE.jsonl")]
    trace: Option<PathBuf>,
    /// LLM source: run `sh -c CMD` per request (request JSON on stdin; exit 75 = retry).
    #[arg(long, value_name = "CMD", group = "llm")]
    llm_cmd: Option<String>,
    /// LLM source: an OpenAI-compatible chat-completions URL (needs --model).
    #[arg(long, value_name = "URL", group = "llm", requires = "model")]
    llm_url: Option<String>,
    /// LLM source: answers recorded with --record.
    #[arg(long, value_name = "FILE.jsonl", group = "llm")]
    replay: Option<PathBuf>,
    /// Append every answer of the LLM source to this file (for --replay).
    #[arg(long, value_name = "FILE.jsonl", conflicts_with = "replay")]
    record: Option<PathBuf>,
    /// The model --llm-url asks for (the only model name agents may use with it).
    #[arg(long)]
    model: Option<String>,
    /// The environment variable holding the API key for --llm-url.
    #[arg(long, default_value = "OPENAI_API_KEY")]
    api_key_env: String,
    /// Run the mission in the daemon listening on SOCKET (its loop calls back here for the
    /// LLM and the tools); without it, an engine embedded in this process runs it.
    #[arg(long, value_name = "SOCKET")]
    connect: Option<PathBuf>,
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: usage: {msg}");
    ExitCode::from(2)
}

/// Runs the mission and reports its Step.
pub fn agent(args: AgentArgs) -> ExitCode {
    let prepared = (|| {
        let input = match (&args.context, &args.context_step) {
            (Some(p), _) => MissionInput::Context(read_data_file(p)?),
            (None, Some(p)) => MissionInput::Step(Box::new(read_step(p)?)),
            (None, None) => MissionInput::Context(Value::Nil),
        };
        let tools = cli_tools(&args)?;
        let root = root_agent(&args, &tools)?
            .llms(llm_set(&args)?)
            .options(mission_options(&args));
        Ok::<_, String>((input, root))
    })();
    let (input, root) = match prepared {
        Ok(p) => p,
        Err(e) => return usage_error(&e),
    };
    let step = match delegate(&args, root, input) {
        Ok(s) => s,
        Err(e) => return usage_error(&e),
    };
    if let Some(path) = &args.trace
        && let Err(e) = write_trace(path, &step)
    {
        eprintln!("warning: cannot write the trace to {}: {e}", path.display());
    }
    super::run::report(&step, args.format)
}

fn mission_options(args: &AgentArgs) -> MissionOptions {
    MissionOptions {
        turn_budget: args.turn_budget,
        max_depth: args.max_depth,
        mission_timeout: args.mission_timeout.map(Duration::from_millis),
        token_budget: args.token_budget,
        retry: Retry {
            attempts: args.llm_retries.max(1),
            ..Retry::default()
        },
        context_signature: args.context_signature.clone(),
        ..MissionOptions::default()
    }
}

/// One client (the daemon at `--connect`, else an embedded engine), one `delegate`.
fn delegate(args: &AgentArgs, root: Agent, input: MissionInput) -> Result<Step, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async {
        let client = match &args.connect {
            Some(socket) => Client::connect(socket).await.map_err(|e| match e {
                ClientError::Refused { reason, message } => format!("{reason}: {message}"),
                e => format!("{}: {e}", socket.display()),
            })?,
            None => Client::embedded_with(embedded_config(args)?)
                .map_err(|e| format!("cannot start the sandbox: {e}"))?,
        };
        Ok(match client.delegate(root, input).await {
            Ok(s) | Err(s) => s,
        })
    })
}

/// The embedded engine: the chosen policy as the default, no warm runners (one mission).
fn embedded_config(args: &AgentArgs) -> Result<EngineConfig, String> {
    let (mut policies, chosen) = super::sandbox::policies_for(args.policy.as_deref())?;
    for p in policies.values_mut() {
        p.warm = 0;
    }
    let mut config = EngineConfig::new(ptc_supervisor::daemon::config::default_runner(), policies);
    if let Some(name) = chosen {
        config.default_policy = name;
    }
    Ok(config)
}

/// A Step as `--format json` prints it: what chaining needs (return, signature, failure).
fn read_step(path: &std::path::Path) -> Result<Step, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let j: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let (Some(ret), Some(fail)) = (j.get("return"), j.get("fail")) else {
        return Err(format!(
            "{}: not a Step (no `return` and `fail`)",
            path.display()
        ));
    };
    if let Some(f) = fail.as_object() {
        let reason = f.get("reason").cloned().unwrap_or_default();
        let reason = serde_json::from_value(reason).unwrap_or(ptc_shared::FailReason::Failed);
        let message = f
            .get("message")
            .and_then(|m| m.as_str())
            .unwrap_or_default();
        return Ok(Step::failed(
            ptc_shared::Fail::new(reason, message),
            Value::Nil,
            Vec::new(),
        ));
    }
    let value = Value::from_json(ret).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Step {
        return_value: Some(value),
        signature: j
            .get("signature")
            .and_then(|s| s.as_str())
            .map(str::to_string),
        ..Step::default()
    })
}

/// The tools given with `--tool` and `--tools`, as client tools (hosted here; a command is
/// killed with its turn, and after a minute at most).
fn cli_tools(args: &AgentArgs) -> Result<BTreeMap<String, Tool>, String> {
    let mut tools: BTreeMap<String, CliTool> = match &args.tools_file {
        Some(p) => read_tools_file(p)?.into_iter().collect(),
        None => BTreeMap::new(),
    };
    for t in &args.tool {
        let (name, tool) = parse_tool_flag(t)?;
        tools.insert(name, tool);
    }
    let backstop = Duration::from_secs(60);
    Ok(tools
        .into_iter()
        .map(|(name, t)| (name.clone(), client_tool(name, t, backstop)))
        .collect())
}

/// The root agent: every CLI tool, and every agent of `--agents` as a nested agent.
fn root_agent(args: &AgentArgs, tools: &BTreeMap<String, Tool>) -> Result<Agent, String> {
    let mut root = Agent::new(args.prompt.clone()).max_turns(args.max_turns);
    root = common(root, args)?;
    if let Some(sig) = &args.signature {
        root = root.signature(sig.clone());
    }
    for t in tools.values() {
        root = root.tool(t.clone());
    }
    if let Some(path) = &args.agents {
        let specs = read_agents(path)?;
        for name in specs.keys() {
            root = root.agent(build_agent(name, &specs, tools, args, 0)?);
        }
    }
    Ok(root)
}

/// What every agent takes from the flags: policy, turn timeout, prompt overrides.
fn common(mut agent: Agent, args: &AgentArgs) -> Result<Agent, String> {
    if let Some(p) = &args.policy {
        agent = agent.policy(p.clone());
    }
    if let Some(ms) = args.turn_timeout {
        agent = agent.turn_timeout(Duration::from_millis(ms));
    }
    apply_overrides(agent, args)
}

/// `--prompt-prefix`, `--prompt-suffix`, `--system-prompt`.
fn apply_overrides(mut agent: Agent, args: &AgentArgs) -> Result<Agent, String> {
    if let Some(t) = &args.prompt_prefix {
        agent = agent.prompt_prefix(t.clone());
    }
    if let Some(t) = &args.prompt_suffix {
        agent = agent.prompt_suffix(t.clone());
    }
    if let Some(p) = &args.system_prompt {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        agent = agent.system_prompt(text);
    }
    Ok(agent)
}

/// One entry of `--agents FILE`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentSpec {
    prompt: String,
    signature: Option<String>,
    description: Option<String>,
    #[serde(default)]
    tools: Vec<String>,
    max_turns: Option<u32>,
    model: Option<String>,
}

fn read_agents(path: &std::path::Path) -> Result<BTreeMap<String, AgentSpec>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// An agent from the file; its `tools` name CLI tools or other agents of the file. Depth is
/// bounded (one past `--max-depth`, where the loop refuses to go), so a cycle is finite.
fn build_agent(
    name: &str,
    specs: &BTreeMap<String, AgentSpec>,
    tools: &BTreeMap<String, Tool>,
    args: &AgentArgs,
    depth: u32,
) -> Result<Agent, String> {
    let spec = specs
        .get(name)
        .ok_or_else(|| format!("--agents: no agent `{name}`"))?;
    let mut agent = Agent::new(spec.prompt.clone())
        .name(name)
        .max_turns(spec.max_turns.unwrap_or(args.max_turns));
    agent = common(agent, args)?;
    if let Some(s) = &spec.signature {
        agent = agent.signature(s.clone());
    }
    if let Some(d) = &spec.description {
        agent = agent.description(d.clone());
    }
    if let Some(m) = &spec.model {
        agent = agent.model(m.clone());
    }
    for t in &spec.tools {
        if let Some(tool) = tools.get(t) {
            agent = agent.tool(tool.clone());
        } else if specs.contains_key(t) {
            if depth <= args.max_depth {
                agent = agent.agent(build_agent(t, specs, tools, args, depth + 1)?);
            }
        } else {
            return Err(format!(
                "--agents: agent `{name}` names `{t}`, which is neither a --tool nor an agent"
            ));
        }
    }
    Ok(agent)
}

/// The one LLM source (optionally recorded).
fn llm_set(args: &AgentArgs) -> Result<LlmSet, String> {
    let (source, models): (Llm, Option<Vec<String>>) =
        match (&args.llm_cmd, &args.llm_url, &args.replay) {
            (Some(cmd), _, _) => (
                Llm::from_source(Arc::new(CmdLlm { cmd: cmd.clone() })),
                None,
            ),
            (_, Some(url), _) => {
                let model = args.model.clone().unwrap_or_default();
                let api_key = std::env::var(&args.api_key_env).ok();
                let llm = HttpLlm {
                    url: url.clone(),
                    model: model.clone(),
                    api_key,
                };
                (Llm::from_source(Arc::new(llm)), Some(vec![model]))
            }
            (_, _, Some(path)) => (Llm::from_source(Arc::new(ReplayLlm::load(path)?)), None),
            _ => return Err("give one LLM source: --llm-cmd, --llm-url or --replay".into()),
        };
    let source = match &args.record {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            Llm::from_source(Arc::new(RecordLlm {
                inner: source,
                file: Arc::new(Mutex::new(file)),
            }))
        }
        None => source,
    };
    let set = LlmSet::new(source);
    Ok(match models {
        Some(m) => set.known_models(&m),
        None => set,
    })
}

fn write_trace(path: &std::path::Path, step: &Step) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for e in &step.trace {
        writeln!(f, "{}", e.to_json())?;
    }
    f.flush()
}
