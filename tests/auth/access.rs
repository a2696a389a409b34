//! Who gets in and what they may do: JWTs verified against the JWKS (a rotated key
//! included, without a restart), static tokens from the environment, and the per-operation
//! scopes whose absence is a 403 naming every scope the operation needs (spec
//! `basic/authorization`, "Scope challenge handling").

use std::collections::BTreeSet;

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::fixture::{
    ALL_SCOPES, AuthToml, METADATA_URL, Protected, claims, expect_unauthorized, token_for,
};
use super::keys::{JwksServer, Signer, now};
use crate::common::modern::{Modern, expect_result, first_text};
use crate::common::{Client, Session};

async fn echo(session: &Session, text: &str) -> String {
    session
        .call_tool_text(json!("echo"), "echo", json!({ "text": text }))
        .await
}

#[tokio::test]
async fn a_valid_jwt_initializes_calls_a_tool_and_makes_stateless_requests() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let server = Protected::start(&AuthToml::jwt(&jwks.url));
    let client = server.client(&token_for(&key, "alice"));
    let session = client.connect().await;
    assert_eq!(echo(&session, "hello").await, "hello");
    let result = Modern::call(1, "echo", json!({ "text": "modern" }))
        .result(&client)
        .await;
    assert_eq!(first_text(&result), "modern");

    // Scopes as an `scp` array instead of a `scope` string.
    let mut scp = claims("bob", "");
    scp.as_object_mut().expect("object").remove("scope");
    scp["scp"] = json!(["mcp:tools"]);
    let session = server.client(&key.sign(&scp)).connect().await;
    assert_eq!(echo(&session, "scp").await, "scp");

    // Expired five seconds ago: inside the default 30 s leeway.
    let mut late = claims("carol", ALL_SCOPES);
    late["exp"] = json!(now() - 5);
    let session = server.client(&key.sign(&late)).connect().await;
    assert_eq!(echo(&session, "leeway").await, "leeway");
}

#[tokio::test]
async fn a_static_token_from_the_environment_works_and_a_wrong_one_gets_401() {
    const TOKEN: &str = "ci-token-3f9a8c7e1d2b4a6f";
    let config = AuthToml::static_only()
        .static_token("ci-bot", "MCP_CI_TOKEN", TOKEN, &["mcp:tools"])
        .scopes(r#"tools = { echo = ["mcp:tools"] }"#);
    let server = Protected::start(&config);
    assert!(
        !std::fs::read_to_string(&server.config_path)
            .expect("config")
            .contains(TOKEN),
        "the token comes from the environment, not the file"
    );
    let session = server.client(TOKEN).connect().await;
    assert_eq!(echo(&session, "from ci").await, "from ci");

    let last = TOKEN.len() - 1;
    let one_off = format!(
        "{}{}",
        &TOKEN[..last],
        if TOKEN.ends_with('f') { 'e' } else { 'f' }
    );
    for wrong in [
        one_off.as_str(),
        &TOKEN[..last],
        &format!("{TOKEN}0"),
        "MCP_CI_TOKEN",
    ] {
        let resp = server
            .client(wrong)
            .post_raw(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }), &[])
            .await;
        expect_unauthorized(resp, Some("invalid_token")).await;
    }
}

