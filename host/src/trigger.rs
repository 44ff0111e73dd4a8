//! Signed heartbeat triggers (S1): the control plane wakes an agent with a JWT (HS256 or
//! EdDSA) carrying `sub` (the agent id), `wake_reason`, `heartbeat_id` and `exp`. The wake
//! reason that selects task-type preloads (§21.1.5) comes from a verified trigger only.

use jsonwebtoken::{decode, Algorithm, DecodingKey, Validation};

use crate::apierror::ApiError;

pub use lid_shared::heartbeat::Trigger;

/// How triggers are verified: a shared HS256 secret or an Ed25519 public key.
pub struct TriggerKey {
    key: DecodingKey,
    alg: Algorithm,
}

impl TriggerKey {
    pub fn hs256(secret: &[u8]) -> Self {
        TriggerKey { key: DecodingKey::from_secret(secret), alg: Algorithm::HS256 }
    }

    /// An Ed25519 public key as base64url (32 bytes, the JWK `x`). Anything else is
    /// refused here, at start: the JWT library would take a short key and fail on the
    /// first trigger, and silently cut a long one.
    pub fn eddsa(public_x_b64url: &str) -> anyhow::Result<Self> {
        use base64::Engine as _;
        let x = public_x_b64url.trim();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(x.trim_end_matches('='))
            .map_err(|e| anyhow::anyhow!("the Ed25519 public key is not base64url: {e}"))?;
        anyhow::ensure!(bytes.len() == 32, "an Ed25519 public key is 32 bytes; this one is {} (give the JWK `x`, base64url)", bytes.len());
        Ok(TriggerKey { key: DecodingKey::from_ed_components(x)?, alg: Algorithm::EdDSA })
    }

    /// Verify `token` for `agent`: signature, algorithm, expiry, not-before, subject, claims.
    pub fn verify(&self, token: &str, agent: &str) -> Result<Trigger, ApiError> {
        let mut v = Validation::new(self.alg);
        v.validate_aud = false;
        v.leeway = 5;
        // A trigger not valid before a later time (`nbf`, RFC 7519 §4.1.5) is refused
        // until then, with the same 5 s leeway as `exp`.
        v.validate_nbf = true;
        v.set_required_spec_claims(&["exp", "sub"]);
        let t = decode::<Trigger>(token.trim(), &self.key, &v)
            .map_err(|e| ApiError::new(401, "heartbeat_trigger_invalid", format!("the heartbeat trigger is not a valid signed trigger ({e}); it must be a {:?} JWT from the control plane", self.alg)))?
            .claims;
        Ok(t.for_agent(agent)?)
    }
}

#[cfg(test)]
mod key_tests {
    use super::TriggerKey;

    /// `exp` is a NumericDate (RFC 7519 §2, "non-integer values can be represented"), as
    /// `nbf` is: a control plane minting `time.time() + 300` was refused; a decimal is
    /// rounded, and an `exp` that is no number is refused.
    #[test]
    fn a_fractional_exp_is_a_numeric_date() {
        let key = TriggerKey::hs256(b"s");
        let now = jsonwebtoken::get_current_timestamp();
        let sign = |exp: &str| {
            let claims: serde_json::Value = serde_json::from_str(&format!(r#"{{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":{exp}}}"#)).unwrap();
            jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &jsonwebtoken::EncodingKey::from_secret(b"s")).unwrap()
        };
        for exp in [format!("{now}.4"), format!("{}.5", now - 1), format!("{now}.0")] {
            assert_eq!(key.verify(&sign(&exp), "a").map(|t| t.exp).ok(), Some(now), "exp {exp}");
        }
        let past = format!("{}.5", now - 60);
        assert!(key.verify(&sign(&past), "a").unwrap_err().0.message.contains("ExpiredSignature"));
        for bad in ["null".to_string(), format!("\"{now}\""), "-1".into()] {
            let e = key.verify(&sign(&bad), "a").unwrap_err();
            assert!(e.0.message.contains("`exp` must be a NumericDate"), "exp {bad}: {}", e.0.message);
        }
    }

    #[test]
    fn eddsa_keys_must_be_32_bytes_of_base64url() {
        // 32 bytes: accepted (the RFC 8037 example key's `x`).
        assert!(TriggerKey::eddsa("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo").is_ok());
        let short = TriggerKey::eddsa("11qYAYKxCrfVS_7TyWQHOg").err().expect("a 16-byte key is refused");
        assert!(short.to_string().contains("32 bytes"), "{short}");
        assert!(TriggerKey::eddsa("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURoAAAA").is_err(), "a long key is refused, not cut");
        assert!(TriggerKey::eddsa("not base64 at all!").is_err());
    }
}
