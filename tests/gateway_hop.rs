//! What a forwarded call gives the client is exactly what the upstream answered: the
//! result object with every field as it came, an `isError` result and its message too. The
//! gateway reads each reply once and writes it once; this pins what that must not change.
//!
//! Two real servers on 127.0.0.1: an upstream mcp-actor, and a gateway in front of it over
//! Streamable HTTP (`prefix = ""`, so the upstream's `echo` is served as `echo`); every
//! call goes to both, and the two results are compared whole.

mod common;

use common::{Session, TestServer};
use serde_json::{Value, json};

/// The `result` of `tools/call name arguments` (or the whole reply, when it has none).
async fn result_of(session: &Session, id: i64, name: &str, arguments: Value) -> Value {
    let params = json!({ "name": name, "arguments": arguments });
    let reply = session.request(json!(id), "tools/call", params).await;
    let response = reply
        .messages
        .iter()
        .find(|m| m["id"] == json!(id))
        .cloned()
        .unwrap_or_else(|| json!({ "no response": reply.messages }));
    response.get("result").cloned().unwrap_or(response)
}

#[tokio::test]
async fn forwarded_results_are_the_upstreams_own_error_results_included() {
    let upstream =
        TestServer::with_config("[[tools]]\nbuiltin = \"echo\"\n[[tools]]\nbuiltin = \"sleep\"\n");
    let gateway = TestServer::with_config(&format!(
        "[[upstreams]]\nname = \"up\"\nprefix = \"\"\nurl = \"{}\"\n",
        upstream.url
    ));
    let direct = upstream.client().connect().await;
    let through = gateway.client().connect().await;
    let cases = [
        // A plain result, with text that must survive escaping both ways.
        (
            "echo",
            json!({ "text": "tab\t, quote \", é, \u{1F600}, </script>" }),
        ),
        // Arguments the upstream refuses: its own isError result and message, as it wrote them.
        ("echo", json!({ "text": 42 })),
        ("echo", json!({})),
        ("sleep", json!({ "ms": "soon" })),
    ];
    for (id, (name, arguments)) in (1..).zip(cases) {
        let expected = result_of(&direct, id, name, arguments.clone()).await;
        let forwarded = result_of(&through, id, name, arguments.clone()).await;
        assert!(
            expected.get("content").is_some(),
            "{name} {arguments}: {expected}"
        );
        assert_eq!(forwarded, expected, "{name} {arguments}");
    }
}
