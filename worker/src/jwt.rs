//! Signed heartbeat triggers (S1) on the worker: JWTs carrying `sub` (the agent id),
//! `wake_reason`, `heartbeat_id` and `exp`, verified with either a shared HS256 secret
//! (`LID_HEARTBEAT_SECRET`) or an Ed25519 public key (`LID_HEARTBEAT_PUBLIC_KEY`,
//! base64url of the 32 key bytes, the JWK `x`; EdDSA). The wake reason that selects
//! task-type preloads (§21.1.5) comes from a verified trigger only. Same checks, order and
//! error code (`heartbeat_trigger_invalid`, 401) as `lid serve`'s `host/src/trigger.rs`
//! (jsonwebtoken): the header's `alg` must be the configured key's algorithm (an HS256
//! token never passes an Ed25519 key and vice versa), then the signature, the claims, the
//! expiry and a `nbf` if present, each with 5 s leeway, the subject and the non-empty
//! claims.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};
use hmac::{Hmac, Mac};
use serde::Deserialize;

use crate::error::ApiError;

pub use lid_shared::heartbeat::Trigger;
use lid_shared::heartbeat::numeric_date;

/// The JOSE header (RFC 7515 §4.1) with the types its registered fields must have, as
/// jsonwebtoken reads it in `lid serve`: a `"kid": 5` makes the token invalid there, so
/// here too, and so does any other field that is not a string (its `extras`). (One
/// difference is left: jsonwebtoken also reads a `jwk` as a whole JWK, which a trigger
/// verified with the configured key never needs.)
#[derive(Deserialize)]
#[allow(dead_code)] // the fields are read for their types only
struct Header {
    alg: String,
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    cty: Option<String>,
    #[serde(default)]
    jku: Option<String>,
    #[serde(default)]
    jwk: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    x5u: Option<String>,
    #[serde(default)]
    x5c: Option<Vec<String>>,
    #[serde(default)]
    x5t: Option<String>,
    #[serde(default, rename = "x5t#S256")]
    x5t_s256: Option<String>,
    #[serde(default)]
    crit: Option<Vec<String>>,
    #[serde(default)]
    enc: Option<String>,
    #[serde(default)]
    zip: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
    #[serde(flatten)]
    extras: std::collections::HashMap<String, String>,
}

/// Claims as sent, before the required ones are checked.
#[derive(Deserialize)]
struct RawClaims {
    sub: Option<String>,
    #[serde(default)]
    wake_reason: String,
    #[serde(default)]
    heartbeat_id: String,
    #[serde(default)]
    session_start: Option<u64>,
    /// As sent (`null` included): see [`numeric_date`].
    #[serde(default, deserialize_with = "as_sent")]
    exp: Option<serde_json::Value>,
    /// As sent (`null` included): see [`numeric_date`].
    #[serde(default, deserialize_with = "as_sent")]
    nbf: Option<serde_json::Value>,
}

/// A claim's value as sent, `null` as `Some(Null)` (absent is `None`).
fn as_sent<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// How triggers are verified: a shared HS256 secret or an Ed25519 public key (as
/// `lid serve --heartbeat-secret-env` / `--heartbeat-public-key`).
#[derive(Clone)]
pub enum TriggerKey {
    Hs256(Vec<u8>),
    EdDsa(VerifyingKey),
}

impl std::fmt::Debug for TriggerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.write_str(self.alg())
    }
}

impl TriggerKey {
    pub fn hs256(secret: &[u8]) -> Self {
        TriggerKey::Hs256(secret.to_vec())
    }

