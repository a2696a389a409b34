//! One JSON-RPC connection to an upstream MCP server, as its client.
//!
//! The connection is a task that owns everything about it: the requests awaiting an answer
//! and which client request each one serves. Callers send it [`Command`]s and await a
//! `oneshot`; nothing else touches its state.
//!
//! A response's result is kept as the JSON text it came in, so a forwarded tool result
//! reaches the client as the upstream wrote it: members in their order, numbers as they
//! were spelled, every field this server does not know.
//!
//! What the upstream sends besides answers is routed by the client request it concerns:
//! - `notifications/progress` carries the progress token this connection put on the
//!   request (the request's own id), so it goes to exactly that call;
//! - `notifications/message` and the upstream's own requests (elicitation, sampling,
//!   roots) go to the caller the transport's [`Route`] names (see `route.rs`): on stdio,
//!   which has no per-request link, the most recent call in flight on this connection; on
//!   Streamable HTTP, the call whose POST stream carried them. With none, a log message is
//!   dropped and a request refused. On a connection several principals share over stdio,
//!   neither is relayed (see [`Relay`]).
//! - `*/list_changed` and `resources/updated` go to the connection's [`Events`] hook.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use super::error::UpstreamError;
use super::route::{self, Incoming, Route};
pub(crate) use super::route::{Events, Ignored, Relay};
use crate::context::{ClientRequestError, RequestContext};
use crate::jsonrpc::{self, Message, RequestId, RpcError};
use crate::protocol::{LogLevel, Method};

enum Command {
    Request {
        id: i64,
        /// The method, when this server knows it (for the transport: see [`Outgoing`]).
        method: Option<Method>,
        line: Bytes,
        ctx: Option<RequestContext>,
        reply: oneshot::Sender<Result<Box<RawValue>, UpstreamError>>,
    },
    /// The caller stopped waiting: forget the request and tell the upstream.
    Abandon {
        id: i64,
        reason: &'static str,
    },
    Notify {
        method: Option<Method>,
        line: Bytes,
    },
    /// The client of `origin` must answer with `input_required` (2026-07-28): its calls on
    /// this connection end with [`UpstreamError::InputRequired`] and are cancelled upstream.
    NeedsInput {
        origin: RequestId,
    },
}

/// A handle on the connection task. Cheap to clone; the task ends when it is closed, when
/// the upstream's output ends, or when the last handle is dropped.
#[derive(Clone)]
pub(crate) struct Connection {
    tx: mpsc::Sender<Command>,
    next_id: Arc<AtomicI64>,
    closed: CancellationToken,
    /// Why the connection ended, with the upstream's last stderr lines; set once.
    ending: Arc<std::sync::OnceLock<String>>,
}

/// The two directions of a transport: lines to send, and messages received.
pub(crate) struct Io<W, R> {
    pub sink: W,
    pub source: R,
}

/// A message on its way to the upstream, with what a transport routes it by, known where
/// the message was written: the HTTP transport needs a request's id and method, and
/// reading them back out of the line would parse every message a second time.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub line: Bytes,
    pub head: Head,
}

/// What a transport knows of an [`Outgoing`] message without reading it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Head {
    /// A request's id, or the id of the request a response answers.
    pub id: Option<RequestId>,
    /// A request's or notification's method, when this server knows it.
    pub method: Option<Method>,
    /// A request: an id and a method (known here or not).
    pub request: bool,
}

impl Outgoing {
    fn request(id: i64, method: Option<Method>, line: Bytes) -> Outgoing {
        let id = Some(RequestId::Number(id));
        let head = Head {
            id,
            method,
            request: true,
        };
        Outgoing { line, head }
    }

    fn notification(method: Option<Method>, line: Bytes) -> Outgoing {
        let head = Head {
            method,
            ..Head::default()
        };
        Outgoing { line, head }
    }

    fn response(id: &RequestId, outcome: &Result<Value, RpcError>) -> Outgoing {
        let line = jsonrpc::encode_response(Some(id), outcome);
        let head = Head {
            id: Some(id.clone()),
            ..Head::default()
        };
        Outgoing { line, head }
    }

    fn cancelled(id: i64, reason: &str) -> Outgoing {
        let params = json!({ "requestId": id, "reason": reason });
        let line = jsonrpc::encode_notification("notifications/cancelled", Some(&params));
        Outgoing::notification(Some(Method::Cancelled), line)
    }
}

