//! The server-wide [`TaskStore`]: every task, its status transitions, and the bound on how
//! many exist. It knows nothing of HTTP or of how a run executes; whoever creates or resumes
//! a task passes a function that spawns the run ([`Run`] says what to run), so the store can
//! be exercised on its own.
//!
//! Tasks sit in a `DashMap` keyed by an unguessable id. A guard is never held across an
//! `.await`: every operation locks one entry, changes it and returns.
//!
//! Two races are ruled out by construction rather than by scheduling luck:
//! - **Capacity.** `[tasks] max_tasks` is a semaphore of that many permits. A create takes
//!   one with `try_acquire_owned` — a single atomic step, so concurrent creates can never
//!   overshoot the bound — and the permit lives in the task's entry, so its slot frees
//!   exactly when the entry is dropped (the task expired). `auth.max_tasks_per_principal`
//!   works the same way, with a [`KeyedSlot`] of the owner taken before the task exists:
//!   counting the owner's entries and inserting later let 200 concurrent creates against
//!   a cap of 10 all pass the count.
//! - **Visibility.** A task is inserted through a vacant entry, and its run is spawned while
//!   that entry's guard is still held. The run therefore cannot settle a task that is not in
//!   the map yet, and a `tasks/get` right after the create reply finds it. The spawn itself
//!   never blocks; a run that ends at once merely waits for the guard to drop.
//!
//! Results are bounded by bytes too (`[tasks] max_bytes`): a count alone let 40 large
//! results hold 346 MB for their hour. Each stored result holds a [`ResultCharge`] on the
//! server-wide total, credited when the result is dropped (the task expired, or it was
//! evicted), and a settle past the budget drops the oldest finished tasks' results.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::super::Refusal;
use super::durable::DurableTasks;
use charge::{ResultCharge, json_len};

use crate::config::TasksSection;
use crate::features::Features;
use crate::jsonrpc::{RequestId, RpcError};
use crate::keyed_counts::{KeyedCounts, KeyedSlot};
use crate::log_limit::warn_limited;
use crate::metrics::{Limit, LiveTask, Metrics, TaskEnd};
use crate::protocol::ClientInfo;
use crate::store::SessionStore;

/// The states of a task (SEP-2663 "Task Status").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// The call a task runs, kept to run it again after `tasks/update`.
pub(crate) struct TaskCall {
    pub request_id: RequestId,
    pub params: Option<Value>,
    pub client: Arc<ClientInfo>,
    /// Taken when the call arrived, so a reload never changes a task's tools.
    pub features: Arc<Features>,
    /// The key of the principal that created the task: to anyone else it does not exist.
    pub owner: Arc<str>,
}

/// One run of a task's call, handed to the function that spawns it. The run reports how it
/// ended with [`TaskStore::settle`], quoting `id` and `generation`.
pub(crate) struct Run {
    pub id: String,
    pub generation: u64,
    pub call: Arc<TaskCall>,
    /// Every answer given so far, by input key.
    pub answers: BTreeMap<String, Value>,
    pub cancel: CancellationToken,
}

struct Task {
    status: TaskStatus,
    created_at: SystemTime,
    last_updated_at: SystemTime,
    call: Arc<TaskCall>,
    /// Every answer given so far, by input key.
    answers: BTreeMap<String, Value>,
    /// The questions still waiting for an answer (status `input_required`).
    input_requests: Map<String, Value>,
    /// The final result or protocol error (terminal statuses but `cancelled`).
    outcome: Option<Result<Value, RpcError>>,
    /// The bytes `outcome` holds, charged to the store's total until it is dropped.
    charge: Option<ResultCharge>,
    /// Which run may settle the task: a run of an older generation is ignored.
    generation: u64,
    cancel: CancellationToken,
    run: Option<AbortHandle>,
    /// This task's slot under `max_tasks`, given back when the entry is dropped.
    _slot: OwnedSemaphorePermit,
    /// Its owner's slot under `auth.max_tasks_per_principal`, likewise.
    _owner_slot: Option<KeyedSlot>,
    /// Its unit of `mcp_tasks_live` until it reaches a final status.
    live: LiveTask,
}

impl Task {
    fn stop(&mut self) {
        self.cancel.cancel();
        if let Some(run) = self.run.take() {
            run.abort();
        }
    }

