//! A daemon's live state as one snapshot: what `ptc status` shows and `Client::status()` returns.
//!
//! The daemon builds a [`DaemonStatus`] on request (`ClientToServer::Status`) from counters it
//! keeps anyway; this module is only the description that crosses the wire (bincode frames)
//! and that the CLI renders (text, or this type's serde form as JSON).
//!
//! Invariants:
//! - Every list is bounded by the daemon: `uids` by its uid table's cap, `errors` by its error
//!   ring, `failed` by the closed set of [`FailReason`]s, `policies` by its configuration.
//! - What a caller sees depends on who it is (the kernel's peer credentials): root sees every
//!   uid's usage and errors, any other uid only its own (`uids` and `errors` are filtered; the
//!   totals are the daemon's and show no program output).
//! - Plain fields only (no maps, no `skip_serializing_if`): bincode and JSON read the same shape.

use crate::FailReason;
use serde::{Deserialize, Serialize};

/// The daemon's live state, as allowed to the caller.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DaemonStatus {
    /// The daemon's version, e.g. `ptc-supervisor 0.1.0`.
    pub version: String,
    pub uptime_ms: u64,
    /// The uid this snapshot was filtered for (the caller's, from the kernel).
    pub caller_uid: u32,
    /// Whether the daemon is draining (shutting down).
    pub draining: bool,
    pub policies: Vec<PolicyStatus>,
    /// Every request's final outcome since the daemon started.
    pub executions: Outcomes,
    /// Request latency in the daemon (admission wait included) over the last `window_s`.
    pub latency: Latency,
    pub runners: Runners,
    /// Per-uid usage: all uids for root, else only the caller's.
    pub uids: Vec<UidUsage>,
    /// Requests of uids that found the uid table full (counted together, never dropped).
    pub uids_overflow: Option<UidUsage>,
    /// The most recent failed requests, newest first (the caller's own unless root).
    pub errors: Vec<ErrorEntry>,
}

/// One configured policy and its warm pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyStatus {
    pub name: String,
    /// Requests naming no policy run under this one.
    pub default: bool,
    /// Runners ready right now (hardened, `Ready` received).
    pub warm: u64,
    /// Runners the pool holds or is starting, ready or not.
    pub pooled: u64,
}

/// Finished requests by outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcomes {
    pub total: u64,
    pub ok: u64,
    /// Failed requests per reason, reasons with a zero count left out, largest first.
    pub failed: Vec<ReasonCount>,
}

/// How many requests ended with one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    pub reason: FailReason,
    pub count: u64,
}

/// Latency percentiles over a sliding window (`None` while no request finished in it). Values
/// come from a log-linear histogram: each is the upper bound of its bucket (within 1/8).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub window_s: u32,
    /// Requests that finished in the window.
    pub count: u64,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

/// Runner slots and the admission queue right now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runners {
    /// Requests holding a runner slot.
    pub busy: u64,
    /// Warm runners ready over all policies.
    pub warm: u64,
    /// `max_runners`.
    pub limit: u64,
    /// Requests waiting for a slot (bounded by `max_queue`).
    pub queued: u64,
}

/// One uid's usage since the daemon started (or since its entry was recycled, see the daemon).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UidUsage {
    pub uid: u32,
    /// Requests in the daemon right now (running or waiting).
    pub in_flight: u64,
    pub total: u64,
    pub ok: u64,
    pub failed: u64,
    /// Of `failed`, refused with `busy` (a bound of admission was full).
    pub busy: u64,
    /// Wall time of its requests in the daemon, summed.
    pub duration_ms: u64,
    /// Runner CPU time of its requests, summed.
    pub cpu_ms: u64,
}

/// One failed request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEntry {
    /// How long before the snapshot it finished.
    pub age_ms: u64,
    pub uid: u32,
    pub policy: String,
    pub reason: FailReason,
    /// What surfaces show: the program's own reason for `(fail {:reason :x})`, else `reason`.
    pub reason_name: String,
    /// The failure's message, cut to a bounded length.
    pub message: String,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::client_protocol::ServerToClient;

    #[test]
    fn status_crosses_bincode_and_json() {
        let s = DaemonStatus {
            version: "v".into(),
            executions: Outcomes {
                total: 3,
                ok: 2,
                failed: vec![ReasonCount {
                    reason: FailReason::Timeout,
                    count: 1,
                }],
            },
            latency: Latency {
                window_s: 60,
                count: 3,
                p50_us: Some(900),
                p99_us: None,
            },
            uids: vec![UidUsage {
                uid: 7,
                ..UidUsage::default()
            }],
            errors: vec![ErrorEntry {
                age_ms: 5,
                uid: 7,
                policy: "default".into(),
                reason: FailReason::Failed,
                reason_name: "not_found".into(),
                message: "m".into(),
            }],
            ..DaemonStatus::default()
        };
        let msg = ServerToClient::Status {
            request_id: 1,
            status: Box::new(s.clone()),
        };
        let frame = crate::codec::encode_frame(&msg, 1 << 20).unwrap();
        let back: ServerToClient =
            crate::codec::decode_body(&frame[crate::codec::HEADER_LEN..], 1 << 20).unwrap();
        assert_eq!(back, msg);
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["executions"]["failed"][0]["reason"], "timeout");
        assert_eq!(j["latency"]["p99_us"], serde_json::Value::Null);
    }
}
