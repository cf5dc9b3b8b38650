//! The LLM as the loop sees it: [`Llm`] handles (from `ptc_shared::llm`, so the client library,
//! the CLI's sources and the daemon's wire proxy are all the same type) chosen per agent by
//! model name from an [`LlmSet`], called with retries and exponential backoff.
//!
//! The client owns the LLM (a closure, a command, an HTTP endpoint, a replay file); the loop
//! never opens a connection itself. Retries spend no turn; they do count as requests. An answer
//! longer than [`MAX_ANSWER_BYTES`] is a non-retryable error: answers are kept in the
//! conversation and the trace, so their size is what bounds a mission's memory.

pub use ptc_shared::llm::{
    Llm, LlmError, LlmMessage, LlmNames, LlmRequest, LlmResponse, LlmSet, LlmSource,
    MAX_ANSWER_BYTES, Retry, Role, TokenCounts,
};

/// One LLM exchange with retries: the answer or the last error, and the attempts made.
pub async fn call_with_retry(
    llm: &Llm,
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
            Ok(a) if a.content.len() > MAX_ANSWER_BYTES => {
                let msg = format!(
                    "the answer is {} bytes, over the limit of {MAX_ANSWER_BYTES}",
                    a.content.len()
                );
                return (Err(LlmError::Fatal(msg)), made);
            }
            other => return (other, made),
        }
    }
}
