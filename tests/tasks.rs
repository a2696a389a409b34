//! The `io.modelcontextprotocol/tasks` extension (SEP-2663) on the stateless 2026-07-28
//! path, over real HTTP on 127.0.0.1: a server built through the library
//! (`Server::builder()` … `serve_with_shutdown`) with tools that take part in tasks.

mod common;

use std::time::{Duration, Instant};

use common::Client;
use common::in_process::InProcess;
use common::modern::Modern;
use common::rpc_codes::{INVALID_PARAMS, MISSING_CLIENT_CAPABILITY, SERVER_ERROR};
use mcp_actor::config::Config;
use mcp_actor::{CallToolResult, RequestContext, Server, ServerBuilder, TaskSupport, Tool};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

/// The extension's key in capabilities, written out from SEP-2663.
const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How long a test waits for a task to reach a status.
const SETTLE: Duration = Duration::from_secs(10);

#[derive(Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    millis: u64,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn with_support(tool: Result<Tool, impl std::fmt::Debug>, support: TaskSupport) -> Tool {
    tool.expect("tool").with_task_support(support)
}

fn builder(config: Config) -> ServerBuilder {
    let sleep = Tool::typed(
        "sleep",
        "Sleeps, then reports",
        |_ctx: RequestContext, args: SleepArgs| async move {
            tokio::time::sleep(Duration::from_millis(args.millis)).await;
            Ok(CallToolResult::text(format!("slept {}ms", args.millis)))
        },
    );
    let required = Tool::typed(
        "only_as_task",
        "Runs only as a task",
        |_ctx: RequestContext, _: NoArgs| async move { Ok(CallToolResult::text("done")) },
    );
    let confirm = Tool::typed(
        "confirm",
        "Asks for confirmation",
        |ctx: RequestContext, _: NoArgs| async move {
            let schema = json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
            let answer = ctx.elicit("Proceed?", schema).await?;
            let ok = answer.content.and_then(|c| c.get("ok").cloned());
            Ok(CallToolResult::text(format!(
                "confirmed: {}",
                ok.unwrap_or(Value::Null)
            )))
        },
    );
    Server::builder()
        .config(config)
        .add_tool(with_support(sleep, TaskSupport::Optional))
        .add_tool(with_support(required, TaskSupport::Required))
        .add_tool(with_support(confirm, TaskSupport::Optional))
}

/// The in-process server with the task tools, and a client speaking to it.
struct TaskServer {
    _server: InProcess,
    client: Client,
}

impl TaskServer {
    async fn start(config: Config) -> TaskServer {
        let server = InProcess::start(builder(config)).await;
        TaskServer {
            client: server.client(),
            _server: server,
        }
    }

    /// One 2026-07-28 request with its envelope and routing headers; `tasks` says whether
    /// the request declares the extension. Returns the HTTP status and the JSON-RPC reply.
    async fn send(&self, method: &str, params: Value, tasks: bool) -> (StatusCode, Value) {
        let extensions = if tasks {
            json!({ EXTENSION: {} })
        } else {
            json!({})
        };
        let mut request =
            Modern::request(1, method).caps(json!({ "elicitation": {}, "extensions": extensions }));
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
        let reply = request.reply(&self.client).await;
        let body = reply
            .body
            .unwrap_or_else(|| panic!("a JSON reply to {method}"));
        (reply.status, body)
    }

    /// A `tools/call`, declaring the extension or not.
    async fn send_call(&self, name: &str, arguments: Value, tasks: bool) -> (StatusCode, Value) {
        let params = json!({ "name": name, "arguments": arguments });
        self.send("tools/call", params, tasks).await
    }

    /// The `result` of a request that must succeed.
    async fn result(&self, method: &str, params: Value) -> Value {
        let (status, reply) = self.send(method, params, true).await;
        assert_eq!(status, StatusCode::OK, "{method}: {reply}");
        reply["result"].clone()
    }

