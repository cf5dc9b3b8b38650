//! Where `ptc agent` gets its answers: a command (`--llm-cmd`), an OpenAI-compatible endpoint
//! (`--llm-url`), or a replay file (`--replay`); `--record` writes what another source answered.
//!
//! Replay keys are a stable hash (FNV-1a 64 over canonical JSON) of the request's conversation,
//! agent path, turn and model. The system prompt is left out on purpose: it is static (the
//! rules and the reference card generated from the builtin tables), and leaving it out lets a
//! recording survive a builtin's doc changing. A miss is an `llm_error` that prints the hash.

use ptc_shared::llm::{LlmError, LlmRequest, LlmResponse, Role, TokenCounts};
use ptc_supervisor::agent::{Llm, LlmSource};
use ptc_supervisor::engine::BoxFuture;
use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most an LLM command or endpoint may answer (bytes); more is an error, not memory use.
const MAX_ANSWER: u64 = 4 << 20;
/// Exit status of `--llm-cmd` meaning "try again" (EX_TEMPFAIL).
const RETRY_EXIT: i32 = 75;

/// The replay key of a request.
pub fn request_hash(req: &LlmRequest) -> String {
    let key = serde_json::json!({
        "messages": req.messages, "agent": req.agent, "turn": req.turn, "model": req.model,
    });
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// `--llm-cmd CMD`: `sh -c CMD` per request, the request as JSON on stdin.
#[derive(Debug)]
pub struct CmdLlm {
    pub cmd: String,
}

impl LlmSource for CmdLlm {
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let cmd = self.cmd.clone();
        Box::pin(async move { run_cmd(&cmd, &req).await })
    }
}

async fn run_cmd(cmd: &str, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
    let input = serde_json::to_vec(req).map_err(|e| LlmError::Fatal(e.to_string()))?;
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| LlmError::Fatal(format!("cannot start `{cmd}`: {e}")))?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (i, o, e) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // Written while the answer is read, so a command answering before it has read everything
    // cannot deadlock on full pipes.
    let write_in = async {
        if let Some(mut i) = i {
            // A command that ignores its input may close stdin early; that is not an error.
            let _ = i.write_all(&input).await;
        }
    };
    let read_out = async {
        if let Some(o) = o {
            let _ = o.take(MAX_ANSWER + 1).read_to_end(&mut out).await;
        }
    };
    let read_err = async {
        if let Some(e) = e {
            let _ = e.take(64 << 10).read_to_end(&mut err).await;
        }
    };
    tokio::join!(write_in, read_out, read_err);
    let status = child
        .wait()
        .await
        .map_err(|e| LlmError::Fatal(format!("waiting for `{cmd}`: {e}")))?;
    let stderr = String::from_utf8_lossy(&err).trim().to_string();
    match status.code() {
        Some(0) => {}
        Some(RETRY_EXIT) => return Err(LlmError::Retryable(format!("`{cmd}`: {stderr}"))),
        _ => {
            return Err(LlmError::Fatal(format!(
                "`{cmd}` exited with {status}: {stderr}"
            )));
        }
    }
    if out.len() as u64 > MAX_ANSWER {
        return Err(LlmError::Fatal(format!(
            "`{cmd}` answered more than {MAX_ANSWER} bytes"
        )));
    }
    let text = String::from_utf8_lossy(&out).to_string();
    Ok(parse_answer(&text))
}

/// A JSON object `{"content": ..., "usage": ...}`, or else plain text.
fn parse_answer(text: &str) -> LlmResponse {
    let trimmed = text.trim();
    if trimmed.starts_with('{')
        && let Ok(r) = serde_json::from_str::<LlmResponse>(trimmed)
    {
        return r;
    }
    LlmResponse::text(text)
}

/// `--replay FILE.jsonl`: recorded answers by request hash.
#[derive(Debug)]
pub struct ReplayLlm {
    answers: HashMap<String, LlmResponse>,
    file: String,
}

/// One line of a recording.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Recorded {
    hash: String,
    agent: String,
    turn: u32,
    response: LlmResponse,
}

impl ReplayLlm {
    pub fn load(path: &Path) -> Result<ReplayLlm, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut answers = HashMap::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let r: Recorded = serde_json::from_str(line)
                .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
            answers.insert(r.hash, r.response);
        }
        Ok(ReplayLlm {
            answers,
            file: path.display().to_string(),
        })
    }
}

impl LlmSource for ReplayLlm {
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let hash = request_hash(&req);
        let answer = self.answers.get(&hash).cloned().ok_or_else(|| {
            LlmError::Fatal(format!(
                "no recorded answer in {} for request {hash} (agent {}, turn {}); record one with --record",
                self.file, req.agent, req.turn
            ))
        });
        Box::pin(async move { answer })
    }
}

