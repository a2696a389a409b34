//! What each upstream offers, read once at startup, and the tools that forward to it.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::slot::{Slot, SlotOwner};
use super::wire::{Ignored, UpstreamError};
use super::{Busy, Inner, Upstream, connection_for, request_within};
use crate::context::ClientRequestError;
use crate::features::FeatureSet;
use crate::features::tools::{Tool, ToolError};
use crate::protocol::{Answer, object};

/// The most pages of one list the catalog reads: an upstream that pages forever is cut off.
const MAX_PAGES: usize = 100;

/// An upstream's offer as its catalog connection saw it.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Descriptors, as the upstream gave them.
    pub tools: Vec<Value>,
    pub resources: Vec<Value>,
    pub templates: Vec<Value>,
    pub prompts: Vec<Value>,
}

/// Starts `upstream`, lists what it offers, and stops it. It declares every client
/// capability the gateway forwards, as servers offer some tools only to clients that can
/// answer them (elicitation, sampling, roots). An upstream that cannot be read is logged
/// and offers nothing.
pub(super) async fn read(gateway: &Inner, upstream: &Upstream) -> Catalog {
    let owner = SlotOwner {
        closed: CancellationToken::new(),
        children: Arc::new(tokio::sync::Semaphore::new(1)),
    };
    let client = super::forwarding_client();
    let slot = Slot::default();
    let listed = async {
        let conn = slot
            .start_now(gateway, upstream, &client, &owner, Arc::new(Ignored))
            .await?;
        let tools = list_all(&conn, "tools/list", "tools", upstream).await?;
        Ok::<_, UpstreamError>(Catalog {
            tools,
            resources: optional(&conn, "resources/list", "resources", upstream).await?,
            templates: optional(
                &conn,
                "resources/templates/list",
                "resourceTemplates",
                upstream,
            )
            .await?,
            prompts: optional(&conn, "prompts/list", "prompts", upstream).await?,
        })
    };
    let catalog = match listed.await {
        Ok(catalog) => {
            tracing::info!(
                upstream = %upstream.name,
                tools = catalog.tools.len(),
                resources = catalog.resources.len(),
                templates = catalog.templates.len(),
                prompts = catalog.prompts.len(),
                "upstream catalog read"
            );
            catalog
        }
        Err(e) => {
            tracing::error!(upstream = %upstream.name, error = %e, "upstream catalog could not be read; it serves nothing until a restart");
            Catalog::default()
        }
    };
    owner.closed.cancel();
    catalog
}

/// A list the upstream may not serve: method not found (or any refusal) is an empty list.
async fn optional(
    conn: &super::wire::Connection,
    method: &str,
    field: &str,
    upstream: &Upstream,
) -> Result<Vec<Value>, UpstreamError> {
    match list_all(conn, method, field, upstream).await {
        Err(UpstreamError::Rpc(_)) => Ok(Vec::new()),
        other => other,
    }
}

/// Every page of a list.
async fn list_all(
    conn: &super::wire::Connection,
    method: &str,
    field: &str,
    upstream: &Upstream,
) -> Result<Vec<Value>, UpstreamError> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let page = conn
            .request(method, params, None, upstream.startup_timeout)
            .await?;
        if let Some(list) = page.get(field).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) if !next.is_empty() => cursor = Some(next.to_string()),
            _ => return Ok(items),
        }
    }
    tracing::warn!(upstream = %upstream.name, method, "upstream list cut off after {MAX_PAGES} pages");
    Ok(items)
}

/// The tools of every upstream, renamed with their prefix and filtered by `tools`.
pub(super) fn tools(gateway: &Arc<Inner>) -> Vec<Tool> {
    let mut tools = Vec::new();
    for (upstream, catalog) in gateway
        .upstreams
        .iter()
        .zip(gateway.catalogs.iter().map(|c| c.load_full()))
    {
        for descriptor in &catalog.tools {
            let Some(name) = descriptor.get("name").and_then(Value::as_str) else {
                continue;
            };
            if !upstream.tools.admits(name) {
                continue;
            }
            let mut served = descriptor.clone();
            served["name"] = json!(format!("{}{name}", upstream.prefix));
            let (gateway, index, name) = (Arc::clone(gateway), upstream.index, name.to_string());
            let tool = Tool::forwarding(served, move |ctx, arguments| {
                let (gateway, name) = (Arc::clone(&gateway), name.clone());
                Box::pin(async move { call(&gateway, index, &name, ctx, arguments).await })
            });
            match tool {
                Ok(tool) => tools.push(tool),
                Err(e) => {
                    tracing::warn!(upstream = %upstream.name, error = %e, "upstream tool left out")
                }
            }
        }
    }
    tools
}

