//! A stdio upstream's process: started in a process group of its own (under the
//! [supervisor](super::supervisor) when the binary provides one) and with a run marker in its
//! environment (see [`crate::providers::descendants`]), its stderr kept as a short tail for
//! the server's log, and stopped without leaving anything behind.
//!
//! Its stderr is read as bytes for the whole life of the process: a line is cut at
//! `gateway.stderr_line_bytes` (the rest of it is skipped up to the next newline) and any
//! byte is accepted. Stopping reading would close the pipe, and the upstream's next write
//! would fail with EPIPE, which kills a process that keeps the default SIGPIPE action.
//!
//! Stopping: the connection closes the process's stdin first, which is how a stdio MCP
//! server is asked to exit. Then, with a supervisor, SIGTERM to the supervisor, which gives
//! the command `gateway.shutdown_grace` to exit, SIGTERMs its group, waits again and
//! SIGKILLs it. Without one the server runs the same sequence itself against the group.
//! Either way every process that still carries the run marker is then killed, which
//! reaches the descendants that left the group with `setsid`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::codec::{Encoder, FramedRead, FramedWrite, LinesCodec};

use super::supervisor;
use super::wire::Io;
use crate::metrics::{Limit, Metrics};
use crate::providers::descendants::{
    RUN_MARKER_VAR, RegisteredChild, RunMarker, kill_marked, spawn_registered,
};

/// How long the end of the upstream's stdout waits for its exit status, so the error of a
/// call in flight can name it; a process that closed stdout and lives on is not waited for.
const EXIT_NOTE_WAIT: Duration = Duration::from_secs(1);
/// How long a report of the exit waits for the stderr reader to take the last lines; a
/// descendant may hold the pipe open.
const STDERR_DRAIN_WAIT: Duration = Duration::from_millis(500);

/// How to start one stdio upstream.
#[derive(Debug, Clone)]
pub(crate) struct ChildSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub env_clear: bool,
    pub cwd: PathBuf,
    /// The binary that runs [`supervisor::supervise`], when there is one.
    pub supervisor: Option<PathBuf>,
    pub grace: Duration,
    pub stderr_lines: usize,
    /// `gateway.stderr_line_bytes`: the longest stderr line kept; the rest is skipped.
    pub stderr_line_bytes: usize,
    pub max_message_bytes: usize,
}

/// The last lines an upstream wrote to stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    fn push(&self, line: String, keep: usize) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == keep {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// `"; its stderr ended with: …"`, or nothing when it wrote none. For the server's log
    /// only: stderr may hold paths, secrets and, on a shared process, other callers' data.
    pub fn describe(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            return String::new();
        }
        let text: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; its stderr ended with:\n{}", text.join("\n"))
    }
}

/// Reads stderr to its end, one line at a time, each cut at `max` bytes.
async fn drain_stderr(
    upstream: String,
    mut stderr: ChildStderr,
    tail: Arc<StderrTail>,
    keep: usize,
    max: usize,
    metrics: Arc<Metrics>,
) {
    let mut line: Vec<u8> = Vec::with_capacity(max.min(4096));
    let mut skipping = false;
    let mut chunk = vec![0u8; 8192];
    let finish = |line: &mut Vec<u8>, cut: bool| {
        let mut text = String::from_utf8_lossy(line).into_owned();
        if cut {
            text.push_str(" [cut at gateway.stderr_line_bytes]");
        }
        tracing::debug!(upstream = %upstream, line = %text, "upstream stderr");
        tail.push(text, keep);
        line.clear();
    };
    loop {
        let read = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for piece in chunk[..read].split_inclusive(|&b| b == b'\n') {
            let ends = piece.last() == Some(&b'\n');
            let piece = piece.strip_suffix(b"\n").unwrap_or(piece);
            if !skipping {
                let room = max - line.len();
                line.extend_from_slice(&piece[..piece.len().min(room)]);
                if piece.len() > room {
                    skipping = true;
                    metrics.limit_hit(Limit::StderrLineBytes);
                    crate::log_limit::warn_limited!(
                        upstream = %upstream,
                        max,
                        "an upstream's stderr line is longer than gateway.stderr_line_bytes; the rest of it is skipped"
                    );
                    finish(&mut line, true);
                }
            }
            if ends {
                if !skipping {
                    finish(&mut line, false);
                }
                skipping = false;
            }
        }
    }
    if !line.is_empty() {
        finish(&mut line, false);
    }
}

/// Lines to the upstream's stdin: each message, then a newline.
pub(crate) struct NewlineDelimited;

impl Encoder<Bytes> for NewlineDelimited {
    type Error = std::io::Error;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), Self::Error> {
        dst.reserve(item.len() + 1);
        dst.put(item);
        dst.put_u8(b'\n');
        Ok(())
    }
}

pub(crate) type StdioSink = FramedWrite<ChildStdin, NewlineDelimited>;
pub(crate) type StdioSource = futures_util::stream::BoxStream<'static, std::io::Result<Bytes>>;

/// A running upstream process.
pub(crate) struct Child {
    spawned: RegisteredChild,
    supervised: bool,
    grace: Duration,
    marker: RunMarker,
    pub tail: Arc<StderrTail>,
    stderr: Option<JoinHandle<()>>,
    /// Its exit status as text, once it has exited.
    exit: Arc<watch::Sender<Option<String>>>,
}

