//! The one place where a failure becomes an HTTP status and a JSON-RPC error body.
//!
//! Statuses follow `shared/spec/streamable-http-2025.md` §6: 400 for malformed input and a
//! missing session id, 403 for Origin/Host, 404 for an unknown or ended session, 405, 406,
//! 408, 413, 415; plus 429 and 503 (with `Retry-After`) for our own limits, and 410 for a
//! `Last-Event-ID` the replay log no longer covers. 2026-07-28 replies map their JSON-RPC
//! error codes with [`stateless_status`], and their refusals convert here too.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::jsonrpc::{RpcError, codes};
use crate::log_limit::LogLimiter;
use crate::metrics::{Limit, Metrics};
use crate::session::SessionError;
use crate::session::streams::ReplayError;
use crate::stateless::Refusal;

#[derive(Debug)]
pub(crate) struct HttpError {
    pub status: StatusCode,
    pub error: RpcError,
    pub retry_after_secs: Option<u64>,
    pub allow: Option<&'static str>,
    /// The limit that refused the request, counted when the error is answered.
    pub limit: Option<Limit>,
    /// A bearer challenge (401, 403): the `WWW-Authenticate` value. Boxed, so the errors
    /// every handler returns stay small.
    pub challenge: Option<Box<str>>,
    /// Close the connection instead of answering ([`HandOff`]).
    pub hand_off: bool,
}

/// Marks a response that must not be sent: the connection closes without an answer, which
/// the shipped balancer recipes retry on another node (nginx `proxy_next_upstream error`,
/// HAProxy `retry-on empty-response`). A draining node with `[store]` answers so for a
/// session it no longer holds: any answer it could send (404, 503) would reach the client.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HandOff;

impl std::fmt::Display for HandOff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request handed off to another node: the connection closes unanswered")
    }
}

impl std::error::Error for HandOff {}

impl From<std::convert::Infallible> for HandOff {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl HttpError {
    pub fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        HttpError {
            status,
            error: RpcError::new(code, message),
            retry_after_secs: None,
            allow: None,
            limit: None,
            challenge: None,
            hand_off: false,
        }
    }

    /// 400 with the given JSON-RPC error (parse errors, invalid requests and params).
    pub fn bad_request(error: RpcError) -> Self {
        HttpError {
            status: StatusCode::BAD_REQUEST,
            error,
            retry_after_secs: None,
            allow: None,
            limit: None,
            challenge: None,
            hand_off: false,
        }
    }

    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    /// Adds a bearer challenge (`WWW-Authenticate`).
    pub fn challenge(mut self, challenge: String) -> Self {
        self.challenge = Some(challenge.into_boxed_str());
        self
    }

    /// Marks the error as the refusal of `limit`.
    pub fn limit(mut self, limit: Limit) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The response, with the refusal counted in `mcp_limit_rejections_total` when a limit
    /// refused the request. Every handler answers its errors through here.
    pub fn respond(self, metrics: &Metrics) -> Response {
        if let Some(limit) = self.limit {
            metrics.limit_hit(limit);
        }
        self.into_response()
    }

    pub fn method_not_allowed(allow: &'static str) -> Self {
        let mut e = HttpError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            codes::SERVER_ERROR,
            format!("method not allowed on the MCP endpoint; allowed: {allow}"),
        );
        e.allow = Some(allow);
        e
    }
}

