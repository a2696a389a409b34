//! A request's SERVER span: begun when its handler's future is made ([`begin`]), ended
//! when that future completes or is dropped, then handed to the export queue.
//!
//! The span is a plain record, not a `tracing` span: a request's span is one fixed shape
//! (the conventions' name and attributes), and building it straight costs a few hundred
//! instructions where a generic span layer costs thousands (every log field copied into an
//! attribute, a context attached on each poll, a builder per span). The attributes are
//! written out on the export thread, off the request's path.
//!
//! While the handler runs, its span's context is the task's current trace context
//! ([`current`]), which the gateway and HTTP tools pass on to what they call.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::SystemTime;

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState,
};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SamplingDecision, ShouldSample};
use serde_json::Value;
use tokio::task::futures::TaskLocalFuture;

use super::{Operation, context, cut};
use crate::jsonrpc::RpcError;
use crate::protocol::{Answer, Method};

tokio::task_local! {
    /// The trace context of the request whose handler this task is running.
    static CURRENT: Option<SpanContext>;
}

/// The trace context of the request being handled on this task, if telemetry is on.
pub fn current() -> Option<SpanContext> {
    CURRENT.try_with(Clone::clone).ok().flatten()
}

/// A span's target (tool or prompt name) is cut to this many bytes: it comes from the
/// client, and a collector indexes span names.
const MAX_TARGET_BYTES: usize = 128;
/// A resource URI attribute is cut to this many bytes.
const MAX_URI_BYTES: usize = 2048;
/// An error message on a span's status is cut to this many bytes.
const MAX_MESSAGE_BYTES: usize = 512;
/// `jsonrpc.request.id` is cut to this many bytes: a client may send a string id as long as
/// its body, and a queued span must stay small whatever it sent (the queue is bounded in
/// spans, so each span must be bounded in bytes).
const MAX_REQUEST_ID_BYTES: usize = 256;

/// One finished (or running) request span, as the exporter encodes it.
#[derive(Debug)]
pub(super) struct Record {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// The caller's span, from `_meta` or the `traceparent` header.
    pub parent: Option<SpanId>,
    pub flags: TraceFlags,
    pub trace_state: TraceState,
    pub method: Method,
    /// The tool or prompt name (`tools/call`, `prompts/get`) or the resource URI
    /// (`resources/read`), cut.
    pub target: Option<String>,
    pub session: Option<String>,
    pub version: String,
    pub request_id: String,
    pub start: SystemTime,
    pub end: SystemTime,
    pub failure: Option<Failure>,
}

/// Why a request failed, for the span's status and `error.type`.
#[derive(Debug)]
pub(super) enum Failure {
    /// A JSON-RPC error: its code and message.
    Rpc(i64, String),
    /// A tool result with `isError: true`.
    Tool,
}

/// What the sampler and id generator of the running pipeline are.
pub(super) struct Sampling {
    pub sampler: opentelemetry_sdk::trace::Sampler,
    pub ids: RandomIdGenerator,
}

/// A request's span, begun: [`Begun::wrap`] runs the handler's future in it.
#[derive(Debug)]
pub struct Begun {
    context: Option<SpanContext>,
    record: Option<Box<Record>>,
}

/// Begins the span of `op` (nothing with telemetry off). Made before the handler's future,
/// which may take ownership of what `op` borrows.
pub fn begin(op: Operation<'_>) -> Begun {
    let (context, record) = match super::pipeline() {
        Some(pipeline) => start(&pipeline.sampling, op),
        None => (None, None),
    };
    Begun { context, record }
}

impl Begun {
    /// `future`, run as this span: with telemetry off it is polled as is.
    pub fn wrap<F>(self, future: F) -> Traced<F>
    where
        F: Future<Output = Result<Answer, RpcError>>,
    {
        Traced {
            inner: CURRENT.scope(self.context, future),
            record: self.record,
        }
    }
}

