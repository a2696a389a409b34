//! [`RequestContext`]: what a tool, resource or prompt handler can do while it serves one
//! request — report progress, log, ask the client (elicitation, sampling, roots), and notice
//! cancellation.
//!
//! The context does not know which transport era it serves. It talks to a `ClientLink`:
//! the session actor for handshake-era sessions, or a per-request channel for the stateless
//! revision. Feature code written against it runs unchanged on both.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::auth::OperationScopes;
use crate::jsonrpc::{RequestId, RpcError};
use crate::protocol::{ClientInfo, ElicitResult, LogLevel, Method, object};

/// Why a server→client request did not produce an answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientRequestError {
    #[error(
        "the client did not declare the `{0}` capability, so the server cannot send it this request"
    )]
    NotSupported(&'static str),
    #[error("the client did not answer within {0:?}; the request was cancelled")]
    TimedOut(Duration),
    #[error("the client answered with an error: {0}")]
    Rejected(RpcError),
    #[error("the client's answer was malformed: {0}")]
    Malformed(String),
    #[error("too many server→client requests are pending in this session (limit {0})")]
    TooManyPending(usize),
    #[error("the session ended before the client answered")]
    SessionClosed,
    /// Stateless requests cannot wait for the client: the request is answered with
    /// `input_required`, and the client's retry runs the handler again with the answer.
    #[error(
        "the client's input is required; the request ends with an input_required result and is retried with the answer"
    )]
    InputRequired,
    /// [`RequestContext::start_task`] turned the call into a task: this run ends, and the
    /// task runs the handler again from the start with the answers gathered so far.
    #[error("the call continues as a task; this run ends and the task runs the handler again")]
    TaskStarted,
}

/// A notification a handler sends about its request.
pub(crate) struct Notice {
    /// The client request it is about.
    pub origin: RequestId,
    pub method: &'static str,
    pub params: Value,
    /// Set for `notifications/message`, so the receiver can drop messages below its log
    /// level.
    pub level: Option<LogLevel>,
}

