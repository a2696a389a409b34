//! `requestState`: the sealed token that carries an input_required round trip from one
//! stateless request to its retry (spec 2026-07-28 `basic/patterns/mrtr.mdx`).
//!
//! The client holds the state, so it is attacker-controlled input. It is sealed with
//! XChaCha20-Poly1305 (an AEAD: confidential and integrity-protected, with random 192-bit
//! nonces that are safe to pick at random) and bound to what it may continue: the method,
//! the target (tool name, prompt name or resource URI), a digest of the arguments, the
//! principal, and an expiry. Anything else — a flipped bit, another tool, changed arguments,
//! an expired token, another key — fails to open, and the request gets 400 / -32602.
//!
//! Token: `v1.` + base64url(nonce ‖ ciphertext). A key set in the configuration lets every
//! node of a cluster open every token.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Decodes a configured key; the format is the configuration's to define.
pub use crate::config::decode_request_state_key as decode_key;

const PREFIX: &str = "v1.";
const NONCE_LEN: usize = 24;

/// What a state continues: it must match the retry exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub target: String,
    /// base64url(SHA-256) of the arguments, canonically serialized (sorted keys).
    pub arguments_digest: String,
    /// Who asked. Without authentication every caller is the same anonymous principal.
    pub principal: String,
}

impl Binding {
    pub fn new(method: &str, target: &str, arguments: &Value, principal: &str) -> Self {
        // serde_json's map keeps keys sorted, so equal arguments serialize identically.
        let canonical = serde_json::to_vec(arguments).unwrap_or_default();
        Binding {
            method: method.to_string(),
            target: target.to_string(),
            arguments_digest: URL_SAFE_NO_PAD.encode(Sha256::digest(&canonical)),
            principal: principal.to_string(),
        }
    }
}

/// The sealed plaintext: the binding's members, then `exp` and `answers`, in one JSON
/// object. Spelled out rather than `#[serde(flatten)]`, which reads through a buffer of the
/// whole object (about a third of opening a token); the JSON is the same either way.
#[derive(Serialize)]
struct Claims<'a> {
    method: &'a str,
    target: &'a str,
    arguments_digest: &'a str,
    principal: &'a str,
    /// Expiry, seconds since the Unix epoch.
    exp: u64,
    /// The answers gathered in earlier rounds, by input key.
    answers: &'a BTreeMap<String, Value>,
}

/// [`Claims`] as read back, its strings borrowed from the plaintext where they need no
/// unescaping.
#[derive(Deserialize)]
struct OpenedClaims<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    target: Cow<'a, str>,
    #[serde(borrow)]
    arguments_digest: Cow<'a, str>,
    #[serde(borrow)]
    principal: Cow<'a, str>,
    exp: u64,
    answers: BTreeMap<String, Value>,
}

impl OpenedClaims<'_> {
    fn continues(&self, binding: &Binding) -> bool {
        self.method == binding.method
            && self.target == binding.target
            && self.arguments_digest == binding.arguments_digest
            && self.principal == binding.principal
    }
}

/// Why a `requestState` was refused. The client sees one message for all of them, so a
/// forger learns nothing; the reason goes to the log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StateError {
    #[error("malformed")]
    Malformed,
    #[error("failed authentication (tampered, or sealed with another key)")]
    Forged,
    #[error("expired")]
    Expired,
    #[error("issued for another request")]
    Mismatch,
}

/// The sealing key of this process (or cluster).
pub struct RequestStateKey {
    cipher: XChaCha20Poly1305,
    ttl: Duration,
}

impl RequestStateKey {
    /// From the configured key, or a fresh random key when none is configured.
    pub fn new(configured: Option<&str>, ttl: Duration) -> Result<Self, String> {
        let cipher = match configured {
            Some(text) => XChaCha20Poly1305::new(&decode_key(text)?.into()),
            None => XChaCha20Poly1305::new(&XChaCha20Poly1305::generate_key(&mut OsRng)),
        };
        Ok(RequestStateKey { cipher, ttl })
    }

