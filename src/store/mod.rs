//! The session store: a node's durable record of the sessions it holds (`[store]`).
//!
//! A session actor stays the one owner of its session; the store only keeps the few facts
//! that change rarely ([`SessionRecord`]), with an owner node and an epoch, so that another
//! node (or this one after a restart) can take the session over and the node that lost it
//! finds out. Three kinds, chosen by `[store] url`:
//! - `redis://` / `rediss://`: a Redis the fleet shares (`redis`);
//! - `file:path`: an embedded database for one node (`file`);
//! - absent: no store at all, and no store call anywhere.
//!
//! Every call is bounded by `[store] timeout`. A failure marks the store down (what
//! `/readyz` reports) until a call succeeds again, and is counted in
//! `mcp_store_errors_total`. No call is made on a request's path except to restore or
//! delete a session, or to read a finished task this node does not hold (`task`).

mod file;
mod record;
mod redis;
mod task;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::config::store::StoreSection;
use crate::log_limit::warn_limited;
use crate::metrics::Metrics;
use crate::providers::placeholders::{expand_env_with, unset_env_vars_with};

pub use record::{Ownership, SessionRecord, Written};

/// Why a store call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("the session store did not answer within {0:?} ([store] timeout)")]
    Timeout(Duration),
    #[error("the session store failed: {0}")]
    Failed(String),
}

enum Backend {
    Redis(Box<redis::RedisStore>),
    File(Arc<file::FileStore>),
}

pub struct SessionStore {
    backend: Backend,
    timeout: Duration,
    /// Set by a failed call, cleared by a successful one.
    down: AtomicBool,
    metrics: Arc<Metrics>,
    /// Where the store is, for messages, without credentials.
    location: String,
    /// This process among the fleet, in what it announces (`watch_moves`).
    instance: String,
}

