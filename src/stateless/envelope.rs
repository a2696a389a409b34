//! The 2026-07-28 request envelope: the per-request `_meta` keys and the routing headers
//! that must agree with the body (spec 2026-07-28 `basic/index.mdx` "Per-request protocol
//! fields", `basic/transports/streamable-http.mdx` "Request Metadata", "Server Validation",
//! "Custom Headers from Tool Parameters").
//!
//! Checks run in the order of `shared/spec/stateless-2026-07-28.md` §2.5, so each failure
//! gets the code the table gives it: duplicated routing header -32020, missing envelope
//! -32602, header/body disagreement -32020, unsupported version -32022, `Mcp-Param-*`
//! disagreement -32020.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use crate::features::Features;
use crate::jsonrpc::{RpcError, codes};
use crate::protocol::method::Target;
use crate::protocol::{ClientInfo, LogLevel, Method, STATELESS_VERSION, progress_token};

pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// The routing fields a transport carries beside the body (in HTTP, the
/// `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers), which must
/// agree with it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RoutingField<'a> {
    Revision,
    Method,
    Name,
    /// `x-mcp-header` token of a tool argument.
    Param(&'a str),
}

/// Where the routing fields of one request are read. A field sent more than once is an
/// error (-32020), which the transport words with its own name for the field.
pub(crate) trait RoutingFields: Sync {
    fn single(&self, field: RoutingField<'_>) -> Result<Option<&str>, RpcError>;
}

/// What the envelope of one valid modern request says.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub client: ClientInfo,
    pub log_level: Option<LogLevel>,
    pub progress_token: Option<Value>,
}

/// Whether a body carries the modern claim: `params._meta` names a protocol version.
pub(crate) fn has_stateless_claim(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .is_some()
}

/// -32020: a routing field disagrees with the body, is missing or is duplicated.
pub(crate) fn mismatch(message: impl Into<String>) -> RpcError {
    RpcError::new(codes::HEADER_MISMATCH, message)
}

/// Decodes a header value: verbatim, or `=?base64?…?=` for values that are not plain
/// printable ASCII. `None` when the wrapper is malformed.
pub(crate) fn decode_header_value(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(STANDARD.decode(encoded).ok()?).ok(),
        None => Some(raw.to_string()),
    }
}

/// Validates headers and `_meta` of a modern request.
pub(crate) fn validate(
    fields: &dyn RoutingFields,
    method: &str,
    params: Option<&Value>,
    features: &Features,
) -> Result<Envelope, RpcError> {
    let header_version = fields.single(RoutingField::Revision)?;
    let header_method = fields.single(RoutingField::Method)?;
    let header_name = fields.single(RoutingField::Name)?;

    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "missing params._meta: a {STATELESS_VERSION} request carries {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES} in params._meta"
        ))
    })?;
    let body_version = meta.get(META_PROTOCOL_VERSION).ok_or_else(|| {
        RpcError::invalid_params(format!("params._meta lacks {META_PROTOCOL_VERSION}"))
    })?;
    let capabilities = meta
        .get(META_CLIENT_CAPABILITIES)
        .filter(|c| c.is_object())
        .ok_or_else(|| {
            RpcError::invalid_params(format!(
                "params._meta lacks the object {META_CLIENT_CAPABILITIES}"
            ))
        })?;

    let body_version_str = body_version.as_str();
    match header_version {
        None => {
            return Err(mismatch(
                "the MCP-Protocol-Version header is required on every request",
            ));
        }
        Some(h) if Some(h) != body_version_str => {
            return Err(mismatch(format!(
                "MCP-Protocol-Version header {h:?} differs from the body's {body_version}"
            )));
        }
        Some(_) => {}
    }
    match header_method {
        None => {
            return Err(mismatch(
                "the Mcp-Method header is required on every request",
            ));
        }
        Some(h) if h != method => {
            return Err(mismatch(format!(
                "Mcp-Method header {h:?} differs from the body's {method:?}"
            )));
        }
        Some(_) => {}
    }
    check_name_header(header_name, method, params)?;

    let version = body_version_str.ok_or_else(|| {
        RpcError::invalid_params(format!("{META_PROTOCOL_VERSION} must be a string"))
    })?;
    if version != STATELESS_VERSION {
        return Err(RpcError::new(
            codes::UNSUPPORTED_PROTOCOL_VERSION,
            format!("protocol version {version:?} is not supported; this endpoint serves {STATELESS_VERSION} per request, or the handshake revisions through initialize"),
        )
        .with_data(json!({ "supported": [STATELESS_VERSION], "requested": version })));
    }
    if Method::parse(method) == Some(Method::ToolsCall) {
        check_param_headers(fields, params, features)?;
    }
    let log_level = match meta.get(META_LOG_LEVEL) {
        None | Some(Value::Null) => None,
        Some(level) => Some(
            serde_json::from_value::<LogLevel>(level.clone()).map_err(|_| {
                RpcError::invalid_params(format!(
                    "{META_LOG_LEVEL} must be one of: {}",
                    LogLevel::NAMES
                ))
            })?,
        ),
    };
    let client = ClientInfo {
        implementation: meta.get(META_CLIENT_INFO).cloned().unwrap_or(Value::Null),
        capabilities: capabilities.clone(),
        protocol_version: None,
    };
    Ok(Envelope {
        client,
        log_level,
        progress_token: progress_token(params.and_then(|p| p.get("_meta"))),
    })
}

