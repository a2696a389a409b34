//! The upstreams' resources, resource templates and prompts, served here and forwarded.
//!
//! Prompts are renamed with the upstream's prefix, like tools. Resources keep their URIs,
//! which are the upstream's addresses (a client may have them from a tool result): their
//! `name` takes the prefix, and a read goes to the upstream whose catalog lists the URI, or
//! whose template matches it. A URI two sources claim is a configuration error.

use std::sync::Arc;

use serde_json::{Value, json};

use super::wire::UpstreamError;
use super::{Busy, Inner, Upstream, connection_for, request_within};
use crate::context::RequestContext;
use crate::features::prompts::Prompt;
use crate::features::resources::{Resource, ResourceError, ResourceTemplate};
use crate::protocol::{GetPromptResult, PromptArgument, ResourceContents};

/// Sends `method` to upstream `index` for the client request of `ctx`.
async fn forward(
    gateway: &Arc<Inner>,
    index: usize,
    ctx: &RequestContext,
    method: &str,
    params: Value,
) -> Result<Value, UpstreamError> {
    let upstream = &gateway.upstreams[index];
    let (conn, scope, left) = connection_for(gateway, upstream, ctx).await?;
    let _busy = scope.as_deref().map(Busy::new);
    let text = request_within(&conn, upstream, method, params, ctx, left).await?;
    super::wire::read_result(method, &text)
}

fn prefixed(upstream: &Upstream, descriptor: &Value) -> Value {
    let mut served = descriptor.clone();
    let name = descriptor
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    served["name"] = json!(format!("{}{name}", upstream.prefix));
    served
}

async fn read(
    gateway: Arc<Inner>,
    index: usize,
    ctx: RequestContext,
    uri: String,
) -> Result<Vec<ResourceContents>, ResourceError> {
    let name = &gateway.upstreams[index].name;
    let result = forward(
        &gateway,
        index,
        &ctx,
        "resources/read",
        json!({ "uri": uri }),
    )
    .await
    .map_err(|e| match e {
        UpstreamError::Rpc(error) if error.code == crate::jsonrpc::codes::RESOURCE_NOT_FOUND => {
            ResourceError::NotFound(uri.clone())
        }
        other => ResourceError::Failed(format!("upstream {name}: {other}")),
    })?;
    serde_json::from_value(result.get("contents").cloned().unwrap_or(Value::Null)).map_err(|e| {
        ResourceError::Failed(format!("upstream {name} answered a malformed read: {e}"))
    })
}

/// The resources and templates of every upstream.
pub(super) fn resources(gateway: &Arc<Inner>) -> (Vec<Resource>, Vec<ResourceTemplate>) {
    let (mut resources, mut templates) = (Vec::new(), Vec::new());
    for (upstream, catalog) in gateway
        .upstreams
        .iter()
        .zip(gateway.catalogs.iter().map(|c| c.load_full()))
    {
        let index = upstream.index;
        for descriptor in &catalog.resources {
            let Some(uri) = descriptor.get("uri").and_then(Value::as_str) else {
                continue;
            };
            let gw = Arc::clone(gateway);
            let mut resource = Resource::new(uri, "", None, move |ctx, uri| {
                read(Arc::clone(&gw), index, ctx, uri)
            });
            resource.descriptor = prefixed(upstream, descriptor);
            resources.push(resource);
        }
        for descriptor in &catalog.templates {
            let Some(pattern) = descriptor.get("uriTemplate").and_then(Value::as_str) else {
                continue;
            };
            let gw = Arc::clone(gateway);
            let template = ResourceTemplate::new(pattern, "", None, move |ctx, uri, _| {
                read(Arc::clone(&gw), index, ctx, uri)
            });
            match template {
                Ok(mut template) => {
                    template.descriptor = prefixed(upstream, descriptor);
                    templates.push(template);
                }
                Err(e) => {
                    tracing::warn!(upstream = %upstream.name, template = pattern, error = %e, "upstream resource template left out")
                }
            }
        }
    }
    (resources, templates)
}

/// The prompts of every upstream, renamed with the prefix.
pub(super) fn prompts(gateway: &Arc<Inner>) -> Vec<Prompt> {
    let mut prompts = Vec::new();
    for (upstream, catalog) in gateway
        .upstreams
        .iter()
        .zip(gateway.catalogs.iter().map(|c| c.load_full()))
    {
        for descriptor in &catalog.prompts {
            let Some(name) = descriptor.get("name").and_then(Value::as_str) else {
                continue;
            };
            let arguments: Vec<PromptArgument> = descriptor
                .get("arguments")
                .and_then(|a| serde_json::from_value(a.clone()).ok())
                .unwrap_or_default();
            let (gw, index, original) = (Arc::clone(gateway), upstream.index, name.to_string());
            let served = prefixed(upstream, descriptor);
            let served_name = served["name"].as_str().unwrap_or_default().to_string();
            let mut prompt = Prompt::new(served_name, "", arguments, move |ctx, args| {
                let (gw, original) = (Arc::clone(&gw), original.clone());
                async move {
                    let params = json!({ "name": original, "arguments": args });
                    let upstream = &gw.upstreams[index].name;
                    let result = forward(&gw, index, &ctx, "prompts/get", params)
                        .await
                        .map_err(|e| format!("upstream {upstream}: {e}"))?;
                    serde_json::from_value::<GetPromptResult>(result).map_err(|e| {
                        format!("upstream {upstream} answered a malformed prompt: {e}")
                    })
                }
            });
            prompt.descriptor = served;
            prompts.push(prompt);
        }
    }
    prompts
}
