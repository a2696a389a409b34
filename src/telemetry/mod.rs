//! OpenTelemetry traces: the OTLP/HTTP pipeline, the semantic-convention span of each
//! request, and the trace context read from a request and passed on to what it calls.
//!
//! A request's span follows the OpenTelemetry semantic conventions for MCP
//! (semantic-conventions-genai, `docs/gen-ai/mcp.md`): kind SERVER, named
//! `{mcp.method.name} {target}` (`tools/call echo`), with `mcp.method.name`,
//! `mcp.session.id`, `mcp.protocol.version`, `jsonrpc.request.id`, `gen_ai.operation.name`,
//! `gen_ai.tool.name`, `gen_ai.prompt.name` and `mcp.resource.uri` where they apply; an
//! error sets the span's status, `error.type` and `rpc.response.status_code`.
//!
//! The spans are built by [`begin`] around a handler's future ([`span`]), not from the
//! `tracing` spans of the logs: one fixed shape per request, exported by one thread
//! ([`export`]). With `[telemetry]` off no pipeline exists, and a request pays one atomic
//! load for it.

pub mod context;
mod export;
mod span;

use std::sync::OnceLock;

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::trace::{RandomIdGenerator, Sampler};
use serde_json::Value;

use crate::config::telemetry::TelemetrySection;
use crate::jsonrpc::RequestId;
use crate::protocol::Method;

pub use context::{inject_headers, inject_meta};
pub use span::{Begun, Traced, begin};

/// The running pipeline: the export queue and the sampling of new spans. Process-wide, as
/// the collector and `OTEL_*` variables are; set once by [`start`].
static PIPELINE: OnceLock<Shared> = OnceLock::new();

struct Shared {
    queue: export::Queue,
    sampling: span::Sampling,
}

impl Shared {
    fn queue(&self, record: Box<span::Record>) {
        self.queue.push(record);
    }
}

fn pipeline() -> Option<&'static Shared> {
    PIPELINE.get()
}

/// Whether spans are exported: `[telemetry]` is on and its pipeline started.
pub fn enabled() -> bool {
    PIPELINE.get().is_some()
}

/// The exporter, started; [`Pipeline::shutdown`] exports what is queued.
#[derive(Debug)]
pub struct Pipeline {
    _started: (),
}

impl Pipeline {
    /// Exports the spans still queued and stops the export thread, waiting at most for one
    /// export (and never past 2 s).
    pub fn shutdown(self) {
        if let Some(shared) = pipeline() {
            shared.queue.stop();
        }
    }

    /// Exports the spans queued so far, waiting as [`Pipeline::shutdown`] does.
    pub fn flush(&self) {
        if let Some(shared) = pipeline() {
            shared.queue.flush();
        }
    }
}

/// Why the pipeline could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("[telemetry]: {0}")]
    Exporter(String),
    #[error("[telemetry]: cannot start the export thread: {0}")]
    Thread(#[from] std::io::Error),
    #[error("[telemetry]: the pipeline of this process is already started")]
    Started,
}

/// The variables that may carry a collector's credentials: the binary takes them out of
/// the environment at start, as it does the bearer tokens', so that no command tool or
/// stdio upstream inherits them.
pub const SECRET_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
];

