//! Connection slots per client uid: one uid holding many connections (idle or not) cannot take
//! the global `max_connections` from everyone else.
//!
//! Invariant: a uid's count equals the [`Slot`]s alive for it; a slot gives its place back when
//! dropped (the connection task ends, however it ends), and a uid at zero leaves the map.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Open connections per uid.
#[derive(Debug, Default)]
pub(crate) struct ConnSlots {
    open: Mutex<HashMap<u32, usize>>,
}

/// One uid's place among the open connections, held for the life of a connection.
#[derive(Debug)]
pub(crate) struct Slot {
    slots: Arc<ConnSlots>,
    uid: u32,
}

impl ConnSlots {
    /// A slot for `uid`, or `Err(open)` when it already has `max` connections open.
    pub fn take(self: &Arc<Self>, uid: u32, max: usize) -> Result<Slot, usize> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(uid).or_insert(0);
        if *n >= max {
            return Err(*n);
        }
        *n += 1;
        Ok(Slot {
            slots: Arc::clone(self),
            uid,
        })
    }

    /// Connections open for `uid`.
    #[cfg(test)]
    pub fn open(&self, uid: u32) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(&uid).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_at_its_cap_is_refused_and_others_are_not() {
        let slots = Arc::new(ConnSlots::default());
        let a: Vec<Slot> = (0..3).filter_map(|_| slots.take(1000, 3).ok()).collect();
        assert_eq!(a.len(), 3);
        assert_eq!(slots.take(1000, 3).err(), Some(3));
        assert!(slots.take(1001, 3).is_ok());
        drop(a);
        assert_eq!(slots.open(1000), 0);
        assert!(slots.take(1000, 3).is_ok());
    }
}
