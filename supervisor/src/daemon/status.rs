//! The answer to a `Status` request: the daemon's counters ([`super::stats`]) and the current
//! generation's engine and admission, as one [`DaemonStatus`] filtered for the caller.
//!
//! Access: the caller's uid is the connection's, from the kernel (SO_PEERCRED), checked at
//! connect like every request. Root (uid 0) sees every uid's usage and every kept error; any other
//! uid sees only its own (other users' error messages may quote their programs' data). The
//! daemon-wide totals (outcome counts, latency, runners, queue, policies) are shown to all.
//!
//! Cost: built on the connection's task, without admission: it reads a few thousand atomics and
//! locks the uid table and the error ring briefly; a client asking in a loop is slowed by the
//! connection's own backpressure like any other frame.

use super::DaemonState;
use ptc_shared::status::{DaemonStatus, PolicyStatus, Runners};

/// The daemon's state as `caller` may see it.
pub(crate) fn snapshot(shared: &DaemonState, caller: u32) -> DaemonStatus {
    let generation = shared.current();
    let engine = &generation.engine;
    let only = (caller != 0).then_some(caller);
    let policies: Vec<PolicyStatus> = engine
        .policy_names()
        .map(|name| PolicyStatus {
            name: name.to_string(),
            default: name == engine.default_policy(),
            warm: count(engine.warm_count(name)),
            pooled: count(engine.pool_count(name)),
        })
        .collect();
    let max_runners = generation.config.max_runners;
    let runners = Runners {
        busy: count(generation.admission.running(max_runners)),
        warm: policies.iter().map(|p| p.warm).sum(),
        limit: count(max_runners),
        queued: count(generation.admission.waiting()),
    };
    let stats = &shared.stats;
    let (uids, uids_overflow) = stats.uid_usage(only);
    DaemonStatus {
        version: format!("ptc-supervisor {}", env!("CARGO_PKG_VERSION")),
        uptime_ms: u64::try_from(stats.uptime().as_millis()).unwrap_or(u64::MAX),
        caller_uid: caller,
        draining: shared.is_draining(),
        policies,
        executions: stats.outcomes(),
        latency: stats.latency(),
        runners,
        uids,
        uids_overflow,
        errors: stats.errors(only),
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
