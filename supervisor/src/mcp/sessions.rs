//! The session table of `ptc mcp --sessions`: what a stateful caller's programs keep between
//! calls, and the bounds on it.
//!
//! A session holds exactly what the agent loop carries from one turn to the next: the last
//! successful Step's `memory` and `history` (`*1 *2 *3`). An eval checks the session out
//! ([`Sessions::checkout`]), runs its program with that memory and history through the client
//! like any other run, and commits the Step ([`Lease::commit`]); nothing here runs a program
//! or reads a Step beyond those two fields.
//!
//! Invariants:
//! - Transactional: only a successful eval whose memory and history fit the bound is stored;
//!   a failed, cancelled or over-bound eval (or one whose lease is dropped unfinished) leaves
//!   the session exactly as it was.
//! - One eval at a time per session: a second is refused (`busy`), never queued.
//! - Bounded: at most `max_sessions` live sessions (`session_limit` past that), each holding at
//!   most `max_memory_bytes` of memory and history as encoded for the runner (the size the next
//!   run's `Execute` frame carries), and a ring of the last [`ENDED_MAX`] ended ids (only so an
//!   ended id is answered `session_expired` or `unknown_session` precisely).
//! - Idle TTL: a session whose last call ended `idle_ttl` ago or more (and that is not running)
//!   is ended at the next session operation, which is the only time anyone can observe it; its
//!   memory stays held until then, within the bounds above.
//! - One client per server (stdio): ids (`s1`, `s2`, ...) are unique, not secret.

use ptc_shared::Value;
use ptc_shared::lisp_eval::session::{
    SessionSummary, memory_limit_fail, render_closed, render_inspect, render_list, render_started,
    stored_keys,
};
use ptc_shared::lisp_eval::{Caps, ErrorOptions, Payload, Reason, render_error};
use ptc_shared::{Fail, Step};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Most sessions a server may be configured to keep.
pub const MAX_SESSIONS: usize = 1024;
/// The largest bound on one session's memory: the context limit (memory is granted data, like
/// the context).
pub const MAX_MEMORY_BYTES: u64 = super::args::MAX_CONTEXT_BYTES as u64;
/// Ended ids remembered, to tell `session_expired` from `unknown_session`.
pub const ENDED_MAX: usize = 256;

/// How sessions are bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    /// A session idle this long is ended.
    pub idle_ttl: Duration,
    /// Live sessions at most (1 to [`MAX_SESSIONS`]).
    pub max_sessions: usize,
    /// Encoded bytes of one session's memory and history at most (up to [`MAX_MEMORY_BYTES`]).
    pub max_memory_bytes: u64,
}

impl Default for SessionConfig {
    fn default() -> SessionConfig {
        SessionConfig {
            idle_ttl: Duration::from_secs(600),
            max_sessions: 16,
            max_memory_bytes: 1 << 20,
        }
    }
}

impl SessionConfig {
    /// The config with each bound brought into its allowed range.
    fn bounded(self) -> SessionConfig {
        SessionConfig {
            max_sessions: self.max_sessions.clamp(1, MAX_SESSIONS),
            max_memory_bytes: self.max_memory_bytes.min(MAX_MEMORY_BYTES),
            ..self
        }
    }
}

/// Why a session operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("no session `{0}` is open (it was never started, or it was closed)")]
    Unknown(String),
    #[error(
        "session `{id}` was idle for its whole TTL of {ttl_ms} ms and was ended; start a new one"
    )]
    Expired { id: String, ttl_ms: u64 },
    #[error("all {0} sessions are open; close one (lisp_session_close) or let one expire")]
    Limit(usize),
    #[error("session `{0}` is running another call; wait for its answer")]
    Running(String),
}

impl SessionError {
    /// The error payload (one reason per variant).
    pub fn render(&self) -> Payload {
        let reason = match self {
            SessionError::Unknown(_) => Reason::UnknownSession,
            SessionError::Expired { .. } => Reason::SessionExpired,
            SessionError::Limit(_) => Reason::SessionLimit,
            SessionError::Running(_) => Reason::Busy,
        };
        render_error(reason, &self.to_string(), &ErrorOptions::default())
    }
}

