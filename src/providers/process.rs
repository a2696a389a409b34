//! What keeps command tools from leaving processes behind or running too many.
//!
//! - [`CallProcesses`]: every command starts as the leader of its own process group, with
//!   a run marker in its environment (see [`super::descendants`]). The guard kills the
//!   whole group with SIGKILL and then, on Linux, every process that carries the marker,
//!   which reaches descendants that left the group with `setsid`. The group is killed when
//!   the guard is dropped: a handler task that is aborted (`notifications/cancelled`,
//!   session end) drops its future, and with it the guard, so cancellation needs no
//!   cooperation from the task and a script's children die with it. Both are also killed
//!   after a normal exit, so a background job a script forgot does not outlive the call or
//!   hold its output pipes open.
//! - [`ProcessLimits`]: counts running commands server-wide and per session. A call over a
//!   limit is refused at once rather than queued, so a flood of calls cannot pile up behind
//!   one slow command unseen; the caller gets an `isError` result saying which limit.
//!   The running commands are `mcp_command_processes`; the refusals count in
//!   `mcp_limit_rejections_total{limit="max_processes"}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::descendants::{RunMarker, kill_marked};
use crate::metrics::{Limit, Metrics, Running};

/// Every process of one call: its process group and the processes carrying its marker.
#[derive(Debug)]
pub(crate) struct CallProcesses {
    pgid: Option<Pid>,
    /// Taken by the first complete sweep: once no marked process is left, none can appear.
    marker: Option<RunMarker>,
}

impl CallProcesses {
    /// Guards the group led by `pid`, which must have been spawned with `process_group(0)`
    /// and with `marker` in its environment.
    pub fn new(pid: u32, marker: RunMarker) -> Self {
        CallProcesses {
            pgid: i32::try_from(pid).ok().map(Pid::from_raw),
            marker: Some(marker),
        }
    }

    /// Kills the group and every marked process, and waits until they are gone.
    pub async fn kill(&mut self) {
        self.kill_group();
        if let Some(marker) = self.marker.take() {
            // The sweep reads /proc; it must not block an async worker.
            let sweep = tokio::task::spawn_blocking(move || kill_marked(&marker));
            if let Err(e) = sweep.await {
                tracing::warn!(error = %e, "the sweep for a command's descendants failed");
            }
        }
    }

    /// Kills every process of the group. The group is killed at most once, so a later call
    /// cannot signal a process group id the system has since reused.
    fn kill_group(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (the group is already gone) is the normal case after a clean exit.
            if let Err(e) = killpg(pgid, Signal::SIGKILL) {
                if e != nix::errno::Errno::ESRCH {
                    tracing::warn!(pgid = pgid.as_raw(), error = %e, "could not kill a command's process group");
                }
            }
        }
    }
}

impl Drop for CallProcesses {
    /// Cancellation drops the guard without awaiting it: the group dies here, and the sweep
    /// for marked processes runs on the blocking pool.
    fn drop(&mut self) {
        self.kill_group();
        if let Some(marker) = self.marker.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn_blocking(move || kill_marked(&marker));
                }
                Err(_) => kill_marked(&marker),
            }
        }
    }
}

/// Why a command could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LimitError {
    #[error(
        "too many command-tool processes are running on this server (command_tools.max_processes = {0}); try again when one has finished"
    )]
    Server(usize),
    #[error(
        "too many command-tool processes are running in this session (command_tools.max_processes_per_session = {0}); try again when one has finished"
    )]
    Session(usize),
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_session: HashMap<Arc<str>, usize>,
}

/// Running command processes, server-wide and per session. Shared across reloads, so a
/// reload does not forget the processes still running.
#[derive(Debug)]
pub(crate) struct ProcessLimits {
    max: usize,
    per_session: usize,
    counts: Mutex<Counts>,
    metrics: Arc<Metrics>,
}

/// One running process's place in the counts; given back on drop.
#[derive(Debug)]
pub(crate) struct ProcessSlot {
    limits: Arc<ProcessLimits>,
    session: Option<Arc<str>>,
    _running: Running,
}

impl ProcessLimits {
    pub fn new(max: usize, per_session: usize, metrics: Arc<Metrics>) -> Arc<Self> {
        Arc::new(ProcessLimits {
            max,
            per_session,
            counts: Mutex::new(Counts::default()),
            metrics,
        })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counts stay consistent even if a holder panicked: every change is one
        // statement.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a slot, or says which limit is reached. Stateless requests have no session
    /// and count only server-wide.
    pub fn try_acquire(self: &Arc<Self>, session: Option<&str>) -> Result<ProcessSlot, LimitError> {
        let slot = self.take_slot(session);
        if slot.is_err() {
            self.metrics.limit_hit(Limit::MaxProcesses);
        }
        slot
    }

    fn take_slot(self: &Arc<Self>, session: Option<&str>) -> Result<ProcessSlot, LimitError> {
        let mut counts = self.counts();
        if counts.total >= self.max {
            return Err(LimitError::Server(self.max));
        }
        let session: Option<Arc<str>> = session.map(Arc::from);
        if let Some(id) = &session {
            let n = counts.per_session.entry(Arc::clone(id)).or_insert(0);
            if *n >= self.per_session {
                return Err(LimitError::Session(self.per_session));
            }
            *n += 1;
        }
        counts.total += 1;
        Ok(ProcessSlot {
            limits: Arc::clone(self),
            session,
            _running: self.metrics.command_running(),
        })
    }

    #[cfg(test)]
    fn running(&self) -> (usize, usize) {
        let counts = self.counts();
        (counts.total, counts.per_session.len())
    }
}

impl Drop for ProcessSlot {
    fn drop(&mut self) {
        let mut counts = self.limits.counts();
        counts.total = counts.total.saturating_sub(1);
        if let Some(id) = &self.session {
            if let Some(n) = counts.per_session.get_mut(id) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.per_session.remove(id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_apply_per_session_and_server_wide_and_free_on_drop() {
        let limits = ProcessLimits::new(3, 2, Arc::default());
        let a1 = limits.try_acquire(Some("a")).unwrap();
        let _a2 = limits.try_acquire(Some("a")).unwrap();
        assert_eq!(
            limits.try_acquire(Some("a")).unwrap_err(),
            LimitError::Session(2)
        );
        let _b = limits.try_acquire(Some("b")).unwrap();
        assert_eq!(limits.try_acquire(None).unwrap_err(), LimitError::Server(3));
        drop(a1);
        let _stateless = limits.try_acquire(None).unwrap();
        assert_eq!(limits.running(), (3, 2));
    }
}
