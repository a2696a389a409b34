//! Turning a stream attachment into an HTTP reply: one JSON body, or SSE.
//!
//! In `auto` mode the reply waits for the stream's first message. If every message up to
//! the end of the stream is a response, the reply is one JSON body (an array for a
//! 2025-03-26 batch). As soon as a notification or server→client request arrives, the reply
//! becomes an SSE stream that carries what was buffered and everything after. Each
//! response travels only on the exchange that carries its id: the attachment belongs to
//! this POST's stream alone.
//!
//! SSE framing uses the `sse-stream` crate because the 2025-11-25 priming event needs an
//! *empty* `data` field, which axum's `Event` cannot express.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use sse_stream::{KeepAlive, Sse, SseBody, Timer};
use tokio_stream::wrappers::ReceiverStream;

use crate::config::{HttpSection, ResponseMode};
use crate::metrics::Metrics;
use crate::session::streams::{Attachment, OutEvent};

/// Answers a POST's requests from their stream.
pub(crate) async fn respond_to_post(
    mut attachment: Attachment,
    config: &HttpSection,
    metrics: &Metrics,
    is_batch: bool,
) -> Response {
    if config.response_mode == ResponseMode::Sse {
        return sse_response(attachment, config, metrics);
    }
    let Some(mut live) = attachment.live.take() else {
        return json_response(std::mem::take(&mut attachment.backlog), is_batch);
    };
    let mut buffered = std::mem::take(&mut attachment.backlog);
    while let Some(event) = live.recv().await {
        let switch = !event.is_response && config.response_mode == ResponseMode::Auto;
        buffered.push(event);
        if switch {
            attachment.backlog = buffered;
            attachment.live = Some(live);
            return sse_response(attachment, config, metrics);
        }
    }
    json_response(buffered, is_batch)
}

fn json_response(events: Vec<OutEvent>, is_batch: bool) -> Response {
    let responses: Vec<Bytes> = events
        .into_iter()
        .filter(|e| e.is_response)
        .map(|e| e.data)
        .collect();
    if responses.is_empty() {
        // Every request was cancelled: nothing to answer (spec `cancellation.mdx`).
        return sse_headers(Body::empty());
    }
    let body = if is_batch {
        let mut buf =
            BytesMut::with_capacity(responses.iter().map(|r| r.len() + 1).sum::<usize>() + 2);
        buf.put_u8(b'[');
        for (i, r) in responses.iter().enumerate() {
            if i > 0 {
                buf.put_u8(b',');
            }
            buf.put_slice(r);
        }
        buf.put_u8(b']');
        buf.freeze()
    } else {
        responses.into_iter().next().unwrap_or_default()
    };
    json(StatusCode::OK, body)
}

/// A JSON body (one JSON-RPC message, or a batch's array) with its status.
pub(crate) fn json(status: StatusCode, body: Bytes) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// An SSE reply: the priming event (2025-11-25), the backlog, then live events until the
/// stream ends or the connection is replaced.
pub(crate) fn sse_response(
    attachment: Attachment,
    config: &HttpSection,
    metrics: &Metrics,
) -> Response {
    sse_stream(attachment, config, metrics, false)
}

/// A GET's SSE reply. It ends only when its session does (a drain, an idle timeout) or a
/// newer GET replaces it, so its last event is a `retry` hint: how long to wait before the
/// client reconnects (and, when the session is gone, learns so with a 404).
pub(crate) fn get_sse_response(
    attachment: Attachment,
    config: &HttpSection,
    metrics: &Metrics,
) -> Response {
    sse_stream(attachment, config, metrics, true)
}

fn sse_stream(
    attachment: Attachment,
    config: &HttpSection,
    metrics: &Metrics,
    retry_at_end: bool,
) -> Response {
    let Attachment {
        priming_id,
        backlog,
        live,
        ..
    } = attachment;
    let retry_ms = config.sse_retry.as_millis() as u64;
    let priming = priming_id.map(|at| Sse {
        id: Some(at.event_id()),
        data: Some(String::new()),
        retry: Some(retry_ms),
        event: None,
    });
    // Events without data are the actor's "switch to SSE" signal (see
    // `Stream::close_for_polling`); the priming event above already says what they mean.
    let carried = |e: &OutEvent| futures_util::future::ready(!e.data.is_empty());
    let head = futures_util::stream::iter(priming).chain(
        futures_util::stream::iter(backlog)
            .filter(carried)
            .map(to_sse),
    );
    let last = retry_at_end.then_some(Sse {
        id: None,
        data: None,
        retry: Some(retry_ms),
        event: None,
    });
    let events = match live {
        Some(rx) => head
            .chain(ReceiverStream::new(rx).filter(carried).map(to_sse))
            .chain(futures_util::stream::iter(last))
            .boxed(),
        None => head.chain(futures_util::stream::iter(last)).boxed(),
    };
    let events = counted(events, metrics).map(Ok::<_, Infallible>);
    let keep_alive = KeepAlive::new().interval(config.sse_keep_alive);
    let body = SseBody::<_, TokioTimer>::new_keep_alive(events, keep_alive);
    sse_headers(Body::new(body))
}

/// An SSE reply of messages without event ids (2026-07-28), with keep-alive comments.
pub(crate) fn sse_of_messages(
    messages: futures_util::stream::BoxStream<'static, Bytes>,
    config: &HttpSection,
    metrics: &Metrics,
) -> Response {
    let events = counted(messages, metrics).map(|data| {
        Ok::<_, Infallible>(Sse {
            id: None,
            // Payloads are serde_json output, hence valid UTF-8 on one line.
            data: Some(String::from_utf8_lossy(&data).into_owned()),
            retry: None,
            event: None,
        })
    });
    let keep_alive = KeepAlive::new().interval(config.sse_keep_alive);
    sse_headers(Body::new(SseBody::<_, TokioTimer>::new_keep_alive(
        events, keep_alive,
    )))
}

/// `events`, counted in `mcp_sse_streams_open` until the response body drops it.
fn counted<S: futures_util::Stream>(
    events: S,
    metrics: &Metrics,
) -> impl futures_util::Stream<Item = S::Item> + use<S> {
    let open = metrics.sse_stream_open();
    events.map(move |event| {
        let _open = &open;
        event
    })
}

fn to_sse(event: OutEvent) -> Sse {
    let id = event.event_id();
    // Payloads are serde_json output, hence valid UTF-8 on one line.
    let data = String::from_utf8_lossy(&event.data).into_owned();
    Sse {
        id: Some(id),
        data: Some(data),
        retry: None,
        event: None,
    }
}

fn sse_headers(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The keep-alive timer for `sse-stream`, on tokio's clock.
struct TokioTimer(Pin<Box<tokio::time::Sleep>>);

impl Future for TokioTimer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl Timer for TokioTimer {
    fn reset(mut self: Pin<&mut Self>, instant: std::time::Instant) {
        self.0
            .as_mut()
            .reset(tokio::time::Instant::from_std(instant));
    }

    fn from_duration(duration: Duration) -> Self {
        TokioTimer(Box::pin(tokio::time::sleep(duration)))
    }
}
