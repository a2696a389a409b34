//! The Streamable HTTP transport to an upstream: each message the connection sends is a
//! POST; what comes back (a JSON body, or the events of an SSE response) and what the GET
//! stream carries become the connection's incoming messages.
//!
//! - The session id from the `initialize` response goes on every later request, with the
//!   negotiated `MCP-Protocol-Version`; closing sends DELETE.
//! - **404 on a live session** means the upstream forgot it (a restart, its idle timeout):
//!   the transport sends the saved `initialize` again, with an id of its own so the
//!   connection never sees that answer, then `notifications/initialized`, and retries the
//!   request once. The client's session never notices. Requests whose streams were cut by
//!   the loss get an error rather than waiting for their timeout: a response stream that
//!   ends before its response fails its request, so nothing is left half alive.
//! - A request the upstream refuses at the HTTP level (4xx, 5xx, unreachable) gets a
//!   JSON-RPC error naming the status; three transport failures in a row end the
//!   connection, and the next call starts a new one, after the backoff.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

use super::wire::Io;
use crate::jsonrpc::{self, RequestId, RpcError, codes};

/// How to reach one HTTP upstream.
#[derive(Debug, Clone)]
pub(crate) struct HttpSpec {
    pub url: String,
    /// The configured headers, `${ENV}` expanded; never the client's.
    pub headers: HeaderMap,
    pub max_message_bytes: usize,
}

pub(crate) type HttpSink = futures_util::sink::SinkMapErr<
    PollSender<Bytes>,
    fn(tokio_util::sync::PollSendError<Bytes>) -> std::io::Error,
>;
pub(crate) type HttpSource = futures_util::stream::BoxStream<'static, std::io::Result<Bytes>>;

const SESSION: &str = "mcp-session-id";
const VERSION: &str = "mcp-protocol-version";
/// Transport failures in a row that end the connection.
const MAX_FAILURES: u32 = 3;

fn closed_error(_: tokio_util::sync::PollSendError<Bytes>) -> std::io::Error {
    std::io::Error::other("the HTTP transport has stopped")
}

/// Starts the transport's driver; its end (the connection closed) sends DELETE. The
/// returned task handle is the driver, for the owner to track.
pub(crate) fn start(
    upstream: &str,
    spec: Arc<HttpSpec>,
    http: reqwest::Client,
) -> (
    Io<HttpSink, HttpSource>,
    impl std::future::Future<Output = ()> + Send + 'static,
) {
    let (out_tx, out_rx) = mpsc::channel::<Bytes>(64);
    let (in_tx, in_rx) = mpsc::channel::<std::io::Result<Bytes>>(256);
    let driver = Driver {
        upstream: upstream.to_string(),
        spec,
        http,
        session: None,
        version: None,
        init: None,
        incoming: in_tx,
        failures: 0,
    };
    let sink = PollSender::new(out_tx).sink_map_err(closed_error as fn(_) -> _);
    let source = tokio_stream::wrappers::ReceiverStream::new(in_rx).boxed();
    (Io { sink, source }, driver.run(out_rx))
}

/// The id and method of an outgoing message.
#[derive(serde::Deserialize)]
struct Head {
    id: Option<RequestId>,
    method: Option<String>,
}

struct Driver {
    upstream: String,
    spec: Arc<HttpSpec>,
    http: reqwest::Client,
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
    /// The `initialize` message, sent again if the upstream forgets the session.
    init: Option<Bytes>,
    incoming: mpsc::Sender<std::io::Result<Bytes>>,
    failures: u32,
}

enum Sent {
    Done,
    /// 404 on a live session.
    Expired,
    /// The connection cannot go on.
    Fatal,
}

impl Driver {
    async fn run(mut self, mut outgoing: mpsc::Receiver<Bytes>) {
        while let Some(message) = outgoing.recv().await {
            let head: Head = serde_json::from_slice(&message).unwrap_or(Head {
                id: None,
                method: None,
            });
            let sent = match self.send(&message, &head).await {
                Sent::Expired => match self.reinitialize().await {
                    true => self.send(&message, &head).await,
                    false => Sent::Fatal,
                },
                other => other,
            };
            if matches!(sent, Sent::Fatal) {
                break;
            }
        }
        self.delete().await;
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        let accept = if method == reqwest::Method::GET {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        let mut request = self
            .http
            .request(method, &self.spec.url)
            .headers(self.spec.headers.clone())
            .header("accept", accept);
        if let Some(session) = &self.session {
            request = request.header(SESSION, session.clone());
        }
        if let Some(version) = &self.version {
            request = request.header(VERSION, version.clone());
        }
        request
    }

    async fn send(&mut self, message: &Bytes, head: &Head) -> Sent {
        let initializing = head.method.as_deref() == Some("initialize");
        if initializing {
            self.init = Some(message.clone());
        }
        let sent = self
            .request(reqwest::Method::POST)
            .header("content-type", "application/json")
            .body(message.clone())
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                self.failures += 1;
                self.fail(head.id.as_ref(), format!("cannot reach the upstream: {e}"))
                    .await;
                return if initializing || self.failures >= MAX_FAILURES {
                    Sent::Fatal
                } else {
                    Sent::Done
                };
            }
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND && self.session.is_some() && !initializing {
            return Sent::Expired;
        }
        if !status.is_success() {
            let body = read_limited(response, 500).await;
            self.failures += 1;
            self.fail(
                head.id.as_ref(),
                format!("the upstream answered HTTP {status}: {body}"),
            )
            .await;
            return if initializing || self.failures >= MAX_FAILURES {
                Sent::Fatal
            } else {
                Sent::Done
            };
        }
        self.failures = 0;
        if initializing {
            if let Some(session) = response.headers().get(SESSION) {
                self.session = Some(session.clone());
            }
            // The answer is read here, not in a task: later requests need its version.
            let messages = self.collect(response, head.id.clone()).await;
            for message in messages {
                self.learn_version(&message);
                let _ = self.incoming.send(Ok(message)).await;
            }
        } else if head.id.is_some() || status != StatusCode::ACCEPTED {
            tokio::spawn(deliver(
                response,
                head.id.clone(),
                self.incoming.clone(),
                self.spec.max_message_bytes,
            ));
        }
        if head.method.as_deref() == Some("notifications/initialized") {
            tokio::spawn(listen(
                self.request(reqwest::Method::GET),
                self.incoming.clone(),
                self.spec.max_message_bytes,
            ));
        }
        Sent::Done
    }

