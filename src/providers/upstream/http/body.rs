//! Reading what an HTTP upstream sends back: a JSON body, or the events of an SSE stream
//! (a POST's or the GET's), each bounded by `gateway.max_message_bytes` *while* it is read.
//!
//! The SSE parser (`sse-stream`) buffers whatever it has not framed yet, so a line that
//! never ends would grow its buffer without limit. The body is therefore counted before it
//! reaches the parser: the bytes since the last blank line (an event, and so every line in
//! it) may not pass the limit, and the stream fails the moment they do. A JSON body is
//! counted whole. Either way the call the body answers fails at once with an error naming
//! the limit, rather than waiting for its timeout with a message cut in half.

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc;

use super::HttpSpec;
use super::client::Response;
use crate::jsonrpc::{self, RequestId, RpcError, codes};
use crate::metrics::Limit;
use crate::providers::upstream::route::{Incoming, Route};

pub(super) type Incomings = mpsc::Sender<std::io::Result<Incoming>>;

/// Why a body was not read to its end.
#[derive(Debug, thiserror::Error)]
pub(super) enum BodyError {
    #[error(
        "the upstream sent a message over gateway.max_message_bytes ({0} bytes); raise the \
         limit or make the upstream's answer smaller"
    )]
    Oversized(usize),
    #[error("reading the upstream's response failed: {0}")]
    Read(#[from] hyper::Error),
}

/// Counts a body's bytes against the limit as it streams past.
struct Meter {
    max: usize,
    sse: bool,
    /// Bytes of the current SSE event, or of the whole JSON body.
    held: usize,
    at_line_start: bool,
    after_cr: bool,
}

impl Meter {
    fn new(max: usize, sse: bool) -> Meter {
        Meter {
            max,
            sse,
            held: 0,
            at_line_start: true,
            after_cr: false,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> Result<(), BodyError> {
        if !self.sse {
            self.held = self.held.saturating_add(chunk.len());
            return self.check();
        }
        for &byte in chunk {
            match byte {
                // `\r\n` is one line end (WHATWG SSE: a line ends at CRLF, LF or CR).
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    if self.at_line_start {
                        self.held = 0; // A blank line: the event is complete.
                    }
                    self.at_line_start = true;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.at_line_start = false;
                    self.after_cr = false;
                    self.held += 1;
                    self.check()?;
                }
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), BodyError> {
        match self.held > self.max {
            true => Err(BodyError::Oversized(self.max)),
            false => Ok(()),
        }
    }
}

/// The body's chunks, failing with [`BodyError::Oversized`] at the limit.
fn metered(
    response: Response,
    max: usize,
    sse: bool,
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send + Unpin {
    let mut meter = Meter::new(max, sse);
    http_body_util::BodyDataStream::new(response.into_body()).map(move |chunk| {
        let chunk = chunk?;
        meter.feed(&chunk)?;
        Ok(chunk)
    })
}

/// A JSON-RPC error for request `id`, as if the upstream had sent it.
pub(super) async fn fail(incoming: &Incomings, id: Option<&RequestId>, message: String) {
    if let Some(id) = id {
        let error = RpcError::new(codes::INTERNAL_ERROR, message);
        let bytes = jsonrpc::encode_response(Some(id), &Err(error));
        let _ = incoming.send(Ok(bytes.into())).await;
    }
}

fn oversized(upstream: &str, spec: &HttpSpec, error: &BodyError) {
    if matches!(error, BodyError::Oversized(_)) {
        spec.metrics.limit_hit(Limit::UpstreamMessageBytes);
        crate::log_limit::warn_limited!(upstream, "{error}");
    }
}

/// Passes on what a response carries, by `route`. A body over the limit, or a stream that
/// ends before the response to `id`, fails that request.
pub(super) async fn deliver(
    (upstream, spec): (&str, &HttpSpec),
    response: Response,
    id: Option<&RequestId>,
    incoming: &Incomings,
    route: Route,
) {
    let max = spec.max_message_bytes;
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        // A small answer comes in one chunk, which is passed on as it is, uncopied.
        let mut body = BodyBytes::default();
        let mut chunks = metered(response, max, false);
        while let Some(chunk) = chunks.next().await {
            match chunk {
                Ok(chunk) => body.push(chunk),
                Err(e) => {
                    oversized(upstream, spec, &e);
                    return fail(incoming, id, e.to_string()).await;
                }
            }
        }
        let bytes = body.into_bytes();
        if !bytes.trim_ascii().is_empty() {
            let _ = incoming.send(Ok(Incoming { bytes, route })).await;
        }
        return;
    }
    let mut answered = id.is_none();
    let mut cut = None;
    let mut events = sse_stream::SseByteStream::new(metered(response, max, true));
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                cut = Some(describe(upstream, spec, e));
                break;
            }
        };
        let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
            continue;
        };
        if let Some(id) = id {
            let head: Option<ReceivedHead> = serde_json::from_str(&data).ok();
            answered |= head.is_some_and(|h| h.method.is_none() && h.id.as_ref() == Some(id));
        }
        let bytes = Bytes::from(data);
        if incoming.send(Ok(Incoming { bytes, route })).await.is_err() {
            return;
        }
    }
    if !answered {
        let why =
            cut.unwrap_or_else(|| "the upstream's response stream ended before its answer".into());
        fail(incoming, id, why).await;
    }
}

/// The id and method of a message the upstream sent, to tell the answer a POST waits for
/// from the requests and notifications before it.
#[derive(serde::Deserialize)]
struct ReceivedHead {
    id: Option<RequestId>,
    method: Option<serde::de::IgnoredAny>,
}

/// A body's chunks joined: the one chunk itself, or a copy of them all.
#[derive(Default)]
struct BodyBytes {
    first: Option<Bytes>,
    joined: Vec<u8>,
}

impl BodyBytes {
    fn push(&mut self, chunk: Bytes) {
        match self.first.take() {
            None if self.joined.is_empty() => self.first = Some(chunk),
            first => {
                if let Some(first) = first {
                    self.joined.extend_from_slice(&first);
                }
                self.joined.extend_from_slice(&chunk);
            }
        }
    }

    fn into_bytes(self) -> Bytes {
        self.first.unwrap_or_else(|| Bytes::from(self.joined))
    }
}

fn describe(upstream: &str, spec: &HttpSpec, error: sse_stream::Error) -> String {
    if let sse_stream::Error::Body(inner) = &error {
        if let Some(body) = inner.downcast_ref::<BodyError>() {
            oversized(upstream, spec, body);
            return body.to_string();
        }
    }
    format!("the upstream's response stream broke: {error}")
}

/// The body as text, cut at `max` bytes: for the error of a refused request.
pub(super) async fn read_limited(response: Response, max: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = http_body_util::BodyDataStream::new(response.into_body());
    while let Some(Ok(chunk)) = chunks.next().await {
        let room = max.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= max {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}
