//! What one principal's state means to another: nothing. A session, a `requestState` and
//! notifications belong to the principal that created them (spec `basic/authorization`:
//! "Sessions are not authentication"; 2026-07-28: key stored state by principal and handle),
//! and the session cap counts per principal. Tasks are in [`super::tasks`].
//!
//! A foreign principal gets exactly what a stranger gets, so that a session id or a handle
//! reveals nothing about whether it exists.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::fixture::{ALL_SCOPES, AuthToml, CLIENT_ID, Protected, claims, token_for};
use super::keys::{JwksServer, Signer};
use crate::common::modern::{Modern, accept, first_text, request_state, single_input_request};
use crate::common::{LATEST, Session, SseReader, read_reply};

/// What a request in `session` got back: the status, and the body with the session id
/// replaced by `<id>` (an error may name the id it was given).
async fn answered(kind: &str, session: &Session) -> (StatusCode, String) {
    let resp = match kind {
        "POST" => {
            let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": { "name": "echo", "arguments": { "text": "x" } } });
            session.post_value(&body).await
        }
        "GET" => session.get(None).await,
        "DELETE" => {
            let req = session.client.http.delete(&session.client.url);
            session
                .with_session_headers(req)
                .send()
                .await
                .expect("DELETE")
        }
        other => panic!("no {other} exchange"),
    };
    let status = resp.status();
    let body = tokio::time::timeout(Duration::from_secs(5), resp.text())
        .await
        .unwrap_or_else(|_| panic!("{kind}: a {status} reply whose body never ends"))
        .unwrap_or_default();
    (status, body.replace(&session.id, "<id>"))
}

/// `id` changed in its last character: the same shape, but no session's.
fn unknown_id(id: &str) -> String {
    let last = if id.ends_with('0') { '1' } else { '0' };
    format!("{}{last}", &id[..id.len() - 1])
}

#[tokio::test]
async fn a_session_answers_only_the_principal_that_created_it() {
    const STATIC_ALICE: &str = "static-alice-token-5b1e";
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let config =
        AuthToml::jwt(&jwks.url).static_token("alice", "MCP_ALICE", STATIC_ALICE, &["mcp:tools"]);
    let server = Protected::start(&config);
    let alice = server.client(&token_for(&key, "alice")).connect().await;

    let mut other_client = claims("alice", ALL_SCOPES);
    other_client["client_id"] = json!(format!("{CLIENT_ID}-other"));
    let intruders = [
        ("bob", server.client(&token_for(&key, "bob"))),
        (
            "alice through another client",
            server.client(&key.sign(&other_client)),
        ),
        (
            "the static principal named alice",
            server.client(STATIC_ALICE),
        ),
    ];
    for (who, client) in &intruders {
        let theirs = Session {
            client: client.clone(),
            ..alice.clone()
        };
        let unknown = Session {
            id: unknown_id(&alice.id),
            ..theirs.clone()
        };
        for kind in ["POST", "GET", "DELETE"] {
            let (status, body) = answered(kind, &theirs).await;
            let (unknown_status, unknown_body) = answered(kind, &unknown).await;
            assert_eq!(
                unknown_status,
                StatusCode::NOT_FOUND,
                "{kind}: {unknown_body}"
            );
            assert_eq!(
                (status, body),
                (unknown_status, unknown_body),
                "{who}: {kind} on alice's session is answered as an unknown session"
            );
        }
    }

    // Alice's session outlived every attempt, DELETE included.
    let text = alice
        .call_tool_text(json!(2), "echo", json!({ "text": "still mine" }))
        .await;
    assert_eq!(text, "still mine");
    let stream = alice.get(None).await;
    assert_eq!(stream.status(), StatusCode::OK, "alice's GET stream opens");
    drop(stream);
    // A refreshed token for the same principal keeps the session.
    let mut refreshed = claims("alice", ALL_SCOPES);
    refreshed["jti"] = json!("refreshed");
    let renewed = Session {
        client: server.client(&key.sign(&refreshed)),
        ..alice.clone()
    };
    let text = renewed
        .call_tool_text(json!(3), "echo", json!({ "text": "renewed" }))
        .await;
    assert_eq!(text, "renewed");
}

