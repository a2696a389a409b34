//! `subscriptions/listen`: an SSE stream that is acknowledged first, delivers only the
//! notification kinds the client asked for, tagged with its subscription id, and ends with a
//! result when the server shuts down gracefully.
//!
//! Part of the stateless 2026-07-28 suite (`tests/stateless_*.rs`), over real HTTP on
//! 127.0.0.1: one test per MUST line of the checklist in `shared/spec/stateless-2026-07-28.md`
//! §7, named after the rule it checks. Most tests run the real binary ([`TestServer`]); tests
//! that need a list change, a graceful shutdown, resources, prompts or a tool with a side
//! effect run the server in process ([`InProcess`]).

mod common;

use std::time::Duration;

use common::TestServer;
use common::in_process::{InProcess, builder_with_input_features};
use common::modern::{
    EVENT_WAIT, META_SERVER_INFO, META_SUBSCRIPTION_ID, Modern, base_of, client_of, listen,
    next_message, session_count,
};
use mcp_actor::{Config, ServerEvent};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn listen_requires_event_stream_accept() {
    let server = TestServer::start();
    let client = client_of(&server);
    let resp = Modern::request(1, "subscriptions/listen")
        .param("notifications", json!({ "toolsListChanged": true }))
        .send_accepting(&client, "application/json")
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    assert!(resp.headers().get("mcp-session-id").is_none());
    let health: Value = client
        .http
        .get(format!("{}/healthz", base_of(&client.url)))
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("health JSON");
    assert_eq!(health["listenStreams"], 0, "no stream was opened: {health}");
}

#[tokio::test]
async fn listen_acknowledges_first_with_subscription_id_and_honored_filter() {
    let server = TestServer::start();
    let client = client_of(&server);
    let (_string_stream, ack) = listen(
        &client,
        json!("sub-1"),
        json!({ "toolsListChanged": true, "promptsListChanged": false,
                "resourceSubscriptions": ["test://a"] }),
    )
    .await;
    let honored = &ack["params"]["notifications"];
    assert_eq!(honored["toolsListChanged"], true, "{ack}");
    assert_eq!(
        honored["resourceSubscriptions"],
        json!(["test://a"]),
        "{ack}"
    );
    assert_ne!(
        honored.get("promptsListChanged"),
        Some(&json!(true)),
        "{ack}"
    );
    assert_ne!(
        honored.get("resourcesListChanged"),
        Some(&json!(true)),
        "{ack}"
    );
    // A numeric id stays a number.
    let (_number_stream, ack) =
        listen(&client, json!(42), json!({ "promptsListChanged": true })).await;
    assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], json!(42));
    assert_eq!(
        ack["params"]["notifications"]["promptsListChanged"], true,
        "{ack}"
    );
    assert_ne!(
        ack["params"]["notifications"].get("toolsListChanged"),
        Some(&json!(true)),
        "{ack}"
    );
    assert_eq!(session_count(&client).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_delivers_only_requested_kinds_with_subscription_id() {
    let server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let (mut tools_only, _) =
        listen(&client, json!("a"), json!({ "toolsListChanged": true })).await;
    let (mut prompts_and_a, _) = listen(
        &client,
        json!(7),
        json!({ "promptsListChanged": true, "resourceSubscriptions": ["test://fixed/a"] }),
    )
    .await;
    // Events come out in order, so the first frame each stream gets tells whether an
    // unrequested kind slipped through before it.
    let notify = |event| server.server.notify(event);
    notify(ServerEvent::PromptsListChanged);
    notify(ServerEvent::ResourcesListChanged);
    notify(ServerEvent::ResourceUpdated {
        uri: "test://fixed/b".into(),
    });
    notify(ServerEvent::ResourceUpdated {
        uri: "test://fixed/a".into(),
    });
    notify(ServerEvent::ToolsListChanged);

    let frame = next_message(&mut tools_only, "tools/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/tools/list_changed",
        "{frame}"
    );
    assert_eq!(
        frame["params"]["_meta"][META_SUBSCRIPTION_ID], "a",
        "{frame}"
    );
    assert!(frame.get("id").is_none(), "{frame}");

    let frame = next_message(&mut prompts_and_a, "prompts/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/prompts/list_changed",
        "{frame}"
    );
    assert_eq!(
        frame["params"]["_meta"][META_SUBSCRIPTION_ID],
        json!(7),
        "{frame}"
    );
    let frame = next_message(&mut prompts_and_a, "resources/updated").await;
    assert_eq!(
        frame["method"], "notifications/resources/updated",
        "{frame}"
    );
    assert_eq!(frame["params"]["uri"], "test://fixed/a", "{frame}");
    assert_eq!(
        frame["params"]["_meta"][META_SUBSCRIPTION_ID],
        json!(7),
        "{frame}"
    );

    // A last round: each stream's next frame is again only of its own kinds.
    notify(ServerEvent::ToolsListChanged);
    notify(ServerEvent::PromptsListChanged);
    let frame = next_message(&mut tools_only, "second tools/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/tools/list_changed",
        "{frame}"
    );
    let frame = next_message(&mut prompts_and_a, "second prompts/list_changed").await;
    assert_eq!(
        frame["method"], "notifications/prompts/list_changed",
        "{frame}"
    );
    // Nothing else is pending on either stream.
    for reader in [&mut tools_only, &mut prompts_and_a] {
        let extra = reader.next_message(Duration::from_millis(300)).await;
        assert!(extra.is_none(), "unrequested frame: {extra:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_graceful_close_sends_complete_result() {
    let mut server = InProcess::start(builder_with_input_features(Config::default())).await;
    let client = server.client();
    let (mut stream, _) = listen(&client, json!("L1"), json!({ "toolsListChanged": true })).await;
    let (mut numbered, _) = listen(&client, json!(5), json!({ "promptsListChanged": true })).await;
    server.shutdown().await;
    for (reader, id) in [(&mut stream, json!("L1")), (&mut numbered, json!(5))] {
        let last = next_message(reader, "the final result").await;
        assert_eq!(last["jsonrpc"], "2.0", "{last}");
        assert_eq!(last["id"], id, "{last}");
        assert!(last.get("error").is_none(), "{last}");
        assert_eq!(last["result"]["resultType"], "complete", "{last}");
        assert_eq!(last["result"]["_meta"][META_SUBSCRIPTION_ID], id, "{last}");
        // serverInfo joins the result's own `_meta`.
        let info = &last["result"]["_meta"][META_SERVER_INFO];
        assert!(info["name"].is_string(), "{last}");
        // Then the stream ends.
        let after = reader.next_message(EVENT_WAIT).await;
        assert!(after.is_none(), "nothing after the final result: {after:?}");
    }
}
