//! What a log line inside a request says about the request, without a span per request.
//!
//! A `tracing` span costs each request about 4,500 instructions with the fmt layer (the
//! registry's span data, the six fields formatted into a `String` when it opens, enter and
//! exit on every poll), although almost no request logs anything. Here a request's fields
//! are a [`RequestFields`] that its future ([`InRequest`]) moves into a thread-local slot
//! for each poll and back out after it: a few `Arc`s moved is all a request pays, and
//! [`TextEvents`](super::TextEvents) and [`JsonEvents`](super::JsonEvents) format the
//! fields only when an event is logged while the slot holds them.
//!
//! The slot is what `tokio::task_local!` does, done here so that one wrapper of the
//! handler's future, [`InRequest`], serves both the span and the fields: a
//! `TaskLocalFuture` beside `Instrumented`, and an `Either` to choose between them, cost
//! about 350 instructions a call more (callgrind's profile of the echo call), mostly in
//! copies of the handler's future and in polls through the extra layers.
//!
//! The switch is process-wide ([`replace_request_span`]) because the choice belongs to
//! whoever installs the subscriber: a library embedder with a subscriber of its own keeps
//! the `request` span, and the binary, which installs the formatters that read the
//! slot, turns the span off.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tracing_core::callsite::Callsite;
use tracing_core::field::{FieldSet, Value, display};
use tracing_core::metadata::Kind;
use tracing_core::span::Record;
use tracing_core::subscriber::Interest;
use tracing_core::{Level, Metadata};

use crate::jsonrpc::RequestId;

thread_local! {
    /// The fields of the request whose future this thread is polling, if any.
    static CURRENT: RefCell<Option<Box<RequestFields>>> = const { RefCell::new(None) };
}

/// Set once, before the first request, by whoever installs [`TextEvents`](super::TextEvents)
/// or [`JsonEvents`](super::JsonEvents).
static SPAN_REPLACED: AtomicBool = AtomicBool::new(false);

/// Stops `dispatch::run_handler` from opening a `request` span for each request: the
/// request's fields go where [`TextEvents`](super::TextEvents) and
/// [`JsonEvents`](super::JsonEvents) read them instead ([`RequestLog::fields`]). Call it when installing one of them,
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

/// Runs `f` with the fields of the request whose future this thread is polling, if any.
pub(super) fn with_current<R>(f: impl FnOnce(&RequestFields) -> R) -> Option<R> {
    CURRENT
        .try_with(|slot| slot.try_borrow().ok()?.as_deref().map(f))
        .ok()
        .flatten()
}

/// What a request's log lines say about it: its `request` span, or its fields.
#[derive(Debug)]
pub struct RequestLog(Log);

#[derive(Debug)]
enum Log {
    Span(tracing::Span),
    /// `None` while they are in the thread's slot. Boxed, so that a poll swaps one pointer
    /// in and out, and the handler's future, copied whenever it moves (a spawn copies it
    /// more than once), grows by no more than the span would grow it: inline, the fields
    /// cost about 260 instructions a call more than their box (callgrind's profile).
    Fields(Option<Box<RequestFields>>),
}

impl RequestLog {
    /// The span, for a subscriber that shows spans.
    pub fn span(span: tracing::Span) -> Self {
        RequestLog(Log::Span(span))
    }

    /// The fields, for [`TextEvents`](super::TextEvents) and
    /// [`JsonEvents`](super::JsonEvents).
    pub fn fields(fields: RequestFields) -> Self {
        RequestLog(Log::Fields(Some(Box::new(fields))))
    }

    /// `future`, polled and dropped with this as its request's.
    ///
    /// That covers whatever `future` polls, and nothing it spawns: a task spawned by a
    /// handler logs without the request, span or fields, unless instrumented with the span
    /// (nothing in this crate does that).
    pub fn scope<F: Future>(self, future: F) -> InRequest<F> {
        InRequest {
            future: Some(future),
            log: self,
        }
    }

    /// Runs `f` with this as the current request's.
    pub(super) fn in_scope<R>(&mut self, f: impl FnOnce() -> R) -> R {
        match &mut self.0 {
            Log::Span(span) => span.in_scope(f),
            Log::Fields(fields) => {
                let _current = Current::enter(fields);
                f()
            }
        }
    }
}

