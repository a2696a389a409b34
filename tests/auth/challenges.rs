//! Who is turned away, and how a client learns where to get a token: every request to the
//! MCP endpoint without a valid bearer token gets a 401 whose `WWW-Authenticate` challenge
//! points at the protected resource metadata (RFC 6750 §3, RFC 9728 §5.1), and the metadata
//! itself is public at both well-known paths.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::fixture::{
    ALL_SCOPES, AuthToml, ISSUER, METADATA_URL, Protected, RESOURCE, claims, expect_unauthorized,
    explanation, token_for,
};
use super::keys::{JwksServer, Signer, now, unsigned_token, with_payload};
use crate::common::modern::Modern;
use crate::common::{ACCEPT_BOTH, LATEST};

fn initialize_body() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "protocolVersion": LATEST, "capabilities": {},
                    "clientInfo": { "name": "auth-tests", "version": "1" } }
    })
}

/// A server accepting JWTs signed by `key`.
fn protected(key: &Signer) -> (JwksServer, Protected) {
    let jwks = JwksServer::serving(&[key]);
    let server = Protected::start(&AuthToml::jwt(&jwks.url));
    (jwks, server)
}

#[tokio::test]
async fn a_request_without_a_token_gets_401_with_the_challenge_on_post_get_and_delete() {
    let (_jwks, server) = protected(&Signer::generate("k1"));
    let client = server.anonymous();

    let (challenge, body) =
        expect_unauthorized(client.post_raw(&initialize_body(), &[]).await, None).await;
    assert_eq!(
        challenge.param("scope"),
        Some(ALL_SCOPES),
        "a 401 names the scopes a client may ask for: {challenge:?}"
    );
    let told = explanation(&challenge, &body);
    assert!(
        told.contains("bearer") || told.contains("token"),
        "the message says a token is needed: {body}"
    );

    // Authentication comes before the session lookup and before the body is read: an
    // unknown session and a body that is not JSON still get the 401, not a 404 or a 400.
    let unread = client
        .http
        .post(&client.url)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .header("mcp-session-id", "no-such-session")
        .header("mcp-protocol-version", LATEST)
        .body("{ this is not JSON")
        .send()
        .await
        .expect("POST");
    expect_unauthorized(unread, None).await;

    let get = client
        .http
        .get(&client.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", "no-such-session")
        .header("mcp-protocol-version", LATEST)
        .send()
        .await
        .expect("GET");
    expect_unauthorized(get, None).await;

    let delete = client
        .http
        .delete(&client.url)
        .header("mcp-session-id", "no-such-session")
        .header("mcp-protocol-version", LATEST)
        .send()
        .await
        .expect("DELETE");
    expect_unauthorized(delete, None).await;

    // The stateless 2026-07-28 path too.
    let modern = Modern::call(1, "echo", json!({ "text": "hi" }))
        .send(&client)
        .await;
    expect_unauthorized(modern, None).await;
}

#[tokio::test]
async fn a_malformed_authorization_header_gets_401_invalid_request() {
    let (_jwks, server) = protected(&Signer::generate("k1"));
    for value in [
        "Bearer",
        "Bearer two tokens",
        "Bearer not\"token68",
        "Bearer a,b",
        "Token abc",
    ] {
        let client = server.with_authorization(value);
        let resp = client.post_raw(&initialize_body(), &[]).await;
        let status = resp.status();
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{value:?}");
        expect_unauthorized(resp, Some("invalid_request")).await;
    }
    // Another scheme is a 401 with the challenge as well. RFC 6750 §3.1 lets the challenge
    // leave out the error code when the client used an unsupported method.
    let basic = server.with_authorization("Basic dXNlcjpwYXNz");
    let resp = basic.post_raw(&initialize_body(), &[]).await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let challenge = super::fixture::challenge(resp.headers());
    assert!(
        matches!(challenge.param("error"), None | Some("invalid_request")),
        "{challenge:?}"
    );
    assert_eq!(challenge.param("resource_metadata"), Some(METADATA_URL));
}

/// `claims` for alice with one claim changed (`Value::Null` removes it).
fn claims_with(claim: &str, value: Value) -> Value {
    let mut c = claims("alice", ALL_SCOPES);
    if value.is_null() {
        c.as_object_mut().expect("object").remove(claim);
    } else {
        c[claim] = value;
    }
    c
}

#[tokio::test]
async fn tokens_that_fail_verification_get_401_invalid_token_saying_what_failed() {
    let key = Signer::generate("k1");
    let (_jwks, server) = protected(&key);
    let impostor = Signer::generate("k1");
    let stranger = Signer::generate("k-unknown");
    let valid = token_for(&key, "alice");
    let mut cases: Vec<(&str, String, Option<&str>)> = vec![
        (
            "signed by another key with the same kid",
            token_for(&impostor, "alice"),
            None,
        ),
        (
            "payload changed after signing",
            with_payload(&valid, &claims("mallory", ALL_SCOPES)),
            None,
        ),
        (
            "signed by a key the JWKS does not hold",
            token_for(&stranger, "alice"),
            None,
        ),
        (
            "expired an hour ago",
            key.sign(&claims_with("exp", json!(now() - 3600))),
            Some("expired"),
        ),
        (
            "issued for another resource",
            key.sign(&claims_with("aud", json!("https://other.example.com/mcp"))),
            Some("aud"),
        ),
        (
            "without an audience",
            key.sign(&claims_with("aud", Value::Null)),
            Some("aud"),
        ),
        (
            "from another issuer",
            key.sign(&claims_with("iss", json!("https://evil.example.com"))),
            Some("iss"),
        ),
        (
            "alg none",
            unsigned_token("k1", &claims("alice", ALL_SCOPES)),
            None,
        ),
        (
            "HS256 keyed with the public key",
            key.sign_hs256_with_public_key(&claims("alice", ALL_SCOPES)),
            None,
        ),
        ("not a JWT", "abc.def.ghi".to_string(), None),
    ];
    cases.push((
        "a made-up opaque token",
        "opaque-token-nobody-issued".into(),
        None,
    ));
    for (case, token, named) in cases {
        let resp = server
            .client(&token)
            .post_raw(&initialize_body(), &[])
            .await;
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{case}");
        let (challenge, body) = expect_unauthorized(resp, Some("invalid_token")).await;
        if let Some(claim) = named {
            assert!(
                explanation(&challenge, &body).contains(claim),
                "{case}: the refusal names `{claim}`: {challenge:?} {body}"
            );
        }
    }
    // The control: the same server takes the valid token.
    let resp = server
        .client(&valid)
        .post_raw(&initialize_body(), &[])
        .await;
    assert_eq!(resp.status(), StatusCode::OK, "a valid token is accepted");
}

#[tokio::test]
async fn a_token_signed_with_an_algorithm_outside_the_configured_list_gets_401() {
    let key = Signer::generate("k1");
    let jwks = JwksServer::serving(&[&key]);
    let server =
        Protected::start(&AuthToml::jwt(&jwks.url).jwt_setting(r#"algorithms = ["RS256"]"#));
    let resp = server
        .client(&token_for(&key, "alice"))
        .post_raw(&initialize_body(), &[])
        .await;
    expect_unauthorized(resp, Some("invalid_token")).await;
}

/// GETs `path` on the server without a token; returns the status and the JSON body.
async fn get_public(server: &Protected, path: &str) -> (StatusCode, String, Value) {
    let resp = server
        .anonymous()
        .http
        .get(format!("{}{path}", server.base()))
        .send()
        .await
        .expect("GET");
    let status = resp.status();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = resp.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, content_type, body)
}

#[tokio::test]
async fn the_metadata_is_public_at_both_well_known_paths_and_the_challenge_points_at_it() {
    let (_jwks, server) = protected(&Signer::generate("k1"));
    let path_inserted = format!(
        "/.well-known/oauth-protected-resource{}",
        server.server.path()
    );
    for path in [
        path_inserted.as_str(),
        "/.well-known/oauth-protected-resource",
    ] {
        let (status, content_type, doc) = get_public(&server, path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {doc}");
        assert!(
            content_type.starts_with("application/json"),
            "{path}: {content_type}"
        );
        assert_eq!(doc["resource"], RESOURCE, "{path}: {doc}");
        assert_eq!(
            doc["authorization_servers"],
            json!([ISSUER]),
            "{path}: {doc}"
        );
        assert_eq!(
            doc["scopes_supported"],
            json!(["mcp:tools", "mcp:deploy"]),
            "{path}: {doc}"
        );
        assert_eq!(
            doc["bearer_methods_supported"],
            json!(["header"]),
            "{path}: {doc}"
        );
    }
    // The challenge's URL, on this server's authority, is the path-inserted document.
    let resp = server.anonymous().post_raw(&initialize_body(), &[]).await;
    let (challenge, _) = expect_unauthorized(resp, None).await;
    let advertised = url::Url::parse(challenge.param("resource_metadata").expect("URL"))
        .expect("an absolute URL");
    assert_eq!(advertised.path(), path_inserted, "{challenge:?}");
    let (status, _, doc) = get_public(&server, advertised.path()).await;
    assert_eq!(
        (status, &doc["resource"]),
        (StatusCode::OK, &json!(RESOURCE))
    );
}

#[tokio::test]
async fn without_scopes_supported_the_metadata_and_the_challenge_name_no_scope() {
    let config = AuthToml::static_only().static_token(
        "ci-bot",
        "MCP_CI_TOKEN",
        "ci-token-without-scopes",
        &[],
    );
    let server = Protected::start(&config);
    let (status, _, doc) = get_public(&server, "/.well-known/oauth-protected-resource").await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    assert!(doc.get("scopes_supported").is_none(), "{doc}");
    assert_eq!(doc["resource"], RESOURCE, "{doc}");
    let resp = server.anonymous().post_raw(&initialize_body(), &[]).await;
    let (challenge, _) = expect_unauthorized(resp, None).await;
    assert_eq!(challenge.param("scope"), None, "{challenge:?}");
}

#[tokio::test]
async fn health_probes_need_no_token() {
    let (_jwks, server) = protected(&Signer::generate("k1"));
    let admin = server.server.admin_url.clone();
    for url in [
        format!("{}/healthz", server.base()),
        format!("{}/readyz", server.base()),
        format!("{admin}/healthz"),
        format!("{admin}/readyz"),
    ] {
        let resp = server.anonymous().http.get(&url).send().await.expect("GET");
        assert_eq!(resp.status(), StatusCode::OK, "{url}");
    }
}
