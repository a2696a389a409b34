//! Multi-round-trip requests (MRTR): a handler that needs the user's input answers
//! `input_required` with its questions and a sealed `requestState`, and the client retries
//! with `inputResponses`; the server never sends a JSON-RPC request on a response stream.
//!
//! Part of the stateless 2026-07-28 suite (`tests/stateless_*.rs`), over real HTTP on
//! 127.0.0.1: one test per MUST line of the checklist in `shared/spec/stateless-2026-07-28.md`
//! §7, named after the rule it checks. Most tests run the real binary ([`TestServer`]); tests
//! that need a list change, a graceful shutdown, resources, prompts or a tool with a side
//! effect run the server in process ([`InProcess`]).

mod common;

use std::collections::BTreeSet;

use common::TestServer;
use common::in_process::{InProcess, builder_with_input_features};
use common::modern::{
    Modern, accept, client_of, expect_error, expect_result, first_text, request_state,
    single_input_request,
};
use common::rpc_codes::{INVALID_PARAMS, MISSING_CLIENT_CAPABILITY};
use mcp_actor::Config;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn input_required_result_for_elicitation() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }))
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(1));
    assert_eq!(result["resultType"], "input_required", "{result}");
    let (_key, entry) = single_input_request(&result);
    let fields: BTreeSet<&str> = entry
        .as_object()
        .expect("entry object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        BTreeSet::from(["method", "params"]),
        "entries are {{method, params}} only: {entry}"
    );
    assert_eq!(entry["method"], "elicitation/create", "{entry}");
    assert_eq!(entry["params"]["message"], "Your name?", "{entry}");
    assert!(entry["params"]["requestedSchema"].is_object(), "{entry}");
    assert!(entry["params"].get("elicitationId").is_none(), "{entry}");
    request_state(&result);
    assert!(
        result.get("ttlMs").is_none() && result.get("cacheScope").is_none(),
        "{result}"
    );
    assert!(
        result.get("content").is_none(),
        "not a tool result: {result}"
    );
}

#[tokio::test]
async fn only_declared_input_kinds_are_requested() {
    let server = TestServer::start();
    let client = client_of(&server);
    // A client that declares sampling only is never asked to elicit.
    let reply = Modern::call(1, "ask", json!({ "question": "?" }))
        .caps(json!({ "sampling": {} }))
        .reply(&client)
        .await;
    if reply.status == StatusCode::OK {
        let result = expect_result(&reply, &json!(1));
        let requests = result["inputRequests"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            requests
                .values()
                .all(|r| r["method"] != "elicitation/create"),
            "elicitation/create asked of a client without elicitation: {result}"
        );
    } else {
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            MISSING_CLIENT_CAPABILITY,
            &json!(1),
        );
    }
    // The same client is asked for what it declared.
    let result = Modern::call(2, "sample", json!({ "prompt": "Hi" }))
        .caps(json!({ "sampling": {} }))
        .result(&client)
        .await;
    let (_, entry) = single_input_request(&result);
    assert_eq!(entry["method"], "sampling/createMessage", "{entry}");
    assert_eq!(
        entry["params"]["messages"][0]["content"]["text"], "Hi",
        "{entry}"
    );
}

#[tokio::test]
async fn retry_with_input_responses_and_state_completes() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, _) = single_input_request(&first);
    let state = request_state(&first);
    let retry = Modern {
        id: Some(json!(2)),
        ..ask.clone()
    }
    .param("inputResponses", json!({ key: accept("bob") }))
    .param("requestState", json!(state));
    let reply = retry.reply(&client).await;
    let done = expect_result(&reply, &json!(2));
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "bob", "{done}");
    assert!(done.get("isError").is_none(), "{done}");
    assert!(done.get("inputRequests").is_none(), "{done}");
    // Sampling round trip too.
    let sample =
        Modern::call(3, "sample", json!({ "prompt": "Hi" })).caps(json!({ "sampling": {} }));
    let first = sample.result(&client).await;
    let (key, _) = single_input_request(&first);
    let mut retry = Modern {
        id: Some(json!(4)),
        ..sample
    }
    .param(
        "inputResponses",
        json!({ key: { "role": "assistant", "model": "m",
                       "content": { "type": "text", "text": "Hello back" } } }),
    );
    if let Some(state) = first.get("requestState") {
        retry = retry.param("requestState", state.clone());
    }
    let done = retry.result(&client).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "Hello back", "{done}");
}

/// `token` with one character in its middle changed.
fn tamper(token: &str) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

#[tokio::test]
async fn tampered_request_state_gets_400_invalid_params() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, _) = single_input_request(&first);
    let state = request_state(&first);
    for (id, bad) in [
        (json!(2), json!(tamper(&state))),
        (json!(3), json!(format!("{state}A"))),
        (json!(4), json!("v1.forged")),
        (json!(5), json!("")),
    ] {
        let retry = Modern {
            id: Some(id.clone()),
            ..ask.clone()
        }
        .param("inputResponses", json!({ key.clone(): accept("bob") }))
        .param("requestState", bad);
        let reply = retry.reply(&client).await;
        expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &id);
    }
}