/// `Mcp-Name` must name the body's tool or prompt name, resource URI, or task id.
fn check_name_header(
    header: Option<&str>,
    method: &str,
    params: Option<&Value>,
) -> Result<(), RpcError> {
    let Some(field) = Method::parse(method)
        .and_then(Method::target)
        .map(Target::field)
    else {
        return Ok(());
    };
    let Some(body) = params.and_then(|p| p.get(field)).and_then(Value::as_str) else {
        return Ok(());
    };
    let Some(raw) = header else {
        return Err(mismatch(format!(
            "the Mcp-Name header is required on {method}"
        )));
    };
    match decode_header_value(raw) {
        Some(decoded) if decoded == body => Ok(()),
        Some(decoded) => Err(mismatch(format!(
            "Mcp-Name header {decoded:?} differs from the body's {field} {body:?}"
        ))),
        None => Err(mismatch(
            "Mcp-Name header has a malformed =?base64?…?= value",
        )),
    }
}

/// Tool arguments mirrored into `Mcp-Param-<token>` headers by `x-mcp-header` must agree
/// with the body: present exactly when the argument is, and equal to it.
fn check_param_headers(
    fields: &dyn RoutingFields,
    params: Option<&Value>,
    features: &Features,
) -> Result<(), RpcError> {
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Ok(());
    };
    let Some(tool) = features.tool(name) else {
        return Ok(());
    };
    let headers = tool.param_headers();
    if headers.is_empty() {
        return Ok(());
    }
    let empty = Map::new();
    let arguments = params
        .and_then(|p| p.get("arguments"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (property, token) in headers {
        let raw = fields.single(RoutingField::Param(token))?;
        let value = arguments.get(property).filter(|v| !v.is_null());
        match (value, raw) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "argument {property:?} is set but the Mcp-Param-{token} header is missing"
                )));
            }
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "the Mcp-Param-{token} header is set but argument {property:?} is absent"
                )));
            }
            (Some(value), Some(raw)) => {
                let decoded = decode_header_value(raw).ok_or_else(|| {
                    mismatch(format!(
                        "Mcp-Param-{token} has a malformed =?base64?…?= value"
                    ))
                })?;
                if !header_matches(value, &decoded) {
                    return Err(mismatch(format!(
                        "Mcp-Param-{token} header {decoded:?} differs from argument {property:?} = {value}"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn header_matches(value: &Value, header: &str) -> bool {
    match value {
        Value::String(s) => s == header,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        // Integers compare numerically, so `42` matches `42.0`.
        Value::Number(n) => header
            .parse::<f64>()
            .ok()
            .zip(n.as_f64())
            .is_some_and(|(h, v)| h == v),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_decode_plain_and_base64() {
        assert_eq!(decode_header_value("echo").as_deref(), Some("echo"));
        assert_eq!(
            decode_header_value("=?base64?w6ljaG8=?=").as_deref(),
            Some("écho")
        );
        assert_eq!(decode_header_value("=?base64?!!!?="), None);
    }

    #[test]
    fn param_values_compare_by_type() {
        assert!(header_matches(&json!(42), "42.0"));
        assert!(header_matches(&json!(true), "true"));
        assert!(!header_matches(&json!("a"), "b"));
    }
}
