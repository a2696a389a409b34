//! Connections as a hostile or careless client uses them: silent, half-sent and idle
//! connections, more of them than the cap, shutdown while requests are in flight, a
//! listener other machines can reach, and refusals sent fast enough to flood a log.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::modern::Modern;
use common::rpc_codes::SERVER_ERROR;
use common::{BUILTIN_TOOLS_TOML, Client, LATEST, TempDir, TestServer, raw_request};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(20);

fn config(extra: &str) -> String {
    format!("{extra}\n{BUILTIN_TOOLS_TOML}")
}

/// Waits up to `limit` for the server to close `tcp`: true on EOF or reset.
async fn closed_by_server(tcp: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            // A reply (for example 408) before the close: keep reading.
            Ok(Ok(_)) => {}
        }
    }
}

async fn connect(server: &TestServer) -> TcpStream {
    TcpStream::connect(&server.addr).await.expect("connect")
}

/// A whole HTTP/1.1 `initialize` POST, as raw bytes would carry it.
fn initialize_request(server: &TestServer) -> String {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LATEST, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } })
    .to_string();
    format!(
        "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        server.path(),
        body.len()
    )
}

#[tokio::test]
async fn half_sent_headers_are_cut_off_after_header_timeout() {
    let server = TestServer::with_config(&config("[http]\nheader_timeout = \"1s\"\n"));
    let mut silent = Vec::new();
    for _ in 0..20 {
        let mut tcp = connect(&server).await;
        tcp.write_all(b"P").await.expect("one byte");
        silent.push(tcp);
    }
    let mut slow = connect(&server).await;
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("half a head");
    let started = Instant::now();
    assert!(closed_by_server(&mut slow, Duration::from_secs(5)).await);
    for tcp in &mut silent {
        assert!(closed_by_server(tcp, Duration::from_secs(5)).await);
    }
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(800),
        "closed too early: {waited:?}"
    );
    // The server still serves.
    let session = server.client().initialize(LATEST, json!({})).await;
    assert!(!session.id.is_empty());
}

#[tokio::test]
async fn a_connection_that_never_sends_a_request_is_closed_after_header_timeout() {
    let server = TestServer::with_config(&config("[http]\nheader_timeout = \"1s\"\n"));
    let mut silent = connect(&server).await;
    let started = Instant::now();
    assert!(closed_by_server(&mut silent, Duration::from_secs(5)).await);
    assert!(started.elapsed() >= Duration::from_millis(800));
}

#[tokio::test]
async fn a_client_that_stops_reading_its_reply_is_cut_off_after_write_timeout() {
    // A tiny request whose reply (a 24 MiB file) is far larger than what the kernel buffers
    // on both ends can absorb, so the server is writing within moments of the request.
    const REPLY_BYTES: usize = 24 * 1024 * 1024;
    let dir = TempDir::new("write-timeout");
    dir.write("big.txt", &"x".repeat(REPLY_BYTES));
    let config_path = dir.write(
        "server.toml",
        &config(
            "[http]\nwrite_timeout = \"1s\"\n\n[file_resources]\nmax_bytes = 33554432\n\n\
             [[resources]]\nuri = \"file:///big.txt\"\nname = \"big\"\nfile = \"big.txt\"\n",
        ),
    );
    let server = TestServer::with_config_file(&config_path, &[]);
    let session = server.client().initialize(LATEST, json!({})).await;
    session.notify("notifications/initialized", None).await;
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "resources/read",
        "params": { "uri": "file:///big.txt" } })
    .to_string();
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .set_recv_buffer_size(4096)
        .expect("small receive buffer");
    let mut tcp = socket
        .connect(server.addr.parse().expect("address"))
        .await
        .expect("connect");
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {}\r\n\
         MCP-Protocol-Version: {LATEST}\r\nContent-Length: {}\r\n\r\n",
        server.path(),
        session.id,
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.expect("head");
    tcp.write_all(body.as_bytes()).await.expect("body");
    // Wait for the reply to begin (the server may take a while to read and encode 24 MiB),
    // then read nothing while the server writes, then everything that is left.
    let mut buf = vec![0u8; 1 << 16];
    let first = tokio::time::timeout(LIMIT, tcp.read(&mut buf))
        .await
        .expect("the reply began")
        .expect("read the reply's first bytes");
    assert!(first > 0, "the server closed before replying");
    let mut received = first;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let drained = tokio::time::timeout(LIMIT, async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received += n,
            }
        }
    })
    .await;
    assert!(drained.is_ok(), "the stalled reply was still held open");
    assert!(
        received < REPLY_BYTES,
        "the whole reply ({received} bytes) went out to a client that stopped reading"
    );
    // The server keeps serving.
    let text = session
        .call_tool_text(json!(2), "echo", json!({ "text": "still here" }))
        .await;
    assert_eq!(text, "still here");
}

