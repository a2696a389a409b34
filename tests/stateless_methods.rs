//! The 2026-07-28 methods themselves: `server/discover`, the methods the revision removed,
//! GET and DELETE refused, cache hints on list and read results, unknown names, undeclared
//! client capabilities, `serverInfo` in result `_meta`, and notifications answered 202.
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
    META_SERVER_INFO, MODERN, Modern, assert_no_session_header, client_of, expect_error,
    expect_result, session_count,
};
use common::rpc_codes::{
    INVALID_PARAMS, METHOD_NOT_FOUND, MISSING_CLIENT_CAPABILITY,
    RESOURCE_NOT_FOUND as RESOURCE_NOT_FOUND_2025,
};
use mcp_actor::Config;
use mcp_actor::config::CacheScope;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn discover_returns_versions_capabilities_cache_hints_and_server_info() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::request("d1", "server/discover")
        .reply(&client)
        .await;
    assert!(
        reply.content_type.starts_with("application/json"),
        "{reply:#?}"
    );
    let result = expect_result(&reply, &json!("d1"));
    assert_eq!(result["resultType"], "complete", "{result}");
    let versions = result["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("supportedVersions: {result}"));
    assert!(versions.contains(&json!(MODERN)), "{result}");
    let capabilities = result["capabilities"]
        .as_object()
        .unwrap_or_else(|| panic!("capabilities object: {result}"));
    // The binary serves tools; they must be advertised.
    assert!(
        capabilities.get("tools").is_some_and(Value::is_object),
        "{result}"
    );
    let ttl = result["ttlMs"]
        .as_u64()
        .unwrap_or_else(|| panic!("ttlMs is an integer >= 0: {result}"));
    assert_eq!(ttl, 0, "the default modern.ttl_ms");
    assert_eq!(
        result["cacheScope"], "private",
        "the default modern.cache_scope"
    );
    let info = &result["_meta"][META_SERVER_INFO];
    assert_eq!(info["name"], "mcp-actor", "{result}");
    assert!(info["version"].is_string(), "{result}");
    assert!(
        result.get("protocolVersion").is_none(),
        "not echoed: {result}"
    );
    assert!(
        result.get("serverInfo").is_none(),
        "serverInfo lives in _meta: {result}"
    );
    // Capabilities match what is served: every advertised list method answers.
    for (cap, method) in [
        ("tools", "tools/list"),
        ("prompts", "prompts/list"),
        ("resources", "resources/list"),
    ] {
        if capabilities.contains_key(cap) {
            let listed = Modern::request(cap, method).result(&client).await;
            assert_eq!(listed["resultType"], "complete", "{method}: {listed}");
        }
    }
}

#[tokio::test]
async fn removed_methods_get_404_method_not_found() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::request("init", "initialize")
            .param("protocolVersion", json!(MODERN))
            .param("capabilities", json!({}))
            .param("clientInfo", json!({ "name": "t", "version": "1" })),
        Modern::request(2, "ping"),
        Modern::request(3, "logging/setLevel").param("level", json!("debug")),
        Modern::request(4, "resources/subscribe").param("uri", json!("test://a")),
        Modern::request(5, "resources/unsubscribe").param("uri", json!("test://a")),
        Modern::request("six", "unknown/method"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::NOT_FOUND,
            METHOD_NOT_FOUND,
            &request.id(),
        );
        assert_no_session_header(&reply);
    }
    assert_eq!(
        session_count(&client).await,
        0,
        "initialize opened no session"
    );
}

#[tokio::test]
async fn get_and_delete_with_modern_header_get_405_allow_post() {
    let server = TestServer::start();
    let client = client_of(&server);
    let get = client
        .http
        .get(&client.url)
        .header("accept", "text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .send()
        .await
        .expect("GET");
    let delete = client
        .http
        .delete(&client.url)
        .header("MCP-Protocol-Version", MODERN)
        .send()
        .await
        .expect("DELETE");
    for (verb, resp) in [("GET", get), ("DELETE", delete)] {
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED, "{verb}");
        let allow = resp
            .headers()
            .get("allow")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("{verb}: 405 carries Allow"));
        let allowed: BTreeSet<&str> = allow.split(',').map(str::trim).collect();
        assert_eq!(allowed, BTreeSet::from(["POST"]), "{verb}: Allow {allow:?}");
    }
}

