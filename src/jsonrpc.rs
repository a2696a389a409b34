//! The JSON-RPC 2.0 envelope: ids, requests, notifications, responses and errors.
//!
//! MCP messages are JSON-RPC 2.0 messages (spec `basic/index.mdx`). This module turns a POST
//! body into typed [`Message`]s and serializes replies. It knows nothing about MCP methods.
//! Parameters and results stay `serde_json::Value` here because their shape belongs to the
//! method, which the feature layer decodes.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use bounded::{BoundedBatch, BoundedValue, over_cap};
pub use bounded::{DecodeCap, DecodeError, DecodeLimits};

mod bounded;

/// Standard JSON-RPC error codes, plus the MCP ones the server emits.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Implementation-defined server error, used for transport-level refusals (limits,
    /// Origin/Host, content negotiation), as the reference SDKs do.
    pub const SERVER_ERROR: i64 = -32000;
    /// The session named by `Mcp-Session-Id` does not exist (any more).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// `resources/read` of a URI the server does not have (spec `server/resources.mdx`).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// 2026-07-28: a routing header disagrees with the body, or is missing.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability it did not declare.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the request's protocol version is not served.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A JSON-RPC request id: a string or an integer, never null (spec `basic/index.mdx`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(Arc<str>),
}

impl RequestId {
    /// Reads an id from a JSON value; `None` for null, floats and other shapes.
    pub fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            Value::String(s) => Some(RequestId::String(Arc::from(s.as_str()))),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.as_ref()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (code {code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(codes::PARSE_ERROR, message)
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_REQUEST, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }
}

/// A request from the peer: it carries an id and expects exactly one response.
#[derive(Debug, Clone)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Value>,
}

/// A notification: no id, never answered.
#[derive(Debug, Clone)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

/// A response to a request this side sent.
#[derive(Debug, Clone)]
pub struct Response {
    pub id: RequestId,
    pub outcome: Result<Value, RpcError>,
}

/// One decoded JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// A decoded POST body: one message, or (2025-03-26 only) a batch.
#[derive(Debug)]
pub enum Body {
    Single(Message),
    Batch(Vec<Message>),
}

impl Body {
    pub fn messages(&self) -> &[Message] {
        match self {
            Body::Single(m) => std::slice::from_ref(m),
            Body::Batch(v) => v,
        }
    }

    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Body::Single(m) => vec![m],
            Body::Batch(v) => v,
        }
    }
}

/// Decodes a POST body. Errors carry the JSON-RPC code to answer with: -32700 when the
/// bytes are not JSON, -32600 when the JSON is not a JSON-RPC message.
pub fn decode_body(bytes: &[u8]) -> Result<Body, RpcError> {
    decode_body_within(bytes, DecodeLimits::UNBOUNDED).map_err(DecodeError::into_rpc)
}

/// [`decode_body`], refusing a body past `limits` before it is built.
pub fn decode_body_within(bytes: &[u8], limits: DecodeLimits) -> Result<Body, DecodeError> {
    // The envelope is read straight into a struct (no intermediate map); only `params`,
    // `result` and `error`, whose shape belongs to the method, become JSON values.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    bounded::start(limits);
    let decoded = match first {
        Some(b'[') => serde_json::from_slice::<BoundedBatch<WireMessage>>(bytes).map(|b| Some(b.0)),
        Some(b'{') => serde_json::from_slice::<WireMessage>(bytes).map(|m| Some(vec![m])),
        // Valid JSON of another kind is not a JSON-RPC message; invalid JSON is a parse error.
        _ => serde_json::from_slice::<serde::de::IgnoredAny>(bytes).map(|_| None),
    };
    if let Some(cap) = bounded::overrun() {
        return Err(over_cap(cap, limits));
    }
    let malformed = |e| Err(DecodeError::Malformed(e));
    let messages = match decoded {
        Ok(Some(messages)) => messages,
        Ok(None) => {
            return malformed(RpcError::invalid_request(
                "a JSON-RPC message must be a JSON object",
            ));
        }
        Err(e) if e.is_data() => {
            return malformed(RpcError::invalid_request(format!(
                "not a JSON-RPC message: {e}"
            )));
        }
        Err(e) => {
            return malformed(RpcError::parse_error(format!(
                "body is not valid JSON: {e}"
            )));
        }
    };
    let decoded = match (first, messages.len()) {
        (Some(b'['), 0) => Err(RpcError::invalid_request("empty JSON-RPC batch")),
        (Some(b'['), _) => messages
            .into_iter()
            .map(decode_message)
            .collect::<Result<Vec<_>, _>>()
            .map(Body::Batch),
        _ => messages.into_iter().next().map_or_else(
            || Err(RpcError::invalid_request("empty body")),
            |m| decode_message(m).map(Body::Single),
        ),
    };
    decoded.map_err(DecodeError::Malformed)
}

