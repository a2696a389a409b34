//! The client side of the tasks extension (SEP-2663) for the tests that drive it over
//! HTTP: a `tools/call` that declares the extension, `tasks/get`, `tasks/update` and
//! `tasks/cancel` with the `Mcp-Name: <taskId>` header a load balancer routes on, and a
//! poll loop that counts its polls. Shared by `tests/tasks_from_toml.rs` and the cluster's
//! task scenarios.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::Client;
use crate::common::modern::Modern;

/// The extension's key in capabilities, written out from SEP-2663.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How often a poll loop asks; below the servers' `pollIntervalMs`, to poll hard.
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// `request` declaring the extension in its client capabilities.
pub fn declaring_tasks(request: Modern) -> Modern {
    request.caps(json!({ "extensions": { EXTENSION: {} } }))
}

/// A `tools/call` of `tool` that may become a task.
pub fn call(id: u64, tool: &str, arguments: Value) -> Modern {
    declaring_tasks(Modern::call(id, tool, arguments))
}

/// `tasks/get`, `tasks/update` or `tasks/cancel` of `task_id`, named in `Mcp-Name` too.
pub fn about(id: u64, method: &str, task_id: &str) -> Modern {
    declaring_tasks(Modern::request(id, method))
        .param("taskId", json!(task_id))
        .set_header("Mcp-Name", task_id)
}

/// What one request answered: the HTTP status and the JSON-RPC response (or the error
/// text when there was no JSON response).
pub async fn exchange(client: &Client, request: &Modern) -> (u16, Result<Value, String>) {
    let response = match tokio::time::timeout(Duration::from_secs(20), request.send(client)).await {
        Ok(response) => response,
        Err(_) => return (0, Err(format!("{} timed out", request.method))),
    };
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    // A JSON body, or the last data line of an SSE one.
    let json = serde_json::from_str::<Value>(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .next_back()
    });
    match json {
        Some(body) if body.get("result").is_some() => (status, Ok(body["result"].clone())),
        Some(body) => (status, Err(body["error"].to_string())),
        None => (status, Err(format!("HTTP {status}: {text:.200}"))),
    }
}

/// Starts a task; its `taskId`.
pub async fn create(
    client: &Client,
    id: u64,
    tool: &str,
    arguments: Value,
) -> Result<String, String> {
    let (status, result) = exchange(client, &call(id, tool, arguments)).await;
    let result = result.map_err(|e| format!("HTTP {status}: {e}"))?;
    if result["resultType"] != "task" {
        return Err(format!("not a task: {result}"));
    }
    result["taskId"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no taskId: {result}"))
}

/// `tasks/get` until the task is `completed`, `failed` or `cancelled`, at most `limit`.
/// Every poll must find the task: the first that does not ends the loop with its answer.
pub async fn poll_until_settled(
    client: &Client,
    task_id: &str,
    limit: Duration,
) -> Result<(Value, u32), String> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut polls = 0;
    loop {
        polls += 1;
        let (status, task) = exchange(client, &about(polls.into(), "tasks/get", task_id)).await;
        let task = task.map_err(|e| format!("poll {polls} of {task_id}: HTTP {status}: {e}"))?;
        if matches!(
            task["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        ) {
            return Ok((task, polls));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "{task_id} still {} after {limit:?}",
                task["status"]
            ));
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// The text of a completed task's result.
pub fn result_text(task: &Value) -> &str {
    task["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// A command tool that sleeps `seconds`, then prints `text`: its result is its own input.
pub const SLOW_ECHO_TOML: &str = r#"
[[tools]]
name = "slow_echo"
description = "Sleeps, then prints its text"
command = ["sh", "-c", "sleep \"$0\"; printf %s \"$1\"", "{seconds}", "{text}"]
task_support = "optional"
input_schema = { type = "object", properties = { seconds = { type = "string", pattern = '^[0-9]+(\.[0-9]+)?$' }, text = { type = "string" } }, required = ["seconds", "text"] }
"#;
