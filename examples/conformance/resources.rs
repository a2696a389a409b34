//! The resources the resource scenarios read and subscribe to, and the URI template whose
//! variable must show up in what it returns.

use mcp_actor::protocol::Arguments;
use mcp_actor::{
    RequestContext, Resource, ResourceContents, ResourceError, ResourceTemplate, ServerBuilder,
};
use serde_json::json;

use crate::fixtures::{PNG_BASE64, PNG_MIME};

const TEMPLATE: &str = "test://template/{id}/data";

/// Adds the static, binary and watched resources and the `test://template/{id}/data`
/// template to `builder`.
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    let builder =
        builder
            .resource(
                Resource::new(
                    "test://static-text",
                    "Static Text Resource",
                    Some("text/plain"),
                    |_ctx, uri| async move {
                        Ok(vec![ResourceContents::text(
                            uri,
                            "text/plain",
                            "This is the content of the static text resource.",
                        )])
                    },
                )
                .with("description", json!("A static text resource for testing")),
            )
            .resource(
                Resource::new(
                    "test://static-binary",
                    "Static Binary Resource",
                    Some(PNG_MIME),
                    |_ctx, uri| async move {
                        Ok(vec![ResourceContents::blob(uri, PNG_MIME, PNG_BASE64)])
                    },
                )
                .with(
                    "description",
                    json!("A static binary resource (image) for testing"),
                ),
            )
            // Subscriptions are tracked by the session; the resource itself only needs to exist.
            .resource(
                Resource::new(
                    "test://watched-resource",
                    "Watched Resource",
                    Some("text/plain"),
                    |_ctx, uri| async move {
                        Ok(vec![ResourceContents::text(
                            uri,
                            "text/plain",
                            "Watched resource content",
                        )])
                    },
                )
                .with("description", json!("A resource clients can subscribe to")),
            );
    match ResourceTemplate::new(
        TEMPLATE,
        "Template Resource",
        Some("application/json"),
        read_template,
    ) {
        Ok(template) => builder.resource_template(template.with(
            "description",
            json!("A resource template with parameter substitution"),
        )),
        Err(e) => builder.error(e.to_string()),
    }
}

/// `test://template/{id}/data`: a JSON document that names the `id` it was read with.
async fn read_template(
    _ctx: RequestContext,
    uri: String,
    args: Arguments,
) -> Result<Vec<ResourceContents>, ResourceError> {
    let id = args
        .get("id")
        .ok_or_else(|| ResourceError::InvalidUri(format!("{uri} does not match {TEMPLATE}")))?;
    let body = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
    Ok(vec![ResourceContents::text(
        uri,
        "application/json",
        body.to_string(),
    )])
}
