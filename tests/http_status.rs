//! Every HTTP status of the MCP endpoint, over real HTTP against the binary: the statuses of
//! `shared/spec/streamable-http-2025.md` §6 plus our own limits (413, 429, 503). Each test
//! checks the status and, where the server sends one, the JSON-RPC error code of the body.

mod common;

use std::time::Duration;

use common::rpc_codes::{INVALID_REQUEST, PARSE_ERROR, SERVER_ERROR, SESSION_NOT_FOUND};
use common::{
    ACCEPT_BOTH, BUILTIN_TOOLS_TOML, LATEST, RawReply, Reply, Session, SseReader, TestServer,
    raw_request, raw_upload, read_reply,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Longest any single exchange may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(15);
const MIB: usize = 1024 * 1024;
const DEFAULT_MAX_BODY: usize = 4 * MIB;
const UNKNOWN_SESSION: &str = "0123456789abcdef0123456789abcdef";
const EVIL_ORIGIN: &str = "http://evil.example.com";
const EVIL_HOST: &str = "evil.example.com";
/// `UnsupportedProtocolVersionError` of the 2026-07-28 schema.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

fn ping(id: i64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "ping" })
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments } })
}

/// A `ping` whose serialized form is exactly `len` bytes long.
fn ping_of_length(len: usize) -> String {
    let empty =
        json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": { "pad": "" } }).to_string();
    assert!(len >= empty.len(), "{len} is shorter than an empty ping");
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping",
                       "params": { "pad": "x".repeat(len - empty.len()) } })
    .to_string();
    assert_eq!(body.len(), len);
    body
}

/// An initialized session speaking `version`, on a client bounded by [`LIMIT`].
async fn open_session(server: &TestServer, version: &str) -> Session {
    let session = server
        .bounded_client(LIMIT)
        .initialize(
            version,
            json!({ "elicitation": {}, "sampling": {}, "roots": {} }),
        )
        .await;
    assert_eq!(session.version, version, "negotiated version");
    assert_eq!(
        session.notify("notifications/initialized", None).await,
        StatusCode::ACCEPTED
    );
    session
}

/// A POST with the session's headers and the standard Accept and Content-Type.
fn session_post(session: &Session) -> reqwest::RequestBuilder {
    session
        .with_session_headers(session.client.http.post(&session.client.url))
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
}

fn session_get(session: &Session) -> reqwest::RequestBuilder {
    session
        .with_session_headers(session.client.http.get(&session.client.url))
        .header("accept", "text/event-stream")
}

fn session_delete(session: &Session) -> reqwest::RequestBuilder {
    session.with_session_headers(session.client.http.delete(&session.client.url))
}

async fn send(req: reqwest::RequestBuilder) -> Reply {
    read_reply(req.send().await.expect("request")).await
}

/// Asserts a refusal: `status`, a JSON body, and the JSON-RPC error `code` in it.
fn assert_refused(reply: &Reply, status: StatusCode, code: i64) {
    assert_eq!(reply.status, status, "{reply:?}");
    assert!(
        reply.content_type.starts_with("application/json"),
        "a refusal carries a JSON-RPC error body: {reply:?}"
    );
    assert_eq!(reply.error_code(), Some(code), "{reply:?}");
}

fn assert_raw_refused(reply: &RawReply, status: u16, code: i64) {
    assert_eq!(reply.status, status, "{reply:?}");
    assert_eq!(
        reply.error_code(),
        Some(code),
        "body: {:?}",
        String::from_utf8_lossy(&reply.body)
    );
}

/// The session still answers `ping` with `{}`.
async fn assert_alive(session: &Session, id: i64) {
    let result = session.call(json!(id), "ping", json!({})).await;
    assert_eq!(result, json!({}));
}

/// The `Retry-After` header as whole seconds, which must be present and positive.
fn retry_after(reply: &Reply) -> u64 {
    let value = reply
        .headers
        .get("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After header: {reply:?}"));
    let secs: u64 = value
        .to_str()
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("Retry-After is not delta-seconds: {value:?}"));
    assert!(secs >= 1, "Retry-After {secs}");
    secs
}

/// The header lines of a hand-written request in `session`, with `host`.
fn raw_session_lines<'a>(session: &'a Session, host: &'a str) -> Vec<String> {
    vec![
        format!("Host: {host}"),
        format!("Mcp-Session-Id: {}", session.id),
        format!("MCP-Protocol-Version: {}", session.version),
    ]
}

