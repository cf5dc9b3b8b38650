//! What the SubAgent loop asks an LLM and what it gets back: described once here, so the
//! `--llm-cmd` JSON, replay files and the client protocol's LLM call all carry the same shape.
//!
//! An LLM error is typed: `retryable` ones (rate limits, timeouts, server errors) are retried
//! with backoff and spend no turn; the others end the mission with `llm_error`.
//!
//! The LLM itself is the client's: an [`Llm`] is a cheap handle over anything that answers
//! requests (an async closure, a command, an HTTP endpoint, a replay file), and an [`LlmSet`]
//! is the client's default LLM plus others by model name. The daemon never holds an LLM: it
//! mirrors the client's set from its [`LlmNames`] and sends each request back over the wire.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The largest answer the loop accepts (bytes of text): a larger one is a non-retryable LLM
/// error, so an answer can never grow a mission's conversation or trace without bound.
pub const MAX_ANSWER_BYTES: usize = 256 << 10;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the conversation (the system prompt travels apart, so it can be cached).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LlmMessage {
    pub role: Role,
    pub content: String,
}

/// One LLM request: the static system prompt, the conversation, and who is asking.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LlmRequest {
    pub system: String,
    pub messages: Vec<LlmMessage>,
    /// The agent's turn this request is for (1-based).
    pub turn: u32,
    /// The agent's path, e.g. `main/researcher`.
    pub agent: String,
    /// The model the agent names, or `None` for the client's default.
    pub model: Option<String>,
}

/// Tokens one answer cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenCounts {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

/// The LLM's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmResponse {
    pub content: String,
    #[serde(default)]
    pub usage: Option<TokenCounts>,
}

impl LlmResponse {
    /// An answer with no token counts.
    pub fn text(content: impl Into<String>) -> LlmResponse {
        LlmResponse {
            content: content.into(),
            usage: None,
        }
    }
}

/// Why the LLM gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum LlmError {
    /// Worth trying again (rate limit, timeout, server error).
    #[error("retryable: {0}")]
    Retryable(String),
    /// Trying again will not help (bad request, authentication, unknown model).
    #[error("{0}")]
    Fatal(String),
}

impl LlmError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::Retryable(_))
    }
}

/// What an LLM call resolves to.
pub type LlmFuture = Pin<Box<dyn Future<Output = Result<LlmResponse, LlmError>> + Send>>;

/// Something that answers LLM requests.
pub trait LlmSource: Send + Sync {
    fn complete(&self, req: LlmRequest) -> LlmFuture;
}

struct FnSource<F>(F);

impl<F, Fut> LlmSource for FnSource<F>
where
    F: Fn(LlmRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Result<LlmResponse, LlmError>> + Send + 'static,
{
    fn complete(&self, req: LlmRequest) -> LlmFuture {
        Box::pin((self.0)(req))
    }
}

/// An LLM: a cheap, cloneable handle over an [`LlmSource`].
///
/// ```
/// use ptc_shared::llm::{Llm, LlmRequest, LlmResponse};
/// let llm = Llm::new(|req: LlmRequest| async move {
///     Ok(LlmResponse::text(format!("```clojure\n(return {})\n```", req.turn)))
/// });
/// # let _ = llm;
/// ```
#[derive(Clone)]
pub struct Llm(Arc<dyn LlmSource>);

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Llm")
    }
}

impl Llm {
    /// An LLM from an async closure.
    pub fn new<F, Fut>(f: F) -> Llm
    where
        F: Fn(LlmRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<LlmResponse, LlmError>> + Send + 'static,
    {
        Llm(Arc::new(FnSource(f)))
    }

    /// An LLM from a shared source (keep a clone of the `Arc` to look inside it later).
    pub fn from_source(source: Arc<dyn LlmSource>) -> Llm {
        Llm(source)
    }

    pub fn complete(&self, req: LlmRequest) -> LlmFuture {
        self.0.complete(req)
    }
}

/// The LLMs a client offers: a default, and others by model name.
#[derive(Debug, Clone, Default)]
pub struct LlmSet {
    default: Option<Llm>,
    named: BTreeMap<String, Llm>,
    /// The default takes any model name (it is passed along in the request), as `--llm-cmd`
    /// does; otherwise only the names in `named` are known.
    default_takes_any_model: bool,
}

/// Which model names an [`LlmSet`] answers: what crosses the wire in place of the LLMs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmNames {
    /// There is a default LLM (for agents naming no model).
    pub default: bool,
    /// The default also answers any model name.
    pub any_model: bool,
    pub named: Vec<String>,
}

impl LlmSet {
    /// One LLM for every agent; agents naming a model get it too (the name travels in the request).
    pub fn new(default: Llm) -> LlmSet {
        LlmSet {
            default: Some(default),
            named: BTreeMap::new(),
            default_takes_any_model: true,
        }
    }

    /// Adds a model by name. Once any model is named, an agent naming an unknown model is
    /// `model_not_found`.
    pub fn with_model(mut self, name: impl Into<String>, llm: Llm) -> LlmSet {
        self.named.insert(name.into(), llm);
        self.default_takes_any_model = false;
        self
    }

    /// Only these model names are known, all answered by the default (for a source bound to
    /// one endpoint's models).
    pub fn known_models(mut self, names: &[String]) -> LlmSet {
        if let Some(d) = &self.default {
            for n in names {
                self.named.insert(n.clone(), d.clone());
            }
        }
        self.default_takes_any_model = false;
        self
    }

    /// The LLM for `model` (`None`: the default), or `None` when the model is unknown.
    pub fn resolve(&self, model: Option<&str>) -> Option<Llm> {
        match model {
            None => self.default.clone(),
            Some(m) => match self.named.get(m) {
                Some(l) => Some(l.clone()),
                None if self.default_takes_any_model => self.default.clone(),
                None => None,
            },
        }
    }

    /// The names this set answers.
    pub fn names(&self) -> LlmNames {
        LlmNames {
            default: self.default.is_some(),
            any_model: self.default_takes_any_model && self.default.is_some(),
            named: self.named.keys().cloned().collect(),
        }
    }

    /// A set answering exactly `names`, every model through `llm` (the daemon's mirror of a
    /// client's set: the model name travels in each request).
    pub fn mirror(names: &LlmNames, llm: &Llm) -> LlmSet {
        LlmSet {
            default: names.default.then(|| llm.clone()),
            named: names
                .named
                .iter()
                .map(|n| (n.clone(), llm.clone()))
                .collect(),
            default_takes_any_model: names.any_model,
        }
    }
}

/// How retryable LLM errors are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retry {
    /// Attempts in all (at least 1).
    pub attempts: u32,
    /// The wait before the second attempt; it doubles each time.
    pub base: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 3,
            base: Duration::from_millis(500),
        }
    }
}
