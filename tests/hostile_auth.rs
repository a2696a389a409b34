//! Authentication under attack, over real HTTP against the binary: what a hostile child
//! process, a crafted JWT or a slow authorization server can do to other principals.
//!
//! - a static token's variable is gone from the environment every child inherits, and the
//!   token still authenticates (after a reload too);
//! - JWT principals whose `iss`, `sub` and client would join to the same string stay apart;
//! - a JWKS fetch for an unknown `kid` stalls only the request that needs it;
//! - a reload whose `[auth]` change is ignored says so in `mcp_config_reloads_total`.
//!
//! The authorization server's side comes from `tests/auth/keys.rs`, the protected server
//! from `tests/auth/fixture.rs`.

mod common;

#[path = "auth/fixture.rs"]
#[allow(dead_code)]
mod fixture;
#[path = "auth/keys.rs"]
#[allow(dead_code)]
mod keys;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use common::Session;
use fixture::{ALL_SCOPES, AuthToml, Protected, claims, token_for};
use keys::{Signer, serve_on_own_thread};

const TOKEN_VAR: &str = "MCP_HOSTILE_ALICE_TOKEN";
const TOKEN: &str = "hostile-alice-token-7c2f9e01";

/// A command tool that prints the environment it was started with; no `env_clear`.
const PRINT_ENV_TOOL: &str = r#"
[[tools]]
name = "print_env"
description = "Prints its environment"
command = ["env"]
"#;

async fn print_env(session: &Session, id: i64) -> String {
    session
        .call_tool_text(json!(id), "print_env", json!({}))
        .await
}

#[tokio::test]
async fn a_static_tokens_variable_reaches_no_child_and_the_token_still_works() {
    let config = AuthToml::static_only()
        .before_auth(PRINT_ENV_TOOL)
        .static_token("alice", TOKEN_VAR, TOKEN, &[]);
    let server = Protected::start(&config);
    let alice = server.client(TOKEN).connect().await;
    let env = print_env(&alice, 1).await;
    assert!(
        env.contains("PATH="),
        "the tool printed its environment: {env}"
    );
    let leaked: Vec<&str> = env
        .lines()
        .filter(|l| l.contains(TOKEN_VAR) || l.contains(TOKEN))
        .collect();
    assert!(leaked.is_empty(), "the child saw the token: {leaked:?}");

    // A reload reads the file again but never the variable, and the token stays valid.
    std::fs::write(&server.config_path, config.render()).expect("rewrite config");
    sighup(&server);
    scrape_until(&server, r#"mcp_config_reloads_total{outcome="ok"} 1"#).await;
    let again = server.client(TOKEN).connect().await;
    assert!(!print_env(&again, 2).await.contains(TOKEN));
}

#[tokio::test]
async fn an_embedded_server_still_reads_a_static_token_from_the_environment() {
    // The library never edits the environment: the test runs itself again as a child with
    // the variable set (setting it here would race the other tests' threads).
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "embedded_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(TOKEN_VAR, TOKEN)
        .env("MCP_HOSTILE_EMBEDDED_CHILD", "1")
        .output()
        .expect("run the embedded child");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("embedded token accepted"), "{text}");
}

/// Run only by [`an_embedded_server_still_reads_a_static_token_from_the_environment`].
#[tokio::test]
async fn embedded_child() {
    if std::env::var_os("MCP_HOSTILE_EMBEDDED_CHILD").is_none() {
        return;
    }
    let toml = AuthToml::static_only()
        .before_auth("")
        .static_token("alice", TOKEN_VAR, TOKEN, &[])
        .render();
    let config = mcp_actor::Config::parse(&toml, "embedded.toml").expect("config");
    let builder = mcp_actor::Server::builder().config(config);
    let server = common::in_process::InProcess::start(builder).await;
    let alice = fixture::bearer_client(&server.url, TOKEN).connect().await;
    let pong = alice.call(json!(1), "ping", json!({})).await;
    assert_eq!(pong, json!({}));
    println!("embedded token accepted");
}

#[tokio::test]
async fn jwt_principals_whose_fields_join_alike_never_share_a_session() {
    let key = Signer::generate("k1");
    let jwks = keys::JwksServer::serving(&[&key]);
    let server = Protected::start(&AuthToml::jwt(&jwks.url));
    // Joined with U+001F these are both `iss␟x␟y␟z`.
    let mut first = claims("x\u{1f}y", ALL_SCOPES);
    first["client_id"] = json!("z");
    let mut second = claims("x", ALL_SCOPES);
    second["client_id"] = json!("y\u{1f}z");
    let owner = server.client(&key.sign(&first)).connect().await;
    let intruder = Session {
        client: server.client(&key.sign(&second)),
        ..owner.clone()
    };
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": { "name": "echo", "arguments": { "text": "mine" } } });
    let resp = intruder.post_value(&call).await;
    assert_eq!(
        resp.status(),
        StatusCode::NOT_FOUND,
        "another principal used the session"
    );
    let resp = owner.post_value(&call).await;
    assert_eq!(resp.status(), StatusCode::OK, "the owner still can");
}