impl Connection {
    /// Starts the connection task over `io`. `describe_end` says why the upstream's output
    /// ended (an exit status, the last stderr lines), for the errors of calls in flight.
    /// `relay` says where the upstream's unlinked log messages and requests may go.
    pub fn start<W, R, M>(
        io: Io<W, R>,
        events: Arc<dyn Events>,
        describe_end: impl FnOnce() -> String + Send + 'static,
        relay: Relay,
    ) -> Connection
    where
        W: futures_util::Sink<Bytes, Error = std::io::Error> + Send + Unpin + 'static,
        R: futures_util::Stream<Item = std::io::Result<M>> + Send + Unpin + 'static,
        M: Into<Incoming> + Send,
    {
        let (out_tx, out_rx) = mpsc::channel::<Outgoing>(256);
        let closed = CancellationToken::new();
        tokio::spawn(super::writer::write_lines(io.sink, out_rx, closed.clone()));
        let io = Io {
            sink: out_tx,
            source: io.source,
        };
        Connection::start_on(io, closed, events, describe_end, relay)
    }

    /// [`Connection::start`] on a transport with a queue of its own (HTTP's driver): no
    /// writer task between; the transport ends when `closed` is cancelled.
    pub fn start_on<R, M>(
        io: Io<mpsc::Sender<Outgoing>, R>,
        closed: CancellationToken,
        events: Arc<dyn Events>,
        describe_end: impl FnOnce() -> String + Send + 'static,
        relay: Relay,
    ) -> Connection
    where
        R: futures_util::Stream<Item = std::io::Result<M>> + Send + Unpin + 'static,
        M: Into<Incoming> + Send,
    {
        let (tx, rx) = mpsc::channel(256);
        let ending = Arc::new(std::sync::OnceLock::new());
        let task = Task {
            self_tx: tx.downgrade(),
            rx,
            out: io.sink,
            pending: HashMap::new(),
            events,
            closed: closed.clone(),
            relay,
        };
        let end = Arc::clone(&ending);
        tokio::spawn(async move {
            task.run(io.source).await;
            let _ = end.set(describe_end());
        });
        Connection {
            tx,
            next_id: Arc::new(AtomicI64::new(1)),
            closed,
            ending,
        }
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves when the connection has ended.
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// Ends the connection: requests in flight get [`UpstreamError::Closed`].
    pub fn close(&self) {
        self.closed.cancel();
    }

    fn closed_error(&self) -> UpstreamError {
        UpstreamError::Closed(self.ending.get().cloned().unwrap_or_default())
    }

    /// Sends a request and waits for its result, for at most `timeout`. With `ctx`, the
    /// request serves that client request: its progress and the upstream's requests reach
    /// that client, and its cancellation cancels this request upstream.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        ctx: Option<&RequestContext>,
        timeout: Duration,
    ) -> Result<Value, UpstreamError> {
        let text = self.request_text(method, params, ctx, timeout).await?;
        read_result(method, &text)
    }

    /// [`Connection::request`], with the result as the JSON text the upstream sent: for a
    /// result passed on to the client as it came.
    pub async fn request_text(
        &self,
        method: &str,
        params: Option<Value>,
        ctx: Option<&RequestContext>,
        timeout: Duration,
    ) -> Result<Box<RawValue>, UpstreamError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut params = params;
        if ctx.is_some_and(RequestContext::wants_progress) {
            // The request's own id is its progress token: unique on this connection.
            let p = params.get_or_insert_with(|| json!({}));
            if let Some(object) = p.as_object_mut() {
                let meta = object.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("progressToken".into(), json!(id));
                }
            }
        }
        // The upstream's work joins the caller's trace (semantic conventions: in `_meta`).
        crate::telemetry::inject_into(&mut params);
        let line = jsonrpc::encode_request(&RequestId::Number(id), method, params.as_ref());
        let (reply, answer) = oneshot::channel();
        let command = Command::Request {
            id,
            method: Method::parse(method),
            line,
            ctx: ctx.cloned(),
            reply,
        };
        if self.tx.send(command).await.is_err() {
            return Err(self.closed_error());
        }
        // Armed until the answer is in: a caller that stops waiting, even by being
        // aborted (a cancelled session request), cancels the request upstream.
        let mut pending = Abandon {
            tx: &self.tx,
            id,
            reason: "cancelled by the client",
        };
        let cancelled = async {
            match ctx {
                Some(ctx) => ctx.cancellation().cancelled().await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::select! {
            answer = answer => match answer {
                Ok(Err(UpstreamError::Closed(_))) | Err(_) => Err(self.closed_error()),
                Ok(outcome) => outcome,
            },
            () = tokio::time::sleep(timeout) => {
                pending.reason = "timed out";
                return Err(UpstreamError::TimedOut(timeout));
            }
            () = cancelled => return Err(UpstreamError::Cancelled),
        };
        pending.id = 0;
        outcome
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<&Value>) {
        let line = jsonrpc::encode_notification(method, params);
        let method = Method::parse(method);
        let _ = self.tx.send(Command::Notify { method, line }).await;
    }
}

