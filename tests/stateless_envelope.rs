//! The 2026-07-28 envelope and routing headers: the `_meta` envelope in every request, the
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers that must
//! mirror the body, parse errors and batches, and no `Mcp-Session-Id` on any modern reply.
//!
//! Part of the stateless 2026-07-28 suite (`tests/stateless_*.rs`), over real HTTP on
//! 127.0.0.1: one test per MUST line of the checklist in `shared/spec/stateless-2026-07-28.md`
//! §7, named after the rule it checks. Most tests run the real binary ([`TestServer`]); tests
//! that need a list change, a graceful shutdown, resources, prompts or a tool with a side
//! effect run the server in process ([`InProcess`]).

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::in_process::InProcess;
use common::modern::{
    LIMIT, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, MODERN, Modern,
    assert_no_session_header, client_of, expect_error, expect_result, first_text,
};
use common::rpc_codes::{
    HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
};
use common::{ACCEPT_BOTH, TestServer, read_reply};
use mcp_actor::{CallToolResult, Server, Tool};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn valid_request_gets_200_with_result_type_and_same_id() {
    let server = TestServer::start();
    let client = client_of(&server);
    for id in [json!(7), json!("req-7")] {
        let reply = Modern::request(id.clone(), "tools/list")
            .reply(&client)
            .await;
        assert!(
            reply.content_type.starts_with("application/json"),
            "{reply:#?}"
        );
        let result = expect_result(&reply, &id);
        assert_eq!(result["resultType"], "complete");
        assert!(result["tools"].is_array(), "{result}");
    }
    let reply = Modern::call(8, "echo", json!({ "text": "hi" }))
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(8));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(first_text(&result), "hi");
}

#[tokio::test]
async fn missing_meta_envelope_gets_400_invalid_params() {
    let server = TestServer::start();
    let client = client_of(&server);
    // The version header is present in every case: the envelope is checked regardless.
    let cases = [
        ("no _meta", Modern::request(1, "tools/list").without_meta()),
        (
            "_meta not an object",
            Modern::request(2, "tools/list").param("_meta", json!("2026-07-28")),
        ),
        (
            "no protocolVersion",
            Modern::request(3, "tools/list").without_meta_key(META_PROTOCOL_VERSION),
        ),
        (
            "no clientCapabilities",
            Modern::request(4, "tools/list").without_meta_key(META_CLIENT_CAPABILITIES),
        ),
        (
            "clientCapabilities not an object",
            Modern::request(5, "tools/list").meta(META_CLIENT_CAPABILITIES, json!(true)),
        ),
        (
            // The envelope rung comes before the header rung (§2.5 order).
            "no _meta and a wrong Mcp-Method",
            Modern::request(7, "tools/list")
                .without_meta()
                .set_header("Mcp-Method", "prompts/list"),
        ),
        (
            "no _meta on tools/call",
            Modern::call("six", "echo", json!({ "text": "x" })).without_meta(),
        ),
    ];
    for (what, request) in cases {
        let reply = request.reply(&client).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{what}: {reply:#?}");
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            INVALID_PARAMS,
            &request.id(),
        );
        assert_no_session_header(&reply);
    }
}

#[tokio::test]
async fn meta_without_client_info_is_served() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call(1, "echo", json!({ "text": "anonymous" }))
        .without_meta_key(META_CLIENT_INFO)
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(1));
    assert_eq!(first_text(&result), "anonymous");
    let discover = Modern::request(2, "server/discover")
        .without_meta_key(META_CLIENT_INFO)
        .result(&client)
        .await;
    assert_eq!(discover["resultType"], "complete");
}

#[tokio::test]
async fn protocol_version_header_mismatch_gets_400_header_mismatch() {
    let server = TestServer::start();
    let client = client_of(&server);
    // Header absent (no session): the body's claim routes it to the modern ladder.
    let absent = Modern::request(1, "tools/list").remove_header("MCP-Protocol-Version");
    let reply = absent.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(1));
    assert_no_session_header(&reply);
    // Header present but naming another (unknown) revision than the body.
    let different =
        Modern::request(2, "tools/list").set_header("MCP-Protocol-Version", "2026-08-01");
    let reply = different.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(2));
    // Body names another revision than the (modern) header.
    let body_differs = Modern::call(3, "echo", json!({ "text": "x" }))
        .meta(META_PROTOCOL_VERSION, json!("2026-01-01"));
    let reply = body_differs.reply(&client).await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(3));
}

