//! The stateless 2026-07-28 revision, served on the same endpoint as the sessions.
//!
//! A modern request is a self-contained unit of work: it never looks up, creates or touches
//! a session actor. Its envelope is checked (`envelope`), then it runs in its own task
//! through the same [`dispatch`] the sessions use, with a `link::StatelessLink` as its
//! channel to the client: notifications go on the request's own response stream, and
//! elicitation or sampling become an `input_required` result with a sealed
//! [`request_state`]. Closing the response stream cancels the task. `server/discover` and
//! `subscriptions/listen` (`listen`) exist only here, and so do the task methods of the
//! `io.modelcontextprotocol/tasks` extension (`tasks`).
//!
//! Routing between the eras follows `shared/spec/stateless-2026-07-28.md` §1.4.

pub(crate) mod envelope;
pub(crate) mod link;
pub(crate) mod listen;
pub mod request_state;
pub(crate) mod tasks;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::body::Body as HttpBody;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::FutureExt;
use serde_json::{Map, Value, json};
use sse_stream::{KeepAlive, Sse, SseBody};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::context::RequestContext;
use crate::dispatch::dispatch;
use crate::http::error::HttpError;
use crate::http::reply::TokioTimer;
use crate::jsonrpc::{self, Message, Request, RequestId, RpcError, codes};
use crate::log_limit::warn_limited;
use crate::protocol::{MODERN_VERSION, is_handshake_version};
use crate::server::Shared;
use link::{Frame, MAX_INPUT_REQUESTS, StatelessLink, TaskStart};
use request_state::Binding;

