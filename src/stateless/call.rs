//! Running one feature method of a 2026-07-28 request: inside the request's own future,
//! answered with one response, or with a stream as soon as the handler sends a notification first. A
//! `tools/call` may become a task instead ([`tasks::plan_call`]), and a handler that asks
//! the client ends with an `input_required` result carrying a sealed `requestState`.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::{FutureExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::link::{Frame, MAX_INPUT_REQUESTS, StatelessLink, TaskStart, take_input_requests};
use super::request_state::Binding;
use super::stamp::stamped_answer;
use super::tasks::CreateError;
use super::{Caller, Refusal, Reply, StatelessState, envelope, missing_capability, tasks};
use crate::audit::Requester;
use crate::context::{ClientLink, ContextParts};
use crate::dispatch::run_handler;
use crate::jsonrpc::{self, Request, RequestId, RpcError, codes};
use crate::metrics::RequestTimer;
use crate::protocol::method::FeatureMethod;
use crate::protocol::{Answer, STATELESS_VERSION, object};

/// The binding of a request's `requestState`: what a retry must repeat, and who must send
/// it (`principal`, the caller's key).
fn binding(request: &Request, method: FeatureMethod, principal: &str) -> Binding {
    let params = request.params.as_ref();
    let target = method
        .method()
        .target()
        .and_then(|t| params?.get(t.field())?.as_str())
        .unwrap_or("");
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .cloned()
        .unwrap_or(Value::Null);
    Binding::new(&request.method, target, &arguments, principal)
}

/// Earlier answers (from `requestState`) merged with this retry's `inputResponses`.
fn gathered_answers(
    state: &StatelessState,
    request: &Request,
    method: FeatureMethod,
    principal: &str,
) -> Result<BTreeMap<String, Value>, RpcError> {
    let params = request.params.as_ref();
    let mut answers = match params.and_then(|p| p.get("requestState")) {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::String(token)) => state.request_state.open(token, &binding(request, method, principal)).map_err(|reason| {
            tracing::debug!(method = %request.method, request_id = %request.id, %reason, "requestState refused");
            RpcError::invalid_params("invalid or expired requestState").with_data(json!({ "reason": "invalid_request_state" }))
        })?,
        Some(_) => return Err(RpcError::invalid_params("requestState must be a string")),
    };
    match params.and_then(|p| p.get("inputResponses")) {
        None | Some(Value::Null) => {}
        Some(Value::Object(responses)) => {
            for (key, value) in responses {
                // Only objects can be results; anything else is asked again.
                if value.is_object() {
                    answers.insert(key.clone(), value.clone());
                }
            }
        }
        Some(_) => return Err(RpcError::invalid_params("inputResponses must be an object")),
    }
    Ok(answers)
}

/// Runs a feature method inside the request's own future (see the comment on `Running`
/// below). The running handler takes `timer` and records the request when its outcome is
/// known; a reply made before then leaves it to the caller.
///
/// Everything up to the handler's start is done before the future is returned, so the
/// future keeps only what the wait needs (the running handler, its frames and the id), not
/// the request, the envelope and the locals that built the handler.
pub(super) fn run<'s>(
    state: &'s Arc<StatelessState>,
    request: Request,
    method: FeatureMethod,
    envelope: envelope::Envelope,
    caller: &Caller,
    timer: &mut Option<RequestTimer>,
) -> impl Future<Output = Reply> + Send + use<'s> {
    let started = start(state, request, method, envelope, caller, timer);
    async move {
        let Started {
            mut running,
            frames: mut out_rx,
            id: request_id,
        } = match started {
            Ok(started) => started,
            Err(answered) => return answered,
        };
        let first = loop {
            tokio::select! {
                biased;
                first = out_rx.recv() => break first,
                () = running.drive() => {}
                () = state.core.shutdown.cancelled() => break Some(shutdown_frame(&request_id)),
            }
        };
        match first {
            Some(Frame::Final { body, error }) => Reply::Response { body, error },
            Some(first @ Frame::Notification(_)) => {
                Reply::Stream(stream(state, request_id, first, out_rx, running))
            }
            None => Reply::error(
                None,
                RpcError::internal("the handler ended without a result"),
            ),
        }
    }
}

/// A handler [`start`] started: the run, the frames it sends, and its request's id.
struct Started {
    running: Running,
    frames: mpsc::Receiver<Frame>,
    id: RequestId,
}

