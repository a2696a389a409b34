//! The tasks of the `io.modelcontextprotocol/tasks` extension, as `/metrics` shows them:
//! how many were created, how each ended, and how many are live (working or waiting for
//! input) now. A drain waits for the live ones, so the gauge is what an operator watches
//! while a node goes away.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::{Running, labelled};

/// How a task stopped being live. `expired`: its ttl ran out before it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEnd {
    Completed,
    Failed,
    Cancelled,
    Expired,
}

impl TaskEnd {
    pub const ALL: [TaskEnd; 4] = [
        TaskEnd::Completed,
        TaskEnd::Failed,
        TaskEnd::Cancelled,
        TaskEnd::Expired,
    ];

    pub fn label(self) -> &'static str {
        match self {
            TaskEnd::Completed => "completed",
            TaskEnd::Failed => "failed",
            TaskEnd::Cancelled => "cancelled",
            TaskEnd::Expired => "expired",
        }
    }
}

/// The task series: `mcp_tasks_created_total`, `mcp_tasks_ended_total{status}` and the
/// gauge `mcp_tasks_live`.
#[derive(Debug)]
pub struct TaskMetrics {
    created: Counter,
    ended: [Counter; TaskEnd::ALL.len()],
    live: Gauge,
}

/// One live task's unit of `mcp_tasks_live`. Ending it counts how; dropping it unended (the
/// task's ttl ran out first) counts `expired`.
#[derive(Debug)]
pub struct LiveTask {
    unit: Option<Running>,
    ended: [Counter; TaskEnd::ALL.len()],
}

impl TaskMetrics {
    pub(super) fn register(r: &mut Registry) -> TaskMetrics {
        let created = Counter::default();
        r.register("mcp_tasks_created", "Tasks created", created.clone());
        let family = Family::default();
        let ended = labelled(&family, "status", TaskEnd::ALL.map(TaskEnd::label));
        r.register(
            "mcp_tasks_ended",
            "Tasks that stopped running, by final status",
            family,
        );
        let live = Gauge::default();
        r.register(
            "mcp_tasks_live",
            "Tasks working or waiting for input",
            live.clone(),
        );
        TaskMetrics {
            created,
            ended,
            live,
        }
    }

    /// Counts a new task, live until its [`LiveTask`] ends or drops.
    pub fn created(&self) -> LiveTask {
        self.created.inc();
        LiveTask {
            unit: Some(Running::start(&self.live)),
            ended: self.ended.clone(),
        }
    }
}

impl LiveTask {
    /// The task reached a final status; later calls count nothing.
    pub fn end(&mut self, end: TaskEnd) {
        if self.unit.take().is_some() {
            self.ended[end as usize].inc();
        }
    }
}

impl Drop for LiveTask {
    fn drop(&mut self) {
        self.end(TaskEnd::Expired);
    }
}
