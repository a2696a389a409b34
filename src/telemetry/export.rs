//! The export queue and thread between the request spans and the OTLP collector.
//!
//! A finished span goes into a bounded queue with `try_send`, so a request never waits on
//! the collector: when the queue is full the span is dropped and counted in
//! `mcp_telemetry_spans_dropped_total`, as is every span of an export that failed (the
//! collector down, slow past `export_timeout`, or refusing).
//!
//! One thread owns the HTTP client and a current-thread tokio runtime for it: it sends a
//! batch every `export_interval`, or as soon as `max_export_batch_size` spans are waiting,
//! and on flush and shutdown. It sleeps between those (parked) and takes what is queued in
//! one go, rather than waking for each span: a wake-up per request would cost the kernel
//! more than the span itself. A batch is one `ExportTraceServiceRequest` in protobuf
//! (OTLP/HTTP's default encoding), built straight from the records with the
//! `opentelemetry-proto` types.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use prost::Message as _;

use super::span::{Failure, Record};
use crate::config::telemetry::TelemetrySection;
use crate::metrics::spans_dropped;
use crate::protocol::Method;

/// The longest a flush or shutdown waits for the export thread.
const MAX_WAIT: Duration = Duration::from_secs(2);
/// A collector answers an export with a few bytes.
const MAX_REPLY_BYTES: usize = 64 * 1024;
/// OTLP span flags: the parent's remoteness is known (`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`)
/// and it is remote (`SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK`).
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// What the export thread is told.
enum Job {
    Span(Box<Record>),
    /// Export everything queued, then answer.
    Flush(SyncSender<()>),
    Stop(SyncSender<()>),
}

/// Where and how batches go.
pub(super) struct Target {
    pub url: String,
    pub headers: HeaderMap,
    pub service_name: String,
}

/// The queue's sending end; the thread ends when it is stopped or dropped.
#[derive(Debug)]
pub(super) struct Queue {
    jobs: SyncSender<Job>,
    /// Spans queued and not yet taken by the thread.
    waiting: Arc<AtomicUsize>,
    batch: usize,
    thread: std::thread::Thread,
    timeout: Duration,
}

impl Queue {
    /// Starts the export thread.
    pub fn start(target: Target, section: &TelemetrySection) -> std::io::Result<Self> {
        let (jobs, received) = sync_channel(section.max_queue_size);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = reqwest::Client::builder()
            .timeout(section.export_timeout)
            .build()
            .map_err(std::io::Error::other)?;
        let waiting = Arc::new(AtomicUsize::new(0));
        let exporter = Exporter {
            waiting: Arc::clone(&waiting),
            client,
            runtime,
            timeout: section.export_timeout,
            url: target.url,
            headers: target.headers,
            resource: resource(&target.service_name),
            batch: section.max_export_batch_size,
        };
        let interval = section.export_interval;
        let thread = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || exporter.run(&received, interval))?;
        Ok(Queue {
            jobs,
            waiting,
            batch: section.max_export_batch_size,
            thread: thread.thread().clone(),
            timeout: section.export_timeout,
        })
    }

    /// Queues a finished span, or drops and counts it when the queue is full. Wakes the
    /// thread only when a whole batch is waiting.
    pub fn push(&self, record: Box<Record>) {
        if self.jobs.try_send(Job::Span(record)).is_err() {
            spans_dropped().inc();
        } else if self.waiting.fetch_add(1, Ordering::Relaxed) + 1 == self.batch {
            self.thread.unpark();
        }
    }

    /// Exports what is queued; waits at most for one export, and never past 2 s: the
    /// process's exit must not hang on a collector that does not answer.
    pub fn flush(&self) {
        self.ask(Job::Flush);
    }

    /// Exports what is queued and stops the thread (waiting as [`Queue::flush`] does).
    pub fn stop(&self) {
        self.ask(Job::Stop);
    }

    fn ask(&self, job: impl FnOnce(SyncSender<()>) -> Job) {
        let (done, wait) = sync_channel(1);
        if self.jobs.try_send(job(done)).is_ok() {
            self.thread.unpark();
            let _ = wait.recv_timeout(self.timeout.min(MAX_WAIT));
        }
    }
}

struct Exporter {
    waiting: Arc<AtomicUsize>,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    timeout: Duration,
    url: String,
    headers: HeaderMap,
    resource: Resource,
    batch: usize,
}

