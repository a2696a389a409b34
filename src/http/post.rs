//! POST on the MCP endpoint. One prelude (the headers, the principal, the body, and which
//! era the POST belongs to), then one of two paths: `post_session`, where `initialize`
//! starts a session and every other message goes to its session's actor (spec
//! `basic/transports.mdx`, "Sending Messages to the Server"), or `post_stateless`, which
//! hands a 2026-07-28 request to [`stateless::serve`].

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use crate::http::error::HttpError;
use crate::http::{AppState, headers, limits, reply};
use crate::jsonrpc::{self, DecodeCap, DecodeError, Message, RpcError, codes};
use crate::log_limit::LogLimiter;
use crate::metrics::Limit;
use crate::protocol::Method;
use crate::session::{self, actor::PostOutcome};
use crate::stateless;
use crate::telemetry;

pub(crate) async fn post(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
) -> Response {
    // The request is taken whole so its headers are read in place: the `HeaderMap` and
    // `Uri` extractors would copy them on every call.
    let (parts, mut body) = request.into_parts();
    let peer = limits::peer(&parts.extensions);
    // Read once: each lookup hashes the header name again.
    let session_id = headers::session_id(&parts.headers);
    let admitted = match admit(&state, &parts.uri, &parts.headers, session_id, peer).await {
        Ok(admitted) => admitted,
        Err(e) => {
            let max = state.config.http.max_body_bytes;
            // A body declared over the limit would not be drained whole: close at once.
            let drainable = declared_length(&parts.headers).is_none_or(|n| n <= max as u64);
            // Boxed: only a refusal drains, and the drain's future would size every POST's.
            let drained = drainable && Box::pin(drain_within(&mut body, max, DRAIN_TIME)).await;
            return refused_unread(e.respond(&state.metrics), drained);
        }
    };
    match handle_post(&state, &parts.headers, session_id, admitted, body).await {
        Ok(response) => response,
        Err(e) => e.respond(&state.metrics),
    }
}

/// What the checks before the body established.
struct Admitted {
    principal: crate::auth::Principal,
    era: EraHint,
}

/// Which era a POST belongs to, as far as its headers tell (`shared/spec/stateless-2026-07-28.md`
/// §1.4). A `MCP-Protocol-Version` decides before the body is read, since the two eras
/// accept different `Accept` headers; without one, the body decides once it is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EraHint {
    /// A version that is no handshake revision, unknown ones included.
    Stateless,
    /// A handshake revision.
    Session,
    /// No version header.
    FromBody,
}

impl EraHint {
    fn of(headers: &HeaderMap) -> Self {
        match headers::protocol_version_value(headers) {
            Some(v) if stateless::takes_version(v) => EraHint::Stateless,
            Some(_) => EraHint::Session,
            None => EraHint::FromBody,
        }
    }

    /// Whether the POST is a 2026-07-28 one: without a version header, a single
    /// non-initialize request without a session that claims the revision in `_meta`.
    fn is_stateless(self, session_id: Option<&str>, body: &jsonrpc::Body) -> bool {
        match (self, body) {
            (EraHint::Stateless, _) => true,
            (EraHint::Session, _) => false,
            (EraHint::FromBody, jsonrpc::Body::Single(Message::Request(r))) => {
                session_id.is_none() && stateless::claims_stateless(&r.method, r.params.as_ref())
            }
            (EraHint::FromBody, _) => false,
        }
    }
}

/// The checks that need only the headers (Host and Origin, the initialize rate per
/// address, Accept, Content-Type, the token), so that a refused client costs no more than
/// its headers and a bounded drain.
async fn admit(
    state: &Arc<AppState>,
    uri: &Uri,
    headers: &HeaderMap,
    session_id: Option<&str>,
    peer: Option<std::net::SocketAddr>,
) -> Result<Admitted, HttpError> {
    headers::check_host_and_origin(headers, uri, &state.config.http)?;
    let era = EraHint::of(headers);
    let stateless_header = era == EraHint::Stateless;
    if session_id.is_none() && !stateless_header {
        // Only initialize starts here: counted per address before any work, tokens included.
        state
            .edge
            .initialize_from(state.edge.client_ip(peer, headers))?;
    }
    if stateless_header {
        headers::check_json_accept(headers)?;
    } else {
        headers::check_post_accept(headers)?;
    }
    headers::check_content_type(headers)?;
    let principal = state.principal(headers).await?;
    Ok(Admitted { principal, era })
}

