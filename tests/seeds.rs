//! The failures of shared-state MCP servers, reproduced over HTTP against the binary. Each
//! must never happen here.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Client, SseReader, TestServer};
use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// (a) The pipelined connect: `notifications/initialized` and `logging/setLevel` race on
/// separate connections right after `initialize`. A live session must never be rejected
/// as "not initialized".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_connect_never_sees_not_initialized() {
    const TRIALS: usize = 2000;
    const WORKERS: usize = 8;
    // 2,000 sessions from one address as fast as they go: past the default
    // initialize rate per address, which this race test is not about.
    let server = TestServer::with_config(&format!(
        "[http]\ninitialize_rate_per_ip = 0\n{}",
        common::BUILTIN_TOOLS_TOML
    ));
    let failures = Arc::new(AtomicUsize::new(0));
    let workers = (0..WORKERS).map(|w| {
        let client = server.client();
        let failures = Arc::clone(&failures);
        tokio::spawn(async move {
            for _ in (w..TRIALS).step_by(WORKERS) {
                let session = client.initialize(common::LATEST, json!({})).await;
                let (initialized, set_level) = tokio::join!(
                    session.notify("notifications/initialized", None),
                    session.request(json!(1), "logging/setLevel", json!({ "level": "debug" })),
                );
                let ok = initialized == StatusCode::ACCEPTED
                    && set_level.status == StatusCode::OK
                    && set_level.response(&json!(1)).and_then(|r| r.get("result"))
                        == Some(&json!({}));
                if !ok {
                    failures.fetch_add(1, Ordering::Relaxed);
                    eprintln!("trial failed: initialized={initialized} setLevel={set_level:?}");
                }
                assert_eq!(session.delete().await, StatusCode::OK);
            }
        })
    });
    for w in join_all(workers).await {
        w.expect("worker");
    }
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "failures out of {TRIALS} trials"
    );
}

/// (b) One session, 64 concurrent calls, 100 rounds: every response arrives under its own
/// id with its own text. Nothing lost, nothing mixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_in_one_session_are_never_lost_or_mixed() {
    const CONCURRENCY: usize = 64;
    const ROUNDS: usize = 100;
    let server = TestServer::start();
    let session = server.client().connect().await;
    let mut lost = 0;
    let mut mixed = 0;
    for round in 0..ROUNDS {
        let calls = (0..CONCURRENCY).map(|i| {
            let session = session.clone();
            async move {
                let id = json!(format!("r{round}-c{i}"));
                let text = format!("text of {round}/{i}");
                let reply = session
                    .request(
                        id.clone(),
                        "tools/call",
                        json!({ "name": "echo", "arguments": { "text": text } }),
                    )
                    .await;
                (id, text, reply)
            }
        });
        for (id, text, reply) in join_all(calls).await {
            assert_eq!(reply.status, StatusCode::OK);
            let responses: Vec<&Value> = reply
                .messages
                .iter()
                .filter(|m| m.get("id").is_some())
                .collect();
            match responses.as_slice() {
                [] => lost += 1,
                [only]
                    if only["id"] == id && only["result"]["content"][0]["text"] == json!(text) => {}
                _ => mixed += 1,
            }
        }
    }
    assert_eq!(
        (lost, mixed),
        (0, 0),
        "lost and mixed responses out of {}",
        CONCURRENCY * ROUNDS
    );
}

/// (c) DELETE while a tool runs: the session is gone for good, also after the tool would
/// have finished and tried to report back.
#[tokio::test]
async fn delete_during_tool_call_never_resurrects_session() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let running = session.clone();
    let call = tokio::spawn(async move {
        running
            .request(
                json!(7),
                "tools/call",
                json!({ "name": "sleep", "arguments": { "ms": 800 } }),
            )
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(session.delete().await, StatusCode::OK);

    let check_gone = || async {
        let ping = session.request(json!(100), "ping", json!({})).await;
        assert_eq!(ping.status, StatusCode::NOT_FOUND);
        assert_eq!(ping.body.as_ref().unwrap()["error"]["code"], json!(-32001));
        assert_eq!(session.get(None).await.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            session.notify("notifications/initialized", None).await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(session.delete().await, StatusCode::NOT_FOUND);
    };
    check_gone().await;
    // The interrupted call ends without a response.
    let reply = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("call ended")
        .expect("task");
    assert!(
        reply.response(&json!(7)).is_none(),
        "a deleted session answered: {reply:?}"
    );
    // Past the moment the tool would have finished.
    tokio::time::sleep(Duration::from_millis(900)).await;
    check_gone().await;
}

/// (d) A tool waiting on elicitation does not block its session: other calls complete,
/// the answer POST gets 202, and the tool returns the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_wait_never_blocks_the_session() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let ask = session
        .post_value(&json!({ "jsonrpc": "2.0", "id": "ask-1", "method": "tools/call",
                              "params": { "name": "ask", "arguments": { "question": "What is six times seven?" } } }))
        .await;
    assert_eq!(ask.status(), StatusCode::OK);
    let mut stream = SseReader::new(ask);
    let (_, elicit) = stream
        .next_message(Duration::from_secs(5))
        .await
        .expect("elicitation request");
    assert_eq!(elicit["method"], json!("elicitation/create"));
    assert_eq!(
        elicit["params"]["requestedSchema"]["required"],
        json!(["answer"])
    );

    let others = (0..16).map(|i| {
        let session = session.clone();
        async move {
            session
                .call_tool_text(
                    json!(format!("other-{i}")),
                    "echo",
                    json!({ "text": format!("t{i}") }),
                )
                .await
        }
    });
    let texts = tokio::time::timeout(Duration::from_secs(10), join_all(others))
        .await
        .expect("16 calls completed");
    assert_eq!(texts, (0..16).map(|i| format!("t{i}")).collect::<Vec<_>>());

    let answer = session
        .answer(
            &elicit["id"],
            json!({ "action": "accept", "content": { "answer": "forty-two" } }),
        )
        .await;
    assert_eq!(answer, StatusCode::ACCEPTED);
    let (_, result) = stream
        .next_message(Duration::from_secs(5))
        .await
        .expect("ask result");
    assert_eq!(result["id"], json!("ask-1"));
    assert_eq!(result["result"]["content"][0]["text"], json!("forty-two"));
    assert!(
        stream.next(Duration::from_secs(5)).await.is_none(),
        "the stream ends after the response"
    );
}

/// A client that sends requests on many connections at once to one fresh session: no
/// request sees an error, before or after `notifications/initialized`.
#[tokio::test]
async fn requests_before_initialized_are_served() {
    let server = TestServer::start();
    let client: Client = server.client();
    let session = client.initialize(common::LATEST, json!({})).await;
    let text = session
        .call_tool_text(json!(1), "echo", json!({ "text": "early" }))
        .await;
    assert_eq!(text, "early");
    assert_eq!(
        session.call(json!(2), "tools/list", json!({})).await["tools"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
}