/// The checks before a handler runs, then the handler, started; or the reply of a request
/// answered without one (refused, invalid, or a task created).
fn start(
    state: &Arc<StatelessState>,
    request: Request,
    method: FeatureMethod,
    envelope: envelope::Envelope,
    caller: &Caller,
    timer: &mut Option<RequestTimer>,
) -> Result<Started, Reply> {
    // Held by the running handler, so a request counts until its handler ends or is dropped.
    let Ok(permit) = Arc::clone(&state.call_permits).try_acquire_owned() else {
        let limit = state.core.config.stateless.max_in_flight;
        return Err(Reply::Refused(Refusal::TooManyCalls { limit }));
    };
    let principal_slot = match caller.max_in_flight {
        Some(limit) => match state.principal_calls.take(&caller.key, limit) {
            Some(slot) => Some(slot),
            None => return Err(Reply::Refused(Refusal::PrincipalBusy { limit })),
        },
        None => None,
    };
    let answers = match gathered_answers(state, &request, method, &caller.key) {
        Ok(a) => a,
        Err(e) => return Err(Reply::error(Some(&request.id), e)),
    };
    // Taken before the spawn, so a reload never changes a request's tools mid-call.
    let features = state.core.features.load_full();
    let plan = if method == FeatureMethod::ToolsCall {
        match tasks::plan_call(&features, request.params.as_ref(), &envelope.client) {
            Ok(plan) => plan,
            Err(e) => return Err(Reply::error(Some(&request.id), e)),
        }
    } else {
        tasks::CallPlan::Direct
    };
    let client = Arc::new(envelope.client);
    if plan == tasks::CallPlan::Task {
        return Err(
            match tasks::create(state, &request, client, features, answers, caller) {
                Ok(result) => Reply::result(state, method.method(), &request.id, result),
                Err(CreateError::Refused(refusal)) => Reply::Refused(refusal),
                Err(CreateError::Failed(e)) => Reply::error(Some(&request.id), e),
            },
        );
    }
    let task_start = if plan == tasks::CallPlan::TaskWhenHandlerStarts {
        TaskStart::Allowed
    } else {
        TaskStart::Continue
    };
    let (out_tx, out_rx) = mpsc::channel(state.core.config.http.sse_connection_buffer);
    let (needed_tx, mut needed_rx) = mpsc::channel(MAX_INPUT_REQUESTS);
    let link = Arc::new(
        StatelessLink::new(
            out_tx.clone(),
            envelope.log_level,
            answers.clone(),
            needed_tx,
        )
        .with_task_start(task_start),
    );
    let cancel = CancellationToken::new();
    let parts = ContextParts {
        request_id: request.id.clone(),
        session_id: None,
        progress_token: envelope.progress_token,
        client: Arc::clone(&client),
        cancel: cancel.clone(),
        link: Arc::clone(&link) as Arc<dyn ClientLink>,
        scope: state.upstream_scope(&caller.key, &client),
        grants: caller.grants.clone(),
    };
    let task_state = Arc::clone(state);
    let task_caller = caller.clone();
    let request_id = request.id.clone();
    let audited = state.core.audit.begin(
        &features,
        Requester::stateless(&caller.key).traceparent(caller.traceparent.as_deref()),
        method,
        request.params.as_ref(),
    );
    let handler = run_handler(
        Arc::clone(&features),
        Arc::clone(&state.core.metrics),
        &state.core.node_id,
        STATELESS_VERSION,
        parts,
        method,
        request.params.as_ref(),
        without_envelope(request.params.as_ref()),
    );
    let timer = timer.take();
    let work = async move {
        let _permits = (permit, principal_slot);
        let outcome = handler.await;
        audited.finish(&outcome);
        let inputs = take_input_requests(&mut needed_rx);
        let outcome = if let Some(capability) = link.missing_capability() {
            Err(missing_capability(capability))
        } else if link.task_started() {
            // The synchronous phase is over: the task runs the handler again with every
            // answer gathered in it. No requestState leaks into the task (SEP-2663).
            tasks::create(
                &task_state,
                &request,
                client,
                Arc::clone(&features),
                answers,
                &task_caller,
            )
            .map(Answer::Value)
            .map_err(CreateError::into_rpc)
        } else if !inputs.is_empty() && method.method().may_need_input() {
            let sealed = task_state
                .request_state
                .seal(binding(&request, method, &task_caller.key), answers);
            Ok(Answer::Value(object([
                ("resultType", Value::from("input_required")),
                ("inputRequests", Value::Object(inputs)),
                ("requestState", Value::String(sealed)),
            ])))
        } else {
            outcome
        };
        if let Some(timer) = timer {
            timer.finish(outcome.is_ok());
        }
        let frame = match outcome {
            Ok(result) => Frame::Final {
                body: stamped_answer(&task_state, method.method(), &request.id, result),
                error: None,
            },
            Err(error) => error_frame(&request.id, error),
        };
        let _ = out_tx.send(frame).await;
    };
    // The handler runs inside this request's own future, not a task of its own: on this
    // path the request's lifetime is the handler's (closing the response stream is
    // cancellation), so a spawn would only add a wake-up of another task per call. Whoever
    // holds `Running` polls it: this function until the first frame, then the response
    // stream. Dropping it (the client went away) drops the handler and cancels its token.
    // A panic outside the dispatch's own guard ends the run like a lost result.
    let running = Running {
        work: Some(Box::pin(
            std::panic::AssertUnwindSafe(work)
                .catch_unwind()
                .map(|_| ()),
        )),
        _cancel: cancel.drop_guard(),
    };
    Ok(Started {
        running,
        frames: out_rx,
        id: request_id,
    })
}

