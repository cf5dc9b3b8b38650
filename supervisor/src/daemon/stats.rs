//! The daemon's counters for `ptc status`: outcomes, a sliding latency window, per-uid usage and
//! the last errors. Kept for the daemon's life (across reloads), read only by a status request.
//!
//! Cost on the hot path (one finished request): a handful of relaxed atomic adds on memory the
//! request's connection already holds (its uid's [`UidCounters`], fetched once per connection),
//! one histogram bucket, one outcome counter. A failed request also takes the error ring's lock
//! for a push (failures already cost a runner's teardown, a message and a log line).
//!
//! Bounds: the latency window is 60 one-second slots of a fixed log-linear histogram; the uid
//! table holds at most [`UID_CAP`] uids (an idle one is recycled for a new uid; when all are
//! held by live connections, new uids share one overflow entry); the error ring keeps
//! [`ERRORS_KEPT`] entries with messages cut to [`MESSAGE_MAX`] bytes.
//!
//! Precision: counters are relaxed atomics, so a snapshot taken while requests finish may be a
//! request or two apart between fields. A latency slot is cleared by the first request of a new
//! second; a request recorded in the same instant into that slot may be lost with the clearing.

use ptc_shared::status::{ErrorEntry, Latency, Outcomes, ReasonCount, UidUsage};
use ptc_shared::{FailReason, Step};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Uids tracked one by one.
pub const UID_CAP: usize = 1024;
/// Failed requests kept for `status`.
pub const ERRORS_KEPT: usize = 32;
/// Longest error message kept, in bytes.
pub const MESSAGE_MAX: usize = 240;
/// The latency window, in one-second slots.
pub const WINDOW_S: u32 = 60;

/// Counters of the whole daemon.
#[derive(Debug)]
pub(crate) struct Stats {
    started: Instant,
    ok: AtomicU64,
    failed: [AtomicU64; FailReason::ALL.len()],
    latency: Window,
    uids: UidTable,
    errors: Mutex<VecDeque<Recorded>>,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            started: Instant::now(),
            ok: AtomicU64::new(0),
            failed: std::array::from_fn(|_| AtomicU64::new(0)),
            latency: Window::default(),
            uids: UidTable::default(),
            errors: Mutex::new(VecDeque::with_capacity(ERRORS_KEPT)),
        }
    }
}

/// One failed request, as kept in the ring.
#[derive(Debug)]
struct Recorded {
    at: Instant,
    uid: u32,
    policy: String,
    reason: FailReason,
    reason_name: String,
    message: String,
}

impl Stats {
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// The counters of `uid`, held by its connection for its life.
    pub fn uid(&self, uid: u32) -> Arc<UidCounters> {
        self.uids.entry(uid)
    }

    /// Counts one finished request of `usage`'s uid, which took `took` in the daemon.
    pub fn finish(&self, usage: &UidCounters, policy: &str, step: &Step, took: Duration) {
        self.latency.record(self.started.elapsed(), took);
        usage.total.fetch_add(1, Relaxed);
        usage.duration_ms.fetch_add(step.usage.duration_ms, Relaxed);
        usage.cpu_ms.fetch_add(step.usage.cpu_ms, Relaxed);
        let Some(fail) = &step.fail else {
            self.ok.fetch_add(1, Relaxed);
            usage.ok.fetch_add(1, Relaxed);
            return;
        };
        if let Some(c) = self.failed.get(fail.reason as usize) {
            c.fetch_add(1, Relaxed);
        }
        usage.failed.fetch_add(1, Relaxed);
        if fail.reason == FailReason::Busy {
            usage.busy.fetch_add(1, Relaxed);
        }
        let entry = Recorded {
            at: Instant::now(),
            uid: usage.uid,
            policy: policy.to_string(),
            reason: fail.reason,
            reason_name: fail.reason_name().to_string(),
            message: cut(&fail.message, MESSAGE_MAX).to_string(),
        };
        let mut ring = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if ring.len() >= ERRORS_KEPT {
            ring.pop_front();
        }
        ring.push_back(entry);
    }

