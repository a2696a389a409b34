//! The actor's outbound side: notifications and server→client requests made by handlers,
//! server-wide events, and the SSE streams they travel on (emitting, settling, resuming).
//!
//! Same actor, same state: these are `SessionActor` methods, kept apart from the inbound
//! message handling in `actor.rs` so each file reads in one sitting.

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::debug;

use super::{ServerEvent, SessionActor};
use crate::config::ResponseMode;
use crate::context::ClientRequestError;
use crate::jsonrpc::{self, RequestId, RpcError};
use crate::log_limit::warn_limited;
use crate::protocol::LogLevel;
use crate::session::SessionError;
use crate::session::pending::{Answer, PendingClientRequest};
use crate::session::streams::{
    Attachment, GET_STREAM, ReplayError, Stream, StreamId, parse_event_id,
};

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
            None if method == "notifications/progress" => return,
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
        let config = &self.env.config.client_requests;
        if self.pending.len() >= config.max_pending {
            warn_limited!(session = %self.id, limit = config.max_pending, "server→client request refused: too many pending");
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

    /// Where messages related to a request on `stream` go: that stream, unless replies are
    /// JSON-only (then the GET stream) or it has ended.
    pub(super) fn related_stream(&self, stream: StreamId) -> StreamId {
        if self.env.config.http.response_mode == ResponseMode::Json {
            GET_STREAM
        } else {
            self.live_stream_or_get(stream)
        }
    }

    pub(super) fn live_stream_or_get(&self, stream: StreamId) -> StreamId {
        match self.streams.get(&stream) {
            Some(s) if !s.finished => stream,
            _ => GET_STREAM,
        }
    }

    pub(super) fn emit(&mut self, stream_id: StreamId, data: Bytes, is_response: bool) {
        let max_events = self.env.config.replay.max_events_per_stream;
        let stream = self
            .streams
            .entry(stream_id)
            .or_insert_with(|| Stream::new(0, true));
        if !stream.push(stream_id, data, is_response, max_events) {
            warn_limited!(session = %self.id, stream = stream_id, "SSE connection gone or too slow; detached (events stay in the replay log)");
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

    /// Counts one request of `stream` as done; ends the stream when none remain.
    pub(super) fn settle(&mut self, stream_id: StreamId) {
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return;
        };
        stream.outstanding = stream.outstanding.saturating_sub(1);
        if stream.outstanding > 0 {
            return;
        }
        stream.finish();
        if !stream.resumable {
            // The client never saw an event id of this stream, so nobody can resume it.
            self.streams.remove(&stream_id);
            return;
        }
        self.finished_streams.push_back(stream_id);
        while self.finished_streams.len() > self.env.config.replay.max_finished_streams {
            if let Some(old) = self.finished_streams.pop_front() {
                self.streams.remove(&old);
            }
        }
    }

    pub(super) fn on_open_stream(
        &mut self,
        last_event_id: Option<String>,
    ) -> Result<Attachment, SessionError> {
        let buffer = self.env.config.http.sse_connection_buffer;
        let window = self.env.config.replay.max_events_per_stream;
        let Some(last_event_id) = last_event_id else {
            // A new GET replaces the previous one, which closes (never 409).
            let stream = self
                .streams
                .entry(GET_STREAM)
                .or_insert_with(|| Stream::new(0, true));
            let live = stream.attach(buffer);
            let priming_id = self
                .version
                .sends_priming_event()
                .then(|| stream.position_id(GET_STREAM));
            return Ok(Attachment {
                stream: GET_STREAM,
                priming_id,
                backlog: Vec::new(),
                live: Some(live),
            });
        };
        let (stream_id, seq) = parse_event_id(&last_event_id)
            .ok_or_else(|| ReplayError::Unknown(last_event_id.clone()))?;
        let Some(stream) = self.streams.get_mut(&stream_id) else {
            return Err(if stream_id != GET_STREAM && stream_id < self.next_stream {
                ReplayError::OutOfWindow {
                    id: last_event_id,
                    window,
                }
                .into()
            } else {
                ReplayError::Unknown(last_event_id).into()
            });
        };
        let backlog = stream.replay_after(stream_id, seq, window)?;
        debug!(session = %self.id, stream = stream_id, replayed = backlog.len(), "stream resumed");
        let live = (!stream.finished).then(|| stream.attach(buffer.max(backlog.len())));
        Ok(Attachment {
            stream: stream_id,
            priming_id: None,
            backlog,
            live,
        })
    }
}