/// The members of one message as sent. `Option<Value>` fields use [`present`] so that an
/// explicit `null` (`Some(Value::Null)`) is told apart from an absent member (`None`).
#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    BoundedValue::deserialize(d).map(|BoundedValue(v)| Some(v))
}

fn decode_message(wire: WireMessage) -> Result<Message, RpcError> {
    if wire.jsonrpc.as_deref() != Some("2.0") {
        return Err(RpcError::invalid_request(
            "missing or wrong \"jsonrpc\" member: it must be \"2.0\"",
        ));
    }
    let id = match wire.id {
        None => None,
        Some(v) => Some(RequestId::from_value(&v).ok_or_else(|| {
            RpcError::invalid_request("\"id\" must be a string or an integer, and not null")
        })?),
    };
    let params = match wire.params {
        None => None,
        Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
        Some(_) => {
            return Err(RpcError::invalid_request(
                "\"params\" must be an object or an array",
            ));
        }
    };
    if let Some(method) = wire.method {
        if wire.result.is_some() || wire.error.is_some() {
            return Err(RpcError::invalid_request(
                "a message with \"method\" is a request or notification and must not carry \"result\" or \"error\"",
            ));
        }
        return Ok(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        });
    }
    let Some(id) = id else {
        return Err(RpcError::invalid_request(
            "message has neither \"method\" nor \"id\": not a request, notification or response",
        ));
    };
    let outcome = match (wire.result, wire.error) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(serde_json::from_value::<RpcError>(error)
            .map_err(|e| RpcError::invalid_request(format!("malformed \"error\" object: {e}")))?),
        _ => {
            return Err(RpcError::invalid_request(
                "a response must carry exactly one of \"result\" and \"error\"",
            ));
        }
    };
    Ok(Message::Response(Response { id, outcome }))
}

#[derive(Serialize)]
struct WireResponse<'a, R: Serialize = Value> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
}

/// Serializes a response. `id` is `None` only for errors about a message whose id could not
/// be read (allowed by the 2025-11-25 schema).
pub fn encode_response(id: Option<&RequestId>, outcome: &Result<Value, RpcError>) -> Bytes {
    let wire = match outcome {
        Ok(result) => WireResponse {
            jsonrpc: "2.0",
            id,
            result: Some(result),
            error: None,
        },
        Err(error) => WireResponse {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(error),
        },
    };
    to_bytes(&wire)
}

/// Serializes an error response.
pub fn encode_error(id: Option<&RequestId>, error: &RpcError) -> Bytes {
    to_bytes(&WireResponse::<Value> {
        jsonrpc: "2.0",
        id,
        result: None,
        error: Some(error),
    })
}

/// A response whose `result` is kept as the JSON text it came in, for a result that is
/// passed on rather than read (a forwarded tool call's).
#[derive(Debug)]
pub struct ResponseText {
    pub id: RequestId,
    pub outcome: Result<Box<serde_json::value::RawValue>, RpcError>,
}

#[derive(Deserialize)]
struct WireResponseText<'a> {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default, borrow)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Reads `bytes` as one well-formed response, keeping its `result` as text: `None` for
/// anything else (a request, a notification, a batch, a malformed or `null` result), which
/// [`decode_body`] then reads as it reads every message.
pub fn decode_response_text(bytes: &[u8]) -> Option<ResponseText> {
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    let wire = serde_json::from_slice::<WireResponseText<'_>>(bytes).ok()?;
    if wire.jsonrpc.as_deref() != Some("2.0") || wire.method.is_some() {
        return None;
    }
    let id = RequestId::from_value(wire.id.as_ref()?)?;
    let outcome = match (wire.result, wire.error) {
        (Some(result), None) => Ok(result.to_owned()),
        (None, Some(error)) => Err(error),
        _ => return None,
    };
    Some(ResponseText { id, outcome })
}

/// Serializes a successful response whose result is any serializable value, for results
/// encoded without first building a `Value` tree.
pub fn encode_result<R: Serialize>(id: &RequestId, result: &R) -> Bytes {
    to_bytes(&WireResponse {
        jsonrpc: "2.0",
        id: Some(id),
        result: Some(result),
        error: None,
    })
}

#[derive(Serialize)]
struct WireRequest<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