/// The result `text` of `method` as a [`Value`], for a result read here.
pub(crate) fn read_result(method: &str, text: &RawValue) -> Result<Value, UpstreamError> {
    serde_json::from_str(text.get()).map_err(|e| {
        UpstreamError::Rpc(RpcError::internal(format!(
            "the upstream's {method} result could not be read: {e}"
        )))
    })
}

/// Cancels request `id` upstream when dropped, unless its id was cleared (answered).
struct Abandon<'a> {
    tx: &'a mpsc::Sender<Command>,
    id: i64,
    reason: &'static str,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if self.id != 0 {
            let (id, reason) = (self.id, self.reason);
            // Without room in the queue the upstream is not told; the answer, when it
            // comes, finds no one waiting and is dropped.
            let _ = self.tx.try_send(Command::Abandon { id, reason });
        }
    }
}

struct Waiting {
    ctx: Option<RequestContext>,
    reply: oneshot::Sender<Result<Box<RawValue>, UpstreamError>>,
}

struct Task {
    self_tx: mpsc::WeakSender<Command>,
    rx: mpsc::Receiver<Command>,
    out: mpsc::Sender<Outgoing>,
    /// Requests sent and not yet answered, by id; ids grow, so the largest id with a
    /// context is the most recent call.
    pending: HashMap<i64, Waiting>,
    events: Arc<dyn Events>,
    closed: CancellationToken,
    relay: Relay,
}