    /// Seals the answers gathered so far for a retry bound to `binding`.
    pub fn seal(&self, binding: Binding, answers: BTreeMap<String, Value>) -> String {
        let claims = Claims {
            method: &binding.method,
            target: &binding.target,
            arguments_digest: &binding.arguments_digest,
            principal: &binding.principal,
            exp: now_secs() + self.ttl.as_secs(),
            answers: &answers,
        };
        let plaintext = serde_json::to_vec(&claims).unwrap_or_default();
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        // Encryption with a valid key and nonce cannot fail for in-memory buffers.
        let ciphertext = self
            .cipher
            .encrypt(&nonce, plaintext.as_slice())
            .unwrap_or_default();
        let mut token = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        token.extend_from_slice(&nonce);
        token.extend_from_slice(&ciphertext);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(token))
    }

    /// Opens a token and checks it continues `binding`; returns the earlier answers.
    pub fn open(
        &self,
        token: &str,
        binding: &Binding,
    ) -> Result<BTreeMap<String, Value>, StateError> {
        let body = token.strip_prefix(PREFIX).ok_or(StateError::Malformed)?;
        let raw = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| StateError::Malformed)?;
        if raw.len() <= NONCE_LEN {
            return Err(StateError::Malformed);
        }
        let (nonce, ciphertext) = raw.split_at(NONCE_LEN);
        let plaintext = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), ciphertext)
            .map_err(|_| StateError::Forged)?;
        let claims: OpenedClaims =
            serde_json::from_slice(&plaintext).map_err(|_| StateError::Malformed)?;
        if claims.exp < now_secs() {
            return Err(StateError::Expired);
        }
        if !claims.continues(binding) {
            return Err(StateError::Mismatch);
        }
        Ok(claims.answers)
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::json;

    fn key() -> RequestStateKey {
        RequestStateKey::new(None, Duration::from_secs(60)).unwrap()
    }

    fn binding(args: Value) -> Binding {
        Binding::new("tools/call", "ask", &args, "anonymous")
    }

    #[test]
    fn a_sealed_state_opens_for_the_same_request() {
        let k = key();
        let answers = BTreeMap::from([("input-0".to_string(), json!({ "action": "accept" }))]);
        let token = k.seal(binding(json!({ "q": 1 })), answers.clone());
        assert_eq!(
            k.open(&token, &binding(json!({ "q": 1 }))).unwrap(),
            answers
        );
    }

    #[test]
    fn tampered_foreign_and_rebound_states_are_refused() {
        let k = key();
        let token = k.seal(binding(json!({ "q": 1 })), BTreeMap::new());
        let mut bytes = token.clone().into_bytes();
        let last = bytes.len() - 2;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert_eq!(
            k.open(&tampered, &binding(json!({ "q": 1 }))),
            Err(StateError::Forged)
        );
        assert_eq!(
            key().open(&token, &binding(json!({ "q": 1 }))),
            Err(StateError::Forged)
        );
        assert_eq!(
            k.open(&token, &binding(json!({ "q": 2 }))),
            Err(StateError::Mismatch)
        );
        assert_eq!(
            k.open("garbage", &binding(json!({}))),
            Err(StateError::Malformed)
        );
    }

    #[test]
    fn the_sealed_plaintext_keeps_its_layout() {
        // Tokens sealed by a node of the previous release open on this one and back: the
        // plaintext is the same JSON object, member for member.
        let answers = BTreeMap::from([("input-0".to_string(), json!({ "action": "accept" }))]);
        let b = binding(json!({ "q": 1 }));
        let claims = Claims {
            method: &b.method,
            target: &b.target,
            arguments_digest: &b.arguments_digest,
            principal: &b.principal,
            exp: 7,
            answers: &answers,
        };
        let text = serde_json::to_string(&claims).unwrap();
        let expected = format!(
            r#"{{"method":"tools/call","target":"ask","arguments_digest":"{}","principal":"anonymous","exp":7,"answers":{{"input-0":{{"action":"accept"}}}}}}"#,
            b.arguments_digest
        );
        assert_eq!(text, expected);
        let opened: OpenedClaims = serde_json::from_str(&expected).unwrap();
        assert!(opened.continues(&b));
        assert_eq!(opened.answers, answers);
        assert!(!opened.continues(&binding(json!({ "q": 2 }))));
    }

    #[test]
    fn an_expired_state_is_refused() {
        let k = RequestStateKey::new(None, Duration::ZERO).unwrap();
        let token = k.seal(binding(json!({})), BTreeMap::new());
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(
            k.open(&token, &binding(json!({}))),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn a_shared_configured_key_opens_across_processes() {
        let text = STANDARD.encode([7u8; 32]);
        let a = RequestStateKey::new(Some(&text), Duration::from_secs(60)).unwrap();
        let b = RequestStateKey::new(Some(&text), Duration::from_secs(60)).unwrap();
        let token = a.seal(binding(json!({})), BTreeMap::new());
        assert!(b.open(&token, &binding(json!({}))).is_ok());
        assert!(decode_key("c2hvcnQ=").is_err());
    }
}
