//! Several nodes behind one URL, without sticky sessions: nodes sharing a `requestState` key
//! serve any request of a modern exchange, and a node refuses listen streams beyond its
//! limit with 503 and `Retry-After`.
//!
//! Part of the stateless 2026-07-28 suite (`tests/stateless_*.rs`), over real HTTP on
//! 127.0.0.1: one test per MUST line of the checklist in `shared/spec/stateless-2026-07-28.md`
//! §7, named after the rule it checks. Most tests run the real binary ([`TestServer`]); tests
//! that need a list change, a graceful shutdown, resources, prompts or a tool with a side
//! effect run the server in process ([`InProcess`]).

mod common;

use std::time::Duration;

use common::modern::{
    Modern, accept, client_of, expect_error, first_text, listen, random_request_state_key,
    request_state, session_count, single_input_request,
};
use common::rpc_codes::INVALID_PARAMS;
use common::{Client, TestServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn node_config(key: Option<&str>) -> String {
    let modern = match key {
        Some(key) => format!("[modern]\nrequest_state_key = \"{key}\"\n"),
        None => String::new(),
    };
    format!("{modern}\n[[tools]]\nbuiltin = \"ask\"\n\n[[tools]]\nbuiltin = \"echo\"\n")
}

#[tokio::test]
async fn modern_traffic_spread_over_three_nodes_without_stickiness() {
    let key = random_request_state_key();
    let nodes: Vec<TestServer> = (0..3)
        .map(|_| TestServer::with_config(&node_config(Some(&key))))
        .collect();
    let stranger = TestServer::with_config(&node_config(None));
    let clients: Vec<Client> = nodes.iter().map(client_of).collect();
    let caps = json!({ "elicitation": {} });

    // Node 1 asks.
    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" })).caps(caps.clone());
    let first = ask.result(&clients[0]).await;
    let (key_1, _) = single_input_request(&first);
    let state = request_state(&first);
    let retry = Modern {
        id: Some(json!(2)),
        ..ask.clone()
    }
    .param("inputResponses", json!({ key_1: accept("bob") }))
    .param("requestState", json!(state));
    // Node 2 finishes it.
    let done = retry.result(&clients[1]).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "bob", "{done}");

    // An independent round trip started on node 3 and finished on node 1.
    let other = Modern::call(3, "ask", json!({ "question": "Colour?" })).caps(caps.clone());
    let started = other.result(&clients[2]).await;
    let (key_3, _) = single_input_request(&started);
    let finished = Modern {
        id: Some(json!(4)),
        ..other
    }
    .param("inputResponses", json!({ key_3: accept("blue") }))
    .param("requestState", json!(request_state(&started)))
    .result(&clients[0])
    .await;
    assert_eq!(first_text(&finished), "blue", "{finished}");
    let echoed = Modern::call(5, "echo", json!({ "text": "node 3" }))
        .result(&clients[2])
        .await;
    assert_eq!(first_text(&echoed), "node 3");

    // A node with its own key cannot open node 1's state.
    let reply = Modern {
        id: Some(json!(6)),
        ..retry
    }
    .reply(&client_of(&stranger))
    .await;
    expect_error(&reply, StatusCode::BAD_REQUEST, INVALID_PARAMS, &json!(6));

    for client in &clients {
        assert_eq!(session_count(client).await, 0, "no node holds a session");
    }
}

#[tokio::test]
async fn listen_streams_beyond_the_limit_get_503_with_retry_after() {
    let server = TestServer::with_config(
        "[modern]\nmax_listen_streams = 1\n\n[[tools]]\nbuiltin = \"echo\"\n",
    );
    let client = client_of(&server);
    let (_open, _) = listen(&client, json!(1), json!({ "toolsListChanged": true })).await;
    let refused = Modern::request(2, "subscriptions/listen")
        .param("notifications", json!({ "toolsListChanged": true }))
        .send(&client)
        .await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers().get("retry-after").is_some());
    let body: Value = refused.json().await.expect("JSON error");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("stateless.max_listen_streams"),
        "{message}"
    );
    drop(_open);
    // The slot comes back when the stream closes.
    let mut reopened = None;
    for _ in 0..50 {
        let resp = Modern::request(3, "subscriptions/listen")
            .param("notifications", json!({ "toolsListChanged": true }))
            .send(&client)
            .await;
        if resp.status() == StatusCode::OK {
            reopened = Some(resp);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        reopened.is_some(),
        "the slot was given back after the stream closed"
    );
}