#[tokio::test]
async fn a_body_that_stalls_gets_408_within_body_timeout() {
    let server = TestServer::with_config(&config("[http]\nbody_timeout = \"1s\"\n"));
    let mut tcp = connect(&server).await;
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{{\"jso\r\n",
        server.path()
    );
    tcp.write_all(head.as_bytes())
        .await
        .expect("head and one chunk");
    let mut reply = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 4096];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the stalled upload was held open");
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("http.body_timeout"), "{text}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_idle_timeout() {
    let server = TestServer::with_config(&config("[http]\nidle_timeout = \"1s\"\n"));
    let mut tcp = connect(&server).await;
    let request = initialize_request(&server);
    tcp.write_all(request.as_bytes()).await.expect("request");
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(LIMIT, tcp.read(&mut buf))
        .await
        .expect("a reply")
        .expect("read");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let started = Instant::now();
    assert!(closed_by_server(&mut tcp, Duration::from_secs(5)).await);
    assert!(started.elapsed() >= Duration::from_millis(800));
}

#[tokio::test]
async fn connections_over_max_connections_get_503_with_retry_after() {
    let server = TestServer::with_config(&config("[http]\nmax_connections = 3\n"));
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect(&server).await);
    }
    // Give the server a moment to accept all three before the fourth arrives.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let request_line = format!("POST {} HTTP/1.1", server.path());
    let reply = raw_request(
        &server.addr,
        &request_line,
        &["Host: 127.0.0.1", "Content-Type: application/json"],
        b"{}",
        LIMIT,
    )
    .await;
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(reply.header("retry-after"), Some("1"), "{reply:?}");
    assert_eq!(reply.error_code(), Some(SERVER_ERROR), "{reply:?}");
    let message = reply.json().unwrap_or_default()["error"]["message"].clone();
    assert!(
        message
            .as_str()
            .unwrap_or("")
            .contains("http.max_connections"),
        "{message}"
    );
    // A slot frees as soon as a connection closes.
    drop(held.pop());
    let mut served = false;
    for _ in 0..50 {
        let session = server.client().post_raw(&json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }), &[]).await;
        if session.status() == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(served, "no slot came back after a connection closed");
}

