//! The authorization server's side, played by the test: P-256 signing keys, access tokens
//! (good ones and each kind of forgery), and the JWKS served over loopback HTTP.
//!
//! Keys are generated as `src/auth/jwt/tests.rs` does (p256, exported as PKCS#8 DER for
//! `jsonwebtoken` and as a public JWK for the JWKS). The JWKS server runs on a thread and
//! runtime of its own: the server under test fetches the JWKS while it starts, and
//! `TestServer` waits for that start on the test's thread, so a JWKS served from the test's
//! own (single-threaded) runtime could never answer.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use serde_json::{Value, json};

/// One ES256 signing key of the authorization server.
pub struct Signer {
    pub kid: String,
    encoding: EncodingKey,
    /// The public key as PEM: the secret of the HS256 algorithm-confusion forgery.
    pub public_pem: String,
    /// The public key as it appears in the JWKS.
    pub jwk: Value,
}

impl Signer {
    pub fn generate(kid: &str) -> Signer {
        let secret = p256::SecretKey::random(&mut rand_core::OsRng);
        let der = secret.to_pkcs8_der().expect("PKCS#8 DER");
        let public_pem = secret
            .public_key()
            .to_public_key_pem(LineEnding::LF)
            .expect("public PEM");
        let mut jwk: Value =
            serde_json::from_str(&secret.public_key().to_jwk_string()).expect("public JWK");
        jwk["kid"] = json!(kid);
        jwk["alg"] = json!("ES256");
        jwk["use"] = json!("sig");
        Signer {
            kid: kid.to_string(),
            encoding: EncodingKey::from_ec_der(der.as_bytes()),
            public_pem,
            jwk,
        }
    }

    /// `claims` signed with ES256, the header naming this key.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign ES256")
    }

    /// The algorithm-confusion forgery: HS256 over `claims` with this key's public PEM as
    /// the HMAC secret, the header naming this key. A verifier that lets the token choose
    /// the algorithm would accept it.
    pub fn sign_hs256_with_public_key(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        let secret = EncodingKey::from_secret(self.public_pem.as_bytes());
        jsonwebtoken::encode(&header, claims, &secret).expect("sign HS256")
    }
}

/// An unsigned token: `alg: none`, an empty signature.
pub fn unsigned_token(kid: &str, claims: &Value) -> String {
    let header = json!({ "alg": "none", "typ": "JWT", "kid": kid });
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// `token` with its payload replaced by `claims` and its signature kept.
pub fn with_payload(token: &str, claims: &Value) -> String {
    let mut parts = token.split('.');
    let (header, _, signature) = (parts.next(), parts.next(), parts.next());
    format!(
        "{}.{}.{}",
        header.expect("JWT header"),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        signature.expect("JWT signature")
    )
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// The JWKS document, served at `http://127.0.0.1:PORT/jwks.json` until dropped. The keys
/// it serves can be changed while it runs (a key rotation).
pub struct JwksServer {
    pub url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl JwksServer {
    pub fn serving(signers: &[&Signer]) -> JwksServer {
        let keys = Arc::new(Mutex::new(Vec::new()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let router = {
            let (keys, fetches) = (Arc::clone(&keys), Arc::clone(&fetches));
            axum::Router::new().route(
                "/jwks.json",
                axum::routing::get(move || {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    let doc = json!({ "keys": *keys.lock().expect("keys") });
                    async move { axum::Json(doc) }
                }),
            )
        };
        let (addr, stop) = serve_on_own_thread(router);
        let server = JwksServer {
            url: format!("http://{addr}/jwks.json"),
            keys,
            fetches,
            _stop: stop,
        };
        server.set_keys(signers);
        server
    }

    /// From now on the JWKS holds exactly `signers`' public keys.
    pub fn set_keys(&self, signers: &[&Signer]) {
        *self.keys.lock().expect("keys") = signers.iter().map(|s| s.jwk.clone()).collect();
    }

    /// How many times the JWKS was fetched.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// Serves `router` on 127.0.0.1:0 from a thread with its own runtime, until the returned
/// sender is dropped. Returns the bound address.
pub fn serve_on_own_thread(router: axum::Router) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (bound, addr) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind 127.0.0.1:0");
            bound
                .send(listener.local_addr().expect("address"))
                .expect("report the address");
            // The server under test keeps its connections alive: stop without waiting for
            // them (the thread's runtime drops them when `block_on` returns).
            tokio::select! {
                _ = axum::serve(listener, router) => {}
                _ = stopped => {}
            }
        });
    });
    let addr = addr
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("the loopback server binds");
    (addr, stop)
}