/// A JWKS at `/jwks.json`. While `slow` is set it answers after 3 s at the earliest, and
/// not before `slow` is cleared again, so a fetch stays in flight as long as a test needs.
fn slow_jwks(signer: &Signer) -> (String, Arc<AtomicBool>, impl Drop) {
    let slow = Arc::new(AtomicBool::new(false));
    let doc = json!({ "keys": [signer.jwk.clone()] });
    let router = {
        let slow = Arc::clone(&slow);
        axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let (slow, doc) = (Arc::clone(&slow), doc.clone());
                async move {
                    if slow.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_secs(3)).await;
                        while slow.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                    axum::Json(doc)
                }
            }),
        )
    };
    let (addr, stop) = serve_on_own_thread(router);
    (
        format!("http://{addr}/jwks.json"),
        slow,
        StopOnDrop(Some(stop)),
    )
}

struct StopOnDrop(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.take().map(|s| s.send(()));
    }
}

#[tokio::test]
async fn a_slow_jwks_fetch_for_an_unknown_kid_stalls_no_request_with_a_known_kid() {
    let key = Signer::generate("known");
    let (url, slow, _jwks) = slow_jwks(&key);
    let config = AuthToml::jwt(&url)
        .jwt_setting(r#"refresh_cooldown = "0s""#)
        .jwt_setting(r#"fetch_timeout = "15s""#);
    let server = Protected::start(&config);
    let alice = server.client(&token_for(&key, "alice")).connect().await;

    slow.store(true, Ordering::SeqCst);
    let stranger = Signer::generate("made-up");
    let unknown = server.client(&token_for(&stranger, "mallory"));
    let started = Instant::now();
    let waiting = tokio::spawn(async move {
        let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
        unknown.post_raw(&ping, &[]).await.status()
    });
    // Let the unknown kid's fetch begin before the known-kid requests.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut slowest = Duration::ZERO;
    for id in 0..100 {
        let at = Instant::now();
        let pong = alice.call(json!(id), "ping", json!({})).await;
        assert_eq!(pong, json!({}));
        slowest = slowest.max(at.elapsed());
    }
    println!("slowest known-kid request: {slowest:?}");
    assert!(
        slowest < Duration::from_millis(100),
        "a known-kid request waited {slowest:?} behind the JWKS fetch"
    );
    assert!(
        !waiting.is_finished(),
        "the unknown kid's request was still waiting for the JWKS"
    );
    slow.store(false, Ordering::SeqCst);
    let status = waiting.await.expect("unknown kid");
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "it waited for the fetch"
    );
}

#[tokio::test]
async fn a_reload_whose_auth_change_is_ignored_counts_as_needs_restart() {
    let config = AuthToml::static_only().static_token("alice", TOKEN_VAR, TOKEN, &[]);
    let server = Protected::start(&config);
    let changed = AuthToml::static_only()
        .static_token("alice", TOKEN_VAR, TOKEN, &[])
        .auth("max_sessions_per_principal = 7");
    std::fs::write(&server.config_path, changed.render()).expect("rewrite config");
    sighup(&server);
    let scrape = scrape_until(
        &server,
        r#"mcp_config_reloads_total{outcome="needs_restart"} 1"#,
    )
    .await;
    assert!(
        scrape.contains(r#"mcp_config_reloads_total{outcome="ok"} 0"#),
        "{scrape}"
    );
    // The running [auth] is the one read at startup, and its token still works.
    server.client(TOKEN).connect().await;
}

fn sighup(server: &Protected) {
    let pid = nix::unistd::Pid::from_raw(server.server.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).expect("SIGHUP");
}

/// The admin `/metrics` text once it has a line starting with `line`; fails after 5 s.
async fn scrape_until(server: &Protected, line: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    let url = format!("{}/metrics", server.server.admin_url);
    loop {
        let text = reqwest::get(&url)
            .await
            .expect("scrape")
            .text()
            .await
            .unwrap_or_default();
        if text.lines().any(|l| l.starts_with(line)) {
            return text;
        }
        assert!(Instant::now() < deadline, "never saw {line:?} in:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
