//! Server→client requests: capability checks, routing, the held-until-initialized rule,
//! deadlines and cancellation.

mod common;

use std::time::Duration;

use common::{SseReader, TestServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(5);

fn call(id: Value, tool: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": arguments } })
}

#[tokio::test]
async fn elicitation_without_the_client_capability_is_a_clear_tool_error() {
    let server = TestServer::start();
    let client = server.client();
    let session = client.initialize(common::LATEST, json!({})).await;
    session.notify("notifications/initialized", None).await;
    let result = session
        .call(
            json!(1),
            "tools/call",
            json!({ "name": "ask", "arguments": { "question": "?" } }),
        )
        .await;
    assert_eq!(result["isError"], json!(true));
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("elicitation") && text.contains("capability"),
        "{text}"
    );
    let result = session
        .call(
            json!(2),
            "tools/call",
            json!({ "name": "sample", "arguments": { "prompt": "?" } }),
        )
        .await;
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("sampling")
    );
}

#[tokio::test]
async fn sampling_goes_out_on_the_calls_stream_and_returns_the_models_text() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let mut stream = SseReader::new(
        session
            .post_value(&call(json!(1), "sample", json!({ "prompt": "hello" })))
            .await,
    );
    let (_, request) = stream.next_message(WAIT).await.expect("sampling request");
    assert_eq!(request["method"], json!("sampling/createMessage"));
    assert_eq!(
        request["params"]["messages"][0]["content"]["text"],
        json!("hello")
    );
    let answer = json!({ "role": "assistant", "content": { "type": "text", "text": "hi there" }, "model": "m", "stopReason": "endTurn" });
    assert_eq!(
        session.answer(&request["id"], answer).await,
        StatusCode::ACCEPTED
    );
    let (_, result) = stream.next_message(WAIT).await.expect("result");
    assert_eq!(result["result"]["content"][0]["text"], json!("hi there"));
}

#[tokio::test]
async fn a_declined_elicitation_is_reported_to_the_tool() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let mut stream = SseReader::new(
        session
            .post_value(&call(json!(1), "ask", json!({ "question": "name?" })))
            .await,
    );
    let (_, request) = stream.next_message(WAIT).await.expect("elicitation");
    assert_eq!(
        session
            .answer(&request["id"], json!({ "action": "decline" }))
            .await,
        StatusCode::ACCEPTED
    );
    let (_, result) = stream.next_message(WAIT).await.expect("result");
    assert_eq!(result["result"]["content"][0]["text"], json!("declined"));
}

#[tokio::test]
async fn server_requests_wait_for_notifications_initialized() {
    let server = TestServer::start();
    let client = server.client();
    let session = client
        .initialize(common::LATEST, json!({ "elicitation": {} }))
        .await;
    let caller = session.clone();
    let post = tokio::spawn(async move {
        caller
            .post_value(&call(json!(1), "ask", json!({ "question": "q" })))
            .await
    });
    // Before `notifications/initialized` the request is held, so the reply has nothing to
    // carry yet.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!post.is_finished(), "something was sent before initialized");
    assert_eq!(
        session.notify("notifications/initialized", None).await,
        StatusCode::ACCEPTED
    );
    let resp = tokio::time::timeout(WAIT, post)
        .await
        .expect("reply after initialized")
        .expect("task");
    let mut stream = SseReader::new(resp);
    let (_, request) = stream
        .next_message(WAIT)
        .await
        .expect("elicitation after initialized");
    assert_eq!(request["method"], json!("elicitation/create"));
}