#[derive(Debug)]
struct Session {
    memory: Value,
    history: Vec<Value>,
    bytes: u64,
    evals: u64,
    last_used: Instant,
    running: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Closed,
    Expired,
}

#[derive(Debug)]
struct Table {
    next: u64,
    live: BTreeMap<u64, Session>,
    ended: VecDeque<(u64, Ended)>,
}

/// The sessions of one server (cheap to clone; all clones share one table).
#[derive(Debug, Clone)]
pub struct Sessions {
    config: SessionConfig,
    table: Arc<Mutex<Table>>,
}

impl Sessions {
    pub fn new(config: SessionConfig) -> Sessions {
        Sessions {
            config: config.bounded(),
            table: Arc::new(Mutex::new(Table {
                next: 1,
                live: BTreeMap::new(),
                ended: VecDeque::new(),
            })),
        }
    }

    pub fn config(&self) -> SessionConfig {
        self.config
    }

    /// The table, with the sessions idle past their TTL at `now` ended.
    fn lock(&self, now: Instant) -> MutexGuard<'_, Table> {
        let mut t = self
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let ttl = self.config.idle_ttl;
        let idle: Vec<u64> = t
            .live
            .iter()
            .filter(|(_, s)| !s.running && now.saturating_duration_since(s.last_used) >= ttl)
            .map(|(k, _)| *k)
            .collect();
        for k in idle {
            t.end(k, Ended::Expired);
        }
        t
    }

    /// Opens a session: `lisp_session_start`'s payload, or `session_limit`.
    pub fn start(&self) -> Result<Payload, SessionError> {
        self.start_at(Instant::now())
    }

    fn start_at(&self, now: Instant) -> Result<Payload, SessionError> {
        let mut t = self.lock(now);
        if t.live.len() >= self.config.max_sessions {
            return Err(SessionError::Limit(self.config.max_sessions));
        }
        let key = t.next;
        t.next = key.saturating_add(1);
        let session = Session {
            memory: Value::Nil,
            history: Vec::new(),
            bytes: 0,
            evals: 0,
            last_used: now,
            running: false,
        };
        t.live.insert(key, session);
        let ttl = u64::try_from(self.config.idle_ttl.as_millis()).unwrap_or(u64::MAX);
        Ok(render_started(
            &id_text(key),
            ttl,
            self.config.max_memory_bytes,
        ))
    }

    /// Takes the session for one eval: its memory and history, until the lease is committed
    /// or dropped.
    pub fn checkout(&self, id: &str) -> Result<Lease, SessionError> {
        self.checkout_at(id, Instant::now())
    }

    fn checkout_at(&self, id: &str, now: Instant) -> Result<Lease, SessionError> {
        let mut t = self.lock(now);
        let key = self.find(&t, id)?;
        let s = t
            .live
            .get_mut(&key)
            .ok_or_else(|| SessionError::Unknown(id.into()))?;
        if s.running {
            return Err(SessionError::Running(id.into()));
        }
        s.running = true;
        Ok(Lease {
            sessions: self.clone(),
            key,
            memory: s.memory.clone(),
            history: s.history.clone(),
        })
    }

    /// `lisp_session_inspect`'s payload.
    pub fn inspect(&self, id: &str, caps: &Caps) -> Result<Payload, SessionError> {
        let t = self.lock(Instant::now());
        let s = t
            .live
            .get(&self.find(&t, id)?)
            .ok_or_else(|| SessionError::Unknown(id.into()))?;
        Ok(render_inspect(id, &s.memory, &s.history, s.bytes, caps))
    }

    /// `lisp_session_list`'s payload: the live sessions, oldest first.
    pub fn list(&self) -> Payload {
        let now = Instant::now();
        let t = self.lock(now);
        let sessions: Vec<SessionSummary> = t
            .live
            .iter()
            .map(|(k, s)| SessionSummary {
                id: id_text(*k),
                stored_keys: stored_keys(&s.memory),
                memory_bytes: s.bytes,
                evals: s.evals,
                idle_ms: if s.running {
                    0
                } else {
                    millis(now.saturating_duration_since(s.last_used))
                },
                running: s.running,
            })
            .collect();
        render_list(&sessions, self.config.max_sessions)
    }

    /// Ends a session that is not running: `lisp_session_close`'s payload.
    pub fn close(&self, id: &str) -> Result<Payload, SessionError> {
        let mut t = self.lock(Instant::now());
        let key = self.find(&t, id)?;
        if t.live.get(&key).is_some_and(|s| s.running) {
            return Err(SessionError::Running(id.into()));
        }
        t.end(key, Ended::Closed);
        Ok(render_closed(id))
    }

    /// The live session `id` names, or why there is none.
    fn find(&self, t: &Table, id: &str) -> Result<u64, SessionError> {
        let key = parse_id(id).ok_or_else(|| SessionError::Unknown(id.into()))?;
        if t.live.contains_key(&key) {
            return Ok(key);
        }
        match t.ended.iter().find(|(k, _)| *k == key) {
            Some((_, Ended::Expired)) => Err(SessionError::Expired {
                id: id.into(),
                ttl_ms: millis(self.config.idle_ttl),
            }),
            _ => Err(SessionError::Unknown(id.into())),
        }
    }
}

