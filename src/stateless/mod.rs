//! The stateless 2026-07-28 revision, served on the same endpoint as the sessions.
//!
//! A modern request is a self-contained unit of work: it never looks up, creates or touches
//! a session actor. Its envelope is checked (`envelope`), then it runs inside the request's
//! own future through the same [`dispatch`](crate::dispatch) the sessions use (`call`), with a
//! `link::StatelessLink` as its channel to the client: notifications go on the request's
//! own response stream, and elicitation or sampling become an `input_required` result with
//! a sealed [`request_state`]. Closing the response stream drops that future, which cancels
//! the handler.
//! `server/discover` and `subscriptions/listen` (`listen`) exist only here, and so do the
//! task methods of the `io.modelcontextprotocol/tasks` extension (`tasks`).
//!
//! Nothing here knows HTTP: `serve` answers with a `Reply` (a response, a stream of
//! messages, or a `Refusal`), and the HTTP layer picks statuses, headers and framing.

mod call;
pub(crate) mod envelope;
pub(crate) mod link;
pub(crate) mod listen;
pub mod request_state;
mod stamp;
pub(crate) mod tasks;

use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::core::Core;
use crate::events::ServerEvents;
use crate::jsonrpc::{self, Message, Request, RequestId, RpcError, codes};
use crate::keyed_counts::KeyedCounts;
use crate::metrics::RequestTimer;
use crate::protocol::method::{Served, StatelessMethod};
use crate::protocol::{Method, Revision, STATELESS_VERSION, is_handshake_version};
use envelope::RoutingFields;
use request_state::RequestStateKey;
use tasks::TaskStore;

/// What the stateless path owns, server-wide: nothing here is per request.
pub(crate) struct StatelessState {
    /// What both eras read. Draining refuses every new request (503) and lets those in
    /// flight run to their end; shutdown makes calls answer an error and ends listen streams.
    pub core: Arc<Core>,
    /// Listen streams subscribe here.
    pub events: Arc<ServerEvents>,
    /// Seals and opens `requestState` of input_required round trips.
    pub request_state: RequestStateKey,
    /// Tasks of the `io.modelcontextprotocol/tasks` extension.
    pub tasks: TaskStore,
    /// Open `subscriptions/listen` streams (`stateless.max_listen_streams`): each holds a permit.
    pub listen_permits: Arc<Semaphore>,
    /// Requests in flight (`stateless.max_in_flight`): each running handler holds a permit.
    pub call_permits: Arc<Semaphore>,
    /// Requests in flight per principal (`auth.max_in_flight_per_principal`).
    pub principal_calls: KeyedCounts,
    /// Open listen streams per principal (`auth.max_listen_streams_per_principal`).
    pub principal_listens: KeyedCounts,
}

impl StatelessState {
    /// The scope of upstream connections a request of `principal` from `client` uses.
    pub(crate) fn upstream_scope(
        &self,
        principal: &Arc<str>,
        client: &Arc<crate::protocol::ClientInfo>,
    ) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        let scope = self
            .core
            .gateway
            .as_ref()?
            .principal_scope(principal, Arc::clone(client))?;
        Some(scope)
    }

    /// Open `subscriptions/listen` streams.
    pub fn listen_streams(&self) -> usize {
        self.core.config.stateless.max_listen_streams - self.listen_permits.available_permits()
    }

    /// Requests running now (listen streams are not counted: they never finish).
    pub fn calls_in_flight(&self) -> usize {
        self.core.config.stateless.max_in_flight - self.call_permits.available_permits()
    }
}

/// The answer to one modern POST.
pub(crate) enum Reply {
    /// A notification: nothing to answer.
    Accepted,
    /// One JSON-RPC response; `error` is its error code when it is an error.
    Response { body: Bytes, error: Option<i64> },
    /// Messages as they come: notifications, then the final response or the end of a
    /// listen stream. Dropping the stream cancels what produces it.
    Stream(BoxStream<'static, Bytes>),
    /// A server limit or the request's transport options refused it.
    Refused(Refusal),
}

/// Why a modern request was refused before it ran.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    #[error(
        "the server already runs {limit} 2026-07-28 requests (stateless.max_in_flight); retry shortly"
    )]
    TooManyCalls { limit: usize },
    #[error(
        "the server has {limit} listen streams open (stateless.max_listen_streams); retry later"
    )]
    TooManyListenStreams { limit: usize },
    #[error(
        "you already have {limit} 2026-07-28 requests in flight (auth.max_in_flight_per_principal); retry when one finishes"
    )]
    PrincipalBusy { limit: usize },
    #[error(
        "you already have {limit} listen streams open (auth.max_listen_streams_per_principal); close one first"
    )]
    PrincipalListening { limit: usize },
    #[error(
        "this server is shutting down and takes no new request; retry, and a load balancer \
         sends you to another node"
    )]
    Draining,
    #[error(
        "the server holds {limit} tasks (tasks.max_tasks); retry when older tasks have expired"
    )]
    TooManyTasks { limit: usize },
    #[error(
        "you already hold {limit} tasks (auth.max_tasks_per_principal); retry when older \
         tasks have expired"
    )]
    PrincipalTasks { limit: usize },
    /// The transport cannot carry the stream of messages a listen answers with.
    #[error(
        "subscriptions/listen answers with a stream of messages, which this request does not accept"
    )]
    ListenNeedsEventStream,
}

