//! OpenTelemetry traces over OTLP/HTTP, checked by a collector of our own: a small axum
//! server on 127.0.0.1 that decodes every export with the `opentelemetry-proto` types, as
//! a real collector does.
//!
//! What is checked, against the real binary: a call is one SERVER span named and
//! attributed by the MCP semantic conventions, a child of the caller's `traceparent` (the
//! header, or `params._meta`, which wins); the same on 2026-07-28; a failing call sets
//! the span's status; through the gateway the upstream's span is in the same trace; and
//! with the collector down calls go on and the lost spans are counted on `/metrics`.

mod common;
#[path = "telemetry/support.rs"]
mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::TestServer;
use common::modern::{Modern, client_of};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode as SpanStatus;
use serde_json::{Value, json};
use support::*;

#[tokio::test]
async fn a_traceparent_header_makes_the_call_a_server_span_of_that_trace() {
    let collector = Collector::start().await;
    let server = TestServer::with_config(&telemetry(&collector.url, "node"));
    let session = server.client().connect().await;
    let header = traceparent(TRACE, PARENT);
    let response = session_request(&session, &echo(7, None), &[("traceparent", &header)]).await;
    assert!(response.get("result").is_some(), "{response}");

    let span = collector.span(|s| s.trace_id() == TRACE).await;
    assert_eq!(span.span.name, "tools/call echo");
    assert_eq!(span.span.kind, SpanKind::Server as i32);
    assert_eq!(span.parent_id(), PARENT, "the header's span is the parent");
    assert_eq!(span.service, "node");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.session.id", session.id.as_str()),
        ("mcp.protocol.version", session.version.as_str()),
        ("jsonrpc.request.id", "7"),
    ] {
        assert_eq!(span.attr(key).as_deref(), Some(value), "{key} of {span:#?}");
    }
    assert_ne!(
        span.span.status.as_ref().map(|s| s.code),
        Some(SpanStatus::Error as i32)
    );
}

#[tokio::test]
async fn meta_traceparent_wins_over_the_header() {
    let collector = Collector::start().await;
    let server = TestServer::with_config(&telemetry(&collector.url, "node"));
    let session = server.client().connect().await;
    let (meta_trace, header_trace) = ("11111111111111111111111111111111", TRACE);
    let meta = json!({ "traceparent": traceparent(meta_trace, "2222222222222222"),
                       "tracestate": "vendor=1" });
    let header = traceparent(header_trace, PARENT);
    let response =
        session_request(&session, &echo(3, Some(meta)), &[("traceparent", &header)]).await;
    assert!(response.get("result").is_some(), "{response}");

    let span = collector.span(|s| s.span.name == "tools/call echo").await;
    assert_eq!(
        span.trace_id(),
        meta_trace,
        "_meta names the parent, not the header"
    );
    assert_eq!(span.parent_id(), "2222222222222222");
    assert_eq!(span.span.trace_state, "vendor=1");
    assert!(
        !collector.names().iter().any(|(_, _, t)| t == header_trace),
        "no span joined the header's trace"
    );
}

