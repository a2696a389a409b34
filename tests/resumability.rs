//! SSE resumability: priming, cutting streams mid-way and resuming with `Last-Event-ID`,
//! events produced while disconnected, the replay window.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{SseReader, TestServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(5);

fn seq_of(id: &str) -> (u32, u64) {
    let (s, n) = id.split_once('.').expect("event id names its stream");
    (s.parse().expect("stream"), n.parse().expect("seq"))
}

/// Reads every event until the stream ends; returns (event id, message) pairs.
async fn drain(reader: &mut SseReader) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while let Some((id, message)) = reader.next_message(WAIT).await {
        out.push((id.expect("every message event has an id"), message));
    }
    out
}

#[tokio::test]
async fn post_stream_starts_with_a_priming_event_with_retry() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let resp = session
        .post_value(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "sleep", "arguments": { "ms": 150 }, "_meta": { "progressToken": 5 } } }))
        .await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert_eq!(resp.headers()["cache-control"], "no-cache");
    assert_eq!(resp.headers()["x-accel-buffering"], "no");
    let mut reader = SseReader::new(resp);
    let first = reader.next(WAIT).await.expect("priming event");
    assert_eq!(
        first.data,
        Some(Value::Null),
        "priming event has an empty data field"
    );
    assert!(first.id.is_some());
    assert_eq!(first.retry, Some(1000));
    let rest = drain(&mut reader).await;
    // Progress echoes the token with its JSON type (an integer here).
    assert!(
        rest.iter()
            .any(|(_, m)| m["method"] == "notifications/progress"
                && m["params"]["progressToken"] == json!(5))
    );
    assert_eq!(rest.last().expect("response").1["id"], json!(1));
}

#[tokio::test]
async fn cut_post_stream_resumes_with_every_event_exactly_once() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let resp = session
        .post_value(&json!({ "jsonrpc": "2.0", "id": "slow", "method": "tools/call",
            "params": { "name": "sleep", "arguments": { "ms": 700 }, "_meta": { "progressToken": "p" } } }))
        .await;
    let mut reader = SseReader::new(resp);
    let priming = reader
        .next(WAIT)
        .await
        .expect("priming")
        .id
        .expect("priming id");
    let mut seen = vec![];
    // Take the start log and the first progress event, then cut the connection.
    while seen.len() < 2 {
        let (id, message) = reader
            .next_message(WAIT)
            .await
            .expect("event before the cut");
        seen.push((id.expect("id"), message));
    }
    drop(reader);
    // The tool goes on while nobody listens: its events, and its response, are logged.
    tokio::time::sleep(Duration::from_millis(900)).await;

    let last = seen
        .last()
        .map(|(id, _)| id.clone())
        .unwrap_or(priming.clone());
    let resumed = session.get(Some(&last)).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let rest = drain(&mut SseReader::new(resumed)).await;
    seen.extend(rest);

    let stream = seq_of(&priming).0;
    let seqs: Vec<u64> = seen
        .iter()
        .map(|(id, _)| seq_of(id))
        .inspect(|(s, _)| assert_eq!(*s, stream))
        .map(|(_, n)| n)
        .collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "every event exactly once, in order");
    let (_, response) = seen.last().expect("response");
    assert_eq!(response["id"], json!("slow"));
    assert_eq!(
        response["result"]["content"][0]["text"],
        json!("slept 700 ms")
    );
    let progress = seen
        .iter()
        .filter(|(_, m)| m["method"] == "notifications/progress")
        .count();
    assert!(progress >= 5, "progress events: {progress}");
}

