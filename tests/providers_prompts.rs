//! Prompts from configuration: rendering with arguments, missing arguments, completion.

mod common;

use common::{TempDir, TestServer};
use serde_json::json;

const CONFIG: &str = r#"
[[prompts]]
name = "review"
title = "Code review"
description = "Asks for a review of some code"
template = """
Review this {% if language %}{{ language }} {% endif %}code:
{{ code }}"""
arguments = [
  { name = "code", description = "The code to review", required = true },
  { name = "language", title = "Language", completions = ["Rust", "Ruby", "Python"] },
]

[[prompts]]
name = "dialogue"
file = "dialogue.j2"
arguments = [{ name = "topic", required = true }]

[[prompts]]
name = "two_turns"
messages = [
  { role = "user", template = "Tell me about {{ topic }}." },
  { role = "assistant", template = "Gladly: {{ topic | upper }}!" },
]
arguments = [{ name = "topic", required = true }]
"#;

fn server() -> (TempDir, TestServer) {
    let dir = TempDir::new("prompts");
    dir.write("dialogue.j2", "Let us talk about {{ topic }}.");
    let path = dir.write("config.toml", CONFIG);
    let server = TestServer::with_config_file(&path, &[]);
    (dir, server)
}

#[tokio::test]
async fn get_renders_the_template_with_arguments() {
    let (_dir, server) = server();
    let session = server.client().connect().await;
    let result = session
        .call(
            json!(1),
            "prompts/get",
            json!({ "name": "review", "arguments": { "code": "fn main() {}", "language": "Rust" } }),
        )
        .await;
    assert_eq!(result["messages"][0]["role"], "user");
    assert_eq!(
        result["messages"][0]["content"]["text"],
        "Review this Rust code:\nfn main() {}"
    );
    let without_optional = session
        .call(
            json!(2),
            "prompts/get",
            json!({ "name": "review", "arguments": { "code": "x" } }),
        )
        .await;
    assert_eq!(
        without_optional["messages"][0]["content"]["text"],
        "Review this code:\nx"
    );

    let from_file = session
        .call(
            json!(3),
            "prompts/get",
            json!({ "name": "dialogue", "arguments": { "topic": "tides" } }),
        )
        .await;
    assert_eq!(
        from_file["messages"][0]["content"]["text"],
        "Let us talk about tides."
    );
    let turns = session
        .call(
            json!(4),
            "prompts/get",
            json!({ "name": "two_turns", "arguments": { "topic": "owls" } }),
        )
        .await;
    assert_eq!(turns["messages"][1]["role"], "assistant");
    assert_eq!(turns["messages"][1]["content"]["text"], "Gladly: OWLS!");

    let list = session.call(json!(5), "prompts/list", json!({})).await;
    let review = &list["prompts"][0];
    assert_eq!(review["title"], "Code review");
    assert_eq!(
        review["arguments"][0],
        json!({ "name": "code", "description": "The code to review", "required": true })
    );
    assert_eq!(review["arguments"][1]["title"], "Language");
}

#[tokio::test]
async fn missing_required_argument_is_invalid_params() {
    let (_dir, server) = server();
    let session = server.client().connect().await;
    let reply = session
        .request(
            json!(1),
            "prompts/get",
            json!({ "name": "review", "arguments": { "language": "Rust" } }),
        )
        .await;
    let response = reply.response(&json!(1)).unwrap();
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("code")
    );
}

#[tokio::test]
async fn completion_offers_configured_values_by_prefix() {
    let (_dir, server) = server();
    let session = server.client().connect().await;
    let result = session
        .call(
            json!(1),
            "completion/complete",
            json!({
                "ref": { "type": "ref/prompt", "name": "review" },
                "argument": { "name": "language", "value": "r" }
            }),
        )
        .await;
    assert_eq!(result["completion"]["values"], json!(["Rust", "Ruby"]));
    assert_eq!(result["completion"]["total"], 2);
}

#[test]
fn check_reports_unknown_template_variables_with_their_line() {
    let dir = TempDir::new("prompts-check");
    let path = dir.write(
        "bad.toml",
        "[[prompts]]\nname = \"ok\"\ntemplate = \"fine\"\n\n[[prompts]]\nname = \"typo\"\narguments = [{ name = \"language\" }]\ntemplate = \"{{ lang }}\"\n",
    );
    let (status, _, stderr) = common::run_check(&path, &[]);
    assert!(!status.success());
    assert!(
        stderr.contains("bad.toml:8:1: prompts[1].template:"),
        "{stderr}"
    );
    assert!(stderr.contains("lang"), "{stderr}");
}
