//! SSE streams of a session and their replay logs (spec `basic/transports.mdx`,
//! "Resumability and Redelivery").
//!
//! Every POST that carries requests opens a stream; the GET stream is stream 0. Each stream
//! logs every event it carries, whether or not a connection is attached at that moment, so a
//! client that lost its connection resumes with `Last-Event-ID` and misses nothing. Event ids
//! are `<stream>.<seq>`: unique in the session, and they name their stream, so a resumption
//! replays exactly that stream and never another's.
//!
//! A stream's connection is a bounded channel. The actor never waits on it: a client that
//! falls a whole buffer behind is disconnected and resumes from the log instead.
//!
//! Logs are bounded by events and by bytes (`[replay] max_bytes_per_session`, and
//! `max_bytes` for all sessions: one atomic, the `mcp_replay_bytes` gauge, that each session
//! charges and credits, so no lock is shared between actors). Past a budget the session
//! drops its oldest finished streams, then the oldest events of the stream being written.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::config::{Config, ResponseMode};
use crate::log_limit::warn_limited;
use crate::metrics::{Limit, Metrics};

/// Identifies a stream within its session.
pub type StreamId = u32;

/// The session's standalone GET stream.
pub const GET_STREAM: StreamId = 0;

mod event;

pub use event::{EventPosition, OutEvent, format_event_id, parse_event_id};

/// What a connection gets when it attaches to a stream: the events it missed, then live
/// events until the stream ends (`live` is `None` when the stream has ended already).
#[derive(Debug)]
pub struct Attachment {
    pub stream: StreamId,
    /// Id for a priming event (2025-11-25), naming the position the connection starts at.
    pub priming_id: Option<EventPosition>,
    pub backlog: Vec<OutEvent>,
    pub live: Option<mpsc::Receiver<OutEvent>>,
}

/// Why a `Last-Event-ID` cannot be honoured.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error(
        "Last-Event-ID {id:?} is outside the replay window: events after it were discarded \
         (the window keeps the last {window} events of a stream and the last finished streams \
         of a session, within [replay] max_bytes_per_session and max_bytes); resuming would silently lose \
         messages, so the stream cannot be resumed — reissue the request"
    )]
    OutOfWindow { id: String, window: usize },
    #[error("Last-Event-ID {0:?} was not issued by this session")]
    Unknown(String),
}

/// The limits and reply mode a session's streams follow, from the configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamRules {
    pub max_events: usize,
    pub max_finished: usize,
    pub max_bytes_per_session: usize,
    pub max_bytes: usize,
    pub connection_buffer: usize,
    pub response_mode: ResponseMode,
    /// The client's revision sends a priming event (2025-11-25): it learns an event id
    /// before any message, so it can resume a stream the server closes.
    pub priming: bool,
}

impl StreamRules {
    pub fn new(config: &Config, priming: bool) -> Self {
        StreamRules {
            max_events: config.replay.max_events_per_stream,
            max_finished: config.replay.max_finished_streams,
            max_bytes_per_session: config.replay.max_bytes_per_session,
            max_bytes: config.replay.max_bytes,
            connection_buffer: config.http.sse_connection_buffer,
            response_mode: config.http.response_mode,
            priming,
        }
    }
}

/// Every stream of one session: the GET stream, the streams of POSTs in flight, and the
/// last finished ones kept for late resumption. Owned by the session actor.
#[derive(Debug)]
pub(crate) struct Streams {
    streams: foldhash::HashMap<StreamId, Stream>,
    next: StreamId,
    finished: VecDeque<StreamId>,
    rules: StreamRules,
    /// Event data bytes in this session's logs, charged to the server-wide total too.
    bytes: usize,
    /// Counts replayed events and the resumptions the window no longer covers, and holds
    /// the server-wide byte total.
    metrics: Arc<Metrics>,
}

impl Drop for Streams {
    fn drop(&mut self) {
        self.metrics.replay_bytes_credit(self.bytes); // The session ended.
    }
}

