//! The HTTP face of the server: one endpoint path with POST, GET and DELETE (spec
//! `basic/transports.mdx`, "Streamable HTTP").
//!
//! Handlers are thin: they check headers, find the session handle, send the actor one
//! message and turn its answer into a response. Statuses are decided in [`error`].

pub(crate) mod admin;
pub(crate) mod admin_api;
mod auth;
pub(crate) mod connections;
pub(crate) mod error;
pub(crate) mod headers;
pub(crate) mod limits;
pub(crate) mod post;
pub(crate) mod reply;
mod stateless;

use std::sync::Arc;

use axum::Router;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};

use crate::auth::{Authenticator, Principal};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::session::handle::SessionHandle;
use crate::session::{SessionEnv, SessionError};
use crate::stateless::StatelessState;
use error::HttpError;

/// The router's state: each path's own state, composed by the server.
pub(crate) struct AppState {
    pub config: Arc<Config>,
    pub sessions: Arc<SessionEnv>,
    pub stateless: Arc<StatelessState>,
    pub metrics: Arc<Metrics>,
    /// Verifies bearer tokens when `[auth]` is configured.
    pub auth: Option<Arc<Authenticator>>,
    /// The principal of every request when `auth` is `None`.
    pub anonymous: Principal,
    /// Rates per client and the SSE stream cap.
    pub edge: limits::EdgeLimits,
    /// The admin API's token and its way to the reload task.
    pub admin: Arc<admin_api::AdminControl>,
}

impl AppState {
    /// The live session `id` of `principal` (with `[store]`, restored from its record if
    /// this node does not hold it), or 404's error: another principal's session is answered
    /// exactly as an unknown one.
    async fn session(
        &self,
        id: &str,
        principal: &Principal,
    ) -> Result<SessionHandle, SessionError> {
        crate::session::find_session(&self.sessions, id, &self.owner(principal)).await
    }

    /// Whether this node takes new sessions and 2026-07-28 requests: not while draining,
    /// nor at `sessions.max_sessions`. What `/readyz` answers.
    pub(crate) fn readiness(&self) -> Result<(), SessionError> {
        self.sessions.accepting()
    }
}

const ALLOW: &str = "GET, POST, DELETE";

/// The router serving the MCP endpoint at the configured path.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let endpoint: MethodRouter<Arc<AppState>> = get(open_stream)
        .post(post::post)
        .delete(delete_session)
        .fallback(|| async { HttpError::method_not_allowed(ALLOW).into_response() });
    let server = &state.config.server;
    let mut router = Router::new().route(&server.path, endpoint);
    if !server.health_path.is_empty() {
        router = router.route(&server.health_path, get(health));
    }
    if !server.ready_path.is_empty() {
        router = router.route(&server.ready_path, get(ready));
    }
    auth::metadata_routes(router, &state).with_state(state)
}

/// The health probe: `{"status":"ok"}`, behind the same Host and Origin checks as the
/// endpoint. A client on this machine (an operator, a local supervisor) also gets the session
/// and listen-stream counts; a remote one does not learn how busy the server is.
async fn health(State(state): State<Arc<AppState>>, request: axum::extract::Request) -> Response {
    if let Err(e) =
        headers::check_host_and_origin(request.headers(), request.uri(), &state.config.http)
    {
        return e.into_response();
    }
    let local = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .is_some_and(|ConnectInfo(peer)| peer.ip().is_loopback());
    if !local {
        return axum::Json(serde_json::json!({ "status": "ok" })).into_response();
    }
    let sessions = state.sessions.registry.len();
    let listen = state.stateless.listen_streams();
    axum::Json(serde_json::json!({ "status": "ok", "sessions": sessions, "listenStreams": listen }))
        .into_response()
}

/// The readiness probe: 200 `{"status":"ready"}` while the node takes new sessions; 503
/// with `Retry-After` while it drains or is at `sessions.max_sessions`, so a load balancer
/// sends new clients elsewhere. Behind the same Host and Origin checks as the endpoint.
async fn ready(State(state): State<Arc<AppState>>, uri: Uri, headers: HeaderMap) -> Response {
    if let Err(e) = headers::check_host_and_origin(&headers, &uri, &state.config.http) {
        return e.into_response();
    }
    readiness_response(&state)
}

/// `/readyz`'s answer, on the MCP listener and the admin listener alike.
pub(crate) fn readiness_response(state: &AppState) -> Response {
    match state.readiness() {
        // Held sessions are still served from memory while the store is down, so the node
        // stays ready unless `[store] required` refuses new sessions; either way the probe
        // says so for the operator.
        Ok(()) if state.sessions.store.as_ref().is_some_and(|s| s.is_down()) => {
            let status = match state.config.store.required {
                true => StatusCode::SERVICE_UNAVAILABLE,
                false => StatusCode::OK,
            };
            let body = serde_json::json!({ "status": "ready", "store": "down" });
            (status, axum::Json(body)).into_response()
        }
        Ok(()) => axum::Json(serde_json::json!({ "status": "ready" })).into_response(),
        Err(e) => {
            let status = match e {
                SessionError::Draining => "draining",
                _ => "full",
            };
            let body = serde_json::json!({ "status": status, "reason": e.to_string() });
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(axum::http::header::RETRY_AFTER, "1")],
                axum::Json(body),
            )
                .into_response()
        }
    }
}

/// GET and DELETE do not exist in 2026-07-28: 405 with `Allow: POST` (spec 2026-07-28
/// streamable-http, "Earlier Streamable HTTP Revisions").
fn reject_stateless(headers: &HeaderMap) -> Result<(), HttpError> {
    if headers::protocol_version_value(headers).is_some_and(crate::stateless::takes_version) {
        return Err(HttpError::method_not_allowed("POST"));
    }
    Ok(())
}

/// GET: the standalone SSE stream, or the resumption of any stream with `Last-Event-ID`
/// (spec "Listening for Messages from the Server", "Resumability and Redelivery").
async fn open_stream(State(state): State<Arc<AppState>>, uri: Uri, headers: HeaderMap) -> Response {
    let run = async {
        let config = &state.config.http;
        headers::check_host_and_origin(&headers, &uri, config)?;
        reject_stateless(&headers)?;
        let principal = state.principal(&headers).await?;
        headers::check_get_accept(&headers)?;
        headers::protocol_version(&headers)?;
        let id = headers::require_session_id(&headers)?;
        let handle = state.session(id, &principal).await?;
        let permit = state.edge.sse_permit(&principal.key)?;
        let attachment = handle.open_stream(headers::last_event_id(&headers)).await?;
        let response = reply::get_sse_response(attachment, config, &state.metrics);
        Ok::<_, HttpError>(limits::hold(response, permit))
    };
    run.await.unwrap_or_else(|e| e.respond(&state.metrics))
}

/// DELETE: ends the session. Later requests with its id get 404.
async fn delete_session(
    State(state): State<Arc<AppState>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let run = async {
        headers::check_host_and_origin(&headers, &uri, &state.config.http)?;
        reject_stateless(&headers)?;
        let principal = state.principal(&headers).await?;
        headers::protocol_version(&headers)?;
        let id = headers::require_session_id(&headers)?;
        crate::session::delete_session(&state.sessions, id, &state.owner(&principal)).await?;
        Ok::<_, HttpError>(StatusCode::OK.into_response())
    };
    run.await.unwrap_or_else(|e| e.respond(&state.metrics))
}
