//! One audit line: its fields, in the order they are written, and how a handler's result
//! becomes its `outcome`.

use std::sync::Arc;
use std::time::SystemTime;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::jsonrpc::RpcError;
use crate::protocol::Answer;

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
    pub fn of(result: &Result<Answer, RpcError>) -> Outcome {
        match result {
            Ok(answer) if answer.is_error() => Outcome::ToolError,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(arguments: Value) -> Line {
        Line {
            time: SystemTime::UNIX_EPOCH,
            node: Arc::from("n1"),
            principal: "ann".into(),
            session: None,
            method: "tools/call".into(),
            name: Some("echo".into()),
            arguments,
            outcome: Outcome::Error(-32602),
            duration_ms: 1.5,
            trace_id: None,
        }
    }

    #[test]
    fn a_line_over_the_cap_loses_its_arguments_and_stays_one_json_line() {
        let small = line(serde_json::json!({ "text": "hi" }))
            .encode(1024)
            .expect("fits");
        let text = String::from_utf8(small).expect("UTF-8");
        assert!(text.ends_with('\n') && text.matches('\n').count() == 1);
        let parsed: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(parsed["time"], "1970-01-01T00:00:00.000Z");
        assert_eq!(parsed["outcome"], -32602);
        let big = line(serde_json::json!({ "text": "x".repeat(5000) }))
            .encode(1024)
            .expect("fits without its arguments");
        let parsed: Value = serde_json::from_slice(&big).expect("JSON");
        assert_eq!(parsed["arguments"], "[too large]");
        assert!(big.len() <= 1024);
    }
}