    /// Outcome totals since start.
    pub fn outcomes(&self) -> Outcomes {
        let mut failed: Vec<ReasonCount> = FailReason::ALL
            .iter()
            .zip(&self.failed)
            .map(|(r, c)| ReasonCount {
                reason: *r,
                count: c.load(Relaxed),
            })
            .filter(|c| c.count > 0)
            .collect();
        failed.sort_by_key(|c| std::cmp::Reverse(c.count));
        let ok = self.ok.load(Relaxed);
        let total = failed.iter().fold(ok, |t, c| t.saturating_add(c.count));
        Outcomes { total, ok, failed }
    }

    pub fn latency(&self) -> Latency {
        self.latency.percentiles(self.started.elapsed())
    }

    /// Usage per uid (`only`: just that uid's) and the overflow entry, if it was used.
    pub fn uid_usage(&self, only: Option<u32>) -> (Vec<UidUsage>, Option<UidUsage>) {
        self.uids.usage(only)
    }

    /// The kept errors, newest first (`only`: just that uid's).
    pub fn errors(&self, only: Option<u32>) -> Vec<ErrorEntry> {
        let now = Instant::now();
        let ring = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        ring.iter()
            .rev()
            .filter(|e| only.is_none_or(|u| u == e.uid))
            .map(|e| ErrorEntry {
                age_ms: ms(now.saturating_duration_since(e.at)),
                uid: e.uid,
                policy: e.policy.clone(),
                reason: e.reason,
                reason_name: e.reason_name.clone(),
                message: e.message.clone(),
            })
            .collect()
    }
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// One uid's counters (atomics: many connections of a uid update them at once).
#[derive(Debug, Default)]
pub(crate) struct UidCounters {
    uid: u32,
    in_flight: AtomicU64,
    total: AtomicU64,
    ok: AtomicU64,
    failed: AtomicU64,
    busy: AtomicU64,
    duration_ms: AtomicU64,
    cpu_ms: AtomicU64,
}

/// Counts a request as in flight for its uid while alive.
pub(crate) struct InFlight<'a>(&'a UidCounters);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

impl UidCounters {
    pub fn enter(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Relaxed);
        InFlight(self)
    }

    fn usage(&self) -> UidUsage {
        UidUsage {
            uid: self.uid,
            in_flight: self.in_flight.load(Relaxed),
            total: self.total.load(Relaxed),
            ok: self.ok.load(Relaxed),
            failed: self.failed.load(Relaxed),
            busy: self.busy.load(Relaxed),
            duration_ms: self.duration_ms.load(Relaxed),
            cpu_ms: self.cpu_ms.load(Relaxed),
        }
    }
}

/// At most [`UID_CAP`] uids, plus one shared entry for uids that found it full.
#[derive(Debug)]
struct UidTable {
    uids: Mutex<HashMap<u32, Arc<UidCounters>>>,
    overflow: Arc<UidCounters>,
}

impl Default for UidTable {
    fn default() -> UidTable {
        UidTable {
            uids: Mutex::new(HashMap::new()),
            overflow: Arc::new(UidCounters {
                uid: u32::MAX,
                ..UidCounters::default()
            }),
        }
    }
}

impl UidTable {
    /// `uid`'s entry; when the table is full, an idle uid's entry (no connection holds it) is
    /// recycled, and when none is idle the uid shares the overflow entry.
    fn entry(&self, uid: u32) -> Arc<UidCounters> {
        let mut uids = self.uids.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = uids.get(&uid) {
            return Arc::clone(c);
        }
        if uids.len() >= UID_CAP {
            let idle = uids
                .iter()
                .find(|(_, c)| Arc::strong_count(c) == 1)
                .map(|(u, _)| *u);
            match idle {
                Some(u) => uids.remove(&u),
                None => return Arc::clone(&self.overflow),
            };
        }
        let c = Arc::new(UidCounters {
            uid,
            ..UidCounters::default()
        });
        uids.insert(uid, Arc::clone(&c));
        c
    }

