//! The `io.modelcontextprotocol/tasks` extension (SEP-2663) on the stateless path: a
//! `tools/call` that the server answers at once with a `CreateTaskResult`, while the tool
//! runs in the background; the client polls `tasks/get`, answers the task's input requests
//! with `tasks/update` and stops it with `tasks/cancel`.
//!
//! Tasks are not session state (2026-07-28 has no sessions), so they live in one
//! server-wide [`TaskStore`], a `DashMap` keyed by an unguessable task id. Its guards are
//! never held across an `.await`: every operation locks one entry, changes it and returns.
//!
//! A task runs the same [`dispatch`] as any request, in a spawned task, with a
//! [`StatelessLink`] whose notifications go nowhere (a task has no response stream). When the
//! handler asks the client for input, the run ends like an `input_required` request does,
//! and the task waits in `input_required` with the questions as `inputRequests`. When
//! `tasks/update` has answered every one of them, the handler runs again from the start with
//! all the answers — the same rule the multi round-trip (MRTR) path follows. Each run has a
//! generation number, so a run that was cancelled or superseded cannot overwrite the task.
//!
//! Status rules (SEP-2663 "error semantics"): a tool that ran and reported an error is
//! `completed` with `result.isError`; `failed` is kept for protocol errors (an unknown
//! tool, a panicking handler, a missing client capability), with the JSON-RPC `error`.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use dashmap::DashMap;
use futures_util::FutureExt;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::ModernState as Shared;
use super::link::{MAX_INPUT_REQUESTS, StatelessLink};
use crate::config::TasksSection;
use crate::context::{ClientLink, RequestContext};
use crate::dispatch::dispatch;
use crate::features::Features;
use crate::features::tools::TaskSupport;
use crate::jsonrpc::{Request, RequestId, RpcError, codes, params_object};
use crate::log_limit::warn_limited;
use crate::protocol::ClientInfo;

/// The extension's identifier in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a request declared the extension in its `clientCapabilities.extensions`.
pub(crate) fn declares_extension(client: &ClientInfo) -> bool {
    client
        .capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// -32021 naming the extension, as SEP-2575 "Missing Required Capabilities" shapes it.
pub(crate) fn extension_required(what: &str) -> RpcError {
    RpcError::new(
        codes::MISSING_CLIENT_CAPABILITY,
        format!("{what} needs the client extension {EXTENSION}; declare it in _meta clientCapabilities.extensions"),
    )
    .with_data(json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } }))
}

/// How a `tools/call` runs on the stateless path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallPlan {
    /// An ordinary request: the result, or `input_required`.
    Direct,
    /// Answered with a `CreateTaskResult` at once; the tool runs as the task.
    Task,
    /// An ordinary request until the handler calls `start_task`, then a task.
    TaskWhenHandlerStarts,
}

/// Decides how a `tools/call` runs (SEP-2663 "server-directed task creation"): the tool's
/// `execution.taskSupport` and the request's declared extensions decide, never a client
/// hint (a legacy `task` param is ignored).
pub(crate) fn plan_call(
    features: &Features,
    params: Option<&Value>,
    client: &ClientInfo,
) -> Result<CallPlan, RpcError> {
    let Some(tool) = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .and_then(|name| features.tool(name))
    else {
        return Ok(CallPlan::Direct);
    };
    match (tool.task_support(), declares_extension(client)) {
        (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => Ok(CallPlan::Direct),
        (TaskSupport::Required, false) => Err(extension_required(&format!(
            "tool {:?} runs only as a task, so it",
            tool.name()
        ))),
        (_, true) if tool.starts_own_task() => Ok(CallPlan::TaskWhenHandlerStarts),
        (_, true) => Ok(CallPlan::Task),
    }
}

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
struct TaskCall {
    request_id: RequestId,
    params: Option<Value>,
    client: Arc<ClientInfo>,
    /// Taken when the call arrived, so a reload never changes a task's tools.
    features: Arc<Features>,
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
    /// Which run may settle the task: a run of an older generation is ignored.
    generation: u64,
    cancel: CancellationToken,
    run: Option<AbortHandle>,
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
    }
}

