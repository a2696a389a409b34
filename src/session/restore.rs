//! Sessions that outlive their node (`[store]`): restoring a session this node does not
//! hold from its durable record, and ending one for good.
//!
//! - A restore is single-flight per id: concurrent requests for one unknown id wait on one
//!   gate, and all but the first find the restored session in the registry.
//! - Only the record's principal restores: anyone else gets the same 404 as for an unknown
//!   id, before any write, so a guessed id cannot move a session.
//! - The claim is one atomic compare-and-set in the store (owner node, epoch + 1), which
//!   fails for a deleted session (tombstone), so a restore that races a DELETE never
//!   brings the session back.
//! - A restored session's streams and replay logs are new: a `Last-Event-ID` from before
//!   opens a fresh stream that replays nothing.

use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::mpsc;

use super::actor::SessionActor;
use super::actor::record::{RecordKeeper, Start, first_record, record_ttl};
use super::handle::SessionHandle;
use super::messages::SessionMsg;
use super::registry::RegistryFull;
use super::{SessionEnv, SessionError, SessionOwner, launch};
use crate::log_limit::warn_limited;
use crate::protocol::{ClientInfo, Revision};
use crate::store::SessionRecord;

/// One gate per session id being restored; an entry lives only while someone waits on it.
pub(super) type Restoring = DashMap<Arc<str>, Arc<tokio::sync::Mutex<()>>>;

/// The record of a session `initialize` is starting, checked against `[store]`'s limits:
/// `None` without a store.
pub(super) fn new_record(
    env: &SessionEnv,
    owner: &SessionOwner,
    version: Revision,
    client: &ClientInfo,
) -> Result<Option<SessionRecord>, SessionError> {
    let Some(store) = &env.store else {
        return Ok(None);
    };
    let section = &env.core.config.store;
    if section.required && store.is_down() {
        warn_limited!("initialize refused: the session store is down and [store] required = true");
        return Err(SessionError::StoreDown);
    }
    let record = first_record(&owner.key, version, client);
    let size = record.encode().map(|t| t.len()).unwrap_or(usize::MAX);
    if size > section.max_record_bytes {
        warn_limited!(
            size,
            limit = section.max_record_bytes,
            "initialize refused: session record too large"
        );
        return Err(SessionError::Invalid(
            crate::jsonrpc::RpcError::invalid_params(format!(
                "initialize declares {size} bytes of capabilities and client info; this server keeps at \
             most {} ([store] max_record_bytes): declare less",
                section.max_record_bytes
            )),
        ));
    }
    Ok(Some(record))
}

/// The node name a store records as a session's owner.
fn node_name(env: &SessionEnv) -> &str {
    match env.core.config.server.node_id.as_str() {
        "" => "node",
        id => id,
    }
}

/// Runs a built actor, keeping its record when there is one, and hands back its handle.
pub(super) fn keep(
    env: &Arc<SessionEnv>,
    (handle, mut actor, tx): (SessionHandle, SessionActor, mpsc::WeakSender<SessionMsg>),
    record: Option<SessionRecord>,
) -> SessionHandle {
    if let (Some(store), Some(record)) = (&env.store, record) {
        let ttl = record_ttl(env.core.config.sessions.idle_ttl);
        let keeper = RecordKeeper::start(
            Arc::clone(store),
            Arc::clone(&handle.id),
            node_name(env),
            record,
            ttl,
            Start::Create,
            tx,
        );
        actor.keep_with(keeper);
    }
    tokio::spawn(actor.run());
    handle
}

/// The session `id` of `owner`: the live one, or, with a store, the one its record restores.
pub(crate) async fn find(
    env: &Arc<SessionEnv>,
    id: &str,
    owner: &SessionOwner,
) -> Result<SessionHandle, SessionError> {
    if let Some(handle) = env.registry.get(id, &owner.key) {
        return Ok(handle);
    }
    if env.store.is_none() {
        return Err(SessionError::NotFound);
    }
    // Boxed: a restore reads the store, and its future would otherwise size every
    // request's future, though almost every session is found in the registry above.
    Box::pin(restore_once(env, id, owner)).await
}

/// Restores `id` from the store, one restore per id at a time: a second request for the
/// same session waits for the first and then finds it in the registry.
async fn restore_once(
    env: &Arc<SessionEnv>,
    id: &str,
    owner: &SessionOwner,
) -> Result<SessionHandle, SessionError> {
    let gate = Arc::clone(env.restoring.entry(Arc::from(id)).or_default().value());
    let restored = {
        let _turn = gate.lock().await;
        match env.registry.get(id, &owner.key) {
            Some(handle) => Ok(handle),
            None => restore(env, id, owner).await,
        }
    };
    drop(gate);
    env.restoring
        .remove_if(id, |_, gate| Arc::strong_count(gate) == 1);
    restored
}

