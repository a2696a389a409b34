//! Deploys without dropped sessions: three nodes share one Redis (`[store]`), and the
//! official TypeScript (1.32) and Python (2.3, legacy) clients call `echo` in a loop through
//! the balancer while every node is restarted in turn with SIGTERM, and then the node
//! holding a client's session is SIGKILLed and started again. Both clients: no failed
//! call, and one session id from start to end.
//!
//! The clients are `tests/interop/ts/loop.mjs` and `tests/interop/python/loop.py`, installed
//! by `scripts/interop-sdks.sh` (which `scripts/test` runs before `cargo test`).

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::balancer::{Balancer, Kind};
use super::nodes::{Cluster, NODE_IDS};
use super::scratch::Scratch;
use crate::common::{ACCEPT_BOTH, Client, Session};

#[path = "../common/redis.rs"]
mod redis;

/// After a restarted node answers /readyz, as in the rolling-restart scenario: HAProxy's
/// `rise 2` checks `inter 1s` apart.
const BACK_IN_ROTATION: Duration = Duration::from_secs(2);
const READY_LIMIT: Duration = Duration::from_secs(10);
const DRAIN_LIMIT: Duration = Duration::from_secs(15);
/// How long the clients may take to start (a Python interpreter importing the SDK).
const CLIENTS_START_LIMIT: Duration = Duration::from_secs(60);

/// Restarts every node on `url` with `[store]`, so that the cluster shares it.
fn share_store(cluster: &mut Cluster, scratch: &Scratch, url: &str) {
    for id in NODE_IDS {
        let node = cluster.node_mut(id);
        node.kill();
        let path = scratch.join(&format!("node-{id}.toml"));
        let mut toml = std::fs::read_to_string(&path).expect("node config");
        toml.push_str(&format!("\n[store]\nurl = \"{url}\"\n"));
        std::fs::write(&path, toml).expect("write node config");
        node.start();
    }
}

struct Loop {
    name: &'static str,
    child: std::process::Child,
}

fn start_loops(url: &str, stop: &std::path::Path) -> Vec<Loop> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".tools/py-interop/bin/python");
    let spawn = |program: &std::path::Path, script: &str| {
        Command::new(program)
            .arg(root.join(script))
            .arg(url)
            .arg(stop)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "{} {script}: {e} (scripts/interop-sdks.sh installs the SDKs)",
                    program.display()
                )
            })
    };
    vec![
        Loop {
            name: "TypeScript SDK",
            child: spawn(std::path::Path::new("node"), "tests/interop/ts/loop.mjs"),
        },
        Loop {
            name: "Python SDK",
            child: spawn(&python, "tests/interop/python/loop.py"),
        },
    ]
}