    fn usage(&self, only: Option<u32>) -> (Vec<UidUsage>, Option<UidUsage>) {
        let uids = self.uids.lock().unwrap_or_else(|p| p.into_inner());
        let mut list: Vec<UidUsage> = match only {
            Some(u) => uids.get(&u).map(|c| c.usage()).into_iter().collect(),
            None => uids.values().map(|c| c.usage()).collect(),
        };
        list.sort_by_key(|u| u.uid);
        let overflow = self.overflow.usage();
        let overflow =
            (only.is_none() && overflow.total + overflow.in_flight > 0).then_some(overflow);
        (list, overflow)
    }
}

/// Histogram buckets: 0..16 µs exactly, then 8 per power of two up to 2^35 µs (about 9.5 h);
/// longer requests land in the last bucket.
const EXACT: usize = 16;
const SUB: usize = 8;
const BUCKETS: usize = EXACT + (35 - 4 + 1) * SUB;

/// The bucket of a latency in µs.
fn bucket(us: u64) -> usize {
    if let Ok(exact) = usize::try_from(us)
        && exact < EXACT
    {
        return exact;
    }
    let e = 63 - us.leading_zeros() as usize; // >= 4
    let sub = ((us >> (e - 3)) & 7) as usize;
    (EXACT + (e - 4) * SUB + sub).min(BUCKETS - 1)
}

/// The largest latency in µs that falls in bucket `b`.
fn upper(b: usize) -> u64 {
    if b < EXACT {
        return b as u64;
    }
    let (e, sub) = ((b - EXACT) / SUB + 4, (b - EXACT) % SUB);
    ((SUB + sub + 1) << (e - 3)) as u64 - 1
}

/// One second's histogram, tagged with the second (since start) it holds.
#[derive(Debug)]
struct Slot {
    second: AtomicU64,
    counts: [AtomicU32; BUCKETS],
}

/// The last [`WINDOW_S`] seconds, one slot each, reused round-robin.
#[derive(Debug)]
struct Window {
    slots: Box<[Slot]>,
}

impl Default for Window {
    fn default() -> Window {
        let slots = (0..WINDOW_S)
            .map(|_| Slot {
                // No slot holds a second yet (second 0 would look current at start).
                second: AtomicU64::new(u64::MAX),
                counts: std::array::from_fn(|_| AtomicU32::new(0)),
            })
            .collect();
        Window { slots }
    }
}

impl Window {
    fn record(&self, now: Duration, took: Duration) {
        let second = now.as_secs();
        let index = usize::try_from(second % u64::from(WINDOW_S)).unwrap_or(0);
        let Some(slot) = self.slots.get(index) else {
            return;
        };
        let seen = slot.second.load(Relaxed);
        if seen != second
            && slot
                .second
                .compare_exchange(seen, second, Relaxed, Relaxed)
                .is_ok()
        {
            for c in &slot.counts {
                c.store(0, Relaxed);
            }
        }
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        if let Some(c) = slot.counts.get(bucket(us)) {
            c.fetch_add(1, Relaxed);
        }
    }

    fn percentiles(&self, now: Duration) -> Latency {
        let second = now.as_secs();
        let mut merged = [0u64; BUCKETS];
        for slot in self.slots.iter() {
            let s = slot.second.load(Relaxed);
            if s > second || second - s >= u64::from(WINDOW_S) {
                continue;
            }
            for (m, c) in merged.iter_mut().zip(&slot.counts) {
                *m += u64::from(c.load(Relaxed));
            }
        }
        let count: u64 = merged.iter().sum();
        Latency {
            window_s: WINDOW_S,
            count,
            p50_us: quantile(&merged, count, 50),
            p99_us: quantile(&merged, count, 99),
        }
    }
}

