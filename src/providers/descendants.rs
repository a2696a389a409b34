//! Every process a command-tool call or a stdio upstream started, including those that left
//! its process group.
//!
//! Killing the call's process group (see [`super::process`], and the upstream's in
//! `upstream::child`) misses any descendant that
//! called `setsid` or `setpgid`, such as `sh -c "setsid daemon &"`. On Linux two mechanisms
//! close that gap:
//!
//! - **A run marker.** Each call's process starts with `MCP_ACTOR_TOOL_RUN=<random id>` in
//!   its environment, and every descendant inherits it unless it rebuilds its environment.
//!   Cleanup ([`kill_marked`]) scans `/proc/*/environ` (readable because the processes run
//!   as the server's user), SIGKILLs every match and scans again until a scan finds none:
//!   a killed process reads as an empty environment (a zombie has no memory), and a child
//!   forked while a scan ran is found by the next one. The number of rounds is bounded.
//! - **A child subreaper.** The binary calls [`become_child_subreaper`] at start, so an
//!   orphaned descendant re-parents to the server rather than to init and stays in reach.
//!   The server then owns the reaping of such orphans: a task started with the first
//!   spawn reaps, on every SIGCHLD, the zombie children of the server that are no direct
//!   child of its own (an upstream's descendants die when its group is killed, with no
//!   command tool running to reap them), and [`kill_marked`] reaps after each kill.
//!
//! Reaping never calls `waitpid(-1)`: tokio waits for each child it spawned by its own pid,
//! and a wildcard wait would steal those statuses. Direct children are spawned through
//! [`spawn_registered`], which records their pids under the same lock the reaper holds, so
//! the reaper (`waitpid(pid, WNOHANG)` on a zombie child it does not find recorded) can
//! only ever take the status of an orphan, or of a direct child whose `Child` was already
//! dropped (tokio's orphan queue then forgets it on `ECHILD`).
//!
//! Not contained: a descendant that clears or rewrites its environment (`env -i`) *and*
//! leaves the process group, or a set-user-ID program, whose environment the server cannot
//! read. A cgroup per call would contain those too; this server does not use cgroups, which
//! need a delegated cgroup tree. Elsewhere than Linux only the process group is killed.

use std::collections::HashSet;
use std::sync::Mutex;

/// The environment variable that marks every process of one call.
pub const RUN_MARKER_VAR: &str = "MCP_ACTOR_TOOL_RUN";

/// The marker of one call: `MCP_ACTOR_TOOL_RUN=<random id>`.
#[derive(Debug, Clone)]
pub(crate) struct RunMarker {
    id: String,
}

impl RunMarker {
    pub fn new() -> Self {
        RunMarker {
            id: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// The value given to [`RUN_MARKER_VAR`].
    pub fn value(&self) -> &str {
        &self.id
    }
}

/// Pids of the command processes tokio spawned and still owns, which the reaper must leave
/// to tokio. Process-wide, like the subreaper attribute it serves.
static DIRECT_CHILDREN: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

fn direct_children() -> std::sync::MutexGuard<'static, Option<HashSet<u32>>> {
    // A set of pids stays consistent even if a holder panicked: every change is one call.
    DIRECT_CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}

/// A spawned command: its handle, and its place among the direct children. The fields drop
/// in order, so the pid is forgotten only after tokio has taken the child over.
#[derive(Debug)]
pub(crate) struct RegisteredChild {
    pub child: tokio::process::Child,
    _registration: Registration,
}

#[derive(Debug)]
struct Registration(Option<u32>);

impl Drop for Registration {
    fn drop(&mut self) {
        if let (Some(pid), Some(set)) = (self.0, direct_children().as_mut()) {
            set.remove(&pid);
        }
    }
}

/// Spawns `command`, recording its pid before the reaper can look again.
pub(crate) fn spawn_registered(
    command: &mut tokio::process::Command,
) -> std::io::Result<RegisteredChild> {
    #[cfg(target_os = "linux")]
    linux::start_reaping();
    let mut children = direct_children();
    let child = command.spawn()?;
    let pid = child.id();
    if let Some(pid) = pid {
        children.get_or_insert_with(HashSet::new).insert(pid);
    }
    Ok(RegisteredChild {
        child,
        _registration: Registration(pid),
    })
}

/// Makes this process the reaper of its orphaned descendants (Linux
/// `PR_SET_CHILD_SUBREAPER`), so processes a command tool detached stay within reach of
/// `kill_marked`. It affects the whole process, so the binary calls it once at start.
/// Elsewhere than Linux it does nothing.
pub fn become_child_subreaper() -> Result<(), nix::errno::Errno> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true)?;
        linux::SUBREAPER.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(())
}

/// Kills every process that carries `marker`, then reaps the orphans among them. Blocking
/// (it reads `/proc`): run it off the async workers.
pub(crate) fn kill_marked(marker: &RunMarker) {
    #[cfg(target_os = "linux")]
    linux::kill_marked(marker);
    #[cfg(not(target_os = "linux"))]
    let _ = marker;
}

#[cfg(target_os = "linux")]
mod linux {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::Pid;

    use super::{RUN_MARKER_VAR, RunMarker, direct_children};

