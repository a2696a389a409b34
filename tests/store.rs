//! `[store]`: sessions that survive a restart (a `file:` store) and move between nodes (a
//! shared Redis), over real HTTP against the real binary, with a real `redis-server`
//! started on a free port.
//!
//! - a node restarted on its `file:` store serves the same session; without a store the
//!   same id gets 404 (the behaviour before `[store]`);
//! - an echo call sends Redis no command at all (`INFO commandstats`);
//! - a session restored on another node answers only its own principal;
//! - the node that lost a session ends its actor within `sessions.ownership_check`;
//! - DELETE is final on every node, with 50 requests racing it and the owner SIGKILLed;
//! - Redis killed mid-run: held sessions keep working, `/readyz` says `store`, errors are
//!   counted, and new sessions are stored again once Redis is back.

mod common;
#[path = "common/redis.rs"]
mod redis;
mod store_common;

use std::time::{Duration, Instant};

use common::{BUILTIN_TOOLS_TOML, Client, LATEST, Session, TempDir, TestServer};
use redis::{Redis, free_port};
use reqwest::StatusCode;
use serde_json::{Value, json};
use store_common::{ALICE, BOB, LIMIT, bearer, metric, node_config, start_node};

/// `session` as seen through `client` (another node, another token).
fn on(client: &Client, session: &Session) -> Session {
    Session {
        client: client.clone(),
        ..session.clone()
    }
}

async fn echo_status(session: &Session, id: u64) -> StatusCode {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "hi" } } });
    session.post_value(&body).await.status()
}

