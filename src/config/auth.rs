//! The shape of an `[auth]` table and its checks; [`crate::auth::Authenticator`] verifies
//! bearer tokens with it.
//!
//! Secrets never sit in the table: static tokens come from an environment variable or a
//! file, and JWT keys from a JWKS document.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

mod scopes;

pub use scopes::OperationScopes;
use scopes::non_canonical;

/// `[auth]`: this server as an OAuth 2.1 resource server (RFC 9728 metadata, bearer tokens).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// This server's resource URI (RFC 8707): what protected resource metadata names, and
    /// the audience a JWT must carry unless `jwt.audience` lists others.
    pub resource: String,
    /// Where clients get tokens; listed in the protected resource metadata.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes this server understands; listed in the metadata and in every 401 challenge.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    #[serde(default)]
    pub jwt: Option<JwtSection>,
    /// Static bearer tokens, each naming its principal.
    #[serde(default)]
    pub tokens: Vec<StaticTokenConfig>,
    /// Scopes individual operations need, beyond a valid token. Shared with every
    /// request's grants, which filter the lists.
    #[serde(default)]
    pub scopes: Arc<OperationScopes>,
    /// Live sessions one principal may hold; `initialize` past it gets 429.
    #[serde(default = "default_max_sessions_per_principal")]
    pub max_sessions_per_principal: usize,
    /// 2026-07-28 requests in flight one principal may have; past it, 429.
    #[serde(default = "default_max_in_flight_per_principal")]
    pub max_in_flight_per_principal: usize,
    /// Live tasks one principal may hold; a task-augmented call past it is refused.
    #[serde(default = "default_max_tasks_per_principal")]
    pub max_tasks_per_principal: usize,
    /// Open `subscriptions/listen` streams one principal may hold; past it, 429. Keeps one
    /// principal from taking every slot of `stateless.max_listen_streams`.
    #[serde(default = "default_max_listen_streams_per_principal")]
    pub max_listen_streams_per_principal: usize,
    /// `initialize` requests per second one principal may send (0: unlimited); more get
    /// 429 with `Retry-After`.
    #[serde(default = "default_initialize_rate_per_principal")]
    pub initialize_rate_per_principal: u32,
    /// How many `initialize` requests one principal may send at once before the rate
    /// applies.
    #[serde(default = "default_initialize_burst_per_principal")]
    pub initialize_burst_per_principal: u32,
}

/// `[auth.jwt]`: access tokens signed by the authorization server.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSection {
    /// The `iss` every token must carry.
    pub issuer: String,
    /// The JWKS document's URL: https, or http on a loopback address only.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// A JWKS document on disk, relative to the configuration file; read again when a token
    /// names a key it does not hold.
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// Accepted `aud` values; default: `[auth.resource]`.
    #[serde(default)]
    pub audience: Vec<String>,
    /// Accepted signature algorithms (asymmetric only).
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    #[serde(default = "default_leeway", with = "humantime_serde")]
    pub leeway: Duration,
    /// A token naming an unknown key refreshes the JWKS at most this often.
    #[serde(default = "default_refresh_cooldown", with = "humantime_serde")]
    pub refresh_cooldown: Duration,
    /// The longest a JWKS fetch may take.
    #[serde(default = "default_fetch_timeout", with = "humantime_serde")]
    pub fetch_timeout: Duration,
}

/// `[[auth.tokens]]`: one static bearer token.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticTokenConfig {
    /// The name requests with this token act as.
    pub principal: String,
    /// The environment variable holding the token.
    #[serde(default)]
    pub token_env: Option<String>,
    /// A file holding the token (surrounding whitespace is ignored), relative to the
    /// configuration file.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The scopes this token grants.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// The algorithms `jwt.algorithms` may name: asymmetric ones, whose keys a JWKS publishes.
/// HMAC (`HS*`) would need a secret shared with the authorization server, and `none`
/// proves nothing.
pub const ASYMMETRIC_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

fn default_algorithms() -> Vec<String> {
    vec!["RS256".into(), "ES256".into()]
}

fn default_max_sessions_per_principal() -> usize {
    100
}