impl Table {
    fn end(&mut self, key: u64, why: Ended) {
        if self.live.remove(&key).is_none() {
            return;
        }
        if self.ended.len() >= ENDED_MAX {
            self.ended.pop_front();
        }
        self.ended.push_back((key, why));
    }
}

/// One eval's hold on its session. Dropped without [`Lease::commit`] (a cancelled or failed
/// call), it leaves the session as it was.
#[derive(Debug)]
pub struct Lease {
    sessions: Sessions,
    key: u64,
    /// The session's memory and history when the eval began (what its run is given).
    pub memory: Value,
    pub history: Vec<Value>,
}

impl Lease {
    /// Stores a successful Step's memory and history in the session, if they fit its bound;
    /// else the session is left as it was and the failure says why (`session_memory_bytes`).
    pub fn commit(self, step: &Step) -> Result<(), Fail> {
        let bytes =
            ptc_shared::codec::encoded_len(&(&step.memory, &step.history)).unwrap_or(u64::MAX);
        let max = self.sessions.config.max_memory_bytes;
        if bytes > max {
            return Err(memory_limit_fail(bytes, max));
        }
        let mut t = self.sessions.lock(Instant::now());
        if let Some(s) = t.live.get_mut(&self.key) {
            s.memory = step.memory.clone();
            s.history = step.history.clone();
            s.bytes = bytes;
        }
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut t = self
            .sessions
            .table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(s) = t.live.get_mut(&self.key) {
            s.running = false;
            s.evals = s.evals.saturating_add(1);
            s.last_used = Instant::now();
        }
    }
}

fn id_text(key: u64) -> String {
    format!("s{key}")
}

