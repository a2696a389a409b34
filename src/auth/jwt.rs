//! JWT access tokens: signature against the authorization server's JWKS, pinned
//! algorithms, issuer, audience (RFC 8707), expiry and not-before with a small leeway.
//!
//! Keys are cached by `kid`. A token naming a key the cache lacks refreshes the JWKS, at
//! most once per `refresh_cooldown`, so a key rotation needs no restart and a flood of
//! made-up `kid`s costs one fetch per cooldown. Fetches are bounded in time and size.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::Mutex;

use super::Principal;
use crate::config::auth::JwtSection;

/// The largest JWKS document read.
const MAX_JWKS_BYTES: usize = 1 << 20;

enum Source {
    Url(String),
    File(PathBuf),
}

struct Keys {
    by_kid: HashMap<String, Arc<(DecodingKey, Option<Algorithm>)>>,
    /// A key without `kid`, used for tokens without one when it is the only key.
    only: Option<Arc<(DecodingKey, Option<Algorithm>)>>,
    fetched: Option<Instant>,
}

pub(super) struct JwtVerifier {
    issuer: String,
    audience: Vec<String>,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    cooldown: Duration,
    source: Source,
    http: reqwest::Client,
    keys: Mutex<Keys>,
}

/// The claims read beyond what `jsonwebtoken` checks.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    /// RFC 8693 / RFC 9068: space-separated.
    #[serde(default)]
    scope: Option<String>,
    /// A list, as some authorization servers send.
    #[serde(default)]
    scp: Option<Vec<String>>,
}

impl JwtVerifier {
    pub fn new(
        config: &JwtSection,
        resource: &str,
        base_dir: &std::path::Path,
    ) -> Result<Self, String> {
        let algorithms = config
            .algorithms
            .iter()
            .map(|a| {
                a.parse::<Algorithm>()
                    .map_err(|e| format!("auth.jwt.algorithms: {a}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let source = match (&config.jwks_url, &config.jwks_file) {
            (Some(url), _) => Source::Url(url.clone()),
            (None, Some(file)) => Source::File(base_dir.join(file)),
            (None, None) => return Err("auth.jwt: no jwks_url or jwks_file".into()),
        };
        let audience = if config.audience.is_empty() {
            vec![resource.to_string()]
        } else {
            config.audience.clone()
        };
        let http = reqwest::Client::builder()
            .timeout(config.fetch_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("auth.jwt: cannot build the JWKS client: {e}"))?;
        Ok(JwtVerifier {
            issuer: config.issuer.clone(),
            audience,
            algorithms,
            leeway: config.leeway,
            cooldown: config.refresh_cooldown,
            source,
            http,
            keys: Mutex::new(Keys {
                by_kid: HashMap::new(),
                only: None,
                fetched: None,
            }),
        })
    }

    /// Loads the keys once before serving, so a broken JWKS shows at startup.
    pub async fn prime(&self) -> Result<(), String> {
        let mut keys = self.keys.lock().await;
        self.refresh(&mut keys).await
    }

    /// Verifies `token` and returns its principal, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Principal, String> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| format!("the token is not a well-formed JWT: {e}"))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(format!(
                "the token's algorithm {:?} is not accepted (auth.jwt.algorithms)",
                header.alg
            ));
        }
        let key = self.key(header.kid.as_deref()).await?;
        let (decoding, key_alg) = &*key;
        if key_alg.is_some_and(|a| a != header.alg) {
            return Err("the token's algorithm differs from its key's".into());
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&self.audience);
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, decoding, &validation)
            .map_err(|e| refusal(&e, &self.issuer, &self.audience))?;
        let claims = data.claims;
        let client = claims.client_id.or(claims.azp).unwrap_or_default();
        let mut scopes: std::collections::BTreeSet<String> = claims
            .scope
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        scopes.extend(claims.scp.unwrap_or_default());
        Ok(Principal {
            // Issuer, subject and client together: the same subject through another client
            // is another principal.
            key: Arc::from(format!(
                "jwt:{}\u{1f}{}\u{1f}{client}",
                self.issuer, claims.sub
            )),
            name: Arc::from(claims.sub.as_str()),
            scopes: Arc::new(scopes),
        })
    }

    async fn key(
        &self,
        kid: Option<&str>,
    ) -> Result<Arc<(DecodingKey, Option<Algorithm>)>, String> {
        let mut keys = self.keys.lock().await;
        if let Some(key) = lookup(&keys, kid) {
            return Ok(key);
        }
        let cooled = keys.fetched.is_none_or(|at| at.elapsed() >= self.cooldown);
        if cooled {
            self.refresh(&mut keys).await?;
            if let Some(key) = lookup(&keys, kid) {
                return Ok(key);
            }
        }
        Err(match kid {
            Some(kid) => {
                format!("the token's key {kid:?} is not in the authorization server's JWKS")
            }
            None => "the token names no key (kid) and the JWKS has more than one".into(),
        })
    }

    async fn refresh(&self, keys: &mut Keys) -> Result<(), String> {
        keys.fetched = Some(Instant::now());
        let text = match &self.source {
            Source::File(path) => tokio::fs::read_to_string(path)
                .await
                .map_err(|e| format!("cannot read the JWKS {}: {e}", path.display()))?,
            Source::Url(url) => self.fetch(url).await?,
        };
        let set: JwkSet =
            serde_json::from_str(&text).map_err(|e| format!("the JWKS is not valid: {e}"))?;
        let mut by_kid = HashMap::new();
        let mut unnamed = Vec::new();
        for jwk in &set.keys {
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            let entry = Arc::new((key, jwk_algorithm(jwk)));
            match &jwk.common.key_id {
                Some(kid) => {
                    by_kid.insert(kid.clone(), entry);
                }
                None => unnamed.push(entry),
            }
        }
        keys.only = match (by_kid.len(), unnamed.len()) {
            (0, 1) => unnamed.pop(),
            (1, 0) => by_kid.values().next().cloned(),
            _ => None,
        };
        keys.by_kid = by_kid;
        Ok(())
    }

    async fn fetch(&self, url: &str) -> Result<String, String> {
        let mut response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("cannot fetch the JWKS {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("the JWKS {url} answered {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("cannot read the JWKS {url}: {e}"))?
        {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!(
                    "the JWKS {url} is larger than {MAX_JWKS_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map_err(|_| format!("the JWKS {url} is not UTF-8"))
    }
}

fn lookup(keys: &Keys, kid: Option<&str>) -> Option<Arc<(DecodingKey, Option<Algorithm>)>> {
    match kid {
        Some(kid) => keys.by_kid.get(kid).cloned(),
        None => keys.only.clone(),
    }
}

fn jwk_algorithm(jwk: &Jwk) -> Option<Algorithm> {
    jwk.common
        .key_algorithm
        .and_then(|a| a.to_string().parse::<Algorithm>().ok())
}

/// Which check failed, in words an operator can act on (deployments break on audience
/// checks when the authorization server mints no `aud` without a resource indicator).
fn refusal(error: &jsonwebtoken::errors::Error, issuer: &str, audience: &[String]) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "the token has expired (exp)".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        ErrorKind::InvalidIssuer => format!("the token's issuer (iss) is not {issuer}"),
        ErrorKind::InvalidAudience => format!(
            "the token's audience (aud) is not this server ({}); request it with the resource \
             indicator",
            audience.join(", ")
        ),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        ErrorKind::InvalidSignature => "the token's signature does not verify".into(),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not match its key".into(),
        _ => format!("the token is invalid: {error}"),
    }
}

#[cfg(test)]
mod tests;
