//! One audit line: its fields, in the order they are written, and how a handler's result
//! becomes its `outcome`.

use std::sync::Arc;
use std::time::SystemTime;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::jsonrpc::RpcError;

#[derive(Serialize)]
pub(super) struct Line {
    #[serde(serialize_with = "rfc3339")]
    pub time: SystemTime,
    pub node: Arc<str>,
    pub principal: String,
    pub session: Option<String>,
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub name: Option<String>,
    pub arguments: Value,
    pub outcome: Outcome,
    pub duration_ms: f64,
    pub trace_id: Option<String>,
}

/// `ok`, `tool_error` (a result with `isError: true`), `cancelled` (the handler never
/// finished: the request was cancelled or its session ended), or the JSON-RPC error code.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Outcome {
    Ok,
    ToolError,
    Cancelled,
    Error(i64),
}

impl Outcome {
    pub fn of(result: &Result<Value, RpcError>) -> Outcome {
        match result {
            Ok(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
            Err(e) => Outcome::Error(e.code),
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Ok => s.serialize_str("ok"),
            Outcome::ToolError => s.serialize_str("tool_error"),
            Outcome::Cancelled => s.serialize_str("cancelled"),
            Outcome::Error(code) => s.serialize_i64(*code),
        }
    }
}

fn rfc3339<S: Serializer>(time: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_millis(*time))
}

impl Line {
    /// The line as JSON with its newline, at most `max` bytes: a longer one has its
    /// arguments, then its name, replaced by `"[too large]"`. `None` only when even that
    /// does not fit.
    pub fn encode(&mut self, max: usize) -> Option<Vec<u8>> {
        const TOO_LARGE: &str = "[too large]";
        for step in 0..3 {
            match step {
                1 => self.arguments = Value::from(TOO_LARGE),
                2 => self.name = Some(TOO_LARGE.to_string()),
                _ => {}
            }
            let mut bytes = serde_json::to_vec(self).ok()?;
            if bytes.len() < max {
                bytes.push(b'\n');
                return Some(bytes);
            }
        }
        None
    }
}
