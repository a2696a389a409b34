//! A node leaving a fleet: SIGTERM drains it (`/readyz` and new sessions get 503, sessions
//! finish what they run, each ends once idle), a second signal stops it at once, and
//! session ids name the node that minted them.

mod common;

use std::time::{Duration, Instant};

use common::modern::{Modern, client_of};
use common::sse::SseReader;
use common::{BUILTIN_TOOLS_TOML, LATEST, TempDir, TestServer};
use nix::sys::signal::Signal;
use reqwest::StatusCode;
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(20);

fn config(extra: &str) -> String {
    format!("{extra}\n{BUILTIN_TOOLS_TOML}")
}

fn sleep_call(id: u64, ms: u64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "sleep", "arguments": { "ms": ms } } })
}

async fn get(server: &TestServer, path: &str) -> reqwest::Response {
    let url = format!("http://{}{path}", server.addr);
    reqwest::Client::new()
        .get(url)
        .timeout(LIMIT)
        .send()
        .await
        .expect("GET")
}

fn retry_after(resp: &reqwest::Response) -> Option<u64> {
    resp.headers()
        .get("retry-after")?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

#[tokio::test]
async fn sigterm_lets_calls_in_flight_finish_refuses_new_work_and_exits_0() {
    let mut server = TestServer::with_config(&config("[server]\ndrain_timeout = \"15s\"\n"));
    let client = server.client();
    let ready = get(&server, "/readyz").await;
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(
        ready.json::<Value>().await.expect("JSON")["status"],
        "ready"
    );
    let mut calls = Vec::new();
    for i in 0..20u64 {
        let session = client.connect().await;
        calls.push(tokio::spawn(async move {
            let reply = common::read_reply(session.post_value(&sleep_call(i, 2000)).await).await;
            reply.response(&json!(i)).cloned()
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = Instant::now();
    server.signal(Signal::SIGTERM);
    tokio::time::sleep(Duration::from_millis(200)).await;

    let ready = get(&server, "/readyz").await;
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after(&ready), Some(1));
    assert_eq!(
        ready.json::<Value>().await.expect("JSON")["status"],
        "draining"
    );
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": { "name": "late", "version": "1" } } });
    let refused = client.post_raw(&init, &[]).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after(&refused), Some(1));
    assert!(refused.headers().get("mcp-session-id").is_none());
    let body: Value = refused.json().await.expect("JSON error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("shutting down"),
        "{body}"
    );
    let modern = Modern::call(1, "echo", json!({ "text": "x" }))
        .send(&client_of(&server))
        .await;
    assert_eq!(modern.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(retry_after(&modern), Some(1));

    for call in calls {
        let response = tokio::time::timeout(LIMIT, call)
            .await
            .expect("the call ended")
            .expect("task")
            .expect("a response");
        assert!(
            response["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("slept")),
            "{response}"
        );
    }
    let status = server.wait_exit(LIMIT).expect("exited after the drain");
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(15),
        "took {:?}, longer than the drain timeout",
        signalled.elapsed()
    );
}

#[tokio::test]
async fn a_draining_session_keeps_working_until_its_work_is_done_then_ends() {
    let mut server = TestServer::with_config(&config(""));
    let busy = server.client().connect().await;
    let idle = server.client().connect().await;
    // The busy session waits on the client: its elicitation is answered during the drain.
    let asker = busy.clone();
    let ask = tokio::spawn(async move {
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "ask", "arguments": { "question": "Your name?" } } });
        asker.post_value(&call).await
    });
    let mut stream = SseReader::new(
        tokio::time::timeout(LIMIT, ask)
            .await
            .expect("reply")
            .expect("task"),
    );
    let (_, elicitation) = stream.next_message(LIMIT).await.expect("elicitation");
    assert_eq!(elicitation["method"], "elicitation/create");

    server.signal(Signal::SIGTERM);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The idle session ended at once: its next request gets 404, so its client starts over
    // on another node.
    let ping = json!({ "jsonrpc": "2.0", "id": 5, "method": "ping" });
    assert_eq!(idle.post_value(&ping).await.status(), StatusCode::NOT_FOUND);
    // The busy one still serves requests and takes the client's answer.
    assert_eq!(busy.call(json!(6), "ping", json!({})).await, json!({}));
    let answer = json!({ "action": "accept", "content": { "answer": "Ada" } });
    assert_eq!(
        busy.answer(&elicitation["id"], answer).await,
        StatusCode::ACCEPTED
    );
    let (_, result) = stream.next_message(LIMIT).await.expect("the tool's result");
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Ada")),
        "{result}"
    );
    let status = server
        .wait_exit(LIMIT)
        .expect("exited once the session was done");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn the_get_stream_of_a_drained_session_ends_with_a_retry_hint() {
    let mut server = TestServer::with_config(&config("[http]\nsse_retry = \"1500ms\"\n"));
    // 2025-06-18 sends no priming event, so the only `retry` field is the closing hint.
    let session = server.client().initialize("2025-06-18", json!({})).await;
    session.notify("notifications/initialized", None).await;
    let resp = session.get(None).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = tokio::spawn(async move { resp.text().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.signal(Signal::SIGTERM);
    let text = tokio::time::timeout(LIMIT, body)
        .await
        .expect("the stream ended")
        .expect("task")
        .expect("body");
    assert!(text.trim_end().ends_with("retry: 1500"), "{text:?}");
    let status = server.wait_exit(LIMIT).expect("exited");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn a_second_signal_stops_at_once_with_a_non_zero_status() {
    let mut server = TestServer::with_config(&config(""));
    let session = server.client().connect().await;
    let call = tokio::spawn(async move { session.post_value(&sleep_call(1, 30_000)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.signal(Signal::SIGTERM);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        server.wait_exit(Duration::from_millis(10)).is_none(),
        "the drain should wait for the call"
    );
    let second = Instant::now();
    server.signal(Signal::SIGINT);
    let status = server
        .wait_exit(Duration::from_secs(5))
        .expect("exited after the second signal");
    assert!(!status.success(), "{status:?}");
    assert!(
        second.elapsed() < Duration::from_secs(3),
        "{:?}",
        second.elapsed()
    );
    call.abort();
}

#[tokio::test]
async fn readyz_is_503_at_max_sessions_and_200_again_when_a_slot_frees() {
    let server = TestServer::with_config(&config("[sessions]\nmax_sessions = 1\n"));
    let session = server.client().connect().await;
    let full = get(&server, "/readyz").await;
    assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(full.json::<Value>().await.expect("JSON")["status"], "full");
    assert_eq!(session.delete().await, StatusCode::OK);
    let mut ready = false;
    for _ in 0..50 {
        if get(&server, "/readyz").await.status() == StatusCode::OK {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ready, "/readyz stayed 503 after the session ended");
    // The probe answers only names the server serves, like the endpoint.
    let foreign = reqwest::Client::new()
        .get(format!("http://{}/readyz", server.addr))
        .header("host", "evil.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
}

/// The session id with its node prefix swapped for `node`.
fn on_node(id: &str, node: &str) -> String {
    let (_, random) = id.split_once('.').expect("a node prefix");
    format!("{node}.{random}")
}

#[tokio::test]
async fn a_session_id_naming_another_node_gets_the_same_404_as_an_unknown_one() {
    let server = TestServer::with_config(&config("[server]\nnode_id = \"a\"\n"));
    let session = server.client().connect().await;
    let (node, random) = session.id.split_once('.').expect("a node prefix");
    assert_eq!(node, "a");
    // 122 random bits of a version-4 UUID, in 32 hex digits.
    assert_eq!(random.len(), 32, "{random}");
    assert!(random.bytes().all(|b| b.is_ascii_hexdigit()), "{random}");
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    let mut bodies = Vec::new();
    for id in [on_node(&session.id, "b"), "a.0123456789abcdef".to_string()] {
        let mut other = session.clone();
        other.id = id;
        let resp = other.post_value(&ping).await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        bodies.push(resp.text().await.expect("body"));
    }
    assert_eq!(
        bodies[0], bodies[1],
        "a foreign node's id must look unknown"
    );
    // The session itself is untouched.
    assert_eq!(session.call(json!(2), "ping", json!({})).await, json!({}));
}

#[tokio::test]
async fn the_node_id_flag_and_environment_variable_override_the_config() {
    let dir = TempDir::new("node-id");
    let path = dir.write("server.toml", "[server]\nnode_id = \"from-toml\"\n");
    let server = TestServer::with_config_file(&path, &[("MCP_ACTOR_NODE_ID", "pod-7")]);
    let session = server.client().connect().await;
    assert!(session.id.starts_with("pod-7."), "{}", session.id);
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-actor"))
        .args(["--node-id", "has.dot", "--listen", "127.0.0.1:0"])
        .output()
        .expect("run");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("without '.'"), "{stderr}");
}

#[tokio::test]
async fn json_logs_carry_the_node_session_method_and_request_id() {
    let dir = TempDir::new("json-logs");
    dir.write("docs/readme.md", "hello");
    let config = format!(
        "[server]\nnode_id = \"n1\"\n[log]\nformat = \"json\"\n\n\
         [[resources]]\nuri_template = \"file:///docs/{{+path}}\"\nname = \"docs\"\ndir = \"{}\"\n",
        dir.path().join("docs").display()
    );
    let log = dir.path().join("server.log");
    let server = TestServer::with_config_logging_to(&config, &log);
    let session = server.client().connect().await;
    let read = session
        .request(
            json!(42),
            "resources/read",
            json!({ "uri": "file:///docs/../../etc/passwd" }),
        )
        .await;
    let response = read.response(&json!(42)).expect("a response");
    assert!(response.get("error").is_some(), "{response}");
    let mut found = None;
    for _ in 0..50 {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["message"].as_str().is_some_and(|m| m.contains("refused")));
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let line = found.expect("a JSON log line for the refused read");
    assert_eq!(line["level"], "WARN", "{line}");
    let span = &line["span"];
    assert_eq!(span["node"], "n1", "{line}");
    assert_eq!(span["session"], session.id.as_str(), "{line}");
    assert_eq!(span["method"], "resources/read", "{line}");
    assert_eq!(span["request_id"], "42", "{line}");
}
