//! The events a stream carries and their ids, `<stream>.<seq>`.

use bytes::Bytes;

use super::StreamId;

/// One SSE event as the actor hands it to a connection.
#[derive(Debug, Clone)]
pub struct OutEvent {
    pub stream: StreamId,
    pub seq: u64,
    pub data: Bytes,
    /// A JSON-RPC response (as opposed to a notification or a server→client request).
    pub is_response: bool,
}

impl OutEvent {
    pub fn event_id(&self) -> String {
        format_event_id(self.stream, self.seq)
    }
}

/// A place in a stream, formatted as an SSE event id only if an SSE reply is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventPosition {
    pub stream: StreamId,
    pub seq: u64,
}

impl EventPosition {
    pub fn event_id(self) -> String {
        format_event_id(self.stream, self.seq)
    }
}

pub fn format_event_id(stream: StreamId, seq: u64) -> String {
    format!("{stream}.{seq}")
}

/// Parses a `Last-Event-ID` minted by [`format_event_id`].
pub fn parse_event_id(id: &str) -> Option<(StreamId, u64)> {
    let (stream, seq) = id.trim().split_once('.')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}