/// The upper bound of the bucket holding the `pct`-th percentile (nearest rank).
fn quantile(counts: &[u64], total: u64, pct: u64) -> Option<u64> {
    if total == 0 {
        return None;
    }
    let rank = (total * pct).div_ceil(100).max(1);
    let mut seen = 0;
    for (b, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(upper(b));
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_latency_within_an_eighth() {
        let mut last = 0;
        for us in (0..100_000u64).chain([1 << 20, (1 << 35) - 1, u64::MAX]) {
            let b = bucket(us);
            assert!(b >= last || us >= 1 << 20, "{us}");
            last = b;
            if b < BUCKETS - 1 {
                assert!(upper(b) >= us, "{us} > upper({b}) = {}", upper(b));
                assert!(upper(b) - us <= us / 8, "{us}: upper {}", upper(b));
            }
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn window_forgets_seconds_older_than_a_minute() {
        let w = Window::default();
        let at = |s: u64| Duration::from_secs(s);
        for _ in 0..98 {
            w.record(at(1), Duration::from_micros(1000));
        }
        w.record(at(2), Duration::from_millis(50));
        w.record(at(2), Duration::from_millis(50));
        let l = w.percentiles(at(2));
        assert_eq!(l.count, 100);
        let (p50, p99) = (l.p50_us.unwrap(), l.p99_us.unwrap());
        assert!((1000..=1125).contains(&p50), "{p50}");
        assert!((50_000..=56_250).contains(&p99), "{p99}");
        // 61 s later the first second is out of the window; second 62 reuses slot 2.
        assert_eq!(w.percentiles(at(61)).count, 2);
        w.record(at(62), Duration::from_micros(7));
        let l = w.percentiles(at(62));
        assert_eq!((l.count, l.p50_us), (1, Some(7)));
        assert_eq!(w.percentiles(at(200)).p99_us, None);
    }

    #[test]
    fn uid_table_is_capped_and_recycles_idle_uids() {
        let t = UidTable::default();
        let cap = u32::try_from(UID_CAP).unwrap();
        let held: Vec<_> = (0..cap).map(|u| t.entry(u)).collect();
        // Full, every entry held by a "connection": a new uid shares the overflow entry.
        let extra = t.entry(90_000);
        assert_eq!(extra.uid, u32::MAX);
        extra.total.fetch_add(1, Relaxed);
        let (list, overflow) = t.usage(None);
        assert_eq!((list.len(), overflow.map(|o| o.total)), (UID_CAP, Some(1)));
        assert_eq!(t.usage(Some(90_000)), (Vec::new(), None));
        // Once one uid's connections are gone, its entry goes to the next new uid.
        drop(held);
        assert_eq!(t.entry(90_001).uid, 90_001);
        assert_eq!(t.usage(None).0.len(), UID_CAP);
    }

    #[test]
    fn errors_are_bounded_newest_first_and_filtered() {
        let s = Stats::default();
        let (a, b) = (s.uid(1), s.uid(2));
        let long = "é".repeat(MESSAGE_MAX);
        for i in 0..(ERRORS_KEPT + 5) {
            let fail = ptc_shared::Fail::new(FailReason::Timeout, format!("{i} {long}"));
            let step = Step::failed(fail, ptc_shared::Value::Nil, Vec::new());
            let who = if i % 2 == 0 { &a } else { &b };
            s.finish(who, "default", &step, Duration::from_millis(1));
        }
        let all = s.errors(None);
        assert_eq!(all.len(), ERRORS_KEPT);
        assert!(all[0].message.starts_with(&format!("{} ", ERRORS_KEPT + 4)));
        assert!(all.iter().all(|e| e.message.len() <= MESSAGE_MAX));
        assert!(s.errors(Some(2)).iter().all(|e| e.uid == 2));
        let o = s.outcomes();
        assert_eq!((o.total, o.ok), (ERRORS_KEPT as u64 + 5, 0));
        assert_eq!(o.failed[0].reason, FailReason::Timeout);
    }
}