async fn raw_in_session(
    server: &TestServer,
    session: &Session,
    method: &str,
    host: &str,
) -> RawReply {
    let mut lines = raw_session_lines(session, host);
    let body = match method {
        "POST" => {
            lines.push("Content-Type: application/json".into());
            lines.push(format!("Accept: {ACCEPT_BOTH}"));
            ping(7).to_string()
        }
        "GET" => {
            lines.push("Accept: text/event-stream".into());
            String::new()
        }
        _ => String::new(),
    };
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let request_line = format!("{method} {} HTTP/1.1", server.path());
    raw_request(&server.addr, &request_line, &lines, body.as_bytes(), LIMIT).await
}

// ----- 202 -----

#[tokio::test]
async fn notification_post_gets_202_with_an_empty_body() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let resp = session
        .post_value(&json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }))
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body = resp.bytes().await.expect("body");
    assert!(body.is_empty(), "202 must have no body: {body:?}");
}

#[tokio::test]
async fn response_post_gets_202_with_an_empty_body() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let mut stream = SseReader::new(
        session
            .post_value(&call(1, "ask", json!({ "question": "colour?" })))
            .await,
    );
    let (_, request) = loop {
        let (id, message) = stream
            .next_message(LIMIT)
            .await
            .expect("elicitation/create on the call's stream");
        if message["method"] == "elicitation/create" {
            break (id, message);
        }
    };
    let resp = session
        .post_value(&json!({ "jsonrpc": "2.0", "id": request["id"],
                             "result": { "action": "accept", "content": { "answer": "blue" } } }))
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body = resp.bytes().await.expect("body");
    assert!(body.is_empty(), "202 must have no body: {body:?}");
    let result = loop {
        let (_, message) = stream
            .next_message(LIMIT)
            .await
            .expect("the tool's response");
        if message["id"] == json!(1) {
            break message["result"].clone();
        }
    };
    assert_eq!(result["content"][0]["text"], "blue", "{result}");
}

#[tokio::test]
async fn response_with_an_unknown_id_gets_202_and_the_session_keeps_working() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let resp = session
        .post_value(&json!({ "jsonrpc": "2.0", "id": "never-asked-42", "result": {} }))
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert!(resp.bytes().await.expect("body").is_empty());
    assert_alive(&session, 2).await;
}

// ----- 400 -----

#[tokio::test]
async fn request_without_session_id_gets_400() {
    let server = TestServer::start();
    let client = server.bounded_client(LIMIT);
    let _live = open_session(&server, LATEST).await;
    let reply = read_reply(client.post_raw(&ping(1), &[]).await).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, SERVER_ERROR);
}

#[tokio::test]
async fn body_that_is_not_json_gets_400_parse_error() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    for body in [
        "{nope",
        "not json at all",
        r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
    ] {
        let reply = send(session_post(&session).body(body)).await;
        assert_refused(&reply, StatusCode::BAD_REQUEST, PARSE_ERROR);
    }
}

#[tokio::test]
async fn json_without_jsonrpc_member_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(session_post(&session).body(r#"{"id":1,"method":"ping"}"#)).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
}

#[tokio::test]
async fn request_with_null_id_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply =
        send(session_post(&session).body(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#)).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
}

/// In a 2025-03-26 session, where arrays are legal batches, so only the contents are wrong.
#[tokio::test]
async fn array_of_numbers_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, "2025-03-26").await;
    let reply = send(session_post(&session).body("[1,2,3]")).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
}

#[tokio::test]
async fn empty_array_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, "2025-03-26").await;
    let reply = send(session_post(&session).body("[]")).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
}

#[tokio::test]
async fn batch_in_a_2025_06_18_session_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, "2025-06-18").await;
    let reply = session.post(&json!([ping(1), ping(2)])).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
    assert_alive(&session, 3).await;
}

#[tokio::test]
async fn batch_in_a_2025_11_25_session_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, "2025-11-25").await;
    let reply = session.post(&json!([ping(1), ping(2)])).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
    assert_alive(&session, 3).await;
}

