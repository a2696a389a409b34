//! The durable record of one session: the few facts that change rarely and that a node
//! needs to serve the session as if it had been there from the start.
//!
//! Streams, replay logs and server→client requests in flight are not in it: they are
//! connections and waiting tasks of one process, and cannot move (`config/lb/README.md`,
//! "Deploys without dropped sessions").

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a session's actor writes to the store, as JSON. Fields are public so that the
/// session layer builds it from its own state and back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The key of the principal that created the session: only it may restore the session.
    pub principal: String,
    /// The negotiated protocol revision, as the client was answered.
    pub protocol_version: String,
    pub client_info: Value,
    pub capabilities: Value,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The level set with `logging/setLevel`, as its wire name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// Subscribed resource URIs, sorted so that equal sets encode equally.
    #[serde(default)]
    pub subscriptions: Vec<String>,
}

impl SessionRecord {
    pub fn encode(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    pub fn decode(text: &str) -> Result<SessionRecord, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// Which node holds a session, and since which claim. Every claim raises the epoch, so a
/// node that wrote with an older epoch learns that it lost the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ownership {
    pub node: String,
    pub epoch: u64,
}

/// What a compare-and-set write found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The record is this node's, at this epoch, and now holds what was written.
    Kept,
    /// Another node claimed the session, or it was deleted: this node must let it go.
    Lost,
}
