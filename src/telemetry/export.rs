//! [`BoundedExport`]: the span processor between the request spans and the OTLP exporter.
//!
//! A finished span goes into a bounded queue with `try_send`, so a request never waits on
//! the collector: when the queue is full the span is dropped and counted in
//! `mcp_telemetry_spans_dropped_total`, as is every span of an export that failed (the
//! collector down, slow past `export_timeout`, or refusing). The SDK's own batch processor
//! bounds its queue too but keeps that count to itself, which an operator cannot alert on.
//!
//! One thread owns the exporter and a current-thread tokio runtime for its HTTP client: it
//! sends a batch every `export_interval`, or as soon as `max_export_batch_size` spans are
//! waiting, and on flush and shutdown.

use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use crate::config::telemetry::TelemetrySection;
use crate::metrics::spans_dropped;

/// The longest a flush or shutdown waits for the export thread.
const MAX_WAIT: Duration = Duration::from_secs(2);

/// What the export thread is told.
enum Job {
    Span(Box<SpanData>),
    /// Export everything queued, then answer.
    Flush(SyncSender<()>),
    Stop(SyncSender<()>),
}

/// The processor (module docs).
#[derive(Debug)]
pub struct BoundedExport {
    queue: SyncSender<Job>,
    thread: Mutex<Option<JoinHandle<()>>>,
    timeout: Duration,
}

impl BoundedExport {
    /// Starts the export thread around `exporter`, which must already know its resource.
    pub fn start<E: SpanExporter + 'static>(
        exporter: E,
        section: &TelemetrySection,
    ) -> std::io::Result<Self> {
        let (queue, jobs) = sync_channel(section.max_queue_size);
        let batch = section.max_export_batch_size;
        let (interval, timeout) = (section.export_interval, section.export_timeout);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || {
                let exporter = Exporter {
                    inner: exporter,
                    runtime,
                    timeout,
                };
                exporter.run(&jobs, batch, interval);
            })?;
        Ok(BoundedExport {
            queue,
            thread: Mutex::new(Some(thread)),
            timeout,
        })
    }

    /// Flush and shutdown wait this long at most: the process's exit must not hang on a
    /// collector that does not answer (its spans are lost then, as they would be anyway).
    fn ask(&self, job: impl FnOnce(SyncSender<()>) -> Job) -> OTelSdkResult {
        let patience = self.timeout.min(MAX_WAIT);
        let (done, wait) = sync_channel(1);
        self.queue.try_send(job(done)).map_err(|e| match e {
            TrySendError::Full(_) => OTelSdkError::Timeout(Duration::ZERO),
            TrySendError::Disconnected(_) => OTelSdkError::AlreadyShutdown,
        })?;
        wait.recv_timeout(patience)
            .map_err(|_| OTelSdkError::Timeout(patience))
    }
}

impl SpanProcessor for BoundedExport {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.queue.try_send(Job::Span(Box::new(span)))
        {
            spans_dropped().inc();
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Job::Flush)
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        let outcome = self.ask(Job::Stop);
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread.filter(|_| outcome.is_ok()) {
            let _ = thread.join();
        }
        outcome
    }
}

struct Exporter<E> {
    inner: E,
    runtime: tokio::runtime::Runtime,
    timeout: Duration,
}

impl<E: SpanExporter> Exporter<E> {
    fn run(&self, jobs: &Receiver<Job>, batch: usize, interval: Duration) {
        let mut spans = Vec::with_capacity(batch);
        let mut due = Instant::now() + interval;
        loop {
            let wait = due.saturating_duration_since(Instant::now());
            match jobs.recv_timeout(wait) {
                Ok(Job::Span(span)) => {
                    spans.push(*span);
                    if spans.len() >= batch {
                        self.export(&mut spans);
                    }
                }
                Ok(Job::Flush(done)) => {
                    self.drain(jobs, &mut spans, batch);
                    let _ = done.send(());
                }
                Ok(Job::Stop(done)) => {
                    self.drain(jobs, &mut spans, batch);
                    let _ = self.inner.shutdown();
                    let _ = done.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.export(&mut spans);
                    due = Instant::now() + interval;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.export(&mut spans);
                    return;
                }
            }
        }
    }

    /// Exports what is queued now, in batches.
    fn drain(&self, jobs: &Receiver<Job>, spans: &mut Vec<SpanData>, batch: usize) {
        while let Ok(Job::Span(span)) = jobs.try_recv() {
            spans.push(*span);
            if spans.len() >= batch {
                self.export(spans);
            }
        }
        self.export(spans);
    }

    fn export(&self, spans: &mut Vec<SpanData>) {
        if spans.is_empty() {
            return;
        }
        let count = spans.len() as u64;
        let batch = std::mem::take(spans);
        let sent = self
            .runtime
            .block_on(async { tokio::time::timeout(self.timeout, self.inner.export(batch)).await });
        if !matches!(sent, Ok(Ok(()))) {
            spans_dropped().inc_by(count);
            crate::log_limit::warn_limited!(
                spans = count,
                "spans dropped: the OTLP collector did not take them ({})",
                match sent {
                    Ok(Err(e)) => e.to_string(),
                    _ => format!(
                        "no answer within {:?} (telemetry.export_timeout)",
                        self.timeout
                    ),
                }
            );
        }
    }
}

/// The OTLP exporter's HTTP client: the crate's reqwest, with the export timeout and a
/// bounded reply (a collector answers an export with a few bytes).
#[derive(Debug)]
pub struct OtlpClient(pub reqwest::Client);

const MAX_REPLY_BYTES: usize = 64 * 1024;

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OtlpClient {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let (parts, body) = request.into_parts();
        let mut response = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let mut reply = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if reply.len() + chunk.len() > MAX_REPLY_BYTES {
                return Err(
                    format!("the collector's reply is over {MAX_REPLY_BYTES} bytes").into(),
                );
            }
            reply.extend_from_slice(&chunk);
        }
        Ok(http::Response::builder()
            .status(status)
            .body(Bytes::from(reply))?)
    }
}
