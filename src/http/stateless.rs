//! The HTTP form of a 2026-07-28 reply: the status of a JSON-RPC error (§2.5 of
//! `shared/spec/stateless-2026-07-28.md`, in [`error::stateless_status`]), one JSON body, or an
//! SSE stream without event ids (2026-07-28 streams are not resumable).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::http::error::{self, HttpError};
use crate::http::{AppState, reply};
use crate::stateless::Reply;

pub(crate) fn respond(reply: Reply, state: &AppState) -> Response {
    match reply {
        Reply::Accepted => StatusCode::ACCEPTED.into_response(),
        Reply::Response { body, error } => {
            reply::json(error.map_or(StatusCode::OK, error::stateless_status), body)
        }
        Reply::Stream(messages) => {
            reply::sse_of_messages(messages, &state.config.http, &state.metrics)
        }
        Reply::Refused(refusal) => HttpError::from(refusal).respond(&state.metrics),
    }
}
