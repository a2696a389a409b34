//! Header checks of the MCP endpoint: Host and Origin (DNS-rebinding protection), content
//! negotiation, the protocol-version header and the session id.

use axum::http::{HeaderMap, HeaderName, StatusCode, Uri, header};

use crate::config::HttpSection;
use crate::http::error::HttpError;
use crate::jsonrpc::{RpcError, codes};
use crate::protocol::Revision;
use crate::stateless::envelope::{RoutingField, RoutingFields, mismatch};

// Header names as `HeaderName`s: a lookup by `&str` parses the name again on every call.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// The 2026-07-28 routing headers that mirror the body (spec 2026-07-28
/// `basic/transports/streamable-http.mdx` "Request Metadata").
const METHOD: HeaderName = HeaderName::from_static("mcp-method");
const NAME: HeaderName = HeaderName::from_static("mcp-name");
const PARAM_PREFIX: &str = "mcp-param-";

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Rejects a Host or Origin that is not allowed with 403 (spec 2025-11-25 "Security
/// Warning"; the conformance suite's `dns-rebinding-protection` checks Host as well).
pub(crate) fn check_host_and_origin(
    headers: &HeaderMap,
    uri: &Uri,
    config: &HttpSection,
) -> Result<(), HttpError> {
    // A Host that is not visible ASCII (obs-text passes hyper) is judged as U+FFFD, never
    // skipped: skipping it would let the request through with no host checked at all.
    let host = match headers.get(header::HOST) {
        Some(value) => Some(value.to_str().unwrap_or("\u{fffd}")),
        None => uri.authority().map(|a| a.as_str()),
    };
    if let Some(host) = host {
        if !host_allowed(host, config) {
            return Err(HttpError::new(
                StatusCode::FORBIDDEN,
                codes::SERVER_ERROR,
                format!("Host {host:?} is not allowed; add it to http.allowed_hosts to serve it"),
            ));
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(origin, config) {
            return Err(HttpError::new(
                StatusCode::FORBIDDEN,
                codes::SERVER_ERROR,
                format!(
                    "Origin {origin:?} is not allowed; add it to http.allowed_origins to serve it"
                ),
            ));
        }
    }
    Ok(())
}

/// The host part of `host[:port]`, keeping IPv6 brackets; `None` when it is not a plain
/// `host[:port]`. Userinfo (`127.0.0.1:1@evil.com`), a path or a non-numeric port would let
/// a foreign name pass as a loopback one.
fn hostname(authority: &str) -> Option<&str> {
    if authority.is_empty() || authority.contains(['@', '/', '\\', '?', '#', ' ']) {
        return None;
    }
    let (name, port) = if authority.starts_with('[') {
        let end = authority.find(']')? + 1;
        let port = authority[end..].strip_prefix(':');
        if port.is_none() && end != authority.len() {
            return None;
        }
        (&authority[..end], port)
    } else {
        match authority.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (authority, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (port_ok && !name.is_empty()).then_some(name)
}

fn host_allowed(host: &str, config: &HttpSection) -> bool {
    let Some(name) = hostname(host) else {
        return false;
    };
    LOOPBACK_HOSTS.iter().any(|h| h.eq_ignore_ascii_case(name))
        || config
            .allowed_hosts
            .iter()
            .any(|h| h == "*" || h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(name))
}

fn origin_allowed(origin: &str, config: &HttpSection) -> bool {
    if config
        .allowed_origins
        .iter()
        .any(|o| o == "*" || o.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    let Some(name) = hostname(rest) else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && LOOPBACK_HOSTS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

const COMMON_ACCEPT: &str = "application/json, text/event-stream";

/// Whether an Accept header admits `wanted` (`type/subtype`), counting wildcards.
fn accepts(headers: &HeaderMap, wanted: &str) -> bool {
    // What every SDK client sends; skip parsing for it.
    if headers
        .get(header::ACCEPT)
        .is_some_and(|v| v.as_bytes() == COMMON_ACCEPT.as_bytes())
    {
        return true;
    }
    let (kind, _) = wanted.split_once('/').unwrap_or((wanted, ""));
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let range = range.split(';').next().unwrap_or("").trim();
            range.eq_ignore_ascii_case(wanted)
                || range == "*/*"
                || range
                    .strip_suffix("/*")
                    .is_some_and(|k| k.eq_ignore_ascii_case(kind))
        })
}

/// POST must accept both reply forms (spec: the client MUST list both).
pub(crate) fn check_post_accept(headers: &HeaderMap) -> Result<(), HttpError> {
    if accepts(headers, "application/json") && accepts(headers, "text/event-stream") {
        return Ok(());
    }
    Err(HttpError::new(
        StatusCode::NOT_ACCEPTABLE,
        codes::SERVER_ERROR,
        "Not Acceptable: the Accept header must include both application/json and text/event-stream",
    ))
}

/// A stateless (2026-07-28) POST must accept JSON; SSE is only needed to listen.
pub(crate) fn check_json_accept(headers: &HeaderMap) -> Result<(), HttpError> {
    if accepts(headers, "application/json") {
        return Ok(());
    }
    Err(HttpError::new(
        StatusCode::NOT_ACCEPTABLE,
        codes::SERVER_ERROR,
        "Not Acceptable: the Accept header must include application/json",
    ))
}

/// GET opens an SSE stream, so it must accept `text/event-stream`.
pub(crate) fn check_get_accept(headers: &HeaderMap) -> Result<(), HttpError> {
    if accepts(headers, "text/event-stream") {
        return Ok(());
    }
    Err(HttpError::new(
        StatusCode::NOT_ACCEPTABLE,
        codes::SERVER_ERROR,
        "Not Acceptable: the Accept header must include text/event-stream",
    ))
}

pub(crate) fn check_content_type(headers: &HeaderMap) -> Result<(), HttpError> {
    let ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if ok {
        return Ok(());
    }
    Err(HttpError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        codes::SERVER_ERROR,
        "Unsupported Media Type: the Content-Type must be application/json",
    ))
}

/// The `MCP-Protocol-Version` header, if present. Any supported revision is accepted, even
/// one other than the session's (conformance sends 2025-03-26 on 2025-11-25 sessions); an
/// unsupported one gets 400 (spec 2025-06-18 "Protocol Version Header").
pub(crate) fn protocol_version(headers: &HeaderMap) -> Result<Option<Revision>, HttpError> {
    let Some(value) = headers.get(PROTOCOL_VERSION) else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or("").trim();
    Revision::parse_handshake(text).map(Some).ok_or_else(|| {
        HttpError::new(
            StatusCode::BAD_REQUEST,
            codes::SERVER_ERROR,
            format!(
                "Bad Request: unsupported MCP-Protocol-Version {text:?} (supported versions: {})",
                Revision::supported_list()
            ),
        )
    })
}

/// The `MCP-Protocol-Version` value as sent, OWS-trimmed, for routing between the eras.
pub(crate) fn protocol_version_value(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(PROTOCOL_VERSION)
        .map(|v| v.to_str().unwrap_or("\u{fffd}").trim_matches([' ', '\t']))
}

/// The routing fields of a 2026-07-28 request are its `Mcp-*` headers.
/// The W3C `traceparent` header, for the audit log (which checks its form).
pub(crate) fn traceparent(headers: &HeaderMap) -> Option<std::sync::Arc<str>> {
    let value = headers.get(TRACEPARENT)?.to_str().ok()?;
    Some(std::sync::Arc::from(value))
}

impl RoutingFields for HeaderMap {
    fn single(&self, field: RoutingField<'_>) -> Result<Option<&str>, RpcError> {
        let param;
        let name = match field {
            RoutingField::Revision => PROTOCOL_VERSION,
            RoutingField::Method => METHOD,
            RoutingField::Name => NAME,
            RoutingField::Param(token) => {
                param = format!("{PARAM_PREFIX}{}", token.to_ascii_lowercase());
                // A token that makes no header name matches no header.
                match HeaderName::from_bytes(param.as_bytes()) {
                    Ok(name) => name,
                    Err(_) => return Ok(None),
                }
            }
        };
        let mut values = self.get_all(&name).iter();
        let first = values.next();
        if values.next().is_some() {
            return Err(mismatch(format!(
                "the {} header is sent more than once",
                name.as_str()
            )));
        }
        Ok(first.map(|v| v.to_str().unwrap_or("\u{fffd}").trim_matches([' ', '\t'])))
    }
}

pub(crate) fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

pub(crate) fn require_session_id(headers: &HeaderMap) -> Result<&str, HttpError> {
    session_id(headers).ok_or_else(missing_session_id)
}

/// The 400 for a request that needs a session and names none.
pub(crate) fn missing_session_id() -> HttpError {
    HttpError::new(
        StatusCode::BAD_REQUEST,
        codes::SERVER_ERROR,
        "Bad Request: the Mcp-Session-Id header is required; send initialize first to get one",
    )
}

pub(crate) fn last_event_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> HttpSection {
        HttpSection::default()
    }

    #[test]
    fn loopback_hosts_and_origins_pass_others_do_not() {
        let c = config();
        assert!(host_allowed("127.0.0.1:8080", &c));
        assert!(host_allowed("localhost", &c));
        assert!(host_allowed("[::1]:9", &c));
        assert!(!host_allowed("evil.example.com", &c));
        assert!(!host_allowed("127.0.0.1.evil.com", &c));
        assert!(origin_allowed("http://localhost:6274", &c));
        assert!(!origin_allowed("http://evil.example.com", &c));
        assert!(!origin_allowed("null", &c));
        assert!(!origin_allowed("http://127.0.0.1:1@evil.com", &c));
        assert!(!origin_allowed("http://localhost@evil.com", &c));
        assert!(!origin_allowed("http://localhost:80/x", &c));
        assert!(!origin_allowed("http://[::1]x", &c));
        assert!(!host_allowed("127.0.0.1:1@evil.com", &c));
        assert!(!host_allowed("localhost:x", &c));
    }

    #[test]
    fn a_host_that_is_not_ascii_is_refused_not_skipped() {
        let mut h = HeaderMap::new();
        h.insert(
            header::HOST,
            axum::http::HeaderValue::from_bytes(b"caf\xe9.example").unwrap(),
        );
        let uri = Uri::from_static("/mcp");
        assert!(check_host_and_origin(&h, &uri, &config()).is_err());
        let any = HttpSection {
            allowed_hosts: vec!["*".into()],
            ..config()
        };
        assert!(check_host_and_origin(&h, &uri, &any).is_ok());
    }

    #[test]
    fn configured_hosts_and_origins_pass() {
        let c = HttpSection {
            allowed_hosts: vec!["mcp.internal".into()],
            allowed_origins: vec!["https://app.example.com".into()],
            ..config()
        };
        assert!(host_allowed("mcp.internal:443", &c));
        assert!(origin_allowed("https://app.example.com", &c));
    }

    #[test]
    fn accept_wildcards_count() {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, "*/*".parse().unwrap());
        assert!(check_post_accept(&h).is_ok());
        h.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert!(check_post_accept(&h).is_err());
        h.insert(
            header::ACCEPT,
            "application/json, text/event-stream;q=0.9".parse().unwrap(),
        );
        assert!(check_post_accept(&h).is_ok());
    }
}