/// A refusal sent before the body was read. hyper cannot reuse a connection whose request
/// body is left unread and closes it, so a client that sends its retry (the usual 401,
/// refresh, retry) on the same keep-alive connection loses it to that close. The body is
/// drained instead, within bounds; when it could not be, `Connection: close` says so and
/// the client reconnects (RFC 9112 §9.6).
fn refused_unread(mut response: Response, drained: bool) -> Response {
    if !drained {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The prelude every POST shares: the body, read and decoded within bounds, the scopes its
/// requests need, and the era it belongs to, decided once.
async fn handle_post(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    session_id: Option<&str>,
    admitted: Admitted,
    body: Body,
) -> Result<Response, HttpError> {
    let config = &state.config.http;
    let Admitted { principal, era } = admitted;
    let bytes = read_body_in_time(headers, body, config).await?;
    let limits = jsonrpc::DecodeLimits {
        max_batch: config.max_batch_size,
        max_values: config.max_json_values,
    };
    let decoded = match jsonrpc::decode_body_within(&bytes, limits) {
        Ok(decoded) => decoded,
        Err(DecodeError::OverCap(cap, e)) => {
            // A 400 is the client's fault, but a body built to cost memory is worth the
            // operator's notice: warned, rate-limited.
            static LOG: LogLimiter = LogLimiter::new();
            let limit = match cap {
                DecodeCap::BatchSize => Limit::MaxBatchSize,
                DecodeCap::Values => Limit::MaxJsonValues,
            };
            if let Some(suppressed) = LOG.admit() {
                tracing::warn!(
                    limit = limit.label(),
                    suppressed,
                    "request body refused while decoding: {}",
                    e.message
                );
            }
            return Err(HttpError::bad_request(e).limit(limit));
        }
        Err(DecodeError::Malformed(e)) if era == EraHint::Stateless => {
            return Ok(super::stateless::respond(
                stateless::Reply::error(None, e),
                state,
            ));
        }
        Err(DecodeError::Malformed(e)) => return Err(HttpError::bad_request(e)),
    };
    // The bytes are no longer needed, and under concurrent large bodies they are most of
    // what a POST holds.
    drop(bytes);
    let mut decoded = decoded;
    telemetry::adopt_header_context(headers, &mut decoded);
    state.check_scopes(&principal, decoded.messages())?;
    if era.is_stateless(session_id, &decoded) {
        post_stateless(state, headers, &principal, decoded).await
    } else {
        post_session(state, headers, session_id, &principal, decoded).await
    }
}

/// Whether a POST with these headers and this decoded body takes the 2026-07-28 path: the
/// classifier `handle_post` uses, for the fuzz targets.
#[cfg(fuzzing)]
pub(crate) fn is_stateless_post(headers: &HeaderMap, body: &jsonrpc::Body) -> bool {
    EraHint::of(headers).is_stateless(headers::session_id(headers), body)
}

/// A 2026-07-28 POST: one request, served without a session.
async fn post_stateless(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    principal: &crate::auth::Principal,
    decoded: jsonrpc::Body,
) -> Result<Response, HttpError> {
    let mut caller = state.caller(principal);
    caller.traceparent = headers::traceparent(headers);
    let transport = stateless::StatelessTransport {
        caller: &caller,
        fields: headers,
        version: headers::protocol_version_value(headers),
        accepts_stream: headers::check_get_accept(headers).is_ok(),
    };
    let permit = state.edge.sse_permit(&principal.key)?;
    let reply = stateless::serve(&state.stateless, transport, decoded).await;
    Ok(limits::hold(
        super::stateless::respond(reply, state),
        permit,
    ))
}

/// A handshake-era POST: `initialize` starts a session, anything else goes to the
/// session its `Mcp-Session-Id` names.
async fn post_session(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    session_id: Option<&str>,
    principal: &crate::auth::Principal,
    decoded: jsonrpc::Body,
) -> Result<Response, HttpError> {
    let config = &state.config.http;
    headers::protocol_version(headers)?;
    let is_batch = matches!(decoded, jsonrpc::Body::Batch(_));

    let initialize = decoded
        .messages()
        .iter()
        .any(|m| matches!(m, Message::Request(r) if Method::parse(&r.method) == Some(Method::Initialize)));
    if initialize {
        if is_batch {
            return Err(HttpError::bad_request(RpcError::invalid_request(
                "initialize must not be part of a JSON-RPC batch",
            )));
        }
        if let Some(id) = session_id {
            state.session(id, principal).await?;
            return Err(HttpError::bad_request(RpcError::invalid_request(
                "Invalid Request: this session is already initialized; send initialize without Mcp-Session-Id to start a new session",
            )));
        }
        let Some(Message::Request(request)) = decoded.into_messages().into_iter().next() else {
            return Err(HttpError::bad_request(RpcError::invalid_request(
                "initialize must be a request",
            )));
        };
        if state.auth.is_some() {
            state.edge.initialize_by(&principal.key)?;
        }
        let owner = state.owner(principal);
        let (handle, body) = session::initialize(&state.sessions, &request, &owner)?;
        let mut response = reply::json(StatusCode::OK, body);
        if let Ok(value) = HeaderValue::from_str(&handle.id) {
            response.headers_mut().insert(headers::SESSION_ID, value);
        }
        return Ok(response);
    }

    let id = session_id.ok_or_else(headers::missing_session_id)?;
    let handle = state.session(id, principal).await?;
    if is_batch && !handle.version.allows_batches() {
        return Err(HttpError::bad_request(RpcError::invalid_request(format!(
            "JSON-RPC batches are only accepted in 2025-03-26 sessions; this session speaks {}: send one message per POST",
            handle.version
        ))));
    }
    let has_requests = decoded
        .messages()
        .iter()
        .any(|m| matches!(m, Message::Request(_)));
    let permit = has_requests
        .then(|| state.edge.sse_permit(&principal.key))
        .transpose()?;
    let grants = state.grants(principal);
    let traceparent = headers::traceparent(headers);
    match (
        handle
            .post(decoded.into_messages(), grants, traceparent)
            .await?,
        permit,
    ) {
        (PostOutcome::Stream(attachment), Some(permit)) => {
            let response = reply::respond_to_post(attachment, config, &state.metrics, is_batch);
            Ok(limits::hold(response.await, permit))
        }
        (PostOutcome::Stream(attachment), None) => {
            Ok(reply::respond_to_post(attachment, config, &state.metrics, is_batch).await)
        }
        (PostOutcome::Accepted, _) => Ok(StatusCode::ACCEPTED.into_response()),
    }
}

/// How much of an oversized body is read and thrown away before the 413 goes out. A server
/// that answers and closes while the client is still sending makes many clients lose the
/// answer to a reset ("broken pipe", RFC 9112 §9.6); draining a bounded amount first lets
/// them read it. Nothing drained is kept.
const DRAIN_BYTES: usize = 64 * 1024 * 1024;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// The body, within `http.body_timeout`. A small body usually arrived with the headers, and
/// one poll reads it whole: only a body that makes the read wait gets a timer, so the usual
/// request arms none (about 600 instructions per request). The deadline counts from that
/// first wait, which the poll before it cannot have delayed.
async fn read_body_in_time(
    headers: &HeaderMap,
    body: Body,
    config: &crate::config::HttpSection,
) -> Result<bytes::Bytes, HttpError> {
    use futures_util::FutureExt;

    let mut read = std::pin::pin!(read_body(headers, body, config.max_body_bytes));
    if let Some(read) = read.as_mut().now_or_never() {
        return read;
    }
    tokio::time::timeout(config.body_timeout, read)
        .await
        .map_err(|_| {
            HttpError::new(
                StatusCode::REQUEST_TIMEOUT,
                codes::SERVER_ERROR,
                format!(
                    "Request Timeout: the body did not arrive within {:?} (http.body_timeout)",
                    config.body_timeout
                ),
            )
            .limit(Limit::BodyTimeout)
        })?
}

/// Reads the body up to the configured limit; a larger body gets 413 and is never buffered.
async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<bytes::Bytes, HttpError> {
    use http_body_util::BodyExt;

    let too_large = || {
        tracing::debug!(limit, "request body over http.max_body_bytes refused");
        HttpError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            codes::SERVER_ERROR,
            format!("Payload Too Large: the body exceeds {limit} bytes (http.max_body_bytes)"),
        )
        .limit(Limit::MaxBodyBytes)
    };
    let declared = declared_length(headers);
    let mut body = body;
    if declared.is_some_and(|n| n > limit as u64) {
        drain(&mut body).await;
        return Err(too_large());
    }
    let mut buf = bytes::BytesMut::with_capacity(declared.map_or(0, |n| n as usize));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            HttpError::bad_request(RpcError::parse_error(format!(
                "could not read the request body: {e}"
            )))
        })?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                drain(&mut body).await;
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// The body's `Content-Length`, when it sent a valid one.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Reads and discards what is left of a body, within [`DRAIN_BYTES`] and [`DRAIN_TIME`].
async fn drain(body: &mut Body) {
    let drained = drain_within(body, DRAIN_BYTES, DRAIN_TIME).await;
    tracing::debug!(drained, "oversized body drained");
}

/// Reads and discards a body up to `max_bytes` and `max_time`; whether it ended within them.
async fn drain_within(body: &mut Body, max_bytes: usize, max_time: std::time::Duration) -> bool {
    use http_body_util::BodyExt;

    let discard = async {
        let mut seen = 0usize;
        loop {
            match body.frame().await {
                Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len()),
                Some(Err(e)) => {
                    tracing::debug!(error = %e, seen, "read error while draining a refused body");
                    return false;
                }
                None => return true,
            }
            if seen > max_bytes {
                return false;
            }
        }
    };
    tokio::time::timeout(max_time, discard)
        .await
        .unwrap_or(false)
}
