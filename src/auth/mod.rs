//! Authentication: the principal behind a request, from its bearer token.
//!
//! The server is an OAuth 2.1 resource server (spec `basic/authorization`): it verifies
//! access tokens issued by an authorization server (JWTs against its JWKS) or static tokens
//! from the configuration, and never issues tokens itself. A token is only ever read here:
//! no provider sees the client's token, so none can forward it upstream.
//!
//! Everything the server keeps across requests is bound to the [`Principal`]'s `key`.

mod jwt;
mod tokens;

pub(crate) use tokens::token_from_env;
pub use tokens::{withhold_env_var, withhold_token_env};

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use crate::config::auth::AuthSection;

/// Who a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// What state is bound to: for a JWT, issuer, subject and client together; for a static
    /// token, its configured principal name.
    pub key: Arc<str>,
    /// A name for logs: the JWT's subject or the static token's principal.
    pub name: Arc<str>,
    /// The scopes the token grants.
    pub scopes: Arc<BTreeSet<String>>,
}

impl Principal {
    /// The principal of every request when authentication is off.
    pub fn anonymous() -> Principal {
        Principal {
            key: Arc::from("anonymous"),
            name: Arc::from("anonymous"),
            scopes: Arc::default(),
        }
    }

    /// The scopes of `needed` this principal lacks.
    pub fn missing_scopes<'a>(&self, needed: &'a [String]) -> Vec<&'a str> {
        needed
            .iter()
            .filter(|s| !self.scopes.contains(*s))
            .map(String::as_str)
            .collect()
    }
}

/// Why a request carries no usable token: each is a 401 with the challenge.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AuthError {
    #[error("this server needs a bearer token: send `Authorization: Bearer <token>`")]
    Missing,
    #[error("the Authorization header is not `Bearer <token>`")]
    Malformed,
    #[error("the bearer token was refused: {0}")]
    Invalid(String),
}

impl AuthError {
    /// The `error` parameter of the challenge (RFC 6750 §3.1), when there is one.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing => None,
            AuthError::Malformed => Some("invalid_request"),
            AuthError::Invalid(_) => Some("invalid_token"),
        }
    }
}

/// Verifies bearer tokens: static ones and JWTs.
pub struct Authenticator {
    config: AuthSection,
    tokens: tokens::StaticTokens,
    jwt: Option<jwt::JwtVerifier>,
    metadata_url: String,
}

impl Authenticator {
    /// Reads the tokens' secrets and prepares the JWT verifier. `base_dir` resolves
    /// relative `token_file` and `jwks_file` paths.
    pub fn new(config: &AuthSection, base_dir: &Path) -> Result<Self, String> {
        let tokens = tokens::StaticTokens::load(&config.tokens, base_dir)?;
        let jwt = config
            .jwt
            .as_ref()
            .map(|jwt| jwt::JwtVerifier::new(jwt, &config.resource, base_dir))
            .transpose()?;
        let metadata_url = metadata_url(&config.resource)?;
        Ok(Authenticator {
            config: config.clone(),
            tokens,
            jwt,
            metadata_url,
        })
    }

    /// Loads the JWKS once, so a missing or broken one is a startup error.
    pub async fn prime(&self) -> Result<(), String> {
        match &self.jwt {
            Some(jwt) => jwt.prime().await,
            None => Ok(()),
        }
    }

    pub fn config(&self) -> &AuthSection {
        &self.config
    }

    /// Where clients read the protected resource metadata: the well-known path inserted
    /// before the resource's own path (RFC 9728 §3.1), at the resource's origin.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The path of [`metadata_url`](Self::metadata_url), which this server answers.
    pub fn metadata_path(&self) -> &str {
        let after_scheme = self.metadata_url.find("://").map_or(0, |i| i + 3);
        let path = self.metadata_url[after_scheme..].find('/');
        path.map_or("/", |i| &self.metadata_url[after_scheme + i..])
    }

    /// The principal of a request with this `Authorization` header value.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Principal, AuthError> {
        let value = authorization.ok_or(AuthError::Missing)?;
        let token = bearer_token(value).ok_or(AuthError::Malformed)?;
        if !self.tokens.is_empty() {
            if let Some(principal) = self.tokens.find(token) {
                return Ok(principal);
            }
        }
        match &self.jwt {
            Some(jwt) if token.contains('.') => jwt.verify(token).await.map_err(AuthError::Invalid),
            _ => Err(AuthError::Invalid(
                "the token is not known to this server".into(),
            )),
        }
    }

    /// The protected resource metadata (RFC 9728).
    pub fn metadata(&self) -> serde_json::Value {
        let mut doc = serde_json::json!({
            "resource": self.config.resource,
            "authorization_servers": self.config.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.config.scopes_supported.is_empty() {
            doc["scopes_supported"] = serde_json::json!(self.config.scopes_supported);
        }
        doc
    }
}

/// `https://host/.well-known/oauth-protected-resource/<resource path>` for a resource URI
/// (the path part is left out when the resource is the origin itself).
fn metadata_url(resource: &str) -> Result<String, String> {
    let url = url::Url::parse(resource).map_err(|e| format!("auth.resource: {e}"))?;
    let path = url.path().trim_end_matches('/');
    Ok(format!(
        "{}/.well-known/oauth-protected-resource{path}",
        url.origin().ascii_serialization()
    ))
}

/// The token of `Bearer <token>` (the scheme is case-insensitive; RFC 6750 §2.1).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    let token68 = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/=".contains(&b);
    (!token.is_empty() && token.bytes().all(token68)).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_path_before_the_resource_path() {
        let url = |r: &str| metadata_url(r).unwrap();
        assert_eq!(
            url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            url("https://mcp.example.com"),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            url("http://127.0.0.1:8080/a/mcp/"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/mcp"
        );
    }

    #[test]
    fn bearer_tokens_are_read_from_the_header_and_nothing_else() {
        assert_eq!(bearer_token("Bearer abc.def-ghi"), Some("abc.def-ghi"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer a b"), None);
        assert_eq!(bearer_token("Bearer a\"b"), None);
    }
}