/// The channel a context uses to reach its client. Implemented by the transport layer.
pub(crate) trait ClientLink: Send + Sync + 'static {
    /// Sends a notification related to its request.
    fn notify(&self, notice: Notice) -> BoxFuture<'_, ()>;

    /// Sends a request to the client on behalf of `origin` and waits for its answer. `key`
    /// names the input on the stateless path (`inputRequests`); sessions ignore it.
    fn request(
        &self,
        origin: &RequestId,
        key: Option<&str>,
        method: &'static str,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientRequestError>>;

    /// Closes the SSE connection carrying `origin`'s stream without ending the stream
    /// (SEP-1699 polling); the client reconnects with `Last-Event-ID`.
    fn close_stream(&self, origin: &RequestId) -> BoxFuture<'_, ()>;

    /// Told when a handler needed a client capability the client did not declare. The
    /// stateless path answers such a request with -32021; sessions need not react.
    fn capability_missing(&self, _capability: &'static str) {}

    /// Asked by [`RequestContext::start_task`]. Only a stateless call of a tool that starts
    /// its own task, from a client that declared the tasks extension, ends here with
    /// [`ClientRequestError::TaskStarted`]; everywhere else the handler just continues.
    fn start_task(&self) -> Result<(), ClientRequestError> {
        Ok(())
    }
}

/// What `[auth.scopes]` lets the requester use. Calls were already decided at the edge
/// (403); lists are filtered with this, so a caller is never shown what it would be refused.
/// Without `[auth]`, everything.
#[derive(Clone, Default)]
pub struct Grants {
    limited: Option<(Arc<OperationScopes>, Arc<BTreeSet<String>>)>,
}

impl Grants {
    /// Grants without any limit: no `[auth]`, or work already checked (a task's call).
    pub fn everything() -> Self {
        Grants::default()
    }

    /// What a principal holding `granted` may use under `rules`.
    pub(crate) fn new(rules: Arc<OperationScopes>, granted: Arc<BTreeSet<String>>) -> Self {
        Grants {
            limited: Some((rules, granted)),
        }
    }

    fn holds(granted: &BTreeSet<String>, needed: &[String]) -> bool {
        needed.iter().all(|scope| granted.contains(scope))
    }

    /// Whether `method` (`tools/call`, `prompts/get`, `resources/read`) on `name` (a tool
    /// or prompt name as listed, or a canonical resource URI) is allowed.
    pub fn allows(&self, method: Method, name: &str) -> bool {
        self.limited
            .as_ref()
            .is_none_or(|(rules, granted)| Self::holds(granted, rules.needed(method, name)))
    }

    /// Whether some resource URI starting with `prefix` (canonical) may be read: a
    /// template is listed when it can serve the caller anything.
    pub fn allows_some_under(&self, prefix: &str) -> bool {
        self.limited.as_ref().is_none_or(|(rules, granted)| {
            rules
                .needed_for_some_under(prefix)
                .into_iter()
                .any(|needed| Self::holds(granted, needed))
        })
    }
}

/// The context of one client request. Cheap to clone.
#[derive(Clone)]
pub struct RequestContext {
    inner: Arc<ContextParts>,
}

/// What a transport knows of one request when it hands it to a handler.
pub(crate) struct ContextParts {
    pub request_id: RequestId,
    /// The session it arrived in; `None` on the stateless path.
    pub session_id: Option<Arc<str>>,
    pub progress_token: Option<Value>,
    pub client: Arc<ClientInfo>,
    pub cancel: CancellationToken,
    pub link: Arc<dyn ClientLink>,
    /// What the requester's scope owns for handlers to use, such as a session's upstream
    /// connections; handlers find it by type with [`RequestContext::scope`].
    pub scope: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// What the requester's token lets it use.
    pub grants: Grants,
}

impl RequestContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        RequestContext {
            inner: Arc::new(parts),
        }
    }

    /// The JSON-RPC id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        &self.inner.request_id
    }

    /// The `Mcp-Session-Id`, for handshake-era requests.
    pub fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }

    /// What the requester may use under `[auth.scopes]`.
    pub fn grants(&self) -> &Grants {
        &self.inner.grants
    }

    /// The client's implementation info, capabilities and protocol revision.
    pub fn client_info(&self) -> &ClientInfo {
        &self.inner.client
    }

    /// Cancelled when the client cancels the request or the session ends. The task running
    /// the handler is also aborted then, so awaiting this is only needed to clean up
    /// resources that outlive the task (child processes, remote jobs).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Whether the request carried a progress token.
    pub fn wants_progress(&self) -> bool {
        self.inner.progress_token.is_some()
    }

    /// Sends `notifications/progress` if the request carried a progress token; otherwise
    /// does nothing. `progress` must increase with every call (spec `progress.mdx`).
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        let mut params = object([
            ("progressToken", token.clone()),
            ("progress", json!(progress)),
        ]);
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify("notifications/progress", params, None).await;
    }

    async fn notify(&self, method: &'static str, params: Value, level: Option<LogLevel>) {
        let notice = Notice {
            origin: self.inner.request_id.clone(),
            method,
            params,
            level,
        };
        self.inner.link.notify(notice).await;
    }

    /// Sends `notifications/message`. Messages below the session's log level are dropped.
    pub async fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        let mut params = object([("level", json!(level)), ("data", data)]);
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.notify("notifications/message", params, Some(level))
            .await;
    }

    /// Asks the user for structured input with `elicitation/create` in form mode.
    /// `requested_schema` is a flat object schema of primitive properties.
    pub async fn elicit(
        &self,
        message: &str,
        requested_schema: Value,
    ) -> Result<ElicitResult, ClientRequestError> {
        self.ask_elicit(None, message, requested_schema).await
    }

    /// [`elicit`](Self::elicit), naming the input `key` in a 2026-07-28 `input_required`
    /// result (by default inputs are named `input-0`, `input-1`, ... in the order asked).
    pub async fn elicit_as(
        &self,
        key: &str,
        message: &str,
        requested_schema: Value,
    ) -> Result<ElicitResult, ClientRequestError> {
        self.ask_elicit(Some(key), message, requested_schema).await
    }

    async fn ask_elicit(
        &self,
        key: Option<&str>,
        message: &str,
        requested_schema: Value,
    ) -> Result<ElicitResult, ClientRequestError> {
        if !self.inner.client.supports_elicitation_form() {
            return Err(self.missing("elicitation"));
        }
        let params = object([
            ("message", Value::String(message.to_owned())),
            ("requestedSchema", requested_schema),
        ]);
        let answer = self
            .inner
            .link
            .request(&self.inner.request_id, key, "elicitation/create", params)
            .await?;
        serde_json::from_value(answer).map_err(|e| ClientRequestError::Malformed(e.to_string()))
    }

    /// Asks the client's model for a completion with `sampling/createMessage`. `params` is
    /// the request's params (`messages`, `maxTokens`, ...); the client's result is returned.
    pub async fn sample(&self, params: Value) -> Result<Value, ClientRequestError> {
        self.sample_keyed(None, params).await
    }

    /// [`sample`](Self::sample), naming the input `key` in a 2026-07-28 `input_required`
    /// result.
    pub async fn sample_as(&self, key: &str, params: Value) -> Result<Value, ClientRequestError> {
        self.sample_keyed(Some(key), params).await
    }

    async fn sample_keyed(
        &self,
        key: Option<&str>,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        if !self.inner.client.supports_sampling() {
            return Err(self.missing("sampling"));
        }
        self.inner
            .link
            .request(
                &self.inner.request_id,
                key,
                "sampling/createMessage",
                params,
            )
            .await
    }

    /// Asks the client for its roots with `roots/list`; returns the `roots` array.
    pub async fn list_roots(&self) -> Result<Value, ClientRequestError> {
        if !self.inner.client.supports_roots() {
            return Err(self.missing("roots"));
        }
        let result = self
            .inner
            .link
            .request(&self.inner.request_id, None, "roots/list", json!({}))
            .await?;
        result
            .get("roots")
            .cloned()
            .ok_or_else(|| ClientRequestError::Malformed("roots/list result has no `roots`".into()))
    }

    /// Forwards a server→client request an upstream server sent (the gateway), after the
    /// same capability check the typed methods make. `params` pass through unchanged.
    pub(crate) async fn forward_request(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<Value, ClientRequestError> {
        let client = &self.inner.client;
        let (declared, capability) = match Method::parse(method) {
            Some(Method::ElicitationCreate)
                if params.get("mode").and_then(Value::as_str) == Some("url") =>
            {
                (client.supports_elicitation_url(), "elicitation")
            }
            Some(Method::ElicitationCreate) => (client.supports_elicitation_form(), "elicitation"),
            Some(Method::SamplingCreateMessage) => (client.supports_sampling(), "sampling"),
            Some(Method::RootsList) => (client.supports_roots(), "roots"),
            _ => (true, ""),
        };
        if !declared {
            return Err(self.missing(capability));
        }
        self.inner
            .link
            .request(&self.inner.request_id, None, method, params)
            .await
    }

    /// What the requester's scope lent handlers, if it is a `T`.
    pub(crate) fn scope<T: std::any::Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let scope = self.inner.scope.clone()?;
        scope.downcast::<T>().ok()
    }

    fn missing(&self, capability: &'static str) -> ClientRequestError {
        self.inner.link.capability_missing(capability);
        ClientRequestError::NotSupported(capability)
    }

    /// Ends the synchronous phase of a tool registered with
    /// [`Tool::starting_own_task`](crate::Tool::starting_own_task): on a 2026-07-28 request
    /// from a client that declared `io.modelcontextprotocol/tasks`, the call is answered with
    /// a `CreateTaskResult` and the task runs the handler again from the start, with every
    /// answer gathered so far, so code before this call must be repeatable (as with
    /// `input_required` retries). Propagate the error with `?`. Inside the task, on
    /// sessions and for clients without the extension it returns `Ok(())` and the handler
    /// simply continues.
    pub fn start_task(&self) -> Result<(), ClientRequestError> {
        self.inner.link.start_task()
    }

    /// Closes the SSE connection of this request's stream without ending the stream, so the
    /// client reconnects and resumes with `Last-Event-ID` (2025-11-25 SSE polling).
    pub async fn close_sse_stream(&self) {
        self.inner.link.close_stream(&self.inner.request_id).await;
    }
}
