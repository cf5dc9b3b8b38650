//! Fairness and backpressure: who may take a runner, and who waits.
//!
//! A request first takes a place of its uid (at most `per_uid_max` running plus `per_uid_queue`
//! waiting), then a per-uid execution slot, then a global runner slot (`max_runners`), waiting
//! for it only while fewer than `max_queue` requests wait. When any bound is reached the answer
//! is an immediate `busy`: the daemon never queues without bound and never hangs a client.
//!
//! Invariant: every counter is released by a guard's `Drop`, so a cancelled or aborted request
//! (its future dropped while waiting or running) gives its place back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Which bound refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// The uid has `per_uid_max + per_uid_queue` requests in the daemon already.
    Uid,
    /// `max_queue` requests already wait for a runner.
    Queue,
}

impl Busy {
    pub fn message(self) -> &'static str {
        match self {
            Busy::Uid => "too many requests from this user in flight; retry later",
            Busy::Queue => "all runners are busy and the queue is full; retry later",
        }
    }
}

struct UidSlot {
    running: Arc<Semaphore>,
    places: AtomicUsize,
}

/// The daemon's admission state (one per configuration).
#[derive(Debug)]
pub struct Admission {
    global: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_queue: usize,
    per_uid_max: usize,
    per_uid_places: usize,
    uids: Mutex<HashMap<u32, Arc<UidSlot>>>,
}

impl std::fmt::Debug for UidSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UidSlot")
            .field("places", &self.places)
            .finish()
    }
}

/// Held while a request may run; dropping it frees the runner slot and the uid's place.
#[derive(Debug)]
pub struct Permit {
    _global: OwnedSemaphorePermit,
    _uid: OwnedSemaphorePermit,
    _place: Place,
}

#[derive(Debug)]
struct Place(Arc<UidSlot>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.places.fetch_sub(1, Ordering::AcqRel);
    }
}

struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    pub fn new(
        max_runners: usize,
        max_queue: usize,
        per_uid_max: usize,
        per_uid_queue: usize,
    ) -> Admission {
        Admission {
            global: Arc::new(Semaphore::new(max_runners)),
            waiting: AtomicUsize::new(0),
            max_queue,
            per_uid_max,
            per_uid_places: per_uid_max.saturating_add(per_uid_queue),
            uids: Mutex::new(HashMap::new()),
        }
    }

    fn slot(&self, uid: u32) -> Arc<UidSlot> {
        let mut uids = match self.uids.lock() {
            Ok(u) => u,
            Err(p) => p.into_inner(),
        };
        // Forget idle uids so the map does not grow with every uid ever seen.
        if uids.len() > 4096 {
            uids.retain(|_, s| s.places.load(Ordering::Acquire) > 0);
        }
        Arc::clone(uids.entry(uid).or_insert_with(|| {
            Arc::new(UidSlot {
                running: Arc::new(Semaphore::new(self.per_uid_max)),
                places: AtomicUsize::new(0),
            })
        }))
    }

    /// Waits for a runner slot for `uid`, or says at once which bound is full.
    pub async fn admit(&self, uid: u32) -> Result<Permit, Busy> {
        let slot = self.slot(uid);
        if slot.places.fetch_add(1, Ordering::AcqRel) >= self.per_uid_places {
            slot.places.fetch_sub(1, Ordering::AcqRel);
            return Err(Busy::Uid);
        }
        let place = Place(Arc::clone(&slot));
        let uid_permit = match Arc::clone(&slot.running).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => self.wait(Arc::clone(&slot.running)).await?,
        };
        let global = match Arc::clone(&self.global).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => self.wait(Arc::clone(&self.global)).await?,
        };
        Ok(Permit {
            _global: global,
            _uid: uid_permit,
            _place: place,
        })
    }

    async fn wait(&self, sem: Arc<Semaphore>) -> Result<OwnedSemaphorePermit, Busy> {
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_queue {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(Busy::Queue);
        }
        let _w = Waiting(&self.waiting);
        // The semaphore is never closed, so acquire only fails if it were.
        sem.acquire_owned().await.map_err(|_| Busy::Queue)
    }

    /// Runner slots in use right now.
    pub fn running(&self, max_runners: usize) -> usize {
        max_runners.saturating_sub(self.global.available_permits())
    }

    /// Requests waiting right now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn per_uid_bound_is_busy_at_once_and_places_come_back() {
        let a = Arc::new(Admission::new(8, 8, 1, 1));
        let p1 = a.admit(7).await.unwrap();
        let a2 = Arc::clone(&a);
        let waiter = tokio::spawn(async move { a2.admit(7).await.map(|_| ()) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(a.admit(7).await.unwrap_err(), Busy::Uid);
        // Another uid is not affected.
        drop(a.admit(8).await.unwrap());
        drop(p1);
        waiter.await.unwrap().unwrap();
        drop(a.admit(7).await.unwrap());
    }

    fn known_uids(a: &Admission) -> usize {
        a.uids.lock().unwrap().len()
    }

    /// The uid map forgets idle uids once it holds more than 4,096, never a uid in flight
    /// (mutation testing: each comparison of the pruning rule was unchecked).
    #[tokio::test]
    async fn idle_uids_are_forgotten_past_4096_but_busy_ones_are_kept() {
        let a = Admission::new(8, 8, 1, 0);
        let held = a.admit(0).await.unwrap();
        for uid in 1..4097 {
            drop(a.admit(uid).await.unwrap());
        }
        assert_eq!(known_uids(&a), 4097, "no pruning up to 4,096 known uids");
        drop(a.admit(4097).await.unwrap());
        assert_eq!(
            known_uids(&a),
            2,
            "pruned: only the busy uid 0 and the new one remain"
        );
        // Uid 0's slot survived: its one running place is still taken.
        assert_eq!(a.admit(0).await.unwrap_err(), Busy::Uid, "{:?}", held);
        assert_eq!((a.running(8), a.waiting()), (1, 0));
    }

    #[test]
    fn busy_messages_name_the_bound() {
        assert!(Busy::Uid.message().contains("this user"));
        assert!(Busy::Queue.message().contains("queue is full"));
    }

    #[tokio::test]
    async fn global_queue_is_bounded() {
        let a = Arc::new(Admission::new(1, 1, 4, 4));
        assert_eq!(a.running(1), 0);
        let held = a.admit(1).await.unwrap();
        assert_eq!(a.running(1), 1);
        let a2 = Arc::clone(&a);
        let waiter = tokio::spawn(async move { a2.admit(2).await.map(|_| ()) });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(a.waiting(), 1);
        assert_eq!(a.admit(3).await.unwrap_err(), Busy::Queue);
        drop(held);
        waiter.await.unwrap().unwrap();
        assert_eq!((a.running(1), a.waiting()), (0, 0));
        let (b, c) = (a.admit(4).await.unwrap(), Admission::new(3, 0, 2, 0));
        let two = (c.admit(5).await.unwrap(), c.admit(5).await.unwrap());
        assert_eq!(c.running(3), 2, "{b:?} {two:?}");
    }
}