#[tokio::test]
async fn initialize_inside_a_batch_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, "2025-03-26").await;
    let initialize = json!({ "jsonrpc": "2.0", "id": 9, "method": "initialize",
        "params": { "protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": { "name": "t", "version": "1" } } });
    let reply = session.post(&json!([initialize, ping(1)])).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
    // The same, with no session: a batched initialize never starts one.
    let reply = read_reply(
        server
            .bounded_client(LIMIT)
            .post_raw(&json!([initialize]), &[])
            .await,
    )
    .await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
    assert!(reply.headers.get("mcp-session-id").is_none(), "{reply:?}");
}

#[tokio::test]
async fn second_initialize_with_a_live_session_id_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = session
        .request(
            json!(5),
            "initialize",
            json!({ "protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": { "name": "t", "version": "1" } }),
        )
        .await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
    assert!(reply.headers.get("mcp-session-id").is_none(), "{reply:?}");
    assert_alive(&session, 6).await;
}

/// A POST in `session` carrying only `version` as its `MCP-Protocol-Version`.
fn post_with_version(session: &Session, version: &str) -> reqwest::RequestBuilder {
    session
        .client
        .http
        .post(&session.client.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", version)
}

/// 2024-11-05 is a handshake-era revision the server does not speak (spec 2025-06-18
/// "Protocol Version Header": unsupported → 400).
#[tokio::test]
async fn unsupported_handshake_protocol_version_header_gets_400() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(post_with_version(&session, "2024-11-05").body(ping(1).to_string())).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, SERVER_ERROR);
    assert_alive(&session, 2).await;
}

/// A version that is no handshake revision goes to the 2026-07-28 ladder even with a live
/// session id (`shared/spec/stateless-2026-07-28.md` "Unknown MCP-Protocol-Version values go
/// to the modern ladder"). A body without the per-request envelope was not written for
/// 2026-07-28 either, so the answer is -32022: the version is unsupported, and the message
/// lists the revisions of both eras.
#[tokio::test]
async fn unknown_protocol_version_header_gets_400_even_in_a_live_session() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    for version in ["1999-01-01", "2099-01-01", "latest"] {
        let reply = send(post_with_version(&session, version).body(ping(1).to_string())).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{version}: {reply:?}"
        );
        assert_eq!(
            reply.error_code(),
            Some(UNSUPPORTED_PROTOCOL_VERSION),
            "{version}: {reply:?}"
        );
        let message = reply.body.as_ref().expect("body")["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(message.contains(version), "{message}");
        for listed in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
            assert!(message.contains(listed), "{listed} missing from {message}");
        }
    }
    assert_alive(&session, 2).await;
}

#[tokio::test]
async fn every_supported_protocol_version_header_is_accepted_on_a_2025_11_25_session() {
    let server = TestServer::start();
    let session = open_session(&server, "2025-11-25").await;
    for (i, version) in ["2025-03-26", "2025-06-18", "2025-11-25"]
        .into_iter()
        .enumerate()
    {
        let id = i as i64 + 1;
        let reply = send(post_with_version(&session, version).body(ping(id).to_string())).await;
        assert_eq!(reply.status, StatusCode::OK, "{version}: {reply:?}");
        let response = reply.response(&json!(id)).expect("ping response");
        assert_eq!(response["result"], json!({}), "{version}");
    }
}

// ----- 403 -----

#[tokio::test]
async fn foreign_origin_on_post_gets_403() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(
        session_post(&session)
            .header("origin", EVIL_ORIGIN)
            .body(ping(1).to_string()),
    )
    .await;
    assert_refused(&reply, StatusCode::FORBIDDEN, SERVER_ERROR);
}

#[tokio::test]
async fn foreign_origin_on_initialize_gets_403_and_starts_no_session() {
    let server = TestServer::start();
    let client = server.bounded_client(LIMIT);
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": { "name": "t", "version": "1" } } });
    let reply = read_reply(
        client
            .post_raw(&initialize, &[("origin", EVIL_ORIGIN)])
            .await,
    )
    .await;
    assert_refused(&reply, StatusCode::FORBIDDEN, SERVER_ERROR);
    assert!(reply.headers.get("mcp-session-id").is_none(), "{reply:?}");
}

#[tokio::test]
async fn foreign_origin_on_get_gets_403() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(session_get(&session).header("origin", EVIL_ORIGIN)).await;
    assert_refused(&reply, StatusCode::FORBIDDEN, SERVER_ERROR);
}

