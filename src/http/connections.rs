//! Accepting and serving TCP connections: the connection cap, the timeouts a slow or silent
//! client runs into, and the drain on shutdown.
//!
//! hyper is driven directly because `axum::serve` has none of these bounds. Each accepted
//! connection takes a permit from a semaphore of `http.max_connections`; one more is answered
//! 503 and closed (the refusals themselves are capped, so a flood cannot hold descriptors
//! through them). A watchdog per connection closes it when
//! - a request's headers did not complete within `http.header_timeout` of its first byte, or
//!   of the accept for a connection's first request (slowloris, silent connections), or
//! - no request has been in flight for `http.idle_timeout` (an idle keep-alive connection),
//!   or
//! - a write to the client has been blocked for `http.write_timeout`: the client stopped
//!   reading, and would otherwise hold the connection (and its reply) forever.
//!
//! A request in flight is not otherwise timed out here: a body that stalls is the POST handler's
//! `http.body_timeout`, and SSE streams are meant to live long.
//!
//! The watchdog runs in a task of its own, so serving a request polls no timer. On shutdown
//! the listener closes at once; connections with no request in flight are closed at once
//! too, busy ones as soon as their responses are done, and whatever is still open after
//! `server.shutdown_timeout` is dropped.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tower_service::Service;

use crate::http::error::HandOff;
use crate::keyed_counts::{KeyedCounts, KeyedSlot};
use refuse::{Refused, address_slot, refuse};
use version::Version;

mod refuse;
mod version;
use crate::log_limit::LogLimiter;
use crate::metrics::{Limit, Metrics};

/// The bounds of [`serve`], from `[http]` and `[server]`.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionLimits {
    /// The MCP endpoint's path (`server.path`).
    pub mcp_path: Arc<str>,
    pub max_connections: usize,
    /// `http.max_connections_per_ip`, for addresses not in `trusted_proxies`.
    pub max_connections_per_ip: usize,
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub write_timeout: Duration,
    pub shutdown_timeout: Duration,
    /// Where refusals and closes are counted (`None` for the admin listener, whose
    /// connections are not the MCP endpoint's).
    pub metrics: Option<Arc<Metrics>>,
    /// What serves a connection over `max_connections` instead of the 503 (one request,
    /// then close, within `header_timeout`, among the refusals' own budget): the admin
    /// listener's probes, which must answer while idle connections hold the cap.
    pub overflow: Option<Router>,
}

/// Connections being refused at once (over `max_connections`); beyond it a connection is
/// dropped without an answer.
const MAX_REFUSING: usize = 64;

/// Serves `router` on `listener` until `shutdown` completes, then drains (module docs).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let limits = Arc::new(limits);
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let per_ip = KeyedCounts::default();
    let refusals = Arc::new(Semaphore::new(MAX_REFUSING));
    let closing = CancellationToken::new();
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            // Reap finished connection tasks so the set stays the size of the open ones.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        accept_failed(&e).await;
                        continue;
                    }
                };
                // Replies are often written in a few small pieces (SSE events); without
                // TCP_NODELAY each would wait for the client's delayed ACK.
                let _ = tcp.set_nodelay(true);
                let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
                    refuse(tcp, &limits, Refused::Server, &refusals, &mut connections);
                    continue;
                };
                match address_slot(&per_ip, &limits, peer) {
                    Ok(address) => {
                        let connection = Connection {
                            router: router.clone(),
                            mcp_path: Arc::clone(&limits.mcp_path),
                            peer,
                            _permits: (permit, address),
                        };
                        let activity = Arc::new(Activity::new());
                        let ended = CancellationToken::new();
                        let serving = connections.spawn(connection.serve(
                            tcp,
                            Arc::clone(&activity),
                            ended.clone().drop_guard(),
                        ));
                        tokio::spawn(watch(
                            activity,
                            Arc::clone(&limits),
                            closing.clone(),
                            ended,
                            serving,
                            peer,
                        ));
                    }
                    Err(()) => refuse(tcp, &limits, Refused::Address, &refusals, &mut connections),
                }
            }
        }
    }
    drop(listener);
    closing.cancel();
    let open = connections.len();
    let drained = tokio::time::timeout(limits.shutdown_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            open = connections.len(),
            of = open,
            timeout = ?limits.shutdown_timeout,
            "connections still busy after server.shutdown_timeout; closing them"
        );
        connections.shutdown().await;
    }
    Ok(())
}

