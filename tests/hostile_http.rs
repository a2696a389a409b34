//! Hostile input at the HTTP layer, over real HTTP against the binary: bodies built to
//! decode into far more memory than they occupy, refusals answered before the body is read
//! on a keep-alive connection, idle connections against the admin listener's probes, one
//! principal holding every SSE stream, and `initialize` rates keyed by IPv6 /64.

mod common;

use std::time::{Duration, Instant};

use common::{BUILTIN_TOOLS_TOML, LATEST, TestServer, rss_kib};
use serde_json::{Value, json};

fn config(extra: &str) -> String {
    format!("{extra}\n{BUILTIN_TOOLS_TOML}")
}

/// Samples `pid`'s RSS every 5 ms on a thread until the returned flag is set; the thread
/// returns the peak.
fn rss_sampler(
    pid: u32,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<u64>,
) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let mut peak = 0;
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            peak = peak.max(rss_kib(pid));
            std::thread::sleep(Duration::from_millis(5));
        }
        peak.max(rss_kib(pid))
    });
    (stop, thread)
}

/// Just under 4 MiB (`http.max_body_bytes`) of `{}` elements, as a batch or inside the
/// `params` of one `tools/call`.
fn empty_objects(count: usize) -> String {
    repeated(count, "{}")
}

fn repeated(count: usize, element: &str) -> String {
    let mut s = String::with_capacity(count * (element.len() + 1));
    for i in 0..count {
        if i > 0 {
            s.push(',');
        }
        s.push_str(element);
    }
    s
}

const ELEMENTS: usize = 1_390_000;

async fn post_concurrently(url: &str, body: String, count: usize) -> Vec<(u16, Value)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .expect("client");
    let posts = (0..count).map(|_| {
        let request = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", common::ACCEPT_BOTH)
            .header("mcp-protocol-version", LATEST)
            .body(body.clone());
        async move {
            match request.send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    (status, resp.json::<Value>().await.unwrap_or(Value::Null))
                }
                Err(e) => (0, Value::String(e.to_string())),
            }
        }
    });
    futures_util::future::join_all(posts).await
}

#[tokio::test]
async fn bodies_of_empty_objects_cannot_grow_the_server_past_64_mb() {
    let server = TestServer::with_config(&config(""));
    let pid = server.pid();
    // A first exchange, so the start figure includes the runtime's and allocator's setup.
    let session = common::Client::new(&server.url).connect().await;
    let start = rss_kib(pid);
    let batch = format!("[{}]", empty_objects(ELEMENTS));
    let params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":[{}]}}}}}}"#,
        empty_objects(ELEMENTS - 10)
    );
    // One-member objects are the densest shape: each is a map node of some 600 bytes.
    let members = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":[{}]}}}}}}"#,
        repeated(590_000, r#"{"":0}"#)
    );
    let shapes = [
        ("a batch of {}", batch, "http.max_batch_size"),
        ("params of {}", params, "http.max_json_values"),
        ("params of {\"\":0}", members, "http.max_json_values"),
    ];
    // Each burst is bounded from where the one before it left the server: the allocator
    // keeps some freed pages, so the bursts together are bounded too, at twice one burst.
    let (mut worst, mut total) = (0.0f64, 0.0f64);
    for (shape, body, key) in shapes {
        assert!(body.len() <= 4 * 1024 * 1024, "{}", body.len());
        let before = rss_kib(pid);
        let (stop, sampler) = rss_sampler(pid);
        let began = Instant::now();
        let replies = post_concurrently(&server.url, body, 8).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let peak = sampler.join().expect("sampler");
        let grown_mb = peak.saturating_sub(before) as f64 / 1024.0;
        total = total.max(peak.saturating_sub(start) as f64 / 1024.0);
        eprintln!(
            "8 POSTs of {shape}: RSS before {} MB, peak {} MB (+{grown_mb:.1} MB) in {:?}",
            before / 1024,
            peak / 1024,
            began.elapsed()
        );
        worst = worst.max(grown_mb);
        for (status, body) in &replies {
            assert_eq!(*status, 400, "{shape}: {body}");
            assert_eq!(body["error"]["code"], -32600, "{body}");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains(key), "{message}");
        }
    }
    assert!(worst <= 64.0, "RSS grew {worst:.1} MB in one burst");
    assert!(
        total <= 128.0,
        "RSS grew {total:.1} MB over the three bursts"
    );
    // The server still serves.
    let text = session
        .call_tool_text(json!(2), "echo", json!({"text": "ok"}))
        .await;
    assert!(!text.is_empty());
}

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef00";

