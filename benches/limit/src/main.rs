//! The limit baseline: what the benchmark kit measures when a server does nothing
//! but the minimum every MCP server must do.
//!
//! It serves `POST /mcp` on axum with canned replies and no MCP logic: no session
//! table, no validation, no replay log. Each request body is still parsed with serde_json
//! to read the JSON-RPC id and the echo text, because no real server can skip that.
//! The gap between this server and `mcp-actor` in the same table is the cost of
//! our own MCP machinery; this server's own figures are what axum + hyper + tokio
//! cost on this machine.
//!
//! Handshake-era flow (the kit's): `initialize` gets a fixed result (the requested
//! protocol version echoed) and an `Mcp-Session-Id` from a counter; notifications get
//! 202; `tools/call` gets `{"content":[{"type":"text","text":<same text>}]}` (the kit's
//! `sleep` tool sleeps `ms` first and answers "ok", so `SxC:sleep` scenarios work too);
//! `DELETE` gets 200.
//!
//! 2026-07-28 flow (stateless): a POST whose `MCP-Protocol-Version` header is
//! `2026-07-28` gets, for a request, the result `mcp-actor` gives a 2026-07-28 call of
//! its `echo` (or `sleep`) tool, byte for byte apart from the server's identity:
//! `{"_meta":{"io.modelcontextprotocol/serverInfo":{...}},"content":[{"text":...,
//! "type":"text"}],"resultType":"complete"}` (`mcp-actor` writes keys sorted), as
//! `application/json`, no session header; a notification gets 202. Neither the
//! envelope nor the routing headers are checked.
//!
//! Streams (the `streams` scenarios of `mcp-bench`): a `GET /mcp` is answered with an SSE
//! stream that stays open, and a 2026-07-28 `subscriptions/listen` with an SSE stream that
//! opens with the acknowledgement. `POST /bench/list-changed` sends
//! `notifications/tools/list_changed` to every open stream (with the listen request's id
//! as `subscriptionId` on listen streams). Nothing else is kept per stream: a broadcast
//! receiver and the connection hyper holds, which is what any server on axum pays for an
//! open stream.
//!
//! Usage: `mcp-limit --port PORT` (127.0.0.1).

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::BroadcastStream;

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// One `()` per `POST /bench/list-changed`, to every open stream.
static LIST_CHANGED: LazyLock<broadcast::Sender<()>> =
    LazyLock::new(|| broadcast::channel(16).0);

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port = parse_port();
    let app = Router::new()
        .route(
            "/mcp",
            post(answer)
                .get(|| async { stream(None) })
                .delete(|| async { StatusCode::OK }),
        )
        .route(
            "/bench/list-changed",
            post(|| async {
                let _ = LIST_CHANGED.send(());
                StatusCode::OK
            }),
        );
    // TCP_NODELAY as in mcp-actor and the rmcp peer, so the comparison is fair.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    eprintln!("mcp-limit listening on http://127.0.0.1:{port}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}

fn parse_port() -> u16 {
    let args: Vec<String> = std::env::args().collect();
    match args.as_slice() {
        [_, flag, port] if flag == "--port" => port.parse().expect("--port takes a number"),
        _ => {
            eprintln!("usage: mcp-limit --port PORT");
            std::process::exit(2);
        }
    }
}

/// The one protocol version whose requests are answered statelessly.
const MODERN: &[u8] = b"2026-07-28";

async fn answer(headers: HeaderMap, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let modern = headers
        .get("mcp-protocol-version")
        .is_some_and(|v| v.as_bytes() == MODERN);
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    match (method, request.get("id")) {
        (_, None) => StatusCode::ACCEPTED.into_response(),
        ("subscriptions/listen", Some(id)) if modern => stream(Some(id)),
        (_, Some(id)) if modern => call_tool(id, &request, Era::Modern).await,
        ("initialize", Some(id)) => initialize(id, &request),
        (_, Some(id)) => call_tool(id, &request, Era::Handshake).await,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Era {
    /// 2025-11-25 and before: the result is the bare `CallToolResult`.
    Handshake,
    /// 2026-07-28: the result also carries `resultType` and `_meta` serverInfo.
    Modern,
}

/// The `_meta` every 2026-07-28 result carries, with `mcp-actor`'s default fields
/// (name, title, version, description), each as long as `mcp-actor`'s default, so the
/// reply is as long as its reply to the same call.
const MODERN_META: &[u8] = br#""_meta":{"io.modelcontextprotocol/serverInfo":{"description":"Canned replies and no MCP logic: the ceiling","name":"mcp-limit","title":"mcp-limit","version":"0.0.0"}},"#;

/// Once per session, so clarity wins over speed here.
fn initialize(id: &Value, request: &Value) -> Response {
    let version = request
        .get("params")
        .and_then(|p| p.get("protocolVersion"))
        .unwrap_or(&Value::Null);
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mcp-limit", "version": "0.0.0"}
        }
    });
    let session = NEXT_SESSION.fetch_add(1, Ordering::Relaxed).to_string();
    let mut response = json_response(serde_json::to_vec(&body).expect("a Value serializes"));
    response.headers_mut().insert(
        "mcp-session-id",
        HeaderValue::from_str(&session).expect("a number is a valid header value"),
    );
    response
}

/// The hot path, kept as lean as a real server could make it: the id and the text are
/// borrowed from the parsed request and written straight into the reply, with no
/// intermediate `Value` tree (and no `Value::pointer`, which allocates per segment).
async fn call_tool(id: &Value, request: &Value, era: Era) -> Response {
    let arguments = request.get("params").and_then(|p| p.get("arguments"));
    let argument = |name| arguments.and_then(|a| a.get(name));
    if let Some(ms) = argument("ms").and_then(Value::as_u64) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let text = argument("text");
    let mut body = Vec::with_capacity(256 + text.and_then(Value::as_str).map_or(0, str::len));
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut body, id).expect("a Value serializes");
    body.extend_from_slice(br#","result":{"#);
    if era == Era::Modern {
        body.extend_from_slice(MODERN_META);
    }
    body.extend_from_slice(match era {
        Era::Handshake => br#""content":[{"type":"text","text":"#.as_slice(),
        Era::Modern => br#""content":[{"text":"#.as_slice(),
    });
    match text {
        Some(text) => serde_json::to_writer(&mut body, text).expect("a Value serializes"),
        None => body.extend_from_slice(br#""ok""#), // the sleep tool's answer
    }
    body.extend_from_slice(match era {
        Era::Handshake => b"}]}}".as_slice(),
        Era::Modern => br#","type":"text"}],"resultType":"complete"}}"#.as_slice(),
    });
    json_response(body)
}

/// An SSE stream of `notifications/tools/list_changed`: a GET stream, or (with the listen
/// request's id) a listen stream, which opens with its acknowledgement.
fn stream(listen: Option<&Value>) -> Response {
    let meta = listen.map(|id| json!({ "io.modelcontextprotocol/subscriptionId": id }));
    let event = |message: Value| Bytes::from(format!("data: {message}\n\n"));
    let changed = event(match &meta {
        Some(meta) => json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
            "params": {"_meta": meta}}),
        None => json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
    });
    let ack = meta.map(|meta| {
        event(json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}))
    });
    let changes = BroadcastStream::new(LIST_CHANGED.subscribe()).map(move |r| r.map(|()| changed.clone()));
    let body = Body::from_stream(tokio_stream::iter(ack.map(Ok)).chain(changes));
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

fn json_response(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}