#[tokio::test]
async fn foreign_origin_on_delete_gets_403_and_leaves_the_session_alive() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(session_delete(&session).header("origin", EVIL_ORIGIN)).await;
    assert_refused(&reply, StatusCode::FORBIDDEN, SERVER_ERROR);
    assert_alive(&session, 1).await;
}

#[tokio::test]
async fn foreign_host_on_post_gets_403() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = raw_in_session(&server, &session, "POST", EVIL_HOST).await;
    assert_raw_refused(&reply, 403, SERVER_ERROR);
}

#[tokio::test]
async fn foreign_host_on_get_gets_403() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = raw_in_session(&server, &session, "GET", EVIL_HOST).await;
    assert_raw_refused(&reply, 403, SERVER_ERROR);
}

#[tokio::test]
async fn foreign_host_on_delete_gets_403_and_leaves_the_session_alive() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = raw_in_session(&server, &session, "DELETE", EVIL_HOST).await;
    assert_raw_refused(&reply, 403, SERVER_ERROR);
    // A host that merely starts like a loopback name is foreign too.
    let reply = raw_in_session(&server, &session, "DELETE", "127.0.0.1.evil.example.com").await;
    assert_raw_refused(&reply, 403, SERVER_ERROR);
    assert_alive(&session, 1).await;
}

#[tokio::test]
async fn loopback_origin_passes_on_post_get_and_delete() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let origin = "http://localhost:1234";
    let reply = send(
        session_post(&session)
            .header("origin", origin)
            .body(ping(1).to_string()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert_eq!(
        reply.response(&json!(1)).expect("ping")["result"],
        json!({})
    );
    let get = session_get(&session)
        .header("origin", origin)
        .send()
        .await
        .expect("GET");
    assert_eq!(get.status(), StatusCode::OK);
    drop(get);
    let reply = send(session_delete(&session).header("origin", origin)).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
}

#[tokio::test]
async fn loopback_host_passes_on_post_get_and_delete() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let port = server.addr.rsplit(':').next().expect("port").to_string();
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let reply = raw_in_session(&server, &session, "POST", &host).await;
        assert_eq!(reply.status, 200, "POST with Host {host}: {reply:?}");
        let reply = raw_in_session(&server, &session, "GET", &host).await;
        assert_eq!(reply.status, 200, "GET with Host {host}: {reply:?}");
        assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    }
    let reply = raw_in_session(&server, &session, "DELETE", &format!("127.0.0.1:{port}")).await;
    assert_eq!(reply.status, 200, "DELETE: {reply:?}");
}

// ----- 404 -----

/// A session that never existed.
fn unknown_session(server: &TestServer) -> Session {
    Session {
        client: server.bounded_client(LIMIT),
        id: UNKNOWN_SESSION.into(),
        version: LATEST.into(),
        init_result: Value::Null,
    }
}

#[tokio::test]
async fn unknown_session_id_on_post_gets_404() {
    let server = TestServer::start();
    let reply = unknown_session(&server).post(&ping(1)).await;
    assert_refused(&reply, StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
}

#[tokio::test]
async fn unknown_session_id_on_get_gets_404() {
    let server = TestServer::start();
    let reply = send(session_get(&unknown_session(&server))).await;
    assert_refused(&reply, StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
}

#[tokio::test]
async fn unknown_session_id_on_delete_gets_404() {
    let server = TestServer::start();
    let reply = send(session_delete(&unknown_session(&server))).await;
    assert_refused(&reply, StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
}

#[tokio::test]
async fn deleted_session_gets_404_on_post_get_and_delete() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    assert_eq!(session.delete().await, StatusCode::OK);
    let reply = session.post(&ping(1)).await;
    assert_refused(&reply, StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
    let reply = session
        .post(&json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }))
        .await;
    assert_refused(&reply, StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
    let reply = send(session_get(&session)).await;
    assert_refused(&reply, StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
    let reply = send(session_delete(&session)).await;
    assert_refused(&reply, StatusCode::NOT_FOUND, SESSION_NOT_FOUND);
}

// ----- 405 -----

async fn assert_method_not_allowed(method: reqwest::Method) {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let req = session
        .client
        .http
        .request(method.clone(), &session.client.url)
        .header("content-type", "application/json")
        .body(ping(1).to_string());
    let reply = send(session.with_session_headers(req)).await;
    assert_refused(&reply, StatusCode::METHOD_NOT_ALLOWED, SERVER_ERROR);
    let allow = reply
        .headers
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("{method}: 405 without Allow: {reply:?}"));
    let allowed: Vec<&str> = allow.split(',').map(str::trim).collect();
    for m in ["GET", "POST", "DELETE"] {
        assert!(allowed.contains(&m), "Allow {allow:?} lacks {m}");
    }
    assert!(!allowed.contains(&method.as_str()), "Allow {allow:?}");
}

#[tokio::test]
async fn put_on_the_endpoint_gets_405_with_allow() {
    assert_method_not_allowed(reqwest::Method::PUT).await;
}

#[tokio::test]
async fn patch_on_the_endpoint_gets_405_with_allow() {
    assert_method_not_allowed(reqwest::Method::PATCH).await;
}

// ----- 406 -----

fn post_accepting(session: &Session, accept: &str) -> reqwest::RequestBuilder {
    session
        .with_session_headers(session.client.http.post(&session.client.url))
        .header("content-type", "application/json")
        .header("accept", accept)
        .body(ping(1).to_string())
}

#[tokio::test]
async fn post_accepting_only_json_gets_406() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(post_accepting(&session, "application/json")).await;
    assert_refused(&reply, StatusCode::NOT_ACCEPTABLE, SERVER_ERROR);
}

#[tokio::test]
async fn post_accepting_only_event_stream_gets_406() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(post_accepting(&session, "text/event-stream")).await;
    assert_refused(&reply, StatusCode::NOT_ACCEPTABLE, SERVER_ERROR);
}

