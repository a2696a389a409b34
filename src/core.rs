//! What both eras read, server-wide: the configuration, the features a reload swaps, the
//! server's identity, the drain and shutdown signals, the metrics, the gateway and the
//! audit log.
//!
//! [`ServerBuilder::build`](crate::ServerBuilder) makes one `Core` and gives each era's
//! state (`session::SessionEnv`, `stateless::StatelessState`) an `Arc` of it, so the two never
//! disagree on any of these, and nothing is set after construction. What only one era owns
//! (the session registry; tasks, listen streams, request-state keys) stays in that era's
//! state.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio_util::sync::CancellationToken;

use crate::audit::AuditLog;
use crate::config::Config;
use crate::dispatch::identity::ServerIdentity;
use crate::features::Features;
use crate::metrics::Metrics;
use crate::providers::upstream::Gateway;

pub(crate) struct Core {
    pub config: Arc<Config>,
    /// `server.node_id`, shared rather than copied by each request's log fields.
    pub node_id: Arc<str>,
    /// What the server exposes; a reload swaps it whole. A handler takes its own `Arc`, so
    /// a reload never changes the tools of a running call.
    pub features: Arc<ArcSwap<Features>>,
    pub identity: Arc<ServerIdentity>,
    /// Cancelled when the server starts draining: no new session or 2026-07-28 request
    /// starts, and what is in flight runs to its end.
    pub drain: CancellationToken,
    /// Cancelled when the server shuts down: actors end at once, calls answer an error,
    /// listen streams end.
    pub shutdown: CancellationToken,
    pub metrics: Arc<Metrics>,
    /// The upstream servers (`[[upstreams]]`): each session owns its own connections, and
    /// 2026-07-28 requests reach session-scoped ones through one scope per principal.
    pub gateway: Option<Gateway>,
    /// `[audit]`: one line per tool call, prompt and resource read, in both eras.
    pub audit: AuditLog,
}
