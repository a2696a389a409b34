//! Server→client requests awaiting the client's answer, with their deadlines.
//!
//! Owned by the session actor. A tool's `elicit`/`sample`/`list_roots` parks a oneshot here;
//! the client's answer POST completes it. Each entry has a deadline (spec
//! `basic/lifecycle.mdx`, "Timeouts": SHOULD time out, MAY reset on progress, SHOULD keep a
//! maximum); the actor wakes at the earliest one.
//!
//! Each way out of the table is one way a request ends, so the table also keeps
//! `mcp_client_requests_pending` and `mcp_client_requests_total{outcome}`: an answer
//! (`remove`), a deadline (`take_expired`), or the end of what asked (`take_from_origin`,
//! `drain`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::context::ClientRequestError;
use crate::jsonrpc::RequestId;
use crate::metrics::{ClientRequestEnd, Metrics};
use crate::session::streams::StreamId;

pub(crate) type Answer = Result<Value, ClientRequestError>;

#[derive(Debug)]
pub(crate) struct PendingClientRequest {
    pub respond_to: oneshot::Sender<Answer>,
    /// The client request whose handler asked.
    pub origin: RequestId,
    /// The stream the request travels on.
    pub stream: StreamId,
    /// The encoded request, kept until it is sent (it is held until the client has sent
    /// `notifications/initialized`).
    pub unsent: Option<Bytes>,
    pub deadline: Instant,
    pub hard_deadline: Instant,
}

/// The pending table, keyed by the id the server gave each request.
#[derive(Debug, Default)]
pub(crate) struct PendingClientRequests {
    entries: HashMap<RequestId, PendingClientRequest>,
    next_id: i64,
    metrics: Arc<Metrics>,
}

impl PendingClientRequests {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        PendingClientRequests {
            entries: HashMap::new(),
            next_id: 0,
            metrics,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A fresh id for the next server→client request.
    pub fn next_id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId::Number(self.next_id)
    }

    pub fn insert(&mut self, id: RequestId, entry: PendingClientRequest) {
        if self.entries.insert(id, entry).is_none() {
            self.metrics.client_request_sent();
        }
    }

    /// Removes the request the client answered.
    pub fn remove(&mut self, id: &RequestId) -> Option<PendingClientRequest> {
        let entry = self.entries.remove(id)?;
        self.metrics
            .client_request_ended(ClientRequestEnd::Answered);
        Some(entry)
    }

    /// Pushes a deadline back after client progress, never past the hard maximum.
    pub fn extend(&mut self, id: &RequestId, timeout: Duration) {
        if let Some(entry) = self.entries.get_mut(id) {
            entry.deadline = (Instant::now() + timeout).min(entry.hard_deadline);
        }
    }

    pub fn earliest_deadline(&self) -> Option<Instant> {
        self.entries.values().map(|e| e.deadline).min()
    }

    /// Removes and returns the entries whose deadline has passed.
    pub fn take_expired(&mut self, now: Instant) -> Vec<(RequestId, PendingClientRequest)> {
        let expired: Vec<RequestId> = self
            .entries
            .iter()
            .filter(|(_, e)| e.deadline <= now)
            .map(|(id, _)| id.clone())
            .collect();
        self.take(expired, ClientRequestEnd::TimedOut)
    }

    /// Removes and returns the entries asked for by `origin`.
    pub fn take_from_origin(
        &mut self,
        origin: &RequestId,
    ) -> Vec<(RequestId, PendingClientRequest)> {
        let ids: Vec<RequestId> = self
            .entries
            .iter()
            .filter(|(_, e)| &e.origin == origin)
            .map(|(id, _)| id.clone())
            .collect();
        self.take(ids, ClientRequestEnd::Cancelled)
    }

    fn take(
        &mut self,
        ids: Vec<RequestId>,
        end: ClientRequestEnd,
    ) -> Vec<(RequestId, PendingClientRequest)> {
        let taken: Vec<_> = ids
            .into_iter()
            .filter_map(|id| self.entries.remove_entry(&id))
            .collect();
        for _ in &taken {
            self.metrics.client_request_ended(end);
        }
        taken
    }

