//! The session actor: the single owner of one session's state.
//!
//! It holds the lifecycle flag, the client's capabilities, the log level, the requests in
//! flight (to cancel them), the server→client requests awaiting answers (with deadlines),
//! the resource subscriptions and the SSE streams with their replay logs. Messages arrive
//! over one mpsc mailbox and are handled one at a time, so no state is shared and no lock
//! exists. The actor never awaits anything slow: feature work runs in spawned tasks that
//! report back with a `Finished` message, so a tool waiting on the client (elicitation,
//! sampling) never stops the actor from taking the client's answer.
//!
//! The actor ends on DELETE, idle expiry or server shutdown. On the way out it aborts every
//! task in flight, fails every pending client request, closes every stream and removes its
//! own registry entry.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use crate::audit::Requester;
use crate::context::{ClientLink, ClientRequestError, ContextParts, Grants, Notice};
use crate::dispatch::run_handler;
use crate::events::ServerEvent;
use crate::jsonrpc::{Message, Notification, Request, RequestId, Response, RpcError};
use crate::log_limit::warn_limited;
use crate::metrics::RequestTimer;
use crate::protocol::method::{ClientNotification, FeatureMethod, Served};
use crate::protocol::{ClientInfo, LogLevel, Method, Revision, answer, progress_token};
use crate::providers::upstream::Scope;
use crate::session::handle::SessionLink;
use crate::session::pending::PendingClientRequests;
use crate::session::streams::{Attachment, ReplayError, StreamId, StreamRules, Streams};
use crate::session::{SessionEnv, SessionError, registry::SessionSlot};

mod bounds;
pub(crate) mod describe;
mod ending;
mod immediate;
mod outbound;
pub(crate) mod record;
#[cfg(test)]
mod tests;

pub(crate) use super::messages::PostOutcome;
use super::messages::{ClientRequestMsg, FinishedMsg, OpenStreamMsg, PostMsg, SessionMsg};
use ending::Ending;

struct InFlight {
    stream: StreamId,
    abort: AbortHandle,
    cancel: CancellationToken,
}

enum Flow {
    Continue,
    Stop(Ending),
}

/// What woke the session actor.
enum Turn {
    /// A message, or `None` once every sender is gone.
    Message(Option<SessionMsg>),
    Timer,
    Drain,
    Shutdown,
}

pub(super) struct SessionActor {
    id: Arc<str>,
    version: Revision,
    client: Arc<ClientInfo>,
    env: Arc<SessionEnv>,
    /// The key of the principal that created the session.
    owner: Arc<str>,
    /// When the session started, for the admin API.
    created: std::time::SystemTime,
    /// The `traceparent` header of the POST being handled, for its audit lines.
    traceparent: Option<Arc<str>>,
    rx: mpsc::Receiver<SessionMsg>,
    /// The handlers' way back to this actor. It holds only a weak sender to the mailbox, so
    /// the actor ends when its last handle is gone; a running handler holds a strong one.
    link: Arc<dyn ClientLink>,
    self_tx: mpsc::WeakSender<SessionMsg>,
    /// This session's slot among `sessions.max_sessions`, freed when the actor ends.
    _slot: SessionSlot,
    initialized: bool,
    log_level: Option<LogLevel>,
    /// Keyed by client-chosen ids, at most the in-flight limit of them, so a fast hasher
    /// (`foldhash`, randomly seeded) cannot be driven into long probe chains.
    in_flight: foldhash::HashMap<RequestId, InFlight>,
    streams: Streams,
    pending: PendingClientRequests,
    subscriptions: HashSet<String>,
    last_activity: Instant,
    idle_deadline: Instant,
    /// The server is draining: end once nothing is in flight.
    draining: bool,
    /// This session's upstream connections, lent to its handlers; closed when it ends.
    upstreams: Option<Arc<Scope>>,
    /// With `[store]`: what keeps this session's durable record.
    keeper: Option<record::RecordKeeper>,
    /// For `mcp_server_session_duration_seconds`.
    started: Instant,
}