impl Streams {
    pub fn new(rules: StreamRules, metrics: Arc<Metrics>) -> Self {
        Streams {
            streams: foldhash::HashMap::default(),
            next: GET_STREAM + 1,
            finished: VecDeque::new(),
            rules,
            bytes: 0,
            metrics,
        }
    }

    /// Opens the stream of a POST carrying `requests` requests, with its connection.
    pub fn open_post(&mut self, requests: usize) -> Attachment {
        let id = self.next;
        self.next += 1;
        let sse_only = self.rules.response_mode == ResponseMode::Sse;
        let mut stream = Stream::new(requests as u32, sse_only);
        // Room for every immediate answer of a batch, so none can overflow the new channel.
        let live = stream.attach(self.rules.connection_buffer.max(requests + 8));
        let priming_id = self.rules.priming.then(|| stream.position_id(id));
        self.streams.insert(id, stream);
        Attachment {
            stream: id,
            priming_id,
            backlog: Vec::new(),
            live: Some(live),
        }
    }

    /// Where messages related to a request on `stream` go: that stream, unless replies are
    /// JSON-only (then the GET stream) or it has ended.
    pub fn related(&self, stream: StreamId) -> StreamId {
        if self.rules.response_mode == ResponseMode::Json {
            GET_STREAM
        } else {
            self.live_or_get(stream)
        }
    }

    fn live_or_get(&self, stream: StreamId) -> StreamId {
        match self.streams.get(&stream) {
            Some(s) if !s.finished => stream,
            _ => GET_STREAM,
        }
    }

    /// Logs an event on a stream and forwards it to its connection. `false` when the
    /// connection was dropped because it was gone or too far behind.
    pub fn emit(&mut self, id: StreamId, data: Bytes, is_response: bool) -> bool {
        let stream = self
            .streams
            .entry(id)
            .or_insert_with(|| Stream::new(0, true));
        let before = stream.bytes;
        let healthy = stream.push(id, data, is_response, self.rules.max_events);
        let after = stream.bytes;
        self.recount(before, after);
        if self.over_budget() {
            self.shed(id);
        }
        healthy
    }

    /// Charges (or credits) a change of one stream's log from `before` to `after` bytes.
    fn recount(&mut self, before: usize, after: usize) {
        self.bytes = self.bytes + after - before;
        match after.checked_sub(before) {
            Some(grown) => self.metrics.replay_bytes_charge(grown),
            None => self.metrics.replay_bytes_credit(before - after),
        }
    }

    fn over_budget(&self) -> bool {
        self.bytes > self.rules.max_bytes_per_session
            || self.metrics.replay_bytes() > self.rules.max_bytes
    }

    /// Drops the oldest data until the logs fit the budgets: finished streams (oldest
    /// first), then the oldest events of stream `id` but its newest, still being resumed.
    fn shed(&mut self, id: StreamId) {
        let (session_bytes, server_bytes) = (self.bytes, self.metrics.replay_bytes());
        while self.over_budget() {
            if let Some(old) = self.finished.pop_front() {
                self.remove(old);
                continue;
            }
            let Some(stream) = self.streams.get_mut(&id) else {
                break;
            };
            let before = stream.bytes;
            if !stream.drop_oldest() {
                break;
            }
            let after = stream.bytes;
            self.recount(before, after);
        }
        if self.bytes == session_bytes {
            return; // Nothing could go: its one event is the newest.
        }
        self.metrics.limit_hit(Limit::ReplayBytes);
        warn_limited!(
            session_bytes,
            server_bytes,
            "replay logs over [replay] max_bytes_per_session ({}) or max_bytes ({}): the oldest \
             events were dropped, and resuming from before them gets 410",
            self.rules.max_bytes_per_session,
            self.rules.max_bytes
        );
    }

    /// Forgets stream `id` and its log.
    fn remove(&mut self, id: StreamId) {
        if let Some(stream) = self.streams.remove(&id) {
            self.recount(stream.bytes, 0);
        }
    }

