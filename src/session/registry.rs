//! The session registry: the one structure shared between sessions, a map from
//! `Mcp-Session-Id` to [`SessionHandle`].
//!
//! Only [`start`](crate::session::start) inserts, with an id it has just minted, and only the
//! actor removes its own entry when it ends. So an ended session can never be written back:
//! there is no path that re-inserts an old id.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dashmap::DashMap;

use crate::log_limit::warn_limited;
use crate::session::actor::{ServerEvent, SessionMsg};
use crate::session::handle::SessionHandle;

#[derive(Debug)]
pub(crate) struct SessionRegistry {
    sessions: DashMap<Arc<str>, SessionHandle>,
    /// Slots taken, counted separately so concurrent `initialize`s cannot overshoot the cap.
    reserved: AtomicUsize,
    max: usize,
}

/// The registry is at `max_sessions`.
#[derive(Debug)]
pub(crate) struct RegistryFull;

impl SessionRegistry {
    pub fn new(max: usize) -> Self {
        SessionRegistry {
            sessions: DashMap::new(),
            reserved: AtomicUsize::new(0),
            max,
        }
    }

    pub fn get(&self, id: &str) -> Option<SessionHandle> {
        self.sessions.get(id).map(|h| h.value().clone())
    }

    /// Takes a slot for a new session, or fails at the cap.
    pub fn reserve(&self) -> Result<(), RegistryFull> {
        self.reserved
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| RegistryFull)
    }

    /// Gives back a slot taken by [`reserve`](Self::reserve) that was not used.
    pub fn release(&self) {
        self.reserved.fetch_sub(1, Ordering::AcqRel);
    }

    /// Inserts a session into a reserved slot.
    pub fn insert(&self, handle: SessionHandle) {
        self.sessions.insert(Arc::clone(&handle.id), handle);
    }

    /// Removes a session and frees its slot. Called by the session actor as it ends.
    pub fn remove(&self, id: &str) {
        if self.sessions.remove(id).is_some() {
            self.release();
        }
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
            if !entry
                .value()
                .try_tell(SessionMsg::Broadcast(Arc::clone(event)))
            {
                warn_limited!(session = %entry.key(), ?event, "session mailbox full; server event dropped");
            }
        }
    }

    /// Asks every session to end (graceful shutdown).
    pub fn shutdown_all(&self) {
        for entry in self.sessions.iter() {
            entry.value().try_tell(SessionMsg::Shutdown);
        }
    }
}
