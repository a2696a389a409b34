//! `[store]`: where a node keeps the durable records of its sessions, and the final state
//! of its 2026-07-28 tasks.
//!
//! Absent, sessions live in memory only, as they always have, and nothing calls a store.
//! With a `url`, each session actor keeps a small record (who owns the session, what was
//! negotiated) so that another node, or this node after a restart, can take the session
//! over (`src/store/`).

use std::time::Duration;

use serde::Deserialize;

/// `[store]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSection {
    /// `redis://host:port/db`, `rediss://…` (TLS) or `file:path/state.redb`; `${ENV}`
    /// placeholders are replaced, so a password need not be written in the file. Absent:
    /// sessions are in memory only.
    pub url: Option<String>,
    /// How long one store call may take before it counts as failed.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// Whether `initialize` is refused (503) while the store cannot be reached. Off, a new
    /// session then lives in memory only until the store is back.
    pub required: bool,
    /// The largest record a session may have, in bytes: a client whose `initialize`
    /// declares more (capabilities, client info) is refused.
    pub max_record_bytes: usize,
    /// The largest finished task (its result, mostly) written to the store, in bytes, as
    /// JSON. A bigger one is stored with its status and an error in place of its result.
    pub max_task_result: usize,
}

impl Default for StoreSection {
    fn default() -> Self {
        StoreSection {
            url: None,
            timeout: Duration::from_secs(2),
            required: false,
            max_record_bytes: 4096,
            max_task_result: 1024 * 1024,
        }
    }
}
