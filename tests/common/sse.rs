//! Reading what the server sends back: SSE events one at a time ([`SseReader`]), and whole
//! POST replies, JSON or SSE to the end of the stream ([`read_reply`] into [`Reply`]).

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use sse_stream::{Sse, SseByteStream};

/// A decoded reply to a POST.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub content_type: String,
    /// The JSON-RPC messages in the body (one for JSON, every data event for SSE).
    pub messages: Vec<Value>,
    /// SSE event ids in order (including the priming event's).
    pub event_ids: Vec<String>,
    /// The raw body for JSON replies.
    pub body: Option<Value>,
}

impl Reply {
    /// The response carrying `id`.
    pub fn response(&self, id: &Value) -> Option<&Value> {
        self.messages.iter().find(|m| {
            m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
        })
    }

    pub fn is_sse(&self) -> bool {
        self.content_type.starts_with("text/event-stream")
    }

    /// The JSON-RPC error code of a refusal (a JSON body with `error` and no useful id).
    pub fn error_code(&self) -> Option<i64> {
        self.body.as_ref()?.get("error")?.get("code")?.as_i64()
    }
}

/// One SSE event, decoded.
#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub retry: Option<u64>,
    /// `None` for events without data, `Some(Value::Null)` for an empty data field.
    pub data: Option<Value>,
}

type EventStream = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Reads SSE events from a response incrementally.
pub struct SseReader {
    inner: EventStream,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> SseReader {
        SseReader {
            inner: Box::pin(SseByteStream::new(resp.bytes_stream())),
        }
    }

    /// The next event with an id or data (keep-alive comments are skipped), or `None` when
    /// the stream ends or `wait` passes.
    pub async fn next(&mut self, wait: Duration) -> Option<Event> {
        loop {
            let item = tokio::time::timeout(wait, self.inner.next()).await.ok()??;
            let sse = item.ok()?;
            if sse.id.is_none() && sse.data.is_none() {
                continue;
            }
            let data = sse.data.map(|d| {
                if d.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(&d).expect("event data is JSON")
                }
            });
            return Some(Event {
                id: sse.id,
                retry: sse.retry,
                data,
            });
        }
    }

    /// The next event that carries a JSON-RPC message.
    pub async fn next_message(&mut self, wait: Duration) -> Option<(Option<String>, Value)> {
        loop {
            let event = self.next(wait).await?;
            if let Some(data) = event.data.filter(|d| !d.is_null()) {
                return Some((event.id, data));
            }
        }
    }
}

/// Reads a whole POST reply (JSON or SSE until the stream ends).
pub async fn read_reply(resp: reqwest::Response) -> Reply {
    let status = resp.status();
    let headers = resp.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if content_type.starts_with("text/event-stream") {
        let mut reader = SseReader::new(resp);
        let mut messages = Vec::new();
        let mut event_ids = Vec::new();
        while let Some(event) = reader.next(Duration::from_secs(30)).await {
            if let Some(id) = event.id {
                event_ids.push(id);
            }
            if let Some(data) = event.data.filter(|d| !d.is_null()) {
                messages.push(data);
            }
        }
        return Reply {
            status,
            headers,
            content_type,
            messages,
            event_ids,
            body: None,
        };
    }
    let text = resp.text().await.unwrap_or_default();
    let body: Option<Value> = serde_json::from_str(&text).ok();
    let messages = match &body {
        Some(Value::Array(items)) => items.clone(),
        Some(v) => vec![v.clone()],
        None => Vec::new(),
    };
    Reply {
        status,
        headers,
        content_type,
        messages,
        event_ids: Vec::new(),
        body,
    }
}