#[tokio::test]
async fn a_rotated_signing_key_is_picked_up_without_a_restart() {
    let old = Signer::generate("2026-old");
    let new = Signer::generate("2026-new");
    let jwks = JwksServer::serving(&[&old]);
    let server =
        Protected::start(&AuthToml::jwt(&jwks.url).jwt_setting(r#"refresh_cooldown = "0s""#));
    let with_old = server.client(&token_for(&old, "alice"));
    assert_eq!(echo(&with_old.connect().await, "old").await, "old");

    // Before the authorization server publishes the new key, tokens signed with it fail.
    let new_token = token_for(&new, "alice");
    let resp = server.client(&new_token).post_raw(&ping(), &[]).await;
    expect_unauthorized(resp, Some("invalid_token")).await;

    jwks.set_keys(&[&old, &new]);
    let fetched = jwks.fetches();
    let session = server.client(&new_token).connect().await;
    assert_eq!(echo(&session, "new").await, "new");
    assert!(
        jwks.fetches() > fetched,
        "the unknown kid made the server fetch the JWKS again"
    );
}

fn ping() -> Value {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" })
}

/// Asserts a 403 `insufficient_scope` challenge naming exactly `needed`.
fn expect_insufficient_scope(
    status: StatusCode,
    headers: &reqwest::header::HeaderMap,
    needed: &[&str],
) {
    assert_eq!(status, StatusCode::FORBIDDEN, "{headers:?}");
    let challenge = super::fixture::challenge(headers);
    assert!(
        challenge.scheme.eq_ignore_ascii_case("bearer"),
        "{challenge:?}"
    );
    assert_eq!(
        challenge.param("error"),
        Some("insufficient_scope"),
        "{challenge:?}"
    );
    assert_eq!(
        challenge.param("resource_metadata"),
        Some(METADATA_URL),
        "{challenge:?}"
    );
    let named: BTreeSet<&str> = challenge
        .param("scope")
        .unwrap_or_else(|| panic!("a scope parameter: {challenge:?}"))
        .split(' ')
        .collect();
    let needed: BTreeSet<&str> = needed.iter().copied().collect();
    assert_eq!(
        named, needed,
        "every scope the operation needs, in one challenge"
    );
}

/// A `tools/call` in `session`; the status and headers of the reply.
async fn call_status(
    session: &Session,
    tool: &str,
    arguments: Value,
) -> (StatusCode, reqwest::header::HeaderMap) {
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": { "name": tool, "arguments": arguments } });
    let resp = session.post_value(&body).await;
    (resp.status(), resp.headers().clone())
}

#[tokio::test]
async fn a_call_lacking_a_scope_gets_403_naming_every_scope_it_needs() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let server = Protected::start(&AuthToml::jwt(&jwks.url));
    let tools_only = server.client(&key.sign(&claims("alice", "mcp:tools")));
    let session = tools_only.connect().await;
    assert_eq!(echo(&session, "allowed").await, "allowed");

    // `sleep` needs mcp:tools and mcp:deploy; alice holds one of them.
    let (status, headers) = call_status(&session, "sleep", json!({ "ms": 1 })).await;
    expect_insufficient_scope(status, &headers, &["mcp:tools", "mcp:deploy"]);
    // The same on the stateless path.
    let resp = Modern::call(2, "sleep", json!({ "ms": 1 }))
        .send(&tools_only)
        .await;
    expect_insufficient_scope(
        resp.status(),
        &resp.headers().clone(),
        &["mcp:tools", "mcp:deploy"],
    );
    // The refusal cost the session nothing.
    assert_eq!(echo(&session, "still here").await, "still here");

    // A token without scopes may not even echo.
    let bare = server.client(&key.sign(&claims("bob", ""))).connect().await;
    let (status, headers) = call_status(&bare, "echo", json!({ "text": "x" })).await;
    expect_insufficient_scope(status, &headers, &["mcp:tools"]);

    // With both scopes, sleep runs.
    let full = server.client(&token_for(&key, "carol")).connect().await;
    let slept = full
        .call_tool_text(json!(3), "sleep", json!({ "ms": 1 }))
        .await;
    assert_eq!(slept, "slept 1 ms");
}

const RESOURCES_AND_PROMPTS: &str = r#"
[[tools]]
builtin = "echo"

[[resources]]
uri = "mem://secret/plan"
name = "plan"
text = "the secret plan"

[[resources]]
uri = "mem://public/readme"
name = "readme"
text = "read me"

[[prompts]]
name = "greet"
template = "Hello!"
"#;

/// A `resources/read` or `prompts/get` on the stateless path with `client`.
async fn read(client: &Client, id: i64, uri: &str) -> reqwest::Response {
    Modern::request(id, "resources/read")
        .uri(uri)
        .send(client)
        .await
}

#[tokio::test]
async fn resources_match_scopes_by_prefix_and_prompts_by_the_catch_all() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let config = AuthToml::jwt(&jwks.url)
        .before_auth(RESOURCES_AND_PROMPTS)
        .scopes(r#"resources = { "mem://secret/*" = ["mcp:secrets"] }"#)
        .scopes(r#"prompts = { "*" = ["mcp:prompts"] }"#);
    let server = Protected::start(&config);
    let client = server.client(&key.sign(&claims("alice", "mcp:tools")));

    let public = read(&client, 1, "mem://public/readme").await;
    let reply = crate::common::read_reply(public).await;
    let result = expect_result(&reply, &json!(1));
    assert_eq!(result["contents"][0]["text"], "read me", "{result}");

    let secret = read(&client, 2, "mem://secret/plan").await;
    expect_insufficient_scope(secret.status(), &secret.headers().clone(), &["mcp:secrets"]);

    let prompt = Modern::request(3, "prompts/get")
        .name("greet")
        .send(&client)
        .await;
    expect_insufficient_scope(prompt.status(), &prompt.headers().clone(), &["mcp:prompts"]);

    // A listen stream subscribing to the resource needs its scopes too.
    let listen = Modern::request(4, "subscriptions/listen")
        .param(
            "notifications",
            json!({ "resourceSubscriptions": ["mem://secret/plan"] }),
        )
        .send(&client)
        .await;
    expect_insufficient_scope(listen.status(), &listen.headers().clone(), &["mcp:secrets"]);

    // The handshake era is held to the same scopes.
    let session = client.connect().await;
    let resp = session
        .post_value(
            &json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/read",
                             "params": { "uri": "mem://secret/plan" } }),
        )
        .await;
    expect_insufficient_scope(resp.status(), &resp.headers().clone(), &["mcp:secrets"]);

    // Holding the scopes opens both.
    let granted = server.client(&key.sign(&claims("bob", "mcp:secrets mcp:prompts")));
    let reply = crate::common::read_reply(read(&granted, 5, "mem://secret/plan").await).await;
    assert_eq!(
        expect_result(&reply, &json!(5))["contents"][0]["text"],
        "the secret plan"
    );
    let prompt = Modern::request(6, "prompts/get")
        .name("greet")
        .result(&granted)
        .await;
    assert!(prompt["messages"].is_array(), "{prompt}");
}
