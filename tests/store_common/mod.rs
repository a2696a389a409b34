//! What `tests/store.rs` and `tests/store_tasks.rs` share: a node's configuration on a
//! store, two static-token principals, clients that carry a token, and `/metrics` samples.

#![allow(dead_code)]

use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use crate::common::{BUILTIN_TOOLS_TOML, Client, TempDir, TestServer};

pub const LIMIT: Duration = Duration::from_secs(10);

pub const ALICE: &str = "store-alice-token-0b1c";
pub const BOB: &str = "store-bob-token-9f3e";

/// A node on `url` with the builtin tools, static tokens for alice and bob when `auth`.
pub fn node_config(node: &str, url: &str, extra_sessions: &str, auth: bool) -> String {
    node_config_with(node, url, extra_sessions, "", auth, BUILTIN_TOOLS_TOML)
}

/// A node on `url` with `tools`, `extra_store` keys in `[store]`, and static tokens for
/// alice and bob when `auth`.
pub fn node_config_with(
    node: &str,
    url: &str,
    extra_sessions: &str,
    extra_store: &str,
    auth: bool,
    tools: &str,
) -> String {
    let auth = if auth {
        "[auth]\nresource = \"https://mcp.example.com/mcp\"\n\n\
         [[auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"STORE_ALICE\"\n\n\
         [[auth.tokens]]\nprincipal = \"bob\"\ntoken_env = \"STORE_BOB\"\n"
    } else {
        ""
    };
    format!(
        "[server]\nnode_id = \"{node}\"\ndrain_timeout = \"5s\"\n\n\
         [sessions]\n{extra_sessions}\n\n\
         [store]\nurl = \"{url}\"\ntimeout = \"500ms\"\n{extra_store}\n\n\
         {auth}\n{tools}"
    )
}

/// Starts a node on the configuration file `name` in `dir`.
pub fn start_node(dir: &TempDir, name: &str, toml: &str) -> TestServer {
    let path = dir.write(name, toml);
    TestServer::with_config_file(&path, &[("STORE_ALICE", ALICE), ("STORE_BOB", BOB)])
}

/// A client of `url` whose every request carries `token`.
pub fn bearer(url: &str, token: &str) -> Client {
    let mut headers = HeaderMap::new();
    let value = HeaderValue::from_str(&format!("Bearer {token}")).expect("header value");
    headers.insert(AUTHORIZATION, value);
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .timeout(LIMIT)
        .build()
        .expect("client");
    Client {
        http,
        url: url.to_string(),
    }
}

/// The sum of every `/metrics` sample whose line starts with `name`.
pub async fn metric(server: &TestServer, name: &str) -> f64 {
    let text = reqwest::get(format!("{}/metrics", server.admin_url))
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
