//! Static bearer tokens: each a secret from the environment or a file, naming a principal.
//!
//! Only SHA-256 digests are kept. A presented token is hashed and compared with every
//! digest in constant time, so neither the comparison nor the number of tokens tried tells
//! an attacker how close a guess came.
//!
//! The binary takes each `token_env` variable out of its environment at startup
//! ([`withhold_token_env`]), before any thread or child exists: every child (stdio
//! upstreams, command tools without `env_clear`) inherits the server's environment, and a
//! token it could read would authenticate as that token's principal. The values stay here
//! in memory, so a reload never needs the variables again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::Principal;
use crate::config::auth::{AuthSection, StaticTokenConfig};

/// The `token_env` values taken out of the environment, by variable name.
static WITHHELD: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

/// Keeps the value of every `token_env` variable of `section` that is set, for
/// [`StaticTokens::load`] to read instead of the environment, and returns their names: the
/// caller removes them from the process environment, which needs no other thread to be
/// running (`std::env::remove_var` is `unsafe` for that reason), so only a `main` before
/// its runtime can. An embedding program that leaves them set still works: `load` falls
/// back to the environment.
pub fn withhold_token_env(section: Option<&AuthSection>) -> Vec<String> {
    let mut withheld = WITHHELD.lock().unwrap_or_else(PoisonError::into_inner);
    let vars = section.into_iter().flat_map(|s| &s.tokens);
    let vars = vars.filter_map(|t| t.token_env.as_ref());
    let mut names = Vec::new();
    for var in vars {
        if let Ok(value) = std::env::var(var) {
            withheld.insert(var.clone(), value);
            names.push(var.clone());
        }
    }
    names
}

/// [`withhold_token_env`] for one more variable (the admin token's `admin.token_env`):
/// its name when it was set and is now kept here.
pub fn withhold_env_var(var: &str) -> Option<String> {
    let value = std::env::var(var).ok()?;
    let mut withheld = WITHHELD.lock().unwrap_or_else(PoisonError::into_inner);
    withheld.insert(var.to_string(), value);
    Some(var.to_string())
}

/// The token in `var`: the value withheld at startup, else the environment's.
pub(crate) fn token_from_env(var: &str) -> Option<String> {
    let withheld = WITHHELD.lock().unwrap_or_else(PoisonError::into_inner);
    withheld
        .get(var)
        .cloned()
        .or_else(|| std::env::var(var).ok())
}

/// Tokens shorter than this are refused at startup: a bearer token must not be guessable.
const MIN_TOKEN_BYTES: usize = 16;

pub(super) struct StaticTokens {
    entries: Vec<([u8; 32], Principal)>,
}

impl StaticTokens {
    /// Reads every token. `base_dir` resolves relative `token_file`s.
    pub fn load(configs: &[StaticTokenConfig], base_dir: &Path) -> Result<Self, String> {
        let mut entries = Vec::with_capacity(configs.len());
        for (i, config) in configs.iter().enumerate() {
            let secret = match (&config.token_env, &config.token_file) {
                (Some(var), _) => token_from_env(var).ok_or_else(|| {
                    format!(
                        "auth.tokens[{i}] ({}): environment variable {var} is not set",
                        config.principal
                    )
                })?,
                (None, Some(file)) => {
                    let path = base_dir.join(file);
                    std::fs::read_to_string(&path).map_err(|e| {
                        format!(
                            "auth.tokens[{i}] ({}): cannot read {}: {e}",
                            config.principal,
                            path.display()
                        )
                    })?
                }
                (None, None) => {
                    return Err(format!("auth.tokens[{i}]: no token_env or token_file"));
                }
            };
            let secret = secret.trim();
            if secret.len() < MIN_TOKEN_BYTES {
                return Err(format!(
                    "auth.tokens[{i}] ({}): the token is shorter than {MIN_TOKEN_BYTES} bytes",
                    config.principal
                ));
            }
            let principal = Principal {
                key: Arc::from(format!("token:{}", config.principal)),
                name: Arc::from(config.principal.as_str()),
                scopes: Arc::new(config.scopes.iter().cloned().collect()),
            };
            entries.push((digest(secret), principal));
        }
        Ok(StaticTokens { entries })
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal of `token`, comparing against every configured token.
    pub fn find(&self, token: &str) -> Option<Principal> {
        let presented = digest(token);
        let mut found = None;
        for (known, principal) in &self.entries {
            if bool::from(known.ct_eq(&presented)) {
                found = Some(principal.clone());
            }
        }
        found
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(principal: &str, var: &str) -> StaticTokenConfig {
        StaticTokenConfig {
            principal: principal.into(),
            token_env: Some(var.into()),
            token_file: None,
            scopes: vec!["mcp:tools".into()],
        }
    }

    #[test]
    fn a_token_names_its_principal_and_nothing_else_matches() {
        let dir = std::env::temp_dir();
        let file = dir.join(format!("mcp-actor-token-{}", std::process::id()));
        std::fs::write(&file, "  file-token-0123456789abcdef\n").expect("write token");
        // SAFETY: the variable is unique to this test; no other thread reads it.
        unsafe { std::env::set_var("MCP_ACTOR_UNIT_TOKEN_A", "env-token-0123456789abcdef") };
        let mut from_file = config("reader", "unused");
        from_file.token_env = None;
        from_file.token_file = Some(file.clone());
        let tokens = StaticTokens::load(
            &[config("ci-bot", "MCP_ACTOR_UNIT_TOKEN_A"), from_file],
            &dir,
        )
        .expect("load");
        let _ = std::fs::remove_file(&file);
        let bot = tokens.find("env-token-0123456789abcdef").expect("ci-bot");
        assert_eq!(&*bot.name, "ci-bot");
        assert!(bot.scopes.contains("mcp:tools"));
        assert_eq!(
            &*tokens
                .find("file-token-0123456789abcdef")
                .expect("reader")
                .name,
            "reader"
        );
        assert!(tokens.find("env-token-0123456789abcdeF").is_none());
        assert!(tokens.find("").is_none());
    }

    #[test]
    fn short_and_missing_tokens_are_refused_at_load() {
        // SAFETY: unique to this test.
        unsafe { std::env::set_var("MCP_ACTOR_UNIT_TOKEN_SHORT", "short") };
        let err = StaticTokens::load(&[config("x", "MCP_ACTOR_UNIT_TOKEN_SHORT")], Path::new("."))
            .err()
            .expect("refused");
        assert!(err.contains("shorter than 16"), "{err}");
        let err = StaticTokens::load(&[config("x", "MCP_ACTOR_UNIT_TOKEN_UNSET")], Path::new("."))
            .err()
            .expect("refused");
        assert!(
            err.contains("MCP_ACTOR_UNIT_TOKEN_UNSET is not set"),
            "{err}"
        );
    }
}