#[tokio::test]
async fn request_state_minted_for_one_principal_is_refused_for_another() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let server = Protected::start(&AuthToml::jwt(&jwks.url));
    let alice = server.client(&token_for(&key, "alice"));
    let bob = server.client(&token_for(&key, "bob"));

    let ask = Modern::call(1, "ask", json!({ "question": "Your name?" }))
        .caps(json!({ "elicitation": {} }));
    let first = ask.result(&alice).await;
    let (input_key, _) = single_input_request(&first);
    let state = request_state(&first);
    let retry = |id: i64| {
        Modern {
            id: Some(json!(id)),
            ..ask.clone()
        }
        .param(
            "inputResponses",
            json!({ input_key.clone(): accept("alice") }),
        )
        .param("requestState", json!(state))
    };

    let replayed = retry(2).reply(&bob).await;
    let message = replayed
        .response(&json!(2))
        .or(replayed.body.as_ref())
        .unwrap_or_else(|| panic!("an answer to bob's replay: {replayed:#?}"));
    assert!(
        message.get("error").is_some() && message.get("result").is_none(),
        "bob's replay of alice's requestState is refused: {message}"
    );

    let done = retry(3).result(&alice).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(first_text(&done), "alice", "{done}");
}

/// The messages of `stream` until one with `method` arrives, or `None` if it does not
/// within `wait`.
async fn messages_until(
    stream: &mut SseReader,
    method: &str,
    wait: Duration,
) -> Option<Vec<Value>> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let (_, message) = stream.next_message(left).await?;
        let done = message["method"] == method;
        seen.push(message);
        if done {
            return Some(seen);
        }
    }
}

#[tokio::test]
async fn one_principals_notifications_never_reach_another() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let config = AuthToml::jwt(&jwks.url);
    let server = Protected::start(&config);
    let alice = server.client(&token_for(&key, "alice")).connect().await;
    let bob = server.client(&token_for(&key, "bob")).connect().await;
    for session in [&alice, &bob] {
        let level = json!({ "level": "debug" });
        session.call(json!("lvl"), "logging/setLevel", level).await;
    }
    let bob_get = bob.get(None).await;
    assert_eq!(bob_get.status(), StatusCode::OK);
    let mut bob_stream = SseReader::new(bob_get);

    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                       "params": { "name": "sleep", "arguments": { "ms": 400 },
                                   "_meta": { "progressToken": "alice-progress" } } });
    let reply = read_reply(alice.post_value(&call).await).await;
    let progress = reply
        .messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert!(progress > 0, "alice gets her own progress: {reply:#?}");
    assert!(
        reply
            .messages
            .iter()
            .any(|m| m["method"] == "notifications/message"),
        "alice gets her own log messages: {reply:#?}"
    );

    // Something every session must see, so that bob's stream is known to be live: a tool
    // added by a reload. Whatever bob saw before it must not be alice's.
    let extra = "\n[[tools]]\nname = \"added\"\ncommand = [\"echo\", \"added\"]\n";
    let text = std::fs::read_to_string(&server.config_path).expect("config");
    std::fs::write(&server.config_path, format!("{extra}{text}")).expect("config");
    server.server.signal(nix::sys::signal::Signal::SIGHUP);
    let seen = messages_until(
        &mut bob_stream,
        "notifications/tools/list_changed",
        Duration::from_secs(10),
    )
    .await
    .expect("bob's stream delivers tools/list_changed after the reload");
    for message in &seen {
        let text = message.to_string();
        assert!(
            !text.contains("alice-progress") && !text.contains("sleeping"),
            "alice's notification on bob's stream: {message}"
        );
    }
}

