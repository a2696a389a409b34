//! A line the binary logs while it handles a request names the request, in both log
//! formats and both eras, although no request opens a `tracing` span: node, session,
//! method, target, request id and protocol revision, where the `request` span put them. A
//! line logged outside any request carries none of them. Over real HTTP against the binary,
//! with a command tool's refusal (a warning inside `tools/call`) for the line in a request
//! and the drain's notice on SIGTERM for the line outside.

mod common;

use std::time::Duration;

use common::modern::{Modern, client_of};
use common::{LATEST, TempDir, TestServer};
use serde_json::{Value, json};

const REFUSED: &str = "refused an argument that starts with '-'";
const DRAINING: &str = "draining";

/// Serves one command tool, which refuses an argument that looks like a flag, and logs in
/// `format`.
fn config(format: &str) -> String {
    format!(
        "[log]\nformat = \"{format}\"\n\n\
         [[tools]]\nname = \"say\"\ndescription = \"Prints its text\"\n\
         command = [\"printf\", \"%s\", \"{{text}}\"]\n"
    )
}

/// What the binary logged at `info` while a session called `say` with id `"req-7"` and a
/// 2026-07-28 request called it with id 8, both refused, and then while it drained; and
/// the session's id.
async fn log_of_both_eras(format: &str) -> (String, String) {
    let dir = TempDir::new("log-context");
    let log = dir.path().join("stderr.log");
    let mut server = TestServer::with_config_logging_env(
        &config(format),
        &log,
        &[("RUST_LOG", "info"), ("MCP_ACTOR_NODE_ID", "n1")],
    );
    let session = server.client().initialize(LATEST, json!({})).await;
    let result = session
        .call(
            json!("req-7"),
            "tools/call",
            json!({ "name": "say", "arguments": { "text": "-x" } }),
        )
        .await;
    assert_eq!(result["isError"], true, "{result}");
    let result = Modern::call(8, "say", json!({ "text": "-y" }))
        .result(&client_of(&server))
        .await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        server.terminate(Duration::from_secs(10)).is_some(),
        "the server did not stop on SIGTERM"
    );
    let text = std::fs::read_to_string(&log).expect("read the log");
    (text, session.id)
}

/// The lines of `text` that contain `needle`.
fn lines_with<'t>(text: &'t str, needle: &str) -> Vec<&'t str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

#[tokio::test]
async fn a_text_line_in_a_request_names_it_in_both_eras() {
    let (text, session) = log_of_both_eras("text").await;
    let refused = lines_with(&text, REFUSED);
    assert_eq!(refused.len(), 2, "{text}");
    let legacy = format!(
        " WARN request{{node=\"n1\" session=\"{session}\" method=\"tools/call\" target=\"say\" \
         request_id=\"req-7\" version=\"{LATEST}\"}}: mcp_actor::providers::command: {REFUSED}"
    );
    assert!(refused[0].contains(&legacy), "{}", refused[0]);
    let modern = format!(
        " WARN request{{node=\"n1\" session=\"\" method=\"tools/call\" target=\"say\" \
         request_id=8 version=\"2026-07-28\"}}: mcp_actor::providers::command: {REFUSED}"
    );
    assert!(refused[1].contains(&modern), "{}", refused[1]);
    let outside = lines_with(&text, DRAINING);
    assert!(!outside.is_empty(), "no drain notice in:\n{text}");
    for line in outside {
        for field in ["request{", "node=", "method=", "request_id=", "version="] {
            assert!(
                !line.contains(field),
                "{field} in a line outside a request: {line}"
            );
        }
    }
}

#[tokio::test]
async fn a_json_line_in_a_request_names_it_in_both_eras() {
    let (text, session) = log_of_both_eras("json").await;
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let with = |message: &str| -> Vec<&Value> {
        lines
            .iter()
            .filter(|l| l["message"].as_str().is_some_and(|m| m.contains(message)))
            .collect()
    };
    let refused = with(REFUSED);
    assert_eq!(refused.len(), 2, "{text}");
    for line in &refused {
        assert_eq!(line["level"], "WARN", "{line}");
        assert_eq!(line["target"], "mcp_actor::providers::command", "{line}");
        assert_eq!(line["tool"], "say", "{line}");
    }
    // The request id is the span's `%request_id`: the id's JSON text, as a string.
    assert_eq!(
        refused[0]["span"],
        json!({
            "node": "n1", "session": session, "method": "tools/call", "target": "say",
            "request_id": "\"req-7\"", "version": LATEST, "name": "request"
        })
    );
    assert_eq!(
        refused[1]["span"],
        json!({
            "node": "n1", "session": "", "method": "tools/call", "target": "say",
            "request_id": "8", "version": "2026-07-28", "name": "request"
        })
    );
    let outside = with(DRAINING);
    assert!(!outside.is_empty(), "no drain notice in:\n{text}");
    for line in outside {
        for key in ["span", "node", "session", "method", "request_id", "version"] {
            assert!(
                line.get(key).is_none(),
                "{key} in a line outside a request: {line}"
            );
        }
    }
}