fn parse_id(id: &str) -> Option<u64> {
    let digits = id.strip_prefix('s')?;
    if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptc_shared::value::Map;

    fn config(max_sessions: usize, max_memory_bytes: u64) -> SessionConfig {
        SessionConfig {
            idle_ttl: Duration::from_secs(60),
            max_sessions,
            max_memory_bytes,
        }
    }

    fn id_of(p: Result<Payload, SessionError>) -> String {
        p.ok()
            .and_then(|p| p.json["session_id"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    fn step_with(name: &str, v: Value) -> Step {
        let mut m = Map::new();
        m.insert(Value::string(name), v.clone());
        Step {
            return_value: Some(v.clone()),
            memory: Value::Map(Box::new(m.clone())),
            memory_delta: Value::Map(Box::new(m)),
            history: vec![v],
            ..Step::default()
        }
    }

    #[test]
    fn the_cap_is_exact_and_a_closed_session_frees_its_place() {
        let s = Sessions::new(config(2, 1000));
        let a = id_of(s.start());
        let b = id_of(s.start());
        assert_eq!((a.as_str(), b.as_str()), ("s1", "s2"));
        assert_eq!(s.start().err(), Some(SessionError::Limit(2)));
        assert!(s.close(&a).is_ok());
        assert_eq!(s.close(&a).err(), Some(SessionError::Unknown(a.clone())));
        assert_eq!(id_of(s.start()), "s3");
    }

    #[test]
    fn a_session_expires_after_its_idle_ttl_and_not_before() {
        let s = Sessions::new(config(4, 1000));
        let t0 = Instant::now();
        let id = id_of(s.start_at(t0));
        let ttl = s.config().idle_ttl;
        let lease = s.checkout_at(&id, t0 + ttl - Duration::from_millis(1));
        drop(lease);
        // The lease's end counts as use: the TTL runs from there.
        let used = Instant::now();
        assert!(
            s.checkout_at(&id, used + ttl - Duration::from_millis(1))
                .is_ok()
        );
        let later = Instant::now() + ttl;
        let err = s.checkout_at(&id, later).err();
        assert_eq!(err, Some(SessionError::Expired { id, ttl_ms: 60_000 }));
        assert_eq!(
            s.checkout("s99").err(),
            Some(SessionError::Unknown("s99".into()))
        );
    }

    #[test]
    fn a_running_session_never_expires_and_takes_one_eval_at_a_time() {
        let s = Sessions::new(config(4, 1000));
        let t0 = Instant::now();
        let id = id_of(s.start_at(t0));
        let lease = s.checkout_at(&id, t0).ok();
        let far = t0 + Duration::from_secs(3600);
        assert_eq!(
            s.checkout_at(&id, far).err(),
            Some(SessionError::Running(id.clone()))
        );
        assert_eq!(s.close(&id).err(), Some(SessionError::Running(id.clone())));
        drop(lease);
        assert!(s.checkout(&id).is_ok());
    }

    #[test]
    fn commits_are_transactional_and_bounded() {
        let s = Sessions::new(config(4, 64));
        let id = id_of(s.start());
        let lease = s.checkout(&id).ok();
        assert!(lease.is_some_and(|l| l.commit(&step_with("x", Value::Int(1))).is_ok()));
        let big = step_with("y", Value::string("z".repeat(100)));
        let fail = s.checkout(&id).ok().and_then(|l| l.commit(&big).err());
        let (reason, msg) = fail
            .as_ref()
            .map(Reason::of)
            .unwrap_or((Reason::Busy, String::new()));
        assert_eq!(reason, Reason::MemoryLimit);
        assert!(
            msg.contains("session_memory_bytes") && msg.contains("bound of 64"),
            "{msg}"
        );
        // Dropped without a commit (a failed or cancelled call): nothing changes.
        drop(s.checkout(&id));
        let kept = s
            .checkout(&id)
            .ok()
            .map(|l| (l.memory.clone(), l.history.clone()));
        assert_eq!(
            kept,
            Some((step_with("x", Value::Int(1)).memory, vec![Value::Int(1)]))
        );
        let listed = s.list().json;
        assert_eq!(
            listed["sessions"][0]["stored_keys"],
            serde_json::json!(["x"])
        );
        assert_eq!(listed["sessions"][0]["evals"], 4);
    }

    #[test]
    fn ended_ids_are_remembered_within_a_bound_and_bad_ids_are_unknown() {
        let s = Sessions::new(config(1, 100));
        let first = id_of(s.start());
        assert!(s.close(&first).is_ok());
        for _ in 0..ENDED_MAX {
            let id = id_of(s.start());
            assert!(s.close(&id).is_ok());
        }
        assert_eq!(s.table.lock().map(|t| t.ended.len()).ok(), Some(ENDED_MAX));
        for bad in [
            "",
            "s",
            "s0",
            "s01",
            "1",
            "S1",
            "s1x",
            "s99999999999999999999999",
        ] {
            assert_eq!(
                s.checkout(bad).err(),
                Some(SessionError::Unknown(bad.into()))
            );
        }
    }

    #[test]
    fn configured_bounds_are_clamped() {
        let c = Sessions::new(config(0, u64::MAX)).config();
        assert_eq!((c.max_sessions, c.max_memory_bytes), (1, MAX_MEMORY_BYTES));
        let c = Sessions::new(config(usize::MAX, 1)).config();
        assert_eq!(c.max_sessions, MAX_SESSIONS);
    }
}
