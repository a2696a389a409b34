//! What a drain asks of the store: how many tasks are still live, when the last one
//! settled, and settling those a drain could not wait for as `failed`, so that their
//! clients read why instead of losing them when the process exits (with `[store]`, on any
//! node).

use std::sync::PoisonError;
use std::time::Instant;

use super::{TaskStatus, TaskStore};
use crate::jsonrpc::RpcError;

impl TaskStore {
    /// Tasks working or waiting for input.
    pub fn live(&self) -> usize {
        self.tasks
            .iter()
            .filter(|task| !task.status.is_terminal())
            .count()
    }

    /// When a task last reached a final status, if one ever did.
    pub fn last_settled(&self) -> Option<Instant> {
        *self
            .last_settled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn mark_settled(&self) {
        let mut last = self
            .last_settled
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *last = Some(Instant::now());
    }

    /// Stops every live task and settles it as `failed` with `message`; returns how many.
    pub fn fail_live(&self, message: &str) -> usize {
        let mut failed = 0;
        for mut task in self.tasks.iter_mut() {
            if task.status.is_terminal() {
                continue;
            }
            task.stop();
            task.input_requests.clear();
            // No charge: the message is small, and the process is about to end.
            task.outcome = Some(Err(RpcError::internal(message)));
            task.touch(TaskStatus::Failed);
            self.keep_final(task.key(), &task);
            failed += 1;
        }
        if failed > 0 {
            self.mark_settled();
        }
        failed
    }
}
