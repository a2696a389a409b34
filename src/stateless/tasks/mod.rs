//! The `io.modelcontextprotocol/tasks` extension (SEP-2663) on the stateless path: a
//! `tools/call` that the server answers at once with a `CreateTaskResult`, while the tool
//! runs in the background; the client polls `tasks/get`, answers the task's input requests
//! with `tasks/update` and stops it with `tasks/cancel`.
//!
//! Tasks are not session state (2026-07-28 has no sessions), so they live in one
//! server-wide [`TaskStore`] (in `store.rs`, with the status rules and the `max_tasks`
//! bound). This file decides when a call becomes a task and how a task's run executes.
//!
//! A task runs the same [`dispatch`](crate::dispatch::dispatch) as any request, in a spawned task, with a
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

pub(crate) mod drain;
mod durable;
mod store;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::link::{MAX_INPUT_REQUESTS, StatelessLink, take_input_requests};
use super::{Caller, StatelessState};
use crate::audit::Requester;
use crate::context::{ClientLink, ContextParts};
use crate::dispatch::run_handler;
use crate::features::Features;
use crate::features::tools::TaskSupport;
use crate::jsonrpc::{Request, RpcError, codes, params_object};
use crate::protocol::method::{FeatureMethod, TaskMethod};
use crate::protocol::{Answer, ClientInfo, STATELESS_VERSION};
pub(crate) use store::{CreateError, TaskStore};
use store::{Run, TaskCall};

/// The extension's identifier in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a draining node still serves `body`: a request about a task it holds.
pub(crate) fn continues_while_draining(body: &crate::jsonrpc::Body) -> bool {
    matches!(body, crate::jsonrpc::Body::Single(crate::jsonrpc::Message::Request(r))
        if drain::served_while_draining(&r.method))
}

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

/// Creates a task for a `tools/call` and starts its first run; returns the
/// `CreateTaskResult`. The task is in the store before this returns, so a `tasks/get` right
/// after the reply finds it (SEP-2663 "durable create").
pub(crate) fn create(
    state: &Arc<StatelessState>,
    request: &Request,
    client: Arc<ClientInfo>,
    features: Arc<Features>,
    answers: BTreeMap<String, Value>,
    caller: &Caller,
) -> Result<Value, CreateError> {
    let call = TaskCall {
        request_id: request.id.clone(),
        params: request.params.clone(),
        client,
        features,
        owner: Arc::clone(&caller.key),
    };
    state
        .tasks
        .create(call, answers, caller.max_tasks, |run| spawn_run(state, run))
}

/// Spawns one run of a task's call; the run settles the task when it ends.
fn spawn_run(state: &Arc<StatelessState>, run: Run) -> AbortHandle {
    let state = Arc::clone(state);
    let task = tokio::spawn(async move {
        let Run {
            id,
            generation,
            call,
            answers,
            cancel,
        } = run;
        // A task has no response stream: its notifications go nowhere.
        let (out_tx, _) = mpsc::channel(1);
        let (needed_tx, mut needed_rx) = mpsc::channel(MAX_INPUT_REQUESTS);
        let link = Arc::new(StatelessLink::new(out_tx, None, answers, needed_tx));
        let parts = ContextParts {
            request_id: call.request_id.clone(),
            session_id: None,
            progress_token: None,
            client: Arc::clone(&call.client),
            cancel,
            link: Arc::clone(&link) as Arc<dyn ClientLink>,
            scope: state.upstream_scope(&call.owner, &call.client),
            // A task runs a `tools/call` whose scopes were decided when it was sent;
            // it lists nothing.
            grants: crate::context::Grants::everything(),
        };
        let audited = state.core.audit.begin(
            &call.features,
            Requester::stateless(&call.owner),
            FeatureMethod::ToolsCall,
            call.params.as_ref(),
        );
        let outcome = run_handler(
            Arc::clone(&call.features),
            Arc::clone(&state.core.metrics),
            &state.core.node_id,
            STATELESS_VERSION,
            parts,
            FeatureMethod::ToolsCall,
            None,
            call.params.clone(),
        )
        .await;
        audited.finish(&outcome);
        let inputs = take_input_requests(&mut needed_rx);
        let outcome = match link.missing_capability() {
            Some(capability) => Err(super::missing_capability(capability)),
            None => outcome,
        };
        // Stored as a value: a task's result is read again (`tasks/get` inlines it).
        let outcome = outcome.and_then(Answer::into_value);
        state.tasks.settle(&id, generation, outcome, inputs);
    });
    task.abort_handle()
}

/// Serves `tasks/get`, `tasks/update` and `tasks/cancel`. Each needs the extension in the
/// request's `clientCapabilities` (SEP-2663 "Capability Negotiation"). A task this node does
/// not hold may have finished on another node, or before a restart: with `[store]`, the
/// answer is read there (`durable.rs`).
pub(crate) async fn serve(
    state: &Arc<StatelessState>,
    task: TaskMethod,
    params: Option<&Value>,
    client: &ClientInfo,
    owner: &str,
) -> Result<Value, RpcError> {
    let method = task.method();
    if !declares_extension(client) {
        return Err(extension_required(method.as_str()));
    }
    let params = params_object(params)?;
    let id = params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("{method} needs a string `taskId`")))?;
    state.tasks.expire();
    let here = match task {
        TaskMethod::Get => state.tasks.get(id, owner),
        TaskMethod::Update => {
            let responses = params.get("inputResponses");
            state
                .tasks
                .update(id, owner, responses, |run| spawn_run(state, run))
        }
        TaskMethod::Cancel => state.tasks.cancel(id, owner),
    };
    match (here, state.tasks.durable()) {
        (Err(unknown), Some(durable)) if !state.tasks.holds(id) => {
            durable.answer(task, id, owner).await.ok_or(unknown)
        }
        (here, _) => here,
    }
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
}