impl Reply {
    /// An error response echoing the request id, or `"id": null` when the id could not be
    /// read (JSON-RPC 2.0 §5, as the 2026-07-28 reference servers answer).
    pub fn error(id: Option<&RequestId>, mut error: RpcError) -> Reply {
        if error.code == codes::RESOURCE_NOT_FOUND {
            // 2026-07-28 reports unknown resources as invalid params (`server/resources.mdx`).
            error.code = codes::INVALID_PARAMS;
        }
        let code = error.code;
        let body = match id {
            Some(id) => jsonrpc::encode_response(Some(id), &Err(error)),
            None => {
                Bytes::from(json!({ "jsonrpc": "2.0", "id": null, "error": error }).to_string())
            }
        };
        Reply::Response {
            body,
            error: Some(code),
        }
    }

    /// The response carrying `result`, with what every result of `method` carries.
    fn result(state: &StatelessState, method: Method, id: &RequestId, result: Value) -> Reply {
        Reply::Response {
            body: stamp::stamped_response(state, method, id, result),
            error: None,
        }
    }
}

/// Whether a `MCP-Protocol-Version` value routes a POST here (§1.4): every value that is no
/// handshake revision, unknown ones included.
pub(crate) fn takes_version(version: &str) -> bool {
    !is_handshake_version(version)
}

/// Whether a request without version header claims the modern revision in its `_meta`.
pub(crate) fn claims_stateless(method: &str, params: Option<&Value>) -> bool {
    Method::parse(method) != Some(Method::Initialize) && envelope::has_stateless_claim(params)
}

/// Who sent a modern POST, as the transport authenticated it.
#[derive(Clone)]
pub(crate) struct Caller {
    /// The principal's key: `requestState` and tasks are bound to it.
    pub key: Arc<str>,
    /// `auth.max_in_flight_per_principal`; `None` without authentication.
    pub max_in_flight: Option<usize>,
    /// `auth.max_tasks_per_principal`; `None` without authentication.
    pub max_tasks: Option<usize>,
    /// `auth.max_listen_streams_per_principal`; `None` without authentication.
    pub max_listen_streams: Option<usize>,
    /// What the principal may use: its lists are filtered with it.
    pub grants: crate::context::Grants,
    /// The request's `traceparent` header, for its audit line.
    pub traceparent: Option<Arc<str>>,
}

/// What the transport knows of one modern POST besides its body.
pub(crate) struct StatelessTransport<'a> {
    /// Who sent it.
    pub caller: &'a Caller,
    /// The routing fields (in HTTP, the `Mcp-*` headers).
    pub fields: &'a dyn RoutingFields,
    /// The version the transport named, if any.
    pub version: Option<&'a str>,
    /// Whether the client accepts a stream of messages (in HTTP, `text/event-stream`).
    pub accepts_stream: bool,
}

/// Serves one modern POST whose body is already decoded.
pub(crate) async fn serve(
    state: &Arc<StatelessState>,
    transport: StatelessTransport<'_>,
    body: jsonrpc::Body,
) -> Reply {
    if state.core.drain.is_cancelled() && !tasks::continues_while_draining(&body) {
        return Reply::Refused(Refusal::Draining);
    }
    let message = match body {
        jsonrpc::Body::Single(m) => m,
        jsonrpc::Body::Batch(_) => {
            return Reply::error(
                None,
                RpcError::invalid_request(format!(
                    "{STATELESS_VERSION} takes one message per POST, not a batch"
                )),
            );
        }
    };
    let request = match message {
        Message::Request(r) => r,
        Message::Notification(_) => {
            return match transport.version {
                Some(v) if v != STATELESS_VERSION => Reply::error(None, unsupported_version(v)),
                // Notifications have no effect without a session; cancellation is closing the
                // response stream (spec 2026-07-28 `basic/patterns/cancellation.mdx`).
                _ => Reply::Accepted,
            };
        }
        Message::Response(_) => {
            return Reply::error(
                None,
                RpcError::invalid_request(format!(
                    "{STATELESS_VERSION} clients never send responses: the server sends no requests"
                )),
            );
        }
    };
    let label = Method::metric_label_of(&request.method, true);
    let mut timer = Some(
        state
            .core
            .metrics
            .start_request(label, Revision::V2026_07_28),
    );
    let reply = route(state, transport, request, &mut timer).await;
    if let Some(timer) = timer {
        settle(timer, &reply);
    }
    reply
}