/// The binary with static tokens for alice and bob, `extra` and the builtin tools.
fn with_tokens(dir: &common::TempDir, listen: &str, extra: &str) -> TestServer {
    let toml = format!(
        "{extra}\n[auth]\nresource = \"http://127.0.0.1/mcp\"\n\
         [[auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"H1_ALICE\"\n\
         [[auth.tokens]]\nprincipal = \"bob\"\ntoken_env = \"H1_BOB\"\n{BUILTIN_TOOLS_TOML}"
    );
    let path = dir.write("config.toml", &toml);
    let path = path.to_str().expect("a UTF-8 path");
    TestServer::with_args(
        &["--listen", listen, "--config", path],
        &[("H1_ALICE", ALICE), ("H1_BOB", BOB)],
    )
}

fn initialize_json() -> String {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": { "name": "hostile-http", "version": "1" } }
    })
    .to_string()
}

/// One HTTP/1.1 exchange on a kept-alive socket: the status, whether the server said
/// `Connection: close`, and `None` when the connection ended before a complete reply.
async fn exchange(tcp: &mut tokio::net::TcpStream, head: &str, body: &str) -> Option<(u16, bool)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!("{head}Content-Length: {}\r\n\r\n{body}", body.len());
    tcp.write_all(request.as_bytes()).await.ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())?;
    while buf.len() < end + length {
        match tcp.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some((status, head.contains("connection: close")))
}

const CALL_BYTES: usize = 512 * 1024;

#[tokio::test]
async fn a_request_after_a_refusal_on_the_same_connection_is_answered() {
    let dir = common::TempDir::new("hostile-keepalive");
    let server = with_tokens(&dir, "127.0.0.1:0", "");
    let host = format!("Host: {}\r\n", server.addr);
    let common = format!(
        "POST {} HTTP/1.1\r\n{host}Content-Type: application/json\r\nAccept: {}\r\n",
        server.path(),
        common::ACCEPT_BOTH
    );
    // A call's worth of body, as a client sends before it knows its token is stale.
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text": "x".repeat(CALL_BYTES)}}})
    .to_string();
    let refusals = [
        format!("{common}Authorization: Bearer expired-token-000000000\r\n"),
        format!("{common}Authorization: Bearer {ALICE}\r\nOrigin: http://evil.example\r\n"),
        format!(
            "POST {} HTTP/1.1\r\n{host}Content-Type: text/plain\r\nAccept: {}\r\nAuthorization: Bearer {ALICE}\r\n",
            server.path(),
            common::ACCEPT_BOTH
        ),
        format!(
            "POST {} HTTP/1.1\r\n{host}Content-Type: application/json\r\nAccept: text/html\r\nAuthorization: Bearer {ALICE}\r\n",
            server.path()
        ),
    ];
    let retry = format!("{common}Authorization: Bearer {ALICE}\r\n");
    let (mut lost, mut closed) = (0, 0);
    for round in 0..40 {
        let mut tcp = tokio::net::TcpStream::connect(&server.addr)
            .await
            .expect("connect");
        let refusal = &refusals[round % refusals.len()];
        let refused =
            tokio::time::timeout(Duration::from_secs(5), exchange(&mut tcp, refusal, &call))
                .await
                .ok()
                .flatten();
        let Some((status, close)) = refused else {
            lost += 1;
            continue;
        };
        assert!(
            [401, 403, 406, 415].contains(&status),
            "round {round}: {status}"
        );
        if close {
            // Said so: a client reconnects.
            closed += 1;
            tcp = tokio::net::TcpStream::connect(&server.addr)
                .await
                .expect("reconnect");
        }
        let answered = tokio::time::timeout(
            Duration::from_secs(5),
            exchange(&mut tcp, &retry, &initialize_json()),
        )
        .await
        .ok()
        .flatten();
        match answered {
            Some((200, _)) => {}
            _ => lost += 1,
        }
    }
    eprintln!("40 refusal-then-retry rounds: {lost} retries lost, {closed} closes announced");
    assert_eq!(lost, 0, "{lost} of 40 retries were lost");
}

