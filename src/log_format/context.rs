//! What a log line inside a request says about the request, without a span per request.
//!
//! A `tracing` span costs each request about 4,500 instructions with the fmt layer (the
//! registry's span data, the six fields formatted into a `String` when it opens, enter and
//! exit on every poll), although almost no request logs anything. Here a request's fields
//! are a [`RequestFields`] held in a task-local for as long as the handler's future is
//! polled ([`RequestFields::scope`]): moving a few `Arc`s in is all a request pays, and
//! [`TextEvents`](super::TextEvents) and [`JsonEvents`](super::JsonEvents) format the
//! fields only when an event is logged inside the scope.
//!
//! The switch is process-wide ([`replace_request_span`]) because the choice belongs to
//! whoever installs the subscriber: a library embedder with a subscriber of its own keeps
//! the `request` span, and the binary, which installs the formatters that read the
//! task-local, turns the span off.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::task::futures::TaskLocalFuture;
use tracing_core::callsite::Callsite;
use tracing_core::field::{FieldSet, Value, display};
use tracing_core::metadata::Kind;
use tracing_core::span::Record;
use tracing_core::subscriber::Interest;
use tracing_core::{Level, Metadata};

use crate::jsonrpc::RequestId;

tokio::task_local! {
    static REQUEST: RequestFields;
}

/// Set once, before the first request, by whoever installs [`TextEvents`](super::TextEvents)
/// or [`JsonEvents`](super::JsonEvents).
static SPAN_REPLACED: AtomicBool = AtomicBool::new(false);

/// Stops `dispatch::run_handler` from opening a `request` span for each request: the
/// request's fields go into a task-local that [`TextEvents`](super::TextEvents) and
/// [`JsonEvents`](super::JsonEvents) read instead. Call it when installing one of them,
/// before the server serves (requests already running keep their span). Process-wide and
/// permanent.
///
/// Without it (the default, for an embedder with a subscriber of its own) every request
/// runs in `tracing::error_span!("request", node, session, method, target, request_id,
/// version)`. With it there is no span to filter on: a directive such as
/// `RUST_LOG=[request{session=…}]=debug` matches nothing.
pub fn replace_request_span() {
    // Relaxed: it is set before the runtime's threads start, and a request that reads the
    // old value only gets the span it would have had anyway.
    SPAN_REPLACED.store(true, Ordering::Relaxed);
}

/// Whether [`replace_request_span`] was called.
pub fn request_span_replaced() -> bool {
    SPAN_REPLACED.load(Ordering::Relaxed)
}

/// The `request` span's fields, for the formatters to show where the span's were.
#[derive(Debug, Clone)]
pub struct RequestFields {
    /// `server.node_id`, empty when none is configured.
    pub node: Arc<str>,
    /// The `Mcp-Session-Id`; `None` on the 2026-07-28 path (shown empty, as the span did).
    pub session: Option<Arc<str>>,
    pub method: &'static str,
    /// The tool or prompt name, resource URI or task id the request is about, if any.
    pub target: Option<String>,
    pub request_id: RequestId,
    /// The protocol revision.
    pub version: &'static str,
}

impl RequestFields {
    /// `future`, with these fields as the request every event it logs is about.
    ///
    /// The scope covers whatever `future` polls, and nothing it spawns: a task spawned by a
    /// handler logs without the fields, as it logged without the span, which it inherited
    /// only when instrumented with it (nothing in this crate does that).
    pub fn scope<F: Future>(self, future: F) -> TaskLocalFuture<RequestFields, F> {
        REQUEST.scope(self, future)
    }

    /// `f`, run with these fields as its request's: the synchronous [`Self::scope`].
    #[cfg(test)]
    pub(super) fn sync_scope<R>(self, f: impl FnOnce() -> R) -> R {
        REQUEST.sync_scope(self, f)
    }

    /// Runs `f` with the fields as a [`Record`] of the `request` span's callsite, so that the
    /// subscriber's own `FormatFields` writes them as it would have written the span's.
    pub(super) fn record<R>(&self, f: impl FnOnce(&Record<'_>) -> R) -> R {
        let node: &str = &self.node;
        let session = self.session.as_deref().unwrap_or("");
        let target = self.target.as_deref().unwrap_or("");
        // `%request_id`, as the span had it: a string id quoted, a number bare.
        let request_id = display(&self.request_id);
        let values: [Option<&dyn Value>; FIELD_NAMES.len()] = [
            Some(&node),
            Some(&session),
            Some(&self.method),
            Some(&target),
            Some(&request_id),
            Some(&self.version),
        ];
        // `value_set_all` is hidden from the docs, but it is what every `tracing` macro
        // expands to, so it lasts as long as they do.
        f(&Record::new(&REQUEST_META.fields().value_set_all(&values)))
    }
}

/// Runs `f` with the fields of the request the current task is serving, if it is inside a
/// [`RequestFields::scope`].
pub(super) fn with_current<R>(f: impl FnOnce(&RequestFields) -> R) -> Option<R> {
    REQUEST.try_with(f).ok()
}

/// The name the span had, which the formatters show.
pub(super) const SPAN_NAME: &str = "request";

/// In the order `dispatch::request_span` declares them, which is the order the text shows.
const FIELD_NAMES: [&str; 6] = [
    "node",
    "session",
    "method",
    "target",
    "request_id",
    "version",
];

/// A callsite that is never registered or enabled: it only gives [`RequestFields::record`]
/// a `FieldSet` to record the values against.
struct RequestCallsite;

static REQUEST_CALLSITE: RequestCallsite = RequestCallsite;

static REQUEST_META: Metadata<'static> = Metadata::new(
    SPAN_NAME,
    "mcp_actor::dispatch",
    Level::ERROR,
    None,
    None,
    None,
    FieldSet::new(
        &FIELD_NAMES,
        tracing_core::identify_callsite!(&REQUEST_CALLSITE),
    ),
    Kind::SPAN,
);

impl Callsite for RequestCallsite {
    fn set_interest(&self, _: Interest) {}

    fn metadata(&self) -> &Metadata<'_> {
        &REQUEST_META
    }
}