    /// Whether this process re-parents orphans to itself, and so must reap them.
    pub(super) static SUBREAPER: AtomicBool = AtomicBool::new(false);

    /// Scans at most this many times; each round kills what the previous one missed.
    const KILL_ROUNDS: usize = 20;
    /// How long the reaper waits for the killed processes to die and re-parent.
    const REAP_ROUNDS: usize = 50;
    const REAP_PAUSE: Duration = Duration::from_millis(10);

    /// A process as `/proc/<pid>/stat` shows it.
    struct Stat {
        state: char,
        ppid: i32,
        /// Clock ticks since boot at its start: with the pid, it names one process.
        start: u64,
    }

    fn stat(pid: i32) -> Option<Stat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name, in parentheses, may itself contain spaces and parentheses.
        let rest = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(Stat {
            state: fields.first()?.chars().next()?,
            ppid: fields.get(1)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    fn pids() -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .collect()
    }

    fn carries(pid: i32, entry: &[u8]) -> bool {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|environ| environ.split(|&b| b == 0).any(|var| var == entry))
    }

    pub(super) fn kill_marked(marker: &RunMarker) {
        let entry = format!("{RUN_MARKER_VAR}={}", marker.value()).into_bytes();
        let me = nix::unistd::getpid().as_raw();
        let mut killed: Vec<(i32, u64)> = Vec::new();
        for _ in 0..KILL_ROUNDS {
            let found: Vec<i32> = pids()
                .into_iter()
                .filter(|&pid| pid != me && carries(pid, &entry))
                .collect();
            if found.is_empty() {
                break;
            }
            for pid in found {
                // The start time is read first: it identifies the process for the reaper.
                let start = stat(pid).map(|s| s.start);
                match kill(Pid::from_raw(pid), Signal::SIGKILL) {
                    Ok(()) => {
                        if let Some(start) = start {
                            killed.push((pid, start));
                        }
                    }
                    Err(nix::errno::Errno::ESRCH) => {}
                    Err(e) => {
                        tracing::warn!(pid, error = %e, "could not kill a command's descendant")
                    }
                }
            }
        }
        if !killed.is_empty() {
            tracing::debug!(count = killed.len(), "killed a command's descendants");
        }
        if SUBREAPER.load(Ordering::Relaxed) {
            reap(me, &killed);
        }
    }

    /// Starts, once and when this process is a subreaper, the task that reaps orphans as they
    /// die. It must run inside a tokio runtime; without one, orphans wait for a sweep.
    pub(super) fn start_reaping() {
        static STARTED: std::sync::Once = std::sync::Once::new();
        if !SUBREAPER.load(Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        STARTED.call_once(|| {
            runtime.spawn(reap_on_sigchld());
        });
    }

    async fn reap_on_sigchld() {
        use tokio::signal::unix::{SignalKind, signal};
        let mut children = match signal(SignalKind::child()) {
            Ok(children) => children,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch SIGCHLD; orphaned descendants are reaped only after a kill");
                return;
            }
        };
        let me = nix::unistd::getpid().as_raw();
        // Signals that arrive during a scan coalesce into one more scan.
        while children.recv().await.is_some() {
            if tokio::task::spawn_blocking(move || reap_orphans(me))
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// Reaps every zombie child of this process that no tokio `Child` owns.
    fn reap_orphans(me: i32) {
        let zombies: Vec<i32> = pids()
            .into_iter()
            .filter(|&pid| stat(pid).is_some_and(|s| s.state == 'Z' && s.ppid == me))
            .collect();
        if zombies.is_empty() {
            return;
        }
        let children = direct_children();
        for pid in zombies {
            let owned = u32::try_from(pid)
                .is_ok_and(|pid| children.as_ref().is_some_and(|set| set.contains(&pid)));
            if !owned {
                // Under the lock, so no direct child can be spawned with this pid in
                // between; ECHILD means someone else reaped it.
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
        }
    }

    /// Reaps zombie children of this process that no tokio `Child` owns, until none of the
    /// `killed` processes is left (or the rounds run out: one may be the child of a process
    /// that escaped the marker, and is then that process's to reap).
    fn reap(me: i32, killed: &[(i32, u64)]) {
        for _ in 0..REAP_ROUNDS {
            let zombies: Vec<i32> = pids()
                .into_iter()
                .filter(|&pid| stat(pid).is_some_and(|s| s.state == 'Z' && s.ppid == me))
                .collect();
            let children = direct_children();
            let owned = |pid: i32| {
                u32::try_from(pid)
                    .is_ok_and(|pid| children.as_ref().is_some_and(|set| set.contains(&pid)))
            };
            for pid in zombies.into_iter().filter(|&pid| !owned(pid)) {
                // Under the lock, so no direct child can be spawned with this pid in
                // between; ECHILD means someone else reaped it.
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
            // A direct child is tokio's to reap, whenever its `Child` is waited or dropped.
            let remaining = killed
                .iter()
                .any(|&(pid, start)| !owned(pid) && stat(pid).is_some_and(|s| s.start == start));
            drop(children);
            if !remaining {
                return;
            }
            std::thread::sleep(REAP_PAUSE);
        }
    }
}
