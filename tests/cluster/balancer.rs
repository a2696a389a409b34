//! The load balancer in front of the cluster: nginx or HAProxy, run in the foreground on
//! 127.0.0.1 from the recipe in `config/lb/` exactly as shipped, except for the addresses.
//! The recipes name their nodes 10.0.0.11:8080 (node `a`), 10.0.0.12:8080 (`b`) and
//! 10.0.0.13:8080 (`c`) and listen on port 80; those strings, and nothing else, are replaced
//! with the test's ports. nginx also gets a main configuration around the recipe, which is
//! an http{}-context file, with its pid, logs and temporary files in the scenario's folder.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::nodes::{Cluster, NODE_IDS, free_port};
use super::scratch::Scratch;

/// How long a balancer may take to listen.
const START_LIMIT: Duration = Duration::from_secs(10);
/// How long a balancer may take to stop after SIGTERM before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(5);

/// The recipes' example node addresses, in the order of [`NODE_IDS`].
const RECIPE_NODE_ADDRS: [&str; 3] = ["10.0.0.11:8080", "10.0.0.12:8080", "10.0.0.13:8080"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Nginx,
    Haproxy,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Nginx => "nginx",
            Kind::Haproxy => "haproxy",
        }
    }

    fn recipe(self) -> &'static str {
        match self {
            Kind::Nginx => "nginx.conf",
            Kind::Haproxy => "haproxy.cfg",
        }
    }

    /// The recipe's listening line and what it becomes.
    fn listen_line(self, addr: &str) -> (&'static str, String) {
        match self {
            Kind::Nginx => ("listen 80;", format!("listen {addr};")),
            Kind::Haproxy => ("bind :80", format!("bind {addr}")),
        }
    }
}

/// A running balancer; stopped (SIGTERM, then SIGKILL) on drop.
pub struct Balancer {
    pub kind: Kind,
    /// `127.0.0.1:PORT` it listens on.
    pub addr: String,
    child: Child,
}

impl Balancer {
    /// Renders the recipe for `cluster` and starts the balancer in the foreground; panics,
    /// showing its log, if it is not installed or does not listen within [`START_LIMIT`].
    pub fn start(kind: Kind, cluster: &Cluster, scratch: &Scratch) -> Balancer {
        let binary = find_binary(kind.name());
        let addr = format!("127.0.0.1:{}", free_port());
        let recipe = render_recipe(kind, cluster, &addr);
        let log = scratch.join(&format!("{}.log", kind.name()));
        let mut cmd = Command::new(&binary);
        match kind {
            Kind::Nginx => {
                let site = scratch.join("mcp-actor.conf");
                std::fs::write(&site, recipe).expect("write the nginx recipe");
                let main = scratch.join("nginx.conf");
                std::fs::write(&main, nginx_main_config(scratch.path(), &site))
                    .expect("write nginx.conf");
                cmd.arg("-e")
                    .arg(&log)
                    .arg("-p")
                    .arg(scratch.path())
                    .arg("-c")
                    .arg(&main);
            }
            Kind::Haproxy => {
                let config = scratch.join("haproxy.cfg");
                std::fs::write(&config, recipe).expect("write the HAProxy recipe");
                cmd.arg("-db").arg("-f").arg(&config);
            }
        }
        let output = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("open the balancer's log");
        cmd.stdin(Stdio::null())
            .stdout(output.try_clone().expect("log file"))
            .stderr(output);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let mut balancer = Balancer { kind, addr, child };
        balancer.wait_listening(&log);
        balancer
    }

    /// The MCP endpoint through the balancer.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn wait_listening(&mut self, log: &Path) {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the balancer") {
                panic!(
                    "{} exited ({status}) before listening on {}:\n{}",
                    self.kind.name(),
                    self.addr,
                    std::fs::read_to_string(log).unwrap_or_default()
                );
            }
            if TcpStream::connect(&self.addr).is_ok() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not listen on {} within {START_LIMIT:?}:\n{}",
                self.kind.name(),
                self.addr,
                std::fs::read_to_string(log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + STOP_LIMIT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shipped recipe with the node addresses and the listening port of this test, and
/// nothing else changed. Panics if a string to replace is missing, so that a recipe edited
/// out of step with this test fails loudly instead of running half-rendered.
pub fn render_recipe(kind: Kind, cluster: &Cluster, listen: &str) -> String {
    let path = recipe_path(kind);
    let mut text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let (line, replacement) = kind.listen_line(listen);
    let mut replacements = vec![(line.to_string(), replacement)];
    for (id, example) in NODE_IDS.iter().zip(RECIPE_NODE_ADDRS) {
        replacements.push((example.to_string(), cluster.node(id).addr.clone()));
    }
    for (from, to) in replacements {
        assert!(
            text.contains(&from),
            "{} no longer contains {from:?}, which tests/cluster.rs replaces",
            path.display()
        );
        text = text.replace(&from, &to);
    }
    assert!(
        !text.contains("10.0.0."),
        "{} names a node address tests/cluster.rs does not replace",
        path.display()
    );
    text
}

fn recipe_path(kind: Kind) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config/lb")
        .join(kind.recipe())
}

/// The main context nginx.conf provides around an http{}-context file, with everything nginx
/// writes kept in `dir`. One process (no master): nothing outlives the test if it is killed.
fn nginx_main_config(dir: &Path, site: &Path) -> String {
    let dir = dir.display();
    format!(
        "daemon off;\nmaster_process off;\npid {dir}/nginx.pid;\nerror_log {dir}/nginx.log warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n    access_log off;\n    client_body_temp_path {dir}/client_body;\n    \
         proxy_temp_path {dir}/proxy;\n    fastcgi_temp_path {dir}/fastcgi;\n    \
         uwsgi_temp_path {dir}/uwsgi;\n    scgi_temp_path {dir}/scgi;\n    include {};\n}}\n",
        site.display()
    )
}

/// The balancer's binary: on PATH or in the sbin folders Debian installs it to. Panics
/// with what to install when it is missing: a cluster test that cannot run fails.
fn find_binary(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} is not installed, and tests/cluster.rs runs config/lb's recipes with it: \
                 run scripts/lb-tools.sh (apt-get install -y nginx haproxy), as scripts/test does"
            )
        })
}
