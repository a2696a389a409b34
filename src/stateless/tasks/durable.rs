//! A task's final state in the store (`[store]`), so that `tasks/get` for a finished task
//! is answered by any node after its owner died, or by the owner after it restarted.
//!
//! What is kept is the owner's own `tasks/get` answer at the moment the task settled
//! (completed, failed or cancelled; `input_required` is not final), with the key of the
//! task's principal beside it. Another node therefore answers exactly as the owner would
//! have, and only to that principal: to anyone else the task reads like an unknown one.
//!
//! - **Off the request's path.** A settle spawns the write and returns; the write has the
//!   store's timeout. Only a `tasks/*` request for an id this node does not hold awaits a
//!   read, and nothing here is awaited inside a session actor.
//! - **Final stays final.** The store keeps the first final state written for an id (a task
//!   settles once), and a `tasks/cancel` or `tasks/update` read from the store gets the
//!   owner's ack for an ended task and changes nothing.
//! - **Bounded.** A task whose stored form would exceed `[store] max_task_result` keeps its
//!   status with an error in place of its result, as `tasks.max_bytes` does in memory.
//!   Its expiry is what is left of the task's `tasks.ttl`.
//! - **Store down.** A failed read answers as without a store (unknown task); the failure is
//!   counted in `mcp_store_errors_total` by the store itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::jsonrpc::RpcError;
use crate::log_limit::warn_limited;
use crate::metrics::{Limit, Metrics};
use crate::protocol::method::TaskMethod;
use crate::store::SessionStore;

/// How often a drain looks whether the writes it waits for are done.
const FLUSH_POLL: Duration = Duration::from_millis(10);

/// Whether `id` has the shape `mint_routable_id` gives (`[<node_id>.]<32 hex digits>`), so
/// that an id no node could have minted costs no store call.
fn could_be_minted(id: &str) -> bool {
    let random = id.rsplit_once('.').map_or(id, |(_, random)| random);
    id.len() <= 256 && random.len() == 32 && random.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What the store holds for one finished task.
#[derive(Serialize, Deserialize)]
struct FinalTask {
    /// The key of the principal that created the task.
    owner: String,
    /// The owner's `tasks/get` answer.
    task: Map<String, Value>,
}

/// The store, as the tasks see it.
pub(crate) struct DurableTasks {
    store: Arc<SessionStore>,
    max_result: usize,
    metrics: Arc<Metrics>,
    /// Writes spawned and not finished, so a drain can let them land before the exit.
    pending: Arc<AtomicUsize>,
}

/// One write in flight; counted down however the write ends.
struct Pending(Arc<AtomicUsize>);

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl DurableTasks {
    pub fn new(store: Arc<SessionStore>, max_result: usize, metrics: Arc<Metrics>) -> Self {
        DurableTasks {
            store,
            max_result,
            metrics,
            pending: Arc::default(),
        }
    }

    /// Writes the final state `task` (the owner's `tasks/get` answer) of task `id` for
    /// `ttl`, in a spawned task: the caller may hold the task's entry.
    pub fn keep(&self, id: &str, owner: &str, task: Map<String, Value>, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let Some(data) = self.encode(id, owner, task) else {
            return;
        };
        let (store, id) = (Arc::clone(&self.store), id.to_string());
        self.pending.fetch_add(1, Ordering::AcqRel);
        let pending = Pending(Arc::clone(&self.pending));
        tokio::spawn(async move {
            let _pending = pending;
            // A failure is counted and logged by the store; the task stays in memory.
            let _ = store.save_task(&id, data, ttl).await;
        });
    }

    /// The stored form, with an error in place of a result over `max_task_result`.
    fn encode(&self, id: &str, owner: &str, task: Map<String, Value>) -> Option<String> {
        let mut record = FinalTask {
            owner: owner.to_string(),
            task,
        };
        let data = serde_json::to_string(&record).ok()?;
        if data.len() <= self.max_result {
            return Some(data);
        }
        self.metrics.limit_hit(Limit::StoreTaskResult);
        warn_limited!(
            bytes = data.len(),
            max = self.max_result,
            "a finished task over store.max_task_result was stored without its result"
        );
        record.task.remove("result");
        let error = RpcError::internal(format!(
            "the result of task {id} ({} bytes) was over store.max_task_result ({}) and \
             was not kept when the node that ran it went away; run the call again",
            data.len(),
            self.max_result
        ));
        record.task.insert("error".into(), json!(error));
        serde_json::to_string(&record).ok()
    }

    /// Answers `method` for task `id` from the store, as its owner would have; `None`
    /// when the store holds no such task of `owner`'s, or cannot be read.
    pub async fn answer(&self, method: TaskMethod, id: &str, owner: &str) -> Option<Value> {
        if !could_be_minted(id) {
            return None;
        }
        let text = self.store.load_task(id).await.ok()??;
        let record: FinalTask = match serde_json::from_str(&text) {
            Ok(record) => record,
            Err(error) => {
                warn_limited!(%error, "a stored task could not be read; it is treated as unknown");
                return None;
            }
        };
        if record.owner != owner {
            return None;
        }
        Some(match method {
            TaskMethod::Get => Value::Object(record.task),
            // What the owner answers for an ended task: an ack that changes nothing.
            TaskMethod::Update | TaskMethod::Cancel => json!({}),
        })
    }

    /// Waits, at most `limit`, until the writes already spawned have ended.
    pub async fn flush(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.pending.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(FLUSH_POLL).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::could_be_minted;

    #[test]
    fn only_ids_a_node_could_have_minted_are_looked_up() {
        for node in ["", "a", "node-b.eu"] {
            let id = crate::protocol::mint_routable_id(node);
            assert!(could_be_minted(&id), "{id}");
        }
        for junk in [
            "",
            "a.",
            "a.xyz",
            "a.0123456789abcdef0123456789abcdeg",
            &"a".repeat(300),
        ] {
            assert!(!could_be_minted(junk), "{junk}");
        }
    }
}
