//! The admin listener and its metrics: `/metrics` scraped over HTTP and read with a
//! Prometheus text-format parser, against a workload whose every count is known; `/healthz`
//! and `/readyz`; the address rules; one registry per server instance.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::in_process::InProcess;
use common::modern::{Modern, client_of};
use common::{SseReader, TempDir, TestServer, read_reply};
use mcp_actor::{Config, Server};
use prometheus_parse::{Scrape, Value as Sample};
use reqwest::StatusCode;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

/// `/metrics` of an admin listener, parsed.
async fn scrape(admin_url: &str) -> Scrape {
    let response = reqwest::get(format!("{admin_url}/metrics"))
        .await
        .expect("GET /metrics");
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.expect("metrics body");
    Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format")
}

/// The value of the counter or gauge `name` whose labels include `labels`; 0 when no
/// such series is exported (a request series appears with its first request).
fn value(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            Sample::Counter(v) | Sample::Gauge(v) | Sample::Untyped(v) => v,
            _ => panic!("{name} is not a counter or gauge"),
        })
        .collect();
    assert!(found.len() <= 1, "{name}{labels:?} matches several series");
    found.first().copied().unwrap_or(0.0)
}

/// Every `mcp_requests_total` series as (method, era, outcome) → count.
fn requests(scrape: &Scrape) -> BTreeMap<(String, String, String), f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == "mcp_requests_total")
        .map(|s| {
            let label = |k: &str| s.labels.get(k).unwrap_or_default().to_string();
            let Sample::Counter(v) = s.value else {
                panic!("mcp_requests_total is not a counter: {s:?}")
            };
            ((label("method"), label("era"), label("outcome")), v)
        })
        .collect()
}

/// The `+Inf` bucket (the observation count) of the duration histogram of `method` in `era`.
fn observed(scrape: &Scrape, method: &str, era: &str) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == "mcp_request_duration_seconds")
        .filter(|s| s.labels.get("method") == Some(method) && s.labels.get("era") == Some(era))
        .find_map(|s| match &s.value {
            Sample::Histogram(buckets) => buckets
                .iter()
                .find(|b| b.less_than == f64::INFINITY)
                .map(|b| b.count),
            _ => None,
        })
        .unwrap_or(0.0)
}

