//! Method routing for the feature methods, shared by every transport path.
//!
//! [`Method`] says who answers each method; the session actor answers the ones that read or
//! change session state itself and hands the feature methods to [`dispatch`], which runs
//! through [`run_handler`] on every path. Nothing here knows about sessions or HTTP, so the
//! stateless 2026-07-28 path calls it as is.

pub mod identity;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt;
use serde_json::Value;

use crate::context::{ContextParts, RequestContext};
use crate::features::Features;
use crate::jsonrpc::{RequestId, RpcError};
use crate::log_format::{self, RequestFields, RequestLog};
use crate::log_limit::warn_limited;
use crate::metrics::Metrics;
use crate::protocol::method::FeatureMethod;
use crate::protocol::{Answer, Method};
use crate::telemetry;

/// Runs one feature method and returns its result (a forwarded tool's as the upstream
/// wrote it, see [`Answer`]). `params` is taken by value so tool
/// arguments move into the handler.
pub async fn dispatch(
    features: &Features,
    ctx: RequestContext,
    method: FeatureMethod,
    params: Option<Value>,
) -> Result<Answer, RpcError> {
    let grants = ctx.grants();
    let built = match method {
        FeatureMethod::ToolsCall => return features.call_tool(ctx, params).await,
        FeatureMethod::ToolsList => features.list_tools(grants, params.as_ref()),
        FeatureMethod::ResourcesList => features.list_resources(grants, params.as_ref()),
        FeatureMethod::ResourcesTemplatesList => {
            features.list_resource_templates(grants, params.as_ref())
        }
        FeatureMethod::ResourcesRead => features.read_resource(ctx, params.as_ref()).await,
        FeatureMethod::PromptsList => features.list_prompts(grants, params.as_ref()),
        FeatureMethod::PromptsGet => features.get_prompt(ctx, params.as_ref()).await,
        FeatureMethod::CompletionComplete => features.complete(grants, params.as_ref()),
    };
    built.map(Answer::Value)
}

/// The span a handler runs in: every log line of the handler (a command tool's failure, a
/// refused file read) carries the node, session, method, its target (tool or prompt name,
/// resource URI, task id), request id and protocol revision. (The request's OpenTelemetry
/// span is [`telemetry::begin`]'s, not this one.) Not opened once
/// [`log_format::replace_request_span`] has been called: the binary's formatters show the
/// same fields from a [`RequestFields`] instead, at a fraction of the cost.
pub fn request_span(
    node: &str,
    method: Method,
    target: Option<&str>,
    session: Option<&str>,
    request_id: &RequestId,
    version: &str,
) -> tracing::Span {
    // At the highest level, so it is enabled whenever any event inside it is: an operator
    // at `RUST_LOG=warn` still sees which request a warning is about.
    tracing::error_span!(
        "request",
        node,
        session = session.unwrap_or(""),
        method = method.as_str(),
        target = target.unwrap_or(""),
        request_id = %request_id,
        version,
    )
}

/// The one way a feature method runs, on every path (a session's spawned task, a
/// 2026-07-28 request's own future, a task's run): its context, what its log lines say
/// about it ([`RequestLog`]: the [`request_span`], or its [`RequestFields`] when the span is
/// replaced), and [`run_guarded`]. Both are made before this returns, so `node` and `sent`
/// are only borrowed; the future owns the rest and may be spawned. `sent` is the request's params as
/// the client sent them, `_meta` included, for the span's trace context, when the handler's
/// `params` are not those (a 2026-07-28 handler's have the envelope taken out).
///
/// Either covers everything the handler's future polls, and neither reaches a task the
/// handler spawns (nothing here instruments one).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_handler(
    features: Arc<Features>,
    metrics: Arc<Metrics>,
    node: &Arc<str>,
    version: &'static str,
    parts: ContextParts,
    method: FeatureMethod,
    sent: Option<&Value>,
    params: Option<Value>,
) -> impl Future<Output = Result<Answer, RpcError>> + Send + 'static {
    let method_target = method.method().target();
    let target = method_target
        .and_then(|t| params.as_ref()?.get(t.field())?.as_str())
        .map(str::to_owned);
    let log = if log_format::request_span_replaced() {
        RequestLog::fields(RequestFields {
            node: Arc::clone(node),
            session: parts.session_id.clone(),
            method: method.method().as_str(),
            target,
            request_id: parts.request_id.clone(),
            version,
        })
    } else {
        RequestLog::span(request_span(
            node,
            method.method(),
            target.as_deref(),
            parts.session_id.as_deref(),
            &parts.request_id,
            version,
        ))
    };
    let traced = telemetry::begin(telemetry::Operation {
        method: method.method(),
        session: parts.session_id.as_deref(),
        version,
        request_id: &parts.request_id,
        params: sent.or(params.as_ref()),
    });
    let ctx = RequestContext::new(parts);
    let run = async move { run_guarded(&features, &metrics, ctx, method, params).await };
    traced.wrap(log.scope(run))
}

/// [`dispatch`], with a handler that panics turned into an internal error (logged,
/// rate-limited) instead of a task that ends without an answer. A `tools/call` counts in
/// `mcp_tools_in_flight` while it runs, on every path.
pub async fn run_guarded(
    features: &Features,
    metrics: &Metrics,
    ctx: RequestContext,
    method: FeatureMethod,
    params: Option<Value>,
) -> Result<Answer, RpcError> {
    let _running = (method == FeatureMethod::ToolsCall).then(|| metrics.tool_running());
    // A cheap handle for the log line of the rare panic (one reference count).
    let about = ctx.clone();
    AssertUnwindSafe(dispatch(features, ctx, method, params))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            let (session, request_id) = (about.session_id(), about.request_id());
            warn_limited!(?session, %method, %request_id, "handler panicked");
            Err(RpcError::internal(format!(
                "the handler of {method} failed unexpectedly"
            )))
        })
}
