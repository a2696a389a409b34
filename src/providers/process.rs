//! What keeps command tools from leaving processes behind or running too many.
//!
//! - [`ProcessGroup`]: every command starts as the leader of its own process group, and this
//!   guard kills the whole group with SIGKILL when it is dropped. A handler task that is
//!   aborted (`notifications/cancelled`, session end) drops its future, and with it the guard,
//!   so cancellation needs no cooperation from the task and a shell script's own children
//!   die with it. The group is also killed after a normal exit, so a background job a script
//!   forgot does not outlive the call.
//! - [`ProcessLimits`]: counts running commands server-wide and per session. A call over a
//!   limit is refused at once rather than queued, so a flood of calls cannot pile up behind
//!   one slow command unseen; the caller gets an `isError` result saying which limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Kills a process group when dropped.
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    pgid: Option<Pid>,
}

impl ProcessGroup {
    /// Guards the group led by `pid`, which must have been spawned with `process_group(0)`.
    pub fn new(pid: u32) -> Self {
        ProcessGroup {
            pgid: i32::try_from(pid).ok().map(Pid::from_raw),
        }
    }

    /// Kills every process of the group. Idempotent: the group is killed at most once, so a
    /// later drop cannot signal a process group id the system has since reused.
    pub fn kill(&mut self) {
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

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
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
}

/// One running process's place in the counts; given back on drop.
#[derive(Debug)]
pub(crate) struct ProcessSlot {
    limits: Arc<ProcessLimits>,
    session: Option<Arc<str>>,
}

impl ProcessLimits {
    pub fn new(max: usize, per_session: usize) -> Arc<Self> {
        Arc::new(ProcessLimits {
            max,
            per_session,
            counts: Mutex::new(Counts::default()),
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
        let limits = ProcessLimits::new(3, 2);
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
