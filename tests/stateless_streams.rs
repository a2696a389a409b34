//! What a 2026-07-28 response stream carries besides the result: progress and log frames
//! (filtered by the requested log level), no SSE event ids, no resumption, and a client
//! disconnect that cancels the handler.
//!
//! Part of the stateless 2026-07-28 suite (`tests/stateless_*.rs`), over real HTTP on
//! 127.0.0.1: one test per MUST line of the checklist in `shared/spec/stateless-2026-07-28.md`
//! §7, named after the rule it checks. Most tests run the real binary ([`TestServer`]); tests
//! that need a list change, a graceful shutdown, resources, prompts or a tool with a side
//! effect run the server in process ([`InProcess`]).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::in_process::InProcess;
use common::modern::{
    Modern, client_of, expect_error, expect_result, first_text, next_message, notifications,
};
use common::rpc_codes::INVALID_PARAMS;
use common::{SseReader, TestServer};
use mcp_actor::protocol::LogLevel;
use mcp_actor::{CallToolResult, Server, Tool};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn progress_frames_precede_response_on_same_stream() {
    let server = TestServer::start();
    let client = client_of(&server);
    let reply = Modern::call("p1", "sleep", json!({ "ms": 450 }))
        .progress_token(json!("tok-1"))
        .reply(&client)
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.is_sse(), "progress needs the SSE form: {reply:#?}");
    let last = reply.messages.last().expect("messages");
    assert_eq!(last["id"], "p1", "the response ends the stream: {reply:#?}");
    let result = expect_result(&reply, &json!("p1"));
    assert_eq!(first_text(&result), "slept 450 ms");
    let before = &reply.messages[..reply.messages.len() - 1];
    assert!(before.len() >= 2, "several progress frames: {reply:#?}");
    let mut previous = f64::MIN;
    for frame in before {
        assert_eq!(frame["method"], "notifications/progress", "{frame}");
        assert_eq!(frame["params"]["progressToken"], "tok-1", "{frame}");
        let progress = frame["params"]["progress"].as_f64().expect("progress");
        assert!(progress > previous, "progress increases: {reply:#?}");
        previous = progress;
    }
    // Without a token: no progress, a plain JSON reply.
    let reply = Modern::call(2, "sleep", json!({ "ms": 250 }))
        .reply(&client)
        .await;
    assert!(
        notifications(&reply, "notifications/progress").is_empty(),
        "{reply:#?}"
    );
    expect_result(&reply, &json!(2));
}

#[tokio::test]
async fn no_log_frames_without_log_level() {
    let server = TestServer::start();
    let client = client_of(&server);
    // The builtin sleep logs at info twice; with a progress token the reply is a stream,
    // so a log frame would have somewhere to go.
    let reply = Modern::call(1, "sleep", json!({ "ms": 250 }))
        .progress_token(json!(1))
        .reply(&client)
        .await;
    expect_result(&reply, &json!(1));
    assert!(reply.is_sse(), "{reply:#?}");
    assert!(
        notifications(&reply, "notifications/message").is_empty(),
        "no logLevel, no notifications/message: {reply:#?}"
    );
    // Control: asking for logs gets them on the same kind of request.
    let reply = Modern::call(2, "sleep", json!({ "ms": 50 }))
        .log_level("info")
        .reply(&client)
        .await;
    expect_result(&reply, &json!(2));
    assert_eq!(
        notifications(&reply, "notifications/message").len(),
        2,
        "{reply:#?}"
    );
}

#[tokio::test]
async fn log_level_filters_lower_levels() {
    let server = TestServer::start();
    let client = client_of(&server);
    // sleep logs at info: a request asking for notice and above gets none of it.
    let reply = Modern::call(1, "sleep", json!({ "ms": 250 }))
        .progress_token(json!(1))
        .log_level("notice")
        .reply(&client)
        .await;
    expect_result(&reply, &json!(1));
    assert!(
        notifications(&reply, "notifications/message").is_empty(),
        "info frames below notice: {reply:#?}"
    );
    // At info and at debug they come, each at level info, before the response.
    for (id, level) in [(2, "info"), (3, "debug")] {
        let reply = Modern::call(id, "sleep", json!({ "ms": 50 }))
            .log_level(level)
            .reply(&client)
            .await;
        expect_result(&reply, &json!(id));
        let logs = notifications(&reply, "notifications/message");
        assert_eq!(logs.len(), 2, "{level}: {reply:#?}");
        for log in logs {
            assert_eq!(log["params"]["level"], "info", "{log}");
        }
        assert_eq!(reply.messages.last().expect("last")["id"], json!(id));
    }
}

