//! Tasks of the `io.modelcontextprotocol/tasks` extension (SEP-2663) as the standalone
//! binary serves them from its TOML file, over real HTTP on 127.0.0.1: `task_support` on
//! every tool kind, task ids a load balancer routes on, the per-principal cap under a
//! race, the task counts in `/metrics`, and a drain (SIGTERM) that finishes running tasks
//! and keeps serving their polls before the node exits.

mod common;
#[path = "task_client/mod.rs"]
mod task_client;

use std::time::{Duration, Instant};

use common::modern::Modern;
use common::{Client, TempDir, TestServer};
use futures_util::future::join_all;
use serde_json::{Value, json};
use task_client::{SLOW_ECHO_TOML, about, create, exchange, poll_until_settled, result_text};

/// Longest any task of these tests may take to settle.
const SETTLE: Duration = Duration::from_secs(15);

fn start(dir: &TempDir, toml: &str, env: &[(&str, &str)]) -> TestServer {
    let path = dir.write("config.toml", toml);
    let path = path.to_str().expect("a UTF-8 path");
    TestServer::with_args(&["--listen", "127.0.0.1:0", "--config", path], env)
}

/// `GET path` of the admin listener: the status (0 when unreachable) and the body.
async fn admin_get(server: &TestServer, path: &str) -> (u16, String) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let Ok(response) = http.get(format!("{}{path}", server.admin_url)).send().await else {
        return (0, String::new());
    };
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

async fn metrics(server: &TestServer) -> String {
    admin_get(server, "/metrics").await.1
}

async fn readyz(server: &TestServer) -> u16 {
    admin_get(server, "/readyz").await.0
}

/// The value of one sample line `series` (name and labels as exported), or 0.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

const KINDS_TOML: &str = r#"
[[tools]]
builtin = "sleep"
task_support = "optional"

[[tools]]
name = "forbidden_cmd"
command = ["true"]
task_support = "forbidden"

[[tools]]
name = "required_cmd"
command = ["true"]
task_support = "required"

[[tools]]
name = "optional_http"
url = "http://127.0.0.1:9/never"
task_support = "optional"

[[tools]]
name = "unset_cmd"
command = ["true"]
"#;