/// The HTTP status of a JSON-RPC error on the 2026-07-28 path (§2.5 of
/// `shared/spec/stateless-2026-07-28.md`): the request's own faults are 400 (404 for an
/// unknown method); errors of a well-formed request travel in a 200 reply.
pub(crate) fn stateless_status(code: i64) -> StatusCode {
    match code {
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        codes::PARSE_ERROR
        | codes::INVALID_REQUEST
        | codes::INVALID_PARAMS
        | codes::HEADER_MISMATCH
        | codes::MISSING_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

impl From<SessionError> for HttpError {
    fn from(e: SessionError) -> Self {
        let message = e.to_string();
        match e {
            SessionError::NotFound => {
                HttpError::new(StatusCode::NOT_FOUND, codes::SESSION_NOT_FOUND, message)
            }
            SessionError::Busy => HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::SERVER_ERROR,
                message,
            )
            .retry_after(1)
            .limit(Limit::MailboxFull),
            SessionError::TooManyInFlight { .. } => {
                HttpError::new(StatusCode::TOO_MANY_REQUESTS, codes::SERVER_ERROR, message)
                    .retry_after(1)
                    .limit(Limit::MaxInFlight)
            }
            SessionError::HandOff => {
                let mut e = HttpError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    codes::SERVER_ERROR,
                    message,
                );
                e.hand_off = true;
                e
            }
            SessionError::StoreDown => HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::SERVER_ERROR,
                message,
            )
            .retry_after(1),
            SessionError::Draining => HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::SERVER_ERROR,
                message,
            )
            .retry_after(1)
            .limit(Limit::Draining),
            SessionError::TooManyStreams { .. } => {
                HttpError::new(StatusCode::TOO_MANY_REQUESTS, codes::SERVER_ERROR, message)
                    .retry_after(1)
                    .limit(Limit::MaxStreamsPerSession)
            }
            SessionError::TooManyForPrincipal { .. } => {
                HttpError::new(StatusCode::TOO_MANY_REQUESTS, codes::SERVER_ERROR, message)
                    .retry_after(5)
                    .limit(Limit::PrincipalSessions)
            }
            SessionError::TooManySessions { .. } => HttpError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::SERVER_ERROR,
                message,
            )
            .retry_after(5)
            .limit(Limit::MaxSessions),
            SessionError::Replay(ReplayError::OutOfWindow { .. }) => {
                HttpError::new(StatusCode::GONE, codes::SERVER_ERROR, message)
            }
            SessionError::Replay(ReplayError::Unknown(_)) => {
                HttpError::new(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, message)
            }
            SessionError::Invalid(error) => HttpError::bad_request(error),
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        // A limit that is hit (429, 503) matters to the operator, but a client can hit it
        // at will: warn through a rate limiter. Other refusals are the client's mistake.
        static LIMIT_LOG: LogLimiter = LogLimiter::new();
        let limit_hit =
            self.status.is_server_error() || self.status == StatusCode::TOO_MANY_REQUESTS;
        match limit_hit.then(|| LIMIT_LOG.admit()).flatten() {
            Some(suppressed) => {
                tracing::warn!(status = self.status.as_u16(), error = %self.error.message, suppressed, "request refused")
            }
            None => {
                tracing::debug!(status = self.status.as_u16(), error = %self.error.message, "request refused")
            }
        }
        // No id: the 2025-11-25 schema makes it optional for errors about unreadable requests,
        // and a null id would not validate against it.
        let body = json!({ "jsonrpc": "2.0", "error": self.error });
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.hand_off {
            response.extensions_mut().insert(HandOff);
        }
        let headers = response.headers_mut();
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(allow) = self.allow {
            headers.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        if let Some(value) = self.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

impl From<Refusal> for HttpError {
    fn from(refusal: Refusal) -> Self {
        let message = refusal.to_string();
        let code = codes::SERVER_ERROR;
        match refusal {
            Refusal::TooManyCalls { .. } => {
                HttpError::new(StatusCode::TOO_MANY_REQUESTS, code, message)
                    .retry_after(1)
                    .limit(Limit::StatelessMaxInFlight)
            }
            Refusal::TooManyListenStreams { .. } => {
                HttpError::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
                    .retry_after(5)
                    .limit(Limit::MaxListenStreams)
            }
            Refusal::PrincipalBusy { .. } => {
                HttpError::new(StatusCode::TOO_MANY_REQUESTS, code, message)
                    .retry_after(1)
                    .limit(Limit::PrincipalInFlight)
            }
            Refusal::PrincipalListening { .. } => {
                HttpError::new(StatusCode::TOO_MANY_REQUESTS, code, message)
                    .retry_after(5)
                    .limit(Limit::PrincipalListenStreams)
            }
            // Counted by the task store, which refuses a task that a handler starts too,
            // where the answer is a JSON-RPC error in a stream that has begun.
            Refusal::TooManyTasks { .. } => {
                HttpError::new(StatusCode::SERVICE_UNAVAILABLE, code, message).retry_after(5)
            }
            Refusal::PrincipalTasks { .. } => {
                HttpError::new(StatusCode::TOO_MANY_REQUESTS, code, message).retry_after(5)
            }
            Refusal::Draining => HttpError::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
                .retry_after(1)
                .limit(Limit::Draining),
            Refusal::ListenNeedsEventStream => HttpError::new(
                StatusCode::NOT_ACCEPTABLE,
                code,
                "Not Acceptable: subscriptions/listen answers with an SSE stream; accept text/event-stream",
            ),
        }
    }
}
