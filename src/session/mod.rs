//! Handshake-era sessions: one actor task per `Mcp-Session-Id`.
//!
//! - `actor`: the task that owns all of one session's state;
//! - `handle`: the clonable sender HTTP handlers and tool tasks use to reach it;
//! - `registry`: the map from session id to handle, with the cap on live sessions;
//! - `messages`: what the actor's mailbox carries;
//! - [`streams`]: SSE streams and their replay logs;
//! - `pending`: server→client requests awaiting answers.
//!
//! Nothing outside this module reads or changes session state; everything else sends
//! messages.

pub(crate) mod actor;
pub(crate) mod handle;
mod messages;
pub(crate) mod pending;
pub(crate) mod registry;
mod restore;
pub mod streams;

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::core::Core;
use crate::events::{EventSink, ServerEvent};
use crate::jsonrpc::{self, RpcError};
use crate::protocol::{ClientInfo, Revision};
use handle::SessionHandle;
use registry::{RegistryFull, SessionRegistry};
pub(crate) use restore::{delete as delete_session, find as find_session, watch_moves};
use streams::ReplayError;

/// What the session layer owns, server-wide: the registry of live sessions and what every
/// session actor reads.
pub(crate) struct SessionEnv {
    /// What both eras read. Draining means no new session starts, and each session ends
    /// once nothing of it is in flight; shutdown ends actors at once, answering what they
    /// abort.
    pub core: Arc<Core>,
    pub registry: SessionRegistry,
    /// `[store]`: the sessions' durable records; `None` keeps them in memory only.
    pub store: Option<Arc<crate::store::SessionStore>>,
    /// Restores under way, one gate per session id (`restore`).
    restoring: restore::Restoring,
}

impl SessionEnv {
    pub fn new(core: Arc<Core>, store: Option<Arc<crate::store::SessionStore>>) -> Self {
        let registry = SessionRegistry::new(core.config.sessions.max_sessions);
        SessionEnv {
            core,
            registry,
            store,
            restoring: restore::Restoring::default(),
        }
    }

    /// Whether a new session would start now: not while draining, nor at `max_sessions`.
    pub fn accepting(&self) -> Result<(), SessionError> {
        if self.core.drain.is_cancelled() {
            return Err(SessionError::Draining);
        }
        if self.registry.len() >= self.registry.max() {
            return Err(SessionError::TooManySessions {
                limit: self.registry.max(),
            });
        }
        Ok(())
    }
}

/// Server events reach every session's mailbox.
impl EventSink for SessionEnv {
    fn deliver(&self, event: &Arc<ServerEvent>) {
        self.registry.broadcast(event);
    }
}

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
    #[error(
        "you already hold {limit} sessions (auth.max_sessions_per_principal); end one with DELETE, or let idle ones expire"
    )]
    TooManyForPrincipal { limit: usize },
    #[error(
        "this session already has {limit} streams open (sessions.max_streams_per_session); close one, or wait for responses to finish"
    )]
    TooManyStreams { limit: usize },
    #[error(
        "this server is shutting down and starts no new session; retry, and a load balancer \
         sends you to another node"
    )]
    Draining,
    #[error(
        "the session store ([store]) cannot be reached, so this session cannot be restored or \
         ended for good here; retry shortly"
    )]
    StoreDown,
    /// `[store]`: a draining node does not restore a session; another node will.
    #[error("this node is shutting down and hands its sessions to the others; retry")]
    HandOff,
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The request cannot open a session (malformed `initialize`).
    #[error("{}", .0.message)]
    Invalid(RpcError),
}

/// Who is starting a session: the principal's key (only it may use the session), a name
/// for logs, and its own session cap (`auth.max_sessions_per_principal`; `None` without
/// authentication, where the server's cap is the only one).
pub(crate) struct SessionOwner {
    pub key: Arc<str>,
    pub name: Arc<str>,
    pub max_sessions: Option<usize>,
}

/// Mints a session id: 122 random bits from the OS CSPRNG, as 32 hex digits, prefixed with
/// `<node_id>.` when a node id is configured so a load balancer can route on it; task ids
/// come from the same generator.
fn mint_session_id(node_id: &str) -> Arc<str> {
    Arc::from(crate::protocol::mint_routable_id(node_id))
}

