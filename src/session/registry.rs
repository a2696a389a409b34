//! The session registry: the structure sessions share, a map from
//! `Mcp-Session-Id` to [`SessionHandle`].
//!
//! Only [`start`](crate::session::start) inserts, with an id it has just minted, and only the
//! actor removes its own entry when it ends. So an ended session can never be written back:
//! there is no path that re-inserts an old id.

use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::events::ServerEvent;
use crate::keyed_counts::{KeyedCounts, KeyedSlot};
use crate::log_limit::warn_limited;
use crate::session::handle::SessionHandle;

#[derive(Debug)]
pub(crate) struct SessionRegistry {
    sessions: DashMap<Arc<str>, SessionHandle>,
    /// One permit per live session, taken before its id is minted and held by its actor, so
    /// concurrent `initialize`s cannot overshoot the cap.
    slots: Arc<Semaphore>,
    max: usize,
    /// Live sessions per principal key, for `auth.max_sessions_per_principal`.
    owned: KeyedCounts,
}

/// Why no slot was given.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RegistryFull {
    /// `sessions.max_sessions`.
    Server,
    /// The principal's own cap.
    Principal,
}

/// A live session's place: one of `max_sessions`, and one of its principal's. Held by the
/// actor; dropping it frees both.
#[derive(Debug)]
pub(crate) struct SessionSlot {
    /// The key of the principal the session is for.
    pub owner: Arc<str>,
    _permit: OwnedSemaphorePermit,
    _owner: Option<KeyedSlot>,
}

impl SessionRegistry {
    pub fn new(max: usize) -> Self {
        SessionRegistry {
            sessions: DashMap::new(),
            slots: Arc::new(Semaphore::new(max)),
            max,
            owned: KeyedCounts::default(),
        }
    }

    /// The live session `id`, if `owner` (a principal's key) created it. Another
    /// principal's session is as absent as an unknown one: the caller cannot tell them apart.
    pub fn get(&self, id: &str, owner: &str) -> Option<SessionHandle> {
        self.sessions
            .get(id)
            .filter(|h| *h.owner == *owner)
            .map(|h| h.value().clone())
    }

    /// The live session `id`, whoever created it: for the session layer's own use, never
    /// to serve a request.
    pub fn held(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.get(id).map(|h| h.value().clone())
    }

    /// Takes a slot for a new session of `owner`, or fails at the server's cap or at
    /// `per_owner` sessions of that owner (`None`: no cap of its own). The slot frees when
    /// it drops: with the actor, or at once if the session never starts.
    pub fn reserve(
        &self,
        owner: &Arc<str>,
        per_owner: Option<usize>,
    ) -> Result<SessionSlot, RegistryFull> {
        let permit = Arc::clone(&self.slots)
            .try_acquire_owned()
            .map_err(|_| RegistryFull::Server)?;
        let counted = match per_owner {
            Some(cap) => Some(self.owned.take(owner, cap).ok_or(RegistryFull::Principal)?),
            None => None,
        };
        Ok(SessionSlot {
            owner: Arc::clone(owner),
            _permit: permit,
            _owner: counted,
        })
    }

    /// Inserts a session that holds a reserved slot.
    pub fn insert(&self, handle: SessionHandle) {
        self.sessions.insert(Arc::clone(&handle.id), handle);
    }

    /// Removes a session. Called by the session actor as it ends.
    pub fn remove(&self, id: &str) {
        self.sessions.remove(id);
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Every live session, whoever owns it, ordered by id: for the admin API, which pages
    /// through them with the last id as its cursor.
    pub fn all(&self) -> Vec<SessionHandle> {
        let mut all: Vec<_> = self.sessions.iter().map(|h| h.value().clone()).collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        all
    }

    /// The live session `id`, whoever owns it: for the admin API only.
    pub fn any(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.get(id).map(|h| h.value().clone())
    }

    /// Delivers a server event to every session; a session whose mailbox is full misses it
    /// (logged), because one stuck session must not hold up the others.
    pub fn broadcast(&self, event: &Arc<ServerEvent>) {
        for entry in self.sessions.iter() {
            if !entry.value().broadcast(event) {
                warn_limited!(session = %entry.key(), ?event, "session mailbox full; server event dropped");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anyone() -> Arc<str> {
        Arc::from("anonymous")
    }

    #[test]
    fn a_principal_stops_at_its_own_cap_and_others_do_not() {
        let registry = SessionRegistry::new(10);
        let (alice, bob): (Arc<str>, Arc<str>) = (Arc::from("alice"), Arc::from("bob"));
        let held: Vec<_> = (0..3)
            .map(|_| registry.reserve(&alice, Some(3)).expect("alice's slot"))
            .collect();
        assert_eq!(
            registry.reserve(&alice, Some(3)).unwrap_err(),
            RegistryFull::Principal
        );
        assert!(
            registry.reserve(&bob, Some(3)).is_ok(),
            "bob has his own cap"
        );
        assert_eq!(
            registry.slots.available_permits(),
            7,
            "a refused principal gives its server slot back"
        );
        drop(held);
        assert!(registry.reserve(&alice, Some(3)).is_ok());
    }

    #[test]
    fn slots_stop_at_the_cap_and_come_back_when_released() {
        let registry = SessionRegistry::new(2);
        let first = registry.reserve(&anyone(), None).expect("first slot");
        let _second = registry.reserve(&anyone(), None).expect("second slot");
        assert!(
            registry.reserve(&anyone(), None).is_err(),
            "a third session over the cap"
        );
        drop(first);
        assert!(
            registry.reserve(&anyone(), None).is_ok(),
            "a freed slot is reusable"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_reservations_never_overshoot_the_cap() {
        let registry = Arc::new(SessionRegistry::new(8));
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let registry = Arc::clone(&registry);
            tasks.push(tokio::spawn(async move {
                registry.reserve(&anyone(), None).ok()
            }));
        }
        let mut held = Vec::new();
        for task in tasks {
            held.extend(task.await.expect("task"));
        }
        assert_eq!(held.len(), 8);
    }
}