/// `redis://user:secret@host` → `redis://host`.
fn without_credentials(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

impl SessionStore {
    /// The store `[store]` names, or `None` without a `url`. Nothing is reached yet: see
    /// [`connect`](Self::connect).
    pub fn open(
        section: &StoreSection,
        metrics: Arc<Metrics>,
    ) -> Result<Option<SessionStore>, String> {
        let Some(url) = &section.url else {
            return Ok(None);
        };
        // The variables were taken out of the environment at startup (`env_vars`): read
        // them where they were withheld.
        let url = expand_env_with(url, crate::auth::token_from_env)
            .map_err(|e| format!("[store] url: {e}"))?;
        let location = without_credentials(&url);
        let backend = if url.starts_with("redis://") || url.starts_with("rediss://") {
            Backend::Redis(Box::new(
                redis::RedisStore::new(&url, section.timeout)
                    .map_err(|e| format!("[store] url {location}: {e}"))?,
            ))
        } else if let Some(path) = url.strip_prefix("file:") {
            let store = file::FileStore::open(std::path::Path::new(path))
                .map_err(|e| format!("[store] url {location}: {e}"))?;
            Backend::File(Arc::new(store))
        } else {
            return Err(format!(
                "[store] url {location}: must start with redis://, rediss:// or file:"
            ));
        };
        Ok(Some(SessionStore {
            backend,
            timeout: section.timeout,
            down: AtomicBool::new(false),
            metrics,
            location,
            instance: uuid::Uuid::new_v4().simple().to_string(),
        }))
    }

    /// Reaches the store once, so that a node whose store is unreachable does not start.
    pub async fn connect(&self) -> Result<(), String> {
        let reached = match &self.backend {
            Backend::Redis(r) => self.bounded(r.ping()).await,
            Backend::File(_) => Ok(()),
        };
        reached.map_err(|e| format!("[store] {}: {e}", self.location))
    }

    /// Whether the last store call failed.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Relaxed)
    }

    async fn bounded<T, E: std::fmt::Display>(
        &self,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, StoreError> {
        let outcome = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(StoreError::Failed(e.to_string())),
            Err(_) => Err(StoreError::Timeout(self.timeout)),
        };
        match &outcome {
            Ok(_) => {
                if self.down.swap(false, Ordering::Relaxed) {
                    tracing::info!(store = %self.location, "session store reachable again");
                }
            }
            Err(e) => {
                self.down.store(true, Ordering::Relaxed);
                self.metrics.store_error();
                warn_limited!(store = %self.location, error = %e, "session store call failed");
            }
        }
        outcome
    }

    /// The record of session `id`, if it exists and has not expired.
    pub async fn load(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let text = match &self.backend {
            Backend::Redis(r) => self.bounded(r.load(id)).await?,
            Backend::File(f) => {
                let id = id.to_string();
                self.bounded(f.run(move |f| f.load(&id))).await?
            }
        };
        text.map(|t| SessionRecord::decode(&t).map_err(|e| StoreError::Failed(e.to_string())))
            .transpose()
    }

    /// Writes `record` for `owner`, if the session is still `owner`'s (or, with `create`,
    /// has no record yet), with `ttl` as its expiry.
    pub async fn save(
        &self,
        id: &str,
        owner: &Ownership,
        record: &SessionRecord,
        ttl: Duration,
        create: bool,
    ) -> Result<Written, StoreError> {
        let data = record
            .encode()
            .map_err(|e| StoreError::Failed(e.to_string()))?;
        match &self.backend {
            Backend::Redis(r) => self.bounded(r.save(id, owner, &data, ttl, create)).await,
            Backend::File(f) => {
                let (id, owner) = (id.to_string(), owner.clone());
                self.bounded(f.run(move |f| f.save(&id, &owner, &data, ttl, create)))
                    .await
            }
        }
    }

    /// Takes session `id` for `node` in one atomic step: its epoch rises by one. `None`
    /// when it was deleted or has expired.
    pub async fn claim(
        &self,
        id: &str,
        node: &str,
        ttl: Duration,
    ) -> Result<Option<(Ownership, SessionRecord)>, StoreError> {
        let claimed = match &self.backend {
            Backend::Redis(r) => self.bounded(r.claim(id, node, ttl, &self.instance)).await?,
            Backend::File(f) => {
                let (id, n) = (id.to_string(), node.to_string());
                self.bounded(f.run(move |f| f.claim(&id, &n, ttl))).await?
            }
        };
        let Some((epoch, data)) = claimed else {
            return Ok(None);
        };
        let record = SessionRecord::decode(&data).map_err(|e| StoreError::Failed(e.to_string()))?;
        let owner = Ownership {
            node: node.to_string(),
            epoch,
        };
        Ok(Some((owner, record)))
    }

    /// Who holds session `id` now; `None` once it was deleted or has expired.
    pub async fn owner(&self, id: &str) -> Result<Option<Ownership>, StoreError> {
        match &self.backend {
            Backend::Redis(r) => self.bounded(r.owner(id)).await,
            Backend::File(f) => {
                let id = id.to_string();
                self.bounded(f.run(move |f| f.owner(&id))).await
            }
        }
    }

    /// Calls `on_move(id, epoch)` for each session another node claims (at `epoch`) or
    /// deletes (`u64::MAX`), so an older actor this node still holds for it ends at once;
    /// `on_move` returns `false` to stop (it is also called with `""` between
    /// reconnections). Only a shared store announces
    /// anything: a file has one node.
    pub fn watch_moves(
        self: &Arc<Self>,
        on_move: impl Fn(&str, u64) -> bool + Send + Sync + 'static,
    ) {
        if matches!(self.backend, Backend::Redis(_)) {
            let store = Arc::clone(self);
            tokio::spawn(async move {
                if let Backend::Redis(r) = &store.backend {
                    r.watch_moves(&store.instance, &on_move).await;
                }
            });
        }
    }

    /// Removes the record of `id` and leaves a tombstone for `tombstone`, in one step: no
    /// claim after it succeeds.
    pub async fn delete(&self, id: &str, tombstone: Duration) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Redis(r) => self.bounded(r.delete(id, tombstone, &self.instance)).await,
            Backend::File(f) => {
                let id = id.to_string();
                self.bounded(f.run(move |f| f.delete(&id, tombstone))).await
            }
        }
    }
}

/// The environment variables `[store] url` names in `${NAME}` placeholders (a password,
/// usually). The binary takes them out of the environment at startup, as it does the
/// bearer tokens', so that no command tool or stdio upstream inherits them.
pub fn env_vars(section: &StoreSection) -> Vec<String> {
    section
        .url
        .as_deref()
        .map_or_else(Vec::new, |url| unset_env_vars_with(url, |_| None))
}
