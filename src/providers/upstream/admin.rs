//! What the gateway holds, as the admin API shows it (`GET /admin/upstreams`): each
//! upstream, its shared connection, and how many session and principal scopes hold
//! connections to it. Read without waiting: a slot busy starting its connection is shown
//! as `starting`.

use serde_json::{Value, json};

use super::slot::Slot;
use super::{Gateway, UpstreamTransport};
use crate::config::upstreams::UpstreamScope;

impl Slot {
    /// `connected`, `idle` (no connection), or `starting` (the slot is busy right now).
    pub(crate) fn state_for_admin(&self) -> &'static str {
        match self.live_now() {
            Some(true) => "connected",
            Some(false) => "idle",
            None => "starting",
        }
    }
}

impl Gateway {
    /// One entry per configured upstream.
    pub(crate) fn describe_for_admin(&self) -> Vec<Value> {
        let inner = &self.inner;
        let principal_scopes = inner.principals.len();
        let children_running = inner.config.max_children - inner.children.available_permits();
        inner
            .upstreams
            .iter()
            .enumerate()
            .map(|(i, upstream)| {
                let (transport, shared) = match &upstream.transport {
                    UpstreamTransport::Stdio(_) => {
                        ("stdio", upstream.scope == UpstreamScope::Shared)
                    }
                    UpstreamTransport::Http(_) => ("http", upstream.scope == UpstreamScope::Shared),
                };
                let principals_connected = inner
                    .principals
                    .iter()
                    .filter(|s| s.value().slot_state(i) == "connected")
                    .count();
                json!({
                    "name": upstream.name,
                    "transport": transport,
                    "scope": if shared { "shared" } else { "session" },
                    "shared": shared.then(|| inner.shared[i].state_for_admin()),
                    "principalScopesConnected": principals_connected,
                    "principalScopes": principal_scopes,
                    "childrenRunning": children_running,
                })
            })
            .collect()
    }
}

impl super::Scope {
    /// The state of this scope's connection to upstream `index`.
    pub(crate) fn slot_state(&self, index: usize) -> &'static str {
        self.slots.get(index).map_or("idle", Slot::state_for_admin)
    }

    /// The upstreams this scope is connected to now, by name.
    pub(crate) fn connected_for_admin(&self) -> Vec<String> {
        self.gateway
            .upstreams
            .iter()
            .enumerate()
            .filter(|(i, _)| self.slot_state(*i) == "connected")
            .map(|(_, u)| u.name.clone())
            .collect()
    }
}
