//! What of a request the audit line shows: its name and its arguments, with every secret
//! replaced by `"[redacted]"` before the line is formed.
//!
//! A tool argument is secret when its input-schema property says so (`writeOnly: true`,
//! JSON Schema validation §9.4, or `format: "password"`, the convention OpenAPI and form
//! builders use), at the top level and in nested objects and arrays; any key named in
//! `[audit] redact` is secret at any depth, in tool and prompt arguments alike.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::features::Features;
use crate::protocol::method::FeatureMethod;

pub(super) const REDACTED: &str = "[redacted]";

/// The name (tool, prompt or URI) and the redacted arguments of an audited request.
pub(super) fn subject(
    features: &Features,
    method: FeatureMethod,
    params: Option<&Value>,
    keys: &BTreeSet<String>,
) -> (Option<String>, Value) {
    let field = |key: &str| params.and_then(|p| p.get(key));
    let text = |key: &str| field(key).and_then(Value::as_str).map(str::to_string);
    match method {
        FeatureMethod::ResourcesRead => (text("uri"), Value::Null),
        FeatureMethod::ToolsCall => {
            let name = text("name");
            let tool = name.as_deref().and_then(|n| features.tool(n));
            let schema = tool.and_then(|t| t.descriptor().get("inputSchema"));
            let arguments = field("arguments").map_or(Value::Null, |a| redacted(a, schema, keys));
            (name, arguments)
        }
        _ => {
            let arguments = field("arguments").map_or(Value::Null, |a| redacted(a, None, keys));
            (text("name"), arguments)
        }
    }
}

/// Whether a schema marks its value as a secret.
fn secret(schema: &Value) -> bool {
    schema.get("writeOnly").and_then(Value::as_bool) == Some(true)
        || schema.get("format").and_then(Value::as_str) == Some("password")
}

/// A copy of `value` with every secret replaced. `schema` describes `value`, when known.
fn redacted(value: &Value, schema: Option<&Value>, keys: &BTreeSet<String>) -> Value {
    if schema.is_some_and(secret) {
        return Value::from(REDACTED);
    }
    match value {
        Value::Object(map) => {
            let properties = schema.and_then(|s| s.get("properties"));
            let copy = map.iter().map(|(key, v)| {
                let property = properties.and_then(|p| p.get(key));
                let v = if keys.contains(key) {
                    Value::from(REDACTED)
                } else {
                    redacted(v, property, keys)
                };
                (key.clone(), v)
            });
            Value::Object(copy.collect())
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            Value::Array(
                items
                    .iter()
                    .map(|v| redacted(v, item_schema, keys))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_at_every_depth() {
        let schema = json!({"type": "object", "properties": {
            "user": {"type": "string"},
            "password": {"type": "string", "writeOnly": true},
            "db": {"type": "object", "properties": {"pin": {"type": "string", "format": "password"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"key": {"writeOnly": true}}}}
        }});
        let args = json!({"user": "ann", "password": "hunter2", "db": {"pin": "1234", "host": "h"},
                          "list": [{"key": "k1", "x": 1}], "api_token": "t", "nested": {"api_token": "t2"}});
        let keys = BTreeSet::from(["api_token".to_string()]);
        assert_eq!(
            redacted(&args, Some(&schema), &keys),
            json!({"user": "ann", "password": REDACTED, "db": {"pin": REDACTED, "host": "h"},
                   "list": [{"key": REDACTED, "x": 1}], "api_token": REDACTED,
                   "nested": {"api_token": REDACTED}})
        );
    }
}