/// Answers `initialize` (spec `basic/lifecycle.mdx`) and starts the session: the handle and
/// the encoded response. The session is live, and accepts every request, from this moment.
///
/// Counted as a request in the negotiated revision; a malformed one as an error in the
/// latest; one a limit refused is counted by that limit only.
pub(crate) fn initialize(
    env: &Arc<SessionEnv>,
    request: &jsonrpc::Request,
    owner: &SessionOwner,
) -> Result<(SessionHandle, bytes::Bytes), SessionError> {
    let started = std::time::Instant::now();
    let answer = answer_initialize(env, request, owner);
    let (era, ok) = match &answer {
        Ok((handle, _)) => (handle.version, true),
        Err(SessionError::Invalid(_)) => (Revision::LATEST, false),
        Err(_) => return answer,
    };
    let method = crate::protocol::Method::Initialize.metric_label(false);
    env.core
        .metrics
        .record_request(method, era, ok, started.elapsed());
    answer
}

fn answer_initialize(
    env: &Arc<SessionEnv>,
    request: &jsonrpc::Request,
    owner: &SessionOwner,
) -> Result<(SessionHandle, bytes::Bytes), SessionError> {
    let params = jsonrpc::params_object(request.params.as_ref()).map_err(SessionError::Invalid)?;
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            SessionError::Invalid(RpcError::invalid_params(
                "initialize needs a string `protocolVersion`",
            ))
        })?;
    // A supported revision is answered as asked; any other gets our latest, and the client
    // decides whether it can speak it.
    let version = Revision::parse_handshake(requested).unwrap_or(Revision::LATEST);
    let client = ClientInfo {
        implementation: params.get("clientInfo").cloned().unwrap_or(Value::Null),
        capabilities: params
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({})),
        protocol_version: Some(version),
    };
    let client_name = client
        .implementation
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let handle = start(env, version, client, owner)?;
    tracing::info!(session = %handle.id, principal = %owner.name, client = %client_name, requested, %version, "initialize");
    let result = env.core.identity.initialize_result(version.as_str());
    Ok((
        handle,
        jsonrpc::encode_response(Some(&request.id), &Ok(result)),
    ))
}

/// Starts a session actor for a client that is being answered `initialize`, and registers it.
fn start(
    env: &Arc<SessionEnv>,
    version: Revision,
    client: ClientInfo,
    owner: &SessionOwner,
) -> Result<SessionHandle, SessionError> {
    if env.core.drain.is_cancelled() {
        return Err(SessionError::Draining);
    }
    let slot = env
        .registry
        .reserve(&owner.key, owner.max_sessions)
        .map_err(|full| match (full, owner.max_sessions) {
            (RegistryFull::Principal, Some(limit)) => SessionError::TooManyForPrincipal { limit },
            _ => SessionError::TooManySessions {
                limit: env.registry.max(),
            },
        })?;
    let id = mint_session_id(&env.core.config.server.node_id);
    let record = restore::new_record(env, owner, version, &client)?;
    let actor = launch(env, id, version, client, owner, slot);
    Ok(restore::keep(env, actor, record))
}

/// Registers and builds the actor of session `id`; the caller runs it.
fn launch(
    env: &Arc<SessionEnv>,
    id: Arc<str>,
    version: Revision,
    client: ClientInfo,
    owner: &SessionOwner,
    slot: registry::SessionSlot,
) -> (
    SessionHandle,
    actor::SessionActor,
    mpsc::WeakSender<messages::SessionMsg>,
) {
    let sessions = &env.core.config.sessions;
    let (tx, rx) = mpsc::channel(sessions.mailbox_capacity);
    let owner_key = Arc::clone(&owner.key);
    let handle = SessionHandle::new(
        Arc::clone(&id),
        owner_key,
        version,
        tx.clone(),
        sessions.mailbox_wait,
        env.store.is_some().then(|| env.core.drain.clone()),
    );
    env.registry.insert(handle.clone());
    env.core.metrics.session_started();
    let actor = actor::SessionActor::new(
        id,
        version,
        Arc::new(client),
        Arc::clone(env),
        rx,
        tx.downgrade(),
        slot,
    );
    (handle, actor, tx.downgrade())
}