#[tokio::test]
async fn unsupported_version_gets_400_32022_with_supported_list() {
    let server = TestServer::start();
    let client = client_of(&server);
    for (id, version) in [(json!(1), "2099-01-01"), (json!("old"), "1999-01-01")] {
        let request = Modern::request(id.clone(), "tools/list")
            .set_header("MCP-Protocol-Version", version)
            .meta(META_PROTOCOL_VERSION, json!(version));
        let reply = request.reply(&client).await;
        let error = expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            UNSUPPORTED_PROTOCOL_VERSION,
            &id,
        );
        let supported = error["data"]["supported"]
            .as_array()
            .unwrap_or_else(|| panic!("data.supported is an array: {error}"));
        assert!(
            supported.contains(&json!(MODERN)),
            "data.supported lists {MODERN}: {error}"
        );
        assert_eq!(error["data"]["requested"], version, "{error}");
        assert_no_session_header(&reply);
    }
}

#[tokio::test]
async fn mcp_method_case_mismatch_gets_400_header_mismatch() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::request(1, "tools/list").remove_header("Mcp-Method"),
        Modern::request(2, "tools/list").set_header("Mcp-Method", "prompts/list"),
        Modern::request(3, "tools/list").set_header("Mcp-Method", "TOOLS/LIST"),
        Modern::call(4, "echo", json!({ "text": "x" })).set_header("Mcp-Method", "Tools/Call"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
}

#[tokio::test]
async fn header_names_any_case_and_whitespace_values_accepted() {
    let server = TestServer::start();
    let request = Modern::call(1, "echo", json!({ "text": "spaced" }));
    let body = request.body().to_string();
    let path = "/mcp";
    let lines = |version: &str, method: &str, name: &str| {
        vec![
            "Content-Type: application/json".to_string(),
            format!("Accept: {ACCEPT_BOTH}"),
            format!("{version}:  \t{MODERN} \t"),
            format!("{method}: \ttools/call  "),
            format!("{name}:   echo\t"),
        ]
    };
    for (version, method, name) in [
        ("MCP-PROTOCOL-VERSION", "MCP-METHOD", "MCP-NAME"),
        ("mcp-protocol-version", "mcp-method", "mcp-name"),
        ("Mcp-Protocol-Version", "mCp-MeThOd", "mcP-naME"),
    ] {
        let (status, reply) =
            raw_post(&server.addr, path, &lines(version, method, name), &body).await;
        assert_eq!(status, 200, "{version}/{method}/{name}: {reply}");
        assert_eq!(reply["id"], 1, "{reply}");
        assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "spaced", "{reply}");
    }
}

#[tokio::test]
async fn mcp_name_missing_or_mismatched_gets_400_header_mismatch() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::call(1, "echo", json!({ "text": "x" })).remove_header("Mcp-Name"),
        Modern::call(2, "echo", json!({ "text": "x" })).set_header("Mcp-Name", "sleep"),
        // A literal value without the wrapper is compared verbatim, so case matters.
        Modern::call(3, "echo", json!({ "text": "x" })).set_header("Mcp-Name", "ECHO"),
        Modern::request(4, "resources/read")
            .uri("test://a")
            .set_header("Mcp-Name", "test://b"),
        Modern::request(5, "resources/read")
            .uri("test://a")
            .remove_header("Mcp-Name"),
        Modern::request(6, "prompts/get")
            .name("greet")
            .set_header("Mcp-Name", "other"),
        Modern::request(7, "prompts/get")
            .name("greet")
            .remove_header("Mcp-Name"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
}