/// Waits until the nodes hold one session per client, then a moment for their calls to
/// begin. A fixed wait is not enough: on a busy machine the Python client takes seconds to
/// import its SDK, and a restart before its first call tests nothing of it.
async fn clients_calling(cluster: &Cluster, clients: usize) {
    let deadline = tokio::time::Instant::now() + CLIENTS_START_LIMIT;
    loop {
        let mut sessions = 0;
        for node in &cluster.nodes {
            sessions += node.sessions().await;
        }
        if sessions >= clients as u64 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the clients opened {sessions} of {clients} sessions within {CLIENTS_START_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// The node whose sessions are `id`'s: it holds one now.
async fn node_holding_a_session(cluster: &Cluster) -> &'static str {
    for node in &cluster.nodes {
        if node.sessions().await > 0 {
            return node.id;
        }
    }
    panic!("no node holds a session")
}

pub async fn rolling_restart_and_a_kill_keep_every_session(kind: Kind) {
    let scratch = Scratch::new(&format!("store-{}", kind.name()));
    let redis = redis::Redis::start();
    let mut cluster = Cluster::start(&scratch);
    share_store(&mut cluster, &scratch, &redis.url());
    for node in &cluster.nodes {
        node.wait_ready(READY_LIMIT).await.expect("node ready");
    }
    let lb = Balancer::start(kind, &cluster, &scratch);
    let stop = scratch.join("stop");
    let loops = start_loops(&lb.url(), &stop);
    clients_calling(&cluster, loops.len()).await;

    for id in NODE_IDS {
        let node = cluster.node_mut(id);
        let status = node.terminate(DRAIN_LIMIT).await;
        assert!(
            status.success(),
            "node {id} exited with {status} after SIGTERM"
        );
        node.start();
        node.wait_ready(READY_LIMIT)
            .await
            .expect("restarted node ready");
        tokio::time::sleep(BACK_IN_ROTATION).await;
    }
    let holder = node_holding_a_session(&cluster).await;
    let node = cluster.node_mut(holder);
    node.kill();
    node.start();
    node.wait_ready(READY_LIMIT)
        .await
        .expect("killed node back");
    tokio::time::sleep(BACK_IN_ROTATION).await;

    std::fs::write(&stop, "").expect("write the stop file");
    for Loop { name, child } in loops {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("client output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().last().unwrap_or_default();
        let report: Value = serde_json::from_str(line).unwrap_or_else(|_| {
            panic!(
                "{name} printed no report: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        eprintln!("{name} through {}: {report}", kind.name());
        assert!(report["ok"].as_u64().unwrap_or(0) > 0, "{name}: {report}");
        assert_eq!(report["failed"], 0, "{name} failed calls: {report}");
        let sessions = report["sessions"].as_array().map_or(0, Vec::len);
        assert_eq!(sessions, 1, "{name} used one session id: {report}");
    }
}

/// How long the draining node's other session keeps it up: long enough for the request
/// handed off meanwhile, no longer than the scenario needs.
const HOLD_DRAIN_MS: u64 = 3000;
/// Between a request's head and its body. The Python SDK's transport (httpcore) writes them
/// in two calls, and a busy machine puts this much between them, or more.
const BODY_GAP: Duration = Duration::from_millis(300);
const REPLY_LIMIT: Duration = Duration::from_secs(10);

/// A request for a session whose node is draining, sent through the balancer on a
/// connection that already carried one, its body written a moment after its head: the
/// draining node hands it off (closes the connection unanswered), and the balancer must
/// retry it on another node, which restores the session and answers. Unless HAProxy waits
/// for the whole body (`option http-buffer-request`), it forwards the head at once, which
/// turns its L7 retries off for that request; the close then reaches the client as a closed
/// connection, which the Python SDK raises as "Server disconnected without sending a
/// response".
pub async fn a_request_whose_body_comes_late_is_handed_off_from_a_draining_node(kind: Kind) {
    let scratch = Scratch::new(&format!("late-body-{}", kind.name()));
    let redis = redis::Redis::start();
    let mut cluster = Cluster::start(&scratch);
    share_store(&mut cluster, &scratch, &redis.url());
    for node in &cluster.nodes {
        node.wait_ready(READY_LIMIT).await.expect("node ready");
    }
    let lb = Balancer::start(kind, &cluster, &scratch);
    // Two sessions on node a, opened on it directly: `busy` runs a call that keeps the node
    // up while it drains; `idle` ends when the drain starts, and its record stays.
    let node_a = cluster.node("a");
    let direct = Client::bounded(&format!("{}/mcp", node_a.base_url()), REPLY_LIMIT);
    let (idle, busy) = (direct.connect().await, direct.connect().await);
    let mut conn = TcpStream::connect(&lb.addr)
        .await
        .expect("connect to the balancer");
    let first = exchange(&mut conn, &lb.addr, &idle, 1, Duration::ZERO).await;
    assert_eq!(first, Some(200), "ping before the drain");

    let hold = tokio::spawn(async move {
        busy.call_tool_text(json!(1), "sleep", json!({ "ms": HOLD_DRAIN_MS }))
            .await
    });
    // The call is in flight once the node holds it; then the drain starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    node_a.begin_drain();
    let deadline = tokio::time::Instant::now() + READY_LIMIT;
    while node_a.readiness().await != Some(reqwest::StatusCode::SERVICE_UNAVAILABLE) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "node a did not start draining"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let handed_off = exchange(&mut conn, &lb.addr, &idle, 2, BODY_GAP).await;
    assert_eq!(
        handed_off,
        Some(200),
        "a request handed off by the draining node, through {}: None is a connection \
         closed without an answer",
        kind.name()
    );
    let _ = hold.await;
}

/// POSTs a `ping` for `session` on `conn`, its body `gap` after its head, and reads the
/// reply: its status, or `None` when the connection closed without one.
async fn exchange(
    conn: &mut TcpStream,
    host: &str,
    session: &Session,
    id: u64,
    gap: Duration,
) -> Option<u16> {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nMcp-Session-Id: {}\r\nMcp-Protocol-Version: {}\r\n\
         Content-Length: {}\r\n\r\n",
        session.id,
        session.version,
        body.len()
    );
    let exchange = async {
        conn.write_all(head.as_bytes()).await.ok()?;
        tokio::time::sleep(gap).await;
        conn.write_all(body.as_bytes()).await.ok()?;
        read_reply(conn).await
    };
    tokio::time::timeout(REPLY_LIMIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("no reply to ping {id} within {REPLY_LIMIT:?}"))
}

/// One HTTP/1.1 reply, read whole so that the connection can carry the next request: its
/// status, or `None` if the connection closed first.
async fn read_reply(conn: &mut TcpStream) -> Option<u16> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok());
    let complete = |buf: &[u8]| match length {
        Some(n) => buf.len() >= end + n,
        None => buf.ends_with(b"0\r\n\r\n"),
    };
    while !complete(&buf) {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(status)
}
