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

use serde_json::Value;

use super::balancer::{Balancer, Kind};
use super::nodes::{Cluster, NODE_IDS};
use super::scratch::Scratch;

#[path = "../common/redis.rs"]
mod redis;

/// After a restarted node answers /readyz, as in the rolling-restart scenario: HAProxy's
/// `rise 2` checks `inter 1s` apart.
const BACK_IN_ROTATION: Duration = Duration::from_secs(2);
const READY_LIMIT: Duration = Duration::from_secs(10);
const DRAIN_LIMIT: Duration = Duration::from_secs(15);

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
    tokio::time::sleep(Duration::from_secs(3)).await;

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