/// `--record FILE.jsonl`: passes requests to `inner` and appends each answer.
pub struct RecordLlm {
    pub inner: Llm,
    pub file: Arc<Mutex<std::fs::File>>,
}

impl std::fmt::Debug for RecordLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordLlm")
    }
}

impl LlmSource for RecordLlm {
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let (inner, file) = (self.inner.clone(), Arc::clone(&self.file));
        Box::pin(async move {
            let rec = (request_hash(&req), req.agent.clone(), req.turn);
            let response = inner.complete(req).await?;
            let line = Recorded {
                hash: rec.0,
                agent: rec.1,
                turn: rec.2,
                response: response.clone(),
            };
            if let (Ok(mut f), Ok(text)) = (file.lock(), serde_json::to_string(&line)) {
                let _ = writeln!(f, "{text}");
            }
            Ok(response)
        })
    }
}

/// `--llm-url URL --model NAME`: an OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct HttpLlm {
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
}

impl LlmSource for HttpLlm {
    fn complete(&self, req: LlmRequest) -> BoxFuture<'static, Result<LlmResponse, LlmError>> {
        let this = self.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || this.post(&req))
                .await
                .map_err(|e| LlmError::Fatal(format!("the HTTP task failed: {e}")))?
        })
    }
}

impl HttpLlm {
    fn body(&self, req: &LlmRequest) -> serde_json::Value {
        let mut messages = vec![serde_json::json!({"role": "system", "content": req.system})];
        messages.extend(req.messages.iter().map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            serde_json::json!({"role": role, "content": m.content})
        }));
        let model = req.model.clone().unwrap_or_else(|| self.model.clone());
        serde_json::json!({"model": model, "messages": messages})
    }

    fn post(&self, req: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(std::time::Duration::from_secs(300)))
            .build()
            .into();
        let mut call = agent
            .post(&self.url)
            .header("content-type", "application/json");
        if let Some(key) = &self.api_key {
            call = call.header("authorization", &format!("Bearer {key}"));
        }
        let mut resp = call
            .send(self.body(req).to_string().as_bytes())
            .map_err(|e| LlmError::Retryable(format!("{}: {e}", self.url)))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_string()
            .map_err(|e| LlmError::Retryable(format!("{}: reading the answer: {e}", self.url)))?;
        match status {
            200..=299 => parse_completion(&text),
            408 | 429 | 500..=599 => Err(LlmError::Retryable(format!(
                "HTTP {status}: {}",
                short(&text)
            ))),
            _ => Err(LlmError::Fatal(format!("HTTP {status}: {}", short(&text)))),
        }
    }
}

fn short(s: &str) -> String {
    s.chars().take(300).collect()
}

/// `choices[0].message.content` and `usage.{prompt,completion}_tokens`.
fn parse_completion(text: &str) -> Result<LlmResponse, LlmError> {
    let j: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| LlmError::Fatal(format!("the endpoint did not answer JSON: {e}")))?;
    let content = j["choices"][0]["message"]["content"]
        .as_str()
        .ok_or_else(|| {
            LlmError::Fatal(format!("no choices[0].message.content in {}", short(text)))
        })?;
    let usage = j.get("usage").map(|u| TokenCounts {
        input_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
    });
    Ok(LlmResponse {
        content: content.to_string(),
        usage,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ptc_shared::llm::LlmMessage;

    fn req(system: &str) -> LlmRequest {
        LlmRequest {
            system: system.into(),
            messages: vec![LlmMessage {
                role: Role::User,
                content: "hi".into(),
            }],
            turn: 1,
            agent: "main".into(),
            model: None,
        }
    }

    #[test]
    fn the_hash_is_stable_and_ignores_the_static_system_prompt() {
        assert_eq!(request_hash(&req("a")), request_hash(&req("b")));
        let mut other = req("a");
        other.turn = 2;
        assert_ne!(request_hash(&req("a")), request_hash(&other));
        assert_eq!(request_hash(&req("a")).len(), 16);
    }

    #[test]
    fn answers_are_text_or_a_json_object() {
        assert_eq!(parse_answer("plain").content, "plain");
        let r =
            parse_answer(r#"{"content": "x", "usage": {"input_tokens": 3, "output_tokens": 4}}"#);
        assert_eq!(
            (r.content.as_str(), r.usage.unwrap().output_tokens),
            ("x", 4)
        );
        let c = parse_completion(r#"{"choices":[{"message":{"content":"y"}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#).unwrap();
        assert_eq!(
            (c.content.as_str(), c.usage.unwrap().input_tokens),
            ("y", 1)
        );
        assert!(parse_completion("{}").is_err());
    }
}
