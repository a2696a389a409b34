//! Per-client bounds at the HTTP edge: who the client is (its address, or the one a trusted
//! proxy names), the `initialize` rate per address and per principal (keyed GCRA from
//! `governor`), and the server-wide cap on open SSE streams.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::Config;
use crate::http::error::HttpError;
use crate::jsonrpc::codes;
use crate::metrics::Limit;

/// Checks between two sweeps of a rate limiter's idle keys, so a flood of addresses cannot
/// grow its map without bound.
const SWEEP_EVERY: u32 = 4096;

/// One keyed `initialize` rate.
struct Rate<K: std::hash::Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
    checks: AtomicU32,
}

impl<K: std::hash::Hash + Eq + Clone> Rate<K> {
    fn new(per_second: u32, burst: u32) -> Option<Self> {
        let per_second = NonZeroU32::new(per_second)?;
        // The configuration refuses a zero burst beside a rate; 1 is the floor regardless.
        let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::per_second(per_second).allow_burst(burst);
        Some(Rate {
            limiter: DefaultKeyedRateLimiter::dashmap(quota),
            checks: AtomicU32::new(0),
        })
    }

    /// `None` when `key` may go on; else how long it must wait, in whole seconds.
    fn check(&self, key: &K) -> Option<u64> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.limiter.retain_recent();
        }
        let refused = self.limiter.check_key(key).err()?;
        let wait = refused.wait_time_from(DefaultClock::default().now());
        Some(wait.as_secs_f64().ceil().max(1.0) as u64)
    }
}

/// The edge's own state: rates, the SSE stream cap and the trusted proxies.
pub(crate) struct EdgeLimits {
    per_ip: Option<Rate<IpAddr>>,
    per_principal: Option<Rate<Arc<str>>>,
    sse_streams: Arc<Semaphore>,
    max_sse_streams: usize,
    trusted_proxies: Vec<IpAddr>,
}

impl EdgeLimits {
    pub fn new(config: &Config) -> Self {
        let http = &config.http;
        let per_principal = config.auth.as_ref().and_then(|auth| {
            Rate::new(
                auth.initialize_rate_per_principal,
                auth.initialize_burst_per_principal,
            )
        });
        EdgeLimits {
            per_ip: Rate::new(http.initialize_rate_per_ip, http.initialize_burst_per_ip),
            per_principal,
            sse_streams: Arc::new(Semaphore::new(
                http.max_sse_streams.min(Semaphore::MAX_PERMITS),
            )),
            max_sse_streams: http.max_sse_streams,
            trusted_proxies: http.trusted_proxies.clone(),
        }
    }

    /// The client's address: the peer, or for a trusted proxy the last address of its
    /// `X-Forwarded-For` (the one that proxy added). `None` when the peer is unknown (a
    /// router mounted without the accept loop).
    pub fn client_ip(
        &self,
        request_peer: Option<SocketAddr>,
        headers: &HeaderMap,
    ) -> Option<IpAddr> {
        let peer = request_peer?.ip();
        if !self.trusted_proxies.contains(&peer) {
            return Some(peer);
        }
        let forwarded = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .next_back()
            .and_then(|last| last.trim().parse().ok());
        Some(forwarded.unwrap_or(peer))
    }

    /// 429 when `ip` sends `initialize` faster than `http.initialize_rate_per_ip`.
    pub fn initialize_from(&self, ip: Option<IpAddr>) -> Result<(), HttpError> {
        match (&self.per_ip, ip) {
            (Some(rate), Some(ip)) => match rate.check(&ip) {
                None => Ok(()),
                Some(wait) => Err(too_fast(
                    "your address sends initialize faster than http.initialize_rate_per_ip allows",
                    wait,
                    Limit::InitializeRateIp,
                )),
            },
            _ => Ok(()),
        }
    }

    /// 429 when the principal sends `initialize` faster than
    /// `auth.initialize_rate_per_principal`.
    pub fn initialize_by(&self, principal: &Arc<str>) -> Result<(), HttpError> {
        let Some(rate) = &self.per_principal else {
            return Ok(());
        };
        match rate.check(principal) {
            None => Ok(()),
            Some(wait) => Err(too_fast(
                "you send initialize faster than auth.initialize_rate_per_principal allows",
                wait,
                Limit::InitializeRatePrincipal,
            )),
        }
    }

    /// One of `http.max_sse_streams`, or 503; see [`hold`].
    pub fn sse_permit(&self) -> Result<OwnedSemaphorePermit, HttpError> {
        Arc::clone(&self.sse_streams)
            .try_acquire_owned()
            .map_err(|_| {
                HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    codes::SERVER_ERROR,
                    format!(
                        "the server has {} SSE streams open (http.max_sse_streams); retry later",
                        self.max_sse_streams
                    ),
                )
                .retry_after(5)
                .limit(Limit::MaxSseStreams)
            })
    }
}

fn too_fast(what: &str, wait: u64, limit: Limit) -> HttpError {
    HttpError::new(
        StatusCode::TOO_MANY_REQUESTS,
        codes::SERVER_ERROR,
        format!("Too Many Requests: {what}; retry after {wait} s"),
    )
    .retry_after(wait)
    .limit(limit)
}

/// The peer a request came from, when the accept loop recorded it.
pub(crate) fn peer(extensions: &axum::http::Extensions) -> Option<SocketAddr> {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer)
}

/// Keeps `permit` for as long as `response` streams, when it is an SSE stream; a plain
/// JSON reply is complete already, and the permit goes back at once.
pub(crate) fn hold(response: Response, permit: OwnedSemaphorePermit) -> Response {
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streaming {
        return response;
    }
    response.map(|body| {
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _held = &permit;
            chunk
        }))
    })
}
