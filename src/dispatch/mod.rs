//! Method routing for the feature methods, shared by every transport path.
//!
//! [`methods`] is the table of every method; the session actor answers the ones that read or
//! change session state itself and hands the feature methods to [`dispatch`], which runs in
//! a spawned task through [`run_guarded`]. Nothing here knows about sessions or HTTP, so the
//! stateless 2026-07-28 path calls it as is.

pub mod identity;
pub mod methods;

use std::panic::AssertUnwindSafe;

use futures_util::FutureExt;
use serde_json::Value;

use crate::context::RequestContext;
use crate::features::Features;
use crate::jsonrpc::RpcError;
use crate::log_limit::warn_limited;
use crate::metrics::Metrics;
use crate::telemetry;

/// Runs one feature method and returns its result. `params` is taken by value so tool
/// arguments move into the handler.
pub async fn dispatch(
    features: &Features,
    ctx: RequestContext,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    if method == "tools/call" {
        return features.call_tool(ctx, params).await;
    }
    let params = params.as_ref();
    match method {
        "tools/list" => features.list_tools(ctx.grants(), params),
        "resources/list" => features.list_resources(ctx.grants(), params),
        "resources/templates/list" => features.list_resource_templates(ctx.grants(), params),
        "resources/read" => features.read_resource(ctx, params).await,
        "prompts/list" => features.list_prompts(ctx.grants(), params),
        "prompts/get" => features.get_prompt(ctx, params).await,
        "completion/complete" => features.complete(ctx.grants(), params),
        other => Err(RpcError::method_not_found(other)),
    }
}

/// The span a handler task runs in: every log line of the handler (a command tool's
/// failure, a refused file read) carries the node, session, method and request id. With
/// `[telemetry]` on it is also the request's SERVER span ([`telemetry::describe`]), whose
/// parent is the trace context in `params._meta`.
pub fn request_span(
    node: &str,
    session: Option<&str>,
    method: &str,
    request_id: &crate::jsonrpc::RequestId,
    version: &str,
    params: Option<&Value>,
) -> tracing::Span {
    // At the highest level, so it is enabled whenever any event inside it is: an operator
    // at `RUST_LOG=warn` still sees which request a warning is about.
    let span = tracing::error_span!(
        "request",
        node,
        session = session.unwrap_or(""),
        method,
        request_id = %request_id,
        otel.name = tracing::field::Empty,
        otel.kind = tracing::field::Empty,
    );
    let operation = telemetry::Operation {
        method,
        session,
        version,
        request_id,
        params,
    };
    telemetry::describe(&span, operation);
    span
}

/// [`dispatch`], with a handler that panics turned into an internal error (logged,
/// rate-limited) instead of a task that ends without an answer. A `tools/call` counts in
/// `mcp_tools_in_flight` while it runs, on every path.
pub async fn run_guarded(
    features: &Features,
    metrics: &Metrics,
    ctx: RequestContext,
    method: &str,
    params: Option<Value>,
) -> Result<Value, RpcError> {
    let _running = (method == "tools/call").then(|| metrics.tool_running());
    // A cheap handle for the log line of the rare panic (one reference count).
    let about = ctx.clone();
    let outcome = AssertUnwindSafe(dispatch(features, ctx, method, params))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| {
            let (session, request_id) = (about.session_id(), about.request_id());
            warn_limited!(?session, %method, %request_id, "handler panicked");
            Err(RpcError::internal(format!(
                "the handler of {method} failed unexpectedly"
            )))
        });
    telemetry::record_outcome(&outcome);
    outcome
}
