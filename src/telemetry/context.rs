//! W3C trace context (`traceparent`, `tracestate`) read from a request and written on the
//! way out.
//!
//! The parent of a request's span comes from `params._meta`, which the MCP semantic
//! conventions recommend, or else from the HTTP `traceparent` header: one HTTP request can
//! carry a batch of messages, each of which may belong to another trace, so a message's own
//! `_meta` wins. The header's context is copied into the `_meta` of every request that has
//! none ([`copy_header_context`]), so the span builders read one place.
//!
//! Parsing is the SDK's `TraceContextPropagator`; what is added here are the bounds W3C Trace
//! Context §3.3 sets on `tracestate` (32 list members, 512 characters): a client cannot make
//! the server carry, export and forward an unbounded string. An over-long `tracestate` is
//! dropped whole and the `traceparent` kept, as the spec allows.

use http::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};

use crate::jsonrpc::{Body, Message};

pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// W3C Trace Context §3.3.1.1: at most 32 list members.
pub const MAX_TRACESTATE_MEMBERS: usize = 32;
/// W3C Trace Context §3.3.1.5: a vendor may cut a `tracestate` longer than 512 characters.
pub const MAX_TRACESTATE_CHARS: usize = 512;

/// Whether a `tracestate` value is within the W3C bounds.
pub fn tracestate_within_bounds(value: &str) -> bool {
    value.len() <= MAX_TRACESTATE_CHARS && value.split(',').count() <= MAX_TRACESTATE_MEMBERS
}

/// The trace context of `_meta`, or none when it has no valid `traceparent`.
pub fn from_meta(meta: Option<&Value>) -> Option<opentelemetry::Context> {
    let meta = meta?.as_object()?;
    let traceparent = meta.get(TRACEPARENT)?.as_str()?;
    let tracestate = meta.get(TRACESTATE).and_then(Value::as_str);
    extract(traceparent, tracestate)
}

fn extract(traceparent: &str, tracestate: Option<&str>) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::TraceContextExt;
    let carrier = Carrier {
        traceparent,
        tracestate: tracestate.filter(|s| tracestate_within_bounds(s)),
    };
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT => Some(self.traceparent),
            TRACESTATE => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT, TRACESTATE]
    }
}

/// Copies a valid `traceparent` header (and its bounded `tracestate`) into the `_meta` of
/// every request of `body` whose `_meta` carries no `traceparent` of its own.
pub fn copy_header_context(headers: &HeaderMap, body: &mut Body) {
    let Some(traceparent) = headers.get(TRACEPARENT).and_then(|v| v.to_str().ok()) else {
        return;
    };
    let tracestate = headers
        .get(TRACESTATE)
        .and_then(|v| v.to_str().ok())
        .filter(|s| tracestate_within_bounds(s));
    if extract(traceparent, tracestate).is_none() {
        return;
    }
    let messages = match body {
        Body::Single(message) => std::slice::from_mut(message),
        Body::Batch(messages) => messages.as_mut_slice(),
    };
    for message in messages {
        let Message::Request(request) = message else {
            continue;
        };
        let params = request
            .params
            .get_or_insert_with(|| Value::Object(Map::new()));
        let Some(params) = params.as_object_mut() else {
            continue;
        };
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else {
            continue;
        };
        if meta.contains_key(TRACEPARENT) {
            continue;
        }
        meta.insert(TRACEPARENT.into(), traceparent.into());
        if let Some(tracestate) = tracestate {
            meta.insert(TRACESTATE.into(), tracestate.into());
        }
    }
}

/// Writes `cx` as `traceparent` (and `tracestate`) into a `_meta` object.
pub fn inject_meta(cx: &opentelemetry::Context, meta: &mut Map<String, Value>) {
    TraceContextPropagator::new().inject_context(cx, &mut MetaInjector(meta));
}

struct MetaInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), Value::String(value));
    }
}

/// Writes `cx` as `traceparent` (and `tracestate`) headers.
pub fn inject_headers(cx: &opentelemetry::Context, headers: &mut HeaderMap) {
    TraceContextPropagator::new().inject_context(cx, &mut HeaderInjector(headers));
}

struct HeaderInjector<'a>(&'a mut HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::try_from(key),
            http::HeaderValue::try_from(value),
        ) {
            self.0.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TraceContextExt;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_in_meta_is_the_parent() {
        let meta = serde_json::json!({ "traceparent": PARENT, "tracestate": "a=1,b=2" });
        let cx = from_meta(Some(&meta)).unwrap();
        let span = cx.span();
        let sc = span.span_context();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.trace_state().header(), "a=1,b=2");
    }

    #[test]
    fn malformed_or_all_zero_traceparents_are_ignored() {
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f35",
        ] {
            assert!(from_meta(Some(&serde_json::json!({ "traceparent": bad }))).is_none());
        }
    }

    #[test]
    fn an_unbounded_tracestate_is_dropped_and_the_parent_kept() {
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        let long = format!("k={}", "v".repeat(600));
        for state in [many.join(","), long] {
            let meta = serde_json::json!({ "traceparent": PARENT, "tracestate": state });
            let cx = from_meta(Some(&meta)).unwrap();
            assert_eq!(cx.span().span_context().trace_state().header(), "");
        }
    }
}