/// Records a request that `route` answered itself (a feature call records its own, in the
/// task that runs it): a refusal is counted by its limit, not as a request.
fn settle(timer: RequestTimer, reply: &Reply) {
    match reply {
        Reply::Refused(_) => timer.discard(),
        Reply::Response { error, .. } => timer.finish(error.is_none()),
        Reply::Accepted | Reply::Stream(_) => timer.finish(true),
    }
}

/// Routes one request by who serves its method. A feature call takes `timer` into its task.
async fn route(
    state: &Arc<StatelessState>,
    transport: StatelessTransport<'_>,
    request: Request,
    timer: &mut Option<RequestTimer>,
) -> Reply {
    // A request that names an unknown revision and carries no envelope was not written for
    // 2026-07-28 at all: say which revisions exist rather than which fields are missing.
    let has_envelope = request
        .params
        .as_ref()
        .is_some_and(|p| p.get("_meta").is_some_and(Value::is_object));
    if let Some(version) = transport
        .version
        .filter(|v| *v != STATELESS_VERSION && !has_envelope)
    {
        return Reply::error(Some(&request.id), unsupported_version(version));
    }
    let envelope = match envelope::validate(
        transport.fields,
        &request.method,
        request.params.as_ref(),
        &state.core.features.load(),
    ) {
        Ok(e) => e,
        Err(e) => return Reply::error(Some(&request.id), e),
    };
    let method = Method::parse(&request.method).filter(|m| m.in_stateless());
    match method.and_then(Method::served) {
        Some(Served::Stateless(StatelessMethod::ServerDiscover)) => {
            let result = discover_result(state);
            Reply::result(state, Method::ServerDiscover, &request.id, result)
        }
        Some(Served::Stateless(StatelessMethod::SubscriptionsListen)) => {
            // Boxed, as the task methods below: a rare method's future would otherwise size
            // the future of every 2026-07-28 request.
            Box::pin(listen::open(state, &transport, request)).await
        }
        Some(Served::Stateless(StatelessMethod::Task(task))) => {
            let (params, client) = (request.params.as_ref(), &envelope.client);
            match Box::pin(tasks::serve(
                state,
                task,
                params,
                client,
                &transport.caller.key,
            ))
            .await
            {
                Ok(result) => Reply::result(state, task.method(), &request.id, result),
                Err(e) => Reply::error(Some(&request.id), e),
            }
        }
        Some(Served::Features(feature)) => {
            call::run(state, request, feature, envelope, transport.caller, timer).await
        }
        Some(Served::SessionActor(_)) | None => {
            let method = &request.method;
            Reply::error(
                Some(&request.id),
                RpcError::new(
                    codes::METHOD_NOT_FOUND,
                    format!("method {method:?} does not exist in {STATELESS_VERSION}"),
                ),
            )
        }
    }
}

fn unsupported_version(version: &str) -> RpcError {
    RpcError::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "protocol version {version:?} is not supported: send {STATELESS_VERSION} per request, \
             or {} after an initialize handshake",
            Revision::supported_list()
        ),
    )
    .with_data(json!({ "supported": [STATELESS_VERSION], "requested": version }))
}

fn discover_result(state: &StatelessState) -> Value {
    let mut result = json!({
        "supportedVersions": [STATELESS_VERSION],
        "capabilities": state.core.identity.capabilities(),
    });
    // Extensions exist only in the 2026-07-28 capability object.
    result["capabilities"]["extensions"] = json!({ tasks::EXTENSION: {} });
    if let Some(instructions) = state.core.identity.instructions() {
        result["instructions"] = instructions.clone();
    }
    result
}

/// -32021 for a handler that needed a client capability the request did not declare.
pub(crate) fn missing_capability(capability: &str) -> RpcError {
    RpcError::new(
        codes::MISSING_CLIENT_CAPABILITY,
        format!("this request needs the client capability `{capability}`, which the request did not declare"),
    )
    .with_data(json!({ "requiredCapabilities": { capability: {} } }))
}
