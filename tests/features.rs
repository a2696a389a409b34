//! The MCP feature methods over real HTTP against the binary: tools, pagination, the empty
//! resource and prompt lists, completion, logging, ping, unknown methods and cancellation.

mod common;

use std::time::{Duration, Instant};

use common::rpc_codes::{INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND};
use common::{BUILTIN_TOOLS_TOML, LATEST, Reply, Session, SseReader, TestServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Longest any single exchange may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(15);

async fn open_session(server: &TestServer) -> Session {
    let session = server
        .bounded_client(LIMIT)
        .initialize(
            LATEST,
            json!({ "elicitation": {}, "sampling": {}, "roots": {} }),
        )
        .await;
    assert_eq!(
        session.notify("notifications/initialized", None).await,
        StatusCode::ACCEPTED
    );
    session
}

/// Sends a request that must fail and returns its JSON-RPC error object.
async fn request_error(session: &Session, id: i64, method: &str, params: Value) -> Value {
    let reply = session.request(json!(id), method, params).await;
    assert_eq!(reply.status, StatusCode::OK, "{method}: {reply:?}");
    let response = reply
        .response(&json!(id))
        .unwrap_or_else(|| panic!("{method}: no response in {reply:?}"));
    assert!(
        response.get("result").is_none(),
        "{method} should fail: {response}"
    );
    response["error"].clone()
}

/// A `tools/call` result that must be a tool execution error; returns its text.
async fn tool_error_text(session: &Session, id: i64, params: Value) -> String {
    let result = session.call(json!(id), "tools/call", params).await;
    assert_eq!(result["isError"], json!(true), "{result}");
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn notifications<'a>(reply: &'a Reply, method: &str) -> Vec<&'a Value> {
    reply
        .messages
        .iter()
        .filter(|m| m["method"] == method)
        .collect()
}

// ----- tools -----

#[tokio::test]
async fn tools_list_shows_the_four_builtins_with_input_schemas() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let result = session.call(json!(1), "tools/list", json!({})).await;
    assert!(result.get("nextCursor").is_none(), "{result}");
    let tools = result["tools"].as_array().expect("tools array");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["ask", "echo", "sample", "sleep"]);
    let expected = [
        ("echo", "text", "string"),
        ("sleep", "ms", "integer"),
        ("ask", "question", "string"),
        ("sample", "prompt", "string"),
    ];
    for (name, argument, kind) in expected {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .expect("listed above");
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{tool}"
        );
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert_eq!(
            schema["properties"][argument]["type"], kind,
            "{name}: {schema}"
        );
        let required = schema["required"].as_array().expect("required list");
        assert!(required.contains(&json!(argument)), "{name}: {schema}");
    }
}

#[tokio::test]
async fn tools_call_echo_returns_the_text() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let result = session
        .call(
            json!(1),
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "hello, world" } }),
        )
        .await;
    assert_eq!(
        result["content"],
        json!([{ "type": "text", "text": "hello, world" }])
    );
    assert!(
        result.get("isError").is_none() || result["isError"] == json!(false),
        "{result}"
    );
}

#[tokio::test]
async fn the_progress_builtin_sends_count_notifications_in_order_then_the_count() {
    let server = TestServer::with_config("[[tools]]\nbuiltin = \"progress\"\n");
    let session = open_session(&server).await;
    let reply = session
        .request(
            json!(1),
            "tools/call",
            json!({ "name": "progress", "arguments": { "count": 300 }, "_meta": { "progressToken": "p" } }),
        )
        .await;
    let progress = notifications(&reply, "notifications/progress");
    let steps: Vec<f64> = progress
        .iter()
        .map(|n| {
            assert_eq!(n["params"]["progressToken"], "p", "{n}");
            assert_eq!(n["params"]["total"], 300.0, "{n}");
            n["params"]["progress"].as_f64().unwrap_or(-1.0)
        })
        .collect();
    let expected: Vec<f64> = (1..=300).map(f64::from).collect();
    assert_eq!(steps, expected);
    let result = reply.response(&json!(1)).expect("the call's response")["result"].clone();
    assert_eq!(result["content"][0]["text"], "300", "{result}");

    // Without a token nothing is sent; past the schema's maximum the call is refused.
    let reply = session
        .request(
            json!(2),
            "tools/call",
            json!({ "name": "progress", "arguments": { "count": 5 } }),
        )
        .await;
    assert!(notifications(&reply, "notifications/progress").is_empty());
    let text = tool_error_text(
        &session,
        3,
        json!({ "name": "progress", "arguments": { "count": 100_001 } }),
    )
    .await;
    assert!(text.contains("count"), "{text}");
}

