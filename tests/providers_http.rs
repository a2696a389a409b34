//! HTTP tools, against a real HTTP server on 127.0.0.1 started by the test.

mod common;

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, RawQuery};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use common::{TempDir, TestServer};
use serde_json::{Value, json};

/// A small API: JSON weather, an echo of POSTed JSON that checks a bearer token, plain
/// text, a failing route and a slow one.
async fn start_api() -> String {
    let app = axum::Router::new()
        .route(
            "/weather/{city}",
            get(
                |Path(city): Path<String>, RawQuery(query): RawQuery| async move {
                    let units = query
                        .as_deref()
                        .and_then(|q| q.strip_prefix("units="))
                        .unwrap_or("metric")
                        .to_string();
                    Json(json!({ "city": city, "units": units, "temp": 21 }))
                },
            ),
        )
        .route(
            "/echo",
            post(|headers: HeaderMap, Json(body): Json<Value>| async move {
                if headers.get("authorization").and_then(|v| v.to_str().ok())
                    != Some("Bearer s3cret")
                {
                    return (
                        StatusCode::UNAUTHORIZED,
                        Json(json!({ "error": "bad token" })),
                    );
                }
                (StatusCode::OK, Json(json!({ "received": body })))
            }),
        )
        .route("/text", get(|| async { "plain text body" }))
        .route(
            "/fail",
            get(|| async {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "upstream is down for maintenance",
                )
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

async fn server(api: &str) -> (TempDir, TestServer) {
    let dir = TempDir::new("http-tools");
    let config = format!(
        r#"
[[tools]]
name = "weather"
title = "Weather"
url = "{api}/weather/{{city}}{{?units}}"
annotations = {{ readOnlyHint = true, open_world_hint = true }}
output_schema = {{ type = "object", properties = {{ temp = {{ type = "number" }} }} }}

[[tools]]
name = "echo_json"
url = "{api}/echo"
method = "POST"
headers = {{ Authorization = "Bearer ${{API_TOKEN}}" }}
input_schema = {{ type = "object", properties = {{ message = {{ type = "string" }} }}, required = ["message"] }}

[[tools]]
name = "text"
url = "{api}/text"

[[tools]]
name = "fail"
url = "{api}/fail"

[[tools]]
name = "slow"
url = "{api}/slow"
timeout = "300ms"
"#
    );
    let path = dir.write("config.toml", &config);
    let server = TestServer::with_config_file(&path, &[("API_TOKEN", "s3cret")]);
    (dir, server)
}

async fn call(session: &common::Session, name: &str, args: Value) -> Value {
    session
        .call(
            json!(1),
            "tools/call",
            json!({ "name": name, "arguments": args }),
        )
        .await
}

#[tokio::test]
async fn json_response_becomes_structured_content_and_text() {
    let api = start_api().await;
    let (_dir, server) = server(&api).await;
    let session = server.client().connect().await;
    let result = call(
        &session,
        "weather",
        json!({ "city": "São Paulo", "units": "imperial" }),
    )
    .await;
    assert!(result.get("isError").is_none(), "{result}");
    assert_eq!(
        result["structuredContent"]["city"], "São Paulo",
        "the path segment is percent-encoded and decoded"
    );
    assert_eq!(result["structuredContent"]["units"], "imperial");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["temp"], 21);

    let list = session.call(json!(2), "tools/list", json!({})).await;
    let weather = &list["tools"][0];
    assert_eq!(weather["title"], "Weather");
    assert_eq!(
        weather["annotations"],
        json!({ "readOnlyHint": true, "openWorldHint": true })
    );
    assert_eq!(
        weather["inputSchema"]["required"],
        json!(["city"]),
        "query variables are optional"
    );
    assert_eq!(weather["outputSchema"]["type"], "object");
}

#[tokio::test]
async fn post_sends_arguments_as_json_with_secret_header() {
    let api = start_api().await;
    let (_dir, server) = server(&api).await;
    let session = server.client().connect().await;
    let result = call(&session, "echo_json", json!({ "message": "hi" })).await;
    assert!(result.get("isError").is_none(), "{result}");
    assert_eq!(
        result["structuredContent"]["received"],
        json!({ "message": "hi" })
    );
    let text = call(&session, "text", json!({})).await;
    assert_eq!(text["content"][0]["text"], "plain text body");
    assert!(text.get("structuredContent").is_none());
}

#[tokio::test]
async fn non_2xx_status_is_an_error_result_with_an_excerpt() {
    let api = start_api().await;
    let (_dir, server) = server(&api).await;
    let session = server.client().connect().await;
    let result = call(&session, "fail", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("503"), "{text}");
    assert!(text.contains("upstream is down"), "{text}");
    assert!(
        !text.contains("127.0.0.1"),
        "the URL (which may hold secrets) is not echoed"
    );
}

#[tokio::test]
async fn slow_upstream_times_out_as_an_error_result() {
    let api = start_api().await;
    let (_dir, server) = server(&api).await;
    let session = server.client().connect().await;
    let started = std::time::Instant::now();
    let result = call(&session, "slow", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("timed out")
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn missing_env_secret_of_a_required_tool_is_a_located_config_error() {
    let dir = TempDir::new("http-check");
    let path = dir.write(
        "bad.toml",
        "[[tools]]\nname = \"a\"\nurl = \"http://127.0.0.1:1/\"\n\n[[tools]]\nname = \"b\"\nurl = \"http://127.0.0.1:1/\"\nrequired = true\nheaders = { X-Key = \"${MCP_ACTOR_SURELY_UNSET}\" }\n",
    );
    let (status, _, stderr) = common::run_check(&path, &[]);
    assert!(!status.success());
    assert!(stderr.contains("bad.toml:9:"), "{stderr}");
    assert!(
        stderr.contains("MCP_ACTOR_SURELY_UNSET is not set"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------
// Hostile arguments and hostile upstreams: what the URL template and the redirect policy
// guarantee. Every upstream here records each request it receives, so a test can assert
// that a refused call never reached the network and that no credential left its origin.
// ---------------------------------------------------------------------------------------

/// One request as an upstream saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    api_key: Option<String>,
}

#[derive(Clone, Default)]
struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<Seen>>>);

impl Recorder {
    fn seen(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

/// An upstream that records every request and answers 200 with the path it saw, except
/// `/redirect?to=URL`, which answers 302 to URL (percent-decoded), and `/redirect` alone,
/// which redirects to itself forever.
async fn start_recorder() -> (String, Recorder) {
    let recorder = Recorder::default();
    let log = recorder.clone();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri, headers: HeaderMap| {
        let log = log.clone();
        async move {
            let header = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let path = uri.path().to_string();
            log.0.lock().unwrap().push(Seen {
                path: path.clone(),
                authorization: header("authorization"),
                api_key: header("x-api-key"),
            });
            if path == "/redirect" {
                let to = uri
                    .query()
                    .and_then(|q| q.strip_prefix("to="))
                    .map_or_else(|| "/redirect".to_string(), percent_decode);
                return (
                    StatusCode::FOUND,
                    [(axum::http::header::LOCATION, to)],
                    Json(json!({ "redirecting": true })),
                );
            }
            (
                StatusCode::OK,
                [(axum::http::header::CACHE_CONTROL, "no-store".to_string())],
                Json(json!({ "path": path })),
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), recorder)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A server whose only configuration is `tools` (TOML `[[tools]]` tables), with the
/// secrets `API_TOKEN = s3cret` and `API_KEY = k3y` in its environment.
fn server_with_tools(tools: &str) -> (TempDir, TestServer) {
    let dir = TempDir::new("http-guards");
    let path = dir.write("config.toml", tools);
    let server =
        TestServer::with_config_file(&path, &[("API_TOKEN", "s3cret"), ("API_KEY", "k3y")]);
    (dir, server)
}

fn error_text(result: &Value) -> String {
    assert_eq!(
        result["isError"], true,
        "expected an error result: {result}"
    );
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn dot_segment_arguments_are_refused_before_any_request() {
    let (api, upstream) = start_recorder().await;
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "create_issue"
url = "{api}/repos/{{owner}}/{{repo}}/issues"
method = "POST"
headers = {{ Authorization = "Bearer ${{API_TOKEN}}" }}
input_schema = {{ type = "object", properties = {{ owner = {{ type = "string" }}, repo = {{ type = "string" }}, title = {{ type = "string" }} }}, required = ["owner", "repo"] }}

[[tools]]
name = "profile"
url = "{api}/users/{{user}}/profile"

[[tools]]
name = "segments"
url = "{api}/files{{/parts*}}"
input_schema = {{ type = "object", properties = {{ parts = {{ type = "array", items = {{ type = "string" }} }} }} }}
"#
    ));
    let session = server.client().connect().await;
    let result = call(
        &session,
        "create_issue",
        json!({ "owner": "..", "repo": "..", "title": "pwned" }),
    )
    .await;
    let text = error_text(&result);
    assert!(text.contains("owner") || text.contains(".."), "{text}");
    for user in ["..", "."] {
        let result = call(&session, "profile", json!({ "user": user })).await;
        let text = error_text(&result);
        assert!(text.contains("path segment"), "{text}");
    }
    let result = call(&session, "segments", json!({ "parts": ["a", "..", ".."] })).await;
    error_text(&result);
    assert!(
        upstream.seen().is_empty(),
        "refused calls must not reach the upstream: {:?}",
        upstream.seen()
    );

    let fine = call(&session, "profile", json!({ "user": "..a" })).await;
    assert!(fine.get("isError").is_none(), "{fine}");
    assert_eq!(fine["structuredContent"]["path"], "/users/..a/profile");
}

#[tokio::test]
async fn percent_encoded_dots_stay_inside_their_segment_or_are_refused() {
    let (api, upstream) = start_recorder().await;
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "profile"
url = "{api}/users/{{user}}/profile"

[[tools]]
name = "under_files"
url = "{api}/files/{{+path}}"
"#
    ));
    let session = server.client().connect().await;
    for user in ["%2e%2e", "%2E%2e", ".%2e", "%2e", "..%2f..", "..\\.."] {
        let result = call(&session, "profile", json!({ "user": user })).await;
        if result.get("isError").is_some() {
            continue;
        }
        let path = result["structuredContent"]["path"].as_str().unwrap();
        assert!(
            path.starts_with("/users/") && path.ends_with("/profile"),
            "{user:?} reached {path}"
        );
        assert_eq!(path.matches('/').count(), 3, "{user:?} reached {path}");
    }
    for path in ["a/%2e%2e/%2E%2E/admin", "a/../../admin", "a/./b", "%2e%2e"] {
        let result = call(&session, "under_files", json!({ "path": path })).await;
        let text = error_text(&result);
        assert!(text.contains("path segment"), "{path:?}: {text}");
    }
    assert!(
        upstream
            .seen()
            .iter()
            .all(|seen| seen.path.starts_with("/users/") || seen.path.starts_with("/files/")),
        "{:?}",
        upstream.seen()
    );
    let fine = call(&session, "under_files", json!({ "path": "docs/a.txt" })).await;
    assert_eq!(
        fine["structuredContent"]["path"], "/files/docs/a.txt",
        "{fine}"
    );
}

#[tokio::test]
async fn reserved_expansion_cannot_change_the_host_port_or_user_info() {
    let (api, upstream) = start_recorder().await;
    let (elsewhere, other) = start_recorder().await;
    let other_authority = elsewhere.trim_start_matches("http://");
    let api_authority = api.trim_start_matches("http://");
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "raw_path"
url = "{api}{{+path}}"
headers = {{ Authorization = "Bearer ${{API_TOKEN}}" }}
"#
    ));
    let session = server.client().connect().await;
    for path in [
        format!("@{other_authority}/x"),
        format!("@{api_authority}/x"),
        ":1@{other_authority}/x".replace("{other_authority}", other_authority),
        "0/x".to_string(),
        format!(".{other_authority}/x"),
    ] {
        let result = call(&session, "raw_path", json!({ "path": path })).await;
        let text = error_text(&result);
        assert!(
            text.contains("host") || text.contains("not a valid URL"),
            "{path:?}: {text}"
        );
        assert!(!text.contains("s3cret"), "{text}");
    }
    assert!(other.seen().is_empty(), "{:?}", other.seen());
    assert!(upstream.seen().is_empty(), "{:?}", upstream.seen());

    let fine = call(&session, "raw_path", json!({ "path": "/items/1" })).await;
    assert_eq!(fine["structuredContent"]["path"], "/items/1", "{fine}");
    assert_eq!(
        upstream.seen()[0].authorization.as_deref(),
        Some("Bearer s3cret")
    );
}

#[tokio::test]
async fn cross_origin_redirects_are_not_followed_by_default() {
    let (api, upstream) = start_recorder().await;
    let (elsewhere, other) = start_recorder().await;
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "go"
url = "{api}/redirect{{?to}}"
headers = {{ Authorization = "Bearer ${{API_TOKEN}}", X-Api-Key = "${{API_KEY}}" }}
"#
    ));
    let session = server.client().connect().await;
    let result = call(
        &session,
        "go",
        json!({ "to": format!("{elsewhere}/collect") }),
    )
    .await;
    let text = error_text(&result);
    assert!(text.contains("redirect"), "{text}");
    assert!(text.contains("follow_redirects"), "{text}");
    assert!(other.seen().is_empty(), "{:?}", other.seen());
    assert_eq!(upstream.seen().len(), 1);
}

#[tokio::test]
async fn followed_cross_origin_redirects_never_carry_the_configured_headers() {
    let (api, _upstream) = start_recorder().await;
    let (elsewhere, other) = start_recorder().await;
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "go_anywhere"
url = "{api}/redirect{{?to}}"
follow_redirects = "any"
headers = {{ Authorization = "Bearer ${{API_TOKEN}}", X-Api-Key = "${{API_KEY}}" }}
"#
    ));
    let session = server.client().connect().await;
    let result = call(
        &session,
        "go_anywhere",
        json!({ "to": format!("{elsewhere}/collect") }),
    )
    .await;
    assert!(result.get("isError").is_none(), "{result}");
    assert_eq!(result["structuredContent"]["path"], "/collect");
    let seen = other.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].authorization, None, "{seen:?}");
    assert_eq!(seen[0].api_key, None, "{seen:?}");
}

