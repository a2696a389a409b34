//! What the server says about itself: `serverInfo`, capabilities and instructions, built
//! once from `[server]`. Sessions answer `initialize` with it; the 2026-07-28 path answers
//! `server/discover` with it and stamps `serverInfo` on every result.

use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::config::Config;

/// The `_meta` member under which every 2026-07-28 result carries `serverInfo`.
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

#[derive(Debug)]
pub struct ServerIdentity {
    /// The initialize result without `protocolVersion`.
    initialize_result: Value,
    /// `{"io.modelcontextprotocol/serverInfo": serverInfo}`, serialized once.
    server_info_meta: Box<RawValue>,
}

impl ServerIdentity {
    pub fn new(config: &Config) -> Self {
        let s = &config.server;
        let mut server_info = json!({ "name": s.name, "version": s.version });
        if let Some(title) = &s.title {
            server_info["title"] = json!(title);
        }
        if let Some(description) = &s.description {
            server_info["description"] = json!(description);
        }
        let meta = json!({ SERVER_INFO_META: server_info });
        // invariant: a `Value` always serializes; the `null` fallback is never taken.
        let server_info_meta =
            serde_json::value::to_raw_value(&meta).unwrap_or_else(|_| RawValue::NULL.to_owned());
        let mut result = json!({
            "capabilities": {
                "tools": { "listChanged": true },
                "resources": { "subscribe": true, "listChanged": true },
                "prompts": { "listChanged": true },
                "logging": {},
                "completions": {},
            },
            "serverInfo": server_info,
        });
        if let Some(instructions) = &s.instructions {
            result["instructions"] = json!(instructions);
        }
        ServerIdentity {
            initialize_result: result,
            server_info_meta,
        }
    }

    /// The `initialize` result for a session speaking `version`.
    pub fn initialize_result(&self, version: &str) -> Value {
        let mut result = self.initialize_result.clone();
        result["protocolVersion"] = json!(version);
        result
    }

    pub fn capabilities(&self) -> &Value {
        &self.initialize_result["capabilities"]
    }

    pub fn server_info(&self) -> &Value {
        &self.initialize_result["serverInfo"]
    }

    /// The `_meta` object of a 2026-07-28 result that has none of its own, serialized.
    pub fn server_info_meta(&self) -> &RawValue {
        &self.server_info_meta
    }

    pub fn instructions(&self) -> Option<&Value> {
        self.initialize_result.get("instructions")
    }
}