    /// Counts one request of `id` as answered; ends the stream when none remain.
    pub fn settle(&mut self, id: StreamId) {
        let Some(stream) = self.streams.get_mut(&id) else {
            return;
        };
        stream.outstanding = stream.outstanding.saturating_sub(1);
        if stream.outstanding > 0 {
            return;
        }
        stream.finish();
        if !stream.resumable {
            // The client never saw an event id of this stream, so nobody can resume it.
            self.remove(id);
            return;
        }
        self.finished.push_back(id);
        while self.finished.len() > self.rules.max_finished {
            if let Some(old) = self.finished.pop_front() {
                self.remove(old);
            }
        }
    }

    /// A GET: without `last_event_id` the GET stream (a new GET replaces the previous
    /// connection, which closes; never 409), otherwise the resumption of the stream the id
    /// names, from just after it.
    pub fn open(&mut self, last_event_id: Option<String>) -> Result<Attachment, ReplayError> {
        let resumed = last_event_id.is_some();
        let opened = self.open_or_resume(last_event_id);
        match &opened {
            Ok(attachment) if resumed => self.metrics.events_replayed(attachment.backlog.len()),
            Err(ReplayError::OutOfWindow { .. }) => self.metrics.replay_missed(),
            _ => {}
        }
        opened
    }

    fn open_or_resume(&mut self, last_event_id: Option<String>) -> Result<Attachment, ReplayError> {
        let buffer = self.rules.connection_buffer;
        let window = self.rules.max_events;
        let Some(last_event_id) = last_event_id else {
            let stream = self
                .streams
                .entry(GET_STREAM)
                .or_insert_with(|| Stream::new(0, true));
            let live = stream.attach(buffer);
            let priming_id = self.rules.priming.then(|| stream.position_id(GET_STREAM));
            return Ok(Attachment {
                stream: GET_STREAM,
                priming_id,
                backlog: Vec::new(),
                live: Some(live),
            });
        };
        let (id, seq) = parse_event_id(&last_event_id)
            .ok_or_else(|| ReplayError::Unknown(last_event_id.clone()))?;
        let Some(stream) = self.streams.get_mut(&id) else {
            return Err(if id != GET_STREAM && id < self.next {
                ReplayError::OutOfWindow {
                    id: last_event_id,
                    window,
                }
            } else {
                ReplayError::Unknown(last_event_id)
            });
        };
        let backlog = stream.replay_after(id, seq, window)?;
        let live = (!stream.finished).then(|| stream.attach(buffer.max(backlog.len())));
        Ok(Attachment {
            stream: id,
            priming_id: None,
            backlog,
            live,
        })
    }

    /// Closes the connection of stream `id` so the client resumes it later (SEP-1699). Only
    /// clients that learn an event id before any message (the priming event) can, and a
    /// JSON-only reply has no stream to resume: `false` when the request is left alone.
    pub fn close_for_polling(&mut self, id: StreamId) -> bool {
        if self.rules.response_mode == ResponseMode::Json || !self.rules.priming {
            return false;
        }
        if let Some(stream) = self.streams.get_mut(&id) {
            stream.close_for_polling(id);
        }
        true
    }

    /// Streams with a connection attached now.
    pub fn live_connections(&self) -> usize {
        self.streams
            .values()
            .filter(|s| s.has_live_connection())
            .count()
    }

    pub fn any_live_connection(&self) -> bool {
        self.streams.values().any(Stream::has_live_connection)
    }

    /// Ends every stream; connections close once their buffered events are read.
    pub fn close_all(&mut self) {
        self.streams.clear();
        self.finished.clear();
        self.recount(self.bytes, 0);
    }
}

/// One stream: its replay log and, while a client listens, its connection.
#[derive(Debug)]
struct Stream {
    log: VecDeque<OutEvent>,
    bytes: usize, // event data in `log`
    next_seq: u64,
    conn: Option<mpsc::Sender<OutEvent>>,
    /// Requests whose responses this stream still owes.
    outstanding: u32,
    /// Whether the client may know event ids of this stream (it received SSE from it), so
    /// its log is worth keeping after it finishes.
    resumable: bool,
    finished: bool,
}

