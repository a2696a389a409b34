//! Descriptor fields every configured tool may carry, whatever its kind: `title`,
//! `annotations`, `icons`, `execution.taskSupport` and `outputSchema` (spec 2025-11-25 `server/tools.mdx`).

use serde_json::{Map, Value, json};

use super::ProviderError;
use crate::config::{IconConfig, ToolAnnotations, ToolConfig};
use crate::features::tools::Tool;

/// Adds the entry's metadata to `tool`'s descriptor.
pub(crate) fn apply(
    mut tool: Tool,
    entry: &ToolConfig,
    key: &str,
) -> Result<Tool, Vec<ProviderError>> {
    if let Some(title) = &entry.title {
        tool = tool.with("title", json!(title));
    }
    if let Some(annotations) = &entry.annotations {
        tool = tool.with("annotations", annotations_json(annotations));
    }
    if !entry.icons.is_empty() {
        tool = tool.with("icons", icons_json(&entry.icons));
    }
    if let Some(support) = entry.task_support {
        tool = tool.with("execution", json!({ "taskSupport": support }));
    }
    if let Some(schema) = &entry.output_schema {
        check_output_schema(schema).map_err(|msg| vec![(format!("{key}.output_schema"), msg)])?;
        tool = tool.with("outputSchema", schema.clone());
    }
    Ok(tool)
}

fn check_output_schema(schema: &Value) -> Result<(), String> {
    if schema.get("type") != Some(&json!("object")) {
        return Err("must be an object schema: { type = \"object\", properties = { ... } }".into());
    }
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| format!("is not a valid JSON Schema: {e}"))
}

fn annotations_json(a: &ToolAnnotations) -> Value {
    let mut out = Map::new();
    let fields = [
        ("readOnlyHint", a.read_only_hint),
        ("destructiveHint", a.destructive_hint),
        ("idempotentHint", a.idempotent_hint),
        ("openWorldHint", a.open_world_hint),
    ];
    if let Some(title) = &a.title {
        out.insert("title".into(), json!(title));
    }
    for (name, value) in fields {
        if let Some(v) = value {
            out.insert(name.into(), json!(v));
        }
    }
    Value::Object(out)
}

/// Icons as the protocol's `Icon` objects; shared with prompts.
pub(crate) fn icons_json(icons: &[IconConfig]) -> Value {
    Value::Array(
        icons
            .iter()
            .map(|icon| {
                let mut out = json!({ "src": icon.src });
                if let Some(mime) = &icon.mime_type {
                    out["mimeType"] = json!(mime);
                }
                if !icon.sizes.is_empty() {
                    out["sizes"] = json!(icon.sizes);
                }
                if let Some(theme) = &icon.theme {
                    out["theme"] = json!(theme);
                }
                out
            })
            .collect(),
    )
}