#[tokio::test]
async fn request_state_bound_to_arguments() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, _) = single_input_request(&first);
    let state = request_state(&first);
    let answers = json!({ key: accept("bob") });
    // Same tool, other arguments.
    let other_args = Modern::call(2, "ask", json!({ "question": "Your password?" }))
        .caps(json!({ "elicitation": {} }))
        .param("inputResponses", answers.clone())
        .param("requestState", json!(state));
    let reply = other_args.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(2));
    // Another tool (with arguments it accepts).
    let other_tool = Modern::call(3, "echo", json!({ "text": "Your name?" }))
        .param("inputResponses", answers.clone())
        .param("requestState", json!(state));
    let reply = other_tool.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(3));
    // The original request still completes with it.
    let retry = Modern {
        id: Some(json!(4)),
        ..ask
    }
    .param("inputResponses", answers)
    .param("requestState", json!(state));
    let done = retry.result(&client).await;
    assert_eq!(first_text(&done), "bob", "{done}");
}

#[tokio::test]
async fn missing_input_response_key_asks_again_not_error() {
    let server = TestServer::start();
    let client = client_of(&server);
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&client).await;
    let (key, entry) = single_input_request(&first);
    let state = request_state(&first);
    let retry = |id: i64, responses: Value| {
        Modern {
            id: Some(json!(id)),
            ..ask.clone()
        }
        .param("inputResponses", responses)
        .param("requestState", json!(state))
    };
    // Wrong key, no responses at all, and a structurally invalid answer: asked again.
    for (id, responses) in [
        (2, json!({ "not-the-key": accept("bob") })),
        (3, json!({})),
        (4, json!({ key.clone(): 12345 })),
    ] {
        let reply = retry(id, responses).reply(&client).await;
        let again = expect_result(&reply, &json!(id));
        assert_eq!(again["resultType"], "input_required", "{again}");
        let (again_key, again_entry) = single_input_request(&again);
        assert_eq!(again_key, key, "the same question under the same key");
        assert_eq!(again_entry, entry);
        request_state(&again);
    }
    // Extra keys beside the right one are ignored.
    let reply = retry(
        5,
        json!({ key.clone(): accept("bob"), "extra": accept("eve") }),
    )
    .reply(&client)
    .await;
    let done = expect_result(&reply, &json!(5));
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "bob", "{done}");
}

#[tokio::test]
async fn prompts_get_and_resources_read_can_return_input_required() {
    let server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let caps = json!({ "elicitation": {} });
    for (request, expected) in [
        (
            Modern::request(1, "prompts/get")
                .name("greet")
                .caps(caps.clone()),
            "Hello bob",
        ),
        (
            Modern::request(3, "resources/read")
                .uri("test://secret")
                .caps(caps.clone()),
            "secret for bob",
        ),
    ] {
        let first = request.result(&client).await;
        assert_eq!(first["resultType"], "input_required", "{first}");
        assert!(
            first.get("ttlMs").is_none(),
            "no cache hints on input_required: {first}"
        );
        let (key, entry) = single_input_request(&first);
        assert_eq!(entry["method"], "elicitation/create", "{entry}");
        let state = request_state(&first);
        let retry_id = json!(request.id().as_i64().unwrap() + 1);
        let retry = Modern {
            id: Some(retry_id.clone()),
            ..request.clone()
        }
        .param("inputResponses", json!({ key: accept("bob") }))
        .param("requestState", json!(state));
        let done = retry.result(&client).await;
        assert_eq!(done["resultType"], "complete", "{done}");
        let text = done["messages"][0]["content"]["text"]
            .as_str()
            .or_else(|| done["contents"][0]["text"].as_str());
        assert_eq!(text, Some(expected), "{done}");
    }
}

#[tokio::test]
async fn tools_list_never_returns_input_required() {
    let server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let all = json!({ "elicitation": {}, "sampling": {}, "roots": {} });
    for (id, method) in [
        (1, "tools/list"),
        (2, "prompts/list"),
        (3, "resources/list"),
    ] {
        let result = Modern::request(id, method)
            .caps(all.clone())
            .result(&client)
            .await;
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
        assert!(result.get("inputRequests").is_none(), "{result}");
        assert!(result.get("requestState").is_none(), "{result}");
    }
}

#[tokio::test]
async fn no_json_rpc_request_on_response_stream() {
    let server = TestServer::start();
    let client = client_of(&server);
    let all = json!({ "elicitation": {}, "sampling": {}, "roots": {} });
    let replies = [
        Modern::call(1, "sleep", json!({ "ms": 250 }))
            .progress_token(json!(1))
            .log_level("debug")
            .reply(&client)
            .await,
        Modern::call(2, "ask", json!({ "question": "?" }))
            .caps(all.clone())
            .reply(&client)
            .await,
        Modern::call(3, "sample", json!({ "prompt": "?" }))
            .caps(all.clone())
            .progress_token(json!("t"))
            .log_level("debug")
            .reply(&client)
            .await,
    ];
    assert!(
        replies[0].is_sse(),
        "the sleep reply streams: {:#?}",
        replies[0]
    );
    for reply in &replies {
        assert_eq!(reply.status, StatusCode::OK, "{reply:#?}");
        for message in &reply.messages {
            assert!(
                !(message.get("method").is_some() && message.get("id").is_some()),
                "a JSON-RPC request on a response stream: {message}"
            );
        }
    }
}