    fn touch(&mut self, status: TaskStatus) {
        self.status = status;
        self.last_updated_at = SystemTime::now();
        let end = match status {
            TaskStatus::Working | TaskStatus::InputRequired => return,
            TaskStatus::Completed => TaskEnd::Completed,
            TaskStatus::Failed => TaskEnd::Failed,
            TaskStatus::Cancelled => TaskEnd::Cancelled,
        };
        self.live.end(end);
    }

    /// Starts a new run with every answer given so far; older runs can no longer settle the
    /// task. The caller holds the task's entry, so `spawn` runs before anyone else sees the
    /// new generation.
    fn start_run(&mut self, id: &str, spawn: impl FnOnce(Run) -> AbortHandle) {
        self.generation += 1;
        self.cancel = CancellationToken::new();
        let run = Run {
            id: id.to_string(),
            generation: self.generation,
            call: Arc::clone(&self.call),
            answers: self.answers.clone(),
            cancel: self.cancel.clone(),
        };
        self.run = Some(spawn(run));
    }
}

/// Why a task was not created.
#[derive(Debug)]
pub(crate) enum CreateError {
    /// A cap refused it (counted and logged here, whichever path asked): the client may
    /// retry once older tasks expire.
    Refused(Refusal),
    Failed(RpcError),
}

impl CreateError {
    /// The JSON-RPC error, for a task that a running handler starts: its answer goes into a
    /// response that has begun, so a refusal cannot become an HTTP status there.
    pub(crate) fn into_rpc(self) -> RpcError {
        match self {
            CreateError::Refused(refusal) => {
                RpcError::new(crate::jsonrpc::codes::SERVER_ERROR, refusal.to_string())
            }
            CreateError::Failed(e) => e,
        }
    }
}

/// Every task of the server, bounded by `[tasks] max_tasks`, each readable for `ttl`.
pub(crate) struct TaskStore {
    tasks: DashMap<String, Task>,
    /// One permit per task that may exist; see the module docs.
    slots: Arc<Semaphore>,
    config: TasksSection,
    /// Bytes of every stored result.
    result_bytes: Arc<AtomicUsize>,
    /// Ids of tasks with a stored result, oldest first: the eviction order. Touched once
    /// per settle, never by `tasks/get`.
    settled: Mutex<VecDeque<String>>,
    /// Tasks held per owner (`auth.max_tasks_per_principal`).
    owners: KeyedCounts,
    /// The prefix of every task id, so a load balancer routes `tasks/*` to this node.
    node_id: String,
    /// When a task last reached a final status: a drain lingers after it.
    last_settled: Mutex<Option<Instant>>,
    metrics: Arc<Metrics>,
    /// Where finished tasks are kept for other nodes and restarts (`[store]`), if anywhere.
    durable: Option<DurableTasks>,
}

fn timestamp(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

fn unknown_task(id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "unknown taskId {id:?}: it never existed here or its ttl expired"
    ))
}

impl TaskStore {
    pub fn new(config: TasksSection, node_id: &str, metrics: Arc<Metrics>) -> Self {
        let permits = config.max_tasks.min(Semaphore::MAX_PERMITS);
        TaskStore {
            tasks: DashMap::new(),
            slots: Arc::new(Semaphore::new(permits)),
            config,
            result_bytes: Arc::default(),
            settled: Mutex::default(),
            owners: KeyedCounts::default(),
            node_id: node_id.to_string(),
            last_settled: Mutex::default(),
            metrics,
            durable: None,
        }
    }

    /// Keeps every task's final state in `store` too (`durable.rs`).
    pub fn with_store(mut self, store: Option<Arc<SessionStore>>, max_result: usize) -> Self {
        let metrics = Arc::clone(&self.metrics);
        self.durable = store.map(|store| DurableTasks::new(store, max_result, metrics));
        self
    }

    pub fn durable(&self) -> Option<&DurableTasks> {
        self.durable.as_ref()
    }

    /// Whether this node holds task `id` in memory (whoever its owner).
    pub fn holds(&self, id: &str) -> bool {
        self.tasks.contains_key(id)
    }

    /// Bytes of the results stored now.
    pub fn result_bytes(&self) -> usize {
        self.result_bytes.load(Ordering::Acquire)
    }

