//! The nodes of a test cluster: the real binary three times, with node ids `a`, `b` and `c`,
//! the builtin tools, and one shared `[stateless] request_state_key`. Each node keeps the port it
//! was given first, so that after a restart it is where the balancer's configuration says.
//!
//! What each node served is read from the node itself: the session count of its health probe
//! (a loopback client gets it), `serverInfo.title` (`node <id>`) on 2026-07-28 results, and,
//! with [`ADMIN_LISTENER`], its Prometheus metrics.

use std::process::ExitStatus;
use std::time::Duration;

use reqwest::StatusCode;

use super::scratch::Scratch;
use crate::common::modern::{random_request_state_key, session_count};
use crate::common::{BUILTIN_TOOLS_TOML, Client, TestServer};

/// The node ids, in the order of the recipes' example addresses (10.0.0.11, .12, .13).
pub const NODE_IDS: [&str; 3] = ["a", "b", "c"];

/// Whether the binary takes `--admin-listen ADDR` and serves Prometheus text at `/metrics`
/// there. When it does, every node gets an admin listener and the routing scenario also
/// checks, from each node's own counters, that every call reached the node that minted its
/// session ([`check_calls_served_by_minting_node`]).
pub const ADMIN_LISTENER: bool = true;

/// Longest one probe of a node may take.
const PROBE_LIMIT: Duration = Duration::from_secs(5);

pub struct Node {
    pub id: &'static str,
    /// `127.0.0.1:PORT` of the MCP listener.
    pub addr: String,
    /// `127.0.0.1:PORT` of the admin listener, with [`ADMIN_LISTENER`].
    pub admin: Option<String>,
    config: std::path::PathBuf,
    log: std::path::PathBuf,
    server: Option<TestServer>,
}

impl Node {
    /// Starts the node (again) on its address; panics if it does not come up.
    pub fn start(&mut self) {
        assert!(self.server.is_none(), "node {} is running", self.id);
        let admin_args: Vec<&str> = match &self.admin {
            Some(addr) => vec!["--admin-listen", addr.as_str()],
            None => Vec::new(),
        };
        self.server = Some(TestServer::at(
            &self.addr,
            &self.config,
            &admin_args,
            &self.log,
        ));
    }