#[tokio::test]
async fn same_origin_redirects_are_followed_with_the_headers() {
    let (api, upstream) = start_recorder().await;
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "go"
url = "{api}/redirect{{?to}}"
headers = {{ X-Api-Key = "${{API_KEY}}" }}
"#
    ));
    let session = server.client().connect().await;
    let result = call(&session, "go", json!({ "to": "/landing" })).await;
    assert!(result.get("isError").is_none(), "{result}");
    assert_eq!(result["structuredContent"]["path"], "/landing");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].api_key.as_deref(), Some("k3y"));
}

#[tokio::test]
async fn redirects_are_not_followed_when_disabled_and_are_bounded() {
    let (api, upstream) = start_recorder().await;
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "stay"
url = "{api}/redirect{{?to}}"
follow_redirects = "none"

[[tools]]
name = "loop"
url = "{api}/redirect"
"#
    ));
    let session = server.client().connect().await;
    let result = call(&session, "stay", json!({ "to": "/landing" })).await;
    let text = error_text(&result);
    assert!(text.contains("302"), "{text}");
    assert_eq!(upstream.seen().len(), 1);

    let result = call(&session, "loop", json!({})).await;
    error_text(&result);
}

#[tokio::test]
async fn refused_connection_error_names_its_cause() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let (_dir, server) = server_with_tools(&format!(
        r#"
[[tools]]
name = "nowhere"
url = "http://127.0.0.1:{port}/x?key=${{API_KEY}}"
headers = {{ Authorization = "Bearer ${{API_TOKEN}}" }}
"#
    ));
    let session = server.client().connect().await;
    let result = call(&session, "nowhere", json!({})).await;
    let text = error_text(&result);
    assert!(text.to_lowercase().contains("connection refused"), "{text}");
    assert!(!text.contains("s3cret") && !text.contains("k3y"), "{text}");
}

#[test]
fn check_warns_about_reserved_expansion_in_the_authority() {
    let dir = TempDir::new("http-check-warn");
    let path = dir.write(
        "warn.toml",
        "[[tools]]\nname = \"fine\"\nurl = \"http://127.0.0.1:1/{+path}\"\n\n[[tools]]\nname = \"risky\"\nurl = \"http://127.0.0.1:1{+path}\"\n\n[[tools]]\nname = \"host\"\nurl = \"http://{+host}/x\"\n",
    );
    let (status, stdout, stderr) = common::run_check(&path, &[]);
    assert!(status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("ok"), "{stdout}");
    assert!(stderr.contains("warning"), "{stderr}");
    assert!(stderr.contains("warn.toml:7:"), "{stderr}");
    assert!(stderr.contains("tools[1].url"), "{stderr}");
    assert!(stderr.contains("warn.toml:11:"), "{stderr}");
    assert!(stderr.contains("tools[2].url"), "{stderr}");
    assert!(!stderr.contains("tools[0]"), "{stderr}");
}