/// An accept error: per-connection ones (reset before accept) are noise; running out of
/// descriptors is logged (rate-limited) and waited out briefly instead of spinning.
async fn accept_failed(e: &io::Error) {
    static LOG: LogLimiter = LogLimiter::new();
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    if let Some(suppressed) = LOG.admit() {
        tracing::warn!(error = %e, suppressed, "accept failed; is the process out of file descriptors?");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// One accepted connection and what it needs to serve it.
struct Connection {
    router: Router,
    mcp_path: Arc<str>,
    peer: SocketAddr,
    /// One of `http.max_connections`, and one of the peer's own.
    _permits: (OwnedSemaphorePermit, Option<KeyedSlot>),
}

impl Connection {
    /// Serves the connection until it ends or its watchdog aborts it; `_ended` tells the
    /// watchdog, whichever way this future goes.
    async fn serve(self, tcp: TcpStream, activity: Arc<Activity>, _ended: DropGuard) {
        let io = WatchedIo {
            inner: tcp,
            activity: Arc::clone(&activity),
        };
        let (router, peer, requests) = (self.router, self.peer, Arc::clone(&activity));
        let mcp_path = self.mcp_path;
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let guard = requests.begin_request();
            let mut request = request.map(Body::new);
            // The health probe and requests without a session (initialize, counted per
            // address) read the peer; the others skip the allocation of an extensions map.
            if request.uri().path() != &*mcp_path
                || !request
                    .headers()
                    .contains_key(crate::http::headers::SESSION_ID)
            {
                request.extensions_mut().insert(ConnectInfo(peer));
            }
            let mut router = router.clone();
            async move {
                let response = router.call(request).await?;
                if response.extensions().get::<HandOff>().is_some() {
                    return Err(HandOff);
                }
                Ok::<_, HandOff>(response.map(|body| {
                    Body::new(TrackedBody {
                        inner: body,
                        _guard: guard,
                    })
                }))
            }
        });
        // What hyper-util's `auto::Builder` serves (HTTP/1, and HTTP/2 with prior knowledge),
        // at less memory per connection (see `version`).
        let served: Result<(), Box<dyn std::error::Error + Send + Sync>> =
            match version::sniff(io).await {
                Ok((Version::Http1, io)) => http1::Builder::new()
                    .serve_connection(TokioIo::new(io), service)
                    .await
                    .map_err(Into::into),
                Ok((Version::Http2, io)) => Box::pin(
                    http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(io), service),
                )
                .await
                .map_err(Into::into),
                Err(e) => Err(e.into()),
            };
        if let Err(e) = served {
            tracing::debug!(%peer, error = %e, "connection ended with an error");
        }
    }
}

/// How often a draining connection is looked at until its last response is done.
const DRAIN_POLL: Duration = Duration::from_millis(50);

/// The watchdog of one connection, in a task of its own so that serving a request never
/// polls a timer: it closes the connection (aborts its task) when `Activity::check` says
/// so, and on shutdown as soon as no request is in flight. It ends with the connection.
async fn watch(
    activity: Arc<Activity>,
    limits: Arc<ConnectionLimits>,
    closing: CancellationToken,
    ended: CancellationToken,
    connection: AbortHandle,
    peer: SocketAddr,
) {
    let first_look = limits.header_timeout.min(limits.write_timeout);
    let mut deadline = Instant::now() + first_look.min(limits.idle_timeout);
    loop {
        tokio::select! {
            () = ended.cancelled() => return,
            () = closing.cancelled() => break,
            () = tokio::time::sleep_until(deadline) => match activity.check(&limits) {
                Ok(next) => deadline = next,
                Err((limit, reason)) => {
                    tracing::debug!(%peer, reason, "connection closed");
                    if let Some(metrics) = &limits.metrics {
                        metrics.limit_hit(limit);
                    }
                    connection.abort();
                    return;
                }
            },
        }
    }
    // Shutting down: a connection closes once its responses are done (a long SSE stream
    // ends when the session or listen stream behind it does).
    loop {
        if activity.in_flight() == 0 {
            connection.abort();
            return;
        }
        tokio::select! {
            () = ended.cancelled() => return,
            () = tokio::time::sleep(DRAIN_POLL) => {}
        }
    }
}