#[tokio::test]
async fn every_task_support_value_reaches_tools_list_and_a_bad_one_is_refused_with_its_location() {
    let dir = TempDir::new("task-support");
    let path = dir.write("kinds.toml", KINDS_TOML);
    let (status, stdout, stderr) = common::run_check(&path, &[]);
    assert!(status.success(), "{stdout}{stderr}");
    let server = start(&dir, KINDS_TOML, &[]);
    let client = common::modern::client_of(&server);
    let listed = Modern::request(1, "tools/list").result(&client).await;
    let support = |name: &str| {
        let tools = listed["tools"].as_array().expect("tools");
        let tool = tools.iter().find(|t| t["name"] == name).expect(name);
        tool["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("sleep"), "optional", "{listed}");
    assert_eq!(support("forbidden_cmd"), "forbidden", "{listed}");
    assert_eq!(support("required_cmd"), "required", "{listed}");
    assert_eq!(support("optional_http"), "optional", "{listed}");
    assert_eq!(
        support("unset_cmd"),
        Value::Null,
        "unset: absent, which means forbidden"
    );

    let bad = KINDS_TOML.replace(
        "task_support = \"required\"",
        "task_support = \"sometimes\"",
    );
    let path = dir.write("bad.toml", &bad);
    let (status, stdout, stderr) = common::run_check(&path, &[]);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    let line = bad
        .lines()
        .position(|l| l.contains("sometimes"))
        .expect("the bad line")
        + 1;
    let expected = format!(
        "{}:{line}:1: tools[2].task_support: unknown variant `sometimes`, expected one of \
         `forbidden`, `optional`, `required`",
        path.display()
    );
    assert!(stderr.contains(&expected), "{expected}\nnot in:\n{stderr}");
}

#[tokio::test]
async fn the_default_configuration_runs_sleep_as_a_task() {
    let server = TestServer::start();
    let client = common::modern::client_of(&server);
    let id = create(&client, 1, "sleep", json!({ "ms": 50 }))
        .await
        .expect("a task");
    let (task, _) = poll_until_settled(&client, &id, SETTLE)
        .await
        .expect("settled");
    assert_eq!(task["status"], "completed", "{task}");
}

#[tokio::test]
async fn task_ids_name_their_node_and_tasks_are_counted_in_metrics() {
    let dir = TempDir::new("task-ids");
    let toml = format!("[server]\nnode_id = \"n7\"\n{SLOW_ECHO_TOML}");
    let server = start(&dir, &toml, &[]);
    let client = common::modern::client_of(&server);
    let mut ids = Vec::new();
    for (i, text) in ["first", "second"].into_iter().enumerate() {
        let args = json!({ "seconds": "0.1", "text": text });
        ids.push((
            create(&client, i as u64, "slow_echo", args)
                .await
                .expect("task"),
            text,
        ));
    }
    let running = create(
        &client,
        9,
        "slow_echo",
        json!({ "seconds": "30", "text": "x" }),
    )
    .await
    .expect("task");
    for (id, text) in &ids {
        let (node, random) = id.split_once('.').expect("<node_id>.<random>");
        assert_eq!(node, "n7", "{id}");
        assert_eq!(random.len(), 32, "{id}");
        assert!(random.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        let (task, _) = poll_until_settled(&client, id, SETTLE)
            .await
            .expect("settled");
        assert_eq!(task["status"], "completed", "{task}");
        assert_eq!(result_text(&task), *text, "{task}");
    }
    assert_ne!(ids[0].0, ids[1].0);
    let text = metrics(&server).await;
    assert_eq!(sample(&text, "mcp_tasks_created_total"), 3.0, "{text}");
    assert_eq!(sample(&text, "mcp_tasks_live"), 1.0, "{text}");
    let (_, cancelled) = exchange(&client, &about(10, "tasks/cancel", &running)).await;
    cancelled.expect("cancel");
    let text = metrics(&server).await;
    let ended = |status: &str| {
        sample(
            &text,
            &format!("mcp_tasks_ended_total{{status=\"{status}\"}}"),
        )
    };
    assert_eq!(ended("completed"), 2.0, "{text}");
    assert_eq!(ended("cancelled"), 1.0, "{text}");
    assert_eq!(ended("failed"), 0.0, "{text}");
    assert_eq!(sample(&text, "mcp_tasks_live"), 0.0, "{text}");
}

/// Principals whose tasks fill the store before the race, so that each create's scan of
/// the store (the unfixed cap counted the owner's tasks by scanning, then inserted) takes
/// long enough for concurrent creates to overlap in it.
const FILLERS: usize = 60;

fn token(principal: usize) -> String {
    format!("task-cap-token-{principal:04}-0123456789abcdef")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_creates_by_one_principal_get_exactly_the_cap() {
    const CREATES: usize = 200;
    const CAP: usize = 10;
    let dir = TempDir::new("task-cap");
    let mut toml = format!(
        "[auth]\nresource = \"http://127.0.0.1/mcp\"\nmax_tasks_per_principal = {CAP}\n\
         max_in_flight_per_principal = 1000\n"
    );
    let names: Vec<String> = (0..=FILLERS).map(|p| format!("TASK_CAP_{p}")).collect();
    let tokens: Vec<String> = (0..=FILLERS).map(token).collect();
    for (p, var) in names.iter().enumerate() {
        toml += &format!("[[auth.tokens]]\nprincipal = \"p{p}\"\ntoken_env = \"{var}\"\n");
    }
    toml += "[[tools]]\nbuiltin = \"sleep\"\ntask_support = \"optional\"\n";
    let env: Vec<(&str, &str)> = names
        .iter()
        .map(String::as_str)
        .zip(tokens.iter().map(String::as_str))
        .collect();
    let server = start(&dir, &toml, &env);
    let client = Client::bounded(&server.url, Duration::from_secs(20));
    let create_as = |principal: usize, i: usize| {
        let request = task_client::call(i as u64, "sleep", json!({ "ms": 60000 }))
            .header("Authorization", &format!("Bearer {}", token(principal)));
        let client = client.clone();
        async move { exchange(&client, &request).await }
    };
    let fill = (1..=FILLERS).flat_map(|p| (0..CAP).map(move |i| (p, i)));
    let filled = join_all(fill.map(|(p, i)| create_as(p, i))).await;
    assert!(filled.iter().all(|(_, r)| r.is_ok()), "{filled:?}");
    let bearer = format!("Bearer {}", token(0));
    // One connection per create, opened before the race, so the creates reach the server
    // together rather than one connection set-up apart.
    let clients: Vec<Client> = (0..CREATES)
        .map(|_| Client::bounded(&server.url, Duration::from_secs(20)))
        .collect();
    let warm = clients.iter().map(|c| {
        let probe = about(0, "tasks/get", "none").header("Authorization", &bearer);
        async move { exchange(c, &probe).await }
    });
    join_all(warm).await;
    let races = clients.iter().enumerate().map(|(i, client)| {
        let request = task_client::call(i as u64, "sleep", json!({ "ms": 60000 }))
            .header("Authorization", &bearer);
        async move { exchange(client, &request).await }
    });
    let answers = join_all(races).await;
    let tasks = answers
        .iter()
        .filter(|(_, r)| r.as_ref().is_ok_and(|r| r["resultType"] == "task"))
        .count();
    // Refused as the other per-principal caps are: 429, a refusal to retry later.
    let refused = answers
        .iter()
        .filter(|(status, r)| {
            *status == 429
                && r.as_ref()
                    .is_err_and(|e| e.contains("auth.max_tasks_per_principal"))
        })
        .count();
    eprintln!("{CREATES} concurrent creates, cap {CAP}: {tasks} tasks, {refused} refused");
    assert_eq!((tasks, refused), (CAP, CREATES - CAP), "{answers:?}");
    let text = metrics(&server).await;
    let series = "mcp_limit_rejections_total{limit=\"max_tasks_per_principal\"}";
    assert_eq!(sample(&text, series), (CREATES - CAP) as f64, "{text}");
}

/// A node that drains with `drain_timeout` and a 2 s linger.
fn draining_node(dir: &TempDir, drain_timeout: &str) -> TestServer {
    let toml = format!(
        "[server]\nnode_id = \"d\"\ndrain_timeout = \"{drain_timeout}\"\n\
         [tasks]\nlinger_after_drain = \"2s\"\n{SLOW_ECHO_TOML}"
    );
    start(dir, &toml, &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_lets_a_running_task_finish_serves_its_polls_and_exits_after_the_linger() {
    let dir = TempDir::new("task-drain");
    let mut server = draining_node(&dir, "20s");
    let client = common::modern::client_of(&server);
    let args = json!({ "seconds": "2", "text": "built" });
    let id = create(&client, 1, "slow_echo", args).await.expect("task");
    assert_eq!(readyz(&server).await, 200, "ready while a task runs");
    let sigterm = Instant::now();
    server.signal(nix::sys::signal::Signal::SIGTERM);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(readyz(&server).await, 503, "not ready once draining");
    let refused = task_client::call(2, "slow_echo", json!({ "seconds": "0", "text": "new" }))
        .send(&client)
        .await;
    assert_eq!(
        refused.status().as_u16(),
        503,
        "a new task-augmented call is new work"
    );
    assert!(refused.headers().get("retry-after").is_some());
    let (task, polls) = poll_until_settled(&client, &id, SETTLE)
        .await
        .expect("polls served");
    let settled = sigterm.elapsed();
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(result_text(&task), "built", "{task}");
    // Still readable during the linger.
    let (_, again) = exchange(&client, &about(99, "tasks/get", &id)).await;
    assert_eq!(again.expect("readable until exit")["status"], "completed");
    let status = tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(15)));
    let exited = sigterm.elapsed();
    eprintln!(
        "drain with a 2 s task: settled {settled:?} after SIGTERM ({polls} polls), exited \
         {exited:?} after SIGTERM ({status:?})"
    );
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    assert!(
        exited >= settled + Duration::from_millis(1800),
        "the linger: {exited:?} vs {settled:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_still_running_at_the_drain_timeout_fails_saying_the_node_shut_down() {
    let dir = TempDir::new("task-drain-timeout");
    let mut server = draining_node(&dir, "1s");
    let client = common::modern::client_of(&server);
    let sentinel = format!("drain-sentinel-{}", common::unique());
    let args = json!({ "seconds": "60", "text": sentinel });
    let id = create(&client, 1, "slow_echo", args).await.expect("task");
    let sigterm = Instant::now();
    server.signal(nix::sys::signal::Signal::SIGTERM);
    let (task, _) = poll_until_settled(&client, &id, SETTLE)
        .await
        .expect("polls served");
    assert_eq!(task["status"], "failed", "{task}");
    let message = task["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("shut down"), "{task}");
    let text = metrics(&server).await;
    assert_eq!(
        sample(&text, "mcp_tasks_ended_total{status=\"failed\"}"),
        1.0,
        "{text}"
    );
    let status = tokio::task::block_in_place(|| server.wait_exit(Duration::from_secs(15)));
    eprintln!(
        "drain_timeout 1 s with a 60 s task: exited {:?} after SIGTERM",
        sigterm.elapsed()
    );
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    let stopped = common::eventually(Duration::from_secs(5), || {
        common::processes_matching(&sentinel).is_empty()
    })
    .await;
    assert!(stopped, "the task's command outlived the node");
}