#[tokio::test]
async fn a_2026_07_28_call_is_a_server_span_with_its_protocol_version() {
    let collector = Collector::start().await;
    let server = TestServer::with_config(&telemetry(&collector.url, "node"));
    let client = client_of(&server);
    let header = traceparent(TRACE, PARENT);
    let request = Modern::call(5, "echo", json!({ "text": "hi" })).header("traceparent", &header);
    request.result(&client).await;

    let span = collector.span(|s| s.trace_id() == TRACE).await;
    assert_eq!(span.span.name, "tools/call echo");
    assert_eq!(span.span.kind, SpanKind::Server as i32);
    assert_eq!(span.parent_id(), PARENT);
    assert_eq!(
        span.attr("mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(span.attr("jsonrpc.request.id").as_deref(), Some("5"));
    assert_eq!(
        span.attr("mcp.session.id"),
        None,
        "2026-07-28 has no session"
    );

    // And `_meta` wins there too.
    let meta_trace = "33333333333333333333333333333333";
    let request = Modern::call(6, "echo", json!({ "text": "hi" }))
        .meta("traceparent", json!(traceparent(meta_trace, PARENT)))
        .header(
            "traceparent",
            &traceparent("44444444444444444444444444444444", PARENT),
        );
    request.result(&client).await;
    let span = collector
        .span(|s| s.attr("jsonrpc.request.id").as_deref() == Some("6"))
        .await;
    assert_eq!(span.trace_id(), meta_trace);
}

#[tokio::test]
async fn a_failing_call_sets_the_span_status_to_error() {
    let collector = Collector::start().await;
    let server = TestServer::with_config(&format!(
        "{}{FAILING_TOOL}",
        telemetry(&collector.url, "node")
    ));
    let session = server.client().connect().await;
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": "fail", "arguments": {} } });
    let response = session_request(&session, &call, &[]).await;
    assert_eq!(response["result"]["isError"], true, "{response}");
    let unknown = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": { "name": "no-such-tool", "arguments": {} } });
    let response = session_request(&session, &unknown, &[]).await;
    let code = response["error"]["code"]
        .as_i64()
        .expect("a JSON-RPC error");

    let failed = collector.span(|s| s.span.name == "tools/call fail").await;
    let status = failed.span.status.clone().expect("a status");
    assert_eq!(status.code, SpanStatus::Error as i32, "{failed:#?}");
    assert_eq!(failed.attr("error.type").as_deref(), Some("tool_error"));

    let refused = collector
        .span(|s| s.span.name == "tools/call no-such-tool")
        .await;
    let status = refused.span.status.clone().expect("a status");
    assert_eq!(status.code, SpanStatus::Error as i32);
    assert_eq!(refused.attr("error.type"), Some(code.to_string()));
    assert_eq!(
        refused.attr("rpc.response.status_code"),
        Some(code.to_string())
    );
}

#[tokio::test]
async fn through_the_gateway_the_http_upstream_joins_the_callers_trace() {
    let collector = Collector::start().await;
    let inner = TestServer::with_config(&telemetry(&collector.url, "upstream"));
    let gateway = TestServer::with_config(&format!(
        "{}[[upstreams]]\nname = \"inner\"\nurl = \"{}\"\n",
        telemetry(&collector.url, "gateway"),
        inner.url
    ));
    let session = gateway.client().connect().await;
    let header = traceparent(TRACE, PARENT);
    let call = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                       "params": { "name": "inner__echo", "arguments": { "text": "hi" } } });
    let response = session_request(&session, &call, &[("traceparent", &header)]).await;
    assert!(response.get("result").is_some(), "{response}");

    let outer = collector
        .span(|s| s.service == "gateway" && s.span.name == "tools/call inner__echo")
        .await;
    assert_eq!(outer.trace_id(), TRACE);
    let upstream = collector
        .span(|s| s.service == "upstream" && s.span.name == "tools/call echo")
        .await;
    assert_eq!(
        upstream.trace_id(),
        TRACE,
        "the upstream's span is in the caller's trace"
    );
    assert_eq!(
        upstream.parent_id(),
        hex(&outer.span.span_id),
        "the gateway's span is the upstream's parent"
    );
}

