//! Before any runner is taken: the engine's normalisation of a request and its up-front checks.
//!
//! The engine is the one owner of request normalisation, for every way in (client library,
//! embedded backend, daemon): the policy default, and the limits a request runs under. A
//! request may tighten its policy's limits, never loosen them; a looser one is refused with
//! `invalid_request` naming the field, the value asked for, the policy's value and how to choose
//! another policy. Nothing is clamped silently.
//!
//! Then everything that can fail without a runner fails here (tool signatures, program and
//! context size), and the runner's `Execute` frame is built and encoded, once: the context is
//! already in the wire encoding (`EncodedValue`), so it is sized by its length and copied into
//! that frame as one byte string. Its size also sets the
//! import's allowance (`import_allowance_ms`): the first deadline, until the runner says
//! `Imported`, is `timeout_ms` plus that allowance (see `converse`).

use super::classify::{Base, limit_fail};
use super::pool::Pool;
use ptc_shared::client_protocol::RunRequest;
use ptc_shared::codec::{DEFAULT_MAX_FRAME, encode_frame};
use ptc_shared::protocol::{Execute, PROTOCOL_VERSION, SupervisorToRunner, import_allowance_ms};
use ptc_shared::tool_calls::ToolCalls;
use ptc_shared::{Fail, FailReason, Limits};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A request the engine accepted, ready for a runner.
pub(crate) struct Execution {
    pub pool: Arc<Pool>,
    pub limits: Limits,
    /// The encoded `Execute` frame.
    pub frame: Vec<u8>,
    /// The owner of this run's tool-call checks and trace.
    pub calls: ToolCalls,
    /// What a failed Step gives back.
    pub base: Base,
    pub start: Instant,
    /// What the context may take to arrive and be imported ([`import_allowance_ms`]).
    pub import_allowance_ms: u64,
    /// When the runner is killed unless it has said `Imported`: the deadline plus the import's
    /// allowance plus a small grace. Once it has, the program's own deadline ([`program_kill_at`]).
    pub kill_at: Instant,
}

/// The policy a request names, or the engine's default: the one place that default applies.
pub(crate) fn policy_name<'a>(req: &'a RunRequest, default: &'a str) -> &'a str {
    req.policy.as_deref().unwrap_or(default)
}

/// Normalises and checks `req`; `Err` is the failed Step (nothing ran).
pub(crate) fn prepare(
    pools: &BTreeMap<String, Arc<Pool>>,
    name: &str,
    req: RunRequest,
    start: Instant,
) -> Result<Execution, Box<ptc_shared::Step>> {
    let refuse = |req: RunRequest, fail: Fail| {
        let base = Base::of(req);
        Box::new(base.fail(fail, Vec::new(), start, 0))
    };
    let Some(pool) = pools.get(name) else {
        let known: Vec<&str> = pools.keys().map(String::as_str).collect();
        let msg = format!("unknown policy `{name}` (known: {})", known.join(", "));
        return Err(refuse(req, Fail::new(FailReason::InvalidRequest, msg)));
    };
    let checked = resolve_limits(name, &pool.prepared().policy.limits, &req).and_then(|limits| {
        let calls = ToolCalls::new(&req.tools, req.validation, limits.max_tool_calls)?;
        let context_bytes = check_sizes(&req, &limits)?;
        Ok((limits, calls, import_allowance_ms(&limits, context_bytes)))
    });
    let (limits, calls, import_allowance_ms) = match checked {
        Ok(c) => c,
        Err(fail) => return Err(refuse(req, fail)),
    };
    let (frame, base) = encode(req, limits);
    let frame = match frame {
        Ok(f) => f,
        Err(fail) => return Err(Box::new(base.fail(fail, Vec::new(), start, 0))),
    };
    Ok(Execution {
        pool: Arc::clone(pool),
        limits,
        frame,
        calls,
        base,
        start,
        import_allowance_ms,
        kill_at: program_kill_at(&limits, start) + Duration::from_millis(import_allowance_ms),
    })
}

/// When a program whose clock started at `from` is killed: its deadline plus a small grace.
pub(crate) fn program_kill_at(limits: &Limits, from: Instant) -> Instant {
    from + Duration::from_millis(limits.timeout_ms) + kill_grace(limits.timeout_ms)
}