#[tokio::test]
async fn get_not_accepting_event_stream_gets_406() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let req = session
        .client
        .http
        .get(&session.client.url)
        .header("accept", "application/json");
    let reply = send(session.with_session_headers(req)).await;
    assert_refused(&reply, StatusCode::NOT_ACCEPTABLE, SERVER_ERROR);
}

// ----- 413 -----

/// With a real client (reqwest/hyper, as rmcp uses) and `Content-Length`: the client is
/// still writing the body when the answer comes, and must still be able to read the 413.
#[tokio::test]
async fn body_over_the_4_mib_default_gets_413() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let resp = session_post(&session)
        .body(ping_of_length(DEFAULT_MAX_BODY + 1))
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!("no HTTP reply reached the client while it was sending the body: {e:?}")
        });
    let reply = read_reply(resp).await;
    assert_refused(&reply, StatusCode::PAYLOAD_TOO_LARGE, SERVER_ERROR);
    assert_alive(&session, 2).await;
}

#[tokio::test]
async fn body_of_exactly_the_4_mib_default_is_accepted() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let reply = send(session_post(&session).body(ping_of_length(DEFAULT_MAX_BODY))).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(
        reply.response(&json!(1)).expect("ping")["result"],
        json!({})
    );
}

/// The head of a POST in `session` whose body has not been written yet.
fn upload_lines(server: &TestServer, session: &Session) -> Vec<String> {
    let mut lines = raw_session_lines(session, &server.addr);
    lines.push("Content-Type: application/json".into());
    lines.push(format!("Accept: {ACCEPT_BOTH}"));
    lines
}

#[tokio::test]
async fn body_of_64_mib_with_content_length_gets_413_without_hanging() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let lines = upload_lines(&server, &session);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let request_line = format!("POST {} HTTP/1.1", server.path());
    let reply = raw_upload(&server.addr, &request_line, &lines, 64 * MIB, false, LIMIT).await;
    assert_raw_refused(&reply, 413, SERVER_ERROR);
    assert_alive(&session, 1).await;
}

#[tokio::test]
async fn chunked_body_of_64_mib_gets_413_without_hanging() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let lines = upload_lines(&server, &session);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let request_line = format!("POST {} HTTP/1.1", server.path());
    let reply = raw_upload(&server.addr, &request_line, &lines, 64 * MIB, true, LIMIT).await;
    assert_raw_refused(&reply, 413, SERVER_ERROR);
    assert_alive(&session, 1).await;
}

#[tokio::test]
async fn configured_max_body_bytes_is_honoured() {
    let server = TestServer::with_config("[http]\nmax_body_bytes = 1024\n");
    let session = open_session(&server, LATEST).await;
    let reply = send(session_post(&session).body(ping_of_length(1025))).await;
    assert_refused(&reply, StatusCode::PAYLOAD_TOO_LARGE, SERVER_ERROR);
    let reply = send(session_post(&session).body(ping_of_length(1024))).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    // Streamed without Content-Length, the limit holds as well.
    let lines = upload_lines(&server, &session);
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let request_line = format!("POST {} HTTP/1.1", server.path());
    let reply = raw_upload(&server.addr, &request_line, &lines, 4096, true, LIMIT).await;
    assert_raw_refused(&reply, 413, SERVER_ERROR);
}