#[tokio::test]
async fn an_unanswered_request_times_out_with_an_error_and_a_cancellation() {
    let server = TestServer::with_config(
        "[client_requests]\ntimeout = \"400ms\"\nmax_timeout = \"1s\"\n[[tools]]\nbuiltin = \"ask\"\n",
    );
    let session = server.client().connect().await;
    let mut stream = SseReader::new(
        session
            .post_value(&call(json!(1), "ask", json!({ "question": "q" })))
            .await,
    );
    let (_, request) = stream.next_message(WAIT).await.expect("elicitation");
    let (_, cancelled) = stream.next_message(WAIT).await.expect("cancellation");
    assert_eq!(cancelled["method"], json!("notifications/cancelled"));
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
    let (_, result) = stream.next_message(WAIT).await.expect("tool result");
    assert_eq!(result["result"]["isError"], json!(true));
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("did not answer")
    );
    // A late answer changes nothing and is accepted.
    assert_eq!(
        session
            .answer(&request["id"], json!({ "action": "accept" }))
            .await,
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn progress_from_the_client_extends_the_deadline_up_to_the_maximum() {
    let server = TestServer::with_config(
        "[client_requests]\ntimeout = \"500ms\"\nmax_timeout = \"1200ms\"\n[[tools]]\nbuiltin = \"ask\"\n",
    );
    let session = server.client().connect().await;
    let mut stream = SseReader::new(
        session
            .post_value(&call(json!(1), "ask", json!({ "question": "q" })))
            .await,
    );
    let (_, request) = stream.next_message(WAIT).await.expect("elicitation");
    let token = request["params"]["_meta"]["progressToken"].clone();
    assert!(!token.is_null(), "the request carries a progress token");
    let started = std::time::Instant::now();
    for i in 1..=8 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let params = json!({ "progressToken": token, "progress": i });
        session.notify("notifications/progress", Some(params)).await;
    }
    let (_, cancelled) = stream
        .next_message(WAIT)
        .await
        .expect("cancellation at the hard maximum");
    assert_eq!(cancelled["method"], json!("notifications/cancelled"));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1100),
        "progress extended the deadline: {waited:?}"
    );
}

#[tokio::test]
async fn without_a_usable_post_stream_requests_fall_back_to_the_get_stream() {
    let server =
        TestServer::with_config("[http]\nresponse_mode = \"json\"\n[[tools]]\nbuiltin = \"ask\"\n");
    let session = server.client().connect().await;
    let mut get = SseReader::new(session.get(None).await);
    let caller = session.clone();
    let call = tokio::spawn(async move {
        caller
            .post(&call(json!(1), "ask", json!({ "question": "q" })))
            .await
    });
    let (_, request) = get
        .next_message(WAIT)
        .await
        .expect("elicitation on the GET stream");
    assert_eq!(request["method"], json!("elicitation/create"));
    let answer = json!({ "action": "accept", "content": { "answer": "via GET" } });
    assert_eq!(
        session.answer(&request["id"], answer).await,
        StatusCode::ACCEPTED
    );
    let reply = call.await.expect("call");
    assert_eq!(reply.content_type, "application/json");
    assert_eq!(
        reply.response(&json!(1)).expect("response")["result"]["content"][0]["text"],
        json!("via GET")
    );
}

#[tokio::test]
async fn cancelling_a_tool_cancels_its_pending_client_request() {
    let server = TestServer::start();
    let session = server.client().connect().await;
    let mut stream = SseReader::new(
        session
            .post_value(&call(json!("c"), "ask", json!({ "question": "q" })))
            .await,
    );
    let (_, request) = stream.next_message(WAIT).await.expect("elicitation");
    let params = json!({ "requestId": "c", "reason": "user pressed stop" });
    assert_eq!(
        session
            .notify("notifications/cancelled", Some(params))
            .await,
        StatusCode::ACCEPTED
    );
    let (_, cancelled) = stream
        .next_message(WAIT)
        .await
        .expect("cancellation of the elicitation");
    assert_eq!(cancelled["method"], json!("notifications/cancelled"));
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
    assert!(
        stream.next_message(WAIT).await.is_none(),
        "no response for a cancelled request"
    );
}

#[tokio::test]
async fn server_requests_beyond_max_pending_fail_the_tool_with_a_clear_error() {
    let server = TestServer::with_config(
        "[client_requests]\nmax_pending = 1\n[[tools]]\nbuiltin = \"ask\"\n",
    );
    let session = server.client().connect().await;
    let mut first = SseReader::new(
        session
            .post_value(&call(json!(1), "ask", json!({ "question": "q1" })))
            .await,
    );
    let (_, request) = first.next_message(WAIT).await.expect("first elicitation");
    let second = session
        .post(&call(json!(2), "ask", json!({ "question": "q2" })))
        .await;
    let result = &second.response(&json!(2)).expect("second result")["result"];
    assert_eq!(result["isError"], json!(true));
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("too many server→client requests") && text.contains("limit 1"),
        "{text}"
    );
    // The pending one is untouched and still completes.
    let answer = json!({ "action": "accept", "content": { "answer": "first" } });
    assert_eq!(
        session.answer(&request["id"], answer).await,
        StatusCode::ACCEPTED
    );
    let (_, done) = first.next_message(WAIT).await.expect("first result");
    assert_eq!(done["result"]["content"][0]["text"], json!("first"));
}
