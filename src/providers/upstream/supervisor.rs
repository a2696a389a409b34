//! The supervisor between the server and a stdio upstream: `mcp-actor upstream-supervisor`.
//!
//! A stdio MCP server is often a tree of processes (`npx` starts `node`, a Python launcher
//! starts the interpreter). Killing the direct child leaves the rest; and if the server
//! itself is killed with SIGKILL, nothing of the server runs to clean up. The supervisor
//! closes both gaps:
//!
//! - it runs the upstream command in a process group of its own, so one `killpg` reaches
//!   every process of the tree that did not leave the group;
//! - it asks the kernel for SIGTERM when the server dies (`PR_SET_PDEATHSIG`), however it
//!   dies, and then stops the group as it would on request.
//!
//! It does nothing else: the upstream's stdin, stdout and stderr are the server's pipes,
//! inherited, so no byte passes through the supervisor. Stopping (on SIGTERM, SIGINT or
//! SIGHUP): the server has already closed the upstream's stdin; the supervisor waits up to
//! the grace period for the command to exit by itself, then sends SIGTERM to the group,
//! waits the grace period again, then SIGKILL. When the command exits on its own, whatever
//! is left of its group is killed at once. The supervisor exits with the command's status.
//! The supervisor reads those signals with `sigwait`, so it blocks them; the command starts
//! with them unblocked again, or the group's SIGTERM would never reach it.
//!
//! It is a mode of the same binary, so an installation has nothing more to ship. The parent
//! death signal is sent when the *thread* that spawned the supervisor ends; the server spawns
//! it from a runtime worker, which lives as long as the server does.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, Signal, killpg};
use nix::unistd::Pid;

/// The subcommand the binary answers with [`supervise`].
pub const SUBCOMMAND: &str = "upstream-supervisor";

enum Event {
    Signal,
    Exited(std::io::Result<ExitStatus>),
}

/// Runs `argv` under supervision and returns the exit code for the supervisor. `parent` is
/// the server's pid: if it is already gone when the supervisor starts, the upstream is not
/// started at all.
pub fn supervise(parent: u32, grace: Duration, argv: &[OsString]) -> i32 {
    let Some((program, args)) = argv.split_first() else {
        eprintln!("{SUBCOMMAND}: no command to run");
        return 2;
    };
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGTERM) {
        eprintln!("{SUBCOMMAND}: cannot ask for the parent death signal: {e}");
        return 2;
    }
    // The server may have died between the fork and the line above: then no signal comes.
    if nix::unistd::getppid().as_raw() as u32 != parent {
        return 2;
    }
    // Blocked in this thread before any other starts, so every thread inherits the mask and
    // the signals are read only by `sigwait` below.
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        signals.add(signal);
    }
    if let Err(e) = signals.thread_block() {
        eprintln!("{SUBCOMMAND}: cannot block signals: {e}");
        return 2;
    }
    let mut command = Command::new(program);
    command.args(args).process_group(0);
    // A child inherits the signal mask across exec, and `Command` does not reset it: without
    // this the upstream would start with SIGTERM blocked, and the stop sequence's SIGTERM
    // would never reach it (every stop would end in SIGKILL).
    // SAFETY: between fork and exec the closure calls only `pthread_sigmask`, which is
    // async-signal-safe, on a set built before the fork.
    unsafe {
        command.pre_exec(move || signals.thread_unblock().map_err(std::io::Error::from));
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "{SUBCOMMAND}: cannot start {}: {e}",
                program.to_string_lossy()
            );
            return 127;
        }
    };
    let group = Pid::from_raw(child.id() as i32);
    let (tx, rx) = mpsc::channel();
    let signal_tx = tx.clone();
    std::thread::spawn(move || {
        while signals.wait().is_ok() {
            if signal_tx.send(Event::Signal).is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        let _ = tx.send(Event::Exited(child.wait()));
    });

    let status = match rx.recv() {
        Ok(Event::Exited(status)) => status,
        Ok(Event::Signal) => stop(&rx, group, grace),
        Err(_) => Err(std::io::Error::other("the supervisor's threads ended")),
    };
    // Whatever the command left behind in its group goes with it.
    let _ = killpg(group, Signal::SIGKILL);
    match status {
        Ok(status) => exit_code(status),
        Err(e) => {
            eprintln!("{SUBCOMMAND}: {e}");
            1
        }
    }
}

/// The stop sequence: time to exit on its own (stdin is closed), then SIGTERM to the group,
/// then SIGKILL.
fn stop(rx: &mpsc::Receiver<Event>, group: Pid, grace: Duration) -> std::io::Result<ExitStatus> {
    if let Some(status) = exited_within(rx, grace) {
        return status;
    }
    let _ = killpg(group, Signal::SIGTERM);
    if let Some(status) = exited_within(rx, grace) {
        return status;
    }
    let _ = killpg(group, Signal::SIGKILL);
    match rx.recv() {
        Ok(Event::Exited(status)) => status,
        _ => Err(std::io::Error::other("lost the command's exit status")),
    }
}

/// The command's exit status if it exits within `limit`; further signals are ignored, as
/// the stop sequence is already under way.
fn exited_within(
    rx: &mpsc::Receiver<Event>,
    limit: Duration,
) -> Option<std::io::Result<ExitStatus>> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Event::Exited(status)) => return Some(status),
            Ok(Event::Signal) => continue,
            Err(_) => return None,
        }
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}