/// Serializes a notification (no id).
pub fn encode_notification(method: &str, params: Option<&Value>) -> Bytes {
    to_bytes(&WireRequest {
        jsonrpc: "2.0",
        id: None,
        method,
        params,
    })
}

/// Serializes a request this side sends to the peer.
pub fn encode_request(id: &RequestId, method: &str, params: Option<&Value>) -> Bytes {
    to_bytes(&WireRequest {
        jsonrpc: "2.0",
        id: Some(id),
        method,
        params,
    })
}

fn to_bytes<T: Serialize>(value: &T) -> Bytes {
    // invariant: serializing these structs cannot fail: every map key is a string and every
    // value is a serde_json::Value, raw JSON serialized from one, a typed tool result (strings
    // and values), or a plain string.
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

/// Reads `params` as a JSON object, treating absent params as an empty object.
pub fn params_object(params: Option<&Value>) -> Result<&Map<String, Value>, RpcError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match params {
        None => Ok(EMPTY.get_or_init(Map::new)),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(RpcError::invalid_params("params must be a JSON object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_request_notification_and_response() {
        let body = decode_body(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert!(
            matches!(body, Body::Single(Message::Request(ref r)) if r.id == RequestId::Number(7))
        );
        let body =
            decode_body(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(body, Body::Single(Message::Notification(_))));
        let body = decode_body(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert!(matches!(body, Body::Single(Message::Response(_))));
    }

    #[test]
    fn rejects_non_json_and_non_jsonrpc() {
        assert_eq!(decode_body(b"{nope").unwrap_err().code, codes::PARSE_ERROR);
        assert_eq!(decode_body(b"42").unwrap_err().code, codes::INVALID_REQUEST);
        assert_eq!(
            decode_body(br#"{"id":1,"method":"x"}"#).unwrap_err().code,
            codes::INVALID_REQUEST
        );
        assert_eq!(
            decode_body(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#)
                .unwrap_err()
                .code,
            codes::INVALID_REQUEST
        );
        assert_eq!(decode_body(b"[]").unwrap_err().code, codes::INVALID_REQUEST);
        let hybrid = br#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#;
        assert_eq!(
            decode_body(hybrid).unwrap_err().code,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn a_body_past_its_caps_is_refused_and_one_within_them_decodes() {
        let limits = DecodeLimits {
            max_batch: 2,
            max_values: 5,
        };
        let batch = br#"[{"jsonrpc":"2.0","method":"a"},{},{}]"#;
        let refused = decode_body_within(batch, limits).unwrap_err();
        assert!(matches!(
            refused,
            DecodeError::OverCap(DecodeCap::BatchSize, _)
        ));
        let nested = br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,2,3,4,5]}}"#;
        let refused = decode_body_within(nested, limits).unwrap_err();
        assert!(matches!(
            refused,
            DecodeError::OverCap(DecodeCap::Values, _)
        ));
        let within = br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,2]}}"#;
        let Ok(Body::Single(Message::Request(r))) = decode_body_within(within, limits) else {
            panic!("a body within its caps decodes");
        };
        assert_eq!(r.params, Some(serde_json::json!({"a": [1, 2]})));
        // The next body starts with a full budget.
        assert!(decode_body_within(within, limits).is_ok());
    }

    #[test]
    fn string_and_integer_ids_keep_their_type() {
        let n = encode_response(Some(&RequestId::Number(1)), &Ok(Value::Null));
        assert_eq!(&n[..], br#"{"jsonrpc":"2.0","id":1,"result":null}"#);
        let s = encode_response(Some(&RequestId::String("1".into())), &Ok(Value::Null));
        assert_eq!(&s[..], br#"{"jsonrpc":"2.0","id":"1","result":null}"#);
    }

    #[test]
    fn a_response_keeps_its_result_as_text() {
        let line =
            br#" {"jsonrpc":"2.0","id":3,"result":{"b":2.50,"a":123456789012345678901234567890}}"#;
        let response = decode_response_text(line).unwrap();
        assert_eq!(response.id, RequestId::Number(3));
        assert_eq!(
            response.outcome.unwrap().get(),
            r#"{"b":2.50,"a":123456789012345678901234567890}"#
        );
        let error = br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"no"}}"#;
        let response = decode_response_text(error).unwrap();
        assert_eq!(response.outcome.unwrap_err().code, -32602);
    }

    #[test]
    fn anything_but_a_well_formed_response_is_left_to_decode_body() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"#,
            "",
        ] {
            assert!(decode_response_text(line.as_bytes()).is_none(), "{line}");
        }
    }
}
