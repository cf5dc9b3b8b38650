//! The LLM as the loop sees it: an async function from [`LlmRequest`] to [`LlmResponse`] or a
//! typed [`LlmError`], chosen per agent by model name, with retries and exponential backoff.
//!
//! The client owns the LLM (a closure, a command, an HTTP endpoint, a replay file); the loop
//! never opens a connection itself. Retries spend no turn; they do count as requests.

use crate::engine::BoxFuture;
pub use ptc_shared::llm::{LlmError, LlmMessage, LlmRequest, LlmResponse, Role, TokenCounts};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Something that answers LLM requests.
pub trait Llm: Send + Sync {
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>>;
}

/// An async closure as an [`Llm`].
pub struct LlmFn<F>(pub F);

impl<F> std::fmt::Debug for LlmFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LlmFn")
    }
}

impl<F, Fut> Llm for LlmFn<F>
where
    F: Fn(LlmRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Result<LlmResponse, LlmError>> + Send + 'static,
{
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        Box::pin((self.0)(req))
    }
}

/// The LLMs a client offers: a default, and others by model name.
#[derive(Clone)]
pub struct LlmSet {
    default: Arc<dyn Llm>,
    named: BTreeMap<String, Arc<dyn Llm>>,
    /// The default takes any model name (it is passed along in the request), as `--llm-cmd`
    /// does; otherwise only the names in `named` are known.
    default_takes_any_model: bool,
}

impl std::fmt::Debug for LlmSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSet")
            .field("named", &self.named.keys().collect::<Vec<_>>())
            .field("default_takes_any_model", &self.default_takes_any_model)
            .finish()
    }
}

impl LlmSet {
    /// One LLM for every agent; agents naming a model get it too (the name travels in the request).
    pub fn new(default: Arc<dyn Llm>) -> LlmSet {
        LlmSet {
            default,
            named: BTreeMap::new(),
            default_takes_any_model: true,
        }
    }

    /// Adds a model by name. Once any model is named, an agent naming an unknown model is
    /// `model_not_found`.
    pub fn with_model(mut self, name: impl Into<String>, llm: Arc<dyn Llm>) -> LlmSet {
        self.named.insert(name.into(), llm);
        self.default_takes_any_model = false;
        self
    }

    /// Only these model names are known (for a source bound to one endpoint's models).
    pub fn known_models(mut self, names: &[String]) -> LlmSet {
        for n in names {
            self.named.insert(n.clone(), Arc::clone(&self.default));
        }
        self.default_takes_any_model = false;
        self
    }

    /// The LLM for `model` (`None`: the default), or `None` when the model is unknown.
    pub fn resolve(&self, model: Option<&str>) -> Option<Arc<dyn Llm>> {
        match model {
            None => Some(Arc::clone(&self.default)),
            Some(m) => match self.named.get(m) {
                Some(l) => Some(Arc::clone(l)),
                None if self.default_takes_any_model => Some(Arc::clone(&self.default)),
                None => None,
            },
        }
    }
}

/// How LLM errors are retried.
#[derive(Debug, Clone, Copy)]
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

/// One LLM exchange with retries: the answer or the last error, and the attempts made.
pub async fn call_with_retry(
    llm: &dyn Llm,
    req: &LlmRequest,
    retry: Retry,
) -> (Result<LlmResponse, LlmError>, u32) {
    let attempts = retry.attempts.max(1);
    let mut made = 0;
    loop {
        made += 1;
        match llm.complete(req.clone()).await {
            Err(e) if e.is_retryable() && made < attempts => {
                let wait = retry.base.saturating_mul(1u32 << (made - 1).min(16));
                tracing::debug!(attempt = made, error = %e, ?wait, "retrying the LLM");
                tokio::time::sleep(wait).await;
            }
            other => return (other, made),
        }
    }
}