async fn local_sessions(server: &TestServer) -> u64 {
    let body: Value = reqwest::get(format!("{}/healthz", server.url.trim_end_matches("/mcp")))
        .await
        .expect("GET /healthz")
        .json()
        .await
        .expect("healthz JSON");
    body["sessions"].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn a_restarted_node_serves_the_same_session_from_its_file_store() {
    let dir = TempDir::new("store-file");
    let url = format!("file:{}", dir.path().join("state.redb").display());
    let with_store = node_config("solo", &url, "", false);
    let without = format!("[server]\nnode_id = \"solo\"\n{BUILTIN_TOOLS_TOML}");

    for (toml, expected) in [
        (without, StatusCode::NOT_FOUND),
        (with_store, StatusCode::OK),
    ] {
        let mut server = start_node(&dir, "node.toml", &toml);
        let session = server.bounded_client(LIMIT).connect().await;
        let echo = json!({ "name": "echo", "arguments": { "text": "hi" } });
        let before = session.request(json!(1), "tools/call", echo).await;
        assert_eq!(before.status, StatusCode::OK);
        let event_id = before
            .event_ids
            .last()
            .cloned()
            .unwrap_or_else(|| "1.1".into());
        assert!(
            server.terminate(LIMIT).is_some(),
            "the node exits on SIGTERM"
        );

        let server = start_node(&dir, "node.toml", &toml);
        let again = on(&server.bounded_client(LIMIT), &session);
        let status = echo_status(&again, 2).await;
        assert_eq!(status, expected, "the session after a restart; {toml}");
        if expected == StatusCode::OK {
            let text = again
                .call_tool_text(json!(3), "echo", json!({ "text": "back" }))
                .await;
            assert_eq!(text, "back");
            // A Last-Event-ID from before the restart opens a fresh stream, replaying nothing.
            let stream = again.get(Some(&event_id)).await;
            assert_eq!(
                stream.status(),
                StatusCode::OK,
                "GET with Last-Event-ID {event_id}"
            );
        }
    }
}

#[tokio::test]
async fn echo_calls_send_redis_no_command() {
    let redis = Redis::start();
    let dir = TempDir::new("store-commands");
    let server = start_node(
        &dir,
        "a.toml",
        &node_config("a", &redis.url(), "ownership_check = \"1h\"", false),
    );
    let session = server.bounded_client(LIMIT).connect().await;
    for id in 0..5 {
        assert_eq!(echo_status(&session, id).await, StatusCode::OK);
    }
    let key = format!("mcp:session:{}", session.id);
    let deadline = Instant::now() + LIMIT;
    while !redis
        .cli(&["HGET", &key, "data"])
        .contains("\"initialized\":true")
    {
        assert!(Instant::now() < deadline, "the record says initialized");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = redis.commands();
    const CALLS: u64 = 200;
    for id in 0..CALLS {
        assert_eq!(echo_status(&session, 100 + id).await, StatusCode::OK);
    }
    let sent = redis.commands() - before;
    eprintln!("Redis commands over {CALLS} echo calls: {sent}");
    assert_eq!(sent, 0, "Redis commands per echo call must be 0");
}

#[tokio::test]
async fn a_restored_session_answers_only_its_own_principal() {
    let redis = Redis::start();
    let dir = TempDir::new("store-principal");
    let a = start_node(&dir, "a.toml", &node_config("a", &redis.url(), "", true));
    let b = start_node(&dir, "b.toml", &node_config("b", &redis.url(), "", true));
    let alice = bearer(&a.url, ALICE).connect().await;
    assert_eq!(echo_status(&alice, 1).await, StatusCode::OK);

    let bob_on_b = on(&bearer(&b.url, BOB), &alice);
    assert_eq!(echo_status(&bob_on_b, 2).await, StatusCode::NOT_FOUND);
    assert_eq!(
        local_sessions(&b).await,
        0,
        "bob's request restored nothing"
    );
    let unknown = Session {
        id: "b.00000000000000000000000000000000".into(),
        ..on(&bearer(&b.url, ALICE), &alice)
    };
    assert_eq!(echo_status(&unknown, 3).await, StatusCode::NOT_FOUND);

    let mut latencies = Vec::new();
    for round in 0..20u64 {
        // Each round restores on the node that does not hold the session.
        let target = if round % 2 == 0 { &b } else { &a };
        let alice_there = on(&bearer(&target.url, ALICE), &alice);
        let started = Instant::now();
        assert_eq!(echo_status(&alice_there, 10 + round).await, StatusCode::OK);
        latencies.push(started.elapsed());
    }
    latencies.sort();
    eprintln!(
        "restore + echo latency over 20 restores: p50 {:?}, p99 {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
}

#[tokio::test]
async fn the_node_that_lost_a_session_ends_its_actor_within_ownership_check() {
    let redis = Redis::start();
    let dir = TempDir::new("store-ownership");
    let sessions = "ownership_check = \"1s\"";
    let a = start_node(
        &dir,
        "a.toml",
        &node_config("a", &redis.url(), sessions, false),
    );
    let b = start_node(
        &dir,
        "b.toml",
        &node_config("b", &redis.url(), sessions, false),
    );
    let session = a.bounded_client(LIMIT).connect().await;
    assert_eq!(echo_status(&session, 1).await, StatusCode::OK);

    let on_b = on(&b.bounded_client(LIMIT), &session);
    assert_eq!(echo_status(&on_b, 2).await, StatusCode::OK, "restored on b");
    let moved = Instant::now();
    // a still holds its actor. Its first message once ownership_check has passed since its
    // last check makes it check the store: it must find the session taken and end. Only
    // that one message goes to a, since a later one would restore the session there, as any
    // request for a session a node does not hold does.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let _ = echo_status(&session, 10).await;
    while metric(&a, "mcp_sessions_ended_total").await < 1.0 {
        assert!(
            moved.elapsed() < Duration::from_secs(4),
            "a's actor still runs {:?} after b took the session",
            moved.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "a's actor ended {:?} after b took the session",
        moved.elapsed()
    );
    // The ended actor lets go of its slot. A request for the session that reaches a from
    // now on restores it there, as for any session a node does not hold, so what a holds
    // is what it started since, not a fixed count.
    let settled = Instant::now();
    loop {
        let held = local_sessions(&a).await as f64;
        let started = metric(&a, "mcp_sessions_created_total").await;
        let ended = metric(&a, "mcp_sessions_ended_total").await;
        if held == started - ended {
            break;
        }
        assert!(
            settled.elapsed() < Duration::from_secs(2),
            "a holds {held} sessions after starting {started} and ending {ended}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        echo_status(&on_b, 3).await,
        StatusCode::OK,
        "b still serves it"
    );
}

#[tokio::test]
async fn delete_is_final_on_every_node_while_requests_race_it() {
    let redis = Redis::start();
    let dir = TempDir::new("store-delete");
    let sessions = "ownership_check = \"1s\"";
    let a_toml = node_config("a", &redis.url(), sessions, false);
    let mut a = start_node(&dir, "a.toml", &a_toml);
    let b = start_node(
        &dir,
        "b.toml",
        &node_config("b", &redis.url(), sessions, false),
    );
    let session = a.bounded_client(LIMIT).connect().await;
    assert_eq!(echo_status(&session, 1).await, StatusCode::OK);

    let on_b = on(&b.bounded_client(LIMIT), &session);
    // b takes the session over, so a still holds an actor it no longer owns: the DELETE
    // reaches a, and b must not serve the session afterwards either.
    assert_eq!(echo_status(&on_b, 2).await, StatusCode::OK, "restored on b");
    let racing: Vec<_> = (0..50u64)
        .map(|i| {
            let s = if i % 2 == 0 {
                on_b.clone()
            } else {
                session.clone()
            };
            tokio::spawn(async move { echo_status(&s, 100 + i).await })
        })
        .collect();
    assert_eq!(session.delete().await, StatusCode::OK);
    let deleted = Instant::now();
    for task in racing {
        let status = task.await.expect("racing request");
        assert!(
            status == StatusCode::OK || status == StatusCode::NOT_FOUND,
            "a racing request got {status}"
        );
    }
    // The other nodes hear of the DELETE from the store at once (pub/sub); this is well
    // under any `ownership_check`.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut served_after = 0;
    for i in 0..10u64 {
        for s in [&session, &on_b] {
            if echo_status(s, 300 + i).await != StatusCode::NOT_FOUND {
                served_after += 1;
            }
        }
    }
    eprintln!(
        "requests served 50 ms after the DELETE was answered: {served_after} of 20 (checked {:?} after it)",
        deleted.elapsed()
    );
    assert_eq!(served_after, 0, "no node serves a deleted session");
    let key = format!("mcp:deleted:{}", session.id);
    assert_eq!(
        redis.cli(&["EXISTS", &key]).trim(),
        "1",
        "a tombstone stays"
    );
    let record = format!("mcp:session:{}", session.id);
    assert_eq!(
        redis.cli(&["EXISTS", &record]).trim(),
        "0",
        "the record is gone"
    );

    a.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = a.wait_exit(LIMIT);
    let a = start_node(&dir, "a.toml", &a_toml);
    let on_a = on(&a.bounded_client(LIMIT), &session);
    let mut served_after_kill = 0;
    for i in 0..10u64 {
        for s in [&on_a, &on_b] {
            if echo_status(s, 500 + i).await != StatusCode::NOT_FOUND {
                served_after_kill += 1;
            }
        }
    }
    assert_eq!(
        served_after_kill, 0,
        "nor after its first node was SIGKILLed and restarted"
    );
}

#[tokio::test]
async fn redis_down_keeps_held_sessions_and_counts_errors() {
    let mut redis = Redis::start();
    let port = redis.port;
    let dir = TempDir::new("store-down");
    let server = start_node(&dir, "a.toml", &node_config("a", &redis.url(), "", false));
    let client = server.bounded_client(LIMIT);
    let held = client.connect().await;
    assert_eq!(echo_status(&held, 1).await, StatusCode::OK);

    redis.kill();
    assert_eq!(
        echo_status(&held, 2).await,
        StatusCode::OK,
        "held sessions go on"
    );
    // A new session's record cannot be written: the session still starts, in memory.
    let fresh = client.initialize(LATEST, json!({})).await;
    let deadline = Instant::now() + LIMIT;
    while metric(&server, "mcp_store_errors_total").await < 1.0 {
        assert!(Instant::now() < deadline, "store errors are counted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ready: Value = reqwest::get(format!("{}/readyz", server.admin_url))
        .await
        .expect("GET /readyz")
        .json()
        .await
        .expect("readyz JSON");
    assert_eq!(ready["store"], "down", "{ready}");
    assert_eq!(echo_status(&held, 3).await, StatusCode::OK);
    assert_eq!(echo_status(&fresh, 4).await, StatusCode::OK);

    let redis = Redis::on_port(port);
    let later = client.initialize(LATEST, json!({})).await;
    let key = format!("mcp:session:{}", later.id);
    let deadline = Instant::now() + LIMIT;
    while redis.cli(&["EXISTS", &key]).trim() != "1" {
        assert!(
            Instant::now() < deadline,
            "a new session is stored once Redis is back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unreachable_store_stops_the_start_and_a_huge_record_is_refused() {
    let port = free_port();
    let dir = TempDir::new("store-unreachable");
    let toml = node_config("a", &format!("redis://127.0.0.1:{port}/0"), "", false);
    let path = dir.write("a.toml", &toml);
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
        "--config",
    ];
    let mut all: Vec<&str> = args.to_vec();
    let path_text = path.display().to_string();
    all.push(&path_text);
    let (status, stderr) = common::run_binary(&all, LIMIT).expect("the start ends by itself");
    assert!(!status.success());
    assert!(stderr.contains("[store]"), "{stderr}");

    let redis = Redis::start();
    let server = start_node(&dir, "b.toml", &node_config("b", &redis.url(), "", false));
    let huge = json!({ "experimental": { "blob": "x".repeat(8192) } });
    let body = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LATEST, "capabilities": huge,
                    "clientInfo": { "name": "huge", "version": "1" } }
    });
    let resp = server.bounded_client(LIMIT).post_raw(&body, &[]).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let text = resp.text().await.expect("body");
    assert!(text.contains("max_record_bytes"), "{text}");
}

#[tokio::test]
async fn the_typescript_client_keeps_its_session_across_a_restart_on_a_file_store() {
    let dir = TempDir::new("store-ts");
    let url = format!("file:{}", dir.path().join("state.redb").display());
    let config = dir.write("node.toml", &node_config("solo", &url, "", false));
    let listen = format!("127.0.0.1:{}", free_port());
    let log = dir.path().join("node.log");
    let mut server = TestServer::at(&listen, &config, &[], &log);
    let stop = dir.path().join("stop");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/ts/loop.mjs");
    let client = std::process::Command::new("node")
        .arg(script)
        .arg(&server.url)
        .arg(&stop)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node tests/interop/ts/loop.mjs (scripts/interop-sdks.sh installs the SDK)");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        server.terminate(LIMIT).is_some(),
        "the node exits on SIGTERM"
    );
    let _server = TestServer::at(&listen, &config, &[], &log);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    std::fs::write(&stop, "").expect("stop file");
    let out = tokio::task::spawn_blocking(move || client.wait_with_output())
        .await
        .expect("join")
        .expect("client output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| {
            panic!(
                "no report: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    eprintln!("TypeScript SDK across a restart: {report}");
    assert_eq!(
        report["sessions"].as_array().map_or(0, Vec::len),
        1,
        "{report}"
    );
    // Calls fail only while no server listens; every call after the restart succeeds.
    assert!(report["tail"].as_u64().unwrap_or(0) >= 5, "{report}");
}

#[tokio::test]
async fn a_variable_the_store_url_names_reaches_no_child() {
    let dir = TempDir::new("store-env");
    let url = "file:${MCP_TEST_STORE_DIR}/state.redb";
    let printenv = "[[tools]]\nname = \"printenv\"\ncommand = [\"env\"]\ninput_schema = { type = \"object\" }\n";
    let toml = format!("{}{printenv}", node_config("solo", url, "", false));
    let path = dir.path().join("node.toml");
    std::fs::write(&path, toml).expect("config");
    let store_dir = dir.path().display().to_string();
    let server = TestServer::with_config_file(&path, &[("MCP_TEST_STORE_DIR", &store_dir)]);
    let session = server.bounded_client(LIMIT).connect().await;
    let env = session
        .call_tool_text(json!(1), "printenv", json!({}))
        .await;
    assert!(env.contains("PATH="), "{env}");
    assert!(
        !env.contains("MCP_TEST_STORE_DIR"),
        "a child never sees what [store] url names: {env}"
    );
    assert!(
        dir.path().join("state.redb").exists(),
        "the store still opened"
    );
}