fn default_max_in_flight_per_principal() -> usize {
    64
}

fn default_max_tasks_per_principal() -> usize {
    100
}

fn default_max_listen_streams_per_principal() -> usize {
    100
}

fn default_initialize_rate_per_principal() -> u32 {
    20
}

fn default_initialize_burst_per_principal() -> u32 {
    100
}

fn default_leeway() -> Duration {
    Duration::from_secs(30)
}

fn default_refresh_cooldown() -> Duration {
    Duration::from_secs(30)
}

fn default_fetch_timeout() -> Duration {
    Duration::from_secs(5)
}

impl AuthSection {
    /// What types alone cannot check, as (dotted key, message).
    pub fn errors(&self) -> Vec<(String, String)> {
        let mut errors = Vec::new();
        let mut bad = |key: String, msg: &str| errors.push((key, msg.to_string()));
        if !is_absolute_url(&self.resource) {
            bad(
                "auth.resource".into(),
                "must be this server's absolute URL, for example \"https://mcp.example.com/mcp\"",
            );
        }
        for (i, server) in self.authorization_servers.iter().enumerate() {
            if !is_absolute_url(server) {
                bad(
                    format!("auth.authorization_servers[{i}]"),
                    "must be an absolute URL",
                );
            }
        }
        if self.jwt.is_none() && self.tokens.is_empty() {
            bad(
                "auth".into(),
                "accepts no token: add [auth.jwt] or [[auth.tokens]]",
            );
        }
        if self.jwt.is_some() && self.authorization_servers.is_empty() {
            bad(
                "auth.authorization_servers".into(),
                "must name at least one authorization server when [auth.jwt] is set",
            );
        }
        if let Some(jwt) = &self.jwt {
            match (&jwt.jwks_url, &jwt.jwks_file) {
                (Some(_), Some(_)) | (None, None) => bad(
                    "auth.jwt".into(),
                    "needs exactly one of jwks_url and jwks_file",
                ),
                (Some(url), None) if !jwks_url_allowed(url) => bad(
                    "auth.jwt.jwks_url".into(),
                    "must be https (plain http only on a loopback address)",
                ),
                _ => {}
            }
            for (i, alg) in jwt.algorithms.iter().enumerate() {
                if !ASYMMETRIC_ALGORITHMS.contains(&alg.as_str()) {
                    bad(
                        format!("auth.jwt.algorithms[{i}]"),
                        "must be one of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, \
                         EdDSA (HMAC and none are refused)",
                    );
                }
            }
            if jwt.algorithms.is_empty() {
                bad(
                    "auth.jwt.algorithms".into(),
                    "must name at least one algorithm",
                );
            }
        }
        let caps = [
            (
                "auth.max_sessions_per_principal",
                self.max_sessions_per_principal,
            ),
            (
                "auth.max_in_flight_per_principal",
                self.max_in_flight_per_principal,
            ),
            ("auth.max_tasks_per_principal", self.max_tasks_per_principal),
            (
                "auth.max_listen_streams_per_principal",
                self.max_listen_streams_per_principal,
            ),
        ];
        for (key, value) in caps {
            if value == 0 {
                bad(key.into(), "must be greater than 0");
            }
        }
        if self.initialize_rate_per_principal > 0 && self.initialize_burst_per_principal == 0 {
            bad(
                "auth.initialize_burst_per_principal".into(),
                "must be at least 1 while auth.initialize_rate_per_principal is on",
            );
        }
        for (kind, key, scopes) in self.scopes.entries() {
            if key.is_empty() || scopes.is_empty() || scopes.iter().any(|s| !is_scope_token(s)) {
                bad(
                    format!("auth.scopes.{kind}.{key}"),
                    "must name at least one scope, each non-empty visible ASCII without \" or \\",
                );
            }
        }
        for key in self.scopes.resources.keys() {
            if let Some(message) = non_canonical(key) {
                bad(format!("auth.scopes.resources.{key:?}"), &message);
            }
        }
        for (i, scope) in self.scopes_supported.iter().enumerate() {
            if !is_scope_token(scope) {
                bad(
                    format!("auth.scopes_supported[{i}]"),
                    "must be non-empty visible ASCII without spaces, \" or \\",
                );
            }
        }
        let mut principals = std::collections::HashSet::new();
        for (i, token) in self.tokens.iter().enumerate() {
            if token.token_env.is_some() == token.token_file.is_some() {
                bad(
                    format!("auth.tokens[{i}]"),
                    "needs exactly one of token_env and token_file (never the token itself)",
                );
            }
            if token.principal.trim().is_empty() {
                bad(format!("auth.tokens[{i}].principal"), "must not be empty");
            } else if !principals.insert(&token.principal) {
                bad(
                    format!("auth.tokens[{i}].principal"),
                    "is already used by another token",
                );
            }
        }
        errors
    }
}

