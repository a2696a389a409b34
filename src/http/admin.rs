//! The admin listener: `/metrics`, `/healthz` and `/readyz` on an address of their own
//! (`[admin]`), apart from the MCP endpoint.
//!
//! A scraper or an orchestrator's probe should not need MCP headers, a Host allowlist
//! entry, or a slot among the endpoint's connections, and the endpoint's own probes stay
//! as they are. Everything here is read-only and answers GET only, so it has no Host or
//! Origin check; the admin API beside it ([`super::admin_api`]) takes POST and DELETE
//! under `/admin/*` and a bearer token. An address other machines can reach needs that
//! token or `server.allow_unauthenticated`.
//!
//! `/metrics` speaks both text formats Prometheus scrapes: OpenMetrics 1.0.0 when the
//! scraper's `Accept` asks for it (Prometheus does), the Prometheus text format 0.0.4
//! otherwise (curl, older scrapers). Both name the same samples.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;

use crate::http::AppState;
use crate::http::connections::{self, ConnectionLimits};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Open connections at most: scrapers and probes, not clients.
const MAX_CONNECTIONS: usize = 64;

/// How long an admin connection may stay silent before its request, and idle between
/// requests. Probes and scrapers send their request at once; a connection that sends
/// nothing is only holding one of the few slots, so it is closed soon.
const HEADER_TIMEOUT: Duration = Duration::from_secs(2);
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves the admin router on `listener` until `shutdown` completes, with the endpoint's
/// timeouts capped at [`HEADER_TIMEOUT`] and [`IDLE_TIMEOUT`].
///
/// Over [`MAX_CONNECTIONS`] (idle connections holding every slot), `/healthz` and `/readyz`
/// are still answered, one request per connection, from the refusals' separate budget: a
/// load balancer that got 503 would drain the node, and a liveness probe would restart it.
pub(crate) async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let http = &state.config.http;
    let limits = ConnectionLimits {
        mcp_path: Arc::from(""),
        max_connections: MAX_CONNECTIONS,
        max_connections_per_ip: MAX_CONNECTIONS,
        trusted_proxies: Vec::new(),
        header_timeout: http.header_timeout.min(HEADER_TIMEOUT),
        idle_timeout: http.idle_timeout.min(IDLE_TIMEOUT),
        write_timeout: http.write_timeout,
        shutdown_timeout: Duration::from_secs(1),
        metrics: None,
        overflow: Some(probes(Arc::clone(&state))),
    };
    connections::serve(listener, router(state), limits, shutdown).await
}

pub(crate) fn router(state: Arc<AppState>) -> Router {
    let base = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(health))
        .route("/readyz", get(ready));
    super::admin_api::with_api(base, state)
}

/// What an admin connection over the cap is served: the probes, which are cheap; a
/// scrape (a large reply) waits for a slot.
fn probes(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(health))
        .route("/readyz", get(ready))
        .fallback(|| async {
            let message = "the admin listener is at its connection limit; retry shortly";
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "1")],
                message,
            )
        })
        .with_state(state)
}

async fn metrics(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    let (body, content_type) = if openmetrics {
        (state.metrics.encode_openmetrics(), OPENMETRICS)
    } else {
        (state.metrics.encode_prometheus(), PROMETHEUS_TEXT)
    };
    let content_type = HeaderValue::from_static(content_type);
    (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// Liveness: the process answers.
async fn health() -> Response {
    axum::Json(serde_json::json!({ "status": "ok" })).into_response()
}

/// Readiness, as the endpoint's `/readyz` answers it: 503 while draining or full.
async fn ready(State(state): State<Arc<AppState>>) -> Response {
    super::readiness_response(&state)
}