#[tokio::test]
async fn sigterm_exits_promptly_while_a_client_holds_half_a_request() {
    let mut server = TestServer::with_config(&config(""));
    let mut tcp = connect(&server).await;
    tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("half a head");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let status = server.terminate(Duration::from_secs(5));
    assert!(
        status.is_some(),
        "still running 5 s after SIGTERM with an idle half-sent request open"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// Reads a POST reply (JSON or SSE) and returns the response carrying `id`.
async fn response_with_id(resp: reqwest::Response, id: &Value) -> Option<Value> {
    let reply = common::read_reply(resp).await;
    reply.response(id).cloned()
}

/// Lets the call `pending` start, sends SIGTERM, and returns the call's response and when
/// the signal went out; fails if the server is still running 10 s later.
async fn response_after_sigterm(
    server: &mut TestServer,
    pending: tokio::task::JoinHandle<Option<Value>>,
) -> (Value, Instant) {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let status = server.terminate(Duration::from_secs(10));
    assert!(status.is_some(), "still running 10 s after SIGTERM");
    let response = tokio::time::timeout(LIMIT, pending)
        .await
        .expect("the call's reply ended")
        .expect("task")
        .expect("a response for the aborted call");
    (response, started)
}

/// SIGTERM drains: calls in flight may finish for `server.drain_timeout`, here 1 s.
const SHORT_DRAIN: &str = "[server]\ndrain_timeout = \"1s\"\n";

#[tokio::test]
async fn a_session_call_still_running_after_drain_timeout_gets_an_error_then_the_server_exits() {
    let mut server = TestServer::with_config(&config(SHORT_DRAIN));
    let session = server.client().initialize(LATEST, json!({})).await;
    session.notify("notifications/initialized", None).await;
    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "sleep", "arguments": { "ms": 30000 } } });
    let pending = tokio::spawn(async move {
        let resp = session.post_value(&call).await;
        response_with_id(resp, &json!(7)).await
    });
    let (response, started) = response_after_sigterm(&mut server, pending).await;
    assert_eq!(response["error"]["code"], SERVER_ERROR, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("shutting down"),
        "{response}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A 2026-07-28 `tools/call` on a client of its own, so on a connection of its own.
async fn post_stateless(url: &str, id: u64, name: &str, arguments: Value) -> reqwest::Response {
    Modern::call(id, name, arguments)
        .send(&Client::bounded(url, LIMIT))
        .await
}

#[tokio::test]
async fn a_stateless_call_still_running_after_drain_timeout_gets_an_error_then_the_server_exits() {
    let mut server = TestServer::with_config(&config(SHORT_DRAIN));
    let url = server.url.clone();
    let pending = tokio::spawn(async move {
        let resp = post_stateless(&url, 9, "sleep", json!({ "ms": 30000 })).await;
        response_with_id(resp, &json!(9)).await
    });
    let (response, started) = response_after_sigterm(&mut server, pending).await;
    assert_eq!(response["error"]["code"], SERVER_ERROR, "{response}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn stateless_requests_beyond_modern_max_in_flight_get_429() {
    let server = TestServer::with_config(&config("[modern]\nmax_in_flight = 2\n"));
    let mut running = Vec::new();
    for id in 0..2 {
        let url = server.url.clone();
        running.push(tokio::spawn(async move {
            post_stateless(&url, id, "sleep", json!({ "ms": 1500 }))
                .await
                .status()
        }));
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let refused = post_stateless(&server.url, 5, "echo", json!({ "text": "x" })).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let body: Value = refused.json().await.expect("JSON error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("stateless.max_in_flight"),
        "{body}"
    );
    for task in running {
        assert_eq!(task.await.expect("task"), 200);
    }
    // The permits came back.
    let served = post_stateless(&server.url, 6, "echo", json!({ "text": "x" })).await;
    assert_eq!(served.status(), 200);
}

#[test]
fn a_non_loopback_listener_without_authentication_refuses_to_start() {
    let (status, stderr) = common::run_binary(&["--listen", "0.0.0.0:0"], Duration::from_secs(10))
        .expect("the server started on 0.0.0.0 without authentication");
    assert!(!status.success());
    assert!(stderr.contains("server.allow_unauthenticated"), "{stderr}");
}

#[test]
fn allow_unauthenticated_serves_every_interface_and_prints_a_reachable_url() {
    let path = std::env::temp_dir().join(format!("mcp-actor-open-{}.toml", common::unique()));
    std::fs::write(&path, "[server]\nallow_unauthenticated = true\n").expect("config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-actor"))
        .args([
            "--listen",
            "0.0.0.0:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mcp-actor");
    let mut line = String::new();
    {
        use std::io::BufRead;
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("banner");
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_file(&path);
    assert!(
        line.starts_with("mcp-actor listening on http://127.0.0.1:"),
        "{line}"
    );
}

#[tokio::test]
async fn refused_requests_cannot_flood_the_log() {
    let log = std::env::temp_dir().join(format!("mcp-actor-flood-{}.log", common::unique()));
    let server = TestServer::with_config_logging_to(&config("[modern]\nmax_in_flight = 1\n"), &log);
    // One request holds the only permit, for longer than the test runs on a loaded
    // machine; every other one is refused with 429.
    let url = server.url.clone();
    let holder =
        tokio::spawn(async move { post_stateless(&url, 1, "sleep", json!({ "ms": 60000 })).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut refused = 0;
    for id in 0..300 {
        if post_stateless(&server.url, 100 + id, "echo", json!({ "text": "x" }))
            .await
            .status()
            == 429
        {
            refused += 1;
        }
    }
    // A batch of responses to requests the server never sent.
    let session = server.client().initialize(LATEST, json!({})).await;
    let batch: Vec<Value> = (0..2000)
        .map(|i| json!({ "jsonrpc": "2.0", "id": format!("nope-{i}"), "result": {} }))
        .collect();
    for message in batch.chunks(1).take(2000) {
        session.post_value(&message[0]).await;
    }
    holder.abort();
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert_eq!(refused, 300);
    let warnings = text.lines().filter(|l| l.contains("WARN")).count();
    assert!(
        warnings <= 20,
        "{warnings} WARN lines for 2,300 refused or unknown messages:\n{}",
        text.lines().take(30).collect::<Vec<_>>().join("\n")
    );
    assert!(
        text.contains("suppressed"),
        "no suppressed count in:\n{text}"
    );
}

#[tokio::test]
async fn http2_with_prior_knowledge_is_served() {
    let server = TestServer::with_config(&config(""));
    let mut tcp = connect(&server).await;
    // The client preface, then an empty SETTINGS frame (RFC 9113, sections 3.4 and 6.5).
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .expect("preface");
    let mut head = [0u8; 9];
    tokio::time::timeout(LIMIT, tcp.read_exact(&mut head))
        .await
        .expect("a frame")
        .expect("read");
    assert_eq!(
        head[3], 0x4,
        "the server's first frame is SETTINGS: {head:?}"
    );
}

#[tokio::test]
async fn a_request_whose_first_bytes_arrive_one_by_one_is_served() {
    let server = TestServer::with_config(&config(""));
    let mut tcp = connect(&server).await;
    let request = initialize_request(&server);
    // "P" is also how the HTTP/2 preface starts: the server must wait for more to tell.
    let (first, rest) = request.as_bytes().split_at(2);
    for byte in first {
        tcp.write_all(&[*byte]).await.expect("a byte");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tcp.write_all(rest).await.expect("the rest");
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(LIMIT, tcp.read(&mut buf))
        .await
        .expect("a reply")
        .expect("read");
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

#[tokio::test]
async fn an_http2_preface_trickled_a_byte_at_a_time_is_cut_off_after_header_timeout() {
    let server = TestServer::with_config(&config("[http]\nheader_timeout = \"1s\"\n"));
    let mut tcp = connect(&server).await;
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let started = Instant::now();
    // One byte every 250 ms: the whole preface would take 6 s, each byte well inside 1 s.
    let mut cut_off = false;
    for byte in preface {
        if tcp.write_all(&[*byte]).await.is_err() {
            cut_off = true;
            break;
        }
        if closed_by_server(&mut tcp, Duration::from_millis(250)).await {
            cut_off = true;
            break;
        }
    }
    let waited = started.elapsed();
    assert!(cut_off, "a trickled preface held its connection {waited:?}");
    assert!(
        waited < Duration::from_secs(4),
        "cut off only after {waited:?}"
    );
}

#[tokio::test]
async fn an_http2_connection_that_sends_no_request_is_closed_after_header_timeout() {
    let server = TestServer::with_config(&config("[http]\nheader_timeout = \"1s\"\n"));
    let mut tcp = connect(&server).await;
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .expect("preface");
    let started = Instant::now();
    assert!(closed_by_server(&mut tcp, Duration::from_secs(5)).await);
    assert!(started.elapsed() >= Duration::from_millis(800));
}