async fn restore(
    env: &Arc<SessionEnv>,
    id: &str,
    owner: &SessionOwner,
) -> Result<SessionHandle, SessionError> {
    let Some(store) = &env.store else {
        return Err(SessionError::NotFound);
    };
    let started = std::time::Instant::now();
    let record = store.load(id).await.map_err(|_| SessionError::StoreDown)?;
    let Some(record) = record.filter(|r| *r.principal == *owner.key) else {
        return Err(SessionError::NotFound);
    };
    let Some(version) = Revision::parse_handshake(&record.protocol_version) else {
        return Err(SessionError::NotFound);
    };
    // A draining node takes no session over: the request is handed to another node, which
    // restores it there.
    if env.core.drain.is_cancelled() {
        return Err(SessionError::HandOff);
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
    let ttl = record_ttl(env.core.config.sessions.idle_ttl);
    let claimed = store
        .claim(id, node_name(env), ttl)
        .await
        .map_err(|_| SessionError::StoreDown)?;
    let Some((ownership, record)) = claimed else {
        return Err(SessionError::NotFound);
    };
    let client = ClientInfo {
        implementation: record.client_info.clone(),
        capabilities: record.capabilities.clone(),
        protocol_version: Some(version),
    };
    let (handle, mut actor, tx) = launch(env, Arc::from(id), version, client, owner, slot);
    actor.restore_facts(&record);
    let keeper = RecordKeeper::start(
        Arc::clone(store),
        Arc::from(id),
        node_name(env),
        record,
        ttl,
        Start::Restored(ownership.clone()),
        tx,
    );
    actor.keep_with(keeper);
    tokio::spawn(actor.run());
    tracing::info!(
        session = %id,
        principal = %owner.name,
        epoch = ownership.epoch,
        took_ms = started.elapsed().as_secs_f64() * 1e3,
        "session restored from the store"
    );
    Ok(handle)
}

/// DELETE: with a store, the record goes and a tombstone stays (for `sessions.idle_ttl`)
/// before the actor ends, so no node can restore the session once this returns. A session
/// held by another node ends there at its next write or ownership check.
pub(crate) async fn delete(
    env: &Arc<SessionEnv>,
    id: &str,
    owner: &SessionOwner,
) -> Result<(), SessionError> {
    if env.store.is_none() {
        let live = env.registry.get(id, &owner.key);
        return live.ok_or(SessionError::NotFound)?.delete().await;
    }
    // Under the id's restore gate: a restore on this node cannot start an actor between
    // the tombstone and the end of the actor here.
    let gate = Arc::clone(env.restoring.entry(Arc::from(id)).or_default().value());
    let deleted = {
        let _turn = gate.lock().await;
        delete_gated(env, id, owner).await
    };
    drop(gate);
    env.restoring
        .remove_if(id, |_, gate| Arc::strong_count(gate) == 1);
    deleted
}

async fn delete_gated(
    env: &Arc<SessionEnv>,
    id: &str,
    owner: &SessionOwner,
) -> Result<(), SessionError> {
    let Some(store) = &env.store else {
        return Err(SessionError::NotFound);
    };
    let live = env.registry.get(id, &owner.key);
    if live.is_none() {
        let record = store.load(id).await.map_err(|_| SessionError::StoreDown)?;
        if record.is_none_or(|r| *r.principal != *owner.key) {
            return Err(SessionError::NotFound);
        }
    }
    store
        .delete(id, env.core.config.sessions.idle_ttl)
        .await
        .map_err(|_| SessionError::StoreDown)?;
    if let Some(handle) = live {
        // An actor that ended meanwhile is as good as deleted.
        let _ = handle.delete().await;
    }
    Ok(())
}

/// Ends this node's actor for each session another node claims or deletes, as the store
/// announces it (Redis), so two nodes serve one session for milliseconds at most.
pub(crate) fn watch_moves(env: &Arc<SessionEnv>) {
    let Some(store) = &env.store else {
        return;
    };
    let env = Arc::downgrade(env);
    store.watch_moves(move |id, epoch| {
        let Some(env) = env.upgrade() else {
            return false;
        };
        if let Some(handle) = env.registry.held(id) {
            handle.tell_moved(epoch);
        }
        !env.core.shutdown.is_cancelled()
    });
}
