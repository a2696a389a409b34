//! The binary as one node of a cluster: listening on an address chosen by the test, so that a
//! node restarted after a drain is found where a load balancer expects it, and stopped by
//! SIGKILL (a crash) or by SIGTERM without blocking the test while it drains.

use std::path::Path;
use std::process::{Command, ExitStatus};

use super::TestServer;
use super::binary;

impl TestServer {
    /// The binary listening on `listen` (`127.0.0.1:PORT`), serving the configuration file
    /// `config` with `args` added, its log appended to `log` (so a restarted node's log
    /// follows the previous run's).
    pub fn at(listen: &str, config: &Path, args: &[&str], log: &Path) -> TestServer {
        let mut cmd = Command::new(binary());
        cmd.args(["--listen", listen, "--config"])
            .arg(config)
            .args(args);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the node's log file");
        Self::run(cmd, None, Some(file))
    }

    /// SIGKILL, then reaps the process: the node dies with whatever it had in flight.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and returns at once; [`TestServer::exit_status`] tells when it exited.
    pub fn send_sigterm(&self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    }

    /// The exit status once the process has exited; `None` while it runs.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("wait for the server")
    }
}
