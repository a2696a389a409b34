//! A `redis-server` of a test's own (the Debian package, `scripts/lb-tools.sh`), on a free
//! loopback port, stopped by PID: for `tests/store.rs` and `tests/cluster/store.rs`.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TempDir;

const LIMIT: Duration = Duration::from_secs(10);

/// A `redis-server` of this test's own, on a free loopback port; killed on drop.
pub struct Redis {
    pub port: u16,
    child: Child,
    _dir: TempDir,
}

pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

impl Redis {
    pub fn start() -> Redis {
        Self::on_port(free_port())
    }

    pub fn on_port(port: u16) -> Redis {
        let dir = TempDir::new("store-redis");
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (scripts/lb-tools.sh installs it)");
        let redis = Redis {
            port,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + LIMIT;
        while redis.cli(&["PING"]).trim() != "PONG" {
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Commands Redis has run, every kind but this test's own `INFO`.
    pub fn commands(&self) -> u64 {
        self.cli(&["INFO", "commandstats"])
            .lines()
            .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
            .filter_map(|l| {
                l.split("calls=")
                    .nth(1)?
                    .split(',')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