/// Served names and URIs that are already taken (`taken`) or that two upstreams share:
/// each as (the upstream's key, the message).
pub(super) fn clashes(gateway: &Inner, taken: &FeatureSet) -> Vec<(String, String)> {
    let mut owner: HashMap<(&str, String), Option<usize>> = HashMap::new();
    for tool in &taken.tools {
        owner.insert(("tool", tool.name().to_string()), None);
    }
    for prompt in &taken.prompts {
        owner.insert(("prompt", prompt.name.clone()), None);
    }
    for resource in &taken.resources {
        owner.insert(("resource", resource.uri.clone()), None);
    }
    let mut errors = Vec::new();
    for (upstream, catalog) in gateway
        .upstreams
        .iter()
        .zip(gateway.catalogs.iter().map(|c| c.load_full()))
    {
        let key = if upstream.prefix.is_empty() {
            "prefix"
        } else {
            "name"
        };
        let key = format!("upstreams[{}].{key}", upstream.index);
        let named = |list: &[Value], field: &str| -> Vec<String> {
            list.iter()
                .filter_map(|d| d.get(field).and_then(Value::as_str).map(String::from))
                .collect()
        };
        let tools = named(&catalog.tools, "name")
            .into_iter()
            .filter(|n| upstream.tools.admits(n))
            .map(|n| ("tool", format!("{}{n}", upstream.prefix)));
        let prompts = named(&catalog.prompts, "name")
            .into_iter()
            .map(|n| ("prompt", format!("{}{n}", upstream.prefix)));
        let uris = named(&catalog.resources, "uri")
            .into_iter()
            .map(|u| ("resource", u));
        for (kind, served) in tools.chain(prompts).chain(uris).collect::<Vec<_>>() {
            match owner.insert((kind, served.clone()), Some(upstream.index)) {
                Some(None) => errors.push((key.clone(), format!(
                    "the upstream's {kind} {served:?} clashes with one this configuration serves; set `prefix`{}",
                    if kind == "tool" { ", or leave it out with `tools.deny`" } else { "" }
                ))),
                Some(Some(other)) if other != upstream.index => errors.push((key.clone(), format!(
                    "the upstream's {kind} {served:?} clashes with one of upstreams[{other}]; give one of them another `prefix`"
                ))),
                _ => {}
            }
        }
    }
    errors
}

/// The upstream that serves `uri`: the one whose catalog lists it, else the first whose
/// resource template matches it.
pub(super) fn owner_of(gateway: &Inner, uri: &str) -> Option<usize> {
    let catalogs: Vec<Arc<Catalog>> = gateway.catalogs.iter().map(|c| c.load_full()).collect();
    let listed = catalogs.iter().position(|c| {
        c.resources
            .iter()
            .any(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
    });
    listed.or_else(|| {
        catalogs.iter().position(|c| {
            c.templates.iter().any(|t| {
                t.get("uriTemplate")
                    .and_then(Value::as_str)
                    .and_then(|p| crate::features::resources::UriTemplate::parse(p).ok())
                    .is_some_and(|template| template.matches(uri).is_some())
            })
        })
    })
}

/// Forwards one `tools/call`.
async fn call(
    gateway: &Arc<Inner>,
    index: usize,
    name: &str,
    ctx: crate::context::RequestContext,
    arguments: Value,
) -> Result<Answer, ToolError> {
    let upstream = &gateway.upstreams[index];
    let failed = |e: UpstreamError| match e {
        UpstreamError::InputRequired => ToolError::Client(ClientRequestError::InputRequired),
        UpstreamError::Rpc(error) => ToolError::msg(format!(
            "upstream {} refused the call: {} (code {})",
            upstream.name, error.message, error.code
        )),
        UpstreamError::Closed(tail) => ToolError::msg(format!(
            "upstream {} ended during the call{tail}",
            upstream.name
        )),
        other => ToolError::msg(format!("upstream {}: {other}", upstream.name)),
    };
    let (conn, scope, left) = connection_for(gateway, upstream, &ctx)
        .await
        .map_err(failed)?;
    let _busy = scope.as_deref().map(Busy::new);
    let params = object([("name", Value::from(name)), ("arguments", arguments)]);
    // The result goes to the client as the upstream wrote it (`Answer::text`).
    request_within(&conn, upstream, "tools/call", params, &ctx, left)
        .await
        .map(Answer::text)
        .map_err(failed)
}
