//! The [`ClientLink`] of a stateless request: notifications go to that request's own
//! response stream, and server→client requests become input requests (MRTR).
//!
//! A handler that asks the client (`elicit`, `sample`, `list_roots`) gets the answer if the
//! retry brought it; otherwise the request is recorded and the handler gets
//! [`ClientRequestError::InputRequired`], which ends this run. Inputs are keyed by the order
//! in which the handler asks (`input-0`, `input-1`, ...), so a handler that runs again from
//! the start asks the same questions under the same keys and receives the answers in turn.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::context::{ClientLink, ClientRequestError, Notice};
use crate::jsonrpc::{self, RequestId};
use crate::protocol::{LogLevel, object};

/// Input requests one run may collect before further asks are dropped: a handler that
/// loops on unanswered input must not grow the reply without bound.
pub(crate) const MAX_INPUT_REQUESTS: usize = 16;

/// What a run produces: notifications, then its final response (with its error code, if
/// it is an error, from which the transport picks a status).
pub(crate) enum Frame {
    Notification(Bytes),
    Final { body: Bytes, error: Option<i64> },
}

/// Whether [`ClientLink::start_task`] turns this run into a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskStart {
    /// No task can start here (the tool or the client does not take part in tasks), or
    /// the run already is a task: the handler continues.
    Continue,
    /// The handler may start its task: the run ends and the call becomes a task.
    Allowed,
}

/// What a finished run asked the client for, keyed as the handler asked (`input-0`, ...):
/// the `inputRequests` of an `input_required` result, or of a task waiting on input. The
/// run is over, so everything it asked is in the channel already.
pub(crate) fn take_input_requests(
    needed: &mut mpsc::Receiver<(String, Value)>,
) -> Map<String, Value> {
    let mut inputs = Map::new();
    while let Ok((key, input)) = needed.try_recv() {
        inputs.insert(key, input);
    }
    inputs
}

pub(crate) struct StatelessLink {
    out: mpsc::Sender<Frame>,
    log_level: Option<LogLevel>,
    answers: BTreeMap<String, Value>,
    asked: AtomicUsize,
    needed: mpsc::Sender<(String, Value)>,
    missing_capability: OnceLock<&'static str>,
    task_start: TaskStart,
    task_started: AtomicBool,
}

impl StatelessLink {
    pub fn new(
        out: mpsc::Sender<Frame>,
        log_level: Option<LogLevel>,
        answers: BTreeMap<String, Value>,
        needed: mpsc::Sender<(String, Value)>,
    ) -> Self {
        StatelessLink {
            out,
            log_level,
            answers,
            asked: AtomicUsize::new(0),
            needed,
            missing_capability: OnceLock::new(),
            task_start: TaskStart::Continue,
            task_started: AtomicBool::new(false),
        }
    }

    pub fn with_task_start(mut self, task_start: TaskStart) -> Self {
        self.task_start = task_start;
        self
    }

    /// Whether the handler asked for its task ([`TaskStart::Allowed`] only).
    pub fn task_started(&self) -> bool {
        self.task_started.load(Ordering::Relaxed)
    }

    pub fn missing_capability(&self) -> Option<&'static str> {
        self.missing_capability.get().copied()
    }
}

impl ClientLink for StatelessLink {
    fn notify(&self, notice: Notice) -> BoxFuture<'_, ()> {
        // Logs are sent only when the request asked for them, at or above its level
        // (spec 2026-07-28 `server/utilities/logging.mdx`).
        if let Some(level) = notice.level {
            if self.log_level.is_none_or(|min| level < min) {
                return Box::pin(async {});
            }
        }
        let data = jsonrpc::encode_notification(notice.method, Some(&notice.params));
        Box::pin(async move {
            let _ = self.out.send(Frame::Notification(data)).await;
        })
    }

    fn request(
        &self,
        _origin: &RequestId,
        key: Option<&str>,
        method: &'static str,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientRequestError>> {
        let key = match key {
            Some(key) => key.to_string(),
            None => format!("input-{}", self.asked.fetch_add(1, Ordering::Relaxed)),
        };
        let answer = self.answers.get(&key).cloned();
        Box::pin(async move {
            match answer {
                Some(answer) => Ok(answer),
                None => {
                    let _ = self.needed.try_send((
                        key,
                        object([("method", Value::from(method)), ("params", params)]),
                    ));
                    Err(ClientRequestError::InputRequired)
                }
            }
        })
    }

    fn close_stream(&self, _origin: &RequestId) -> BoxFuture<'_, ()> {
        // Stateless streams are not resumable, so there is no connection to close early.
        Box::pin(async {})
    }

    fn capability_missing(&self, capability: &'static str) {
        let _ = self.missing_capability.set(capability);
    }

    fn start_task(&self) -> Result<(), ClientRequestError> {
        match self.task_start {
            TaskStart::Continue => Ok(()),
            TaskStart::Allowed => {
                self.task_started.store(true, Ordering::Relaxed);
                Err(ClientRequestError::TaskStarted)
            }
        }
    }
}
