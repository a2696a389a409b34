//! A protected server and what its tests share: the `[auth]` configuration they start it
//! with ([`AuthToml`]), clients that send a bearer token, tokens for named users, and the
//! reading of `WWW-Authenticate` challenges and 401 bodies.
//!
//! The resource URI is a public-looking `https://mcp.example.com/mcp` rather than the
//! loopback address (unknown until the server binds): the server never dereferences it, it
//! only names itself with it (the JWT audience, the metadata, the challenge's URL).

use std::collections::BTreeMap;
use std::path::PathBuf;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use serde_json::{Value, json};

use super::keys::{Signer, now};
use crate::common::modern::LIMIT;
use crate::common::{BUILTIN_TOOLS_TOML, Client, TempDir, TestServer};

pub const RESOURCE: &str = "https://mcp.example.com/mcp";
pub const ISSUER: &str = "https://auth.example.com";
/// Where the challenge points: RFC 9728 §3.1, the well-known path inserted before the
/// resource's path.
pub const METADATA_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
/// `scopes_supported`, and everything `sleep` needs, space-separated.
pub const ALL_SCOPES: &str = "mcp:tools mcp:deploy";
/// The `client_id` of every token unless a test says otherwise.
pub const CLIENT_ID: &str = "test-client";

/// The configuration of a protected server: builtin tools, then `[auth]`. By default JWTs
/// are accepted from the JWKS at `jwks_url`, `scopes_supported` is [`ALL_SCOPES`], `echo`
/// needs `mcp:tools` and `sleep` needs both scopes.
pub struct AuthToml {
    jwks_url: Option<String>,
    scopes_supported: Vec<String>,
    scope_tables: Vec<String>,
    auth_lines: Vec<String>,
    jwt_lines: Vec<String>,
    tokens: Vec<(String, String, String, Vec<String>)>,
    env: Vec<(String, String)>,
    tail: String,
}

impl AuthToml {
    /// JWTs from the JWKS at `jwks_url`.
    pub fn jwt(jwks_url: &str) -> AuthToml {
        AuthToml {
            jwks_url: Some(jwks_url.to_string()),
            scopes_supported: ALL_SCOPES.split(' ').map(str::to_string).collect(),
            scope_tables: vec![
                r#"tools = { echo = ["mcp:tools"], sleep = ["mcp:tools", "mcp:deploy"] }"#.into(),
            ],
            auth_lines: Vec::new(),
            jwt_lines: Vec::new(),
            tokens: Vec::new(),
            env: Vec::new(),
            tail: BUILTIN_TOOLS_TOML.to_string(),
        }
    }

    /// Static tokens only (add them with [`AuthToml::static_token`]), no scopes anywhere.
    pub fn static_only() -> AuthToml {
        AuthToml {
            jwks_url: None,
            scopes_supported: Vec::new(),
            scope_tables: Vec::new(),
            ..AuthToml::jwt("")
        }
    }

    /// A `[[auth.tokens]]` entry: `principal`'s token `value`, read from the environment
    /// variable `env` (the server refuses tokens shorter than 16 bytes).
    pub fn static_token(
        mut self,
        principal: &str,
        env: &str,
        value: &str,
        scopes: &[&str],
    ) -> Self {
        let scopes = scopes.iter().map(|s| s.to_string()).collect();
        self.tokens
            .push((principal.into(), env.into(), value.into(), scopes));
        self
    }

    /// A line in `[auth]`, such as `max_sessions_per_principal = 2`.
    pub fn auth(mut self, line: &str) -> Self {
        self.auth_lines.push(line.into());
        self
    }

    /// A line in `[auth.jwt]`, such as `refresh_cooldown = "0s"`.
    pub fn jwt_setting(mut self, line: &str) -> Self {
        self.jwt_lines.push(line.into());
        self
    }

    /// A line in `[auth.scopes]`, such as `resources = { "mem://secret/*" = ["x"] }`.
    pub fn scopes(mut self, line: &str) -> Self {
        self.scope_tables.push(line.into());
        self
    }