/// Every task of the server, bounded by `[tasks] max_tasks`, each readable for `ttl`.
pub(crate) struct TaskStore {
    tasks: DashMap<String, Task>,
    config: TasksSection,
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
    pub fn new(config: TasksSection) -> Self {
        TaskStore {
            tasks: DashMap::new(),
            config,
        }
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Forgets the tasks whose ttl ran out, stopping those still running.
    fn expire(&self) {
        let now = SystemTime::now();
        let ttl = self.config.ttl;
        self.tasks.retain(|_, task| {
            let alive = task.created_at + ttl > now;
            if !alive {
                task.stop();
            }
            alive
        });
    }

    /// The task fields every answer about the task carries (SEP-2663 `Task`).
    fn envelope(&self, id: &str, task: &Task) -> Map<String, Value> {
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
}

/// Creates a task for a `tools/call` and starts its first run; returns the
/// `CreateTaskResult`. The task is in the store before this returns, so a `tasks/get` right
/// after the reply finds it (SEP-2663 "durable create").
pub(crate) fn create(
    shared: &Arc<Shared>,
    request: &Request,
    client: Arc<ClientInfo>,
    features: Arc<Features>,
    answers: BTreeMap<String, Value>,
) -> Result<Value, RpcError> {
    let store = &shared.tasks;
    store.expire();
    if store.len() >= store.config.max_tasks {
        return Err(RpcError::internal(format!(
            "too many tasks (tasks.max_tasks = {}); retry when older tasks have expired",
            store.config.max_tasks
        )));
    }
    let now = SystemTime::now();
    let mut task = Task {
        status: TaskStatus::Working,
        created_at: now,
        last_updated_at: now,
        call: Arc::new(TaskCall {
            request_id: request.id.clone(),
            params: request.params.clone(),
            client,
            features,
        }),
        answers,
        input_requests: Map::new(),
        outcome: None,
        generation: 0,
        cancel: CancellationToken::new(),
        run: None,
    };
    let id = uuid::Uuid::new_v4().to_string();
    let mut result = store.envelope(&id, &task);
    result.insert("resultType".into(), json!("task"));
    start_run(shared, &id, &mut task);
    store.tasks.insert(id, task);
    Ok(Value::Object(result))
}

/// Starts a run of the task's call with every answer given so far. The caller holds the
/// task (not yet in the store, or its entry's guard); the run settles it when it ends.
fn start_run(shared: &Arc<Shared>, id: &str, task: &mut Task) {
    task.generation += 1;
    task.cancel = CancellationToken::new();
    let generation = task.generation;
    let call = Arc::clone(&task.call);
    let answers = task.answers.clone();
    let cancel = task.cancel.clone();
    let shared = Arc::clone(shared);
    let id = id.to_string();
    let run = tokio::spawn(async move {
        // A task has no response stream: its notifications go nowhere.
        let (out_tx, _) = mpsc::channel(1);
        let (needed_tx, mut needed_rx) = mpsc::channel(MAX_INPUT_REQUESTS);
        let link = Arc::new(StatelessLink::new(out_tx, None, answers, needed_tx));
        let ctx = RequestContext::new(
            call.request_id.clone(),
            None,
            None,
            Arc::clone(&call.client),
            cancel,
            Arc::clone(&link) as Arc<dyn ClientLink>,
        );
        let work = dispatch(&call.features, ctx, "tools/call", call.params.clone());
        let outcome = AssertUnwindSafe(work)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                warn_limited!(task_id = %id, "task handler panicked");
                Err(RpcError::internal(
                    "the tool of this task failed unexpectedly",
                ))
            });
        let mut inputs = Map::new();
        while let Ok((key, input)) = needed_rx.try_recv() {
            inputs.insert(key, input);
        }
        let outcome = match link.missing_capability() {
            Some(capability) => Err(super::missing_capability(capability)),
            None => outcome,
        };
        settle(&shared.tasks, &id, generation, outcome, inputs);
    });
    task.run = Some(run.abort_handle());
}

/// Records how a run ended, unless the task moved on meanwhile (cancelled, expired, or
/// another run started).
fn settle(
    store: &TaskStore,
    id: &str,
    generation: u64,
    outcome: Result<Value, RpcError>,
    inputs: Map<String, Value>,
) {
    let Some(mut task) = store.tasks.get_mut(id) else {
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
    task.outcome = Some(outcome);
    task.touch(status);
}

/// Serves `tasks/get`, `tasks/update` and `tasks/cancel`. Each needs the extension in the
/// request's `clientCapabilities` (SEP-2663 "Capability Negotiation").
pub(crate) fn serve(
    shared: &Arc<Shared>,
    method: &str,
    params: Option<&Value>,
    client: &ClientInfo,
) -> Result<Value, RpcError> {
    if !declares_extension(client) {
        return Err(extension_required(method));
    }
    let params = params_object(params)?;
    let id = params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs a string `taskId`")))?;
    shared.tasks.expire();
    match method {
        "tasks/get" => get(&shared.tasks, id),
        "tasks/update" => update(shared, id, params.get("inputResponses")),
        "tasks/cancel" => cancel(&shared.tasks, id),
        other => Err(RpcError::method_not_found(other)),
    }
}

/// `tasks/get`: the task, with its result, error or input requests inlined (there is no
/// `tasks/result` any more).
fn get(store: &TaskStore, id: &str) -> Result<Value, RpcError> {
    let task = store.tasks.get(id).ok_or_else(|| unknown_task(id))?;
    let mut detailed = store.envelope(id, &task);
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
    Ok(Value::Object(detailed))
}

/// `tasks/update`: records the answers to pending input requests (others are ignored) and,
/// once none is pending, runs the handler again with every answer. The reply is an empty
/// ack; the new state shows on the next `tasks/get`.
fn update(shared: &Arc<Shared>, id: &str, responses: Option<&Value>) -> Result<Value, RpcError> {
    let responses = match responses {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(responses)) => responses.clone(),
        Some(_) => return Err(RpcError::invalid_params("inputResponses must be an object")),
    };
    let mut task = shared
        .tasks
        .tasks
        .get_mut(id)
        .ok_or_else(|| unknown_task(id))?;
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
        start_run(shared, id, &mut task);
    } else {
        task.last_updated_at = SystemTime::now();
    }
    Ok(json!({}))
}