    /// Forgets the tasks whose ttl ran out, stopping those still running; each one's slot
    /// frees as its entry drops.
    pub fn expire(&self) {
        let now = SystemTime::now();
        let ttl = self.config.ttl;
        let before = self.tasks.len();
        self.tasks.retain(|_, task| {
            let alive = task.created_at + ttl > now;
            if !alive {
                task.stop();
            }
            alive
        });
        if self.tasks.len() < before {
            // Expired ids leave the eviction order too, so it never outgrows the store.
            let mut settled = self.settled.lock().unwrap_or_else(PoisonError::into_inner);
            settled.retain(|id| self.tasks.contains_key(id));
        }
    }

    /// Creates a `working` task for `call` and starts its first run with `spawn`; returns
    /// the `CreateTaskResult`. The task is in the store before its run can report, and
    /// before this returns (SEP-2663 "durable create").
    pub fn create(
        &self,
        call: TaskCall,
        answers: BTreeMap<String, Value>,
        per_owner: Option<usize>,
        spawn: impl FnOnce(Run) -> AbortHandle,
    ) -> Result<Value, CreateError> {
        self.expire();
        let owner_slot = match per_owner {
            Some(cap) => Some(self.owner_slot(&call.owner, cap)?),
            None => None,
        };
        let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() else {
            let limit = self.config.max_tasks;
            self.metrics.limit_hit(Limit::MaxTasks);
            warn_limited!(limit, "a task-augmented call refused at tasks.max_tasks");
            return Err(CreateError::Refused(Refusal::TooManyTasks { limit }));
        };
        let now = SystemTime::now();
        let task = Task {
            status: TaskStatus::Working,
            created_at: now,
            last_updated_at: now,
            call: Arc::new(call),
            answers,
            input_requests: Map::new(),
            outcome: None,
            charge: None,
            generation: 0,
            cancel: CancellationToken::new(),
            run: None,
            _slot: slot,
            _owner_slot: owner_slot,
            live: self.metrics.tasks().created(),
        };
        let id = crate::protocol::mint_routable_id(&self.node_id);
        let mut result = self.envelope(&id, &task);
        result.insert("resultType".into(), json!("task"));
        let Entry::Vacant(vacant) = self.tasks.entry(id.clone()) else {
            // 122 random bits do not repeat within a task's ttl.
            return Err(CreateError::Failed(RpcError::internal(
                "task id collision; retry the call",
            )));
        };
        vacant.insert(task).start_run(&id, spawn);
        Ok(Value::Object(result))
    }

    /// `owner`'s next slot under `auth.max_tasks_per_principal`, taken in one atomic step.
    fn owner_slot(&self, owner: &Arc<str>, cap: usize) -> Result<KeyedSlot, CreateError> {
        self.owners.take(owner, cap).ok_or_else(|| {
            self.metrics.limit_hit(Limit::PrincipalTasks);
            warn_limited!(
                cap,
                "a principal's task-augmented call refused at auth.max_tasks_per_principal"
            );
            CreateError::Refused(Refusal::PrincipalTasks { limit: cap })
        })
    }

    /// Records how a run ended, unless the task moved on meanwhile (cancelled, expired, or
    /// another run started).
    pub fn settle(
        &self,
        id: &str,
        generation: u64,
        outcome: Result<Value, RpcError>,
        inputs: Map<String, Value>,
    ) {
        let Some(mut task) = self.tasks.get_mut(id) else {
            return;
        };
        if task.generation != generation || task.status != TaskStatus::Working {
            return;
        }
        task.run = None;
        if outcome.is_ok() && !inputs.is_empty() {
            task.input_requests = inputs;
            task.touch(TaskStatus::InputRequired);
            return;
        }
        let status = if outcome.is_ok() {
            TaskStatus::Completed
        } else {
            TaskStatus::Failed
        };
        let bytes = json_len(&outcome);
        self.result_bytes.fetch_add(bytes, Ordering::AcqRel);
        task.charge = Some(ResultCharge {
            bytes,
            total: Arc::clone(&self.result_bytes),
        });
        task.outcome = Some(outcome);
        task.touch(status);
        self.keep_final(id, &task);
        // The entry's guard must go before others are locked (a DashMap shard lock).
        drop(task);
        self.mark_settled();
        self.settled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(id.to_string());
        self.evict_results(id);
    }

