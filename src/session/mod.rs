//! Handshake-era sessions: one actor task per `Mcp-Session-Id`.
//!
//! - `actor`: the task that owns all of one session's state;
//! - `handle`: the clonable sender HTTP handlers and tool tasks use to reach it;
//! - `registry`: the map from session id to handle, the only shared structure;
//! - [`streams`]: SSE streams and their replay logs;
//! - `pending`: server→client requests awaiting answers.
//!
//! Nothing outside this module reads or changes session state; everything else sends
//! messages.

pub(crate) mod actor;
pub(crate) mod handle;
pub(crate) mod pending;
pub(crate) mod registry;
pub mod streams;

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::protocol::{ClientInfo, ProtocolVersion};
use crate::server::Shared;
use handle::SessionHandle;
use streams::ReplayError;

/// Why a session could not serve an HTTP request. The HTTP layer maps each to a status.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("session not found: it ended or never existed; start a new one with initialize")]
    NotFound,
    #[error("the session's mailbox stayed full; retry shortly")]
    Busy,
    #[error(
        "this session already has {limit} requests in flight (sessions.max_in_flight); wait for some to finish"
    )]
    TooManyInFlight { limit: usize },
    #[error("the server is at its session limit ({limit}, sessions.max_sessions); retry later")]
    TooManySessions { limit: usize },
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// Mints a session id: 128 bits from the OS CSPRNG (UUIDv4), as 32 hex digits, prefixed with
/// `<node_id>.` when a node id is configured so a load balancer can route on it.
fn mint_session_id(node_id: &str) -> Arc<str> {
    let random = uuid::Uuid::new_v4().simple().to_string();
    if node_id.is_empty() {
        Arc::from(random)
    } else {
        Arc::from(format!("{node_id}.{random}"))
    }
}

/// Starts a session actor for a client that has just been answered `initialize`, and
/// registers it. The session is live, and accepts every request, from this moment on.
pub(crate) fn start(
    shared: &Arc<Shared>,
    version: ProtocolVersion,
    client: ClientInfo,
) -> Result<SessionHandle, SessionError> {
    let sessions = &shared.config.sessions;
    shared
        .registry
        .reserve()
        .map_err(|_| SessionError::TooManySessions {
            limit: shared.registry.max(),
        })?;
    let id = mint_session_id(&shared.config.server.node_id);
    let (tx, rx) = mpsc::channel(sessions.mailbox_capacity);
    let handle = SessionHandle::new(Arc::clone(&id), version, tx.clone(), sessions.mailbox_wait);
    shared.registry.insert(handle.clone());
    let actor = actor::SessionActor::new(id, version, Arc::new(client), Arc::clone(shared), rx, tx);
    tokio::spawn(actor.run());
    Ok(handle)
}
