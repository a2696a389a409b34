//! Byte budgets: replay logs and task results are bounded by bytes, not only by counts, so a
//! few sessions or tasks of large results cannot fill the memory. Each test reads resident
//! memory (`VmRSS`) of the process holding the data: the binary for replay logs, this test
//! process for the library server's tasks.

mod common;

use std::time::{Duration, Instant};

use common::in_process::InProcess;
use common::modern::Modern;
use common::{Client, TempDir, TestServer, rss_kib};
use mcp_actor::config::Config;
use mcp_actor::{CallToolResult, RequestContext, Server, TaskSupport, Tool};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

const MIB: u64 = 1024;

/// One test at a time: the replay test's client reads its large replies in this process,
/// which would count in the task test's resident memory.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every reply is SSE, so every call's stream is logged and kept for resumption; each call
/// of `big` answers with 3 MB of text.
const REPLAY_TOML: &str = r#"
[http]
response_mode = "sse"

[replay]
max_bytes_per_session = 4194304
max_bytes = 8388608

[[tools]]
name = "big"
description = "Prints 3 MB"
command = ["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a"]
max_output_bytes = 4000000
"#;

#[tokio::test]
async fn replay_logs_stay_within_their_byte_budgets() {
    let _serial = SERIAL.lock().await;
    let dir = TempDir::new("budgets-replay");
    let path = dir.write("config.toml", REPLAY_TOML);
    let server = TestServer::with_config_file(&path, &[]);
    let client = server.bounded_client(Duration::from_secs(15));
    let mut sessions = Vec::new();
    for _ in 0..4 {
        sessions.push(client.connect().await);
    }
    let text = sessions[0].call_tool_text(json!(0), "big", json!({})).await;
    assert_eq!(text.len(), 3_000_000);
    let baseline = rss_kib(server.pid());
    for (i, session) in sessions.iter().enumerate() {
        for call in 1..=6 {
            let id = json!(i * 100 + call);
            let reply = session
                .request(id.clone(), "tools/call", json!({ "name": "big" }))
                .await;
            assert!(reply.response(&id).is_some(), "call {id} answered");
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = rss_kib(server.pid()).saturating_sub(baseline);
    println!(
        "replay: 4 sessions x 7 calls of 3 MB: RSS grew {} MiB",
        grown / MIB
    );
    assert!(
        grown < 48 * MIB,
        "replay logs held {} MiB past [replay] max_bytes (8 MiB)",
        grown / MIB
    );
    // The first call's stream was dropped for the budget: resuming it is outside the window.
    let resumed = sessions[0].get(Some("1.0")).await;
    assert_eq!(resumed.status(), StatusCode::GONE);
    let body = resumed.text().await.unwrap_or_default();
    assert!(body.contains("max_bytes"), "{body}");
}

const TASK_TEXT_BYTES: usize = 2 * 1024 * 1024;
const TASKS: usize = 16;

#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// The library server with a task tool answering 2 MiB of text.
async fn task_server(config: Config) -> InProcess {
    let big = Tool::typed(
        "big",
        "Answers 2 MiB",
        |_ctx: RequestContext, _: NoArgs| async move {
            Ok(CallToolResult::text("t".repeat(TASK_TEXT_BYTES)))
        },
    )
    .expect("tool")
    .with_task_support(TaskSupport::Optional);
    InProcess::start(Server::builder().config(config).add_tool(big)).await
}

/// A 2026-07-28 request declaring the tasks extension; its JSON-RPC reply.
async fn send(client: &Client, method: &str, params: Value) -> Value {
    let caps = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let mut request = Modern::request(1, method).caps(caps);
    if let Some(name) = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
    {
        request = request.set_header("Mcp-Name", name);
    }
    for (key, value) in params.as_object().into_iter().flatten() {
        request = request.param(key, value.clone());
    }
    let reply = request.reply(client).await;
    assert_eq!(reply.status, StatusCode::OK, "{method}");
    reply.body.unwrap_or_default()
}

async fn settled(client: &Client, task_id: &str) -> Value {
    let start = Instant::now();
    loop {
        let task = send(client, "tasks/get", json!({ "taskId": task_id })).await;
        if task["result"]["status"] != "working" {
            return task["result"].clone();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{task}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn task_results_stay_within_tasks_max_bytes() {
    let _serial = SERIAL.lock().await;
    let mut config = Config::default();
    config.tasks.max_bytes = 4 * 1024 * 1024;
    let server = task_server(config).await;
    let client = server.client();
    let pid = std::process::id();
    let baseline = rss_kib(pid);
    let mut ids = Vec::new();
    for _ in 0..TASKS {
        let created = send(
            &client,
            "tools/call",
            json!({ "name": "big", "arguments": {} }),
        )
        .await;
        let id = created["result"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a task: {created}"))
            .to_string();
        assert_eq!(settled(&client, &id).await["status"], "completed");
        ids.push(id);
    }
    let grown = rss_kib(pid).saturating_sub(baseline);
    println!(
        "tasks: {TASKS} results of 2 MiB: RSS grew {} MiB",
        grown / MIB
    );
    assert!(
        grown < 24 * MIB,
        "task results held {} MiB past tasks.max_bytes (4 MiB)",
        grown / MIB
    );
    let first = settled(&client, &ids[0]).await;
    let message = first["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("tasks.max_bytes"), "{first}");
    let last = settled(&client, &ids[TASKS - 1]).await;
    assert!(last["result"].is_object(), "the newest result is kept");
}