#[tokio::test]
async fn mcp_name_base64_wrapper_accepted() {
    let server = TestServer::start();
    let client = client_of(&server);
    let wrapped = format!("=?base64?{}?=", STANDARD.encode("echo"));
    let reply = Modern::call(1, "echo", json!({ "text": "wrapped" }))
        .set_header("Mcp-Name", &wrapped)
        .reply(&client)
        .await;
    let result = expect_result(&reply, &json!(1));
    assert_eq!(first_text(&result), "wrapped");
    // The decoded value must equal the body's: a wrapper around another name is refused.
    let other = format!("=?base64?{}?=", STANDARD.encode("sleep"));
    let reply = Modern::call(2, "echo", json!({ "text": "x" }))
        .set_header("Mcp-Name", &other)
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(2));
    // A non-ASCII URI travels wrapped; it decodes to the body's URI, which passes the
    // header check and reaches the handler (unknown resource: -32602, not -32020).
    let uri = "test://café/ü";
    let reply = Modern::request(3, "resources/read")
        .uri(uri)
        .set_header("Mcp-Name", &format!("=?base64?{}?=", STANDARD.encode(uri)))
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(3));
}

#[tokio::test]
async fn mcp_name_malformed_base64_gets_400() {
    let server = TestServer::start();
    let client = client_of(&server);
    for (id, value) in [
        (1, "=?base64?!!!not-base64!!!?="),
        (2, "=?base64?ZWNobw?="), // missing padding: not canonical standard base64
        (3, "=?base64?/w==?="),   // decodes to a lone 0xFF byte: not UTF-8
    ] {
        let reply = Modern::call(id, "echo", json!({ "text": "x" }))
            .set_header("Mcp-Name", value)
            .reply(&client)
            .await;
        expect_error(&reply, StatusCode::BAD_REQUEST, HEADER_MISMATCH, &json!(id));
    }
}

#[tokio::test]
async fn mcp_param_header_must_mirror_the_argument() {
    let schema = json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "count": { "type": "integer", "x-mcp-header": "Count" },
        },
    });
    let tool = Tool::new("regional", "Echoes its arguments", schema, |_ctx, args| {
        Box::pin(async move { Ok(CallToolResult::text(args.to_string())) })
    })
    .expect("tool");
    let server = InProcess::start(Server::builder().add_tool(tool)).await;
    let client = server.client();
    let call = |id: i64, arguments: Value| Modern::call(id, "regional", arguments);
    let refused = [
        // Argument present, header missing.
        call(1, json!({ "region": "us-west1" })),
        // Header present, argument absent.
        call(2, json!({})).header("Mcp-Param-Region", "us-west1"),
        // Header present, argument null.
        call(3, json!({ "region": null })).header("Mcp-Param-Region", "us-west1"),
        // Values differ.
        call(4, json!({ "region": "us-west1" })).header("Mcp-Param-Region", "eu-west1"),
        call(5, json!({ "count": 42 })).header("Mcp-Param-Count", "43"),
        // Duplicated.
        call(6, json!({ "region": "us-west1" }))
            .header("Mcp-Param-Region", "us-west1")
            .header("Mcp-Param-Region", "us-west1"),
    ];
    for request in refused {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
    let accepted = [
        call(10, json!({ "region": "us-west1" })).header("Mcp-Param-Region", "us-west1"),
        call(11, json!({ "region": "us-west1" })).header("mcp-param-region", " us-west1 "),
        // Integers compare numerically (SHOULD).
        call(12, json!({ "count": 42 })).header("Mcp-Param-Count", "42.0"),
        call(13, json!({})),
        call(14, json!({ "region": "é" })).header(
            "Mcp-Param-Region",
            &format!("=?base64?{}?=", STANDARD.encode("é")),
        ),
    ];
    for request in accepted {
        let reply = request.reply(&client).await;
        let result = expect_result(&reply, &request.id());
        assert_eq!(result["resultType"], "complete", "{result}");
        assert!(result.get("isError").is_none(), "{result}");
    }
}

#[tokio::test]
async fn duplicated_routing_header_gets_400() {
    let server = TestServer::start();
    let client = client_of(&server);
    let cases = [
        Modern::call(1, "echo", json!({ "text": "x" })).header("MCP-Protocol-Version", MODERN),
        Modern::call(2, "echo", json!({ "text": "x" })).header("Mcp-Method", "tools/call"),
        Modern::call(3, "echo", json!({ "text": "x" })).header("Mcp-Name", "echo"),
    ];
    for request in cases {
        let reply = request.reply(&client).await;
        expect_error(
            &reply,
            StatusCode::BAD_REQUEST,
            HEADER_MISMATCH,
            &request.id(),
        );
    }
}

