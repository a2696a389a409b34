//! A forwarded tool's result reaches the client as the upstream wrote it, in both eras:
//! members in their order, `2.50` as `2.50`, a 30-digit integer with every digit, fields
//! this server does not know. The upstream (`tests/upstreams/exact_results.py`) writes its
//! results as fixed text; a gateway that decoded and re-encoded them would sort the
//! members, write `2.5` and round the integer to a float.

mod common;

use std::path::PathBuf;

use common::TestServer;
use common::modern::{META_SERVER_INFO, Modern, client_of};
use serde_json::{Value, json};

const EXACT: &str = r#"{"z":1,"content":[{"type":"text","text":"t"}],"n":2.50,"big":123456789012345678901234567890,"x-extra":{"b":1,"a":2}}"#;

fn server() -> TestServer {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/upstreams/exact_results.py");
    TestServer::with_config(&format!(
        "[[upstreams]]\nname = \"x\"\ncommand = [\"python3\", \"{}\"]\n",
        script.display()
    ))
}

/// The one JSON-RPC response in `body`, a JSON body or an SSE stream, as its text.
fn response_text(body: &str) -> String {
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        return trimmed.trim_end().to_string();
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.contains("\"result\"") || data.contains("\"error\""))
        .unwrap_or_else(|| panic!("no response in {body:?}"))
        .to_string()
}

/// The response text of a 2026-07-28 `tools/call` of `name`.
async fn modern_call(client: &common::Client, id: u64, name: &str) -> String {
    let reply = Modern::call(id, name, json!({})).send(client).await;
    response_text(&reply.text().await.expect("body"))
}

#[tokio::test]
async fn a_session_gets_the_upstreams_result_text_byte_for_byte() {
    let server = server();
    let session = server.client().connect().await;
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                       "params": { "name": "x__exact", "arguments": {} } });
    let body = session.post_value(&call).await.text().await.expect("body");
    assert_eq!(
        response_text(&body),
        format!(r#"{{"jsonrpc":"2.0","id":5,"result":{EXACT}}}"#)
    );
}

#[tokio::test]
async fn a_2026_07_28_result_keeps_its_text_and_gets_the_stamp() {
    let server = server();
    let client = client_of(&server);
    let text = modern_call(&client, 6, "x__exact").await;
    // The upstream's members, as written, between the stamp's `_meta` and `resultType`.
    let members = &EXACT[1..EXACT.len() - 1];
    assert!(
        text.contains(&format!(r#"}},{members},"resultType":"complete"}}}}"#)),
        "{text}"
    );
    let response: Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        response["result"]["_meta"][META_SERVER_INFO]["name"].is_string(),
        "{text}"
    );

    // A `_meta` of the upstream's own keeps its members and gains the server's info.
    let text = modern_call(&client, 7, "x__meta").await;
    assert!(
        text.contains(&format!(
            r#""_meta":{{"z":1,"a":2.50,"{META_SERVER_INFO}":{{"#
        )),
        "{text}"
    );
    assert!(text.ends_with(r#","resultType":"complete"}}"#), "{text}");
}

#[tokio::test]
async fn an_upstream_tool_error_is_still_a_tool_error() {
    let server = server();
    let session = server.client().connect().await;
    let result = session
        .call(
            json!(8),
            "tools/call",
            json!({ "name": "x__failing", "arguments": {} }),
        )
        .await;
    assert_eq!(result["isError"], json!(true));
    assert_eq!(result["content"][0]["text"], json!("bad"));
}