    /// Drops the oldest stored results until they fit `tasks.max_bytes`, never the one of
    /// `newest` (just settled): its client has not read it yet.
    fn evict_results(&self, newest: &str) {
        let max = self.config.max_bytes;
        let before = self.result_bytes();
        let mut evicted = 0usize;
        while self.result_bytes() > max {
            let oldest = {
                let mut settled = self.settled.lock().unwrap_or_else(PoisonError::into_inner);
                match settled.front() {
                    Some(id) if id != newest => settled.pop_front(),
                    _ => None,
                }
            };
            let Some(oldest) = oldest else { break };
            if let Some(mut task) = self.tasks.get_mut(&oldest) {
                task.outcome = Some(Err(RpcError::internal(format!(
                    "the result of task {oldest} was dropped to keep finished tasks' results \
                     within tasks.max_bytes ({max}); run the call again"
                ))));
                task.charge = None;
                evicted += 1;
            }
        }
        if evicted > 0 {
            self.metrics.limit_hit(Limit::TaskBytes);
            warn_limited!(
                evicted,
                bytes = before,
                "task results over tasks.max_bytes ({max}): the oldest finished tasks' results \
                 were dropped"
            );
        }
    }

    /// `tasks/get`: the task, with its result, error or input requests inlined (there is no
    /// `tasks/result` any more).
    pub fn get(&self, id: &str, owner: &str) -> Result<Value, RpcError> {
        let task = self.tasks.get(id).filter(|t| *t.call.owner == *owner);
        let task = task.ok_or_else(|| unknown_task(id))?;
        Ok(Value::Object(self.detailed(id, &task)))
    }

    /// `tasks/update`: records the answers to pending input requests (others are ignored)
    /// and, once none is pending, starts a new run with every answer through `spawn`. The
    /// reply is an empty ack; the new state shows on the next `tasks/get`.
    pub fn update(
        &self,
        id: &str,
        owner: &str,
        responses: Option<&Value>,
        spawn: impl FnOnce(Run) -> AbortHandle,
    ) -> Result<Value, RpcError> {
        let responses = match responses {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(responses)) => responses.clone(),
            Some(_) => return Err(RpcError::invalid_params("inputResponses must be an object")),
        };
        let task = self.tasks.get_mut(id).filter(|t| *t.call.owner == *owner);
        let mut task = task.ok_or_else(|| unknown_task(id))?;
        if task.status != TaskStatus::InputRequired {
            return Ok(json!({}));
        }
        for (key, answer) in responses {
            // Only objects can be results; anything else leaves the question pending.
            if answer.is_object() && task.input_requests.remove(&key).is_some() {
                task.answers.insert(key, answer);
            }
        }
        if task.input_requests.is_empty() {
            task.touch(TaskStatus::Working);
            task.start_run(id, spawn);
        } else {
            task.last_updated_at = SystemTime::now();
        }
        Ok(json!({}))
    }

    /// `tasks/cancel`: stops a task that has not ended; an ended task is left as it is.
    /// Either way the reply is the same empty ack (idempotent).
    pub fn cancel(&self, id: &str, owner: &str) -> Result<Value, RpcError> {
        let task = self.tasks.get_mut(id).filter(|t| *t.call.owner == *owner);
        let mut task = task.ok_or_else(|| unknown_task(id))?;
        if !task.status.is_terminal() {
            task.stop();
            task.input_requests.clear();
            task.touch(TaskStatus::Cancelled);
            self.keep_final(id, &task);
            drop(task);
            self.mark_settled();
        }
        Ok(json!({}))
    }
}

mod charge;
mod drain;
#[cfg(test)]
mod tests;
mod view;

impl TaskStore {
    /// Every task with its owner and status, oldest first: for the admin API
    /// (`GET /admin/tasks`). Read-only; each entry is locked only to copy its fields.
    pub(crate) fn list_for_admin(&self) -> Vec<Value> {
        let mut all: Vec<(SystemTime, Value)> = self
            .tasks
            .iter()
            .map(|entry| {
                let task = entry.value();
                let tool = task.call.params.as_ref().and_then(|p| p.get("name"));
                let fields = json!({
                    "taskId": entry.key(),
                    "owner": &*task.call.owner,
                    "status": task.status,
                    "tool": tool,
                    "createdAt": timestamp(task.created_at),
                    "lastUpdatedAt": timestamp(task.last_updated_at),
                });
                (task.created_at, fields)
            })
            .collect();
        all.sort_by_key(|(created, _)| *created);
        all.into_iter().map(|(_, fields)| fields).collect()
    }
}
