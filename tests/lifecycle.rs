//! The session lifecycle over real HTTP against the binary: version negotiation, the
//! initialize result, session ids, requests before `notifications/initialized`, idle
//! expiry, and the `check` subcommand.

mod common;

use std::time::Duration;

use common::rpc_codes::SESSION_NOT_FOUND;
use common::{BUILTIN_TOOLS_TOML, LATEST, SseReader, TestServer};
use reqwest::StatusCode;
use serde_json::json;

/// Longest any single exchange may take before the test fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(15);

// ----- version negotiation -----

#[tokio::test]
async fn supported_versions_are_answered_as_asked() {
    let server = TestServer::start();
    let client = server.bounded_client(LIMIT);
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let session = client.initialize(version, json!({})).await;
        assert_eq!(session.version, version);
        assert_eq!(session.init_result["result"]["protocolVersion"], version);
    }
}

#[tokio::test]
async fn a_future_version_is_answered_with_2025_11_25() {
    let server = TestServer::start();
    let session = server
        .bounded_client(LIMIT)
        .initialize("2099-01-01", json!({}))
        .await;
    assert_eq!(session.version, "2025-11-25");
}

#[tokio::test]
async fn version_2024_11_05_is_answered_with_2025_11_25() {
    let server = TestServer::start();
    let session = server
        .bounded_client(LIMIT)
        .initialize("2024-11-05", json!({}))
        .await;
    assert_eq!(session.version, "2025-11-25");
}

// ----- the initialize result -----

#[tokio::test]
async fn initialize_result_carries_the_default_server_info_and_instructions() {
    let expected = mcp_actor::Config::parse(mcp_actor::config::DEFAULT_CONFIG_TOML, "default")
        .expect("embedded default config")
        .server;
    let server = TestServer::start();
    let session = server
        .bounded_client(LIMIT)
        .initialize(LATEST, json!({}))
        .await;
    let response = &session.init_result;
    assert_eq!(response["jsonrpc"], "2.0");
    assert_eq!(response["id"], 0);
    let result = &response["result"];
    let info = &result["serverInfo"];
    assert_eq!(info["name"], expected.name, "{info}");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"), "{info}");
    assert_eq!(info["title"], json!(expected.title), "{info}");
    assert_eq!(info["description"], json!(expected.description), "{info}");
    assert_eq!(result["instructions"], json!(expected.instructions));
    for field in [
        &info["title"],
        &info["description"],
        &result["instructions"],
    ] {
        assert!(field.as_str().is_some_and(|s| !s.is_empty()), "{result}");
    }
}

#[tokio::test]
async fn initialize_result_carries_the_configured_server_info_and_instructions() {
    let server = TestServer::with_config(
        r#"
[server]
name = "lifecycle-test"
title = "Lifecycle Test"
version = "9.8.7"
description = "A server configured by a test"
instructions = "Call echo first."
"#,
    );
    let session = server
        .bounded_client(LIMIT)
        .initialize(LATEST, json!({}))
        .await;
    let result = &session.init_result["result"];
    assert_eq!(
        result["serverInfo"],
        json!({ "name": "lifecycle-test", "title": "Lifecycle Test", "version": "9.8.7",
                "description": "A server configured by a test" })
    );
    assert_eq!(result["instructions"], "Call echo first.");
}

#[tokio::test]
async fn initialize_result_declares_tools_resources_subscribe_prompts_logging_completions() {
    let server = TestServer::start();
    let session = server
        .bounded_client(LIMIT)
        .initialize(LATEST, json!({}))
        .await;
    let capabilities = &session.init_result["result"]["capabilities"];
    for capability in ["tools", "resources", "prompts", "logging", "completions"] {
        assert!(
            capabilities[capability].is_object(),
            "{capability}: {capabilities}"
        );
    }
    assert_eq!(
        capabilities["resources"]["subscribe"], true,
        "{capabilities}"
    );
}

// ----- session ids -----

#[tokio::test]
async fn session_ids_are_visible_ascii_and_distinct() {
    let server = TestServer::start();
    let client = server.bounded_client(LIMIT);
    let first = client.initialize(LATEST, json!({})).await;
    let second = client.initialize(LATEST, json!({})).await;
    for id in [&first.id, &second.id] {
        assert!(!id.is_empty());
        assert!(
            id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "session id {id:?} has a byte outside 0x21-0x7E"
        );
    }
    assert_ne!(first.id, second.id);
}

