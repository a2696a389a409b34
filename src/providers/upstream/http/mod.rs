//! The Streamable HTTP transport to an upstream: each message the connection sends is a
//! POST of its own; what comes back (a JSON body, or the events of an SSE response) and
//! what the GET stream carries become the connection's incoming messages.
//!
//! - **Requests run side by side**, one POST each, as Streamable HTTP intends: a call that
//!   hangs holds only its own POST. Each POST, headers and body, is bounded by the
//!   upstream's `call_timeout`, and a request cancelled upstream (its caller gave up, or
//!   timed out) stops being read at once. `initialize` alone is sent and read before
//!   anything else, since every later request carries the session and version it sets.
//! - **Every stream belongs to the connection**: the POSTs and the GET run in one
//!   `JoinSet` the driver owns, so when the connection closes (its session ended) they
//!   are aborted and their sockets close with them.
//! - **A message goes to the caller whose stream carried it** ([`Route`]): on a POST's
//!   stream, that POST's request; on the GET stream of a shared connection, no one.
//! - The session id from the `initialize` response goes on every later request, with the
//!   negotiated `MCP-Protocol-Version`; closing sends DELETE.
//! - **404 on a live session** means the upstream forgot it (a restart, its idle timeout):
//!   the transport sends the saved `initialize` again, with an id of its own so the
//!   connection never sees that answer, then `notifications/initialized`, and retries the
//!   request once. The client's session never notices.
//! - A request the upstream refuses at the HTTP level (4xx, 5xx, unreachable, no headers
//!   within `call_timeout`) gets a JSON-RPC error naming the cause; three such failures in
//!   a row end the connection, and the next call starts a new one, after the backoff.