/// The thread's slot holding a request's fields, for as long as this lives: they are
/// swapped in, and the slot's previous content (none, or the fields of a request polling
/// this one) waits in their place until the drop, a panic's included, swaps it back.
struct Current<'a> {
    /// Whether the swap happened: not while the thread is being torn down.
    entered: bool,
    fields: &'a mut Option<Box<RequestFields>>,
}

impl<'a> Current<'a> {
    fn enter(fields: &'a mut Option<Box<RequestFields>>) -> Self {
        let entered = swap(fields);
        Current { entered, fields }
    }
}

impl Drop for Current<'_> {
    fn drop(&mut self) {
        if self.entered {
            swap(self.fields);
        }
    }
}

/// Exchanges `fields` with the slot's; `false` if the slot cannot be reached.
fn swap(fields: &mut Option<Box<RequestFields>>) -> bool {
    CURRENT
        .try_with(|slot| {
            slot.try_borrow_mut()
                .map(|mut slot| std::mem::swap(&mut *slot, fields))
                .is_ok()
        })
        .unwrap_or(false)
}

pin_project_lite::pin_project! {
    /// A request's future with what its log lines say about it ([`RequestLog::scope`]).
    pub struct InRequest<F> {
        // `None` only once dropped.
        #[pin]
        future: Option<F>,
        log: RequestLog,
    }

    impl<F> PinnedDrop for InRequest<F> {
        fn drop(this: Pin<&mut Self>) {
            // Inside the request, as `Instrumented` drops its future inside its span: what a
            // cancelled handler logs as it is dropped still names its request.
            let this = this.project();
            let mut future = this.future;
            this.log.in_scope(|| future.set(None));
        }
    }
}

impl<F: Future> Future for InRequest<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let future = this.future;
        this.log.in_scope(|| match future.as_pin_mut() {
            Some(future) => future.poll(cx),
            // Only the drop takes the future, and nothing polls a dropped future.
            None => Poll::Pending,
        })
    }
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn fields(id: i64) -> RequestFields {
        RequestFields {
            node: Arc::from(""),
            session: None,
            method: "tools/call",
            target: None,
            request_id: RequestId::Number(id),
            version: "2026-07-28",
        }
    }

    fn current_id() -> Option<String> {
        with_current(|fields| fields.request_id.to_string())
    }

    #[tokio::test]
    async fn the_fields_are_current_while_their_future_is_polled_and_only_then() {
        let inner = RequestLog::fields(fields(2)).scope(async {
            tokio::task::yield_now().await;
            current_id()
        });
        let outer = RequestLog::fields(fields(1)).scope(async move {
            let first = current_id();
            tokio::task::yield_now().await;
            let nested = inner.await;
            (first, nested, current_id())
        });
        assert_eq!(current_id(), None);
        let seen = outer.await;
        let id = |n: &str| Some(n.to_string());
        assert_eq!(seen, (id("1"), id("2"), id("1")));
        assert_eq!(current_id(), None);
    }

    #[test]
    fn a_future_is_dropped_inside_its_request() {
        struct Probe(Arc<Mutex<Option<Option<String>>>>);
        impl Drop for Probe {
            fn drop(&mut self) {
                *self.0.lock().unwrap() = Some(current_id());
            }
        }
        let seen = Arc::default();
        let probe = Probe(Arc::clone(&seen));
        let future = RequestLog::fields(fields(3)).scope(async move {
            let _probe = probe;
        });
        drop(future);
        assert_eq!(*seen.lock().unwrap(), Some(Some("3".to_string())));
        assert_eq!(current_id(), None);
    }

    #[test]
    fn a_panic_inside_a_request_leaves_the_slot_as_it_was() {
        let mut log = RequestLog::fields(fields(4));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            log.in_scope(|| panic!("a handler panicked"))
        }));
        assert!(panicked.is_err());
        assert_eq!(current_id(), None);
        assert_eq!(log.in_scope(current_id), Some("4".to_string()));
    }
}
