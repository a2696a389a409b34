//! OpenTelemetry traces: the OTLP/HTTP pipeline, the semantic-convention attributes of a
//! request's span, and the trace context read from a request and passed on to what it
//! calls.
//!
//! The traces are the existing `tracing` spans: the binary adds the `tracing-opentelemetry`
//! layer only when `[telemetry] enabled = true` ([`start`]), and every function here returns
//! at once when it is off, so a server that does not trace exports nothing and pays one
//! relaxed load per request.
//!
//! A request's span follows the OpenTelemetry semantic conventions for MCP
//! (semantic-conventions-genai, `docs/gen-ai/mcp.md`): kind SERVER, named
//! `{mcp.method.name} {target}` (`tools/call echo`), with `mcp.method.name`,
//! `mcp.session.id`, `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.operation.name`,
//! `gen_ai.tool.name`, `gen_ai.prompt.name` and `mcp.resource.uri` where they apply; an
//! error sets the span's status, `error.type` and `rpc.response.status_code`.

pub mod context;
mod export;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::KeyValue;
use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanExporter as _};
use serde_json::Value;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::config::telemetry::TelemetrySection;
use crate::jsonrpc::{RequestId, RpcError};
use crate::protocol::Method;

pub use context::{inject_headers, inject_meta};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether spans are exported: `[telemetry]` is on and its pipeline started.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A span name's target (tool or prompt name) is cut to this many bytes: it comes from the
/// client, and a collector indexes span names.
const MAX_TARGET_BYTES: usize = 128;

/// The exporter, started; [`Pipeline::shutdown`] exports what is queued.
#[derive(Debug)]
pub struct Pipeline {
    provider: SdkTracerProvider,
}

impl Pipeline {
    /// Exports the spans still queued, waiting at most for one export.
    pub fn shutdown(self) {
        let _ = self.provider.shutdown();
    }
}

/// Why the pipeline could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("[telemetry]: cannot build the OTLP exporter: {0}")]
    Exporter(String),
    #[error("[telemetry]: cannot start the export thread: {0}")]
    Thread(#[from] std::io::Error),
}

/// Starts the OTLP pipeline of `section`, or nothing when telemetry is off. The tracer
/// goes to `tracing_opentelemetry::layer().with_tracer`.
pub fn start(section: &TelemetrySection) -> Result<Option<(SdkTracer, Pipeline)>, TelemetryError> {
    if !section.enabled {
        return Ok(None);
    }
    let client = reqwest::Client::builder()
        .timeout(section.export_timeout)
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(export::OtlpClient(client))
        .with_timeout(section.export_timeout);
    // Without the key the exporter reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then
    // OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), then http://localhost:4318/v1/traces.
    if let Some(endpoint) = &section.otlp_endpoint {
        builder = builder.with_endpoint(traces_url(endpoint));
    }
    let mut exporter = builder
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let resource = resource(section);
    exporter.set_resource(&resource);
    let processor = export::BoundedExport::start(exporter, section)?;
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            section.sample_ratio,
        ))))
        .with_span_processor(processor)
        .build();
    let tracer = provider.tracer("mcp-actor");
    ENABLED.store(true, Ordering::Relaxed);
    Ok(Some((tracer, Pipeline { provider })))
}

/// `<endpoint>/v1/traces`, the OTLP/HTTP path of traces (OTLP specification, "OTLP/HTTP
/// Request").
fn traces_url(endpoint: &str) -> String {
    format!("{}/v1/traces", endpoint.trim_end_matches('/'))
}

