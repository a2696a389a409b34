//! JWT access tokens: signature against the authorization server's JWKS, pinned
//! algorithms, issuer, audience (RFC 8707), expiry and not-before with a small leeway.
//!
//! Keys are cached by `kid`. A token naming a key the cache lacks refreshes the JWKS, at
//! most once per `refresh_cooldown`, so a key rotation needs no restart and a flood of
//! made-up `kid`s costs one fetch per cooldown. Fetches are bounded in time and size.
//!
//! Every check reads the keys through an [`ArcSwap`], never a lock: a fetch can take up to
//! `fetch_timeout`, and only the requests whose key is missing may wait for it. Those
//! queue on one refresh mutex (single flight): the first fetches, and the ones that queued
//! behind it look again at what it stored instead of fetching once more.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
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

type Key = Arc<(DecodingKey, Option<Algorithm>)>;

#[derive(Default)]
struct Keys {
    by_kid: HashMap<String, Key>,
    /// A key without `kid`, used for tokens without one when it is the only key.
    only: Option<Key>,
}

/// What the refresh mutex guards: when the JWKS was last fetched.
#[derive(Default)]
struct Refreshes {
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
    keys: ArcSwap<Keys>,
    refresh: Mutex<Refreshes>,
    /// Fetches ended, read before queueing on `refresh`: a change means a fetch ran while
    /// the request queued, so it looks at that fetch's keys rather than fetching again.
    fetches: AtomicU64,
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
            keys: ArcSwap::from_pointee(Keys::default()),
            refresh: Mutex::new(Refreshes::default()),
            fetches: AtomicU64::new(0),
        })
    }

    /// Loads the keys once before serving, so a broken JWKS shows at startup.
    pub async fn prime(&self) -> Result<(), String> {
        let mut refreshes = self.refresh.lock().await;
        self.refresh(&mut refreshes).await
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
            key: principal_key(&self.issuer, &claims.sub, &client),
            name: Arc::from(claims.sub.as_str()),
            scopes: Arc::new(scopes),
        })
    }

    async fn key(&self, kid: Option<&str>) -> Result<Key, String> {
        if let Some(key) = lookup(&self.keys.load(), kid) {
            return Ok(key);
        }
        let seen = self.fetches.load(Ordering::Acquire);
        let mut refreshes = self.refresh.lock().await;
        // Another request's fetch may have brought the key while this one queued.
        if let Some(key) = lookup(&self.keys.load(), kid) {
            return Ok(key);
        }
        let fetched_meanwhile = seen != self.fetches.load(Ordering::Acquire);
        let cooled = refreshes
            .fetched
            .is_none_or(|at| at.elapsed() >= self.cooldown);
        if cooled && !fetched_meanwhile {
            self.refresh(&mut refreshes).await?;
            if let Some(key) = lookup(&self.keys.load(), kid) {
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

    /// Fetches the JWKS and publishes its keys; `refreshes` is the held refresh mutex.
    async fn refresh(&self, refreshes: &mut Refreshes) -> Result<(), String> {
        refreshes.fetched = Some(Instant::now());
        let fetched = self.fetch_keys().await;
        self.fetches.fetch_add(1, Ordering::Release);
        fetched
    }

    async fn fetch_keys(&self) -> Result<(), String> {
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
        let only = match (by_kid.len(), unnamed.len()) {
            (0, 1) => unnamed.pop(),
            (1, 0) => by_kid.values().next().cloned(),
            _ => None,
        };
        self.keys.store(Arc::new(Keys { by_kid, only }));
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

/// Issuer, subject and client together: the same subject through another client is another
/// principal. Each field is prefixed with its length in bytes, so the fields stay apart
/// whatever they contain: with a separator character, a claim holding that character
/// made two principals one key.
fn principal_key(issuer: &str, sub: &str, client: &str) -> Arc<str> {
    let mut key = String::from("jwt:");
    for field in [issuer, sub, client] {
        key.push_str(&format!("{}:{field}", field.len()));
    }
    Arc::from(key)
}

fn lookup(keys: &Keys, kid: Option<&str>) -> Option<Key> {
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