#[tokio::test]
async fn list_and_read_results_carry_ttl_and_cache_scope() {
    let mut config = Config::default();
    config.stateless.ttl_ms = 60_000;
    config.stateless.cache_scope = CacheScope::Public;
    // One item per page, so a list spans several pages that must all carry the hints.
    config.pagination.page_size = 1;
    let server = InProcess::start(builder_with_input_features(config)).await;
    let client = server.client();
    let check = |what: &str, result: &Value| {
        assert_eq!(result["resultType"], "complete", "{what}: {result}");
        assert_eq!(result["ttlMs"], json!(60_000), "{what}: {result}");
        assert_eq!(result["cacheScope"], "public", "{what}: {result}");
    };
    for (method, key) in [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let mut cursor: Option<Value> = None;
        let mut pages = 0;
        loop {
            let mut request = Modern::request(pages, method);
            if let Some(c) = cursor.take() {
                request = request.param("cursor", c);
            }
            let result = request.result(&client).await;
            check(&format!("{method} page {pages}"), &result);
            assert!(result[key].is_array(), "{result}");
            pages += 1;
            match result.get("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
            assert!(pages < 10, "{method} paginates without end");
        }
        if method == "prompts/list" || method == "resources/list" {
            assert!(pages >= 2, "{method} spans several pages at page_size 1");
        }
    }
    let read = Modern::request(1, "resources/read")
        .uri("test://fixed/a")
        .result(&client)
        .await;
    check("resources/read", &read);
    assert_eq!(read["contents"][0]["text"], "A", "{read}");
    let templated = Modern::request(2, "resources/read")
        .uri("test://items/9")
        .result(&client)
        .await;
    check("resources/read (template)", &templated);
    let discover = Modern::request(3, "server/discover").result(&client).await;
    check("server/discover", &discover);
}

#[tokio::test]
async fn unknown_resource_gets_400_invalid_params_not_32002() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::request("r1", "resources/read")
        .uri("test://does-not-exist")
        .reply(&client)
        .await;
    let error = expect_error(
        &reply,
        StatusCode::BAD_REQUEST,
        INVALID_PARAMS,
        &json!("r1"),
    );
    assert_ne!(error["code"], json!(RESOURCE_NOT_FOUND_2025));
}

#[tokio::test]
async fn unknown_tool_gets_400_invalid_params() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call(1, "no_such_tool", json!({}))
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(1));
}

#[tokio::test]
async fn undeclared_client_capability_gets_400_32021_with_required_capabilities_object() {
    let server = TestServer::start();
    let client = client_of(&server);
    for (id, tool, arguments, capability) in [
        (1, "ask", json!({ "question": "Name?" }), "elicitation"),
        (2, "sample", json!({ "prompt": "Hi" }), "sampling"),
    ] {
        // The request declares nothing (`clientCapabilities: {}`).
        let reply = Modern::call(id, tool, arguments).reply(&client).await;
        let error = expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            MISSING_CLIENT_CAPABILITY,
            &json!(id),
        );
        let required = error["data"]["requiredCapabilities"]
            .as_object()
            .unwrap_or_else(|| panic!("requiredCapabilities is an object: {error}"));
        assert!(
            required.get(capability).is_some_and(Value::is_object),
            "{capability} required: {error}"
        );
    }
}

#[tokio::test]
async fn result_meta_carries_server_info() {
    let server = TestServer::start();
    let client = client_of(&server);
    let results = [
        Modern::request(1, "server/discover").result(&client).await,
        Modern::request(2, "tools/list").result(&client).await,
        Modern::call(3, "echo", json!({ "text": "x" }))
            .result(&client)
            .await,
        Modern::call(4, "ask", json!({ "question": "?" }))
            .caps(json!({ "elicitation": {} }))
            .result(&client)
            .await,
    ];
    for result in results {
        let info = &result["_meta"][META_SERVER_INFO];
        assert_eq!(info["name"], "mcp-actor", "{result}");
        assert!(info["version"].is_string(), "{result}");
    }
}

#[tokio::test]
async fn notification_post_gets_202() {
    let server = TestServer::start();
    let client = client_of(&server);
    for notification in [
        Modern::notification("notifications/cancelled").param("requestId", json!(1)),
        Modern::notification("notifications/initialized"),
        Modern::notification("notifications/roots/list_changed"),
    ] {
        let resp = notification.send(&client).await;
        assert_eq!(
            resp.status(),
            StatusCode::ACCEPTED,
            "{}",
            notification.method
        );
        let body = resp.bytes().await.expect("body");
        assert!(body.is_empty(), "202 has an empty body: {body:?}");
    }
    assert_eq!(session_count(&client).await, 0);
}