/// Starts the process; its stdin and stdout become the connection's transport.
pub(crate) fn spawn(
    upstream: &str,
    spec: &ChildSpec,
    metrics: Arc<Metrics>,
) -> std::io::Result<(Child, Io<StdioSink, StdioSource>)> {
    let mut command = match &spec.supervisor {
        Some(binary) => {
            let mut c = Command::new(binary);
            c.arg(supervisor::SUBCOMMAND)
                .arg(std::process::id().to_string())
                .arg(spec.grace.as_millis().to_string())
                .arg("--")
                .arg(&spec.program)
                .args(&spec.args);
            c
        }
        None => {
            let mut c = Command::new(&spec.program);
            c.args(&spec.args);
            c
        }
    };
    command
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if spec.env_clear {
        command.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
    }
    command.envs(spec.env.iter().map(|(k, v)| (k, v)));
    let marker = RunMarker::new();
    command.env(RUN_MARKER_VAR, marker.value());
    let mut spawned = spawn_registered(&mut command)?;
    let child = &mut spawned.child;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the upstream's pipes are missing"));
    };
    let tail = Arc::new(StderrTail::default());
    let stderr = tokio::spawn(drain_stderr(
        upstream.to_string(),
        stderr,
        Arc::clone(&tail),
        spec.stderr_lines,
        spec.stderr_line_bytes.max(1),
        metrics,
    ));
    let exit = Arc::new(watch::Sender::new(None));
    let io = Io {
        sink: FramedWrite::new(stdin, NewlineDelimited),
        source: lines_of(stdout, spec.max_message_bytes, exit.subscribe()),
    };
    let child = Child {
        spawned,
        supervised: spec.supervisor.is_some(),
        grace: spec.grace,
        marker,
        tail,
        stderr: Some(stderr),
        exit,
    };
    Ok((child, io))
}

/// The upstream's stdout as messages, one per line; a line longer than `max` ends it. Its
/// end waits (briefly) for the exit status, so a connection that ends because the process
/// exited can say how.
fn lines_of(stdout: ChildStdout, max: usize, exit: watch::Receiver<Option<String>>) -> StdioSource {
    let exited = futures_util::stream::once(async move {
        let mut exit = exit;
        let _ = tokio::time::timeout(EXIT_NOTE_WAIT, exit.wait_for(Option::is_some)).await;
        None
    });
    FramedRead::new(stdout, LinesCodec::new_with_max_length(max))
        .map(|line| {
            Some(
                line.map(Bytes::from)
                    .map_err(|e| std::io::Error::other(e.to_string())),
            )
        })
        .chain(exited)
        .filter_map(std::future::ready)
        .boxed()
}

/// What a client is told when an upstream process ended: its name and exit status, never
/// its stderr, which stays in the server's log.
pub(crate) fn describe_exit(upstream: &str, exit: &watch::Receiver<Option<String>>) -> String {
    match exit.borrow().as_deref() {
        Some(status) => {
            format!("; upstream `{upstream}` {status}; its stderr is in the server log")
        }
        None => {
            format!("; upstream `{upstream}` closed its output; its stderr is in the server log")
        }
    }
}

/// `"exited with status 1"`, `"was killed by signal 9"`.
fn status_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => format!("exited ({status})"),
    }
}

impl Child {
    pub fn pid(&self) -> Option<u32> {
        self.spawned.child.id()
    }

    /// The exit status as it becomes known, for [`describe_exit`].
    pub fn exit_note(&self) -> watch::Receiver<Option<String>> {
        self.exit.subscribe()
    }

    /// Waits for the process to exit by itself: its exit status as text.
    pub async fn exited(&mut self) -> String {
        let text = match self.spawned.child.wait().await {
            Ok(status) => status_text(status),
            Err(e) => format!("exited with an unknown status ({e})"),
        };
        self.exit.send_replace(Some(text.clone()));
        text
    }

    /// The exit status if the process has already exited, without waiting.
    pub fn has_exited(&mut self) -> Option<String> {
        let status = self.spawned.child.try_wait().ok()??;
        let text = status_text(status);
        self.exit.send_replace(Some(text.clone()));
        Some(text)
    }

    /// Waits, briefly, for the stderr reader to take the last lines the process wrote.
    pub async fn stderr_drained(&mut self) {
        if let Some(reader) = self.stderr.as_mut() {
            if tokio::time::timeout(STDERR_DRAIN_WAIT, reader)
                .await
                .is_ok()
            {
                self.stderr = None;
            }
        }
    }

    /// Stops the process, whatever it started in its group, and every process that carries
    /// its run marker. Its stdin must be closed already (the connection closes it first).
    pub async fn stop(mut self) {
        self.stop_group().await;
        let marker = self.marker.clone();
        // The sweep reads /proc; it must not block an async worker.
        if let Err(e) = tokio::task::spawn_blocking(move || kill_marked(&marker)).await {
            tracing::warn!(error = %e, "the sweep for an upstream's descendants failed");
        }
    }

    async fn stop_group(&mut self) {
        let Some(pid) = self
            .pid()
            .and_then(|p| i32::try_from(p).ok())
            .map(Pid::from_raw)
        else {
            return; // Already reaped.
        };
        let grace = self.grace;
        let child = &mut self.spawned.child;
        if self.supervised {
            // The supervisor runs the sequence; it has twice the grace period, and a bit.
            let _ = kill(pid, Signal::SIGTERM);
            let limit = grace * 2 + Duration::from_secs(1);
            if tokio::time::timeout(limit, child.wait()).await.is_err() {
                let _ = killpg(pid, Signal::SIGKILL);
                let _ = child.wait().await;
            }
            return;
        }
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            let _ = killpg(pid, Signal::SIGKILL);
            return;
        }
        let _ = killpg(pid, Signal::SIGTERM);
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            let _ = killpg(pid, Signal::SIGKILL);
            let _ = child.wait().await;
        }
        let _ = killpg(pid, Signal::SIGKILL);
    }
}
