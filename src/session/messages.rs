//! The session actor's mailbox messages.
//!
//! Only the session module sends them: HTTP handlers go through
//! [`SessionHandle`](super::handle::SessionHandle), handler tasks through the session's
//! `ClientLink`, and the registry through the handle's `broadcast`.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::context::{Grants, Notice};
use crate::events::ServerEvent;
use crate::jsonrpc::{Message, RequestId};
use crate::session::SessionError;
use crate::session::actor::describe::SessionInfo;
use crate::session::pending::Answer;
use crate::session::streams::Attachment;

/// The actor's mailbox messages.
pub(super) enum SessionMsg {
    /// The messages of one POST body.
    Post(Box<PostMsg>),
    /// A GET: the standalone stream, or the resumption of the stream `last_event_id` names.
    OpenStream(Box<OpenStreamMsg>),
    Delete {
        respond_to: oneshot::Sender<()>,
    },
    /// From a handler: a notification related to its client request.
    Notify(Box<Notice>),
    /// From a handler: a server→client request.
    ClientRequest(Box<ClientRequestMsg>),
    /// From a handler: close `origin`'s SSE connection, keeping the stream.
    CloseStream(Box<RequestId>),
    /// From a handler task: the encoded response to a client request.
    Finished(Box<FinishedMsg>),
    Broadcast(Arc<ServerEvent>),
    /// From the admin API: what the session holds now.
    Describe(oneshot::Sender<SessionInfo>),
    /// From the session's record writer or the store's announcements: another node owns
    /// the session since this epoch, or deleted it (`u64::MAX`).
    Moved(u64),
}

// Every session's mailbox allocates its first block of slots up front, so the message
// size is paid per idle session: payloads are boxed to keep a slot at two words.
const _: () = assert!(std::mem::size_of::<SessionMsg>() <= 16);

pub(super) struct PostMsg {
    pub messages: Vec<Message>,
    /// What this POST's token lets it use: its requests' lists are filtered with it.
    pub grants: Grants,
    /// The POST's `traceparent` header, for the audit lines of its requests.
    pub traceparent: Option<Arc<str>>,
    pub respond_to: oneshot::Sender<Result<PostOutcome, SessionError>>,
}

pub(super) struct OpenStreamMsg {
    pub last_event_id: Option<String>,
    pub respond_to: oneshot::Sender<Result<Attachment, SessionError>>,
}

pub(super) struct ClientRequestMsg {
    pub origin: RequestId,
    pub method: &'static str,
    pub params: Value,
    pub respond_to: oneshot::Sender<Answer>,
}

/// `task` tells a late message from a cancelled task apart from the answer of a newer
/// request that reused the id.
pub(super) struct FinishedMsg {
    pub id: RequestId,
    pub task: tokio::task::Id,
    pub response: Bytes,
}

/// What a POST gets back.
#[derive(Debug)]
pub(crate) enum PostOutcome {
    /// Only notifications and responses: 202.
    Accepted,
    /// Requests: read their responses (and related messages) from this stream.
    Stream(Attachment),
}