/// The `OTEL_*` variables the exporter reads, captured before [`SECRET_VARS`] are withheld.
#[derive(Debug, Clone, Default)]
pub struct ExporterEnv(Vec<(&'static str, String)>);

impl ExporterEnv {
    /// The variables as the process has them now.
    pub fn capture() -> Self {
        const READ: [&str; 5] = [
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_SERVICE_NAME",
            SECRET_VARS[0],
            SECRET_VARS[1],
        ];
        ExporterEnv(
            READ.iter()
                .filter_map(|name| Some((*name, env_var(name)?)))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    }
}

/// Starts the OTLP pipeline of `section`, or nothing when telemetry is off. Once per
/// process.
pub fn start(
    section: &TelemetrySection,
    env: &ExporterEnv,
) -> Result<Option<Pipeline>, TelemetryError> {
    if !section.enabled {
        return Ok(None);
    }
    let get = |name: &str| env.get(name);
    let target = export::Target {
        url: traces_url(section.otlp_endpoint.as_deref(), &get),
        headers: otlp_headers(&get).map_err(TelemetryError::Exporter)?,
        service_name: section
            .service_name
            .clone()
            .or_else(|| get("OTEL_SERVICE_NAME"))
            .unwrap_or_else(|| "mcp-actor".to_string()),
    };
    let queue = export::Queue::start(target, section)?;
    let sampling = span::Sampling {
        sampler: Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(section.sample_ratio))),
        ids: RandomIdGenerator::default(),
    };
    PIPELINE
        .set(Shared { queue, sampling })
        .map_err(|_| TelemetryError::Started)?;
    Ok(Some(Pipeline { _started: () }))
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where spans are posted: `<otlp_endpoint>/v1/traces` (the OTLP/HTTP path of traces);
/// without the key, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, then
/// `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, then `http://localhost:4318/v1/traces`
/// (OpenTelemetry's exporter configuration).
fn traces_url(endpoint: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> String {
    let base = |endpoint: &str| format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    match endpoint {
        Some(endpoint) => base(endpoint),
        None => env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT").map(|e| base(&e)))
            .unwrap_or_else(|| base("http://localhost:4318")),
    }
}

/// The headers of every export: `OTEL_EXPORTER_OTLP_HEADERS`, then
/// `OTEL_EXPORTER_OTLP_TRACES_HEADERS` over it, each a list of `key=value` pairs separated
/// by commas, values percent-encoded (OpenTelemetry's exporter configuration). A collector
/// that needs an API key reads it from there.
fn otlp_headers(env: &dyn Fn(&str) -> Option<String>) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for var in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        let Some(list) = env(var) else { continue };
        for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{var}: `{pair}` is not key=value"))?;
            let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
            let name = HeaderName::try_from(key.trim())
                .map_err(|_| format!("{var}: `{}` is not a header name", key.trim()))?;
            let value = HeaderValue::try_from(value.as_ref())
                .map_err(|_| format!("{var}: the value of `{name}` is not a header value"))?;
            headers.insert(name, value);
        }
    }
    Ok(headers)
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

/// The trace context of the request this task is handling, for an outgoing call; none when
/// telemetry is off.
pub fn current_context() -> Option<opentelemetry::Context> {
    let span = span::current()?;
    Some(opentelemetry::Context::new().with_remote_span_context(span))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_string())
        }
    }

    #[test]
    fn the_key_wins_then_the_traces_variable_then_the_base_variable() {
        let both = [
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/custom"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:2/"),
        ];
        assert_eq!(
            traces_url(Some("http://k:3/"), &env(&both)),
            "http://k:3/v1/traces"
        );
        assert_eq!(traces_url(None, &env(&both)), "http://t:1/custom");
        assert_eq!(traces_url(None, &env(&both[1..])), "http://b:2/v1/traces");
        assert_eq!(
            traces_url(None, &env(&[])),
            "http://localhost:4318/v1/traces"
        );
    }

    #[test]
    fn otlp_headers_are_decoded_and_the_traces_list_wins() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, team=x"),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "team=y"),
        ];
        let headers = otlp_headers(&env(&vars)).unwrap();
        assert_eq!(headers["api-key"], "a b");
        assert_eq!(headers["team"], "y");
        for bad in ["novalue", "bad key=1", "k=\u{7f}"] {
            let vars = [("OTEL_EXPORTER_OTLP_HEADERS", bad)];
            let error = otlp_headers(&env(&vars)).unwrap_err();
            assert!(error.starts_with("OTEL_EXPORTER_OTLP_HEADERS: "), "{error}");
        }
    }
}