const NO_BYTES: u64 = u64::MAX;

/// What the watchdog of one connection knows about it. Written by the I/O wrapper and the
/// request guards, read when a deadline passes.
struct Activity {
    born: Instant,
    in_flight: AtomicUsize,
    /// When the connection last had no request in flight, in ms since `born`.
    idle_since_ms: AtomicU64,
    /// When the first byte of a request not yet begun arrived, in ms since `born`.
    first_byte_ms: AtomicU64,
    /// Since when a write to the client has been waiting for room, in ms since `born`.
    write_blocked_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            born: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            // A new connection owes its first request: the header timeout runs from accept.
            first_byte_ms: AtomicU64::new(0),
            write_blocked_ms: AtomicU64::new(NO_BYTES),
        }
    }

    fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    fn begin_request(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.first_byte_ms.store(NO_BYTES, Ordering::Release);
        RequestGuard(Arc::clone(self))
    }

    /// Notes whether a write went through or has to wait for the client to read.
    fn write_polled<T>(&self, polled: &Poll<T>) {
        let blocked = self.write_blocked_ms.load(Ordering::Relaxed);
        match (polled.is_pending(), blocked == NO_BYTES) {
            (true, true) => self
                .write_blocked_ms
                .store(self.now_ms(), Ordering::Relaxed),
            (false, false) => self.write_blocked_ms.store(NO_BYTES, Ordering::Relaxed),
            _ => {}
        }
    }

    fn bytes_arrived(&self) {
        if self.in_flight() == 0 && self.first_byte_ms.load(Ordering::Acquire) == NO_BYTES {
            self.first_byte_ms.store(self.now_ms(), Ordering::Release);
        }
    }

    /// The next time to look again, or why the connection must close now.
    ///
    /// Nothing wakes the watchdog when bytes arrive or a write blocks (that would cost a
    /// wake-up per request): it looks at least every `header_timeout` and `write_timeout`,
    /// so it sees each start before its deadline and can sleep until exactly then.
    fn check(&self, limits: &ConnectionLimits) -> Result<Instant, (Limit, &'static str)> {
        let now = Instant::now();
        let at = |ms: u64, after: Duration| self.born + Duration::from_millis(ms) + after;
        let mut next_look = now + limits.header_timeout.min(limits.write_timeout);
        let blocked = self.write_blocked_ms.load(Ordering::Acquire);
        if blocked != NO_BYTES {
            let due = at(blocked, limits.write_timeout);
            if now >= due {
                let reason = "the client stopped reading its reply for http.write_timeout";
                return Err((Limit::WriteTimeout, reason));
            }
            next_look = next_look.min(due);
        }
        if self.in_flight() > 0 {
            return Ok(next_look);
        }
        let first = self.first_byte_ms.load(Ordering::Acquire);
        let (due, closed) = if first == NO_BYTES {
            let idle = self.idle_since_ms.load(Ordering::Acquire);
            let reason = "no request for http.idle_timeout";
            (at(idle, limits.idle_timeout), (Limit::IdleTimeout, reason))
        } else {
            let reason = "request headers incomplete after http.header_timeout";
            (
                at(first, limits.header_timeout),
                (Limit::HeaderTimeout, reason),
            )
        };
        if now >= due {
            Err(closed)
        } else {
            Ok(due.min(next_look))
        }
    }
}

/// Held from the moment a request's headers are parsed until its response body is done.
struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let activity = &self.0;
        if activity.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            activity
                .idle_since_ms
                .store(activity.now_ms(), Ordering::Release);
        }
    }
}

/// A response body that keeps its request counted as in flight until it is dropped.
struct TrackedBody {
    inner: Body,
    _guard: RequestGuard,
}

impl hyper::body::Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The TCP stream, noting when bytes arrive while no request is in flight.
struct WatchedIo {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_arrived();
        }
        polled
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.activity.write_polled(&polled);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.activity.write_polled(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