#[tokio::test]
async fn parse_error_gets_400_32700_and_batch_or_response_gets_400_32600() {
    let server = TestServer::start();
    let client = client_of(&server);
    let post = |body: String| {
        client
            .http
            .post(&client.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", "tools/list")
            .body(body)
            .send()
    };
    // Each case is checked, and every deviation reported together.
    let cases = [
        (
            "unparseable JSON",
            "{\"jsonrpc\": \"2.0\", \"id\": 1,".to_string(),
            PARSE_ERROR,
        ),
        (
            "batch",
            json!([Modern::request(1, "tools/list").body()]).to_string(),
            INVALID_REQUEST,
        ),
        (
            "posted response",
            json!({ "jsonrpc": "2.0", "id": 5, "result": {} }).to_string(),
            INVALID_REQUEST,
        ),
        (
            "null id",
            json!({ "jsonrpc": "2.0", "id": null, "method": "tools/list",
                    "params": Modern::request(0, "tools/list").params })
            .to_string(),
            INVALID_REQUEST,
        ),
    ];
    let mut deviations = Vec::new();
    for (what, body, code) in cases {
        let reply = read_reply(post(body).await.expect("POST")).await;
        let got = reply.body.clone().unwrap_or(Value::Null);
        if reply.status != StatusCode::BAD_REQUEST {
            deviations.push(format!("{what}: status {} (want 400): {got}", reply.status));
        }
        if got["error"]["code"] != json!(code) {
            deviations.push(format!("{what}: code (want {code}): {got}"));
        }
        if got.get("id") != Some(&Value::Null) {
            deviations.push(format!("{what}: no `\"id\": null` member: {got}"));
        }
        if got.get("result").is_some() {
            deviations.push(format!("{what}: a result: {got}"));
        }
    }
    assert!(deviations.is_empty(), "{deviations:#?}");
}

#[tokio::test]
async fn no_session_id_header_on_modern_responses() {
    let server = TestServer::start();
    let client = client_of(&server);
    let legacy = client.connect().await;
    let requests = [
        Modern::request(1, "server/discover"),
        Modern::request(2, "tools/list"),
        Modern::call(3, "echo", json!({ "text": "x" })),
        // SSE reply.
        Modern::call(4, "sleep", json!({ "ms": 150 })).progress_token(json!("p")),
        // input_required.
        Modern::call(5, "ask", json!({ "question": "?" })).caps(json!({ "elicitation": {} })),
        // 400, 404.
        Modern::request(6, "tools/list").without_meta(),
        Modern::request(7, "ping"),
    ];
    for request in requests {
        // Even carrying the id of a live legacy session.
        let reply = request
            .clone()
            .header("Mcp-Session-Id", &legacy.id)
            .reply(&client)
            .await;
        assert!(reply.status.is_success() || reply.status.is_client_error());
        assert_no_session_header(&reply);
        let reply = request.reply(&client).await;
        assert_no_session_header(&reply);
    }
    let resp = Modern::notification("notifications/cancelled")
        .param("requestId", json!(3))
        .header("Mcp-Session-Id", &legacy.id)
        .send(&client)
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert!(resp.headers().get("mcp-session-id").is_none());
}

/// A minimal HTTP/1.1 exchange written by hand, so header names and values go on the wire
/// exactly as given. Returns the status and the JSON body.
async fn raw_post(addr: &str, path: &str, header_lines: &[String], body: &str) -> (u16, Value) {
    let host = format!("Host: {addr}");
    let mut lines: Vec<&str> = vec![&host];
    lines.extend(header_lines.iter().map(String::as_str));
    let reply = common::raw_request(
        addr,
        &format!("POST {path} HTTP/1.1"),
        &lines,
        body.as_bytes(),
        LIMIT,
    )
    .await;
    let json = reply
        .json()
        .unwrap_or_else(|| panic!("no JSON body in {reply:?}"));
    (reply.status, json)
}