impl SessionActor {
    pub(super) fn new(
        id: Arc<str>,
        version: Revision,
        client: Arc<ClientInfo>,
        env: Arc<SessionEnv>,
        rx: mpsc::Receiver<SessionMsg>,
        self_tx: mpsc::WeakSender<SessionMsg>,
        slot: SessionSlot,
    ) -> Self {
        let now = Instant::now();
        let idle_deadline = now + env.core.config.sessions.idle_ttl;
        let rules = StreamRules::new(&env.core.config, version.sends_priming_event());
        let streams = Streams::new(rules, Arc::clone(&env.core.metrics));
        let pending = PendingClientRequests::new(Arc::clone(&env.core.metrics));
        let upstreams = env
            .core
            .gateway
            .as_ref()
            .and_then(|g| g.session_scope(Arc::clone(&client)));
        SessionActor {
            id,
            version,
            client,
            env,
            owner: Arc::clone(&slot.owner),
            created: std::time::SystemTime::now(),
            traceparent: None,
            rx,
            link: Arc::new(SessionLink {
                tx: self_tx.clone(),
            }),
            self_tx,
            _slot: slot,
            initialized: false,
            log_level: None,
            in_flight: foldhash::HashMap::default(),
            streams,
            pending,
            subscriptions: HashSet::new(),
            last_activity: now,
            idle_deadline,
            draining: false,
            upstreams,
            keeper: None,
            started: now,
        }
    }

    pub async fn run(mut self) {
        debug!(session = %self.id, version = %self.version, "session started");
        let mut timer: Pin<Box<Sleep>> = Box::pin(tokio::time::sleep_until(self.idle_deadline));
        let mut armed = self.idle_deadline;
        // Watched here rather than sent as messages: a full mailbox cannot make a session
        // miss the end of the server.
        let (drain_token, shutdown_token) =
            (self.env.core.drain.clone(), self.env.core.shutdown.clone());
        let (drain, shutdown) = (drain_token.cancelled(), shutdown_token.cancelled());
        tokio::pin!(drain, shutdown);
        let reason = loop {
            // The select is `biased`: a waiting message is taken without polling the other
            // branches, which costs each of them a lock per turn. So the end of the server,
            // a drain and the timer are also read here, on every turn: a mailbox that is
            // never empty cannot hide them.
            let turn = if shutdown_token.is_cancelled() {
                Turn::Shutdown
            } else if timer.is_elapsed() {
                // What polling the timer costs the task's cooperative budget: a deadline
                // that is due again at once (within the timer's millisecond) cannot keep
                // the actor from yielding to the runtime's other tasks.
                tokio::task::consume_budget().await;
                Turn::Timer
            } else if !self.draining && drain_token.is_cancelled() {
                Turn::Drain
            } else {
                tokio::select! {
                    biased;
                    msg = self.rx.recv() => Turn::Message(msg),
                    () = &mut timer => Turn::Timer,
                    () = &mut drain, if !self.draining => Turn::Drain,
                    () = &mut shutdown => Turn::Shutdown,
                }
            };
            match turn {
                // Every handle and every running handler is gone.
                Turn::Message(None) => break Ending::NoHandle,
                Turn::Message(Some(msg)) => {
                    if let Flow::Stop(reason) = self.handle(msg) {
                        break reason;
                    }
                    self.keep_record();
                }
                Turn::Timer => {
                    if let Flow::Stop(reason) = self.on_timer() {
                        break reason;
                    }
                }
                Turn::Drain => self.draining = true,
                Turn::Shutdown => break Ending::ShuttingDown,
            }
            // A draining session ends as soon as nothing of it is in flight: the client's
            // next request gets 404 and starts a new session on another node.
            if self.draining && self.in_flight.is_empty() && self.pending.is_empty() {
                break Ending::Draining;
            }
            let wanted = self
                .pending
                .earliest_deadline()
                .map_or(self.idle_deadline, |d| d.min(self.idle_deadline));
            if wanted != armed || timer.is_elapsed() {
                timer.as_mut().reset(wanted);
                armed = wanted;
            }
        };
        self.end(reason);
    }

