//! One upstream connection slot: started on first use, restarted with backoff after the
//! upstream exits, stopped when its owner (a session, a principal's scope, the server)
//! closes.
//!
//! A start is single-flight: the first caller that finds no live connection starts one in a
//! task of its own, which holds the slot until the connection is up or has failed; later
//! callers wait for the slot. Every caller waits on its own clock (what is left of its
//! `call_timeout`), and one that gives up leaves the start running for the others, so
//! neither a slow start nor the backoff before it can hold a call past its timeout.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::wire::{Connection, Events, Relay, UpstreamError};
use super::{Inner, Upstream, UpstreamScope, UpstreamTransport, child};
use crate::protocol::ClientInfo;

/// The handshake revisions an upstream may answer `initialize` with.
const KNOWN_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Default)]
struct State {
    live: Option<Live>,
    /// Failed starts or crashes in a row, for the backoff.
    failures: u32,
    retry_at: Option<Instant>,
    /// Connections started so far; every one after the first is a restart.
    starts: u64,
}

struct Live {
    conn: Connection,
    /// A process's places among the children counted; none for an HTTP upstream.
    _permits: Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)>,
}

/// Where one upstream's connection for one owner lives.
#[derive(Default)]
pub(crate) struct Slot {
    state: Arc<Mutex<State>>,
}

impl Slot {
    /// Whether a live connection is held now; `None` when the slot is locked (starting).
    pub(crate) fn live_now(&self) -> Option<bool> {
        let state = self.state.try_lock().ok()?;
        Some(state.live.as_ref().is_some_and(|l| !l.conn.is_closed()))
    }

    /// The live connection, if the slot holds one and is not starting: what nearly every
    /// call finds, taken without a wait, a timer or the start's arguments.
    pub(crate) fn live_connection(&self) -> Option<Connection> {
        let state = self.state.try_lock().ok()?;
        let live = state.live.as_ref()?;
        (!live.conn.is_closed()).then(|| live.conn.clone())
    }

    /// The live connection, started (or restarted, after the backoff) when there is none;
    /// waiting for it (the slot, the backoff, the start) takes at most `wait`.
    pub async fn connection(
        &self,
        gateway: &Arc<Inner>,
        upstream: &Upstream,
        client: &ClientInfo,
        owner: &SlotOwner,
        events: Arc<dyn Events>,
        wait: Duration,
    ) -> Result<Connection, UpstreamError> {
        let deadline = Instant::now() + wait;
        let still_starting = || {
            UpstreamError::Unavailable(format!(
                "upstream {} was still starting after {wait:?} (its call_timeout); retry later",
                upstream.name
            ))
        };
        let state = tokio::time::timeout_at(deadline, Arc::clone(&self.state).lock_owned())
            .await
            .map_err(|_| still_starting())?;
        if let Some(live) = &state.live {
            if !live.conn.is_closed() {
                return Ok(live.conn.clone());
            }
        }
        let (gateway, index, client) = (Arc::clone(gateway), upstream.index, client.clone());
        let owner = SlotOwner {
            closed: owner.closed.clone(),
            children: Arc::clone(&owner.children),
        };
        let starting = tokio::spawn(async move {
            let mut state = state;
            let upstream = &gateway.upstreams[index];
            connect(&mut state, &gateway, upstream, &client, &owner, events).await
        });
        match tokio::time::timeout_at(deadline, starting).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(e)) => Err(UpstreamError::Unavailable(format!(
                "upstream {} could not start: {e}",
                upstream.name
            ))),
            Err(_) => Err(still_starting()),
        }
    }

    /// Starts the connection here and now, for the one caller of a slot of its own (the
    /// catalog's probe), which has nobody to share a start with.
    pub async fn start_now(
        &self,
        gateway: &Inner,
        upstream: &Upstream,
        client: &ClientInfo,
        owner: &SlotOwner,
        events: Arc<dyn Events>,
    ) -> Result<Connection, UpstreamError> {
        let mut state = self.state.lock().await;
        connect(&mut state, gateway, upstream, client, owner, events).await
    }
}

/// Starts the connection of a slot that has none live; the caller holds the slot.
async fn connect(
    state: &mut State,
    gateway: &Inner,
    upstream: &Upstream,
    client: &ClientInfo,
    owner: &SlotOwner,
    events: Arc<dyn Events>,
) -> Result<Connection, UpstreamError> {
    if state.live.take().is_some() {
        // It ended by itself: a crash, counted for the backoff.
        state.failures += 1;
        state.retry_at = Some(Instant::now() + backoff(&gateway.config, state.failures));
    }
    if owner.closed.is_cancelled() {
        return Err(UpstreamError::Unavailable(
            "the session that owned this upstream connection has ended".into(),
        ));
    }
    if let Some(at) = state.retry_at {
        tokio::select! {
            () = tokio::time::sleep_until(at) => {}
            () = owner.closed.cancelled() => return Err(UpstreamError::Unavailable(
                "the session that owned this upstream connection has ended".into(),
            )),
        }
    }
    let permits = match upstream.transport {
        UpstreamTransport::Stdio(_) => Some(take_permits(gateway, owner, &upstream.name)?),
        UpstreamTransport::Http(_) => None,
    };
    state.starts += 1;
    if state.starts > 1 {
        tracing::info!(upstream = %upstream.name, restarts = state.starts - 1, "restarting upstream");
        gateway.metrics.upstream_restarted();
    }
    match start(gateway, upstream, client, owner, events).await {
        Ok(conn) => {
            state.failures = 0;
            state.retry_at = None;
            state.live = Some(Live {
                conn: conn.clone(),
                _permits: permits,
            });
            Ok(conn)
        }
        Err(e) => {
            state.failures += 1;
            state.retry_at = Some(Instant::now() + backoff(&gateway.config, state.failures));
            Err(e)
        }
    }
}

