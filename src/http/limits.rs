//! Per-client bounds at the HTTP edge: who the client is (its address, or the one a trusted
//! proxy names), the `initialize` rate per address and per principal (keyed GCRA from
//! `governor`), and the cap on open SSE streams, server-wide and per principal.
//!
//! An IPv6 client is rate-keyed by its network (`http.ipv6_prefix_len`, a /64 by default),
//! not its address: one host is routinely handed a whole /64, so per-address buckets would
//! give it 2^64 of them.

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
use crate::keyed_counts::{KeyedCounts, KeyedSlot};
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
    /// Streams per principal, with `[auth]` only: without it every client is the one
    /// anonymous principal, and the server-wide cap is the only one that means anything.
    sse_per_principal: Option<(KeyedCounts, usize)>,
    trusted_proxies: Vec<IpAddr>,
    ipv6_prefix_len: u8,
}

/// One open SSE stream: a server-wide permit and the principal's slot, both given back
/// when the stream ends.
pub(crate) struct SsePermit {
    _server: OwnedSemaphorePermit,
    _principal: Option<KeyedSlot>,
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
            sse_per_principal: config
                .auth
                .as_ref()
                .map(|_| (KeyedCounts::default(), http.max_sse_streams_per_principal)),
            trusted_proxies: http.trusted_proxies.clone(),
            ipv6_prefix_len: http.ipv6_prefix_len,
        }
    }

    /// The client's address: the peer, or for a trusted proxy the last address it added to
    /// `X-Forwarded-For` (else the last `for=` of `Forwarded`, RFC 7239). `None` when the
    /// peer is unknown (a router mounted without the accept loop).
    pub fn client_ip(
        &self,
        request_peer: Option<SocketAddr>,
        headers: &HeaderMap,
    ) -> Option<IpAddr> {
        let peer = request_peer?.ip();
        if !self.trusted_proxies.contains(&peer) {
            return Some(peer);
        }
        Some(forwarded_client(headers).unwrap_or(peer))
    }

    /// 429 when `ip` sends `initialize` faster than `http.initialize_rate_per_ip`.
    pub fn initialize_from(&self, ip: Option<IpAddr>) -> Result<(), HttpError> {
        match (&self.per_ip, ip) {
            (Some(rate), Some(ip)) => match rate.check(&rate_key(ip, self.ipv6_prefix_len)) {
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

    /// One of `http.max_sse_streams` and of the principal's
    /// `http.max_sse_streams_per_principal`, or 503; see [`hold`].
    pub fn sse_permit(&self, principal: &Arc<str>) -> Result<SsePermit, HttpError> {
        // The principal's share first: one at its share must not take a server-wide permit,
        // even for the instant before it is refused.
        let slot = match &self.sse_per_principal {
            Some((counts, cap)) => Some(counts.take(principal, *cap).ok_or_else(|| {
                HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    codes::SERVER_ERROR,
                    format!(
                        "you have {cap} SSE streams open (http.max_sse_streams_per_principal); close one or retry later"
                    ),
                )
                .retry_after(5)
                .limit(Limit::PrincipalSseStreams)
            })?),
            None => None,
        };
        let server = Arc::clone(&self.sse_streams)
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
            })?;
        Ok(SsePermit {
            _server: server,
            _principal: slot,
        })
    }
}

/// What an `initialize` rate is charged to: an IPv4 address, or an IPv6 address's first
/// `prefix_len` bits (an IPv4-mapped IPv6 address counts as the IPv4 address it maps).
pub(crate) fn rate_key(ip: IpAddr, prefix_len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u32::from(prefix_len.min(128));
                let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & mask))
            }
        },
    }
}

/// The client a trusted proxy names: the last entry of `X-Forwarded-For`, or without that
/// header the last `for=` of `Forwarded`.
fn forwarded_client(headers: &HeaderMap) -> Option<IpAddr> {
    let last_of = |name: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .next_back()
            .map(str::to_owned)
    };
    if let Some(entry) = last_of("x-forwarded-for") {
        return parse_node(&entry);
    }
    let element = last_of("forwarded")?;
    let node = element.split(';').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        name.trim().eq_ignore_ascii_case("for").then_some(value)
    })?;
    parse_node(node)
}

/// One forwarded node: `1.2.3.4`, `1.2.3.4:5678`, `::1`, `[::1]` or `[::1]:5678`, quoted
/// or not (RFC 7239 §6). Proxies that add the client's port would otherwise make every
/// entry unparseable, and every client would be charged to the proxy's own bucket.
pub(crate) fn parse_node(node: &str) -> Option<IpAddr> {
    let node = node.trim().trim_matches('"');
    if let Ok(ip) = node.parse() {
        return Some(ip);
    }
    if let Some(rest) = node.strip_prefix('[') {
        let (inside, _port) = rest.split_once(']')?;
        return inside.parse().ok();
    }
    node.parse::<SocketAddr>().ok().map(|a| a.ip())
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
pub(crate) fn hold(response: Response, permit: SsePermit) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("an address")
    }

    #[test]
    fn ipv6_rate_keys_cover_the_prefix_and_ipv4_keys_are_the_address() {
        let key = |s| rate_key(ip(s), 64);
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("2001:db8:1:2::1"), ip("2001:db8:1:2::"));
        assert_eq!(rate_key(ip("2001:db8::1"), 128), ip("2001:db8::1"));
        assert_eq!(rate_key(ip("2001:db8::1"), 0), ip("::"));
        assert_eq!(key("10.0.0.1"), ip("10.0.0.1"));
        assert_eq!(key("::ffff:10.0.0.1"), ip("10.0.0.1"));
    }

    #[test]
    fn forwarded_nodes_parse_with_and_without_ports() {
        assert_eq!(parse_node(" 203.0.113.7"), Some(ip("203.0.113.7")));
        assert_eq!(parse_node("203.0.113.7:41234"), Some(ip("203.0.113.7")));
        assert_eq!(parse_node("2001:db8::7"), Some(ip("2001:db8::7")));
        assert_eq!(parse_node("[2001:db8::7]"), Some(ip("2001:db8::7")));
        assert_eq!(parse_node("\"[2001:db8::7]:443\""), Some(ip("2001:db8::7")));
        assert_eq!(parse_node("unknown"), None);
        assert_eq!(parse_node("_hidden"), None);
    }

    #[test]
    fn a_trusted_proxy_names_the_client_in_either_header() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "198.51.100.1, 203.0.113.7:5000".parse().unwrap(),
        );
        assert_eq!(forwarded_client(&headers), Some(ip("203.0.113.7")));
        let mut headers = HeaderMap::new();
        headers.insert(
            "forwarded",
            "for=198.51.100.1, for=\"[2001:db8::7]:443\";proto=https"
                .parse()
                .unwrap(),
        );
        assert_eq!(forwarded_client(&headers), Some(ip("2001:db8::7")));
    }
}