    /// SIGKILL: the node dies with whatever it had in flight.
    pub fn kill(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill();
        }
    }

    /// SIGTERM without waiting: the node drains while the test goes on. A second SIGTERM
    /// would stop it at once, so [`Node::terminate`] must not follow.
    pub fn begin_drain(&self) {
        self.server
            .as_ref()
            .expect("the node is running")
            .send_sigterm();
    }

    /// Sends SIGTERM and waits up to `limit` for the node to exit; panics if it does not.
    pub async fn terminate(&mut self, limit: Duration) -> ExitStatus {
        let server = self.server.as_mut().expect("the node is running");
        server.send_sigterm();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(status) = server.exit_status() {
                self.server = None;
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "node {} did not exit within {limit:?} of SIGTERM",
                self.id
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sessions the node holds, from its health probe.
    pub async fn sessions(&self) -> u64 {
        session_count(&Client::bounded(
            &format!("{}/mcp", self.base_url()),
            PROBE_LIMIT,
        ))
        .await
    }

    /// The status of `GET /readyz`, or `None` when the node cannot be reached.
    pub async fn readiness(&self) -> Option<StatusCode> {
        let http = reqwest::Client::builder()
            .timeout(PROBE_LIMIT)
            .build()
            .expect("client");
        let resp = http.get(format!("{}/readyz", self.base_url())).send().await;
        resp.ok().map(|r| r.status())
    }

    /// Waits up to `limit` for `GET /readyz` to answer 200.
    pub async fn wait_ready(&self, limit: Duration) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let status = self.readiness().await;
            if status == Some(StatusCode::OK) {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "node {} did not answer GET /readyz with 200 within {limit:?} (last: {status:?})",
                    self.id
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The Prometheus text of the admin listener's `/metrics`.
    pub async fn metrics(&self) -> String {
        let admin = self.admin.as_ref().expect("the node has an admin listener");
        let http = reqwest::Client::builder()
            .timeout(PROBE_LIMIT)
            .build()
            .expect("client");
        let resp = http
            .get(format!("http://{admin}/metrics"))
            .send()
            .await
            .expect("GET /metrics");
        assert_eq!(resp.status(), StatusCode::OK, "node {} /metrics", self.id);
        resp.text().await.expect("metrics text")
    }
}

/// Three running nodes; dropping the cluster kills them.
pub struct Cluster {
    pub nodes: Vec<Node>,
}

impl Cluster {
    /// Starts nodes `a`, `b` and `c`, their configurations and logs in `scratch`.
    pub fn start(scratch: &Scratch) -> Cluster {
        Cluster::start_with(scratch, "")
    }

    /// [`Cluster::start`] with `extra` TOML appended to every node's configuration.
    pub fn start_with(scratch: &Scratch, extra: &str) -> Cluster {
        let key = random_request_state_key();
        let nodes = NODE_IDS
            .iter()
            .map(|&id| {
                let config = scratch.join(&format!("node-{id}.toml"));
                let config_text = node_config(id, &key) + extra;
                std::fs::write(&config, config_text).expect("write node config");
                let mut node = Node {
                    id,
                    addr: format!("127.0.0.1:{}", free_port()),
                    admin: ADMIN_LISTENER.then(|| format!("127.0.0.1:{}", free_port())),
                    config,
                    log: scratch.join(&format!("node-{id}.log")),
                    server: None,
                };
                node.start();
                node
            })
            .collect();
        Cluster { nodes }
    }

    pub fn node(&self, id: &str) -> &Node {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    pub fn node_mut(&mut self, id: &str) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }
}

/// A node's configuration: its id (the prefix of the session ids it mints), a title naming
/// it on 2026-07-28 results, the key every node shares, the builtin tools.
fn node_config(id: &str, key: &str) -> String {
    format!(
        "[server]\nnode_id = \"{id}\"\ntitle = \"node {id}\"\nshutdown_timeout = \"10s\"\n\n\
         [modern]\nrequest_state_key = \"{key}\"\n{BUILTIN_TOOLS_TOML}"
    )
}

/// The node that minted `session_id`: the part before its first `.`.
pub fn minting_node(session_id: &str) -> &str {
    session_id.split('.').next().unwrap_or_default()
}

/// A port free on 127.0.0.1 when this returns.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// From each node's own counters: the `tools/call` requests it served equal
/// `calls_per_session` times the sessions it created, so no call of a session reached
/// another node (each would have been refused there, and counted there). Needs
/// [`ADMIN_LISTENER`].
pub async fn check_calls_served_by_minting_node(cluster: &Cluster, calls_per_session: u64) {
    for node in &cluster.nodes {
        let text = node.metrics().await;
        let created = metric_sum(&text, "mcp_sessions_created_total", &[]);
        let calls = metric_sum(&text, "mcp_requests_total", &["method=\"tools/call\""]);
        assert!(
            created > 0.0,
            "node {} created no session:\n{text}",
            node.id
        );
        assert_eq!(
            calls,
            created * calls_per_session as f64,
            "node {}: tools/call requests served vs sessions created × {calls_per_session}:\n{text}",
            node.id
        );
    }
}

/// The sum of the samples of metric `name` whose labels include every one of `labels`
/// (written `key="value"`), from Prometheus text exposition.
pub fn metric_sum(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, label_set) = match series.split_once('{') {
                Some((metric, rest)) => (metric, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let wanted = metric == name
                && labels
                    .iter()
                    .all(|l| label_set.split(',').any(|have| have == *l));
            wanted.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

#[test]
fn metric_samples_are_summed_by_name_and_labels() {
    let text = "# HELP mcp_requests_total Requests.\n# TYPE mcp_requests_total counter\n\
        mcp_requests_total{method=\"tools/call\",era=\"2025-11-25\",outcome=\"ok\"} 38\n\
        mcp_requests_total{method=\"tools/call\",era=\"2025-11-25\",outcome=\"error\"} 2\n\
        mcp_requests_total{method=\"tools/list\",era=\"2025-11-25\",outcome=\"ok\"} 5\n\
        mcp_sessions_created_total 1\nmcp_sessions_created_totals 7\n";
    let calls = metric_sum(text, "mcp_requests_total", &["method=\"tools/call\""]);
    assert_eq!(calls, 40.0);
    assert_eq!(metric_sum(text, "mcp_sessions_created_total", &[]), 1.0);
}