fn resource(section: &TelemetrySection) -> Resource {
    let name = section
        .service_name
        .clone()
        .or_else(|| {
            std::env::var("OTEL_SERVICE_NAME")
                .ok()
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "mcp-actor".to_string());
    Resource::builder_empty()
        .with_service_name(name)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Gives every request of a POST body the HTTP `traceparent` header's context, unless its
/// own `params._meta` names one (`_meta` wins: one POST can carry several messages).
pub fn adopt_header_context(headers: &http::HeaderMap, body: &mut crate::jsonrpc::Body) {
    if enabled() {
        context::copy_header_context(headers, body);
    }
}

/// What a request span is about.
#[derive(Debug, Clone, Copy)]
pub struct Operation<'a> {
    pub method: Method,
    pub session: Option<&'a str>,
    pub version: &'a str,
    pub request_id: &'a RequestId,
    /// The request's params, `_meta` included.
    pub params: Option<&'a Value>,
}

/// Gives a request's span (declared with empty `otel.name` and `otel.kind` fields) its
/// semantic-convention name, kind, attributes and parent. Before the span is entered: the
/// parent and the sampling decision are fixed when it starts.
pub fn describe(span: &tracing::Span, op: Operation<'_>) {
    if !enabled() || span.is_disabled() {
        return;
    }
    let params = op.params.and_then(Value::as_object);
    let field = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    let method = op.method.as_str();
    let target = match op.method {
        Method::ToolsCall | Method::PromptsGet => field("name").map(|n| cut(n, MAX_TARGET_BYTES)),
        _ => None,
    };
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_string(),
    };
    span.record("otel.name", name.as_str());
    span.record("otel.kind", "server");
    if let Some(parent) = context::from_meta(params.and_then(|p| p.get("_meta"))) {
        let _ = span.set_parent(parent);
    }
    span.set_attribute("mcp.method.name", method);
    span.set_attribute("mcp.protocol.version", op.version.to_string());
    span.set_attribute("jsonrpc.request.id", op.request_id.to_string());
    if let Some(session) = op.session {
        span.set_attribute("mcp.session.id", session.to_string());
    }
    match (op.method, target) {
        (Method::ToolsCall, Some(tool)) => {
            span.set_attribute("gen_ai.operation.name", "execute_tool");
            span.set_attribute("gen_ai.tool.name", tool.to_string());
        }
        (Method::PromptsGet, Some(prompt)) => {
            span.set_attribute("gen_ai.prompt.name", prompt.to_string())
        }
        (Method::ResourcesRead, _) => {
            if let Some(uri) = field("uri") {
                span.set_attribute("mcp.resource.uri", cut(uri, 2048).to_string());
            }
        }
        _ => {}
    }
}

/// Records a request's outcome on the current span: a JSON-RPC error, or a tool result
/// with `isError: true` (`error.type` `tool_error`), sets the status to Error.
pub fn record_outcome(outcome: &Result<Value, RpcError>) {
    if !enabled() {
        return;
    }
    let span = tracing::Span::current();
    match outcome {
        Err(error) => {
            let code = error.code.to_string();
            span.set_attribute("error.type", code.clone());
            span.set_attribute("rpc.response.status_code", code);
            span.set_status(Status::error(error.message.to_string()));
        }
        Ok(result) if result.get("isError").and_then(Value::as_bool) == Some(true) => {
            span.set_attribute("error.type", "tool_error");
            span.set_status(Status::error("the tool reported an error"));
        }
        Ok(_) => {}
    }
}

/// The trace context of the current span, for an outgoing call; none when telemetry is
/// off.
pub fn current_context() -> Option<opentelemetry::Context> {
    enabled().then(|| tracing::Span::current().context())
}

/// Puts the current trace context into the `_meta` of an outgoing request's params, which
/// it creates when there are none; nothing when telemetry is off.
pub fn inject_into(params: &mut Option<Value>) {
    if enabled() {
        inject_params(params.get_or_insert_with(|| Value::Object(serde_json::Map::new())));
    }
}

/// Puts the current trace context into `params._meta` of an outgoing request.
pub fn inject_params(params: &mut Value) {
    let Some(cx) = current_context() else {
        return;
    };
    let Some(params) = params.as_object_mut() else {
        return;
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        inject_meta(&cx, meta);
    }
}

/// Adds the current trace context's `traceparent` (and `tracestate`) headers.
pub fn inject_current_headers(headers: &mut http::HeaderMap) {
    if let Some(cx) = current_context() {
        inject_headers(&cx, headers);
    }
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The `traceparent` and `tracestate` headers matching the `_meta` of an encoded JSON-RPC
/// request, for an HTTP upstream: the context the gateway put in the message goes in the
/// header too. Empty when telemetry is off or the message names none.
pub fn headers_of_message(message: &[u8]) -> http::HeaderMap {
    #[derive(serde::Deserialize)]
    struct Envelope {
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Value>,
    }
    let mut headers = http::HeaderMap::new();
    if !enabled() {
        return headers;
    }
    let meta = serde_json::from_slice::<Envelope>(message)
        .ok()
        .and_then(|e| e.params)
        .and_then(|p| p.meta);
    if let Some(cx) = context::from_meta(meta.as_ref()) {
        inject_headers(&cx, &mut headers);
    }
    headers
}

/// The `tracing-opentelemetry` layer for `tracer`, without the per-span thread and
/// source-location attributes and busy/idle timings: the conventions do not ask for them,
/// and each costs on every request.
pub fn layer<S>(tracer: SdkTracer) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
}