/// The params a handler gets: the request's own, less the `_meta` envelope, which was read
/// into the context already. The request keeps its copy for `requestState` and tasks.
fn without_envelope(params: Option<&Value>) -> Option<Value> {
    match params {
        Some(Value::Object(map)) => Some(Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "_meta")
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        )),
        other => other.cloned(),
    }
}

/// A failed request's last frame; this revision reports a missing resource as invalid params.
fn error_frame(id: &RequestId, mut error: RpcError) -> Frame {
    if error.code == codes::RESOURCE_NOT_FOUND {
        error.code = codes::INVALID_PARAMS;
    }
    Frame::Final {
        error: Some(error.code),
        body: jsonrpc::encode_response(Some(id), &Err(error)),
    }
}

/// The answer to a request whose handler the server shutdown aborts.
fn shutdown_frame(id: &RequestId) -> Frame {
    let error = RpcError::new(
        codes::SERVER_ERROR,
        "the server is shutting down; this request was aborted, retry it",
    );
    error_frame(id, error)
}

/// A request's handler, run by whoever holds it; dropping it cancels the handler.
struct Running {
    work: Option<futures_util::future::BoxFuture<'static, ()>>,
    _cancel: DropGuard,
}

impl Running {
    /// Polls the handler until it ends, then never completes again, so a `select!` on it
    /// keeps waiting for the frames it sent.
    async fn drive(&mut self) {
        match self.work.as_mut() {
            Some(work) => {
                work.await;
                self.work = None;
            }
            None => std::future::pending().await,
        }
    }
}

/// The messages of a run that notified before its result. It ends with the final response,
/// even if a clone of the context lingers, or with an error on shutdown.
fn stream(
    state: &StatelessState,
    id: RequestId,
    first: Frame,
    rx: mpsc::Receiver<Frame>,
    running: Running,
) -> futures_util::stream::BoxStream<'static, bytes::Bytes> {
    struct Feed {
        first: Option<Frame>,
        rx: mpsc::Receiver<Frame>,
        done: bool,
        shutdown: CancellationToken,
        id: RequestId,
        // Driven and dropped with the stream: a client that goes away cancels the handler.
        running: Running,
    }
    let feed = Feed {
        first: Some(first),
        rx,
        done: false,
        shutdown: state.core.shutdown.clone(),
        id,
        running,
    };
    futures_util::stream::unfold(feed, |mut feed| async move {
        if feed.done {
            return None;
        }
        let frame = match feed.first.take() {
            Some(frame) => frame,
            None => loop {
                tokio::select! {
                    biased;
                    frame = feed.rx.recv() => break frame?,
                    () = feed.running.drive() => {}
                    () = feed.shutdown.cancelled() => break shutdown_frame(&feed.id),
                }
            },
        };
        let data = match frame {
            Frame::Notification(body) => body,
            Frame::Final { body, .. } => {
                feed.done = true;
                body
            }
        };
        Some((data, feed))
    })
    .boxed()
}