// ----- 415 -----

#[tokio::test]
async fn post_with_text_plain_content_type_gets_415() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let req = session
        .with_session_headers(session.client.http.post(&session.client.url))
        .header("content-type", "text/plain")
        .header("accept", ACCEPT_BOTH)
        .body(ping(1).to_string());
    let reply = send(req).await;
    assert_refused(&reply, StatusCode::UNSUPPORTED_MEDIA_TYPE, SERVER_ERROR);
}

// ----- 503 and 429: our limits -----

fn initialize_body() -> Value {
    json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": { "protocolVersion": LATEST, "capabilities": {},
                        "clientInfo": { "name": "t", "version": "1" } } })
}

#[tokio::test]
async fn initialize_beyond_max_sessions_gets_503_with_retry_after() {
    let server = TestServer::with_config("[sessions]\nmax_sessions = 2\n");
    let _first = open_session(&server, LATEST).await;
    let _second = open_session(&server, LATEST).await;
    let client = server.bounded_client(LIMIT);
    let reply = read_reply(client.post_raw(&initialize_body(), &[]).await).await;
    assert_refused(&reply, StatusCode::SERVICE_UNAVAILABLE, SERVER_ERROR);
    retry_after(&reply);
    assert!(reply.headers.get("mcp-session-id").is_none(), "{reply:?}");
}

#[tokio::test]
async fn delete_frees_a_session_slot() {
    let server = TestServer::with_config("[sessions]\nmax_sessions = 2\n");
    let first = open_session(&server, LATEST).await;
    let second = open_session(&server, LATEST).await;
    let client = server.bounded_client(LIMIT);
    let reply = read_reply(client.post_raw(&initialize_body(), &[]).await).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{reply:?}");
    assert_eq!(first.delete().await, StatusCode::OK);
    let third = open_session(&server, LATEST).await;
    assert_ne!(third.id, first.id);
    assert_alive(&second, 1).await;
    assert_alive(&third, 1).await;
}

#[tokio::test]
async fn request_beyond_max_in_flight_gets_429_with_retry_after() {
    let config = format!("[sessions]\nmax_in_flight = 2\n{BUILTIN_TOOLS_TOML}");
    let server = TestServer::with_config(&config);
    let session = open_session(&server, LATEST).await;
    // Headers arrive once the call's first event (its "sleeping" log) exists, so both
    // calls are in flight when these return.
    let first = session
        .post_value(&call(1, "sleep", json!({ "ms": 2000 })))
        .await;
    let second = session
        .post_value(&call(2, "sleep", json!({ "ms": 2000 })))
        .await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(second.status(), StatusCode::OK);
    let reply = session.post(&call(3, "sleep", json!({ "ms": 2000 }))).await;
    assert_refused(&reply, StatusCode::TOO_MANY_REQUESTS, SERVER_ERROR);
    retry_after(&reply);
    for (id, resp) in [(1, first), (2, second)] {
        let reply = read_reply(resp).await;
        let response = reply.response(&json!(id)).expect("sleep response");
        assert_eq!(response["result"]["content"][0]["text"], "slept 2000 ms");
    }
    // Both finished: the slots are free again.
    let text = session
        .call_tool_text(json!(4), "echo", json!({ "text": "again" }))
        .await;
    assert_eq!(text, "again");
}

#[tokio::test]
async fn a_session_at_max_in_flight_still_answers_ping_and_takes_cancellations() {
    let config = format!("[sessions]\nmax_in_flight = 1\n{BUILTIN_TOOLS_TOML}");
    let server = TestServer::with_config(&config);
    let session = open_session(&server, LATEST).await;
    let busy = session
        .post_value(&call(1, "sleep", json!({ "ms": 60000 })))
        .await;
    assert_eq!(busy.status(), StatusCode::OK);
    assert_alive(&session, 2).await;
    let cancelled = session
        .notify(
            "notifications/cancelled",
            Some(json!({ "requestId": 1, "reason": "test" })),
        )
        .await;
    assert_eq!(cancelled, StatusCode::ACCEPTED);
    // The cancelled call freed its slot.
    let text = session
        .call_tool_text(json!(3), "echo", json!({ "text": "free" }))
        .await;
    assert_eq!(text, "free");
}

