//! Where a token stops and where a protected server may listen.
//!
//! - No token passthrough (spec `basic/authorization`, "Access token privilege
//!   restriction"): an HTTP tool calls its upstream with the server's own credentials or
//!   none, never with the client's token. The upstream here records every request whole.
//! - A server that authenticates may listen beyond loopback; one that does not refuses to,
//!   unless told `--allow-unauthenticated`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use serde_json::json;

use super::fixture::{AuthToml, Protected, bearer_client, token_for};
use super::keys::{JwksServer, Signer, serve_on_own_thread};
use crate::common::modern::{LIMIT, Modern, first_text};
use crate::common::{TempDir, TestServer, run_binary};

/// One request as the upstream received it.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        let mut values = self.headers.iter().filter(|(k, _)| k == name);
        values.next().map(|(_, v)| v.as_str())
    }

    fn whole(&self) -> String {
        let headers: Vec<String> = self
            .headers
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        format!("{}\n{}\n\n{}", self.target, headers.join("\n"), self.body)
    }
}

/// The answer of the recording upstream: a minimal MCP server for JSON-RPC bodies (one
/// tool, `lookup`), and a small JSON object for anything else (an HTTP tool's request).
fn answer(body: &str) -> (axum::http::StatusCode, String) {
    let message: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let id = message.get("id").cloned();
    let result = match message.get("method").and_then(|m| m.as_str()) {
        None => {
            return (
                axum::http::StatusCode::OK,
                json!({ "ok": true }).to_string(),
            );
        }
        Some("initialize") => {
            json!({ "protocolVersion": "2025-11-25", "capabilities": { "tools": {} },
                                      "serverInfo": { "name": "recording", "version": "1" } })
        }
        Some("tools/list") => {
            json!({ "tools": [{ "name": "lookup", "inputSchema": { "type": "object" } }] })
        }
        Some("tools/call") => json!({ "content": [{ "type": "text", "text": "looked up" }] }),
        Some(_) if id.is_none() => return (axum::http::StatusCode::ACCEPTED, String::new()),
        Some(_) => json!({}),
    };
    let response = json!({ "jsonrpc": "2.0", "id": id, "result": result });
    (axum::http::StatusCode::OK, response.to_string())
}

/// An upstream that answers every request (see [`answer`]) and records it.
fn recording_upstream() -> (
    String,
    Arc<Mutex<Vec<Seen>>>,
    tokio::sync::oneshot::Sender<()>,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let router = axum::Router::new().fallback(
        move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
            let record = Arc::clone(&record);
            async move {
                let headers = headers
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into(),
                        )
                    })
                    .collect();
                let body = String::from_utf8_lossy(&body).into_owned();
                let (status, answer) = answer(&body);
                record.lock().expect("record").push(Seen {
                    target: format!("{method} {uri}"),
                    headers,
                    body,
                });
                if method == Method::GET {
                    return (
                        axum::http::StatusCode::METHOD_NOT_ALLOWED,
                        [("content-type", "text/plain")],
                        String::new(),
                    );
                }
                (status, [("content-type", "application/json")], answer)
            }
        },
    );
    let (addr, stop) = serve_on_own_thread(router);
    (format!("http://{addr}"), seen, stop)
}

/// Fails if any piece of the JWT `token` is in `text`: each of its three parts, and the
/// whole.
fn assert_no_token(text: &str, token: &str) {
    for piece in token.split('.').chain([token]) {
        assert!(
            !text.contains(piece),
            "the client's token reached an upstream:\n{text}"
        );
    }
}

