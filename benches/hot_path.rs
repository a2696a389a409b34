//! Micro-benchmarks of the request hot path, in process (no sockets):
//!
//! - `jsonrpc/decode`: a `tools/call` body into a typed message;
//! - `dispatch/echo`: feature dispatch of `tools/call echo`, argument validation included;
//! - `session/round_trip`: a whole POST through the axum router, the session actor, the
//!   handler task and back — what one request costs besides the network;
//! - `sse/frame`: encoding one event with `sse-stream`;
//! - `streams/event_id`: minting an event id.
//!
//! Run with `cargo bench --bench hot_path`. Figures are for comparing changes on one
//! machine; server-level claims come from the benchmark kit (docs/performance.md).

use std::hint::black_box;

use axum::body::Body;
use axum::http::Request;
use criterion::{Criterion, criterion_group, criterion_main};
use mcp_actor::{Config, Server, jsonrpc, providers};
use tower::ServiceExt;

const CALL: &str = r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"0123456789012345678901234567890123456789012345678901234567890123"}}}"#;

fn server() -> Server {
    let config =
        Config::parse(mcp_actor::config::DEFAULT_CONFIG_TOML, "default").expect("default config");
    let builtins = providers::builtin::feature_set(&config.tools).expect("builtin tools");
    Server::builder()
        .config(config)
        .features(builtins)
        .build()
        .expect("server")
}

fn post(body: &str, session: Option<&str>) -> Request<Body> {
    let mut req = Request::post("/mcp")
        .header("host", "127.0.0.1:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = session {
        req = req
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25");
    }
    req.body(Body::from(body.to_string())).expect("request")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    c.bench_function("jsonrpc/decode", |b| {
        b.iter(|| jsonrpc::decode_body(black_box(CALL.as_bytes())))
    });

    c.bench_function("streams/event_id", |b| {
        b.iter(|| mcp_actor::session::streams::format_event_id(black_box(7), black_box(123_456)))
    });

    c.bench_function("sse/frame", |b| {
        b.iter(|| {
            let event = sse_stream::Sse {
                id: Some("7.12".into()),
                data: Some(CALL.to_string()),
                retry: None,
                event: None,
            };
            black_box(event.encode())
        })
    });

    let server = server();
    let router = server.router();
    let session = rt.block_on(async {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        let resp = router.clone().oneshot(post(init, None)).await.expect("initialize");
        resp.headers()["mcp-session-id"].to_str().expect("id").to_string()
    });
    c.bench_function("session/round_trip", |b| {
        b.to_async(&rt).iter(|| async {
            let resp = router
                .clone()
                .oneshot(post(CALL, Some(&session)))
                .await
                .expect("call");
            black_box(
                axum::body::to_bytes(resp.into_body(), usize::MAX)
                    .await
                    .expect("body"),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
