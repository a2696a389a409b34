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
