//! Where what an upstream sends unasked goes: the hooks for its announcements about its whole
//! offer ([`Events`]), and whether its log messages and requests may reach a client
//! ([`Relay`]).
//!
//! On stdio those messages carry no link to the call they concern, so the connection gives
//! them to the client of the most recent call in flight. That is sound only when one
//! principal owns the connection. A `scope = "shared"` process serves every principal, and
//! the most recent call may be bob's while the upstream speaks of alice's: there the
//! gateway relays neither, a log message is dropped and a request refused, each with a
//! rate-limited log line. Progress is unaffected: it carries the request's own token.

use serde_json::Value;

use crate::jsonrpc::{RpcError, codes};

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