/// Scrapes until `done` holds for the scrape, or panics after [`WAIT`].
async fn scrape_until(admin_url: &str, what: &str, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + WAIT;
    loop {
        let scrape = scrape(admin_url).await;
        if done(&scrape) {
            return scrape;
        }
        assert!(Instant::now() < deadline, "never saw {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const CONFIG: &str = r#"
[http]
max_body_bytes = 8192

[replay]
max_events_per_stream = 3

[[tools]]
builtin = "echo"

[[tools]]
builtin = "sleep"

[[tools]]
builtin = "sample"
"#;

fn sighup(server: &TestServer) {
    let pid = nix::unistd::Pid::from_raw(server.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).expect("SIGHUP");
}

#[tokio::test]
async fn metrics_count_a_known_workload_exactly() {
    let dir = TempDir::new("metrics");
    let path = dir.write("config.toml", CONFIG);
    let server = TestServer::with_config_file(&path, &[]);
    let client = server.bounded_client(WAIT);

    // Four sessions: three in 2025-11-25, one in 2025-06-18.
    let a = client.connect().await;
    let b = client.connect().await;
    let c = client.connect().await;
    let d = client.initialize("2025-06-18", json!({})).await;
    assert_eq!(
        d.notify("notifications/initialized", None).await,
        StatusCode::ACCEPTED
    );

    // Session a: 2 lists, a ping, 3 echoes, an unknown tool and an unknown method.
    for id in 1..=2 {
        a.call(json!(id), "tools/list", json!({})).await;
    }
    a.call(json!(3), "ping", json!({})).await;
    for id in 4..=6 {
        assert_eq!(
            a.call_tool_text(json!(id), "echo", json!({ "text": "hi" }))
                .await,
            "hi"
        );
    }
    let unknown_tool = a
        .request(json!(7), "tools/call", json!({ "name": "nope" }))
        .await;
    assert!(unknown_tool.error_code().is_some(), "{unknown_tool:?}");
    let unknown_method = a.request(json!(8), "no/such", json!({})).await;
    assert!(unknown_method.error_code().is_some(), "{unknown_method:?}");
    d.call(json!(1), "ping", json!({})).await;

    // One body over http.max_body_bytes: 413, and no request.
    let padding = "x".repeat(10_000);
    let oversized =
        json!({ "jsonrpc": "2.0", "id": 9, "method": "ping", "params": { "pad": padding } });
    assert_eq!(
        a.post_value(&oversized).await.status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );

    // Session b: a call whose progress overflows the 3-event replay window; resuming from
    // its first event is 410, from its next-to-last event replays one event.
    let progress =
        json!({ "name": "sleep", "arguments": { "ms": 500 }, "_meta": { "progressToken": 1 } });
    let reply = b.request(json!(1), "tools/call", progress).await;
    assert!(reply.event_ids.len() > 5, "{reply:?}");
    assert_eq!(
        b.get(Some(&reply.event_ids[0])).await.status(),
        StatusCode::GONE
    );
    let tail = &reply.event_ids[reply.event_ids.len() - 2];
    let resumed = read_reply(b.get(Some(tail)).await).await;
    assert_eq!(resumed.messages.len(), 1, "{resumed:?}");

    // Session c: a tool that asks the client to sample, answered.
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "sample", "arguments": { "prompt": "hello" } } });
    let mut stream = SseReader::new(c.post_value(&call).await);
    let (_, request) = stream.next_message(WAIT).await.expect("sampling request");
    let answer = json!({ "role": "assistant", "content": { "type": "text", "text": "hi" },
                         "model": "m", "stopReason": "endTurn" });
    assert_eq!(c.answer(&request["id"], answer).await, StatusCode::ACCEPTED);
    let (_, result) = stream.next_message(WAIT).await.expect("tool result");
    assert_eq!(result["id"], json!(1), "{result}");
    drop(stream);

    // Two sessions deleted; c and d stay.
    assert_eq!(a.delete().await, StatusCode::OK);
    assert_eq!(b.delete().await, StatusCode::OK);

    // 2026-07-28: a call and a list, no session.
    let modern = client_of(&server);
    let echoed = Modern::call(1, "echo", json!({ "text": "hi" }))
        .result(&modern)
        .await;
    assert_eq!(echoed["content"][0]["text"], json!("hi"));
    Modern::request(2, "tools/list").result(&modern).await;

    // One reload taken, one rejected.
    sighup(&server);
    scrape_until(&server.admin_url, "the reload", |s| {
        value(s, "mcp_config_reloads_total", &[("outcome", "ok")]) == 1.0
    })
    .await;
    std::fs::write(&path, "[[tools]]\nbuiltin = \"no-such-builtin\"\n").expect("break it");
    sighup(&server);
    let metrics = scrape_until(&server.admin_url, "the rejected reload", |s| {
        value(s, "mcp_config_reloads_total", &[("outcome", "failed")]) == 1.0
            && value(s, "mcp_sse_streams_open", &[]) == 0.0
    })
    .await;

    let expected: BTreeMap<(String, String, String), f64> = [
        ("initialize", "2025-11-25", "ok", 3.0),
        ("initialize", "2025-06-18", "ok", 1.0),
        ("tools/list", "2025-11-25", "ok", 2.0),
        ("ping", "2025-11-25", "ok", 1.0),
        ("ping", "2025-06-18", "ok", 1.0),
        ("tools/call", "2025-11-25", "ok", 5.0),
        ("tools/call", "2025-11-25", "error", 1.0),
        ("other", "2025-11-25", "error", 1.0),
        ("tools/call", "2026-07-28", "ok", 1.0),
        ("tools/list", "2026-07-28", "ok", 1.0),
    ]
    .into_iter()
    .map(|(m, e, o, n)| ((m.to_string(), e.to_string(), o.to_string()), n))
    .collect();
    assert_eq!(requests(&metrics), expected);
    for (method, era, ok, error) in [
        ("tools/call", "2025-11-25", 5.0, 1.0),
        ("initialize", "2025-11-25", 3.0, 0.0),
        ("tools/call", "2026-07-28", 1.0, 0.0),
    ] {
        assert_eq!(
            observed(&metrics, method, era),
            ok + error,
            "{method} {era}"
        );
    }

    let one = |name: &str, labels: &[(&str, &str)]| value(&metrics, name, labels);
    assert_eq!(one("mcp_sessions_created_total", &[]), 4.0);
    assert_eq!(one("mcp_sessions_active", &[]), 2.0);
    assert_eq!(
        one("mcp_sessions_ended_total", &[("reason", "delete")]),
        2.0
    );
    for reason in ["idle", "limit", "shutdown"] {
        assert_eq!(one("mcp_sessions_ended_total", &[("reason", reason)]), 0.0);
    }
    assert_eq!(
        one("mcp_limit_rejections_total", &[("limit", "max_body_bytes")]),
        1.0
    );
    for limit in [
        "max_in_flight",
        "modern_max_in_flight",
        "max_sessions",
        "mailbox_full",
        "max_connections",
        "max_listen_streams",
        "draining",
        "max_pending",
        "max_processes",
        "body_timeout",
    ] {
        assert_eq!(
            one("mcp_limit_rejections_total", &[("limit", limit)]),
            0.0,
            "{limit}"
        );
    }
    assert_eq!(one("mcp_sse_replay_misses_total", &[]), 1.0);
    assert_eq!(one("mcp_sse_events_replayed_total", &[]), 1.0);
    assert_eq!(
        one("mcp_client_requests_total", &[("outcome", "answered")]),
        1.0
    );
    for outcome in ["timed_out", "cancelled"] {
        assert_eq!(
            one("mcp_client_requests_total", &[("outcome", outcome)]),
            0.0
        );
    }
    assert_eq!(one("mcp_client_requests_pending", &[]), 0.0);
    assert_eq!(one("mcp_tools_in_flight", &[]), 0.0);
    assert_eq!(one("mcp_command_processes", &[]), 0.0);
    assert_eq!(one("mcp_config_reloads_total", &[("outcome", "ok")]), 1.0);
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(one("mcp_build_info", &[("version", version)]), 1.0);
}

