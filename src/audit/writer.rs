//! The audit writer: a bounded queue and the one thread that owns the file.
//!
//! A thread rather than a tokio task because every write is blocking file I/O, and the
//! queue is a `sync_channel` so the request path only ever `try_send`s: a full queue (the
//! disk is slower than the calls) drops the line and counts it instead of waiting. The
//! thread flushes whenever the queue runs empty, so a line is on disk soon after its call
//! without a flush per line under load.
//!
//! SIGHUP reopens the file ([`reopen_all`], called by the reload task): after logrotate
//! moves it away, the lines already queued go to the moved file and every later one to a
//! new file at the configured path, so none is lost.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, Weak};

use crate::config::audit::AuditSection;
use crate::log_limit::warn_limited;
use crate::metrics::{Limit, Metrics};

use super::line::Line;

enum Job {
    Line(Vec<u8>),
    Reopen,
}

pub(super) struct Writer {
    tx: SyncSender<Job>,
    /// Set when a reopen could not be queued (the queue was full): the thread reopens
    /// before its next line.
    reopen: Arc<AtomicBool>,
    node: Arc<str>,
    redact: BTreeSet<String>,
    max_line_bytes: usize,
    metrics: Arc<Metrics>,
}

/// Every open audit log of the process, for [`reopen_all`].
static OPEN: Mutex<Vec<Weak<Writer>>> = Mutex::new(Vec::new());

/// Reopens every audit file of this process at its configured path (after logrotate
/// moved it). `stdout` is left as it is.
pub fn reopen_all() {
    let Ok(mut open) = OPEN.lock() else {
        return;
    };
    open.retain(|w| w.strong_count() > 0);
    for writer in open.iter().filter_map(Weak::upgrade) {
        if writer.tx.try_send(Job::Reopen).is_err() {
            writer.reopen.store(true, Ordering::Release);
        }
    }
}

enum Sink {
    Stdout,
    File(PathBuf, BufWriter<File>),
}

impl Sink {
    fn open(path: &str) -> io::Result<Sink> {
        if path == "stdout" {
            return Ok(Sink::Stdout);
        }
        let path = PathBuf::from(path);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Sink::File(path, BufWriter::new(file)))
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().lock().write_all(bytes),
            Sink::File(_, file) => file.write_all(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout => io::stdout().lock().flush(),
            Sink::File(_, file) => file.flush(),
        }
    }

    fn reopen(&mut self) {
        let Sink::File(path, file) = self else {
            return;
        };
        if let Err(e) = file.flush() {
            warn_limited!(path = %path.display(), error = %e, "audit log: flush before reopen failed");
        }
        match OpenOptions::new().create(true).append(true).open(&*path) {
            Ok(new) => {
                *file = BufWriter::new(new);
                tracing::info!(path = %path.display(), "audit log reopened");
            }
            Err(e) => {
                warn_limited!(path = %path.display(), error = %e, "audit log: reopen failed; writing on to the old file")
            }
        }
    }
}

impl Writer {
    /// Opens `path` (failing now, at startup, when it cannot be) and starts the thread.
    pub fn start(
        path: &str,
        section: &AuditSection,
        node: &str,
        metrics: Arc<Metrics>,
    ) -> io::Result<Arc<Writer>> {
        let sink = Sink::open(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot open the audit log {path} (audit.path): {e}"),
            )
        })?;
        let (tx, rx) = sync_channel(section.queue);
        let reopen = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&reopen);
        std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || run(sink, rx, &flag))?;
        let writer = Arc::new(Writer {
            tx,
            reopen,
            node: Arc::from(node),
            redact: section.redact.iter().cloned().collect(),
            max_line_bytes: section.max_line_bytes,
            metrics,
        });
        if let Ok(mut open) = OPEN.lock() {
            open.push(Arc::downgrade(&writer));
        }
        Ok(writer)
    }

    pub fn node(&self) -> Arc<str> {
        Arc::clone(&self.node)
    }

    pub fn redact(&self) -> &BTreeSet<String> {
        &self.redact
    }

    /// Queues `line`, or drops and counts it when the queue is full. Never waits.
    pub fn write(&self, mut line: Line) {
        let Some(bytes) = line.encode(self.max_line_bytes) else {
            return self.dropped("the line exceeds audit.max_line_bytes");
        };
        match self.tx.try_send(Job::Line(bytes)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.dropped("the queue is full (audit.queue)"),
            Err(TrySendError::Disconnected(_)) => self.dropped("the writer has stopped"),
        }
    }

    fn dropped(&self, why: &'static str) {
        self.metrics.audit_line_dropped();
        self.metrics.limit_hit(Limit::AuditQueue);
        warn_limited!(reason = why, "audit line dropped");
    }
}

fn run(mut sink: Sink, rx: Receiver<Job>, reopen: &AtomicBool) {
    loop {
        let job = match rx.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Empty) => {
                if let Err(e) = sink.flush() {
                    warn_limited!(error = %e, "audit log: flush failed");
                }
                match rx.recv() {
                    Ok(job) => job,
                    Err(_) => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
        };
        if reopen.swap(false, Ordering::AcqRel) {
            sink.reopen();
        }
        match job {
            Job::Reopen => sink.reopen(),
            Job::Line(bytes) => {
                if let Err(e) = sink.write(&bytes) {
                    warn_limited!(error = %e, "audit log: write failed; the line is lost");
                }
            }
        }
    }
    let _ = sink.flush();
}
