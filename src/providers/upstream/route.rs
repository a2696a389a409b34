//! Where what an upstream sends goes: which caller a message may reach, decided by the
//! stream it came on ([`Route`]) and by who shares the connection ([`Relay`]), and the hooks
//! for its announcements about its whole offer ([`Events`]).
//!
//! A shared connection serves every client at once, so "the call in flight" is not an
//! owner: routing a log or an elicitation to the most recent call would hand one
//! principal's data to another. Streamable HTTP gives each POST a stream of its own, so a
//! message there belongs to that POST's caller; the GET stream has no per-request link,
//! and on a shared connection nothing from it is relayed to a caller.
//!
//! stdio has no streams at all: its messages carry no link to the call they concern, so
//! the connection gives them to the client of the most recent call in flight. That is sound
//! only when one principal owns the connection. A `scope = "shared"` process serves every
//! principal, and the most recent call may be bob's while the upstream speaks of alice's:
//! there the gateway relays neither ([`Relay::Never`]), a log message is dropped and a
//! request refused, each with a rate-limited log line. Progress is unaffected: it carries
//! the request's own token.

use bytes::Bytes;
use serde_json::Value;

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

/// What the connection tells its owner about the upstream as a whole.
pub(crate) trait Events: Send + Sync + 'static {
    /// `notifications/tools/list_changed` and its kin, by method.
    fn list_changed(&self, method: &str);
    /// `notifications/resources/updated`.
    fn resource_updated(&self, params: Value);
}

/// Events nobody listens to: a probe connection.
pub(crate) struct Ignored;

impl Events for Ignored {
    fn list_changed(&self, _: &str) {}
    fn resource_updated(&self, _: Value) {}
}

/// Whether the upstream's log messages and requests, which carry no link to the call they
/// concern, may go to the client of the most recent call in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relay {
    /// One principal owns the connection: the most recent call is theirs.
    LatestCall,
    /// Several principals share it over stdio: relaying could hand one's data to another.
    Never,
}

impl Relay {
    /// Logs (rate-limited) that a log message was not relayed, when this is why.
    pub fn dropped_log(self) {
        if self == Relay::Never {
            crate::log_limit::warn_limited!(
                "a shared stdio upstream sent a log message; it is dropped, as nothing says which caller it concerns"
            );
        }
    }

    /// The error for an upstream request of `method` this connection never relays; `None`
    /// when it may be relayed, or is not one the gateway forwards at all.
    pub fn refusal(self, method: &str, forwarded: Option<&str>) -> Option<RpcError> {
        if self != Relay::Never || forwarded.is_none() {
            return None;
        }
        crate::log_limit::warn_limited!(
            method,
            "a shared stdio upstream sent a request; it is refused, as nothing says which caller it concerns"
        );
        Some(RpcError::new(
            codes::INVALID_REQUEST,
            format!(
                "{method} is not relayed from a shared (scope = \"shared\") stdio upstream, as nothing \
                 links it to one caller; configure the upstream with scope = \"session\" to let it ask"
            ),
        ))
    }
}
