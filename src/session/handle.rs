//! [`SessionHandle`]: the cheap, clonable way to talk to a session actor.
//!
//! HTTP handlers hold a handle for the duration of one request. Every method sends one
//! message and awaits one oneshot reply; if the actor has ended, the send or the reply fails
//! and the caller sees [`SessionError::NotFound`]. A handle therefore never observes half a
//! session, and nothing it does can bring an ended session back.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::context::{ClientLink, ClientRequestError, Grants, Notice};
use crate::events::ServerEvent;
use crate::jsonrpc::{Message, RequestId};
use crate::log_limit::warn_limited;
use crate::protocol::Revision;
use crate::session::SessionError;
use crate::session::messages::{ClientRequestMsg, OpenStreamMsg, PostMsg, PostOutcome, SessionMsg};
use crate::session::streams::Attachment;

#[derive(Clone, Debug)]
pub(crate) struct SessionHandle {
    pub id: Arc<str>,
    /// The key of the principal that created the session: only it may use the session.
    pub owner: Arc<str>,
    /// Fixed at initialize, so handlers may read it without asking the actor.
    pub version: Revision,
    tx: mpsc::Sender<SessionMsg>,
    mailbox_wait: Duration,
    /// `[store]`: the server's drain. An actor that ends because of the drain leaves the
    /// messages still in its mailbox unread, and a request that took this handle just before
    /// must be handed to another node (which restores the session), not told 404.
    drain: Option<CancellationToken>,
}

impl SessionHandle {
    pub(super) fn new(
        id: Arc<str>,
        owner: Arc<str>,
        version: Revision,
        tx: mpsc::Sender<SessionMsg>,
        mailbox_wait: Duration,
        drain: Option<CancellationToken>,
    ) -> Self {
        SessionHandle {
            id,
            owner,
            version,
            tx,
            mailbox_wait,
            drain,
        }
    }

    /// What a request sees when the actor has ended before reading its message: 404, or,
    /// with `[store]` on a draining node, a hand-off (the request never ran here, and its
    /// session's record stays for the node that takes it).
    fn gone(&self) -> SessionError {
        match &self.drain {
            Some(drain) if drain.is_cancelled() => SessionError::HandOff,
            _ => SessionError::NotFound,
        }
    }

    /// Delivers a POST's messages. Requests get a stream to read their responses from.
    pub async fn post(
        &self,
        messages: Vec<Message>,
        grants: Grants,
        traceparent: Option<Arc<str>>,
    ) -> Result<PostOutcome, SessionError> {
        self.ask(|respond_to| {
            SessionMsg::Post(Box::new(PostMsg {
                messages,
                grants,
                traceparent,
                respond_to,
            }))
        })
        .await?
    }

    /// Opens the GET stream, or resumes the stream named by `last_event_id`.
    pub async fn open_stream(
        &self,
        last_event_id: Option<String>,
    ) -> Result<Attachment, SessionError> {
        self.ask(|respond_to| {
            SessionMsg::OpenStream(Box::new(OpenStreamMsg {
                last_event_id,
                respond_to,
            }))
        })
        .await?
    }

    /// What the session holds now, for the admin API.
    pub async fn describe(
        &self,
    ) -> Result<crate::session::actor::describe::SessionInfo, SessionError> {
        self.ask(SessionMsg::Describe).await
    }

    /// Ends the session.
    pub async fn delete(&self) -> Result<(), SessionError> {
        self.ask(|respond_to| SessionMsg::Delete { respond_to })
            .await
    }

    /// Tells the actor that another node took its session at `epoch`, or deleted it
    /// (`u64::MAX`): an actor of an older epoch ends.
    pub(super) fn tell_moved(&self, epoch: u64) {
        let _ = self.tx.try_send(SessionMsg::Moved(epoch));
    }

    /// Hands the session a server event without waiting; `false` when its mailbox is full
    /// (the event is dropped for this session: one stuck session must not hold up others).
    pub fn broadcast(&self, event: &Arc<ServerEvent>) -> bool {
        self.tx
            .try_send(SessionMsg::Broadcast(Arc::clone(event)))
            .is_ok()
    }

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> SessionMsg,
    ) -> Result<T, SessionError> {
        let (tx, rx) = oneshot::channel();
        let msg = make(tx);
        // Fast path without a timer; wait (bounded) only when the mailbox is full.
        match self.tx.try_send(msg) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(self.gone()),
            Err(mpsc::error::TrySendError::Full(msg)) => {
                match tokio::time::timeout(self.mailbox_wait, self.tx.send(msg)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Err(self.gone()),
                    Err(_) => {
                        warn_limited!(session = %self.id, "session mailbox full; request refused");
                        return Err(SessionError::Busy);
                    }
                }
            }
        }
        rx.await.map_err(|_| self.gone())
    }
}

/// The [`ClientLink`] of handshake-era requests: messages to the session actor. The sender
/// is weak because the actor itself keeps this link: a handler's message is sent only while
/// the session lives.
pub(super) struct SessionLink {
    pub(super) tx: mpsc::WeakSender<SessionMsg>,
}

impl ClientLink for SessionLink {
    fn notify(&self, notice: Notice) -> BoxFuture<'_, ()> {
        let msg = SessionMsg::Notify(Box::new(notice));
        Box::pin(async move {
            if let Some(tx) = self.tx.upgrade() {
                let _ = tx.send(msg).await;
            }
        })
    }

    fn request(
        &self,
        origin: &RequestId,
        _key: Option<&str>,
        method: &'static str,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        let origin = origin.clone();
        Box::pin(async move {
            let (respond_to, answer) = oneshot::channel();
            let msg = SessionMsg::ClientRequest(Box::new(ClientRequestMsg {
                origin,
                method,
                params,
                respond_to,
            }));
            let tx = self.tx.upgrade().ok_or(ClientRequestError::SessionClosed)?;
            tx.send(msg)
                .await
                .map_err(|_| ClientRequestError::SessionClosed)?;
            answer
                .await
                .map_err(|_| ClientRequestError::SessionClosed)?
        })
    }

    fn close_stream(&self, origin: &RequestId) -> BoxFuture<'_, ()> {
        let msg = SessionMsg::CloseStream(Box::new(origin.clone()));
        Box::pin(async move {
            if let Some(tx) = self.tx.upgrade() {
                let _ = tx.send(msg).await;
            }
        })
    }
}