/// A scope token (RFC 6749 §3.3): visible ASCII but `"` and `\`, so it goes into a
/// challenge's quoted `scope` unescaped.
fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e))
}

fn is_absolute_url(text: &str) -> bool {
    reqwest::Url::parse(text).is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.has_host())
}

/// https anywhere; plain http only to a loopback host.
pub(crate) fn jwks_url_allowed(text: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(text) else {
        return false;
    };
    match url.scheme() {
        "https" => url.has_host(),
        "http" => match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::AuthSection;

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        auth: AuthSection,
    }

    /// Every error of the `[auth]` table in `toml`, as `key: message` lines.
    fn errors(toml: &str) -> String {
        match toml::from_str::<File>(toml) {
            Ok(file) => file
                .auth
                .errors()
                .into_iter()
                .map(|(key, message)| format!("{key}: {message}\n"))
                .collect(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_complete_auth_table_is_accepted() {
        let ok = r#"
[auth]
resource = "https://mcp.example.com/mcp"
authorization_servers = ["https://auth.example.com"]
scopes_supported = ["mcp:tools"]
[auth.jwt]
issuer = "https://auth.example.com"
jwks_url = "http://127.0.0.1:9999/jwks.json"
algorithms = ["ES256", "EdDSA"]
[[auth.tokens]]
principal = "ci-bot"
token_env = "MCP_CI_TOKEN"
"#;
        assert_eq!(errors(ok), "");
    }

    #[test]
    fn unsafe_or_incomplete_auth_tables_are_refused_with_their_keys() {
        let bad = r#"
[auth]
resource = "mcp.example.com"
initialize_burst_per_principal = 0
[auth.jwt]
issuer = "https://auth.example.com"
jwks_url = "http://auth.example.com/jwks.json"
algorithms = ["HS256", "none"]
[[auth.tokens]]
principal = "a"
[[auth.tokens]]
principal = "a"
token_env = "X"
token_file = "y"
"#;
        let text = errors(bad);
        for expected in [
            "auth.initialize_burst_per_principal",
            "auth.resource",
            "auth.authorization_servers",
            "auth.jwt.jwks_url",
            "auth.jwt.algorithms[0]",
            "auth.jwt.algorithms[1]",
            "auth.tokens[0]",
            "auth.tokens[1]",
        ] {
            assert!(text.contains(expected), "{expected} missing from:\n{text}");
        }
        let keys = "[auth]\nresource = \"https://x.example/mcp\"\n[[auth.tokens]]\nprincipal = \"a\"\ntoken_env = \"X\"\n[auth.scopes]\nresources = { \"FILE:///docs/%73ecret/*\" = [\"s\"], \"file:///docs/./a\" = [\"s\"], \"file:///ok/*\" = [\"s\"] }\n";
        let text = errors(keys);
        assert!(
            text.contains(r#"write it as "file:///docs/secret/*""#),
            "{text}"
        );
        assert!(
            text.contains("file:///docs/./a") && !text.contains("file:///ok/*"),
            "{text}"
        );
        let inline = "[auth]\nresource = \"https://x.example/mcp\"\n[[auth.tokens]]\nprincipal = \"a\"\ntoken = \"secret\"\n";
        assert!(
            errors(inline).contains("token"),
            "an inline token must not parse"
        );
    }
}