    /// An environment variable for the server, such as one a tool's header expands.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// TOML placed before `[auth]` (tools, resources); the builtin tools by default.
    pub fn before_auth(mut self, toml: &str) -> Self {
        self.tail = toml.to_string();
        self
    }

    pub fn render(&self) -> String {
        let quoted = |items: &[String]| {
            let items: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
            format!("[{}]", items.join(", "))
        };
        let mut toml = format!(
            "{}\n[auth]\nresource = {RESOURCE:?}\nauthorization_servers = [{ISSUER:?}]\n",
            self.tail
        );
        if !self.scopes_supported.is_empty() {
            toml += &format!("scopes_supported = {}\n", quoted(&self.scopes_supported));
        }
        for line in &self.auth_lines {
            toml += &format!("{line}\n");
        }
        if !self.scope_tables.is_empty() {
            toml += "\n[auth.scopes]\n";
            for line in &self.scope_tables {
                toml += &format!("{line}\n");
            }
        }
        if let Some(url) = &self.jwks_url {
            toml += &format!("\n[auth.jwt]\nissuer = {ISSUER:?}\njwks_url = {url:?}\n");
            for line in &self.jwt_lines {
                toml += &format!("{line}\n");
            }
        }
        for (principal, env, _, scopes) in &self.tokens {
            toml += &format!(
                "\n[[auth.tokens]]\nprincipal = {principal:?}\ntoken_env = {env:?}\nscopes = {}\n",
                quoted(scopes)
            );
        }
        toml
    }

    /// The server's environment: the static tokens and the variables set with `env`.
    pub fn environment(&self) -> Vec<(String, String)> {
        let tokens = self.tokens.iter().map(|(_, env, value, _)| (env, value));
        tokens
            .chain(self.env.iter().map(|(k, v)| (k, v)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// The binary on an [`AuthToml`], its configuration file in a directory of its own.
pub struct Protected {
    pub server: TestServer,
    _dir: TempDir,
    pub config_path: PathBuf,
}

impl Protected {
    pub fn start(config: &AuthToml) -> Protected {
        let dir = TempDir::new("auth");
        let config_path = dir.write("config.toml", &config.render());
        let env = config.environment();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let server = TestServer::with_config_file(&config_path, &env);
        Protected {
            server,
            _dir: dir,
            config_path,
        }
    }

    /// A client sending `Authorization: Bearer <token>` on every request.
    pub fn client(&self, token: &str) -> Client {
        bearer_client(&self.server.url, token)
    }

    /// A client that sends no `Authorization` header.
    pub fn anonymous(&self) -> Client {
        self.server.bounded_client(LIMIT)
    }

    /// A client sending `Authorization: <value>` exactly.
    pub fn with_authorization(&self, value: &str) -> Client {
        client_with_header(&self.server.url, value)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        crate::common::modern::base_of(&self.server.url)
    }
}

pub fn bearer_client(url: &str, token: &str) -> Client {
    client_with_header(url, &format!("Bearer {token}"))
}

fn client_with_header(url: &str, authorization: &str) -> Client {
    let mut headers = HeaderMap::new();
    let value = HeaderValue::from_str(authorization).expect("a valid header value");
    headers.insert(AUTHORIZATION, value);
    let http = reqwest::Client::builder()
        .timeout(LIMIT)
        .default_headers(headers)
        .build()
        .expect("client");
    Client {
        http,
        url: url.to_string(),
    }
}

/// Claims of a valid access token for `sub` granting `scope` (space-separated), issued to
/// [`CLIENT_ID`] for this server and valid for five minutes.
pub fn claims(sub: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER, "aud": RESOURCE, "sub": sub, "client_id": CLIENT_ID,
        "iat": now(), "exp": now() + 300, "scope": scope,
    })
}

/// A valid token for `sub` with every scope.
pub fn token_for(key: &Signer, sub: &str) -> String {
    key.sign(&claims(sub, ALL_SCOPES))
}

/// A parsed `WWW-Authenticate` challenge (RFC 9110 §11.6.1).
#[derive(Debug)]
pub struct Challenge {
    pub scheme: String,
    pub params: BTreeMap<String, String>,
}

impl Challenge {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }
}

/// The one `WWW-Authenticate` challenge of `headers`.
pub fn challenge(headers: &HeaderMap) -> Challenge {
    let values: Vec<&str> = headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .map(|v| v.to_str().expect("an ASCII challenge"))
        .collect();
    assert_eq!(values.len(), 1, "one WWW-Authenticate header: {headers:?}");
    parse_challenge(values[0])
}

fn parse_challenge(raw: &str) -> Challenge {
    let (scheme, mut rest) = raw.split_once(' ').unwrap_or((raw, ""));
    let mut params = BTreeMap::new();
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        let Some((name, after)) = rest.split_once('=') else {
            break;
        };
        let (value, after) = match after.strip_prefix('"') {
            Some(quoted) => read_quoted(quoted, raw),
            None => {
                let (value, after) = after.split_once(',').unwrap_or((after, ""));
                (value.to_string(), after)
            }
        };
        let name = name.trim().to_ascii_lowercase();
        assert!(
            params
                .insert(name.clone(), value.trim().to_string())
                .is_none(),
            "parameter {name} repeated in {raw:?}"
        );
        rest = after;
    }
    Challenge {
        scheme: scheme.to_string(),
        params,
    }
}

