//! `[store]` and the 2026-07-28 tasks extension (SEP-2663): a task's final status and
//! result outlive the node that ran it, over real HTTP against the real binary, with a real
//! `redis-server` on a free port (or a `file:` store).
//!
//! - a task finished on node A is answered by node B, as A would have, after A is SIGKILLed;
//!   a cancelled task stays cancelled, and another principal gets the unknown-task error;
//! - A restarted with the same node id answers it from the store; a result over
//!   `[store] max_task_result` is not stored, and is counted; with Redis down the answer is
//!   the unknown-task error of today, and the error is counted;
//! - with `file:`, a single node restarted answers its finished task;
//! - a task a drain had to fail (`server.drain_timeout`) is read as failed on another node.

mod common;
#[path = "common/redis.rs"]
mod redis;
mod store_common;
#[path = "task_client/mod.rs"]
mod task_client;

use std::time::{Duration, Instant};

use common::{Client, TempDir, TestServer};
use nix::sys::signal::Signal;
use redis::Redis;
use serde_json::{Value, json};
use store_common::{ALICE, BOB, LIMIT, bearer, metric, node_config_with, start_node};
use task_client::{about, create, exchange, poll_until_settled, result_text};

/// `echo` and `sleep`, each able to run as a task.
const TASK_TOOLS: &str = "
[[tools]]
builtin = \"echo\"
task_support = \"optional\"

[[tools]]
builtin = \"sleep\"
task_support = \"optional\"
";

/// `tasks/get` of `id` through `client`: the task, or the error's JSON text.
async fn get(client: &Client, id: &str) -> Result<Value, String> {
    exchange(client, &about(7, "tasks/get", id)).await.1
}