/// `tasks/cancel`: stops a task that has not ended; an ended task is left as it is. Either
/// way the reply is the same empty ack (idempotent).
fn cancel(store: &TaskStore, id: &str) -> Result<Value, RpcError> {
    let mut task = store.tasks.get_mut(id).ok_or_else(|| unknown_task(id))?;
    if !task.status.is_terminal() {
        task.stop();
        task.input_requests.clear();
        task.touch(TaskStatus::Cancelled);
    }
    Ok(json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(capabilities: Value) -> ClientInfo {
        ClientInfo {
            implementation: Value::Null,
            capabilities,
            protocol_version: None,
        }
    }

    fn stored(store: &TaskStore, status: TaskStatus, created_at: SystemTime) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let task = Task {
            status,
            created_at,
            last_updated_at: created_at,
            call: Arc::new(TaskCall {
                request_id: RequestId::Number(1),
                params: None,
                client: Arc::new(client(json!({}))),
                features: Arc::new(Features::default()),
            }),
            answers: BTreeMap::new(),
            input_requests: Map::new(),
            outcome: None,
            generation: 1,
            cancel: CancellationToken::new(),
            run: None,
        };
        store.tasks.insert(id.clone(), task);
        id
    }

    #[test]
    fn the_extension_is_read_from_client_capabilities() {
        assert!(declares_extension(&client(
            json!({ "extensions": { EXTENSION: {} } })
        )));
        assert!(!declares_extension(&client(json!({ "extensions": {} }))));
        assert!(!declares_extension(&client(json!({}))));
        let error = extension_required("tasks/get");
        assert_eq!(error.code, codes::MISSING_CLIENT_CAPABILITY);
        assert!(
            error.data.unwrap()["requiredCapabilities"]["extensions"]
                .get(EXTENSION)
                .is_some()
        );
    }

    #[test]
    fn a_stale_run_never_overwrites_a_cancelled_task() {
        let store = TaskStore::new(TasksSection::default());
        let id = stored(&store, TaskStatus::Working, SystemTime::now());
        cancel(&store, &id).unwrap();
        settle(&store, &id, 1, Ok(json!({ "content": [] })), Map::new());
        let view = get(&store, &id).unwrap();
        assert_eq!(view["status"], "cancelled");
        assert!(view.get("result").is_none());
        // Cancelling again is the same ack.
        assert_eq!(cancel(&store, &id).unwrap(), json!({}));
    }

    #[test]
    fn runs_settle_by_outcome_and_inputs() {
        let store = TaskStore::new(TasksSection::default());
        let done = stored(&store, TaskStatus::Working, SystemTime::now());
        settle(&store, &done, 1, Ok(json!({ "isError": true })), Map::new());
        assert_eq!(get(&store, &done).unwrap()["status"], "completed");

        let failed = stored(&store, TaskStatus::Working, SystemTime::now());
        settle(
            &store,
            &failed,
            1,
            Err(RpcError::internal("boom")),
            Map::new(),
        );
        let view = get(&store, &failed).unwrap();
        assert_eq!(view["status"], "failed");
        assert_eq!(view["error"]["code"], codes::INTERNAL_ERROR);

        let asking = stored(&store, TaskStatus::Working, SystemTime::now());
        let mut inputs = Map::new();
        inputs.insert("input-0".into(), json!({ "method": "elicitation/create" }));
        settle(&store, &asking, 1, Ok(json!({})), inputs);
        let view = get(&store, &asking).unwrap();
        assert_eq!(view["status"], "input_required");
        assert_eq!(
            view["inputRequests"]["input-0"]["method"],
            "elicitation/create"
        );
        assert!(view.get("requestState").is_none());
    }

    #[test]
    fn expired_tasks_are_forgotten_and_unknown_ids_are_invalid_params() {
        let store = TaskStore::new(TasksSection {
            ttl: Duration::from_secs(60),
            ..TasksSection::default()
        });
        let old = stored(
            &store,
            TaskStatus::Completed,
            SystemTime::now() - Duration::from_secs(61),
        );
        let fresh = stored(&store, TaskStatus::Completed, SystemTime::now());
        store.expire();
        assert_eq!(get(&store, &old).unwrap_err().code, codes::INVALID_PARAMS);
        assert_eq!(get(&store, &fresh).unwrap()["ttlMs"], 60_000);
        assert_eq!(
            cancel(&store, "nope").unwrap_err().code,
            codes::INVALID_PARAMS
        );
    }
}
