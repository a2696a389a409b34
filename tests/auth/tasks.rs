//! Tasks are bound to the principal that created them (spec `basic/authorization`: "when
//! there is an authorization context, tasks MUST be bound to it"): another principal's
//! `tasks/get`, `tasks/update` and `tasks/cancel` get what an unknown task id gets, and
//! change nothing.
//!
//! No builtin tool of the binary runs as a task, so this server runs in process with a
//! task tool of its own, configured from TOML like the binary. The principals are static
//! tokens read from files, which needs no JWKS.

use std::time::Duration;

use mcp_actor::{CallToolResult, Config, RequestContext, Server, TaskSupport, Tool};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

use super::fixture::{ISSUER, RESOURCE, bearer_client};
use crate::common::modern::Modern;
use crate::common::{Client, TempDir, in_process::InProcess};

/// The extension's key in capabilities, written out from SEP-2663.
const EXTENSION: &str = "io.modelcontextprotocol/tasks";

#[derive(Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    millis: u64,
}

fn slow_tool() -> Tool {
    Tool::typed(
        "slow",
        "Sleeps, then reports",
        |_ctx: RequestContext, args: SlowArgs| async move {
            tokio::time::sleep(Duration::from_millis(args.millis)).await;
            Ok(CallToolResult::text("done"))
        },
    )
    .expect("tool")
    .with_task_support(TaskSupport::Optional)
}

/// `method` with `params` on the stateless path, declaring the tasks extension; the status
/// and the JSON body with `task_id` replaced by `<task>` (an error may name the id).
async fn send(client: &Client, method: &str, params: Value) -> (StatusCode, String) {
    let caps = json!({ "extensions": { EXTENSION: {} } });
    let mut request = Modern::request(1, method).caps(caps);
    let task_id = params["taskId"].as_str().map(str::to_string);
    if let Some(name) = params["name"].as_str().or(task_id.as_deref()) {
        request = request.set_header("Mcp-Name", name);
    }
    for (key, value) in params.as_object().into_iter().flatten() {
        request = request.param(key, value.clone());
    }
    let resp = request.send(client).await;
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    let text = match task_id {
        Some(id) => text.replace(&id, "<task>"),
        None => text,
    };
    (status, text)
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn another_principals_task_is_not_found_and_left_alone() {
    let dir = TempDir::new("auth-tasks");
    let alice_file = dir.write("alice.token", "alice-task-token-71c2\n");
    let bob_file = dir.write("bob.token", "bob-task-token-0e9d\n");
    let toml = format!(
        "[auth]\nresource = {RESOURCE:?}\nauthorization_servers = [{ISSUER:?}]\n\
         [[auth.tokens]]\nprincipal = \"alice\"\ntoken_file = {:?}\n\
         [[auth.tokens]]\nprincipal = \"bob\"\ntoken_file = {:?}\n",
        alice_file.display().to_string(),
        bob_file.display().to_string(),
    );
    let config = Config::parse(&toml, "auth-tasks.toml").expect("an [auth] configuration");
    let server = InProcess::start(Server::builder().config(config).add_tool(slow_tool())).await;
    let alice = bearer_client(&server.url, "alice-task-token-71c2");
    let bob = bearer_client(&server.url, "bob-task-token-0e9d");
    // Unauthenticated, the in-process server refuses too: it is the same server.
    let (status, body) = send(&server.client(), "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    let (status, created) = send(
        &alice,
        "tools/call",
        json!({ "name": "slow", "arguments": { "millis": 60_000 } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let created = json_of(&created);
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();

    for (method, extra) in [
        ("tasks/get", json!({})),
        ("tasks/update", json!({ "inputResponses": {} })),
        ("tasks/cancel", json!({})),
    ] {
        let with_id = |id: &str| {
            let mut params = extra.clone();
            params["taskId"] = json!(id);
            params
        };
        let foreign = send(&bob, method, with_id(&task_id)).await;
        let unknown = send(&bob, method, with_id("no-such-task")).await;
        assert_ne!(unknown.0, StatusCode::OK, "{method}: {}", unknown.1);
        assert!(json_of(&unknown.1).get("error").is_some(), "{}", unknown.1);
        assert_eq!(
            foreign, unknown,
            "{method}: alice's task is answered to bob as an unknown one"
        );
    }

    // Bob's cancel changed nothing; alice still sees and controls her task.
    let (status, task) = send(&alice, "tasks/get", json!({ "taskId": task_id })).await;
    assert_eq!(status, StatusCode::OK, "{task}");
    assert_eq!(json_of(&task)["result"]["status"], "working", "{task}");
    let (status, ack) = send(&alice, "tasks/cancel", json!({ "taskId": task_id })).await;
    assert_eq!(status, StatusCode::OK, "{ack}");
    let (_, task) = send(&alice, "tasks/get", json!({ "taskId": task_id })).await;
    assert_eq!(json_of(&task)["result"]["status"], "cancelled", "{task}");
}
