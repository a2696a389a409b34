//! A stdio upstream's process: started in a process group of its own (under the
//! [supervisor](super::supervisor) when the binary provides one), its stderr kept as a short
//! tail for error reports, and stopped without leaving anything behind.
//!
//! Stopping: the connection closes the process's stdin first, which is how a stdio MCP
//! server is asked to exit. Then, with a supervisor, SIGTERM to the supervisor, which gives
//! the command `gateway.shutdown_grace` to exit, SIGTERMs its group, waits again and
//! SIGKILLs it. Without one the server runs the same sequence itself against the group.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::StreamExt;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio_util::codec::{Encoder, FramedRead, FramedWrite, LinesCodec};

use super::supervisor;
use super::wire::Io;
use crate::providers::descendants::{RegisteredChild, spawn_registered};

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

    /// `"; its stderr ended with: …"`, or nothing when it wrote none.
    pub fn describe(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            return String::new();
        }
        let text: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!("; its stderr ended with:\n{}", text.join("\n"))
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
    pub tail: Arc<StderrTail>,
}

/// Starts the process; its stdin and stdout become the connection's transport.
pub(crate) fn spawn(
    upstream: &str,
    spec: &ChildSpec,
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
    let mut spawned = spawn_registered(&mut command)?;
    let child = &mut spawned.child;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the upstream's pipes are missing"));
    };
    let tail = Arc::new(StderrTail::default());
    let keep = spec.stderr_lines;
    let name = upstream.to_string();
    let sink = Arc::clone(&tail);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(upstream = %name, line = %line, "upstream stderr");
            sink.push(line, keep);
        }
    });
    let io = Io {
        sink: FramedWrite::new(stdin, NewlineDelimited),
        source: lines_of(stdout, spec.max_message_bytes),
    };
    let child = Child {
        spawned,
        supervised: spec.supervisor.is_some(),
        grace: spec.grace,
        tail,
    };
    Ok((child, io))
}

/// The upstream's stdout as messages, one per line; a line longer than `max` ends it.
fn lines_of(stdout: ChildStdout, max: usize) -> StdioSource {
    FramedRead::new(stdout, LinesCodec::new_with_max_length(max))
        .map(|line| {
            line.map(Bytes::from)
                .map_err(|e| std::io::Error::other(e.to_string()))
        })
        .boxed()
}

impl Child {
    pub fn pid(&self) -> Option<u32> {
        self.spawned.child.id()
    }

    /// Waits for the process to exit by itself: its exit status as text.
    pub async fn exited(&mut self) -> String {
        match self.spawned.child.wait().await {
            Ok(status) => status.to_string(),
            Err(e) => format!("unknown status ({e})"),
        }
    }

    /// Stops the process and whatever it started in its group. Its stdin must be closed
    /// already (the connection closes it first).
    pub async fn stop(mut self) {
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