/// The limits `req` runs under: its policy's, replaced by the request's `limits`, then by its
/// `timeout_ms` and `max_steps`; any of them looser than the policy is `invalid_request`.
pub(crate) fn resolve_limits(
    policy: &str,
    allowed: &Limits,
    req: &RunRequest,
) -> Result<Limits, Fail> {
    let limits = requested(req, *allowed);
    match allowed.first_looser(&limits) {
        None => Ok(limits),
        Some(l) => {
            let msg = format!(
                "`{}` of {} is looser than policy `{policy}` allows ({}): ask for at most {}, or \
                 choose a policy that allows more (the request's `policy`; `ptc run --policy NAME` \
                 or a policy file; `ptc policies` lists them)",
                l.field, l.requested, l.allowed, l.allowed
            );
            let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            Err(Fail::new(FailReason::InvalidRequest, msg)
                .with_detail("field", l.field)
                .with_detail("requested", clamp(l.requested))
                .with_detail("allowed", clamp(l.allowed))
                .with_detail("policy", policy))
        }
    }
}

/// The limits of an in-process run (`ptc run --in-process`, `Client::in_process`): there is no
/// policy and no sandbox to protect, so the defaults, replaced by whatever the request asks.
pub fn in_process_limits(req: &RunRequest) -> Limits {
    requested(req, Limits::default())
}

/// What `req` asks for: its `limits` (else `base`), with its `timeout_ms` and `max_steps`.
fn requested(req: &RunRequest, base: Limits) -> Limits {
    let limits = req.limits.unwrap_or(base);
    Limits {
        timeout_ms: req.timeout_ms.unwrap_or(limits.timeout_ms),
        max_steps: req.max_steps.unwrap_or(limits.max_steps),
        ..limits
    }
}

/// Program and context sizes, checked before a runner is taken (the context arrives encoded:
/// the frame copies its bytes). Returns the context's encoded size.
fn check_sizes(req: &RunRequest, limits: &Limits) -> Result<u64, Fail> {
    let program = req.program.len() as u64;
    if program > limits.max_program_bytes {
        let msg = format!(
            "program is {program} bytes, the limit is {}",
            limits.max_program_bytes
        );
        return Err(limit_fail(msg, "max_program_bytes"));
    }
    // Already encoded: its size is its length.
    let context = req.context.encoded_len();
    if context > limits.max_context_bytes {
        let msg = format!(
            "context is {context} bytes, the limit is {}",
            limits.max_context_bytes
        );
        return Err(limit_fail(msg, "max_context_bytes"));
    }
    Ok(context)
}

/// Builds and encodes the runner's `Execute` frame (the one place it is built), then takes
/// back what a failed Step needs: the encoded frame holds the rest.
fn encode(mut req: RunRequest, limits: Limits) -> (Result<Vec<u8>, Fail>, Base) {
    // The context travels beside the request, so the runner can decode it into its own values.
    let context = std::mem::take(&mut req.context);
    let exec = Execute {
        version: PROTOCOL_VERSION,
        limits,
        request: req,
        context,
    };
    let msg = SupervisorToRunner::Execute(Box::new(exec));
    let frame = encode_frame(&msg, DEFAULT_MAX_FRAME).map_err(|e| {
        Fail::new(
            FailReason::InvalidRequest,
            format!("request cannot be sent: {e}"),
        )
    });
    let base = match msg {
        SupervisorToRunner::Execute(e) => Base::of(e.request),
        _ => Base::default(),
    };
    (frame, base)
}

/// The margin past `timeout_ms` before the kill, so the interpreter's own deadline check usually
/// ends the run gracefully first.
fn kill_grace(timeout_ms: u64) -> Duration {
    Duration::from_millis((timeout_ms / 20).clamp(5, 25))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ptc_shared::Value;

    #[test]
    fn kill_grace_is_bounded() {
        assert_eq!(kill_grace(10), Duration::from_millis(5));
        assert_eq!(kill_grace(1000), Duration::from_millis(25));
    }

    #[test]
    fn requests_tighten_and_a_looser_one_is_named() {
        let policy = Limits::default();
        let tight = RunRequest {
            timeout_ms: Some(10),
            max_steps: Some(5),
            ..RunRequest::default()
        };
        let l = resolve_limits("p", &policy, &tight).unwrap();
        assert_eq!((l.timeout_ms, l.max_steps), (10, 5));
        assert_eq!(
            resolve_limits("p", &policy, &RunRequest::default()),
            Ok(policy)
        );
        let loose = RunRequest {
            timeout_ms: Some(3000),
            ..RunRequest::default()
        };
        let f = resolve_limits("p", &policy, &loose).unwrap_err();
        assert_eq!(f.reason, FailReason::InvalidRequest);
        assert!(f.message.contains("`timeout_ms` of 3000") && f.message.contains("(1000)"));
        let field = f.details.get_key(&Value::string("field"));
        assert_eq!(field, Some(&Value::string("timeout_ms")));
        let whole = RunRequest {
            limits: Some(Limits {
                heap_bytes: u64::MAX,
                ..policy
            }),
            ..RunRequest::default()
        };
        assert!(
            resolve_limits("p", &policy, &whole)
                .unwrap_err()
                .message
                .contains("heap_bytes")
        );
    }
}