/// Who owns a set of slots: their lifetime, and their share of `gateway.max_children_per_session`.
pub(crate) struct SlotOwner {
    pub closed: CancellationToken,
    pub children: Arc<Semaphore>,
}

fn backoff(config: &crate::config::upstreams::GatewaySection, failures: u32) -> Duration {
    let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(16));
    config
        .restart_backoff
        .saturating_mul(factor)
        .min(config.restart_backoff_max)
}

fn take_permits(
    gateway: &Inner,
    owner: &SlotOwner,
    upstream: &str,
) -> Result<(OwnedSemaphorePermit, OwnedSemaphorePermit), UpstreamError> {
    let Ok(server) = Arc::clone(&gateway.children).try_acquire_owned() else {
        crate::log_limit::warn_limited!(
            upstream,
            "upstream not started: gateway.max_children reached"
        );
        gateway
            .metrics
            .limit_hit(crate::metrics::Limit::MaxUpstreamChildren);
        return Err(UpstreamError::Unavailable(format!(
            "upstream {upstream} cannot start: the server already runs {} upstream processes \
             (gateway.max_children); retry later",
            gateway.config.max_children
        )));
    };
    let Ok(own) = Arc::clone(&owner.children).try_acquire_owned() else {
        gateway
            .metrics
            .limit_hit(crate::metrics::Limit::MaxUpstreamChildren);
        return Err(UpstreamError::Unavailable(format!(
            "upstream {upstream} cannot start: this session already holds {} upstream \
             connections (gateway.max_children_per_session)",
            gateway.config.max_children_per_session
        )));
    };
    Ok((server, own))
}

/// Starts a connection and runs the `initialize` handshake, mirroring the client's
/// capabilities so the upstream asks only what the client can answer.
async fn start(
    gateway: &Inner,
    upstream: &Upstream,
    client: &ClientInfo,
    owner: &SlotOwner,
    events: Arc<dyn Events>,
) -> Result<Connection, UpstreamError> {
    let name = &upstream.name;
    let stop = owner.closed.child_token();
    let conn = match &upstream.transport {
        UpstreamTransport::Stdio(spec) => {
            let (mut process, io) = child::spawn(name, spec, Arc::clone(&gateway.metrics))
                .map_err(|e| {
                    UpstreamError::Unavailable(format!("upstream {name} cannot start: {e}"))
                })?;
            let (exit, upstream_name) = (process.exit_note(), name.clone());
            let describe = move || child::describe_exit(&upstream_name, &exit);
            // One shared process serves every principal, and stdio says nothing of whom an
            // upstream's log message or request concerns.
            let relay = match upstream.scope {
                UpstreamScope::Shared => Relay::Never,
                UpstreamScope::Session => Relay::LatestCall,
            };
            let conn = Connection::start(io, events, describe, relay);
            let (watched, stopping, upstream_name) = (conn.clone(), stop.clone(), name.clone());
            let metrics = Arc::clone(&gateway.metrics);
            gateway.tracker.spawn(async move {
                let _running = metrics.upstream_process_running();
                // An exit that raced the stop (a process that died before it initialized)
                // is reported too.
                let exited = tokio::select! {
                    biased;
                    status = process.exited() => Some(status),
                    () = stopping.cancelled() => process.has_exited(),
                };
                if let Some(status) = exited {
                    process.stderr_drained().await;
                    tracing::warn!(upstream = %upstream_name, %status, "upstream exited{}", process.tail.describe());
                }
                watched.close();
                process.stop().await;
            });
            conn
        }
        UpstreamTransport::Http(spec) => {
            let closed = CancellationToken::new();
            let http = gateway.http.clone();
            let (io, driver) = super::http::start(name, Arc::clone(spec), http, closed.clone());
            gateway.tracker.spawn(driver);
            let conn = Connection::start_on(io, closed, events, String::new, Relay::LatestCall);
            let (watched, stopping) = (conn.clone(), stop.clone());
            gateway.tracker.spawn(async move {
                tokio::select! {
                    () = stopping.cancelled() => watched.close(),
                    () = watched.closed() => {}
                }
            });
            conn
        }
    };
    let params = json!({
        "protocolVersion": KNOWN_VERSIONS[0],
        "capabilities": mirrored_capabilities(&client.capabilities),
        "clientInfo": { "name": "mcp-actor", "version": env!("CARGO_PKG_VERSION") },
    });
    let initialized = conn
        .request("initialize", Some(params), None, upstream.startup_timeout)
        .await
        .and_then(|result| {
            let version = result.get("protocolVersion").and_then(Value::as_str);
            match version {
                Some(v) if KNOWN_VERSIONS.contains(&v) => Ok(result),
                other => Err(UpstreamError::Unavailable(format!(
                    "it answered initialize with protocol version {other:?}, which this gateway does not speak"
                ))),
            }
        });
    match initialized {
        Ok(_) => {
            conn.notify("notifications/initialized", None).await;
            tracing::debug!(upstream = %name, "upstream initialized");
            Ok(conn)
        }
        Err(e) => {
            conn.close();
            stop.cancel();
            Err(UpstreamError::Unavailable(format!(
                "upstream {name} did not initialize: {e}"
            )))
        }
    }
}

/// The client capabilities an upstream may rely on: the ones the gateway forwards.
fn mirrored_capabilities(declared: &Value) -> Value {
    let mut mirrored = serde_json::Map::new();
    for key in ["roots", "sampling", "elicitation"] {
        if let Some(value) = declared.get(key).filter(|v| v.is_object()) {
            mirrored.insert(key.into(), value.clone());
        }
    }
    Value::Object(mirrored)
}