#[tokio::test]
async fn http_tools_never_forward_the_clients_token() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let (upstream, seen, _stop) = recording_upstream();
    let tools = format!(
        r#"
[[tools]]
name = "lookup"
url = "{upstream}/lookup"

[[tools]]
name = "keyed"
url = "{upstream}/keyed"
method = "POST"
headers = {{ Authorization = "Bearer ${{UPSTREAM_KEY}}" }}
input_schema = {{ type = "object", properties = {{ q = {{ type = "string" }} }} }}
"#
    );
    let config = AuthToml::jwt(&jwks.url)
        .before_auth(&tools)
        .env("UPSTREAM_KEY", "server-own-credential");
    let server = Protected::start(&config);
    let token = token_for(&key, "alice");
    let client = server.client(&token);

    let session = client.connect().await;
    session.call_tool_text(json!(1), "lookup", json!({})).await;
    session
        .call_tool_text(json!(2), "keyed", json!({ "q": "x" }))
        .await;
    let result = Modern::call(3, "lookup", json!({})).result(&client).await;
    first_text(&result);
    Modern::call(4, "keyed", json!({ "q": "y" }))
        .result(&client)
        .await;

    let seen = seen.lock().expect("record").clone();
    assert_eq!(seen.len(), 4, "every call reached the upstream: {seen:#?}");
    for request in &seen {
        assert_no_token(&request.whole(), &token);
        if request.target.contains("/keyed") {
            assert_eq!(
                request.header("authorization"),
                Some("Bearer server-own-credential"),
                "the upstream gets the server's own credential: {request:#?}"
            );
        } else {
            assert_eq!(request.header("authorization"), None, "{request:#?}");
        }
    }
}

#[tokio::test]
async fn upstream_servers_never_receive_the_clients_token() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let (upstream, seen, _stop) = recording_upstream();
    let everything = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/upstreams/node_modules/.bin/mcp-server-everything");
    assert!(everything.exists(), "run scripts/upstreams.sh");
    let upstreams = format!(
        r#"
[[upstreams]]
name = "up"
url = "{upstream}/mcp"
headers = {{ Authorization = "Bearer ${{UPSTREAM_KEY}}" }}

[[upstreams]]
name = "every"
command = ["{}"]
"#,
        everything.display()
    );
    let config = AuthToml::jwt(&jwks.url)
        .before_auth(&upstreams)
        .env("UPSTREAM_KEY", "server-own-credential");
    let server = Protected::start(&config);
    let token = token_for(&key, "alice");
    let client = server.client(&token);

    let session = client.connect().await;
    let text = session
        .call_tool_text(json!(1), "up__lookup", json!({}))
        .await;
    assert_eq!(text, "looked up");
    let result = Modern::call(2, "up__lookup", json!({}))
        .result(&client)
        .await;
    assert_eq!(first_text(&result), "looked up");
    // A stdio upstream's environment is the server's, never the client's credentials.
    let env = session
        .call_tool_text(json!(3), "every__get-env", json!({}))
        .await;

    assert_no_token(&env, &token);
    let seen = seen.lock().expect("record").clone();
    let calls = seen
        .iter()
        .filter(|s| s.body.contains("tools/call"))
        .count();
    assert_eq!(calls, 2, "both calls went upstream: {seen:#?}");
    for request in &seen {
        assert_no_token(&request.whole(), &token);
        assert_eq!(
            request.header("authorization"),
            Some("Bearer server-own-credential"),
            "{request:#?}"
        );
    }
}

#[tokio::test]
async fn a_protected_server_may_listen_beyond_loopback_and_an_open_one_may_not() {
    const TOKEN: &str = "ops-token-8d41c07e";
    let dir = TempDir::new("auth-listen");
    let config = AuthToml::static_only().static_token("ops", "MCP_OPS_TOKEN", TOKEN, &[]);
    let protected = dir.write("protected.toml", &config.render());
    let open = dir.write("open.toml", crate::common::BUILTIN_TOOLS_TOML);

    let open = open.display().to_string();
    let refused = run_binary(
        &[
            "--listen",
            "0.0.0.0:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--config",
            &open,
        ],
        Duration::from_secs(10),
    )
    .expect("without [auth] the server refuses 0.0.0.0 instead of serving it");
    assert!(!refused.0.success(), "{}", refused.1);
    assert!(refused.1.contains("allow_unauthenticated"), "{}", refused.1);

    let path = protected.display().to_string();
    let server = TestServer::with_args(
        &["--listen", "0.0.0.0:0", "--config", &path],
        &[("MCP_OPS_TOKEN", TOKEN)],
    );
    let session = bearer_client(&server.url, TOKEN).connect().await;
    let text = session
        .call_tool_text(json!(1), "echo", json!({ "text": "reachable" }))
        .await;
    assert_eq!(text, "reachable");
    let anonymous = server.bounded_client(LIMIT);
    let resp = anonymous
        .post_raw(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }), &[])
        .await;
    assert_eq!(resp.status(), reqwest::StatusCode::UNAUTHORIZED);
}
