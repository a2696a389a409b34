//! Why a session actor stops: the reason its log line gives, and the reason
//! `mcp_sessions_ended_total` counts.

use tokio::time::Instant;
use tracing::info;

use super::{Flow, SessionActor};
use crate::context::ClientRequestError;
use crate::jsonrpc::{self, RpcError};
use crate::log_limit::warn_limited;
use crate::metrics::SessionEnd;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// The client sent DELETE.
    Deleted,
    /// `sessions.idle_ttl` passed with nothing in flight.
    Idle,
    /// The server is draining and nothing of the session was in flight any more.
    Draining,
    /// The server shut down.
    ShuttingDown,
    /// Every handle is gone: the server itself was dropped.
    NoHandle,
    /// `[store]`: another node took the session over, or deleted it.
    Moved,
}

impl Ending {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Ending::Deleted => "deleted by the client",
            Ending::Idle => "idle timeout",
            Ending::Draining => "server draining",
            Ending::ShuttingDown => "server shutting down",
            Ending::NoHandle => "no handle left",
            Ending::Moved => "another node holds the session now",
        }
    }

    pub(super) fn metric(self) -> SessionEnd {
        match self {
            Ending::Deleted => SessionEnd::Delete,
            Ending::Idle => SessionEnd::Idle,
            Ending::Draining | Ending::ShuttingDown | Ending::NoHandle | Ending::Moved => {
                SessionEnd::Shutdown
            }
        }
    }
}

impl SessionActor {
    // ----- time and ending -----

    pub(super) fn on_timer(&mut self) -> Flow {
        let now = Instant::now();
        for (id, entry) in self.pending.take_expired(now) {
            let waited = self.env.core.config.client_requests.timeout;
            warn_limited!(session = %self.id, request_id = %id, "server→client request timed out");
            let _ = entry
                .respond_to
                .send(Err(ClientRequestError::TimedOut(waited)));
            if entry.unsent.is_none() {
                self.send_cancelled(
                    entry.stream,
                    &id,
                    "timed out waiting for the client's answer",
                );
            }
        }
        if now >= self.idle_deadline {
            let ttl = self.env.core.config.sessions.idle_ttl;
            let busy = !self.in_flight.is_empty()
                || !self.pending.is_empty()
                || self.streams.any_live_connection();
            if busy {
                self.last_activity = now;
            }
            if !busy && now >= self.last_activity + ttl {
                return Flow::Stop(Ending::Idle);
            }
            self.idle_deadline = self.last_activity + ttl;
        }
        Flow::Continue
    }

    pub(super) fn end(mut self, reason: Ending) {
        let shutting_down = self.env.core.shutdown.is_cancelled();
        for (id, flight) in std::mem::take(&mut self.in_flight) {
            flight.cancel.cancel();
            flight.abort.abort();
            // A deleted session's requests end unanswered: the client asked for that. On
            // shutdown the client did not, so each request gets an error it can act on
            // before its stream closes.
            if shutting_down {
                let error = RpcError::new(
                    jsonrpc::codes::SERVER_ERROR,
                    "the server is shutting down; this request was aborted, retry it on a new session",
                );
                let response = jsonrpc::encode_response(Some(&id), &Err(error));
                self.deliver_response(flight.stream, response);
            }
        }
        for entry in self.pending.drain() {
            let _ = entry
                .respond_to
                .send(Err(ClientRequestError::SessionClosed));
        }
        self.streams.close_all();
        // Its upstream connections end with it: stdin closed, then the process group stopped.
        if let Some(upstreams) = self.upstreams.take() {
            upstreams.close();
        }
        // Counted before the registry lets go: a drain that sees no session left must also
        // see every session counted as ended.
        self.env.core.metrics.session_ended(reason.metric());
        self.env.core.metrics.session_lasted(self.started.elapsed());
        self.env.registry.remove(&self.id);
        info!(session = %self.id, reason = reason.as_str(), "session ended");
    }
}
