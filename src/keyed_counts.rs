//! Counts per key (a principal, a client address) for caps such as
//! `auth.max_sessions_per_principal` and `http.max_connections_per_ip`: a slot is taken
//! before the work starts and given back when its guard drops, so concurrent requests
//! cannot overshoot a cap.

use std::sync::Arc;

use dashmap::DashMap;

/// How many of something each key holds now. Keys with nothing held are removed, so
/// the map is as large as the set of principals with something live.
#[derive(Debug, Default)]
pub struct KeyedCounts {
    counts: Arc<DashMap<Arc<str>, usize>>,
}

/// One unit held by a key; dropping it gives the unit back.
#[derive(Debug)]
pub struct KeyedSlot {
    counts: Arc<DashMap<Arc<str>, usize>>,
    key: Arc<str>,
}

impl KeyedCounts {
    /// Takes one unit for `key`, or `None` when it already holds `cap`.
    pub fn take(&self, key: &Arc<str>, cap: usize) -> Option<KeyedSlot> {
        let mut count = self.counts.entry(Arc::clone(key)).or_insert(0);
        if *count >= cap {
            return None;
        }
        *count += 1;
        drop(count);
        Some(KeyedSlot {
            counts: Arc::clone(&self.counts),
            key: Arc::clone(key),
        })
    }

    /// What `key` holds now.
    pub fn held(&self, key: &str) -> usize {
        self.counts.get(key).map_or(0, |c| *c)
    }
}

impl Drop for KeyedSlot {
    fn drop(&mut self) {
        if let Some(mut count) = self.counts.get_mut(&self.key) {
            *count = count.saturating_sub(1);
        }
        self.counts.remove_if(&self.key, |_, count| *count == 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_holds_per_principal_and_slots_come_back_when_dropped() {
        let counts = KeyedCounts::default();
        let (alice, bob): (Arc<str>, Arc<str>) = (Arc::from("alice"), Arc::from("bob"));
        let first = counts.take(&alice, 2).expect("first");
        let second = counts.take(&alice, 2).expect("second");
        assert!(counts.take(&alice, 2).is_none(), "a third is over the cap");
        assert!(
            counts.take(&bob, 2).is_some(),
            "another principal has its own"
        );
        drop(first);
        assert_eq!(counts.held("alice"), 1);
        let third = counts.take(&alice, 2).expect("a slot came back");
        drop((second, third));
        assert_eq!(counts.held("alice"), 0);
        assert!(
            counts.counts.is_empty(),
            "no entry is left for idle principals"
        );
    }
}
