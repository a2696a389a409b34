//! Refusing a connection over a cap: `http.max_connections` (503) or
//! `http.max_connections_per_ip` (429), answered and closed within `header_timeout`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use tower_service::Service;

use super::ConnectionLimits;
use crate::http::error::HttpError;
use crate::jsonrpc::codes;
use crate::keyed_counts::{KeyedCounts, KeyedSlot};
use crate::log_limit::LogLimiter;
use crate::metrics::Limit;

/// Which connection cap refused a connection.
#[derive(Clone, Copy)]
pub(super) enum Refused {
    /// `http.max_connections` (503).
    Server,
    /// `http.max_connections_per_ip` (429).
    Address,
}

/// A slot among the peer's `max_connections_per_ip`; `None` for a trusted proxy.
pub(super) fn address_slot(
    per_ip: &KeyedCounts,
    limits: &ConnectionLimits,
    peer: SocketAddr,
) -> Result<Option<KeyedSlot>, ()> {
    if limits.trusted_proxies.contains(&peer.ip()) {
        return Ok(None);
    }
    let key: Arc<str> = Arc::from(peer.ip().to_string());
    per_ip
        .take(&key, limits.max_connections_per_ip)
        .map(Some)
        .ok_or(())
}

/// Over a connection cap: answer 503 (or 429 for one address's cap) with `Retry-After` and
/// close, within `header_timeout`.
pub(super) fn refuse(
    tcp: TcpStream,
    limits: &ConnectionLimits,
    why: Refused,
    refusals: &Arc<Semaphore>,
    connections: &mut JoinSet<()>,
) {
    static LOG: LogLimiter = LogLimiter::new();
    let (status, limit, key, message) = match why {
        Refused::Server => (
            StatusCode::SERVICE_UNAVAILABLE,
            Limit::MaxConnections,
            "http.max_connections",
            "the server is at its connection limit (http.max_connections); retry shortly",
        ),
        Refused::Address => (
            StatusCode::TOO_MANY_REQUESTS,
            Limit::MaxConnectionsPerIp,
            "http.max_connections_per_ip",
            "your address has too many connections open (http.max_connections_per_ip); reuse one",
        ),
    };
    if let Some(suppressed) = LOG.admit() {
        tracing::warn!(suppressed, "connection refused: {key} reached");
    }
    if let Some(metrics) = &limits.metrics {
        metrics.limit_hit(limit);
    }
    let Ok(permit) = Arc::clone(refusals).try_acquire_owned() else {
        return;
    };
    let deadline = limits.header_timeout;
    let overflow = match why {
        Refused::Server => limits.overflow.clone(),
        Refused::Address => None,
    };
    connections.spawn(async move {
        let _permit = permit;
        let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
            let overflow = overflow.clone();
            async move {
                let Some(mut router) = overflow else {
                    let error = HttpError::new(status, codes::SERVER_ERROR, message).retry_after(1);
                    return Ok::<_, Infallible>(error.into_response());
                };
                let request = request.map(axum::body::Body::new);
                router.call(request).await
            }
        });
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().keep_alive(false);
        let conn = builder.serve_connection(TokioIo::new(tcp), service);
        let _ = tokio::time::timeout(deadline, conn).await;
    });
}