#[tokio::test]
async fn tools_call_of_an_unknown_tool_is_invalid_params() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let error = request_error(
        &session,
        1,
        "tools/call",
        json!({ "name": "no_such_tool", "arguments": {} }),
    )
    .await;
    assert_eq!(error["code"], INVALID_PARAMS, "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("no_such_tool")),
        "{error}"
    );
}

#[tokio::test]
async fn tools_call_with_an_argument_of_the_wrong_type_is_a_tool_error_naming_it() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let text = tool_error_text(
        &session,
        1,
        json!({ "name": "echo", "arguments": { "text": 42 } }),
    )
    .await;
    assert!(text.contains("text") && text.contains("string"), "{text}");
    let text = tool_error_text(
        &session,
        2,
        json!({ "name": "sleep", "arguments": { "ms": "soon" } }),
    )
    .await;
    assert!(text.contains("ms") && text.contains("integer"), "{text}");
}

#[tokio::test]
async fn tools_call_with_a_missing_required_argument_is_a_tool_error_naming_it() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let text = tool_error_text(&session, 1, json!({ "name": "echo", "arguments": {} })).await;
    assert!(
        text.contains("\"text\"") && text.contains("required"),
        "{text}"
    );
}

#[tokio::test]
async fn tools_call_without_arguments_on_a_tool_that_needs_them_is_a_tool_error() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let text = tool_error_text(&session, 1, json!({ "name": "echo" })).await;
    assert!(
        text.contains("\"text\"") && text.contains("required"),
        "{text}"
    );
}

// ----- pagination -----

fn one_per_page() -> TestServer {
    TestServer::with_config(&format!(
        "[pagination]\npage_size = 1\n{BUILTIN_TOOLS_TOML}"
    ))
}

#[tokio::test]
async fn tools_list_pages_yield_every_tool_exactly_once() {
    let server = one_per_page();
    let session = open_session(&server).await;
    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    for page in 1..=10 {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let result = session.call(json!(page), "tools/list", params).await;
        let tools = result["tools"].as_array().expect("tools array");
        assert_eq!(tools.len(), 1, "page {page}: {result}");
        names.push(tools[0]["name"].as_str().expect("name").to_string());
        cursor = result.get("nextCursor").cloned();
        match &cursor {
            None => break,
            Some(c) => assert!(c.is_string(), "nextCursor must be a string: {c}"),
        }
    }
    assert!(cursor.is_none(), "pages never ended: {names:?}");
    names.sort_unstable();
    assert_eq!(names, ["ask", "echo", "sample", "sleep"]);
}

#[tokio::test]
async fn tools_list_with_a_garbage_cursor_is_invalid_params() {
    let server = one_per_page();
    let session = open_session(&server).await;
    for (id, cursor) in [
        (1, json!("garbage!!")),
        (2, json!("b2Zmc2V0Ojk5")),
        (3, json!(7)),
    ] {
        let error = request_error(&session, id, "tools/list", json!({ "cursor": cursor })).await;
        assert_eq!(error["code"], INVALID_PARAMS, "cursor {cursor}: {error}");
    }
}

// ----- resources, prompts, completion -----

#[tokio::test]
async fn resource_template_and_prompt_lists_are_empty() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let lists = [
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ];
    for (i, (method, key)) in lists.into_iter().enumerate() {
        let result = session.call(json!(i), method, json!({})).await;
        assert_eq!(result, json!({ key: [] }), "{method}");
    }
}

#[tokio::test]
async fn resources_read_of_an_unknown_uri_is_resource_not_found() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let error = request_error(
        &session,
        1,
        "resources/read",
        json!({ "uri": "file:///no/such/file.txt" }),
    )
    .await;
    assert_eq!(error["code"], RESOURCE_NOT_FOUND, "{error}");
}

#[tokio::test]
async fn prompts_get_of_an_unknown_name_is_invalid_params() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let error = request_error(
        &session,
        1,
        "prompts/get",
        json!({ "name": "no_such_prompt" }),
    )
    .await;
    assert_eq!(error["code"], INVALID_PARAMS, "{error}");
}

