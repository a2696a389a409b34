//! Method routing for the feature methods, shared by every transport path.
//!
//! The session actor answers the methods that read or change session state itself
//! (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`)
//! and hands everything else to [`dispatch`], which runs in a spawned task. Nothing here
//! knows about sessions, so the stateless 2026-07-28 path can call it as is.

use serde_json::Value;

use crate::context::RequestContext;
use crate::features::Features;
use crate::jsonrpc::RpcError;

/// Methods answered by the session layer rather than by [`dispatch`].
pub const SESSION_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

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
        "tools/list" => features.list_tools(params),
        "resources/list" => features.list_resources(params),
        "resources/templates/list" => features.list_resource_templates(params),
        "resources/read" => features.read_resource(ctx, params).await,
        "prompts/list" => features.list_prompts(params),
        "prompts/get" => features.get_prompt(ctx, params).await,
        "completion/complete" => features.complete(params),
        other => Err(RpcError::method_not_found(other)),
    }
}
