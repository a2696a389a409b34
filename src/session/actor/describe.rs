//! What a session holds, as the admin API shows it (`GET /admin/sessions`), answered by the
//! actor from its own state so the listing needs no lock and never sees half a session.

use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::SessionActor;

/// One session, as `GET /admin/sessions/{id}` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionInfo {
    pub id: String,
    pub principal: String,
    pub protocol_version: String,
    pub client: ClientName,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub last_activity: String,
    pub in_flight: usize,
    /// SSE connections open now.
    pub streams: usize,
    /// The gateway's upstreams this session holds a connection to.
    pub upstreams: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ClientName {
    pub name: Option<String>,
    pub version: Option<String>,
}

fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

impl SessionActor {
    pub(super) fn describe(&self, respond_to: oneshot::Sender<SessionInfo>) {
        let field = |key: &str| {
            self.client
                .implementation
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        // The actor keeps monotonic instants; the wall clock is only for showing them.
        let idle = Instant::now().saturating_duration_since(self.last_activity);
        let last_activity = SystemTime::now().checked_sub(idle).unwrap_or(self.created);
        let _ = respond_to.send(SessionInfo {
            id: self.id.to_string(),
            principal: self.owner.to_string(),
            protocol_version: self.version.as_str().to_string(),
            client: ClientName {
                name: field("name"),
                version: field("version"),
            },
            created_at: rfc3339(self.created),
            last_activity: rfc3339(last_activity),
            in_flight: self.in_flight.len(),
            streams: self.streams.live_connections(),
            upstreams: self
                .upstreams
                .as_ref()
                .map_or_else(Vec::new, |scope| scope.connected_for_admin()),
        });
    }
}
