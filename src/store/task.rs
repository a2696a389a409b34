//! The store's second key space: the final state of 2026-07-28 tasks
//! (`src/stateless/tasks/durable.rs` decides what is written). A task is written once, when
//! it settles, with its own ttl as the store's expiry, and read only by a node that does
//! not hold the task in memory. Neither call is on an echo call's path.

use std::time::Duration;

use super::{Backend, SessionStore, StoreError};

impl SessionStore {
    /// Keeps `data` as task `id`'s final state for `ttl`, unless the store has one already.
    pub async fn save_task(&self, id: &str, data: String, ttl: Duration) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Redis(r) => self.bounded(r.save_task(id, &data, ttl)).await,
            Backend::File(f) => {
                let id = id.to_string();
                self.bounded(f.run(move |f| f.save_task(&id, &data, ttl)))
                    .await
            }
        }
    }

    /// Task `id`'s final state, if one was kept and has not expired.
    pub async fn load_task(&self, id: &str) -> Result<Option<String>, StoreError> {
        match &self.backend {
            Backend::Redis(r) => self.bounded(r.load_task(id)).await,
            Backend::File(f) => {
                let id = id.to_string();
                self.bounded(f.run(move |f| f.load_task(&id))).await
            }
        }
    }
}