    fn handle(&mut self, msg: SessionMsg) -> Flow {
        match msg {
            SessionMsg::Post(msg) => {
                let PostMsg {
                    messages,
                    grants,
                    traceparent,
                    respond_to,
                } = *msg;
                self.traceparent = traceparent;
                self.last_activity = Instant::now();
                let outcome = self.on_post(messages, &grants);
                let _ = respond_to.send(outcome);
            }
            SessionMsg::OpenStream(msg) => {
                let OpenStreamMsg {
                    last_event_id,
                    respond_to,
                } = *msg;
                self.last_activity = Instant::now();
                let _ = respond_to.send(self.on_open_stream(last_event_id));
            }
            SessionMsg::Delete { respond_to } => {
                let _ = respond_to.send(());
                return Flow::Stop(Ending::Deleted);
            }
            SessionMsg::Notify(msg) => {
                let Notice {
                    origin,
                    method,
                    params,
                    level,
                } = *msg;
                self.on_notify(&origin, method, params, level)
            }
            SessionMsg::ClientRequest(msg) => {
                let ClientRequestMsg {
                    origin,
                    method,
                    params,
                    respond_to,
                } = *msg;
                self.on_client_request(origin, method, params, respond_to)
            }
            SessionMsg::CloseStream(origin) => self.close_for_polling(&origin),
            SessionMsg::Finished(msg) => {
                let FinishedMsg { id, task, response } = *msg;
                if self
                    .in_flight
                    .get(&id)
                    .is_some_and(|f| f.abort.id() == task)
                {
                    if let Some(flight) = self.in_flight.remove(&id) {
                        self.cancel_client_requests_of(&id, "the request that asked finished");
                        self.deliver_response(flight.stream, response);
                    }
                }
            }
            SessionMsg::Broadcast(event) => self.on_server_event(&event),
            SessionMsg::Describe(respond_to) => self.describe(respond_to),
            SessionMsg::Moved(epoch) if self.owns_past(epoch) => {}
            SessionMsg::Moved(_) => return Flow::Stop(Ending::Moved),
        }
        Flow::Continue
    }

    // ----- client → server -----

    fn on_post(
        &mut self,
        messages: Vec<Message>,
        grants: &Grants,
    ) -> Result<PostOutcome, SessionError> {
        let mut requests = Vec::new();
        for message in messages {
            match message {
                Message::Request(r) => requests.push(r),
                Message::Notification(n) => self.on_client_notification(n),
                Message::Response(r) => self.on_client_response(r),
            }
        }
        if requests.is_empty() {
            return Ok(PostOutcome::Accepted);
        }
        let limit = self.env.core.config.sessions.max_in_flight;
        // Requests the actor answers itself take no slot: a busy session still answers
        // `ping`, and cancellations (notifications) already went through above.
        let spawned = requests
            .iter()
            .filter(|r| Method::parse(&r.method).is_some_and(|m| m.feature().is_some()))
            .count();
        if spawned > 0 && self.in_flight.len() + spawned > limit {
            debug!(session = %self.id, limit, "request refused: too many requests in flight");
            return Err(SessionError::TooManyInFlight { limit });
        }
        self.check_stream_room()?;
        let attachment = self.streams.open_post(requests.len());
        for request in requests {
            self.on_client_request_received(attachment.stream, request, grants);
        }
        Ok(PostOutcome::Stream(attachment))
    }

    fn on_open_stream(
        &mut self,
        last_event_id: Option<String>,
    ) -> Result<Attachment, SessionError> {
        self.check_stream_room()?;
        let attachment = match self.streams.open(last_event_id) {
            // A restored session's streams are new, numbered from 1 again: an id from before
            // the restore opens a fresh stream (config/lb/README.md says so).
            Err(ReplayError::Unknown(_) | ReplayError::OutOfWindow { .. }) if self.restored() => {
                self.streams.open(None)?
            }
            opened => opened?,
        };
        if !attachment.backlog.is_empty() {
            debug!(session = %self.id, stream = attachment.stream, replayed = attachment.backlog.len(), "stream resumed");
        }
        Ok(attachment)
    }

    fn on_client_request_received(&mut self, stream: StreamId, request: Request, grants: &Grants) {
        let Request { id, method, params } = request;
        debug!(session = %self.id, %method, request_id = %id, "request");
        let label = Method::metric_label_of(&method, false);
        let timer = self.env.core.metrics.start_request(label, self.version);
        if self.in_flight.contains_key(&id) {
            let error = RpcError::invalid_request(format!(
                "request id {id} is already in use by a request in flight"
            ));
            timer.finish(false);
            return self.answer(stream, &id, Err(error));
        }
        let outcome = match Method::parse(&method).and_then(Method::served) {
            Some(Served::Features(feature)) => {
                return self.spawn_handler(stream, id, feature, params, timer, grants.clone());
            }
            Some(Served::SessionActor(own)) => self.answer_itself(own, params.as_ref()),
            Some(Served::Stateless(_)) | None => Err(RpcError::method_not_found(&method)),
        };
        timer.finish(outcome.is_ok());
        self.answer(stream, &id, outcome)
    }