#[tokio::test]
async fn sessions_are_capped_per_principal_with_429() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let server = Protected::start(&AuthToml::jwt(&jwks.url).auth("max_sessions_per_principal = 2"));
    let alice = server.client(&token_for(&key, "alice"));
    let first = alice.connect().await;
    let _second = alice.connect().await;

    // A third, even with a fresh token for the same principal, is refused.
    let mut fresh = claims("alice", ALL_SCOPES);
    fresh["jti"] = json!("fresh");
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": { "protocolVersion": LATEST, "capabilities": {},
                                   "clientInfo": { "name": "auth-tests", "version": "1" } } });
    let resp = server.client(&key.sign(&fresh)).post_raw(&init, &[]).await;
    assert_eq!(
        resp.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        resp.headers()
    );
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("a Retry-After header: {:?}", resp.headers()));
    assert!(
        retry_after.trim().parse::<u64>().is_ok(),
        "Retry-After in seconds: {retry_after:?}"
    );
    assert!(resp.headers().get("mcp-session-id").is_none());

    // Another principal is not held back by alice's sessions.
    let bob = server.client(&token_for(&key, "bob")).connect().await;
    assert_eq!(
        bob.call_tool_text(json!(1), "echo", json!({ "text": "bob" }))
            .await,
        "bob"
    );
    // Ending one of alice's sessions makes room for another.
    let ended = first.delete().await;
    assert!(ended.is_success(), "DELETE: {ended}");
    let again = alice.connect().await;
    assert_eq!(
        again
            .call_tool_text(json!(2), "echo", json!({ "text": "again" }))
            .await,
        "again"
    );
}

#[tokio::test]
async fn requests_in_flight_and_initialize_rate_are_capped_per_principal() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let server = Protected::start(
        &AuthToml::jwt(&jwks.url)
            .auth("max_in_flight_per_principal = 1")
            .auth("initialize_rate_per_principal = 1")
            .auth("initialize_burst_per_principal = 2"),
    );
    let alice = server.client(&token_for(&key, "alice"));
    let bob = server.client(&token_for(&key, "bob"));

    // One 2026-07-28 call of alice's runs; her second is refused, bob's is not.
    let slow = Modern::call(1, "sleep", json!({ "ms": 1500 }));
    let running = {
        let alice = alice.clone();
        tokio::spawn(async move { slow.send(&alice).await.status() })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = Modern::call(2, "echo", json!({ "text": "x" }))
        .send(&alice)
        .await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    let message = refused.text().await.unwrap_or_default();
    assert!(
        message.contains("auth.max_in_flight_per_principal"),
        "{message}"
    );
    let other = Modern::call(3, "echo", json!({ "text": "x" }))
        .send(&bob)
        .await;
    assert_eq!(other.status(), StatusCode::OK);
    assert_eq!(running.await.expect("alice's call"), StatusCode::OK);

    // Two initializes at once, then the rate: alice is refused, bob is not.
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": { "protocolVersion": LATEST, "capabilities": {},
                                   "clientInfo": { "name": "auth-tests", "version": "1" } } });
    for _ in 0..2 {
        assert_eq!(alice.post_raw(&init, &[]).await.status(), StatusCode::OK);
    }
    let refused = alice.post_raw(&init, &[]).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let message = refused.text().await.unwrap_or_default();
    assert!(
        message.contains("auth.initialize_rate_per_principal"),
        "{message}"
    );
    assert_eq!(bob.post_raw(&init, &[]).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn listen_streams_are_capped_per_principal() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let server =
        Protected::start(&AuthToml::jwt(&jwks.url).auth("max_listen_streams_per_principal = 1"));
    let alice = server.client(&token_for(&key, "alice"));
    let bob = server.client(&token_for(&key, "bob"));
    let listen = |id: i64| {
        Modern::request(id, "subscriptions/listen")
            .param("notifications", json!({ "toolsListChanged": true }))
    };

    // Alice's one stream stays open (its headers are in); her second is refused, bob's is not.
    let first = listen(1).send(&alice).await;
    assert_eq!(first.status(), StatusCode::OK);
    let refused = listen(2).send(&alice).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    let message = refused.text().await.unwrap_or_default();
    assert!(
        message.contains("auth.max_listen_streams_per_principal"),
        "{message}"
    );
    let other = listen(3).send(&bob).await;
    assert_eq!(other.status(), StatusCode::OK);

    // Closing her stream gives her slot back.
    drop(first);
    let mut status = StatusCode::TOO_MANY_REQUESTS;
    for attempt in 4..40 {
        status = listen(attempt).send(&alice).await.status();
        if status == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, StatusCode::OK, "the slot came back");
    drop(other);
}
