//! What a task looks like from outside the store: to its client (`tasks/get`, and the
//! fields every answer about it carries), and, once it settled, to the durable store, which
//! keeps the same answer so another node can give it (`../durable.rs`).

use std::time::SystemTime;

use serde_json::{Map, Value, json};

use super::{Task, TaskStatus, TaskStore, millis, timestamp};

impl TaskStore {
    /// The task fields every answer about the task carries (SEP-2663 `Task`).
    pub(super) fn envelope(&self, id: &str, task: &Task) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("taskId".into(), json!(id));
        fields.insert("status".into(), json!(task.status));
        fields.insert("createdAt".into(), json!(timestamp(task.created_at)));
        fields.insert(
            "lastUpdatedAt".into(),
            json!(timestamp(task.last_updated_at)),
        );
        fields.insert("ttlMs".into(), json!(millis(self.config.ttl)));
        fields.insert(
            "pollIntervalMs".into(),
            json!(millis(self.config.poll_interval)),
        );
        fields
    }

    /// `tasks/get`'s answer: the envelope with the result, error or input requests
    /// inlined (there is no `tasks/result` any more).
    pub(super) fn detailed(&self, id: &str, task: &Task) -> Map<String, Value> {
        let mut detailed = self.envelope(id, task);
        match (&task.outcome, task.status) {
            (Some(Ok(result)), _) => {
                detailed.insert("result".into(), result.clone());
            }
            (Some(Err(error)), _) => {
                detailed.insert("error".into(), json!(error));
            }
            (None, TaskStatus::InputRequired) => {
                detailed.insert(
                    "inputRequests".into(),
                    Value::Object(task.input_requests.clone()),
                );
            }
            (None, _) => {}
        }
        detailed
    }

    /// Hands a task that just reached a final status to the durable store, if there is
    /// one, for what is left of its `tasks.ttl`. It never waits for the store.
    pub(super) fn keep_final(&self, id: &str, task: &Task) {
        let Some(durable) = &self.durable else {
            return;
        };
        let left = (task.created_at + self.config.ttl)
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        durable.keep(id, &task.call.owner, self.detailed(id, task), left);
    }
}