#[tokio::test]
async fn cut_get_stream_resumes_with_every_event_exactly_once_and_only_its_own() {
    // In json mode, messages related to a request travel on the GET stream.
    let server = TestServer::with_config(
        "[http]\nresponse_mode = \"json\"\n[[tools]]\nbuiltin = \"sleep\"\n",
    );
    let session = server.client().connect().await;
    let get = session.get(None).await;
    assert_eq!(get.status(), StatusCode::OK);
    let mut reader = SseReader::new(get);
    let priming = reader
        .next(WAIT)
        .await
        .expect("priming")
        .id
        .expect("priming id");
    assert_eq!(seq_of(&priming).0, 0, "the GET stream is stream 0");

    let caller = session.clone();
    let call = tokio::spawn(async move {
        caller
            .call(json!(9), "tools/call", json!({ "name": "sleep", "arguments": { "ms": 600 }, "_meta": { "progressToken": 1 } }))
            .await
    });
    let mut seen = vec![];
    while seen.len() < 2 {
        let (id, message) = reader
            .next_message(WAIT)
            .await
            .expect("event before the cut");
        seen.push((id.expect("id"), message));
    }
    drop(reader);
    let result = call.await.expect("call");
    assert_eq!(result["content"][0]["text"], json!("slept 600 ms"));

    let resumed = session.get(Some(&seen.last().expect("seen").0)).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut reader = SseReader::new(resumed);
    // The GET stream stays open after the replay; read what is logged.
    while let Some((id, message)) = reader.next_message(Duration::from_millis(500)).await {
        seen.push((id.expect("id"), message));
    }
    let ids: Vec<(u32, u64)> = seen.iter().map(|(id, _)| seq_of(id)).collect();
    assert!(
        ids.iter().all(|(s, _)| *s == 0),
        "only GET-stream events: {ids:?}"
    );
    let unique: BTreeSet<u64> = ids.iter().map(|(_, n)| *n).collect();
    assert_eq!(unique.len(), ids.len(), "no event twice");
    assert_eq!(
        unique.iter().copied().collect::<Vec<_>>(),
        (1..=ids.len() as u64).collect::<Vec<_>>()
    );
    assert!(
        seen.iter().all(|(_, m)| m.get("id").is_none()),
        "no responses on the GET stream"
    );
    assert_eq!(
        seen.last().expect("last").1["params"]["data"],
        json!("slept 600 ms")
    );
}

#[tokio::test]
async fn resuming_a_post_stream_never_replays_another_streams_events() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let a = session
        .request(json!("a"), "tools/call", json!({ "name": "sleep", "arguments": { "ms": 120 }, "_meta": { "progressToken": "a" } }))
        .await;
    let b = session
        .request(json!("b"), "tools/call", json!({ "name": "sleep", "arguments": { "ms": 120 }, "_meta": { "progressToken": "b" } }))
        .await;
    let stream_a = seq_of(&a.event_ids[0]).0;
    let stream_b = seq_of(&b.event_ids[0]).0;
    assert_ne!(stream_a, stream_b);
    let replay = drain(&mut SseReader::new(
        session.get(Some(&a.event_ids[0])).await,
    ))
    .await;
    assert!(!replay.is_empty());
    assert!(replay.iter().all(|(id, _)| seq_of(id).0 == stream_a));
    assert!(
        replay
            .iter()
            .all(|(_, m)| m["params"]["progressToken"] != json!("b") && m["id"] != json!("b"))
    );
    assert_eq!(replay.last().expect("response").1["id"], json!("a"));
}

#[tokio::test]
async fn a_cursor_outside_the_replay_window_is_a_clear_error() {
    let server = TestServer::with_config(
        "[replay]\nmax_events_per_stream = 3\n[[tools]]\nbuiltin = \"sleep\"\n",
    );
    let session = server.client().connect().await;
    let reply = session
        .request(
            json!(1),
            "tools/call",
            json!({ "name": "sleep", "arguments": { "ms": 500 }, "_meta": { "progressToken": 1 } }),
        )
        .await;
    assert!(reply.event_ids.len() > 5);
    let gone = session.get(Some(&reply.event_ids[0])).await;
    assert_eq!(gone.status(), StatusCode::GONE);
    let body: Value = gone.json().await.expect("JSON error body");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains("outside the replay window"), "{message}");
    // The tail is still there.
    let tail = reply.event_ids[reply.event_ids.len() - 2].clone();
    let replay = drain(&mut SseReader::new(session.get(Some(&tail)).await)).await;
    assert_eq!(replay.len(), 1);
    assert_eq!(replay[0].1["id"], json!(1));
}

#[tokio::test]
async fn an_event_id_this_session_never_issued_is_rejected() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    for bad in ["garbage", "99.1", "0.999"] {
        let resp = session.get(Some(bad)).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[tokio::test]
async fn a_new_get_replaces_the_previous_one() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let first = session.get(None).await;
    assert_eq!(first.status(), StatusCode::OK);
    let mut first = SseReader::new(first);
    first.next(WAIT).await.expect("priming");
    let second = session.get(None).await;
    assert_eq!(second.status(), StatusCode::OK, "never 409");
    assert!(
        first.next(WAIT).await.is_none(),
        "the old GET stream is closed"
    );
}