impl Task {
    async fn run<R, M>(mut self, mut source: R)
    where
        R: futures_util::Stream<Item = std::io::Result<M>> + Unpin,
        M: Into<Incoming> + Send,
    {
        loop {
            tokio::select! {
                command = self.rx.recv() => match command {
                    Some(command) => self.on_command(command).await,
                    None => break,
                },
                message = source.next() => match message {
                    Some(Ok(message)) => self.on_message(message.into()).await,
                    Some(Err(e)) => {
                        tracing::debug!(error = %e, "upstream output ended with an error");
                        break;
                    }
                    None => break,
                },
                () = self.closed.cancelled() => break,
            }
        }
        self.closed.cancel();
        // Every waiter learns the connection closed; `Connection::request` adds the cause.
        for (_, waiting) in self.pending.drain() {
            let _ = waiting
                .reply
                .send(Err(UpstreamError::Closed(String::new())));
        }
    }

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::Request {
                id,
                method,
                line,
                ctx,
                reply,
            } => {
                let outgoing = Outgoing::request(id, method, line);
                if self.out.send(outgoing).await.is_err() {
                    let _ = reply.send(Err(UpstreamError::Closed(String::new())));
                    return;
                }
                self.pending.insert(id, Waiting { ctx, reply });
            }
            Command::Abandon { id, reason } => {
                if self.pending.remove(&id).is_some() {
                    let _ = self.out.send(Outgoing::cancelled(id, reason)).await;
                }
            }
            Command::Notify { method, line } => {
                let _ = self.out.send(Outgoing::notification(method, line)).await;
            }
            Command::NeedsInput { origin } => {
                let ids: Vec<i64> = self
                    .pending
                    .iter()
                    .filter(|(_, w)| w.ctx.as_ref().is_some_and(|c| *c.request_id() == origin))
                    .map(|(id, _)| *id)
                    .collect();
                for id in ids {
                    if let Some(waiting) = self.pending.remove(&id) {
                        let _ = waiting.reply.send(Err(UpstreamError::InputRequired));
                        let reason = "the client's input is required";
                        let _ = self.out.send(Outgoing::cancelled(id, reason)).await;
                    }
                }
            }
        }
    }

    /// The client request a message that came by `route` may reach, if any: none for an
    /// unlinked message on a connection that relays nothing unlinked.
    fn caller(&self, route: Route) -> Option<RequestContext> {
        if self.relay == Relay::Never && route == Route::Latest {
            return None;
        }
        let calls = self.pending.iter().filter(|(_, w)| w.ctx.is_some());
        let id = route.pick(calls.map(|(id, _)| *id))?;
        self.pending.get(&id).and_then(|w| w.ctx.clone())
    }

    async fn on_message(&mut self, Incoming { bytes, route }: Incoming) {
        // A response, the usual message, is read only as far as its envelope: its result
        // goes on as the upstream wrote it.
        if let Some(response) = jsonrpc::decode_response_text(&bytes) {
            if let RequestId::Number(id) = response.id {
                if let Some(waiting) = self.pending.remove(&id) {
                    let _ = waiting
                        .reply
                        .send(response.outcome.map_err(UpstreamError::Rpc));
                }
            }
            return;
        }
        let message = match jsonrpc::decode_body(&bytes) {
            Ok(jsonrpc::Body::Single(message)) => message,
            Ok(jsonrpc::Body::Batch(_)) | Err(_) => {
                tracing::debug!(
                    line = %String::from_utf8_lossy(&bytes[..bytes.len().min(200)]),
                    "upstream sent a line that is no JSON-RPC message; ignored"
                );
                return;
            }
        };
        match message {
            Message::Response(response) => {
                let RequestId::Number(id) = response.id else {
                    return;
                };
                if let Some(waiting) = self.pending.remove(&id) {
                    // A response decode_response_text left: its result is `null`.
                    let outcome = response.outcome.map(|result| {
                        serde_json::value::to_raw_value(&result)
                            .unwrap_or_else(|_| RawValue::NULL.to_owned())
                    });
                    let _ = waiting.reply.send(outcome.map_err(UpstreamError::Rpc));
                }
            }
            Message::Notification(n) => self.on_notification(&n.method, n.params, route).await,
            Message::Request(request) => self.on_request(request, route).await,
        }
    }

    /// Delivered before the next message is read: in order, and before the response.
    async fn on_notification(&mut self, method: &str, params: Option<Value>, route: Route) {
        let params = params.unwrap_or(Value::Null);
        match Method::parse(method) {
            Some(Method::Progress) => {
                let Some(id) = params.get("progressToken").and_then(Value::as_i64) else {
                    return;
                };
                let Some(ctx) = self.pending.get(&id).and_then(|w| w.ctx.clone()) else {
                    return;
                };
                let progress = params
                    .get("progress")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                let total = params.get("total").and_then(Value::as_f64);
                let message = params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(String::from);
                ctx.progress(progress, total, message.as_deref()).await;
            }
            Some(Method::Message) => {
                let Some(ctx) = self.caller(route) else {
                    self.relay.dropped_log();
                    route::log_dropped(route);
                    return;
                };
                let Ok(level) = serde_json::from_value::<LogLevel>(params["level"].clone()) else {
                    return;
                };
                let logger = params
                    .get("logger")
                    .and_then(Value::as_str)
                    .map(String::from);
                let data = params.get("data").cloned().unwrap_or(Value::Null);
                ctx.log(level, logger.as_deref(), data).await;
            }
            Some(
                Method::ToolsListChanged
                | Method::ResourcesListChanged
                | Method::PromptsListChanged,
            ) => self.events.list_changed(method),
            Some(Method::ResourcesUpdated) => self.events.resource_updated(params),
            _ => {}
        }
    }

    async fn on_request(&mut self, request: jsonrpc::Request, route: Route) {
        let jsonrpc::Request { id, method, params } = request;
        let known = Method::parse(&method);
        let forwarded = known
            .filter(|m| {
                matches!(
                    m,
                    Method::ElicitationCreate | Method::SamplingCreateMessage | Method::RootsList
                )
            })
            .map(Method::as_str);
        if known == Some(Method::Ping) {
            let _ = self.out.send(Outgoing::response(&id, &Ok(json!({})))).await;
            return;
        }
        let (Some(method), Some(ctx)) = (forwarded, self.caller(route)) else {
            let error = self
                .relay
                .refusal(&method, forwarded)
                .unwrap_or_else(|| route::refusal(&method, forwarded.is_some(), route));
            let _ = self.out.send(Outgoing::response(&id, &Err(error))).await;
            return;
        };
        // Asked from a task of its own: the client may take minutes to answer, and the
        // connection goes on meanwhile.
        let out = self.out.clone();
        let me = self.self_tx.clone();
        tokio::spawn(async move {
            let answer = ctx
                .forward_request(method, params.unwrap_or_else(|| json!({})))
                .await;
            if matches!(answer, Err(ClientRequestError::InputRequired)) {
                if let Some(me) = me.upgrade() {
                    let origin = ctx.request_id().clone();
                    let _ = me.send(Command::NeedsInput { origin }).await;
                }
            }
            let outcome = answer.map_err(|e| match e {
                ClientRequestError::Rejected(error) => error,
                other => RpcError::internal(other.to_string()),
            });
            let _ = out.send(Outgoing::response(&id, &outcome)).await;
        });
    }
}