// ----- batches (2025-03-26 only) -----

#[tokio::test]
async fn batch_of_requests_and_a_notification_in_a_2025_03_26_session_gets_one_json_array() {
    let server = TestServer::start();
    let session = open_session(&server, "2025-03-26").await;
    let batch = json!([
        ping(1),
        { "jsonrpc": "2.0", "id": 2, "method": "tools/list" },
        { "jsonrpc": "2.0", "method": "notifications/roots/list_changed" },
    ]);
    let reply = session.post(&batch).await;
    assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
    assert!(
        reply.content_type.starts_with("application/json"),
        "{reply:?}"
    );
    let items = reply
        .body
        .as_ref()
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("body is not a JSON array: {reply:?}"));
    assert_eq!(items.len(), 2, "one response per request: {items:?}");
    let mut ids: Vec<i64> = items.iter().filter_map(|m| m["id"].as_i64()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);
    assert_eq!(
        reply.response(&json!(1)).expect("ping")["result"],
        json!({})
    );
    let tools = &reply.response(&json!(2)).expect("tools/list")["result"]["tools"];
    assert_eq!(tools.as_array().map(Vec::len), Some(4), "{tools}");
}

#[tokio::test]
async fn batch_of_notifications_only_in_a_2025_03_26_session_gets_202() {
    let server = TestServer::start();
    let session = server
        .bounded_client(LIMIT)
        .initialize("2025-03-26", json!({}))
        .await;
    let batch = json!([
        { "jsonrpc": "2.0", "method": "notifications/initialized" },
        { "jsonrpc": "2.0", "method": "notifications/roots/list_changed" },
    ]);
    let resp = session.post_value(&batch).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    assert!(resp.bytes().await.expect("body").is_empty());
    assert_alive(&session, 1).await;
}

// ----- hostile input -----

#[tokio::test]
async fn origin_with_userinfo_gets_403() {
    let server = TestServer::start();
    for origin in [
        "http://127.0.0.1:1@evil.com",
        "http://localhost@evil.com",
        "http://localhost:80/path",
    ] {
        let reply = send(
            server
                .bounded_client(LIMIT)
                .http
                .post(&server.url)
                .header("content-type", "application/json")
                .header("accept", ACCEPT_BOTH)
                .header("origin", origin)
                .body(ping(1).to_string()),
        )
        .await;
        assert_refused(&reply, StatusCode::FORBIDDEN, SERVER_ERROR);
    }
}

#[tokio::test]
async fn a_message_with_both_method_and_result_gets_400_invalid_request() {
    let server = TestServer::start();
    let session = open_session(&server, LATEST).await;
    let hybrid = json!({ "jsonrpc": "2.0", "id": 5, "method": "ping", "result": {} });
    let reply = send(session_post(&session).body(hybrid.to_string())).await;
    assert_refused(&reply, StatusCode::BAD_REQUEST, INVALID_REQUEST);
    assert_alive(&session, 6).await;
}

#[tokio::test]
async fn health_probe_checks_host_and_tells_remote_clients_nothing_more_than_ok() {
    let server = TestServer::start();
    let refused = raw_request(
        &server.addr,
        "GET /healthz HTTP/1.1",
        &[&format!("Host: {EVIL_HOST}")],
        b"",
        LIMIT,
    )
    .await;
    assert_raw_refused(&refused, 403, SERVER_ERROR);
    let refused = raw_request(
        &server.addr,
        "GET /healthz HTTP/1.1",
        &["Host: 127.0.0.1", &format!("Origin: {EVIL_ORIGIN}")],
        b"",
        LIMIT,
    )
    .await;
    assert_raw_refused(&refused, 403, SERVER_ERROR);
    // A loopback peer (this test) also gets the counts.
    let local = raw_request(
        &server.addr,
        "GET /healthz HTTP/1.1",
        &["Host: 127.0.0.1"],
        b"",
        LIMIT,
    )
    .await;
    assert_eq!(local.status, 200);
    let body = local.json().expect("JSON");
    assert_eq!(body["status"], "ok");
    assert!(body["sessions"].is_u64(), "{body}");
}