    /// Entries not sent yet, in id order: the ones held until `notifications/initialized`.
    pub fn take_unsent(&mut self) -> Vec<(RequestId, StreamId, Bytes)> {
        let mut unsent: Vec<(RequestId, StreamId, Bytes)> = self
            .entries
            .iter_mut()
            .filter_map(|(id, e)| e.unsent.take().map(|b| (id.clone(), e.stream, b)))
            .collect();
        unsent.sort_by_key(|(id, _, _)| match id {
            RequestId::Number(n) => *n,
            RequestId::String(_) => i64::MAX,
        });
        unsent
    }

    /// Removes every entry: the session is ending.
    pub fn drain(&mut self) -> impl Iterator<Item = PendingClientRequest> + '_ {
        for _ in 0..self.entries.len() {
            self.metrics
                .client_request_ended(ClientRequestEnd::Cancelled);
        }
        self.entries.drain().map(|(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(origin: i64, stream: StreamId, wait: Duration) -> PendingClientRequest {
        let (respond_to, _) = oneshot::channel();
        let now = Instant::now();
        PendingClientRequest {
            respond_to,
            origin: RequestId::Number(origin),
            stream,
            unsent: Some(Bytes::from(format!("ask {origin}"))),
            deadline: now + wait,
            hard_deadline: now + wait * 3,
        }
    }

    #[test]
    fn ids_are_fresh_and_the_earliest_deadline_wakes_the_actor() {
        let mut pending = PendingClientRequests::default();
        let (a, b) = (pending.next_id(), pending.next_id());
        assert_ne!(a, b);
        pending.insert(a.clone(), entry(1, 1, Duration::from_secs(5)));
        pending.insert(b.clone(), entry(2, 2, Duration::from_secs(1)));
        let earliest = pending.earliest_deadline().unwrap();
        assert_eq!(earliest, pending.entries[&b].deadline);
        assert!(pending.take_expired(Instant::now()).is_empty());
        let expired = pending.take_expired(earliest);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].0, b);
        assert_eq!(pending.len(), 1);
    }

    #[test]
    fn progress_extends_a_deadline_but_never_past_the_hard_one() {
        let mut pending = PendingClientRequests::default();
        let id = pending.next_id();
        pending.insert(id.clone(), entry(1, 1, Duration::from_millis(10)));
        let hard = pending.entries[&id].hard_deadline;
        pending.extend(&id, Duration::from_secs(3600));
        assert_eq!(pending.entries[&id].deadline, hard);
        pending.extend(&RequestId::Number(99), Duration::from_secs(1));
    }

    #[test]
    fn requests_of_one_origin_are_taken_together() {
        let mut pending = PendingClientRequests::default();
        for origin in [7, 7, 8] {
            let id = pending.next_id();
            pending.insert(id, entry(origin, 1, Duration::from_secs(5)));
        }
        let taken = pending.take_from_origin(&RequestId::Number(7));
        assert_eq!(taken.len(), 2);
        assert!(taken.iter().all(|(_, e)| e.origin == RequestId::Number(7)));
        assert_eq!(pending.len(), 1);
    }

    #[test]
    fn unsent_requests_come_out_once_in_the_order_they_were_made() {
        let mut pending = PendingClientRequests::default();
        for origin in 1..=12 {
            let id = pending.next_id();
            pending.insert(
                id,
                entry(origin, origin as StreamId, Duration::from_secs(5)),
            );
        }
        let unsent = pending.take_unsent();
        let order: Vec<i64> = unsent
            .iter()
            .map(|(id, _, _)| match id {
                RequestId::Number(n) => *n,
                RequestId::String(_) => -1,
            })
            .collect();
        assert_eq!(order, (1..=12).collect::<Vec<_>>());
        assert!(pending.take_unsent().is_empty(), "each is sent once");
        assert_eq!(pending.len(), 12, "still awaiting answers");
    }
}