impl Stream {
    fn new(outstanding: u32, resumable: bool) -> Self {
        Stream {
            log: VecDeque::new(),
            bytes: 0,
            next_seq: 1,
            conn: None,
            outstanding,
            resumable,
            finished: false,
        }
    }

    /// The id naming "before the next event": a connection primed with it and resumed
    /// later receives everything from here on.
    fn position_id(&self, stream: StreamId) -> EventPosition {
        EventPosition {
            stream,
            seq: self.next_seq - 1,
        }
    }

    /// Logs an event and forwards it to the connection, if one is attached. Returns `false`
    /// when the connection was dropped because it was gone or too far behind.
    fn push(
        &mut self,
        stream: StreamId,
        data: Bytes,
        is_response: bool,
        max_events: usize,
    ) -> bool {
        let event = OutEvent {
            stream,
            seq: self.next_seq,
            data,
            is_response,
        };
        self.next_seq += 1;
        if !is_response {
            self.resumable = true;
        }
        // The last response of a stream nobody can resume ends it: there is no one to
        // replay it to, so it is not logged.
        if is_response && !self.resumable && self.outstanding <= 1 {
            let delivered = self
                .conn
                .as_ref()
                .is_none_or(|conn| conn.try_send(event).is_ok());
            if !delivered {
                self.conn = None;
            }
            return delivered;
        }
        let mut healthy = true;
        if let Some(conn) = &self.conn {
            if conn.try_send(event.clone()).is_err() {
                self.conn = None;
                healthy = false;
            }
        }
        self.bytes += event.data.len();
        self.log.push_back(event);
        while self.log.len() > max_events {
            self.pop_oldest();
        }
        healthy
    }

    fn pop_oldest(&mut self) {
        let dropped = self.log.pop_front();
        self.bytes -= dropped.map_or(0, |e| e.data.len());
    }

    /// Drops the oldest logged event, unless it is the only one; `false` when none was.
    fn drop_oldest(&mut self) -> bool {
        if self.log.len() <= 1 {
            return false;
        }
        self.pop_oldest();
        true
    }

    /// Attaches a new connection, replacing (and so closing) the previous one.
    fn attach(&mut self, buffer: usize) -> mpsc::Receiver<OutEvent> {
        let (tx, rx) = mpsc::channel(buffer.max(1));
        self.conn = Some(tx);
        rx
    }

    /// Closes the connection, if any, without ending the stream.
    fn detach(&mut self) {
        self.conn = None;
    }

    /// Closes the connection so the client polls: it reconnects with `Last-Event-ID`
    /// (2025-11-25, SEP-1699). A reply that is still waiting to choose JSON or SSE is told
    /// to switch to SSE first, with an event without data that is neither logged nor sent,
    /// so the client receives the priming event (an id to resume from, and `retry`).
    fn close_for_polling(&mut self, stream: StreamId) {
        if !self.resumable {
            self.resumable = true;
            if let Some(conn) = &self.conn {
                let _ = conn.try_send(OutEvent {
                    stream,
                    seq: 0,
                    data: Bytes::new(),
                    is_response: false,
                });
            }
        }
        self.detach();
    }

    fn has_live_connection(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| !c.is_closed())
    }

    /// Marks the stream ended: its connection closes once the buffered events are read.
    fn finish(&mut self) {
        self.finished = true;
        self.conn = None;
    }

    /// The logged events after `seq`, or an error if some of them were discarded.
    fn replay_after(
        &self,
        stream: StreamId,
        seq: u64,
        window: usize,
    ) -> Result<Vec<OutEvent>, ReplayError> {
        if seq >= self.next_seq {
            return Err(ReplayError::Unknown(format_event_id(stream, seq)));
        }
        let oldest = self.log.front().map_or(self.next_seq, |e| e.seq);
        if seq + 1 < oldest {
            return Err(ReplayError::OutOfWindow {
                id: format_event_id(stream, seq),
                window,
            });
        }
        Ok(self.log.iter().filter(|e| e.seq > seq).cloned().collect())
    }
}

#[cfg(test)]
mod tests;