/// The span's context (for the task) and, when it is sampled, its record.
fn start(sampling: &Sampling, op: Operation<'_>) -> (Option<SpanContext>, Option<Box<Record>>) {
    let params = op.params.and_then(Value::as_object);
    let parent = context::from_meta(params.and_then(|p| p.get("_meta")));
    let parent_span = parent.as_ref().map(|cx| cx.span().span_context().clone());
    let trace_id = parent_span
        .as_ref()
        .map_or_else(|| sampling.ids.new_trace_id(), SpanContext::trace_id);
    let decision = sampling.sampler.should_sample(
        parent.as_ref(),
        trace_id,
        op.method.as_str(),
        &SpanKind::Server,
        &[],
        &[],
    );
    let sampled = decision.decision == SamplingDecision::RecordAndSample;
    let flags = if sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    let span_id = sampling.ids.new_span_id();
    let context = SpanContext::new(
        trace_id,
        span_id,
        flags,
        false,
        decision.trace_state.clone(),
    );
    if !sampled {
        return (Some(context), None);
    }
    let field = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    let target = match op.method {
        Method::ToolsCall | Method::PromptsGet => field("name").map(|n| cut(n, MAX_TARGET_BYTES)),
        Method::ResourcesRead => field("uri").map(|u| cut(u, MAX_URI_BYTES)),
        _ => None,
    };
    let now = SystemTime::now();
    let record = Record {
        trace_id,
        span_id,
        parent: parent_span.map(|p| p.span_id()),
        flags,
        trace_state: decision.trace_state,
        method: op.method,
        target: target.map(str::to_owned),
        session: op.session.map(str::to_owned),
        version: op.version.to_owned(),
        request_id: request_id(op.request_id),
        start: now,
        end: now,
        failure: None,
    };
    (Some(context), Some(Box::new(record)))
}

/// The request id as the span carries it, cut.
fn request_id(id: &crate::jsonrpc::RequestId) -> String {
    let mut text = id.to_string();
    let kept = cut(&text, MAX_REQUEST_ID_BYTES).len();
    text.truncate(kept);
    text
}

impl Record {
    fn set_outcome(&mut self, outcome: &Result<Answer, RpcError>) {
        self.failure = match outcome {
            Err(error) => Some(Failure::Rpc(
                error.code,
                cut(&error.message, MAX_MESSAGE_BYTES).to_owned(),
            )),
            Ok(result) if result.is_error() => Some(Failure::Tool),
            Ok(_) => None,
        };
    }
}

/// Ends `record` now and queues it for export.
fn finish(mut record: Box<Record>) {
    record.end = SystemTime::now();
    if let Some(pipeline) = super::pipeline() {
        pipeline.queue(record);
    }
}

pin_project_lite::pin_project! {
    /// A handler's future with its span ([`Begun::wrap`]). Dropped before it completes (the
    /// request was cancelled, or its session ended), the span ends with no status.
    pub struct Traced<F> {
        #[pin]
        inner: TaskLocalFuture<Option<SpanContext>, F>,
        record: Option<Box<Record>>,
    }

    impl<F> PinnedDrop for Traced<F> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(record) = this.project().record.take() {
                finish(record);
            }
        }
    }
}

impl<F> Future for Traced<F>
where
    F: Future<Output = Result<Answer, RpcError>>,
{
    type Output = Result<Answer, RpcError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = std::task::ready!(this.inner.poll(cx));
        if let Some(mut record) = this.record.take() {
            record.set_outcome(&outcome);
            finish(record);
        }
        Poll::Ready(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::RequestId;

    #[test]
    fn a_request_id_of_any_length_is_kept_to_its_bound() {
        let long = RequestId::String("é".repeat(100_000).into());
        let kept = request_id(&long);
        assert!(kept.len() <= MAX_REQUEST_ID_BYTES, "{}", kept.len());
        assert!(kept.len() >= MAX_REQUEST_ID_BYTES - 3);
        assert_eq!(request_id(&RequestId::Number(7)), "7");
    }
}
