//! The actor's outbound side: notifications and server→client requests made by handlers,
//! server-wide events, and the answers and notifications they put on the session's streams
//! (the `Streams` the actor owns).
//!
//! Same actor, same state: these are `SessionActor` methods, kept apart from the inbound
//! message handling in `actor.rs` so each file reads in one sitting.

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::debug;

use super::{ServerEvent, SessionActor};
use crate::context::ClientRequestError;
use crate::jsonrpc::{self, RequestId, RpcError};
use crate::log_limit::warn_limited;
use crate::metrics::Limit;
use crate::protocol::{LogLevel, Method};
use crate::session::pending::{Answer, PendingClientRequest};
use crate::session::streams::{GET_STREAM, StreamId};

impl SessionActor {
    pub(super) fn on_notify(
        &mut self,
        origin: &RequestId,
        method: &'static str,
        params: Value,
        level: Option<LogLevel>,
    ) {
        if let (Some(level), Some(min)) = (level, self.log_level) {
            if level < min {
                return;
            }
        }
        let stream = match self.in_flight.get(origin) {
            Some(flight) => self.related_stream(flight.stream),
            // Progress must only reference requests in flight (spec `progress.mdx`).
            None if Method::parse(method) == Some(Method::Progress) => return,
            None => GET_STREAM,
        };
        self.emit(
            stream,
            jsonrpc::encode_notification(method, Some(&params)),
            false,
        );
    }

    pub(super) fn on_client_request(
        &mut self,
        origin: RequestId,
        method: &'static str,
        mut params: Value,
        respond_to: oneshot::Sender<Answer>,
    ) {
        let config = &self.env.core.config.client_requests;
        if self.pending.len() >= config.max_pending {
            warn_limited!(session = %self.id, limit = config.max_pending, "server→client request refused: too many pending");
            self.env.core.metrics.limit_hit(Limit::MaxPending);
            let _ = respond_to.send(Err(ClientRequestError::TooManyPending(config.max_pending)));
            return;
        }
        let Some(flight_stream) = self.in_flight.get(&origin).map(|f| f.stream) else {
            let _ = respond_to.send(Err(ClientRequestError::SessionClosed));
            return;
        };
        let id = self.pending.next_id();
        if config.reset_timeout_on_progress {
            if let Some(obj) = params.as_object_mut() {
                let meta = obj.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("progressToken".into(), id.to_value());
                }
            }
        }
        let bytes = jsonrpc::encode_request(&id, method, Some(&params));
        let stream = self.related_stream(flight_stream);
        let now = Instant::now();
        let entry = PendingClientRequest {
            respond_to,
            origin,
            stream,
            unsent: (!self.initialized).then(|| bytes.clone()),
            deadline: now + config.timeout,
            hard_deadline: now + config.max_timeout,
        };
        debug!(session = %self.id, %method, request_id = %id, held = !self.initialized, "server→client request");
        self.pending.insert(id, entry);
        if self.initialized {
            self.emit(stream, bytes, false);
        }
    }

    /// Cancels the server→client requests a finished or cancelled request left behind.
    pub(super) fn cancel_client_requests_of(&mut self, origin: &RequestId, reason: &str) {
        for (id, entry) in self.pending.take_from_origin(origin) {
            let _ = entry
                .respond_to
                .send(Err(ClientRequestError::SessionClosed));
            if entry.unsent.is_none() {
                self.send_cancelled(entry.stream, &id, reason);
            }
        }
    }

    pub(super) fn send_cancelled(&mut self, stream: StreamId, id: &RequestId, reason: &str) {
        let params = json!({ "requestId": id, "reason": reason });
        let stream = self.related_stream(stream);
        self.emit(
            stream,
            jsonrpc::encode_notification("notifications/cancelled", Some(&params)),
            false,
        );
    }

    pub(super) fn on_server_event(&mut self, event: &ServerEvent) {
        let method = match event {
            ServerEvent::ToolsListChanged => "notifications/tools/list_changed",
            ServerEvent::ResourcesListChanged => "notifications/resources/list_changed",
            ServerEvent::PromptsListChanged => "notifications/prompts/list_changed",
            ServerEvent::ResourceUpdated { uri } => {
                if !self.subscriptions.contains(uri) {
                    return;
                }
                let params = json!({ "uri": uri });
                self.emit(
                    GET_STREAM,
                    jsonrpc::encode_notification("notifications/resources/updated", Some(&params)),
                    false,
                );
                return;
            }
        };
        self.emit(
            GET_STREAM,
            jsonrpc::encode_notification(method, None),
            false,
        );
    }

    // ----- streams -----

    pub(super) fn related_stream(&self, stream: StreamId) -> StreamId {
        self.streams.related(stream)
    }

    pub(super) fn emit(&mut self, stream: StreamId, data: Bytes, is_response: bool) {
        if !self.streams.emit(stream, data, is_response) {
            warn_limited!(session = %self.id, stream, "SSE connection gone or too slow; detached (events stay in the replay log)");
        }
    }

    pub(super) fn answer(
        &mut self,
        stream: StreamId,
        id: &RequestId,
        outcome: Result<Value, RpcError>,
    ) {
        self.deliver_response(stream, jsonrpc::encode_response(Some(id), &outcome));
    }

    pub(super) fn deliver_response(&mut self, stream: StreamId, response: Bytes) {
        self.emit(stream, response, true);
        self.settle(stream);
    }

    pub(super) fn settle(&mut self, stream: StreamId) {
        self.streams.settle(stream);
    }
}
