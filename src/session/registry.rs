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
use crate::log_limit::warn_limited;
use crate::session::handle::SessionHandle;

#[derive(Debug)]
pub(crate) struct SessionRegistry {
    sessions: DashMap<Arc<str>, SessionHandle>,
    /// One permit per live session, taken before its id is minted and held by its actor, so
    /// concurrent `initialize`s cannot overshoot the cap.
    slots: Arc<Semaphore>,
    max: usize,
}

/// The registry is at `max_sessions`.
#[derive(Debug)]
pub(crate) struct RegistryFull;

impl SessionRegistry {
    pub fn new(max: usize) -> Self {
        SessionRegistry {
            sessions: DashMap::new(),
            slots: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    pub fn get(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.get(id).map(|h| h.value().clone())
    }

    /// Takes a slot for a new session, or fails at the cap. The slot frees when the permit
    /// drops: with the actor, or at once if the session never starts.
    pub fn reserve(&self) -> Result<OwnedSemaphorePermit, RegistryFull> {
        Arc::clone(&self.slots)
            .try_acquire_owned()
            .map_err(|_| RegistryFull)
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

    #[test]
    fn slots_stop_at_the_cap_and_come_back_when_released() {
        let registry = SessionRegistry::new(2);
        let first = registry.reserve().expect("first slot");
        let _second = registry.reserve().expect("second slot");
        assert!(registry.reserve().is_err(), "a third session over the cap");
        drop(first);
        assert!(registry.reserve().is_ok(), "a freed slot is reusable");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_reservations_never_overshoot_the_cap() {
        let registry = Arc::new(SessionRegistry::new(8));
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let registry = Arc::clone(&registry);
            tasks.push(tokio::spawn(async move { registry.reserve().ok() }));
        }
        let mut held = Vec::new();
        for task in tasks {
            held.extend(task.await.expect("task"));
        }
        assert_eq!(held.len(), 8);
    }
}
