use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{EncodingKey, Header};
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use serde_json::{Value, json};

use super::*;

const RESOURCE: &str = "https://mcp.example.com/mcp";
const ISSUER: &str = "https://auth.example.com";

struct Signer {
    kid: String,
    encoding: EncodingKey,
    public_pem: String,
    jwk: Value,
}

fn signer(kid: &str) -> Signer {
    let secret = p256::SecretKey::random(&mut rand_core::OsRng);
    let der = secret.to_pkcs8_der().expect("pkcs8");
    let public_pem = secret
        .public_key()
        .to_public_key_pem(LineEnding::LF)
        .expect("public pem");
    let mut jwk: Value = serde_json::from_str(&secret.public_key().to_jwk_string()).expect("jwk");
    jwk["kid"] = json!(kid);
    jwk["alg"] = json!("ES256");
    jwk["use"] = json!("sig");
    Signer {
        kid: kid.into(),
        encoding: EncodingKey::from_ec_der(der.as_bytes()),
        public_pem,
        jwk,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

fn claims() -> Value {
    json!({ "iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now() + 300,
            "scope": "mcp:tools mcp:read", "client_id": "cli" })
}

fn sign(signer: &Signer, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(signer.kid.clone());
    jsonwebtoken::encode(&header, claims, &signer.encoding).expect("sign")
}

struct Fixture {
    dir: PathBuf,
    verifier: JwtVerifier,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write_jwks(dir: &std::path::Path, signers: &[&Signer]) {
    let keys: Vec<Value> = signers.iter().map(|s| s.jwk.clone()).collect();
    std::fs::write(dir.join("jwks.json"), json!({ "keys": keys }).to_string()).expect("jwks");
}

fn fixture(signers: &[&Signer], cooldown: Duration) -> Fixture {
    let dir = std::env::temp_dir().join(format!(
        "mcp-actor-jwt-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    write_jwks(&dir, signers);
    let config = JwtSection {
        issuer: ISSUER.into(),
        jwks_url: None,
        jwks_file: Some("jwks.json".into()),
        audience: Vec::new(),
        algorithms: vec!["ES256".into()],
        leeway: Duration::from_secs(5),
        refresh_cooldown: cooldown,
        fetch_timeout: Duration::from_secs(2),
    };
    let verifier = JwtVerifier::new(&config, RESOURCE, &dir).expect("verifier");
    Fixture { dir, verifier }
}

#[tokio::test]
async fn a_valid_token_names_issuer_subject_client_and_scopes() {
    let key = signer("k1");
    let f = fixture(&[&key], Duration::from_secs(30));
    let principal = f
        .verifier
        .verify(&sign(&key, &claims()))
        .await
        .expect("valid");
    assert_eq!(&*principal.name, "alice");
    assert!(principal.key.contains(ISSUER) && principal.key.contains("cli"));
    assert!(principal.scopes.contains("mcp:tools") && principal.scopes.contains("mcp:read"));
}

#[tokio::test]
async fn each_broken_claim_is_refused_and_named() {
    let key = signer("k1");
    let f = fixture(&[&key], Duration::from_secs(30));
    let cases = [
        ("exp", json!(now() - 3600), "expired"),
        (
            "aud",
            json!("https://other.example.com/mcp"),
            "audience (aud)",
        ),
        ("iss", json!("https://evil.example.com"), "issuer (iss)"),
        ("nbf", json!(now() + 3600), "not valid yet"),
    ];
    for (claim, value, expected) in cases {
        let mut c = claims();
        c[claim] = value;
        let err = f.verifier.verify(&sign(&key, &c)).await.expect_err(claim);
        assert!(err.contains(expected), "{claim}: {err}");
    }
    let mut c = claims();
    c.as_object_mut().expect("object").remove("aud");
    let err = f
        .verifier
        .verify(&sign(&key, &c))
        .await
        .expect_err("no aud");
    assert!(err.contains("`aud`"), "{err}");
}

#[tokio::test]
async fn forged_signatures_and_other_algorithms_are_refused() {
    let key = signer("k1");
    let other = signer("k1");
    let f = fixture(&[&key], Duration::from_secs(30));
    // Signed by a key that merely claims the same kid.
    let err = f
        .verifier
        .verify(&sign(&other, &claims()))
        .await
        .expect_err("forged");
    assert!(err.contains("signature"), "{err}");
    // HS256 with the public key as the HMAC secret: the classic algorithm confusion.
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let confused = jsonwebtoken::encode(
        &header,
        &claims(),
        &EncodingKey::from_secret(key.public_pem.as_bytes()),
    )
    .expect("sign");
    let err = f.verifier.verify(&confused).await.expect_err("HS256");
    assert!(err.contains("not accepted"), "{err}");
    // alg "none": an unsigned token.
    let unsigned = format!(
        "{}.{}.",
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            br#"{"alg":"none","typ":"JWT"}"#
        ),
        base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            claims().to_string()
        )
    );
    assert!(f.verifier.verify(&unsigned).await.is_err());
    assert!(f.verifier.verify("not.a.jwt").await.is_err());
}

#[tokio::test]
async fn a_rotated_key_is_picked_up_and_made_up_kids_cost_one_refresh_per_cooldown() {
    let old = signer("old");
    let f = fixture(&[&old], Duration::from_millis(200));
    f.verifier.prime().await.expect("prime");
    let new = signer("new");
    write_jwks(&f.dir, &[&old, &new]);
    // The cooldown since the prime has not passed: the new key is not fetched yet.
    assert!(f.verifier.verify(&sign(&new, &claims())).await.is_err());
    tokio::time::sleep(Duration::from_millis(250)).await;
    let principal = f
        .verifier
        .verify(&sign(&new, &claims()))
        .await
        .expect("rotated");
    assert_eq!(&*principal.name, "alice");
    assert!(f.verifier.verify(&sign(&old, &claims())).await.is_ok());
}

#[test]
fn principal_keys_keep_their_fields_apart_whatever_they_contain() {
    let one = principal_key(ISSUER, "x\u{1f}y", "z");
    let two = principal_key(ISSUER, "x", "y\u{1f}z");
    assert_ne!(one, two);
    assert_ne!(principal_key("a", "bc", ""), principal_key("ab", "c", ""));
    assert_eq!(
        principal_key(ISSUER, "x", "y"),
        principal_key(ISSUER, "x", "y")
    );
}
