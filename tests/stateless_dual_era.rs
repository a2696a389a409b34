//! Both eras on the same URL: `initialize` still opens a handshake-era session, the two
//! revisions do not leak into each other, a modern request never creates a session, and
//! clients of both eras call tools side by side.
//!
//! Part of the stateless 2026-07-28 suite (`tests/stateless_*.rs`), over real HTTP on
//! 127.0.0.1: one test per MUST line of the checklist in `shared/spec/stateless-2026-07-28.md`
//! §7, named after the rule it checks. Most tests run the real binary ([`TestServer`]); tests
//! that need a list change, a graceful shutdown, resources, prompts or a tool with a side
//! effect run the server in process ([`InProcess`]).

mod common;

use common::modern::{
    META_SERVER_INFO, MODERN, Modern, assert_no_session_header, client_of, first_text,
    session_count,
};
use common::rpc_codes::METHOD_NOT_FOUND;
use common::{ACCEPT_BOTH, LATEST as HANDSHAKE_LATEST, TestServer};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn initialize_without_header_still_opens_legacy_session() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    assert_eq!(session.version, HANDSHAKE_LATEST);
    assert!(!session.id.is_empty());
    assert_eq!(session_count(&client).await, 1);
    let init = &session.init_result["result"];
    assert!(init.get("resultType").is_none(), "{init}");
    let listed = session.call(json!(1), "tools/list", json!({})).await;
    assert!(listed["tools"].is_array(), "{listed}");
    for field in ["resultType", "ttlMs", "cacheScope"] {
        assert!(
            listed.get(field).is_none(),
            "2025 shape has no {field}: {listed}"
        );
    }
    assert!(listed["_meta"].get(META_SERVER_INFO).is_none(), "{listed}");
    let called = session
        .call(
            json!(2),
            "tools/call",
            json!({ "name": "echo", "arguments": { "text": "old" } }),
        )
        .await;
    assert_eq!(first_text(&called), "old");
    assert!(called.get("resultType").is_none(), "{called}");
    let pong = session.call(json!(3), "ping", json!({})).await;
    assert_eq!(pong, json!({}));
}

#[tokio::test]
async fn discover_on_legacy_session_gets_method_not_found() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    let reply = session
        .request(json!(1), "server/discover", json!({}))
        .await;
    let response = reply
        .response(&json!(1))
        .unwrap_or_else(|| panic!("no response: {reply:#?}"));
    assert_eq!(response["error"]["code"], METHOD_NOT_FOUND, "{response}");
}

#[tokio::test]
async fn initialize_proposing_2026_gets_2025_11_25() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.initialize(MODERN, json!({})).await;
    assert_eq!(session.version, HANDSHAKE_LATEST, "{}", session.init_result);
    assert!(!session.id.is_empty());
    assert_eq!(session_count(&client).await, 1);
}

#[tokio::test]
async fn legacy_session_with_unknown_version_header_gets_400() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    for (id, version) in [(1, "1999-01-01"), (2, "2099-12-31")] {
        let resp = client
            .http
            .post(&client.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("Mcp-Session-Id", &session.id)
            .header("MCP-Protocol-Version", version)
            .body(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }).to_string())
            .send()
            .await
            .expect("POST");
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{version}");
    }
    // The session itself is unharmed.
    let listed = session.call(json!(3), "tools/list", json!({})).await;
    assert!(listed["tools"].is_array());
}

#[tokio::test]
async fn modern_request_never_creates_a_session() {
    let server = TestServer::start();
    let client = client_of(&server);
    assert_eq!(session_count(&client).await, 0);
    let caps = json!({ "elicitation": {}, "sampling": {} });
    let mut burst = Vec::new();
    for i in 0..8 {
        burst.push(Modern::request(i * 10, "server/discover"));
        burst.push(Modern::request(i * 10 + 1, "tools/list"));
        burst.push(Modern::call(i * 10 + 2, "echo", json!({ "text": "x" })));
        burst.push(Modern::call(i * 10 + 3, "ask", json!({ "question": "?" })).caps(caps.clone()));
        burst.push(Modern::call(i * 10 + 4, "sleep", json!({ "ms": 20 })).progress_token(json!(i)));
        burst.push(Modern::request(i * 10 + 5, "initialize"));
        burst.push(Modern::request(i * 10 + 6, "tools/list").without_meta());
    }
    let replies =
        futures_util::future::join_all(burst.iter().map(|request| request.reply(&client))).await;
    for reply in &replies {
        assert!(
            reply.status == StatusCode::OK
                || reply.status == StatusCode::BAD_REQUEST
                || reply.status == StatusCode::NOT_FOUND,
            "{reply:#?}"
        );
        assert_no_session_header(reply);
    }
    let ok = replies
        .iter()
        .filter(|r| r.status == StatusCode::OK)
        .count();
    assert_eq!(ok, 8 * 5, "the valid requests succeed");
    assert_eq!(
        session_count(&client).await,
        0,
        "no session after the burst"
    );
    // The probe does count sessions.
    let _legacy = client.connect().await;
    assert_eq!(session_count(&client).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_and_modern_clients_call_tools_concurrently() {
    let server = TestServer::start();
    let client = client_of(&server);
    let session = client.connect().await;
    let legacy = futures_util::future::join_all((0..10).map(|i| {
        let session = session.clone();
        async move {
            session
                .call_tool_text(json!(i), "echo", json!({ "text": format!("legacy {i}") }))
                .await
        }
    }));
    let modern = futures_util::future::join_all((0..10).map(|i| {
        let client = client.clone();
        async move {
            let result = Modern::call(i, "echo", json!({ "text": format!("modern {i}") }))
                .result(&client)
                .await;
            first_text(&result).to_string()
        }
    }));
    let (legacy, modern) = tokio::join!(legacy, modern);
    for i in 0..10 {
        assert_eq!(legacy[i], format!("legacy {i}"));
        assert_eq!(modern[i], format!("modern {i}"));
    }
    assert_eq!(session_count(&client).await, 1);
}