// ----- before notifications/initialized -----

#[tokio::test]
async fn requests_before_initialized_notification_are_answered() {
    let server = TestServer::start();
    let session = server
        .bounded_client(LIMIT)
        .initialize(LATEST, json!({}))
        .await;
    let text = session
        .call_tool_text(json!(1), "echo", json!({ "text": "early" }))
        .await;
    assert_eq!(text, "early");
    let tools = session.call(json!(2), "tools/list", json!({})).await;
    assert_eq!(tools["tools"].as_array().map(Vec::len), Some(4), "{tools}");
    assert_eq!(session.call(json!(3), "ping", json!({})).await, json!({}));
}

// ----- idle expiry -----

/// Long enough past the 1 s TTL for the session to have ended, even on a loaded machine.
const PAST_TTL: Duration = Duration::from_millis(2500);

fn one_second_ttl() -> TestServer {
    TestServer::with_config(&format!(
        "[sessions]\nidle_ttl = \"1s\"\n{BUILTIN_TOOLS_TOML}"
    ))
}

#[tokio::test]
async fn quiet_session_is_gone_after_idle_ttl() {
    let server = one_second_ttl();
    let session = server.bounded_client(LIMIT).connect().await;
    // Any request would count as activity, so the session is only looked at once.
    tokio::time::sleep(PAST_TTL).await;
    let reply = session.request(json!(1), "ping", json!({})).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply:?}");
    assert_eq!(reply.error_code(), Some(SESSION_NOT_FOUND), "{reply:?}");
}

#[tokio::test]
async fn session_with_an_open_get_stream_outlives_idle_ttl() {
    let server = one_second_ttl();
    let session = server.bounded_client(LIMIT).connect().await;
    let get = session.get(None).await;
    assert_eq!(get.status(), StatusCode::OK);
    let _stream = SseReader::new(get);
    tokio::time::sleep(PAST_TTL).await;
    assert_eq!(session.call(json!(1), "ping", json!({})).await, json!({}));
}

// ----- mcp-actor check -----

#[test]
fn check_accepts_the_default_config() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/default.toml");
    let (status, stdout, stderr) = common::run_check(&path, &[]);
    assert!(status.success(), "{status}: {stderr}");
    assert!(stdout.contains("ok"), "{stdout}");
}

#[test]
fn check_rejects_an_unknown_key_naming_file_line_and_key() {
    let cases = [
        // (file text, line of the mistake, misspelt key)
        (
            "[sessions]\nmax_sessions = 5\nmax_sesions = 6\n",
            3,
            "max_sesions",
        ),
        (
            "[server]\nname = \"x\"\n\n[sesions]\nidle_ttl = \"1s\"\n",
            4,
            "sesions",
        ),
    ];
    for (i, (text, line, key)) in cases.into_iter().enumerate() {
        let path = std::env::temp_dir().join(format!(
            "mcp-actor-lifecycle-check-{}-{i}.toml",
            std::process::id()
        ));
        std::fs::write(&path, text).expect("write config");
        let (status, stdout, stderr) = common::run_check(&path, &[]);
        let _ = std::fs::remove_file(&path);
        assert!(!status.success(), "{key}: exited {status}; stdout {stdout}");
        let location = format!("{}:{line}:", path.display());
        assert!(
            stderr.contains(&location),
            "stderr should name {location}: {stderr}"
        );
        assert!(stderr.contains(key), "stderr should name {key}: {stderr}");
    }
}

#[tokio::test]
async fn a_server_on_one_runtime_thread_serves_parallel_calls() {
    let server =
        TestServer::with_config("[server]\nworker_threads = 1\n\n[[tools]]\nbuiltin = \"echo\"\n");
    let session = server.client().connect().await;
    let calls = (0..32).map(|i| {
        let session = session.clone();
        async move {
            session
                .call_tool_text(json!(i), "echo", json!({ "text": format!("t{i}") }))
                .await
        }
    });
    let texts = futures_util::future::join_all(calls).await;
    assert_eq!(texts, (0..32).map(|i| format!("t{i}")).collect::<Vec<_>>());
}
