//! What the SubAgent loop asks an LLM and what it gets back: described once here, so the
//! `--llm-cmd` JSON, replay files and the client protocol's LLM call all carry the same shape.
//!
//! An LLM error is typed: `retryable` ones (rate limits, timeouts, server errors) are retried
//! with backoff and spend no turn; the others end the mission with `llm_error`.

use serde::{Deserialize, Serialize};

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