#[tokio::test]
async fn readiness_probes_are_served_while_idle_connections_hold_the_admin_cap() {
    let server = TestServer::with_config(&config(""));
    let admin = server.admin_url.trim_start_matches("http://").to_string();
    let mut idle = Vec::new();
    for _ in 0..64 {
        idle.push(
            tokio::net::TcpStream::connect(&admin)
                .await
                .expect("connect"),
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let probe = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    let mut ready = 0;
    for _ in 0..25 {
        let resp = probe
            .get(format!("{}/readyz", server.admin_url))
            .send()
            .await;
        if resp.is_ok_and(|r| r.status() == 200) {
            ready += 1;
        }
    }
    eprintln!("{ready} of 25 /readyz probes answered 200 with 64 idle admin connections");
    drop(idle);
    assert_eq!(ready, 25);
}

/// Opens a GET stream for `token`'s session; the status.
async fn open_get(http: &reqwest::Client, url: &str, token: &str, session: &str) -> u16 {
    let resp = http
        .get(url)
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", LATEST)
        .send()
        .await
        .expect("GET");
    let status = resp.status().as_u16();
    // Streams stay open while their response is held.
    std::mem::forget(resp);
    status
}

async fn initialize_as(http: &reqwest::Client, url: &str, token: &str) -> String {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", common::ACCEPT_BOTH)
        .header("authorization", format!("Bearer {token}"))
        .body(initialize_json())
        .send()
        .await
        .expect("initialize");
    assert_eq!(resp.status(), 200);
    resp.headers()["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_string()
}

/// What `token` gets for a `tools/call` in its session.
async fn call_as(http: &reqwest::Client, url: &str, token: &str, session: &str) -> u16 {
    let notify = json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string();
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"echo","arguments":{"text":"hi"}}})
    .to_string();
    let mut status = 0;
    for body in [notify, call] {
        let resp = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", common::ACCEPT_BOTH)
            .header("authorization", format!("Bearer {token}"))
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LATEST)
            .body(body)
            .send()
            .await
            .expect("POST");
        status = resp.status().as_u16();
        let _ = resp.bytes().await;
    }
    status
}

async fn streams_alice_takes_and_bobs_call(share: usize) -> (usize, u16) {
    let dir = common::TempDir::new("hostile-sse");
    let extra = format!("[http]\nmax_sse_streams = 4\nmax_sse_streams_per_principal = {share}\n");
    let server = with_tokens(&dir, "127.0.0.1:0", &extra);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let bob = initialize_as(&http, &server.url, BOB).await;
    let mut opened = 0;
    for _ in 0..6 {
        // A session has one standalone stream, so each stream is a session of its own.
        let alice = initialize_as(&http, &server.url, ALICE).await;
        if open_get(&http, &server.url, ALICE, &alice).await == 200 {
            opened += 1;
        }
    }
    (opened, call_as(&http, &server.url, BOB, &bob).await)
}