/// `tasks/get` of `id` until `client` finds it, at most [`LIMIT`].
async fn get_eventually(client: &Client, id: &str, what: &str) -> Value {
    let deadline = Instant::now() + LIMIT;
    loop {
        match get(client, id).await {
            Ok(task) => return task,
            Err(e) => assert!(Instant::now() < deadline, "{what}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A task of `tool` created and settled on `client`'s node; its id and final view.
async fn settled(client: &Client, tool: &str, arguments: Value) -> (String, Value) {
    let id = create(client, 1, tool, arguments).await.expect("a task");
    let (task, _) = poll_until_settled(client, &id, LIMIT)
        .await
        .expect("settled");
    (id, task)
}

/// Waits until the store holds task `id` (its write is not on the request's path).
fn wait_stored(redis: &Redis, id: &str) {
    let key = format!("mcp:task:{id}");
    let deadline = Instant::now() + LIMIT;
    while redis.cli(&["EXISTS", &key]).trim() != "1" {
        assert!(Instant::now() < deadline, "{key} was never written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The empty ack of `tasks/cancel` and `tasks/update`: a complete result with no task in it.
fn assert_ack(reply: &Result<Value, String>, what: &str) {
    let ack = reply.as_ref().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(ack["resultType"], "complete", "{what}: {ack}");
    assert!(ack.get("status").is_none(), "{what}: {ack}");
}

fn kill(server: &mut TestServer) {
    server.signal(Signal::SIGKILL);
    assert!(
        server.wait_exit(LIMIT).is_some(),
        "the node dies on SIGKILL"
    );
}

/// The parts of a task that its owner decided, not the moment it was read.
fn same_task(seen: &Value, owner_saw: &Value) {
    for field in [
        "taskId",
        "status",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "result",
    ] {
        assert_eq!(
            seen[field], owner_saw[field],
            "{field}: {seen} vs {owner_saw}"
        );
    }
}

#[tokio::test]
async fn a_task_finished_on_one_node_is_answered_by_another_after_its_owner_is_killed() {
    let redis = Redis::start();
    let dir = TempDir::new("store-tasks-move");
    let config = |node: &str| node_config_with(node, &redis.url(), "", "", true, TASK_TOOLS);
    let mut a = start_node(&dir, "a.toml", &config("a"));
    let b = start_node(&dir, "b.toml", &config("b"));
    let (alice_a, alice_b, bob_b) = (
        bearer(&a.url, ALICE),
        bearer(&b.url, ALICE),
        bearer(&b.url, BOB),
    );

    let (done, on_a) = settled(&alice_a, "echo", json!({ "text": "kept" })).await;
    assert_eq!(on_a["status"], "completed", "{on_a}");
    let running = create(&alice_a, 2, "sleep", json!({ "ms": 30_000 }))
        .await
        .expect("a task");
    let (_, cancelled) = exchange(&alice_a, &about(3, "tasks/cancel", &running)).await;
    assert_ack(&cancelled, "tasks/cancel on the owner");
    wait_stored(&redis, &running);

    let before_kill = get_eventually(&alice_b, &done, "node B answers A's finished task").await;
    same_task(&before_kill, &on_a);
    kill(&mut a);

    let on_b = get(&alice_b, &done).await.expect("B answers after A died");
    same_task(&on_b, &on_a);
    assert_eq!(result_text(&on_b), "kept");
    let stopped = get(&alice_b, &running).await.expect("the cancelled task");
    assert_eq!(stopped["status"], "cancelled", "{stopped}");

    // Final stays final: a cancel or an update is the owner's ack for an ended task.
    for method in ["tasks/cancel", "tasks/update"] {
        let (_, ack) = exchange(&alice_b, &about(4, method, &done)).await;
        assert_ack(&ack, method);
    }
    same_task(&get(&alice_b, &done).await.expect("still there"), &on_a);

    let unknown = get(&alice_b, "b.00000000000000000000000000000000")
        .await
        .expect_err("an unknown task");
    let foreign = get(&bob_b, &done).await.expect_err("bob sees no task");
    assert_eq!(
        foreign.replace(&done, "ID"),
        unknown.replace("b.00000000000000000000000000000000", "ID"),
        "another principal's task reads exactly like an unknown one"
    );
}

#[tokio::test]
async fn a_node_restarted_with_the_same_id_answers_its_finished_task_from_redis() {
    let mut redis = Redis::start();
    let dir = TempDir::new("store-tasks-restart");
    let small = "max_task_result = 1024";
    let config = node_config_with("a", &redis.url(), "", small, false, TASK_TOOLS);
    let mut a = start_node(&dir, "a.toml", &config);
    let client = a.bounded_client(LIMIT);
    let (done, on_a) = settled(&client, "echo", json!({ "text": "again" })).await;
    let (big, _) = settled(&client, "echo", json!({ "text": "x".repeat(2000) })).await;
    wait_stored(&redis, &done);
    wait_stored(&redis, &big);
    // The stored task expires with the task: what is left of its ttl.
    let left: u64 = redis
        .cli(&["PTTL", &format!("mcp:task:{done}")])
        .trim()
        .parse()
        .unwrap_or(0);
    let ttl = on_a["ttlMs"].as_u64().expect("ttlMs");
    assert!(left > 0 && left <= ttl, "PTTL {left} against ttlMs {ttl}");
    let limited = "mcp_limit_rejections_total{limit=\"store_max_task_result\"}";
    assert_eq!(metric(&a, limited).await, 1.0, "the big result is counted");
    kill(&mut a);

    let a = start_node(&dir, "a.toml", &config);
    let client = a.bounded_client(LIMIT);
    let on_restart = get(&client, &done).await.expect("read from the store");
    same_task(&on_restart, &on_a);
    let too_big = get(&client, &big).await.expect("the big task's status");
    assert_eq!(too_big["status"], "completed", "{too_big}");
    assert!(
        too_big["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_task_result")),
        "{too_big}"
    );

    redis.kill();
    let down = get(&client, &done).await.expect_err("Redis is down");
    assert!(down.contains("unknown taskId"), "{down}");
    assert!(metric(&a, "mcp_store_errors_total").await >= 1.0);
}

#[tokio::test]
async fn with_a_file_store_a_restarted_node_answers_its_finished_task() {
    let dir = TempDir::new("store-tasks-file");
    let url = format!("file:{}", dir.path().join("state.redb").display());
    let config = node_config_with("solo", &url, "", "", false, TASK_TOOLS);
    let mut server = start_node(&dir, "solo.toml", &config);
    let client = server.bounded_client(LIMIT);
    let (done, on_first) = settled(&client, "echo", json!({ "text": "on disk" })).await;
    assert!(
        server.terminate(LIMIT).is_some(),
        "the node exits on SIGTERM"
    );

    let server = start_node(&dir, "solo.toml", &config);
    let again = get(&server.bounded_client(LIMIT), &done)
        .await
        .expect("the restarted node answers from its file");
    same_task(&again, &on_first);
    assert_eq!(result_text(&again), "on disk");
}

#[tokio::test]
async fn a_task_its_drain_could_not_wait_for_is_read_as_failed_after_the_node_exits() {
    let redis = Redis::start();
    let dir = TempDir::new("store-tasks-drain");
    let tools = format!("[tasks]\nlinger_after_drain = \"100ms\"\n{TASK_TOOLS}");
    let config = |node: &str| node_config_with(node, &redis.url(), "", "", false, &tools);
    let mut a = start_node(&dir, "a.toml", &config("a"));
    let client = a.bounded_client(LIMIT);
    let id = create(&client, 1, "sleep", json!({ "ms": 60_000 }))
        .await
        .expect("a task");
    let drained = Instant::now();
    assert!(
        a.terminate(LIMIT).is_some(),
        "the node exits after its drain"
    );
    eprintln!("node a exited {:?} after SIGTERM", drained.elapsed());

    let b = start_node(&dir, "b.toml", &config("b"));
    let task = get(&b.bounded_client(LIMIT), &id)
        .await
        .expect("the failure was stored");
    assert_eq!(task["status"], "failed", "{task}");
    assert!(
        task["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("shut down")),
        "{task}"
    );
}