#[tokio::test]
async fn completion_for_an_unknown_prompt_is_invalid_params() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let error = request_error(
        &session,
        1,
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "no_such_prompt" },
                "argument": { "name": "x", "value": "" } }),
    )
    .await;
    assert_eq!(error["code"], INVALID_PARAMS, "{error}");
}

// ----- logging -----

#[tokio::test]
async fn logging_set_level_with_an_unknown_level_is_invalid_params() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    for (id, level) in [(1, json!("verbose")), (2, json!("INFO")), (3, json!(3))] {
        let error =
            request_error(&session, id, "logging/setLevel", json!({ "level": level })).await;
        assert_eq!(error["code"], INVALID_PARAMS, "level {level}: {error}");
    }
}

/// Sets `level`, then runs a short `sleep` (which logs at info) and returns its reply.
async fn sleep_at_level(session: &Session, level: &str) -> Reply {
    let result = session
        .call(json!(1), "logging/setLevel", json!({ "level": level }))
        .await;
    assert_eq!(result, json!({}));
    let reply = session
        .request(
            json!(2),
            "tools/call",
            json!({ "name": "sleep", "arguments": { "ms": 20 } }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    let response = reply.response(&json!(2)).expect("sleep response");
    assert_eq!(response["result"]["content"][0]["text"], "slept 20 ms");
    reply
}

#[tokio::test]
async fn log_level_error_silences_info_messages() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let mut get_stream = SseReader::new(session.get(None).await);
    let reply = sleep_at_level(&session, "error").await;
    assert!(
        notifications(&reply, "notifications/message").is_empty(),
        "{reply:?}"
    );
    // Nor are they diverted to the GET stream.
    while let Some((_, message)) = get_stream.next_message(Duration::from_millis(300)).await {
        assert_ne!(message["method"], "notifications/message", "{message}");
    }
}

#[tokio::test]
async fn log_level_debug_delivers_info_messages() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let reply = sleep_at_level(&session, "debug").await;
    let messages = notifications(&reply, "notifications/message");
    assert_eq!(messages.len(), 2, "sleeping + slept: {reply:?}");
    for message in messages {
        assert_eq!(message["params"]["level"], "info", "{message}");
        assert_eq!(message["params"]["logger"], "sleep", "{message}");
    }
}

// ----- ping, unknown methods, cancellation -----

#[tokio::test]
async fn ping_answers_an_empty_object() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    assert_eq!(session.call(json!(1), "ping", json!({})).await, json!({}));
    let reply = session
        .post(&json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" }))
        .await;
    assert_eq!(
        reply.response(&json!("p")).expect("ping")["result"],
        json!({})
    );
}

#[tokio::test]
async fn an_unknown_method_is_method_not_found() {
    let server = TestServer::start();
    let session = open_session(&server).await;
    let error = request_error(&session, 1, "tools/frobnicate", json!({})).await;
    assert_eq!(error["code"], METHOD_NOT_FOUND, "{error}");
}

#[tokio::test]
async fn cancelled_call_ends_its_stream_without_a_response() {
    const SLEEP_MS: u64 = 3000;
    let server = TestServer::start();
    let session = open_session(&server).await;
    let started = Instant::now();
    let resp = session
        .post_value(&json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                             "params": { "name": "sleep", "arguments": { "ms": SLEEP_MS } } }))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut stream = SseReader::new(resp);
    // The call's first event proves it is in flight before it is cancelled.
    let first = stream.next(LIMIT).await.expect("a first event");
    let mut messages: Vec<Value> = first.data.into_iter().filter(|d| !d.is_null()).collect();
    // On another connection.
    let status = session
        .notify(
            "notifications/cancelled",
            Some(json!({ "requestId": 7, "reason": "the user changed their mind" })),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    while let Some(event) = stream.next(Duration::from_millis(SLEEP_MS + 2000)).await {
        messages.extend(event.data.filter(|d| !d.is_null()));
    }
    let elapsed = started.elapsed();
    assert!(
        !messages
            .iter()
            .any(|m| m["id"] == json!(7) && (m.get("result").is_some() || m.get("error").is_some())),
        "a cancelled request is never answered: {messages:?}"
    );
    assert!(
        elapsed < Duration::from_millis(SLEEP_MS - 300),
        "the stream should end on cancellation, not when the sleep would have: {elapsed:?}"
    );
    assert_eq!(session.call(json!(8), "ping", json!({})).await, json!({}));
}
