//! Why a session actor stops: the reason its log line gives, and the reason
//! `mcp_sessions_ended_total` counts.

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
}

impl Ending {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Ending::Deleted => "deleted by the client",
            Ending::Idle => "idle timeout",
            Ending::Draining => "server draining",
            Ending::ShuttingDown => "server shutting down",
            Ending::NoHandle => "no handle left",
        }
    }

    pub(super) fn metric(self) -> SessionEnd {
        match self {
            Ending::Deleted => SessionEnd::Delete,
            Ending::Idle => SessionEnd::Idle,
            Ending::Draining | Ending::ShuttingDown | Ending::NoHandle => SessionEnd::Shutdown,
        }
    }
}