#[tokio::test]
async fn log_level_info_sends_no_debug_frames() {
    let tool = Tool::new(
        "chatty",
        "Logs at three levels",
        json!({ "type": "object" }),
        |ctx, _| {
            Box::pin(async move {
                ctx.log(LogLevel::Debug, Some("chatty"), json!("debug line"))
                    .await;
                ctx.log(LogLevel::Info, Some("chatty"), json!("info line"))
                    .await;
                ctx.log(LogLevel::Warning, Some("chatty"), json!("warning line"))
                    .await;
                Ok(CallToolResult::text("done"))
            })
        },
    )
    .expect("tool");
    let server = InProcess::start(Server::builder().add_tool(tool)).await;
    let client = server.client();
    let reply = Modern::call(1, "chatty", json!({}))
        .log_level("info")
        .reply(&client)
        .await;
    expect_result(&reply, &json!(1));
    let levels: Vec<&Value> = notifications(&reply, "notifications/message")
        .into_iter()
        .map(|m| &m["params"]["level"])
        .collect();
    assert_eq!(levels, [&json!("info"), &json!("warning")], "{reply:#?}");
    // And an unknown level is invalid params.
    let reply = Modern::call(2, "chatty", json!({}))
        .log_level("verbose")
        .reply(&client)
        .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(2));
}

#[tokio::test]
async fn sse_responses_have_no_event_ids() {
    let server = TestServer::start();
    let client = client_of(&server);
    let resp = Modern::call(1, "sleep", json!({ "ms": 350 }))
        .progress_token(json!(1))
        .log_level("info")
        .send(&client)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    assert!(header("content-type").starts_with("text/event-stream"));
    assert_eq!(header("x-accel-buffering"), "no");
    let text = resp.text().await.expect("SSE body");
    let mut data_lines = 0;
    for line in text.lines() {
        assert!(!line.starts_with("id:"), "event id sent: {text:?}");
        assert!(!line.starts_with("retry:"), "retry sent: {text:?}");
        if let Some(data) = line.strip_prefix("data:") {
            assert!(!data.trim().is_empty(), "no empty priming event: {text:?}");
            let message: Value = serde_json::from_str(data.trim()).expect("data is JSON");
            assert!(message.is_object(), "{message}");
            data_lines += 1;
        }
    }
    // Two log lines, three progress frames, the response.
    assert!(data_lines >= 4, "{text:?}");
}

#[tokio::test]
async fn last_event_id_ignored() {
    let server = TestServer::start();
    let client = client_of(&server);
    // A first stream, then a "resumption" naming an id: it is a fresh request like any other.
    let first = Modern::call(1, "sleep", json!({ "ms": 250 }))
        .progress_token(json!(1))
        .reply(&client)
        .await;
    expect_result(&first, &json!(1));
    for last_event_id in ["0", "1/2", "stream-1:7"] {
        let reply = Modern::call(2, "sleep", json!({ "ms": 250 }))
            .progress_token(json!(2))
            .header("Last-Event-ID", last_event_id)
            .reply(&client)
            .await;
        let result = expect_result(&reply, &json!(2));
        assert_eq!(first_text(&result), "slept 250 ms");
        assert!(reply.event_ids.is_empty(), "{reply:#?}");
        assert!(
            !notifications(&reply, "notifications/progress").is_empty(),
            "a full fresh stream: {reply:#?}"
        );
        assert!(
            reply
                .messages
                .iter()
                .all(|m| m.get("id").is_none() || m["id"] == 2),
            "nothing of request 1 replayed: {reply:#?}"
        );
        let listed = Modern::request(3, "tools/list")
            .header("Last-Event-ID", last_event_id)
            .reply(&client)
            .await;
        expect_result(&listed, &json!(3));
    }
}

/// Sets its flag when dropped: the tool's future was dropped (aborted) or finished.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_cancels_the_handler() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let tool = {
        let (ticks, dropped, finished) = (ticks.clone(), dropped.clone(), finished.clone());
        Tool::new(
            "ticker",
            "Ticks for ten seconds",
            json!({ "type": "object" }),
            move |ctx, _| {
                let (ticks, dropped, finished) = (ticks.clone(), dropped.clone(), finished.clone());
                Box::pin(async move {
                    let _guard = SetOnDrop(dropped);
                    for i in 1..=500 {
                        ticks.fetch_add(1, Ordering::SeqCst);
                        ctx.progress(f64::from(i), Some(500.0), None).await;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    finished.store(true, Ordering::SeqCst);
                    Ok(CallToolResult::text("finished"))
                })
            },
        )
        .expect("tool")
    };
    let server = InProcess::start(Server::builder().add_tool(tool)).await;
    let client = server.client();
    let resp = Modern::call(1, "ticker", json!({}))
        .progress_token(json!("t"))
        .send(&client)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut reader = SseReader::new(resp);
    for _ in 0..3 {
        let frame = next_message(&mut reader, "progress").await;
        assert_eq!(frame["method"], "notifications/progress", "{frame}");
    }
    assert!(
        !dropped.load(Ordering::SeqCst),
        "the handler runs while the client reads"
    );
    // The client goes away.
    drop(reader);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the handler still runs 5 s after the client disconnected (ticks {})",
            ticks.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!finished.load(Ordering::SeqCst), "stopped, not finished");
    let stopped_at = ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        ticks.load(Ordering::SeqCst),
        stopped_at,
        "no work after the handler stopped"
    );
    assert!(stopped_at < 500, "cut early: {stopped_at} ticks");
}