/// Methods a modern client may call besides `server/discover` and `subscriptions/listen`.
const FEATURE_METHODS: &[&str] = &[
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// Results that must carry cache hints (spec 2026-07-28 `server/utilities/caching.mdx`).
const CACHEABLE: &[&str] = &[
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// Methods that may answer `input_required` (spec `basic/patterns/mrtr.mdx`).
const MAY_REQUIRE_INPUT: &[&str] = &["tools/call", "prompts/get", "resources/read"];

/// Who the caller is, for binding `requestState`. The server has no authentication yet,
/// so every caller is the same principal.
const ANONYMOUS: &str = "anonymous";

/// Whether a POST belongs to the modern path (§1.4): a non-handshake `MCP-Protocol-Version`
/// header, or, without header and session, a single non-initialize request with the modern
/// `_meta` claim.
pub(crate) fn is_modern_post(
    headers: &HeaderMap,
    session_id: Option<&str>,
    body: &jsonrpc::Body,
) -> bool {
    if let Some(version) = header_version(headers) {
        // Unknown revisions too, even with a session id (§1.4): that ladder answers 400
        // -32022 and lists the revisions of both eras.
        return !is_handshake_version(version);
    }
    match body {
        jsonrpc::Body::Single(Message::Request(r)) => {
            session_id.is_none()
                && r.method != "initialize"
                && envelope::has_modern_claim(r.params.as_ref())
        }
        _ => false,
    }
}

/// Whether a GET or DELETE names a non-handshake revision: those verbs do not exist there.
pub(crate) fn is_modern_header(headers: &HeaderMap) -> bool {
    header_version(headers).is_some_and(|v| !is_handshake_version(v))
}

fn header_version(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("mcp-protocol-version")
        .map(|v| v.to_str().unwrap_or("\u{fffd}").trim_matches([' ', '\t']))
}

/// The HTTP status of a JSON-RPC error on the modern path (§2.5).
fn status_for(code: i64) -> StatusCode {
    match code {
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        codes::PARSE_ERROR
        | codes::INVALID_REQUEST
        | codes::INVALID_PARAMS
        | codes::HEADER_MISMATCH
        | codes::MISSING_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// An error reply echoing the request id, or `"id": null` when the id could not be read
/// (JSON-RPC 2.0 §5, as the 2026-07-28 reference servers answer).
pub(crate) fn error_reply(id: Option<&RequestId>, mut error: RpcError) -> Response {
    if error.code == codes::RESOURCE_NOT_FOUND {
        // 2026-07-28 reports unknown resources as invalid params (`server/resources.mdx`).
        error.code = codes::INVALID_PARAMS;
    }
    let status = status_for(error.code);
    let body = match id {
        Some(id) => jsonrpc::encode_response(Some(id), &Err(error)),
        None => Bytes::from(json!({ "jsonrpc": "2.0", "id": null, "error": error }).to_string()),
    };
    json_reply(status, body)
}

fn json_reply(status: StatusCode, body: Bytes) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Serves one modern POST whose body is already decoded.
pub(crate) async fn serve_post(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    body: jsonrpc::Body,
) -> Response {
    let message = match body {
        jsonrpc::Body::Single(m) => m,
        jsonrpc::Body::Batch(_) => {
            return error_reply(
                None,
                RpcError::invalid_request(format!(
                    "{MODERN_VERSION} takes one message per POST, not a batch"
                )),
            );
        }
    };
    let request = match message {
        Message::Request(r) => r,
        Message::Notification(_) => {
            return match header_version(headers) {
                Some(v) if v != MODERN_VERSION => error_reply(None, unsupported_version(v)),
                // Notifications have no effect without a session; cancellation is closing the
                // response stream (spec 2026-07-28 `basic/patterns/cancellation.mdx`).
                _ => StatusCode::ACCEPTED.into_response(),
            };
        }
        Message::Response(_) => {
            return error_reply(
                None,
                RpcError::invalid_request(format!(
                    "{MODERN_VERSION} clients never send responses: the server sends no requests"
                )),
            );
        }
    };
    // A request that names an unknown revision and carries no envelope was not written for
    // 2026-07-28 at all: say which revisions exist rather than which fields are missing.
    let has_envelope = request
        .params
        .as_ref()
        .is_some_and(|p| p.get("_meta").is_some_and(Value::is_object));
    if let Some(version) = header_version(headers).filter(|v| *v != MODERN_VERSION && !has_envelope)
    {
        return error_reply(Some(&request.id), unsupported_version(version));
    }
    let envelope = match envelope::validate(
        headers,
        &request.method,
        request.params.as_ref(),
        &shared.features.load(),
    ) {
        Ok(e) => e,
        Err(e) => return error_reply(Some(&request.id), e),
    };
    match request.method.as_str() {
        "server/discover" => {
            let result = stamp(shared, "server/discover", discover_result(shared));
            json_reply(
                StatusCode::OK,
                jsonrpc::encode_response(Some(&request.id), &Ok(result)),
            )
        }
        "subscriptions/listen" => listen::open(shared, headers, request).await,
        method if tasks::METHODS.contains(&method) => {
            match tasks::serve(shared, method, request.params.as_ref(), &envelope.client) {
                Ok(result) => json_reply(
                    StatusCode::OK,
                    jsonrpc::encode_response(Some(&request.id), &Ok(stamp(shared, method, result))),
                ),
                Err(e) => error_reply(Some(&request.id), e),
            }
        }
        method if FEATURE_METHODS.contains(&method) => run(shared, request, envelope).await,
        method => error_reply(
            Some(&request.id),
            RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("method {method:?} does not exist in {MODERN_VERSION}"),
            ),
        ),
    }
}

fn unsupported_version(version: &str) -> RpcError {
    RpcError::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "protocol version {version:?} is not supported: send {MODERN_VERSION} per request, \
             or {} after an initialize handshake",
            crate::protocol::ProtocolVersion::supported_list()
        ),
    )
    .with_data(json!({ "supported": [MODERN_VERSION], "requested": version }))
}

fn discover_result(shared: &Shared) -> Value {
    let mut result = json!({
        "supportedVersions": [MODERN_VERSION],
        "capabilities": shared.initialize_result["capabilities"],
    });
    // Extensions exist only in the 2026-07-28 capability object.
    result["capabilities"]["extensions"] = json!({ tasks::EXTENSION: {} });
    if let Some(instructions) = shared.initialize_result.get("instructions") {
        result["instructions"] = instructions.clone();
    }
    result
}

/// Adds what every modern result carries: `resultType`, `_meta` serverInfo, and cache hints
/// where the method's result is cacheable.
fn stamp(shared: &Shared, method: &str, mut result: Value) -> Value {
    let Some(obj) = result.as_object_mut() else {
        return result;
    };
    obj.entry("resultType").or_insert_with(|| json!("complete"));
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(
            "io.modelcontextprotocol/serverInfo".into(),
            shared.initialize_result["serverInfo"].clone(),
        );
    }
    if CACHEABLE.contains(&method) && obj.get("resultType") == Some(&json!("complete")) {
        obj.insert("ttlMs".into(), json!(shared.config.modern.ttl_ms));
        obj.insert(
            "cacheScope".into(),
            json!(shared.config.modern.cache_scope.as_str()),
        );
    }
    result
}

