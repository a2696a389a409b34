//! The test collector and helpers of tests/telemetry.rs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{Value, json};

use crate::common::{self, TestServer};

pub const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
pub const PARENT: &str = "00f067aa0ba902b7";
pub const WAIT: Duration = Duration::from_secs(10);

pub fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

/// A span as exported, with the `service.name` of the process that sent it.
#[derive(Clone, Debug)]
pub struct Exported {
    pub service: String,
    pub span: Span,
}

impl Exported {
    pub fn attr(&self, key: &str) -> Option<String> {
        let value = self.span.attributes.iter().find(|kv| kv.key == key)?;
        match value.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            AnyValue::IntValue(i) => Some(i.to_string()),
            other => Some(format!("{other:?}")),
        }
    }

    pub fn trace_id(&self) -> String {
        hex(&self.span.trace_id)
    }

    pub fn parent_id(&self) -> String {
        hex(&self.span.parent_span_id)
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP collector on a free port of 127.0.0.1, keeping every span it is sent.
pub struct Collector {
    pub url: String,
    spans: Arc<Mutex<Vec<Exported>>>,
    /// The `x-otlp-key` header of every export, when it had one.
    keys: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    pub async fn start() -> Collector {
        let spans: Arc<Mutex<Vec<Exported>>> = Arc::default();
        let keys: Arc<Mutex<Vec<String>>> = Arc::default();
        let kept = Arc::clone(&spans);
        let seen = Arc::clone(&keys);
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: Bytes| {
                let kept = Arc::clone(&kept);
                if let Some(key) = headers.get("x-otlp-key").and_then(|v| v.to_str().ok()) {
                    seen.lock().unwrap().push(key.to_string());
                }
                async move {
                    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
                        return (axum::http::StatusCode::BAD_REQUEST, Vec::new());
                    };
                    let mut kept = kept.lock().unwrap();
                    for resource in request.resource_spans {
                        let service = resource
                            .resource
                            .iter()
                            .flat_map(|r| &r.attributes)
                            .find(|kv| kv.key == "service.name")
                            .and_then(|kv| kv.value.as_ref()?.value.as_ref().cloned())
                            .map(|v| match v {
                                AnyValue::StringValue(s) => s,
                                other => format!("{other:?}"),
                            })
                            .unwrap_or_default();
                        for scope in resource.scope_spans {
                            for span in scope.spans {
                                kept.push(Exported {
                                    service: service.clone(),
                                    span,
                                });
                            }
                        }
                    }
                    (axum::http::StatusCode::OK, Vec::new())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Collector { url, spans, keys }
    }

    /// The `x-otlp-key` headers the exports carried.
    pub fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }

    /// The first span `matches` accepts, waiting for it up to [`WAIT`].
    pub async fn span(&self, matches: impl Fn(&Exported) -> bool) -> Exported {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(found) = self.spans.lock().unwrap().iter().find(|s| matches(s)) {
                return found.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no such span within {WAIT:?}; the collector has: {:#?}",
                self.names()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn names(&self) -> Vec<(String, String, String)> {
        let spans = self.spans.lock().unwrap();
        spans
            .iter()
            .map(|s| (s.service.clone(), s.span.name.clone(), s.trace_id()))
            .collect()
    }
}

/// `[telemetry]` exporting to `endpoint` every 100 ms, as `service`, and the echo tool.
pub fn telemetry(endpoint: &str, service: &str) -> String {
    telemetry_with(endpoint, service, "export_timeout = \"2s\"\n")
}

/// [`telemetry`] with `extra` keys in the section.
pub fn telemetry_with(endpoint: &str, service: &str, extra: &str) -> String {
    format!(
        "[telemetry]\nenabled = true\notlp_endpoint = \"{endpoint}\"\nservice_name = \"{service}\"\n\
         export_interval = \"100ms\"\n{extra}\n[[tools]]\nbuiltin = \"echo\"\n"
    )
}

pub const FAILING_TOOL: &str =
    "[[tools]]\nname = \"fail\"\ncommand = [\"sh\", \"-c\", \"echo oops >&2; exit 3\"]\n";

/// POSTs one session request with extra headers and returns its response.
pub async fn session_request(
    session: &common::Session,
    body: &Value,
    extra: &[(&str, &str)],
) -> Value {
    let mut headers = vec![
        ("mcp-session-id", session.id.as_str()),
        ("mcp-protocol-version", session.version.as_str()),
    ];
    headers.extend_from_slice(extra);
    let reply = common::read_reply(session.client.post_raw(body, &headers).await).await;
    reply
        .response(&body["id"])
        .unwrap_or_else(|| panic!("no response in {reply:?}"))
        .clone()
}

pub fn echo(id: i64, meta: Option<Value>) -> Value {
    let mut params = json!({ "name": "echo", "arguments": { "text": "hi" } });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
}

/// `mcp_telemetry_spans_dropped_total` on the admin listener.
pub async fn spans_dropped(server: &TestServer) -> f64 {
    let text = reqwest::get(format!("{}/metrics", server.admin_url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
    scrape
        .samples
        .iter()
        .find(|s| s.metric == "mcp_telemetry_spans_dropped_total")
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
            _ => f64::NAN,
        })
        .expect("mcp_telemetry_spans_dropped_total")
}

/// The samples of `/metrics` named `name`, as (labels, value).
pub async fn samples(
    server: &TestServer,
    name: &str,
) -> Vec<(std::collections::HashMap<String, String>, f64)> {
    let text = reqwest::get(format!("{}/metrics", server.admin_url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    scrape
        .samples
        .into_iter()
        .filter(|s| s.metric == name)
        .map(|s| {
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            };
            let labels = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (labels, value)
        })
        .collect()
}

/// A stdio MCP server whose one tool, `meta`, answers with the `_meta` of its call.
pub const META_UPSTREAM: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "meta", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "meta", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(params.get("_meta") or {})}]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;
