//! The entry points of the fuzz targets in `fuzz/`, and nothing else.
//!
//! Compiled only under `--cfg fuzzing` (which `cargo fuzz` passes), so the public API of a
//! normal build is unchanged. Most parsers an attacker reaches are `pub(crate)`; this module
//! re-exports them, or wraps them where their inputs are crate-private types (a `HeaderMap`
//! as routing fields, a session's `Streams`), so each target calls the code the server runs
//! rather than a copy of it. It sits above every layer (`tests/layers.rs`) because it may use
//! any of them, and no layer uses it.

use axum::http::{HeaderMap, HeaderName, HeaderValue, Uri};
use serde_json::{Value, json};

use crate::config::{HttpSection, ResponseMode};
use crate::features::Features;
use crate::features::resources::ResourceTemplate;
use crate::features::tools::Tool;
use crate::http::headers;
use crate::protocol::method::FeatureMethod;
use crate::protocol::{CallToolResult, LogLevel, Method, ResourceContents};
use crate::providers::placeholders::{self, ArgTemplate, Rendered};
use crate::session::streams::{StreamRules, Streams};
use crate::stateless::envelope;

pub use crate::config::{Config, ConfigError};
pub use crate::features::resources::UriTemplate;
pub use crate::jsonrpc::{
    Body, DecodeCap, DecodeError, DecodeLimits, Message, RequestId, RpcError, decode_body,
    decode_body_within, encode_notification, encode_request, encode_response, params_object,
};
pub use crate::session::streams::{
    Attachment, OutEvent, ReplayError, StreamId, format_event_id, parse_event_id,
};
pub use crate::stateless::request_state::{Binding, RequestStateKey, StateError};

/// A header map built from raw name/value pairs, as hyper would have accepted them: pairs
/// with an invalid name or value are left out, because they never reach a handler.
pub fn header_map(pairs: &[(&[u8], &[u8])]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        if let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
        {
            map.append(name, value);
        }
    }
    map
}

/// What each header check of the MCP endpoint says about one request.
#[derive(Debug)]
pub struct HeaderVerdicts {
    pub host_and_origin: bool,
    pub post_accept: bool,
    pub json_accept: bool,
    pub get_accept: bool,
    pub content_type: bool,
    /// The supported handshake revision named by `MCP-Protocol-Version`, `Err` when the
    /// header names an unsupported one.
    pub protocol_version: Result<Option<&'static str>, ()>,
    /// The value routing between the eras reads.
    pub protocol_version_value: Option<String>,
    /// Whether that value sends the POST down the stateless path.
    pub stateless: bool,
    pub session_id: Option<String>,
    pub last_event_id: Option<String>,
}

/// Runs every header check of `src/http/headers.rs` on one request to `uri`.
pub fn check_headers(headers: &HeaderMap, uri: &str, config: &HttpSection) -> HeaderVerdicts {
    let uri = Uri::try_from(uri).unwrap_or_else(|_| Uri::from_static("/mcp"));
    let version_value = headers::protocol_version_value(headers);
    HeaderVerdicts {
        host_and_origin: headers::check_host_and_origin(headers, &uri, config).is_ok(),
        post_accept: headers::check_post_accept(headers).is_ok(),
        json_accept: headers::check_json_accept(headers).is_ok(),
        get_accept: headers::check_get_accept(headers).is_ok(),
        content_type: headers::check_content_type(headers).is_ok(),
        protocol_version: headers::protocol_version(headers)
            .map(|v| v.map(|v| v.as_str()))
            .map_err(|_| ()),
        protocol_version_value: version_value.map(str::to_string),
        stateless: version_value.is_some_and(crate::stateless::takes_version),
        session_id: headers::session_id(headers).map(str::to_string),
        last_event_id: headers::last_event_id(headers),
    }
}

/// The default `[http]` section with the given allow-lists.
pub fn http_section(allowed_hosts: Vec<String>, allowed_origins: Vec<String>) -> HttpSection {
    HttpSection {
        allowed_hosts,
        allowed_origins,
        ..HttpSection::default()
    }
}

/// A session's streams and replay logs, with small limits so that windows overflow.
pub struct SessionStreams(Streams);

impl SessionStreams {
    pub fn new(max_events: usize, max_finished: usize, priming: bool, sse_only: bool) -> Self {
        let rules = StreamRules {
            max_events: max_events.max(1),
            max_finished,
            max_bytes_per_session: usize::MAX,
            max_bytes: usize::MAX,
            connection_buffer: 4,
            response_mode: if sse_only {
                ResponseMode::Sse
            } else {
                ResponseMode::Auto
            },
            priming,
        };
        let metrics = std::sync::Arc::new(crate::metrics::Metrics::new("fuzz", []));
        SessionStreams(Streams::new(rules, metrics))
    }

    pub fn open_post(&mut self, requests: usize) -> Attachment {
        self.0.open_post(requests)
    }

    pub fn emit(&mut self, stream: StreamId, data: &'static [u8], is_response: bool) -> bool {
        self.0
            .emit(stream, bytes::Bytes::from_static(data), is_response)
    }

    pub fn settle(&mut self, stream: StreamId) {
        self.0.settle(stream);
    }

    pub fn close_for_polling(&mut self, stream: StreamId) -> bool {
        self.0.close_for_polling(stream)
    }

    pub fn related(&self, stream: StreamId) -> StreamId {
        self.0.related(stream)
    }