/// The binding of a request's `requestState`: what a retry must repeat.
fn binding(request: &Request) -> Binding {
    let params = request.params.as_ref();
    let field = if request.method == "resources/read" {
        "uri"
    } else {
        "name"
    };
    let target = params
        .and_then(|p| p.get(field))
        .and_then(Value::as_str)
        .unwrap_or("");
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .cloned()
        .unwrap_or(Value::Null);
    Binding::new(&request.method, target, &arguments, ANONYMOUS)
}

/// Earlier answers (from `requestState`) merged with this retry's `inputResponses`.
fn gathered_answers(
    shared: &Shared,
    request: &Request,
) -> Result<BTreeMap<String, Value>, RpcError> {
    let params = request.params.as_ref();
    let mut answers = match params.and_then(|p| p.get("requestState")) {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::String(token)) => shared.request_state.open(token, &binding(request)).map_err(|reason| {
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

/// -32021 for a handler that needed a client capability the request did not declare.
pub(crate) fn missing_capability(capability: &str) -> RpcError {
    RpcError::new(
        codes::MISSING_CLIENT_CAPABILITY,
        format!("this request needs the client capability `{capability}`, which the request did not declare"),
    )
    .with_data(json!({ "requiredCapabilities": { capability: {} } }))
}

/// Runs a feature method in its own task and answers with JSON, or with SSE as soon as the
/// handler sends a notification first. A `tools/call` may become a task instead
/// ([`tasks::plan_call`]).
async fn run(shared: &Arc<Shared>, request: Request, envelope: envelope::Envelope) -> Response {
    // Held by the handler task, so a request counts until its handler ends or is aborted.
    let Ok(permit) = Arc::clone(&shared.modern_permits).try_acquire_owned() else {
        let limit = shared.config.modern.max_in_flight;
        return HttpError::new(
            StatusCode::TOO_MANY_REQUESTS,
            codes::SERVER_ERROR,
            format!("the server already runs {limit} 2026-07-28 requests (modern.max_in_flight); retry shortly"),
        )
        .retry_after(1)
        .into_response();
    };
    let answers = match gathered_answers(shared, &request) {
        Ok(a) => a,
        Err(e) => return error_reply(Some(&request.id), e),
    };
    // Taken before the spawn, so a reload never changes a request's tools mid-call.
    let features = shared.features.load_full();
    let plan = if request.method == "tools/call" {
        match tasks::plan_call(&features, request.params.as_ref(), &envelope.client) {
            Ok(plan) => plan,
            Err(e) => return error_reply(Some(&request.id), e),
        }
    } else {
        tasks::CallPlan::Direct
    };
    let client = Arc::new(envelope.client);
    if plan == tasks::CallPlan::Task {
        return match tasks::create(shared, &request, client, features, answers) {
            Ok(result) => json_reply(
                StatusCode::OK,
                jsonrpc::encode_response(
                    Some(&request.id),
                    &Ok(stamp(shared, &request.method, result)),
                ),
            ),
            Err(e) => error_reply(Some(&request.id), e),
        };
    }
    let task_start = if plan == tasks::CallPlan::TaskWhenHandlerStarts {
        TaskStart::Allowed
    } else {
        TaskStart::Continue
    };
    let (out_tx, mut out_rx) = mpsc::channel(shared.config.http.sse_connection_buffer);
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
    let ctx = RequestContext::new(
        request.id.clone(),
        None,
        envelope.progress_token,
        Arc::clone(&client),
        cancel.clone(),
        Arc::clone(&link) as Arc<dyn crate::context::ClientLink>,
    );
    let task_shared = Arc::clone(shared);
    let request_id = request.id.clone();
    let task = tokio::spawn(async move {
        let _permit = permit;
        let work = dispatch(&features, ctx, &request.method, request.params.clone());
        let outcome = AssertUnwindSafe(work).catch_unwind().await.unwrap_or_else(|_| {
            warn_limited!(method = %request.method, request_id = %request.id, "handler panicked");
            Err(RpcError::internal(format!("the handler of {} failed unexpectedly", request.method)))
        });
        let mut inputs = Map::new();
        while let Ok((key, input)) = needed_rx.try_recv() {
            inputs.insert(key, input);
        }
        let outcome = if let Some(capability) = link.missing_capability() {
            Err(missing_capability(capability))
        } else if link.task_started() {
            // The synchronous phase is over: the task runs the handler again with every
            // answer gathered in it. No requestState leaks into the task (SEP-2663).
            tasks::create(
                &task_shared,
                &request,
                client,
                Arc::clone(&features),
                answers,
            )
            .map(|result| stamp(&task_shared, &request.method, result))
        } else if !inputs.is_empty() && MAY_REQUIRE_INPUT.contains(&request.method.as_str()) {
            let state = task_shared.request_state.seal(binding(&request), answers);
            Ok(stamp(
                &task_shared,
                &request.method,
                json!({
                    "resultType": "input_required", "inputRequests": inputs, "requestState": state,
                }),
            ))
        } else {
            outcome.map(|result| stamp(&task_shared, &request.method, result))
        };
        let frame = match outcome {
            Ok(result) => Frame::Final {
                status: StatusCode::OK,
                body: jsonrpc::encode_response(Some(&request.id), &Ok(result)),
            },
            Err(mut error) => {
                if error.code == codes::RESOURCE_NOT_FOUND {
                    error.code = codes::INVALID_PARAMS;
                }
                Frame::Final {
                    status: status_for(error.code),
                    body: jsonrpc::encode_response(Some(&request.id), &Err(error)),
                }
            }
        };
        let _ = out_tx.send(frame).await;
    });
    // Dropping the guard (the client went away) cancels the handler: on this path,
    // closing the response stream is cancellation.
    let guard = AbortOnDrop {
        task: task.abort_handle(),
        _cancel: cancel.drop_guard(),
    };
    let first = tokio::select! {
        first = out_rx.recv() => first,
        () = shared.shutdown.cancelled() => Some(shutdown_frame(&request_id)),
    };
    match first {
        Some(Frame::Final { status, body }) => json_reply(status, body),
        Some(first @ Frame::Notification(_)) => sse_reply(shared, request_id, first, out_rx, guard),
        None => error_reply(
            None,
            RpcError::internal("the handler ended without a result"),
        ),
    }
}

/// The answer to a request whose handler the server shutdown aborts.
fn shutdown_frame(id: &RequestId) -> Frame {
    let error = RpcError::new(
        codes::SERVER_ERROR,
        "the server is shutting down; this request was aborted, retry it",
    );
    Frame::Final {
        status: StatusCode::OK,
        body: jsonrpc::encode_response(Some(id), &Err(error)),
    }
}

struct AbortOnDrop {
    task: tokio::task::AbortHandle,
    _cancel: DropGuard,
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// SSE without event ids: 2026-07-28 streams are not resumable. The stream ends with the
/// final response, even if a clone of the context lingers, or with an error on shutdown.
fn sse_reply(
    shared: &Shared,
    id: RequestId,
    first: Frame,
    rx: mpsc::Receiver<Frame>,
    guard: AbortOnDrop,
) -> Response {
    let to_sse = |frame: Frame| {
        let data = match frame {
            Frame::Notification(b) => b,
            Frame::Final { body, .. } => body,
        };
        Sse {
            id: None,
            data: Some(String::from_utf8_lossy(&data).into_owned()),
            retry: None,
            event: None,
        }
    };
    struct Feed {
        first: Option<Frame>,
        rx: mpsc::Receiver<Frame>,
        done: bool,
        shutdown: CancellationToken,
        id: RequestId,
        // Dropped with the stream: a client that goes away cancels the handler.
        _guard: AbortOnDrop,
    }
    let feed = Feed {
        first: Some(first),
        rx,
        done: false,
        shutdown: shared.shutdown.clone(),
        id,
        _guard: guard,
    };
    let events = futures_util::stream::unfold(feed, move |mut feed| async move {
        if feed.done {
            return None;
        }
        let frame = match feed.first.take() {
            Some(frame) => frame,
            None => tokio::select! {
                frame = feed.rx.recv() => frame?,
                () = feed.shutdown.cancelled() => shutdown_frame(&feed.id),
            },
        };
        feed.done = matches!(frame, Frame::Final { .. });
        Some((Ok::<_, Infallible>(to_sse(frame)), feed))
    });
    let keep_alive = KeepAlive::new().interval(shared.config.http.sse_keep_alive);
    crate::http::reply::sse_headers(HttpBody::new(SseBody::<_, TokioTimer>::new_keep_alive(
        events, keep_alive,
    )))
}