    /// An Ed25519 public key as base64url without padding (32 bytes, the JWK `x`), as
    /// `lid serve --heartbeat-public-key FILE` reads it. Refused (with the reason) when it
    /// is not base64url, not 32 bytes or not a point of the curve.
    pub fn eddsa(public_x_b64url: &str) -> Result<Self, String> {
        let bytes = URL_SAFE_NO_PAD.decode(public_x_b64url.trim()).map_err(|e| format!("not base64url without padding: {e}"))?;
        let bytes: [u8; 32] = bytes.as_slice().try_into().map_err(|_| format!("{} bytes, not 32", bytes.len()))?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| "not an Ed25519 public key (not a point of the curve)".to_string())?;
        Ok(TriggerKey::EdDsa(key))
    }

    /// The key from the worker's configuration: the Ed25519 public key wins over the
    /// HS256 secret when both are set (as `--heartbeat-public-key` does in `lid serve`).
    /// `Ok(None)`: neither is set. A malformed public key is a configuration error,
    /// reported as `heartbeat_not_configured` (503) with what is wrong.
    pub fn from_config(secret: Option<&str>, public_key: Option<&str>) -> Result<Option<Self>, ApiError> {
        if let Some(x) = public_key.filter(|x| !x.trim().is_empty()) {
            return TriggerKey::eddsa(x).map(Some).map_err(|why| {
                ApiError::new(503, "heartbeat_not_configured", format!("LID_HEARTBEAT_PUBLIC_KEY is not a base64url Ed25519 public key (32 bytes, the JWK `x`): {why}; fix the var (wrangler.toml [vars] or wrangler secret put LID_HEARTBEAT_PUBLIC_KEY)"))
            });
        }
        Ok(secret.filter(|s| !s.is_empty()).map(|s| TriggerKey::hs256(s.as_bytes())))
    }

    /// The JWT `alg` this key verifies.
    pub fn alg(&self) -> &'static str {
        match self {
            TriggerKey::Hs256(_) => "HS256",
            TriggerKey::EdDsa(_) => "EdDSA",
        }
    }

    fn invalid(&self, why: &str) -> ApiError {
        ApiError::new(401, "heartbeat_trigger_invalid", format!("the heartbeat trigger is not a valid signed trigger ({why}); it must be a {} JWT from the control plane", self.alg()))
    }

    /// Check `sig` over `signed` (`header.payload` as sent).
    fn check_signature(&self, signed: &[u8], sig: &[u8]) -> Result<(), ApiError> {
        match self {
            TriggerKey::Hs256(secret) => {
                let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).map_err(|_| self.invalid("InvalidKey"))?;
                mac.update(signed);
                mac.verify_slice(sig).map_err(|_| self.invalid("InvalidSignature"))
            }
            TriggerKey::EdDsa(key) => {
                let sig = Signature::from_slice(sig).map_err(|_| self.invalid("InvalidSignature"))?;
                // Strict: also refuses small-order keys and non-canonical encodings, which
                // no honest signer produces.
                key.verify_strict(signed, &sig).map_err(|_| self.invalid("InvalidSignature"))
            }
        }
    }

    /// Verify `token` for `agent` at `now_s` (Unix seconds): algorithm, signature, claims,
    /// expiry, not-before, subject.
    pub fn verify(&self, token: &str, agent: &str, now_s: u64) -> Result<Trigger, ApiError> {
        let token = token.trim();
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(self.invalid("InvalidToken"));
        };
        let header: Header = URL_SAFE_NO_PAD.decode(h).ok().and_then(|b| serde_json::from_slice(&b).ok()).ok_or_else(|| self.invalid("InvalidToken"))?;
        if header.alg != self.alg() {
            return Err(self.invalid("InvalidAlgorithm"));
        }
        let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| self.invalid("InvalidSignature"))?;
        self.check_signature(&token.as_bytes()[..h.len() + 1 + p.len()], &sig)?;
        // said as `lid serve` (jsonwebtoken) says it, the decoder's reason included
        let payload = URL_SAFE_NO_PAD.decode(p).map_err(|e| self.invalid(&format!("Base64 error: {e}")))?;
        let claims: RawClaims = serde_json::from_slice(&payload).map_err(|e| self.invalid(&format!("JSON error: {e}")))?;
        // (an `exp` that is no NumericDate fails `lid serve`'s reading of the claims)
        let exp = match &claims.exp {
            None => None,
            Some(v) => Some(numeric_date(v).ok_or_else(|| self.invalid(&format!("JSON error: {}", lid_shared::heartbeat::not_a_numeric_date(v))))?),
        };
        let (Some(sub), Some(exp)) = (claims.sub, exp) else {
            return Err(self.invalid("MissingRequiredClaim"));
        };
        let nbf = match &claims.nbf {
            None => None,
            Some(v) => Some(numeric_date(v).ok_or_else(|| self.invalid("InvalidClaimFormat(\"nbf\")"))?),
        };
        if exp.saturating_add(5) < now_s {
            return Err(self.invalid("ExpiredSignature"));
        }
        // RFC 7519 §4.1.5: not valid before `nbf` (with the same 5 s leeway).
        if nbf.is_some_and(|nbf| nbf > now_s.saturating_add(5)) {
            return Err(self.invalid("ImmatureSignature"));
        }
        Ok(Trigger { sub, wake_reason: claims.wake_reason, heartbeat_id: claims.heartbeat_id, session_start: claims.session_start, exp }.for_agent(agent)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    const CLAIMS: &str = r#"{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":1000}"#;

    fn b64(b: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(b)
    }

    fn hs256(secret: &[u8], header: &str, claims: &str) -> String {
        let signed = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
        mac.update(signed.as_bytes());
        format!("{signed}.{}", b64(&mac.finalize().into_bytes()))
    }

    fn sign(secret: &[u8], claims: &str) -> String {
        hs256(secret, r#"{"alg":"HS256","typ":"JWT"}"#, claims)
    }

    fn signing_key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn eddsa_with(key: &SigningKey, header: &str, claims: &str) -> String {
        let signed = format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
        format!("{signed}.{}", b64(&key.sign(signed.as_bytes()).to_bytes()))
    }

    fn eddsa(key: &SigningKey, claims: &str) -> String {
        eddsa_with(key, r#"{"alg":"EdDSA","typ":"JWT"}"#, claims)
    }

    /// The public key as configured: base64url of the 32 bytes (the JWK `x`).
    fn public_x(key: &SigningKey) -> String {
        b64(key.verifying_key().as_bytes())
    }

    fn code_and_message(r: Result<Trigger, ApiError>) -> (u16, String, String) {
        let e = r.expect_err("the trigger must be refused");
        (e.0.status, e.0.code.into_owned(), e.0.message)
    }

    #[test]
    fn accepts_good_and_refuses_bad_hs256_triggers() {
        let key = TriggerKey::hs256(b"s");
        let good = sign(b"s", CLAIMS);
        assert_eq!(key.verify(&good, "a", 900).unwrap().wake_reason, "manual");
        assert_eq!(TriggerKey::hs256(b"t").verify(&good, "a", 900).unwrap_err().code, "heartbeat_trigger_invalid");
        assert!(key.verify(&good, "b", 900).is_err());
        assert!(key.verify(&good, "a", 2000).is_err());
        let no_exp = sign(b"s", r#"{"sub":"a","wake_reason":"manual","heartbeat_id":"h"}"#);
        assert!(key.verify(&no_exp, "a", 900).is_err());
        assert!(key.verify("a.b", "a", 900).is_err());
        // a registered header field of the wrong type makes the token invalid
        let kid5 = hs256(b"s", r#"{"alg":"HS256","kid":5}"#, CLAIMS);
        assert!(code_and_message(key.verify(&kid5, "a", 900)).2.contains("InvalidToken"));
        assert!(key.verify(&hs256(b"s", r#"{"alg":"HS256","kid":"k1","typ":"JWT"}"#, CLAIMS), "a", 900).is_ok());
        // `nbf`: refused before it (5 s leeway), accepted from then on
        let later = sign(b"s", r#"{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":1000,"nbf":950}"#);
        assert!(code_and_message(key.verify(&later, "a", 900)).2.contains("ImmatureSignature"));
        assert!(key.verify(&later, "a", 945).is_ok(), "5 s leeway before nbf");
        assert!(key.verify(&later, "a", 960).is_ok());
        // `nbf` is a NumericDate as jsonwebtoken reads it: a decimal is rounded, `null`, a
        // string or a negative number is no date
        let decimal = sign(b"s", r#"{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":1000,"nbf":949.6}"#);
        assert!(code_and_message(key.verify(&decimal, "a", 944)).2.contains("ImmatureSignature"), "950 after rounding");
        assert!(key.verify(&decimal, "a", 945).is_ok());
        for bad in ["null", "\"950\"", "-1", "true"] {
            let t = sign(b"s", &format!(r#"{{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":1000,"nbf":{bad}}}"#));
            assert!(code_and_message(key.verify(&t, "a", 960)).2.contains("InvalidClaimFormat"), "nbf {bad}");
        }
        // `exp` is a NumericDate as well (a control plane's `time.time() + 300`): a decimal
        // is rounded; `null`, a string or a negative number is no expiry
        for exp in ["1000.4", "999.5", "1000.0", "1e3"] {
            let t = sign(b"s", &format!(r#"{{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":{exp}}}"#));
            assert_eq!(key.verify(&t, "a", 900).map(|t| t.exp).ok(), Some(1000), "exp {exp}");
            assert!(code_and_message(key.verify(&t, "a", 1006)).2.contains("ExpiredSignature"), "exp {exp}");
        }
        for bad in ["null", "\"1000\"", "-1", "true"] {
            let t = sign(b"s", &format!(r#"{{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":{bad}}}"#));
            assert!(code_and_message(key.verify(&t, "a", 900)).2.contains(&format!("(JSON error: `exp` must be a NumericDate (Unix seconds, a non-negative number), not {bad})")), "exp {bad}");
        }
        // a payload that is not JSON is said with serde's reason, as jsonwebtoken says it
        let t = sign(b"s", r#"{"sub":"a","exp":1000,"heartbeat_id":"h\ud800"}"#);
        let m = code_and_message(key.verify(&t, "a", 900)).2;
        assert!(m.contains("(JSON error: ") && m.contains("line 1 column"), "{m}");
        // every header field jsonwebtoken does not know must be a string there, so here too
        for header in [r#"{"alg":"HS256","b64":false}"#, r#"{"alg":"HS256","crit":5}"#, r#"{"alg":"HS256","nonce":7}"#, r#"{"alg":"HS256","foo":{"a":1}}"#] {
            assert!(code_and_message(key.verify(&hs256(b"s", header, CLAIMS), "a", 900)).2.contains("InvalidToken"), "{header}");
        }
        assert!(key.verify(&hs256(b"s", r#"{"alg":"HS256","foo":"bar","crit":["exp"]}"#, CLAIMS), "a", 900).is_ok());
    }

    /// EdDSA (Ed25519) triggers: valid, tampered payload, other key, expired (5 s leeway),
    /// other agent, missing claims.
    #[test]
    fn eddsa_triggers_verify_with_the_public_key_only() {
        let signer = signing_key(7);
        let key = TriggerKey::eddsa(&public_x(&signer)).unwrap();
        assert_eq!(key.alg(), "EdDSA");
        let good = eddsa(&signer, CLAIMS);
        let t = key.verify(&good, "a", 900).unwrap();
        assert_eq!((t.sub.as_str(), t.wake_reason.as_str(), t.heartbeat_id.as_str(), t.exp), ("a", "manual", "h", 1000));
        assert!(key.verify(&good, "a", 1005).is_ok(), "5 s leeway after exp");

        // Tampered: another payload under the original signature.
        let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
        parts[1] = b64(br#"{"sub":"a","wake_reason":"incident","heartbeat_id":"h","exp":1000}"#);
        let (status, code, message) = code_and_message(key.verify(&parts.join("."), "a", 900));
        assert_eq!((status, code.as_str()), (401, "heartbeat_trigger_invalid"));
        assert!(message.contains("InvalidSignature") && message.contains("EdDSA JWT"), "{message}");
        // One flipped signature bit, a truncated signature, no signature.
        let mut sig = URL_SAFE_NO_PAD.decode(good.rsplit('.').next().unwrap()).unwrap();
        sig[10] ^= 1;
        let flipped = format!("{}.{}.{}", parts[0], good.split('.').nth(1).unwrap(), b64(&sig));
        assert!(code_and_message(key.verify(&flipped, "a", 900)).2.contains("InvalidSignature"));
        let short = format!("{}.{}.{}", parts[0], good.split('.').nth(1).unwrap(), b64(&sig[..63]));
        assert!(code_and_message(key.verify(&short, "a", 900)).2.contains("InvalidSignature"));
        let unsigned = format!("{}.{}.", parts[0], good.split('.').nth(1).unwrap());
        assert!(code_and_message(key.verify(&unsigned, "a", 900)).2.contains("InvalidSignature"));

        // Signed by another key.
        let other = eddsa(&signing_key(8), CLAIMS);
        assert!(code_and_message(key.verify(&other, "a", 900)).2.contains("InvalidSignature"));
        // Expired, other agent, missing claims: refused after the signature checks out.
        assert!(code_and_message(key.verify(&good, "a", 1006)).2.contains("ExpiredSignature"));
        assert!(code_and_message(key.verify(&good, "b", 900)).2.contains("issued for agent \"a\""));
        let no_exp = eddsa(&signer, r#"{"sub":"a","wake_reason":"manual","heartbeat_id":"h"}"#);
        assert!(code_and_message(key.verify(&no_exp, "a", 900)).2.contains("MissingRequiredClaim"));
        let empty = eddsa(&signer, r#"{"sub":"a","wake_reason":" ","heartbeat_id":"h","exp":1000}"#);
        assert!(code_and_message(key.verify(&empty, "a", 900)).2.contains("non-empty"));
    }

    /// Algorithm confusion: the header's `alg` must be the configured key's. An HS256
    /// token never passes an EdDSA key, not even one MACed with the public key's bytes
    /// or its base64url text (the classic confusion attack), and an EdDSA token never
    /// passes an HS256 key; `none` passes neither.
    #[test]
    fn an_hs256_token_never_passes_an_eddsa_key_and_vice_versa() {
        let signer = signing_key(7);
        let x = public_x(&signer);
        let ed_key = TriggerKey::eddsa(&x).unwrap();
        for secret in [signer.verifying_key().as_bytes().as_slice(), x.as_bytes()] {
            let confused = sign(secret, CLAIMS);
            assert!(TriggerKey::hs256(secret).verify(&confused, "a", 900).is_ok(), "the HS256 token itself is well formed");
            let (status, code, message) = code_and_message(ed_key.verify(&confused, "a", 900));
            assert_eq!((status, code.as_str()), (401, "heartbeat_trigger_invalid"));
            assert!(message.contains("InvalidAlgorithm"), "{message}");
        }
        // An HS256-labelled token carrying a valid Ed25519 signature: still the wrong alg.
        let relabelled = eddsa_with(&signer, r#"{"alg":"HS256","typ":"JWT"}"#, CLAIMS);
        assert!(code_and_message(ed_key.verify(&relabelled, "a", 900)).2.contains("InvalidAlgorithm"));

        // An EdDSA token against an HS256 key, whatever the secret.
        let ed_token = eddsa(&signer, CLAIMS);
        for secret in [b"s".as_slice(), x.as_bytes(), signer.verifying_key().as_bytes().as_slice()] {
            let (status, code, message) = code_and_message(TriggerKey::hs256(secret).verify(&ed_token, "a", 900));
            assert_eq!((status, code.as_str()), (401, "heartbeat_trigger_invalid"));
            assert!(message.contains("InvalidAlgorithm") && message.contains("HS256 JWT"), "{message}");
        }

        // `alg: none` (and other casings of EdDSA) pass neither.
        let none = format!("{}.{}.", b64(br#"{"alg":"none"}"#), b64(CLAIMS.as_bytes()));
        assert!(code_and_message(ed_key.verify(&none, "a", 900)).2.contains("InvalidAlgorithm"));
        assert!(code_and_message(TriggerKey::hs256(b"s").verify(&none, "a", 900)).2.contains("InvalidAlgorithm"));
        let lower = eddsa_with(&signer, r#"{"alg":"eddsa"}"#, CLAIMS);
        assert!(code_and_message(ed_key.verify(&lower, "a", 900)).2.contains("InvalidAlgorithm"));
    }

    /// A token made by another implementation: Node's `crypto.sign(null, …)` through
    /// `node scripts/eddsa-trigger.mjs sign KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio
    /// '{"sub":"release-engineer",…,"exp":1900000000}'` (seed 32 x 0x2a). Ed25519
    /// signatures are deterministic, so this is a fixed vector.
    #[test]
    fn a_token_signed_elsewhere_verifies() {
        let signer = signing_key(0x2a);
        assert_eq!(public_x(&signer), NODE_X);
        let key = TriggerKey::eddsa(NODE_X).unwrap();
        let t = key.verify(NODE_TOKEN, "release-engineer", 1_900_000_000).unwrap();
        assert_eq!((t.wake_reason.as_str(), t.heartbeat_id.as_str()), ("issue_assigned", "run_node"));
        // Our own signature over the same header and payload is the same bytes.
        let (hp, _) = NODE_TOKEN.rsplit_once('.').unwrap();
        assert_eq!(format!("{hp}.{}", b64(&signer.sign(hp.as_bytes()).to_bytes())), NODE_TOKEN);
    }

    const NODE_X: &str = "GX9rI-FshTLGq8g4-s1ep4m-DHaykgM0A5v6iz02jWE";
    const NODE_TOKEN: &str = "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJyZWxlYXNlLWVuZ2luZWVyIiwid2FrZV9yZWFzb24iOiJpc3N1ZV9hc3NpZ25lZCIsImhlYXJ0YmVhdF9pZCI6InJ1bl9ub2RlIiwiZXhwIjoxOTAwMDAwMDAwfQ.SydfHMrBK_D_B7P0iMCKoZkazYDdBZ4Gv_jYlSSKDrfkcj8lyQqManUAnEEpkwwM7G4nMgaU32tstM-AsfFnBg";

    #[test]
    fn configuration_picks_the_public_key_and_refuses_malformed_ones() {
        let signer = signing_key(7);
        let x = public_x(&signer);
        assert!(TriggerKey::from_config(None, None).unwrap().is_none());
        assert!(TriggerKey::from_config(Some(""), Some("  ")).unwrap().is_none());
        assert_eq!(TriggerKey::from_config(Some("s"), None).unwrap().unwrap().alg(), "HS256");
        // Both set: the public key wins, so HS256 tokens are refused.
        let both = TriggerKey::from_config(Some("s"), Some(&format!(" {x}\n"))).unwrap().unwrap();
        assert_eq!(both.alg(), "EdDSA");
        assert!(both.verify(&sign(b"s", CLAIMS), "a", 900).is_err());
        assert!(both.verify(&eddsa(&signer, CLAIMS), "a", 900).is_ok());
        for bad in ["not base64!", &b64(&[1u8; 31]), &b64(&[1u8; 33]), &format!("{x}=")] {
            let e = TriggerKey::from_config(Some("s"), Some(bad)).unwrap_err();
            assert_eq!((e.status, &*e.code), (503, "heartbeat_not_configured"), "{bad}");
            assert!(e.message.contains("LID_HEARTBEAT_PUBLIC_KEY"), "{}", e.message);
        }
        // 32 bytes that are not a point of the curve (y = 2 has no x).
        let mut off_curve = [0u8; 32];
        off_curve[0] = 2;
        let e = TriggerKey::from_config(None, Some(&b64(&off_curve))).unwrap_err();
        assert!(e.message.contains("not a point"), "{}", e.message);
        assert_eq!(format!("{both:?}"), "EdDSA", "Debug never shows key material");
    }
}