#[tokio::test]
async fn with_the_collector_down_calls_succeed_and_lost_spans_are_counted() {
    // A port that was free a moment ago: nothing listens there.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let server = TestServer::with_config(&telemetry(&closed, "node"));
    assert_eq!(spans_dropped(&server).await, 0.0);
    let session = server.client().connect().await;
    let started = std::time::Instant::now();
    for id in 0..20 {
        let response = session_request(&session, &echo(id, None), &[]).await;
        assert!(response.get("result").is_some(), "{response}");
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "20 calls took {took:?}");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let dropped = spans_dropped(&server).await;
        if dropped >= 20.0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {dropped} spans counted as dropped"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn operation_and_session_durations_are_semconv_histograms_on_metrics() {
    // Telemetry off: the histograms are metrics, not traces.
    let server = TestServer::with_config("[[tools]]\nbuiltin = \"echo\"\n");
    let session = server.client().connect().await;
    let ok = session_request(&session, &echo(1, None), &[]).await;
    assert!(ok.get("result").is_some(), "{ok}");
    let unknown = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": { "name": "nope", "arguments": {} } });
    let failed = session_request(&session, &unknown, &[]).await;
    assert!(failed.get("error").is_some(), "{failed}");
    assert_eq!(session.delete().await, reqwest::StatusCode::OK);

    let operations = samples(&server, "mcp_server_operation_duration_seconds_count").await;
    let count = |error_type: &str| {
        operations
            .iter()
            .find(|(l, _)| {
                l.get("mcp_method_name").map(String::as_str) == Some("tools/call")
                    && l.get("error_type").map(String::as_str).unwrap_or("") == error_type
            })
            .map(|(_, v)| *v)
    };
    assert_eq!(count(""), Some(1.0), "{operations:?}");
    assert_eq!(count("_OTHER"), Some(1.0), "{operations:?}");
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let sessions = samples(&server, "mcp_server_session_duration_seconds_count").await;
        if sessions.first().map(|(_, v)| *v) == Some(1.0) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{sessions:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_http_tool_sends_the_calls_traceparent_to_its_endpoint() {
    let collector = Collector::start().await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/weather",
        axum::routing::get(move |headers: axum::http::HeaderMap| {
            let kept = Arc::clone(&kept);
            async move {
                if let Some(v) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
                    kept.lock().unwrap().push(v.to_string());
                }
                axum::Json(json!({ "temp": 21 }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let server = TestServer::with_config(&format!(
        "{}[[tools]]\nname = \"weather\"\nurl = \"{api}/weather\"\n",
        telemetry(&collector.url, "node")
    ));
    let session = server.client().connect().await;
    let call = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": { "name": "weather", "arguments": {} } });
    let header = traceparent(TRACE, PARENT);
    let response = session_request(&session, &call, &[("traceparent", &header)]).await;
    assert_eq!(
        response["result"]["structuredContent"]["temp"], 21,
        "{response}"
    );

    let span = collector
        .span(|s| s.span.name == "tools/call weather")
        .await;
    let sent = seen.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "the endpoint got {sent:?}");
    assert!(sent[0].starts_with(&format!("00-{TRACE}-")), "{sent:?}");
    assert!(
        sent[0].contains(&hex(&span.span.span_id)),
        "the endpoint's parent is the call's span: {sent:?}"
    );
}

#[tokio::test]
async fn through_the_gateway_a_stdio_upstream_gets_the_trace_in_meta() {
    let collector = Collector::start().await;
    let dir = common::TempDir::new("telemetry-stdio");
    let script = dir.write("meta_upstream.py", META_UPSTREAM);
    let gateway = TestServer::with_config(&format!(
        "{}[[upstreams]]\nname = \"py\"\ncommand = [\"python3\", \"{}\"]\n",
        telemetry(&collector.url, "gateway"),
        script.display()
    ));
    let session = gateway.client().connect().await;
    let header = traceparent(TRACE, PARENT);
    let call = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call",
                       "params": { "name": "py__meta", "arguments": {} } });
    let response = session_request(&session, &call, &[("traceparent", &header)]).await;
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{response}"));
    let meta: Value = serde_json::from_str(text).unwrap();
    let sent = meta["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("{meta}"));
    let span = collector
        .span(|s| s.span.name == "tools/call py__meta")
        .await;
    assert_eq!(
        sent,
        format!("00-{TRACE}-{}-01", hex(&span.span.span_id)),
        "the upstream's parent is the gateway's span"
    );
}

#[tokio::test]
async fn a_collector_that_never_answers_neither_slows_calls_nor_grows_the_queue() {
    // Accepts connections and never answers: each export waits out export_timeout.
    let stuck = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", stuck.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = stuck.accept().await {
            held.push(socket);
        }
    });
    let server = TestServer::with_config(&telemetry_with(
        &endpoint,
        "node",
        "max_queue_size = 2\nmax_export_batch_size = 1\nexport_timeout = \"20s\"\n",
    ));
    let session = server.client().connect().await;
    let started = std::time::Instant::now();
    for id in 0..20 {
        let response = session_request(&session, &echo(id, None), &[]).await;
        assert!(response.get("result").is_some(), "{response}");
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "20 calls took {took:?}");
    // One span is with the stuck export and two wait in the queue: the rest are dropped at
    // once, long before the 20 s export timeout.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let dropped = spans_dropped(&server).await;
        if dropped >= 16.0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {dropped} spans counted as dropped"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_otlp_header_variables_reach_the_collector_and_no_child_process() {
    let collector = Collector::start().await;
    let dir = common::TempDir::new("otlp-headers");
    let printenv = "[[tools]]\nname = \"printenv\"\ncommand = [\"env\"]\ninput_schema = { type = \"object\" }\n";
    let config = dir.write(
        "config.toml",
        &format!("{}{printenv}", telemetry(&collector.url, "keyed")),
    );
    let server = TestServer::with_config_file(
        &config,
        &[("OTEL_EXPORTER_OTLP_HEADERS", "x-otlp-key=s%3Dcret, team=a")],
    );
    let session = server.client().connect().await;
    let response = session_request(&session, &echo(1, None), &[]).await;
    assert!(response.get("result").is_some(), "{response}");
    collector.span(|s| s.service == "keyed").await;
    assert!(
        collector.keys().iter().all(|k| k == "s=cret") && !collector.keys().is_empty(),
        "{:?}",
        collector.keys()
    );
    let env = session
        .call_tool_text(json!(2), "printenv", json!({}))
        .await;
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("OTEL_EXPORTER_OTLP_HEADERS"), "{env}");
}