    /// A GET, with the `Last-Event-ID` it carried.
    pub fn open(&mut self, last_event_id: Option<String>) -> Result<Attachment, ReplayError> {
        self.0.open(last_event_id)
    }
}

/// What the stateless path decided about one POST before running it.
#[derive(Debug)]
pub enum StatelessVerdict {
    /// The body is not JSON-RPC.
    Undecodable(RpcError),
    /// The POST goes to the session path.
    Handshake,
    /// A modern POST that is not one request (a batch, a notification or a response).
    NotARequest,
    /// A modern request whose envelope was refused.
    Refused(RpcError),
    /// A modern request whose envelope is valid.
    Valid {
        log_level: Option<LogLevel>,
        progress_token: Option<Value>,
    },
}

/// The features a modern request is checked against: one tool whose arguments mirror into
/// `Mcp-Param-*` headers, one resource template with a completer, as `config/example.toml`
/// would give.
pub fn sample_features() -> Features {
    let mut features = Features::new(1);
    let schema = json!({
        "type": "object",
        "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "count": { "type": "integer", "x-mcp-header": "Count" },
            "text": { "type": "string" }
        }
    });
    if let Ok(tool) = Tool::new("echo", "Echoes", schema, |_, _| {
        Box::pin(async { Ok(CallToolResult::text("")) })
    }) {
        let _ = features.add_tool(tool);
    }
    if let Ok(template) = ResourceTemplate::new(
        "file:///config/{+path}",
        "config",
        None,
        |_, uri, _| async { Ok(vec![ResourceContents::text(uri, "text/plain", "")]) },
    ) {
        features.add_template(template.with_completer(|_, partial, _| vec![partial.into()]));
    }
    features
}

/// Routes one POST as `src/http/post.rs` does and, for a modern request, validates its
/// envelope against `headers` (`src/stateless/envelope.rs`), then decodes its params as the
/// feature methods would.
pub fn check_stateless_post(
    headers: &HeaderMap,
    body: &[u8],
    features: &Features,
) -> StatelessVerdict {
    let decoded = match decode_body(body) {
        Ok(decoded) => decoded,
        Err(e) => return StatelessVerdict::Undecodable(e),
    };
    if !crate::http::post::is_stateless_post(headers, &decoded) {
        return StatelessVerdict::Handshake;
    }
    let Body::Single(Message::Request(request)) = &decoded else {
        return StatelessVerdict::NotARequest;
    };
    let params = request.params.as_ref();
    let envelope = match envelope::validate(headers, &request.method, params, features) {
        Ok(envelope) => envelope,
        Err(e) => return StatelessVerdict::Refused(e),
    };
    decode_feature_params(features, &request.method, params);
    StatelessVerdict::Valid {
        log_level: envelope.log_level,
        progress_token: envelope.progress_token,
    }
}

/// The synchronous params decoding of the feature methods (pagination cursors, completion
/// references, resource URIs, tool arguments); their errors are answers, not failures.
fn decode_feature_params(features: &Features, method: &str, params: Option<&Value>) {
    let all = crate::context::Grants::everything();
    let Some(feature) = Method::parse(method).and_then(Method::feature) else {
        return;
    };
    let _ = match feature {
        FeatureMethod::ToolsList => features.list_tools(&all, params),
        FeatureMethod::ResourcesList => features.list_resources(&all, params),
        FeatureMethod::ResourcesTemplatesList => features.list_resource_templates(&all, params),
        FeatureMethod::PromptsList => features.list_prompts(&all, params),
        FeatureMethod::CompletionComplete => features.complete(&all, params),
        FeatureMethod::ResourcesRead => {
            let uri = params.and_then(|p| p.get("uri")).and_then(Value::as_str);
            Ok(Value::Bool(uri.is_some_and(|u| features.knows_resource(u))))
        }
        // Getting a prompt runs its handler; its name is all the synchronous part reads.
        FeatureMethod::PromptsGet => Ok(Value::Null),
        FeatureMethod::ToolsCall => Ok(Value::Bool(
            crate::features::tools::call_arguments(
                params.and_then(|p| p.get("arguments")).cloned(),
            )
            .is_some(),
        )),
    };
}

/// One argv element of a command tool, with its `{argument}` placeholders
/// (`src/providers/placeholders.rs`).
pub struct ArgvTemplate(ArgTemplate);

impl ArgvTemplate {
    pub fn parse(text: &str) -> Result<Self, String> {
        ArgTemplate::parse(text).map(ArgvTemplate)
    }

    pub fn names(&self) -> Vec<String> {
        self.0.names().map(str::to_string).collect()
    }

    /// The element and whether a value made it start with `-`; `None` when it is left out.
    pub fn render(&self, arguments: &serde_json::Map<String, Value>) -> Option<(String, bool)> {
        match self.0.render(arguments) {
            Rendered::Arg {
                value,
                flag_injected,
            } => Some((value, flag_injected)),
            Rendered::Absent => None,
        }
    }
}

/// `${NAME}` expansion with `lookup` in place of the environment.
pub fn expand_env_with(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, String> {
    placeholders::expand_env_with(text, lookup)
}

/// The `${NAME}` references of `text` that `lookup` does not resolve.
pub fn unset_env_vars_with(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Vec<String> {
    placeholders::unset_env_vars_with(text, lookup)
}
