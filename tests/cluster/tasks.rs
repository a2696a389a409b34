//! Tasks of the `io.modelcontextprotocol/tasks` extension behind each balancer, with the
//! recipes as shipped: `tasks/get`, `tasks/update` and `tasks/cancel` name their task in
//! `Mcp-Name`, and the recipes send them to the node whose id prefixes it.
//!
//! One scenario per balancer, in four steps on one cluster (each start costs four
//! processes): 30 command-tool tasks created and polled through the balancer; a
//! `tasks/cancel`; SIGTERM of the node running a task; SIGKILL of the node holding one.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use super::balancer::{Balancer, Kind};
use super::nodes::{Cluster, NODE_IDS, minting_node};
use super::scratch::Scratch;
use crate::common::Client;
use crate::task_client::{
    SLOW_ECHO_TOML, about, create, exchange, poll_until_settled, result_text,
};

const TASKS: u64 = 30;
/// Longest a task of this scenario may take to settle, polls included.
const SETTLE: Duration = Duration::from_secs(20);
/// How long a node may take to exit after SIGTERM: its 2 s task, the linger, and margin.
const DRAIN_LIMIT: Duration = Duration::from_secs(20);
/// Shorter than the default 5 s, to keep the scenario short; the rule is the same.
const NODE_TOML: &str = "\n[tasks]\nlinger_after_drain = \"2s\"\n";

pub async fn tasks_follow_their_node(kind: Kind) {
    let scratch = Scratch::new(&format!("tasks-{}", kind.name()));
    let mut cluster = Cluster::start_with(&scratch, &format!("{NODE_TOML}{SLOW_ECHO_TOML}"));
    for node in &cluster.nodes {
        node.wait_ready(Duration::from_secs(10))
            .await
            .expect("ready");
    }
    let lb = Balancer::start(kind, &cluster, &scratch);
    let client = Client::bounded(&lb.url(), Duration::from_secs(20));
    let name = kind.name();

    // a. 30 tasks, created and polled through the balancer.
    let started = Instant::now();
    let polls = (0..TASKS).map(|i| {
        let client = client.clone();
        async move {
            let text = format!("task {i} via the balancer");
            let args = json!({ "seconds": "0.5", "text": text });
            let id = create(&client, i, "slow_echo", args).await?;
            let (task, polls) = poll_until_settled(&client, &id, SETTLE).await?;
            if task["status"] != "completed" || result_text(&task) != text {
                return Err(format!("{id} ended as {task}, not with {text:?}"));
            }
            Ok::<_, String>((id, polls))
        }
    });
    let outcomes = futures_util::future::join_all(polls).await;
    let mut by_node: BTreeMap<String, u64> = BTreeMap::new();
    let mut total_polls = 0;
    for outcome in &outcomes {
        let (id, polls) = outcome.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        *by_node.entry(minting_node(id).to_string()).or_default() += 1;
        total_polls += polls;
    }
    eprintln!(
        "{name}: {TASKS}/{TASKS} tasks completed with their own input, {total_polls}/{total_polls} \
         polls found their task, spread {by_node:?}, in {:?}",
        started.elapsed()
    );
    assert!(
        by_node.len() >= 2,
        "{name}: tasks spread over one node: {by_node:?}"
    );

    // b. tasks/cancel through the balancer.
    let long = json!({ "seconds": "60", "text": "cancelled" });
    let id = create(&client, 100, "slow_echo", long.clone())
        .await
        .expect("task");
    let (_, cancel) = exchange(&client, &about(101, "tasks/cancel", &id)).await;
    cancel.unwrap_or_else(|e| panic!("{name}: tasks/cancel of {id}: {e}"));
    let (task, _) = poll_until_settled(&client, &id, SETTLE)
        .await
        .expect("cancelled");
    assert_eq!(task["status"], "cancelled", "{name}: {task}");

    // c. SIGTERM of the node running a task: the task completes, its result is read
    // through the balancer, and the node exits 0.
    let args = json!({ "seconds": "2", "text": "outlived the drain" });
    let id = create(&client, 200, "slow_echo", args).await.expect("task");
    let node = minting_node(&id).to_string();
    let sigterm = Instant::now();
    let (status, polled) = tokio::join!(
        cluster.node_mut(&node).terminate(DRAIN_LIMIT),
        poll_until_settled(&client, &id, SETTLE)
    );
    let (task, polls) = polled.unwrap_or_else(|e| panic!("{name}: during the drain: {e}"));
    assert_eq!(task["status"], "completed", "{name}: {task}");
    assert_eq!(result_text(&task), "outlived the drain");
    eprintln!(
        "{name}: SIGTERM of node {node} with a 2 s task: completed, read in {polls} polls \
         through the balancer; the node exited {:?} after SIGTERM with {status}",
        sigterm.elapsed()
    );
    assert_eq!(status.code(), Some(0), "{name}: node {node} exits 0");

    // d. SIGKILL of the node holding a task: its id gets "unknown taskId", not 502.
    let id = create(&client, 300, "slow_echo", long).await.expect("task");
    let holder = minting_node(&id).to_string();
    assert_ne!(holder, node, "the drained node is gone");
    cluster.node_mut(&holder).kill();
    let (status, answer) = exchange(&client, &about(301, "tasks/get", &id)).await;
    let error = answer.expect_err("the task died with its node");
    eprintln!("{name}: node {holder} killed: its task's poll got HTTP {status}: {error}");
    assert_ne!(status, StatusCode::BAD_GATEWAY.as_u16(), "{name}: {error}");
    assert!(
        error.contains("unknown taskId"),
        "{name}: HTTP {status}: {error}"
    );
    assert!(NODE_IDS.contains(&holder.as_str()));
}