impl Exporter {
    fn run(&self, jobs: &Receiver<Job>, interval: Duration) {
        let mut spans = Vec::with_capacity(self.batch.min(4096));
        let mut due = Instant::now() + interval;
        loop {
            std::thread::park_timeout(due.saturating_duration_since(Instant::now()));
            loop {
                match jobs.try_recv() {
                    Ok(Job::Span(record)) => {
                        self.waiting.fetch_sub(1, Ordering::Relaxed);
                        spans.push(span(*record));
                        if spans.len() >= self.batch {
                            self.export(&mut spans);
                        }
                    }
                    Ok(Job::Flush(done)) => {
                        self.export(&mut spans);
                        let _ = done.send(());
                    }
                    Ok(Job::Stop(done)) => {
                        self.export(&mut spans);
                        let _ = done.send(());
                        return;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.export(&mut spans);
                        return;
                    }
                }
            }
            if Instant::now() >= due {
                self.export(&mut spans);
                due = Instant::now() + interval;
            }
        }
    }

    fn export(&self, spans: &mut Vec<Span>) {
        if spans.is_empty() {
            return;
        }
        let count = spans.len() as u64;
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(self.resource.clone()),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "mcp-actor".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    spans: std::mem::take(spans),
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        let body = request.encode_to_vec();
        let sent = self
            .runtime
            .block_on(async { tokio::time::timeout(self.timeout, self.post(body)).await });
        let why = match sent {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(_) => format!(
                "no answer within {:?} (telemetry.export_timeout)",
                self.timeout
            ),
        };
        spans_dropped().inc_by(count);
        crate::log_limit::warn_limited!(
            spans = count,
            "spans dropped: the OTLP collector did not take them ({why})"
        );
    }

    async fn post(&self, body: Vec<u8>) -> Result<(), String> {
        let mut response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .header(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-protobuf"),
            )
            .body(body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        // Read the reply (bounded) so the connection can be reused.
        let mut read = 0;
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            read += chunk.len();
            if read > MAX_REPLY_BYTES {
                return Err(format!(
                    "the collector's reply is over {MAX_REPLY_BYTES} bytes"
                ));
            }
        }
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the collector answered {status}"))
        }
    }
}

fn resource(service_name: &str) -> Resource {
    Resource {
        attributes: vec![
            attribute("service.name", service_name.to_owned()),
            attribute("service.version", env!("CARGO_PKG_VERSION").to_owned()),
        ],
        ..Default::default()
    }
}

fn attribute(key: &str, value: String) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(Any::StringValue(value)),
        }),
        ..Default::default()
    }
}

fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The OTLP span of a record, with the MCP semantic conventions' name and attributes.
fn span(record: Record) -> Span {
    let method = record.method.as_str();
    let mut attributes = Vec::with_capacity(7);
    attributes.push(attribute("mcp.method.name", method.to_owned()));
    attributes.push(attribute("mcp.protocol.version", record.version));
    attributes.push(attribute("jsonrpc.request.id", record.request_id));
    if let Some(session) = record.session {
        attributes.push(attribute("mcp.session.id", session));
    }
    let name = match (&record.target, record.method) {
        (Some(target), Method::ToolsCall | Method::PromptsGet) => format!("{method} {target}"),
        _ => method.to_owned(),
    };
    match (record.method, record.target) {
        (Method::ToolsCall, Some(tool)) => {
            attributes.push(attribute("gen_ai.operation.name", "execute_tool".into()));
            attributes.push(attribute("gen_ai.tool.name", tool));
        }
        (Method::PromptsGet, Some(prompt)) => {
            attributes.push(attribute("gen_ai.prompt.name", prompt))
        }
        (Method::ResourcesRead, Some(uri)) => attributes.push(attribute("mcp.resource.uri", uri)),
        _ => {}
    }
    let status = record.failure.map(|failure| match failure {
        Failure::Rpc(code, message) => {
            attributes.push(attribute("error.type", code.to_string()));
            attributes.push(attribute("rpc.response.status_code", code.to_string()));
            Status {
                message,
                code: StatusCode::Error as i32,
            }
        }
        Failure::Tool => {
            attributes.push(attribute("error.type", "tool_error".into()));
            Status {
                message: "the tool reported an error".into(),
                code: StatusCode::Error as i32,
            }
        }
    });
    let (parent_span_id, remote) = match record.parent {
        Some(parent) => (parent.to_bytes().to_vec(), IS_REMOTE),
        None => (Vec::new(), 0),
    };
    Span {
        trace_id: record.trace_id.to_bytes().to_vec(),
        span_id: record.span_id.to_bytes().to_vec(),
        trace_state: record.trace_state.header(),
        parent_span_id,
        flags: u32::from(record.flags.to_u8()) | HAS_IS_REMOTE | remote,
        name,
        kind: SpanKind::Server as i32,
        start_time_unix_nano: unix_nanos(record.start),
        end_time_unix_nano: unix_nanos(record.end),
        attributes,
        status,
        ..Default::default()
    }
}