/// The text of a quoted string starting after its opening quote, and what follows it.
fn read_quoted<'a>(text: &'a str, raw: &str) -> (String, &'a str) {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => value.extend(chars.next().map(|(_, c)| c)),
            '"' => return (value, &text[i + 1..]),
            c => value.push(c),
        }
    }
    panic!("an unterminated quoted string in {raw:?}")
}

/// What a 401 must be: a Bearer challenge pointing at the metadata, with `error` as given
/// (and then an `error_description`), and a JSON-RPC error body a person can act on.
/// Returns the challenge and the body.
pub async fn expect_unauthorized(
    resp: reqwest::Response,
    error: Option<&str>,
) -> (Challenge, Value) {
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{headers:?}\n{text}");
    let challenge = challenge(&headers);
    assert!(
        challenge.scheme.eq_ignore_ascii_case("bearer"),
        "a Bearer challenge: {challenge:?}"
    );
    assert_eq!(
        challenge.param("resource_metadata"),
        Some(METADATA_URL),
        "{challenge:?}"
    );
    assert_eq!(challenge.param("error"), error, "{challenge:?}");
    if error.is_some() {
        assert!(
            challenge
                .param("error_description")
                .is_some_and(|d| !d.is_empty()),
            "an error_description says what was wrong: {challenge:?}"
        );
    }
    let body = json_rpc_error_body(&headers, &text);
    (challenge, body)
}

/// A refusal's body: a JSON-RPC error object with no id (or a null one) and a message.
pub fn json_rpc_error_body(headers: &HeaderMap, text: &str) -> Value {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        content_type.starts_with("application/json"),
        "a JSON body: {content_type:?} {text}"
    );
    let body: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    // The server leaves the id out of every transport refusal (src/http/error.rs: the
    // 2025-11-25 schema makes it optional there, and a null one would not validate).
    assert!(
        matches!(body.get("id"), None | Some(Value::Null)),
        "no request id to echo: {body}"
    );
    assert!(body["error"]["code"].is_i64(), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    body
}

/// What a refusal tells a person, lower-cased: the body's message and the challenge's
/// description together.
pub fn explanation(challenge: &Challenge, body: &Value) -> String {
    format!(
        "{} {}",
        body["error"]["message"].as_str().unwrap_or(""),
        challenge.param("error_description").unwrap_or("")
    )
    .to_lowercase()
}

#[test]
fn challenges_are_parsed_with_quoted_commas_and_escapes() {
    let c = parse_challenge(
        r#"Bearer error="invalid_token", error_description="a, \"b\"", scope="x y",resource_metadata="https://h/p""#,
    );
    assert_eq!(c.scheme, "Bearer");
    assert_eq!(c.param("error"), Some("invalid_token"));
    assert_eq!(c.param("error_description"), Some("a, \"b\""));
    assert_eq!(c.param("scope"), Some("x y"));
    assert_eq!(c.param("resource_metadata"), Some("https://h/p"));
}