#[tokio::test]
async fn command_processes_count_while_they_run() {
    let server = TestServer::with_config(
        "[[tools]]\nname = \"nap\"\ncommand = [\"sh\", \"-c\", \"sleep 1; echo done\"]\n",
    );
    let session = server.bounded_client(WAIT).connect().await;
    let running =
        tokio::spawn(async move { session.call_tool_text(json!(1), "nap", json!({})).await });
    scrape_until(&server.admin_url, "a running command", |s| {
        value(s, "mcp_command_processes", &[]) == 1.0 && value(s, "mcp_tools_in_flight", &[]) == 1.0
    })
    .await;
    assert_eq!(running.await.expect("call"), "done\n");
    let after = scrape(&server.admin_url).await;
    assert_eq!(value(&after, "mcp_command_processes", &[]), 0.0);
    assert_eq!(value(&after, "mcp_tools_in_flight", &[]), 0.0);
}

#[tokio::test]
async fn the_admin_listener_serves_health_readiness_and_both_text_formats() {
    let server = TestServer::start();
    let http = reqwest::Client::new();
    let get = |path: &str, accept: &str| {
        http.get(format!("{}{path}", server.admin_url))
            .header("accept", accept)
            .send()
    };
    let health = get("/healthz", "*/*").await.expect("healthz");
    assert_eq!(health.status(), StatusCode::OK);
    assert_eq!(
        health.json::<Value>().await.expect("JSON"),
        json!({ "status": "ok" })
    );
    let ready = get("/readyz", "*/*").await.expect("readyz");
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(
        ready.json::<Value>().await.expect("JSON"),
        json!({ "status": "ready" })
    );

    let text = get("/metrics", "*/*").await.expect("metrics");
    assert_eq!(
        text.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let openmetrics = "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;q=0.5";
    let open = get("/metrics", openmetrics).await.expect("metrics");
    assert_eq!(
        open.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let body = open.text().await.expect("body");
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("mcp_sessions_created_total 0"), "{body}");

    let missing = get("/nope", "*/*").await.expect("404");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn readyz_on_the_admin_listener_answers_503_through_the_drain() {
    let mut server = TestServer::with_config("[[tools]]\nbuiltin = \"sleep\"\n");
    let session = server.bounded_client(WAIT).connect().await;
    let busy = tokio::spawn(async move {
        session
            .call_tool_text(json!(1), "sleep", json!({ "ms": 1500 }))
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = nix::unistd::Pid::from_raw(server.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let deadline = Instant::now() + WAIT;
    let ready = loop {
        let ready = reqwest::get(format!("{}/readyz", server.admin_url))
            .await
            .expect("the admin listener serves through the drain");
        if ready.status() == StatusCode::SERVICE_UNAVAILABLE || Instant::now() > deadline {
            break ready;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        ready.json::<Value>().await.expect("JSON")["status"],
        json!("draining")
    );
    let metrics = scrape(&server.admin_url).await;
    assert_eq!(value(&metrics, "mcp_sessions_active", &[]), 1.0);
    busy.await.expect("the call in flight finishes");
    let status = server
        .wait_exit(WAIT)
        .expect("the server exits after the drain");
    assert!(status.success(), "{status:?}");
}

/// Runs the binary with `args`, expecting it to refuse to start; returns its stderr.
fn refused_start(args: &[&str]) -> String {
    let (status, stderr) = common::run_binary(args, WAIT).expect("the server kept running");
    assert!(!status.success(), "{args:?} started");
    stderr
}

#[test]
fn a_non_loopback_admin_address_without_authentication_refuses_to_start() {
    let stderr = refused_start(&["--listen", "127.0.0.1:0", "--admin-listen", "0.0.0.0:0"]);
    assert!(
        stderr.contains("admin") && stderr.contains("server.allow_unauthenticated"),
        "{stderr}"
    );
}

#[test]
fn an_admin_address_in_use_is_a_clear_startup_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let stderr = refused_start(&["--listen", "127.0.0.1:0", "--admin-listen", &addr]);
    assert!(
        stderr.contains(&format!("cannot listen on {addr} for the admin endpoints")),
        "{stderr}"
    );
}

#[tokio::test]
async fn each_server_in_a_process_counts_only_its_own_traffic() {
    let builder = || Server::builder().config(Config::default());
    let mut first = InProcess::start(builder()).await;
    let second = InProcess::start(builder()).await;
    first.client().connect().await;
    first.client().connect().await;
    second.client().connect().await;
    let (a, b) = (first.server.metrics(), second.server.metrics());
    assert!(
        a.encode_prometheus()
            .contains("\nmcp_sessions_created_total 2\n")
    );
    assert!(
        b.encode_prometheus()
            .contains("\nmcp_sessions_created_total 1\n")
    );
    first.shutdown().await;
    let ended = "\nmcp_sessions_ended_total{reason=\"shutdown\"} 2\n";
    assert!(
        a.encode_prometheus().contains(ended),
        "{}",
        a.encode_prometheus()
    );
    assert!(b.encode_prometheus().contains("\nmcp_sessions_active 1\n"));
}