mod body;
mod client;
mod headers;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{HeaderMap, HeaderValue};
use http::{Method as HttpMethod, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::body::{Incomings, deliver, fail, read_limited};
pub use self::client::UpstreamClient;
use super::route::{Incoming, Route};
use super::wire::{Head, Io, Outgoing};
use crate::jsonrpc::{self, RequestId};
use crate::metrics::Metrics;
use crate::protocol::Method;

/// How to reach one HTTP upstream.
#[derive(Clone)]
pub(crate) struct HttpSpec {
    /// For messages and logs.
    pub url: String,
    /// Parsed once here, not for every POST.
    pub uri: http::Uri,
    /// The configured headers, `${ENV}` expanded; never the client's.
    pub headers: HeaderMap,
    pub max_message_bytes: usize,
    /// Bounds each POST, headers and body.
    pub call_timeout: Duration,
    /// Bounds the `initialize` exchange.
    pub startup_timeout: Duration,
    /// `scope = "shared"`: the GET stream is no caller's.
    pub shared: bool,
    /// Where a reply cut at `max_message_bytes` is counted.
    pub metrics: Arc<Metrics>,
}

impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSpec")
            .field("url", &self.url)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

pub(crate) type HttpSource = futures_util::stream::BoxStream<'static, std::io::Result<Incoming>>;

const SESSION: &str = "mcp-session-id";
const VERSION: &str = "mcp-protocol-version";
/// A POST accepts both answers (Streamable HTTP); the upstream picks JSON when it has only
/// the response to send.
const POST_ACCEPT: &str = "application/json, text/event-stream";
const USER_AGENT_VALUE: &str = concat!("mcp-actor/", env!("CARGO_PKG_VERSION"));
/// How long closing waits for the upstream to answer DELETE.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);
/// Transport failures in a row that end the connection.
const MAX_FAILURES: u32 = 3;

/// Starts the transport's driver; its end (`closed` cancelled, or the connection's queue
/// closed) aborts every stream and sends DELETE, and cancels `closed` when the driver is the
/// one that gave up. The returned future is the driver, for the owner to track.
pub(crate) fn start(
    upstream: &str,
    spec: Arc<HttpSpec>,
    http: UpstreamClient,
    closed: CancellationToken,
) -> (
    Io<mpsc::Sender<Outgoing>, HttpSource>,
    impl std::future::Future<Output = ()> + Send + 'static,
) {
    let (out_tx, out_rx) = mpsc::channel::<Outgoing>(64);
    let (in_tx, in_rx) = mpsc::channel::<std::io::Result<Incoming>>(256);
    let mut exchange = Exchange {
        upstream: upstream.into(),
        spec,
        http,
        session: None,
        version: None,
        post_headers: Arc::default(),
        incoming: in_tx,
    };
    exchange.rebuild_post_headers();
    let driver = Driver {
        exchange,
        init: None,
        failures: 0,
        streams: JoinSet::new(),
        calls: HashMap::new(),
    };
    let source = tokio_stream::wrappers::ReceiverStream::new(in_rx).boxed();
    (
        Io {
            sink: out_tx,
            source,
        },
        driver.run(out_rx, closed),
    )
}

/// What one POST or GET needs, cloned into its task: the session as it was when it left.
#[derive(Clone)]
struct Exchange {
    upstream: Arc<str>,
    spec: Arc<HttpSpec>,
    http: UpstreamClient,
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
    /// Every header of a POST but the trace's: built when the session or the version
    /// changes, not for each call.
    post_headers: Arc<HeaderMap>,
    incoming: Incomings,
}

/// How a POST or GET task ended.
enum Posted {
    /// Answered, or failed in a way that is no fault of the transport.
    Done,
    /// Refused at the HTTP level, unreachable, or silent past `call_timeout`.
    Failed,
    /// 404 on the live session `session`: the upstream forgot it.
    Expired {
        message: Bytes,
        head: Head,
        session: Option<HeaderValue>,
    },
}

impl Exchange {
    /// Where a message with no request of its own goes.
    fn unlinked(&self) -> Route {
        match self.spec.shared {
            true => Route::Nobody,
            false => Route::Latest,
        }
    }

    async fn fail(&self, id: Option<&RequestId>, message: String) {
        tracing::warn!(upstream = %self.upstream, "{message}");
        fail(&self.incoming, id, message).await;
    }

    /// Sends one message and passes on what comes back, all within `call_timeout`.
    /// `retried`: this is the second try after the upstream forgot its session.
    async fn post(self, message: Bytes, head: Head, retried: bool) -> Posted {
        let id = head.id.as_ref();
        let limit = self.spec.call_timeout;
        let deadline = Instant::now() + limit;
        // One timer bounds the headers and the body: a second would be armed for every call.
        let expiry = tokio::time::sleep_until(deadline);
        tokio::pin!(expiry);
        let sent = self.http.send(self.post_request(message.clone()));
        let sent = tokio::select! {
            sent = sent => Ok(sent),
            () = &mut expiry => Err(()),
        };
        let response = match sent {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => {
                self.fail(id, format!("cannot reach the upstream: {e}"))
                    .await;
                return Posted::Failed;
            }
            Err(_) => {
                let why = format!("the upstream sent no response within call_timeout ({limit:?})");
                self.fail(id, why).await;
                return Posted::Failed;
            }
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND && self.session.is_some() && !retried {
            let session = self.session.clone();
            let head = head.clone();
            return Posted::Expired {
                message,
                head,
                session,
            };
        }
        if !status.is_success() {
            let body = tokio::time::timeout_at(deadline, read_limited(response, 500)).await;
            let body = body.unwrap_or_default();
            let why = format!("the upstream answered HTTP {status}: {body}");
            self.fail(id, why).await;
            return Posted::Failed;
        }
        if head.id.is_some() || status != StatusCode::ACCEPTED {
            let route = match id {
                Some(RequestId::Number(n)) => Route::Call(*n),
                _ => self.unlinked(),
            };
            let at = (&*self.upstream, &*self.spec);
            let read = deliver(at, response, id, &self.incoming, route);
            let finished = tokio::select! {
                () = read => true,
                () = &mut expiry => false,
            };
            if !finished {
                let why = format!(
                    "the upstream did not finish its answer within call_timeout ({limit:?})"
                );
                fail(&self.incoming, id, why).await;
            }
        }
        Posted::Done
    }

    /// The GET stream: the upstream's own notifications and requests, until it ends or
    /// the connection does.
    async fn listen(self) -> Posted {
        let sent = tokio::time::timeout(
            self.spec.call_timeout,
            self.http.send(self.request(HttpMethod::GET)),
        );
        if let Ok(Ok(response)) = sent.await {
            if response.status().is_success() {
                let (at, route) = ((&*self.upstream, &*self.spec), self.unlinked());
                deliver(at, response, None, &self.incoming, route).await;
            }
        }
        Posted::Done
    }
}

struct Driver {
    /// The session as it stands now; each task gets a copy.
    exchange: Exchange,
    /// The `initialize` message, sent again if the upstream forgets the session.
    init: Option<Bytes>,
    failures: u32,
    /// Every POST and the GET of this connection. Dropped with the driver, which aborts
    /// them: no stream outlives its connection.
    streams: JoinSet<Posted>,
    /// The POST of each request in flight, to stop reading it when it is cancelled.
    calls: HashMap<i64, AbortHandle>,
}

impl Driver {
    async fn run(mut self, mut outgoing: mpsc::Receiver<Outgoing>, closed: CancellationToken) {
        loop {
            tokio::select! {
                () = closed.cancelled() => break,
                message = outgoing.recv() => match message {
                    Some(message) => if !self.dispatch(message).await { break },
                    None => break,
                },
                Some(ended) = self.streams.join_next() => {
                    self.calls.retain(|_, call| !call.is_finished());
                    let Ok(posted) = ended else { continue };
                    if !self.on_posted(posted).await {
                        break;
                    }
                }
            }
        }
        closed.cancel();
        self.streams.abort_all();
        self.delete().await;
    }

    /// Sends one outgoing message; false when the connection cannot go on.
    async fn dispatch(&mut self, outgoing: Outgoing) -> bool {
        let Outgoing {
            line: message,
            head,
        } = outgoing;
        match head.method {
            Some(Method::Initialize) => return self.initialize(message, head.id).await,
            Some(Method::Initialized) => {
                // Sent before the GET, which some servers accept only once initialized.
                let sent = self.exchange.clone().post(message, head, false).await;
                self.spawn_listen();
                return self.on_posted(sent).await;
            }
            Some(Method::Cancelled) => self.stop_reading(&message),
            _ => {}
        }
        self.spawn_post(message, head, false);
        true
    }

    fn spawn_post(&mut self, message: Bytes, head: Head, retried: bool) {
        let call = match (&head.id, head.request) {
            (Some(RequestId::Number(id)), true) => Some(*id),
            _ => None,
        };
        let task = self
            .streams
            .spawn(self.exchange.clone().post(message, head, retried));
        if let Some(id) = call {
            self.calls.insert(id, task);
        }
    }

    fn spawn_listen(&mut self) {
        self.streams.spawn(self.exchange.clone().listen());
    }

    /// A request cancelled upstream: its answer no longer has a reader, so stop reading.
    fn stop_reading(&mut self, message: &[u8]) {
        let cancelled: Value = serde_json::from_slice(message).unwrap_or(Value::Null);
        if let Some(id) = cancelled
            .pointer("/params/requestId")
            .and_then(Value::as_i64)
        {
            if let Some(call) = self.calls.remove(&id) {
                call.abort();
            }
        }
    }

    async fn on_posted(&mut self, posted: Posted) -> bool {
        match posted {
            Posted::Done => self.failures = 0,
            Posted::Failed => {
                self.failures += 1;
                if self.failures >= MAX_FAILURES {
                    tracing::warn!(upstream = %self.exchange.upstream, "{MAX_FAILURES} failed requests in a row; the connection is restarted");
                    return false;
                }
            }
            Posted::Expired {
                message,
                head,
                session,
            } => {
                // Several requests may meet the loss at once: the first re-initializes.
                if session == self.exchange.session && !self.reinitialize().await {
                    let why = "the upstream forgot its session and would not start a new one";
                    self.exchange.fail(head.id.as_ref(), why.into()).await;
                    return false;
                }
                self.spawn_post(message, head, true);
            }
        }
        true
    }

    /// Sends `initialize` and reads its answer before anything else is sent.
    async fn initialize(&mut self, message: Bytes, id: Option<RequestId>) -> bool {
        self.init = Some(message.clone());
        match self.handshake(message, id.clone()).await {
            Ok(messages) => {
                for bytes in messages {
                    self.learn_version(&bytes);
                    let _ = self.exchange.incoming.send(Ok(bytes.into())).await;
                }
                true
            }
            Err(why) => {
                self.exchange.fail(id.as_ref(), why).await;
                false
            }
        }
    }

    /// One `initialize` exchange within `startup_timeout`: the messages it answered with.
    async fn handshake(
        &mut self,
        message: Bytes,
        id: Option<RequestId>,
    ) -> Result<Vec<Bytes>, String> {
        let limit = self.exchange.spec.startup_timeout;
        let deadline = Instant::now() + limit;
        let late = || format!("the upstream did not answer initialize within {limit:?}");
        self.exchange.set_session(None);
        let sent = (self.exchange.http).send(self.exchange.post_request(message));
        let response = match tokio::time::timeout_at(deadline, sent).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(format!("cannot reach the upstream: {e}")),
            Err(_) => return Err(late()),
        };
        let status = response.status();
        if !status.is_success() {
            let body = tokio::time::timeout_at(deadline, read_limited(response, 500)).await;
            return Err(format!(
                "the upstream answered HTTP {status}: {}",
                body.unwrap_or_default()
            ));
        }
        self.exchange
            .set_session(response.headers().get(SESSION).cloned());
        let (tx, mut rx) = mpsc::channel(16);
        let at = (&*self.exchange.upstream, &*self.exchange.spec);
        let read = deliver(at, response, id.as_ref(), &tx, Route::Latest);
        tokio::time::timeout_at(deadline, read)
            .await
            .map_err(|_| late())?;
        drop(tx);
        let mut messages = Vec::new();
        while let Some(Ok(message)) = rx.recv().await {
            messages.push(message.bytes);
        }
        Ok(messages)
    }

    /// The version the upstream chose, from its `initialize` result.
    fn learn_version(&mut self, message: &Bytes) {
        let value: Value = serde_json::from_slice(message).unwrap_or(Value::Null);
        if let Some(version) = value
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            self.exchange
                .set_version(HeaderValue::from_str(version).ok());
        }
    }

    /// Starts a new upstream session with the saved `initialize`.
    async fn reinitialize(&mut self) -> bool {
        static REINIT: AtomicU64 = AtomicU64::new(0);
        let Some(init) = self.init.clone() else {
            return false;
        };
        let Ok(mut value) = serde_json::from_slice::<Value>(&init) else {
            return false;
        };
        let id = format!(
            "mcp-actor-reinitialize-{}",
            REINIT.fetch_add(1, Ordering::Relaxed)
        );
        value["id"] = json!(id);
        // The answer goes nowhere: the connection has its own from the first initialize.
        if let Err(why) = self.handshake(Bytes::from(value.to_string()), None).await {
            tracing::warn!(upstream = %self.exchange.upstream, "re-initialize failed: {why}");
            return false;
        }
        let initialized = jsonrpc::encode_notification("notifications/initialized", None);
        let _ = (self.exchange.clone())
            .post(initialized, Head::default(), true)
            .await;
        self.spawn_listen();
        tracing::info!(upstream = %self.exchange.upstream, "the upstream forgot its session; re-initialized it");
        true
    }

    async fn delete(&self) {
        if self.exchange.session.is_none() {
            return;
        }
        let request = self.exchange.request(HttpMethod::DELETE);
        let deleted = tokio::time::timeout(DELETE_TIMEOUT, self.exchange.http.send(request));
        match deleted.await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::debug!(upstream = %self.exchange.upstream, error = %e, "DELETE of the upstream session failed");
            }
            Err(_) => {
                tracing::debug!(upstream = %self.exchange.upstream, "DELETE of the upstream session got no answer within {DELETE_TIMEOUT:?}");
            }
        }
    }
}