#[tokio::test]
async fn one_principal_cannot_take_every_sse_stream() {
    // A share as large as the whole cap is what the server did before it had one.
    let (unshared, bob_unshared) = streams_alice_takes_and_bobs_call(4).await;
    let (shared, bob_shared) = streams_alice_takes_and_bobs_call(2).await;
    eprintln!(
        "share 4 of 4: alice opened {unshared}, bob's call {bob_unshared}; \
         share 2 of 4: alice opened {shared}, bob's call {bob_shared}"
    );
    assert_eq!((unshared, bob_unshared), (4, 503));
    assert_eq!((shared, bob_shared), (2, 200));
}

/// `initialize` through a trusted proxy on ::1 for 10 clients of one /64 (with and
/// without ports), then one of another /64; how many were accepted.
async fn initializes_from_one_slash_64(prefix_len: u8) -> (usize, u16) {
    let dir = common::TempDir::new("hostile-v6");
    let toml = format!(
        "[http]\ntrusted_proxies = [\"::1\"]\ninitialize_rate_per_ip = 1\n\
         initialize_burst_per_ip = 1\nipv6_prefix_len = {prefix_len}\n{BUILTIN_TOOLS_TOML}"
    );
    let path = dir.write("config.toml", &toml);
    let server = TestServer::with_args(
        &[
            "--listen",
            "[::1]:0",
            "--config",
            path.to_str().expect("path"),
        ],
        &[],
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let post = |forwarded: (&'static str, String)| {
        http.post(&server.url)
            .header("content-type", "application/json")
            .header("accept", common::ACCEPT_BOTH)
            .header(forwarded.0, forwarded.1)
            .body(initialize_json())
            .send()
    };
    let mut accepted = 0;
    for i in 1..=10 {
        let forwarded = match i % 3 {
            0 => ("x-forwarded-for", format!("2001:db8:1:2::{i:x}")),
            1 => (
                "x-forwarded-for",
                format!("10.9.9.9, [2001:db8:1:2:{i:x}::1]:4433"),
            ),
            _ => (
                "forwarded",
                format!("for=\"[2001:db8:1:2::{i:x}]:80\";proto=http"),
            ),
        };
        if post(forwarded).await.expect("POST").status() == 200 {
            accepted += 1;
        }
    }
    let other = post(("x-forwarded-for", "2001:db8:1:3::1".to_string()))
        .await
        .expect("POST")
        .status()
        .as_u16();
    (accepted, other)
}

#[tokio::test]
async fn the_initialize_rate_charges_an_ipv6_slash_64_as_one_client() {
    let (per_address, _) = initializes_from_one_slash_64(128).await;
    let (per_network, other_network) = initializes_from_one_slash_64(64).await;
    eprintln!(
        "10 initialize from one /64: {per_address} accepted keyed per address, \
         {per_network} keyed per /64 (another /64: {other_network})"
    );
    assert_eq!(per_address, 10);
    assert_eq!((per_network, other_network), (1, 200));
}

#[tokio::test]
async fn a_refusal_that_cannot_drain_its_body_says_connection_close() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = common::TempDir::new("hostile-close");
    let server = with_tokens(&dir, "127.0.0.1:0", "[http]\nmax_body_bytes = 1024\n");
    let mut tcp = tokio::net::TcpStream::connect(&server.addr)
        .await
        .expect("connect");
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {}\r\n\
         Authorization: Bearer expired-token-000000000\r\nContent-Length: 1000000\r\n\r\n",
        server.path(),
        server.addr,
        common::ACCEPT_BOTH
    );
    tcp.write_all(head.as_bytes()).await.expect("write");
    let mut reply = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut reply)).await;
    let reply = String::from_utf8_lossy(&reply).to_ascii_lowercase();
    assert!(read.is_ok(), "the connection stayed open: {reply}");
    assert!(reply.starts_with("http/1.1 401"), "{reply}");
    assert!(reply.contains("connection: close"), "{reply}");
}