    async fn call(&self, name: &str, arguments: Value) -> Value {
        self.result(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
    }

    async fn get(&self, task_id: &str) -> Value {
        self.result("tasks/get", json!({ "taskId": task_id })).await
    }

    /// Polls `tasks/get` until the task has `status`.
    async fn wait_for(&self, task_id: &str, status: &str) -> Value {
        let start = Instant::now();
        loop {
            let task = self.get(task_id).await;
            if task["status"] == status {
                return task;
            }
            assert!(
                start.elapsed() < SETTLE,
                "task never became {status}: {task}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn task_id(created: &Value) -> String {
    created["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a CreateTaskResult: {created}"))
        .to_string()
}

#[tokio::test]
async fn discover_advertises_the_extension() {
    let server = TaskServer::start(Config::default()).await;
    let discover = server.result("server/discover", json!({})).await;
    assert!(discover["capabilities"]["extensions"][EXTENSION].is_object());
    assert!(discover["capabilities"].get("tasks").is_none());
}

#[tokio::test]
async fn task_call_is_created_working_then_completes_with_its_result() {
    let server = TaskServer::start(Config::default()).await;
    let created = server.call("sleep", json!({ "millis": 300 })).await;
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    for field in ["createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"] {
        assert!(created.get(field).is_some(), "{field} in {created}");
    }
    for absent in ["task", "result", "requestState", "ttl", "pollInterval"] {
        assert!(created.get(absent).is_none(), "{absent} in {created}");
    }
    let id = task_id(&created);

    let working = server.get(&id).await;
    assert_eq!(working["taskId"], id.as_str());
    assert_eq!(working["status"], "working");
    assert_eq!(working["resultType"], "complete");
    assert!(working.get("result").is_none());

    let done = server.wait_for(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 300ms");
    assert!(done.get("error").is_none());
}

#[tokio::test]
async fn cancel_settles_a_running_task_as_cancelled_and_is_idempotent() {
    let server = TaskServer::start(Config::default()).await;
    let id = task_id(&server.call("sleep", json!({ "millis": 60_000 })).await);
    let ack = server.result("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(ack["resultType"], "complete");
    for absent in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack.get(absent).is_none(), "{absent} in the ack {ack}");
    }
    assert_eq!(server.get(&id).await["status"], "cancelled");
    let again = server.result("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(again["resultType"], "complete");
    assert_eq!(server.get(&id).await["status"], "cancelled");
}

#[tokio::test]
async fn unknown_task_ids_get_invalid_params() {
    let server = TaskServer::start(Config::default()).await;
    for (method, params) in [
        ("tasks/get", json!({ "taskId": "no-such-task" })),
        ("tasks/cancel", json!({ "taskId": "no-such-task" })),
        (
            "tasks/update",
            json!({ "taskId": "no-such-task", "inputResponses": {} }),
        ),
    ] {
        let (status, reply) = server.send(method, params, true).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{method}: {reply}");
        assert_eq!(reply["error"]["code"], INVALID_PARAMS, "{method}: {reply}");
    }
}

#[tokio::test]
async fn required_task_tool_without_the_extension_gets_missing_capability() {
    let server = TaskServer::start(Config::default()).await;
    let (status, reply) = server.send_call("only_as_task", json!({}), false).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
    assert_eq!(reply["error"]["code"], MISSING_CLIENT_CAPABILITY);
    assert!(reply["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION].is_object());
}

#[tokio::test]
async fn without_the_extension_optional_tools_answer_directly_and_task_methods_are_refused() {
    let server = TaskServer::start(Config::default()).await;
    let (status, reply) = server
        .send_call("sleep", json!({ "millis": 0 }), false)
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    assert_eq!(reply["result"]["resultType"], "complete");
    assert!(reply["result"].get("taskId").is_none());
    let (status, reply) = server
        .send("tasks/get", json!({ "taskId": "x" }), false)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
    assert_eq!(reply["error"]["code"], MISSING_CLIENT_CAPABILITY);
}

#[tokio::test]
async fn a_task_waiting_for_input_resumes_after_tasks_update() {
    let server = TaskServer::start(Config::default()).await;
    let id = task_id(&server.call("confirm", json!({})).await);
    let waiting = server.wait_for(&id, "input_required").await;
    let requests = waiting["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{waiting}");
    let (key, request) = requests.iter().next().expect("one request");
    assert_eq!(request["method"], "elicitation/create");
    assert!(waiting.get("requestState").is_none());

    let ack = server
        .result(
            "tasks/update",
            json!({
                "taskId": id,
                "inputResponses": { key.clone(): { "action": "accept", "content": { "ok": true } } },
            }),
        )
        .await;
    assert_eq!(
        ack,
        json!({ "resultType": "complete", "_meta": ack["_meta"] })
    );
    let done = server.wait_for(&id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: true");
}

#[tokio::test]
async fn a_full_task_store_refuses_with_503_naming_max_tasks() {
    let mut config = Config::default();
    config.tasks.max_tasks = 1;
    let server = TaskServer::start(config).await;
    server.call("sleep", json!({ "millis": 60_000 })).await;
    let (status, reply) = server
        .send_call("sleep", json!({ "millis": 1 }), true)
        .await;
    // A capacity refusal the client may retry, as the other caps answer: not an internal
    // error, which would say the server is broken.
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{reply}");
    assert_eq!(reply["error"]["code"], SERVER_ERROR, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("tasks.max_tasks"), "{message}");
}