    fn spawn_handler(
        &mut self,
        stream: StreamId,
        id: RequestId,
        method: FeatureMethod,
        params: Option<Value>,
        timer: RequestTimer,
        grants: Grants,
    ) {
        let cancel = CancellationToken::new();
        let progress_token = progress_token(params.as_ref().and_then(|p| p.get("_meta")));
        let parts = ContextParts {
            request_id: id.clone(),
            session_id: Some(Arc::clone(&self.id)),
            progress_token,
            client: Arc::clone(&self.client),
            cancel: cancel.clone(),
            link: Arc::clone(&self.link),
            scope: self
                .upstreams
                .clone()
                .map(|s| s as Arc<dyn std::any::Any + Send + Sync>),
            grants,
        };
        // The task keeps the features it started with: a reload swaps `env.features`
        // for later requests, never under a running call.
        let features = self.env.core.features.load_full();
        // The actor is running, so its mailbox is open and the upgrade succeeds.
        let Some(tx) = self.self_tx.upgrade() else {
            return;
        };
        let task_id = id.clone();
        let audited = self.env.core.audit.begin(
            &features,
            Requester::session(&self.owner, &self.id).traceparent(self.traceparent.as_deref()),
            method,
            params.as_ref(),
        );
        let run = run_handler(
            features,
            Arc::clone(&self.env.core.metrics),
            &self.env.core.node_id,
            self.version.as_str(),
            parts,
            method,
            None,
            params,
        );
        // `then`, not an `async` block that awaits `run`: such a block would keep room for
        // the handler's future twice, once as its capture and once as the awaited value,
        // and the spawn copies the whole task into its cell.
        let task = tokio::spawn(run.then(move |outcome| {
            audited.finish(&outcome);
            timer.finish(outcome.is_ok());
            let response = answer::encode(&task_id, &outcome);
            async move {
                let _ = tx
                    .send(SessionMsg::Finished(Box::new(FinishedMsg {
                        id: task_id,
                        task: tokio::task::id(),
                        response,
                    })))
                    .await;
            }
        }));
        self.in_flight.insert(
            id,
            InFlight {
                stream,
                abort: task.abort_handle(),
                cancel,
            },
        );
    }

    /// Closes the connection of `origin`'s stream so the client resumes it later.
    fn close_for_polling(&mut self, origin: &RequestId) {
        let Some(stream) = self.in_flight.get(origin).map(|f| f.stream) else {
            return;
        };
        if !self.streams.close_for_polling(stream) {
            debug!(session = %self.id, request_id = %origin, "close_sse_stream ignored: the client could not resume");
        }
    }

    fn on_client_notification(&mut self, n: Notification) {
        let known = Method::parse(&n.method).and_then(Method::client_notification);
        match known {
            Some(ClientNotification::Initialized) => {
                if !self.initialized {
                    self.initialized = true;
                    debug!(session = %self.id, "client initialized");
                    for (_, stream, bytes) in self.pending.take_unsent() {
                        let stream = self.related_stream(stream);
                        self.emit(stream, bytes, false);
                    }
                }
            }
            Some(ClientNotification::Cancelled) => {
                let id = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_value);
                let reason = n
                    .params
                    .as_ref()
                    .and_then(|p| p.get("reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match id {
                    Some(id) => self.cancel_in_flight(&id, reason),
                    None => {
                        debug!(session = %self.id, "notifications/cancelled without a usable requestId ignored")
                    }
                }
            }
            Some(ClientNotification::Progress) => {
                let config = &self.env.core.config.client_requests;
                if config.reset_timeout_on_progress {
                    let token = n
                        .params
                        .as_ref()
                        .and_then(|p| p.get("progressToken"))
                        .and_then(RequestId::from_value);
                    if let Some(token) = token {
                        self.pending.extend(&token, config.timeout);
                    }
                }
            }
            Some(ClientNotification::RootsListChanged) | None => {
                debug!(session = %self.id, method = %n.method, "client notification")
            }
        }
    }

    fn on_client_response(&mut self, response: Response) {
        let Some(entry) = self.pending.remove(&response.id) else {
            warn_limited!(session = %self.id, request_id = %response.id, "response to an unknown or finished server request ignored");
            return;
        };
        let answer = response.outcome.map_err(ClientRequestError::Rejected);
        let _ = entry.respond_to.send(answer);
    }

    fn cancel_in_flight(&mut self, id: &RequestId, reason: &str) {
        let Some(flight) = self.in_flight.remove(id) else {
            debug!(session = %self.id, request_id = %id, "cancellation of a request not in flight ignored");
            return;
        };
        info!(session = %self.id, request_id = %id, reason, "request cancelled by the client");
        flight.cancel.cancel();
        flight.abort.abort();
        self.cancel_client_requests_of(id, "the request that asked was cancelled");
        // No response is sent for a cancelled request (spec `cancellation.mdx`).
        self.settle(flight.stream);
    }
}
