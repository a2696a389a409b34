//! Which caller a message from an upstream may reach, decided by the stream it came on.
//!
//! A shared connection serves every client at once, so "the call in flight" is not an
//! owner: routing a log or an elicitation to the most recent call would hand one
//! principal's data to another. Streamable HTTP gives each POST a stream of its own, so a
//! message there belongs to that POST's caller; the GET stream has no per-request link,
//! and on a shared connection nothing from it is relayed to a caller. stdio has no streams
//! at all, and its connections keep the most-recent-call rule.

use bytes::Bytes;

use crate::jsonrpc::{RpcError, codes};

/// Which caller a message from the upstream may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// No per-request link (stdio, or a per-session connection's GET stream): the most
    /// recent call in flight, which belongs to the connection's one owner.
    Latest,
    /// On the stream of the POST that carried request `id`: that call's caller only.
    Call(i64),
    /// On a shared connection's GET stream: no caller caused it, so no caller gets it.
    Nobody,
}

impl Route {
    /// The id of the call a message may reach, among `calls`: the requests in flight that
    /// serve a client request (their ids grow, so the largest is the most recent).
    pub fn pick(self, calls: impl Iterator<Item = i64>) -> Option<i64> {
        match self {
            Route::Latest => calls.max(),
            Route::Call(id) => Some(id),
            Route::Nobody => None,
        }
    }
}

/// A message from the upstream and the route it came by.
pub(crate) struct Incoming {
    pub bytes: Bytes,
    pub route: Route,
}

impl From<Bytes> for Incoming {
    fn from(bytes: Bytes) -> Incoming {
        Incoming {
            bytes,
            route: Route::Latest,
        }
    }
}

/// Logs, rate-limited, a log message dropped because it belongs to no caller.
pub(crate) fn log_dropped(route: Route) {
    if route == Route::Nobody {
        crate::log_limit::warn_limited!(
            "an upstream's log message on the GET stream of a shared connection was dropped: \
             it belongs to no caller"
        );
    }
}

/// The error for an upstream's request (`forwarded`: one the gateway relays) that has no
/// caller to go to by `route`.
pub(crate) fn refusal(method: &str, forwarded: bool, route: Route) -> RpcError {
    if !forwarded {
        return RpcError::method_not_found(method);
    }
    if route == Route::Nobody {
        crate::log_limit::warn_limited!(
            %method,
            "an upstream's request on the GET stream of a shared connection was refused: \
             it belongs to no caller"
        );
        return RpcError::new(
            codes::INVALID_REQUEST,
            format!(
                "{method} came on the GET stream of a connection shared by every client, so \
                 the gateway cannot tell whose it is; send it on the stream of the request \
                 it serves"
            ),
        );
    }
    RpcError::new(
        codes::INVALID_REQUEST,
        format!("{method} reached the gateway with no client request in flight to ask"),
    )
}
