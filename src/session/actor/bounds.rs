//! Bounds the session applies to its own client, beside `sessions.max_in_flight`.

use super::SessionActor;
use crate::session::SessionError;

impl SessionActor {
    /// Refuses a new stream (a POST's response or a GET) when `sessions.max_streams_per_session`
    /// connections are attached already.
    pub(super) fn check_stream_room(&self) -> Result<(), SessionError> {
        let limit = self.env.core.config.sessions.max_streams_per_session;
        if self.streams.live_connections() >= limit {
            return Err(SessionError::TooManyStreams { limit });
        }
        Ok(())
    }
}