    /// The version the upstream chose, from its `initialize` result.
    fn learn_version(&mut self, message: &Bytes) {
        let value: Value = serde_json::from_slice(message).unwrap_or(Value::Null);
        if let Some(version) = value
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            self.version = HeaderValue::from_str(version).ok();
        }
    }

    async fn collect(&self, response: reqwest::Response, id: Option<RequestId>) -> Vec<Bytes> {
        let (tx, mut rx) = mpsc::channel(16);
        deliver(response, id, tx, self.spec.max_message_bytes).await;
        let mut messages = Vec::new();
        while let Ok(Ok(message)) = rx.try_recv() {
            messages.push(message);
        }
        messages
    }

    /// A JSON-RPC error for request `id`, as if the upstream had sent it.
    async fn fail(&self, id: Option<&RequestId>, message: String) {
        tracing::warn!(upstream = %self.upstream, "{message}");
        if let Some(id) = id {
            let error = RpcError::new(codes::INTERNAL_ERROR, message);
            let _ = self
                .incoming
                .send(Ok(jsonrpc::encode_response(Some(id), &Err(error))))
                .await;
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
        self.session = None;
        let sent = self
            .request(reqwest::Method::POST)
            .header("content-type", "application/json")
            .body(value.to_string())
            .send()
            .await;
        let Ok(response) = sent.map_err(
            |e| tracing::warn!(upstream = %self.upstream, error = %e, "re-initialize failed"),
        ) else {
            return false;
        };
        if !response.status().is_success() {
            tracing::warn!(upstream = %self.upstream, status = %response.status(), "re-initialize refused");
            return false;
        }
        self.session = response.headers().get(SESSION).cloned();
        // The answer goes nowhere: the connection has its own from the first initialize.
        let _ = self.collect(response, None).await;
        let initialized = jsonrpc::encode_notification("notifications/initialized", None);
        let _ = self
            .request(reqwest::Method::POST)
            .header("content-type", "application/json")
            .body(initialized)
            .send()
            .await;
        tokio::spawn(listen(
            self.request(reqwest::Method::GET),
            self.incoming.clone(),
            self.spec.max_message_bytes,
        ));
        tracing::info!(upstream = %self.upstream, "the upstream forgot its session; re-initialized it");
        true
    }

    async fn delete(&self) {
        if self.session.is_none() {
            return;
        }
        let deleted = self
            .request(reqwest::Method::DELETE)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        if let Err(e) = deleted {
            tracing::debug!(upstream = %self.upstream, error = %e, "DELETE of the upstream session failed");
        }
    }
}

/// Passes on what a POST's response carries. A response stream that ends before the
/// response to `id` fails that request.
async fn deliver(
    response: reqwest::Response,
    id: Option<RequestId>,
    incoming: mpsc::Sender<std::io::Result<Bytes>>,
    max: usize,
) {
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        let body = read_limited(response, max).await;
        if !body.trim().is_empty() {
            let _ = incoming.send(Ok(Bytes::from(body))).await;
        }
        return;
    }
    let mut answered = id.is_none();
    let mut events = sse_stream::SseByteStream::new(response.bytes_stream());
    while let Some(Ok(event)) = events.next().await {
        let Some(data) = event
            .data
            .filter(|d| !d.trim().is_empty() && d.len() <= max)
        else {
            continue;
        };
        if let Some(id) = &id {
            let head: Option<Head> = serde_json::from_str(&data).ok();
            answered |= head.is_some_and(|h| h.method.is_none() && h.id.as_ref() == Some(id));
        }
        if incoming.send(Ok(Bytes::from(data))).await.is_err() {
            return;
        }
    }
    if let (false, Some(id)) = (answered, id) {
        let error = RpcError::new(
            codes::INTERNAL_ERROR,
            "the upstream's response stream ended before its answer",
        );
        let _ = incoming
            .send(Ok(jsonrpc::encode_response(Some(&id), &Err(error))))
            .await;
    }
}

/// The GET stream: the upstream's own notifications and requests, until it ends.
async fn listen(
    request: reqwest::RequestBuilder,
    incoming: mpsc::Sender<std::io::Result<Bytes>>,
    max: usize,
) {
    let Ok(response) = request.send().await else {
        return;
    };
    if response.status().is_success() {
        deliver(response, None, incoming, max).await;
    }
}

/// The body as text, cut at `max` bytes.
async fn read_limited(response: reqwest::Response, max: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        let room = max.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= max {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}
