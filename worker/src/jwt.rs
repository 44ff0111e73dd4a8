//! Signed heartbeat triggers (S1) on the worker: HS256 JWTs carrying `sub` (the agent id),
//! `wake_reason`, `heartbeat_id` and `exp`, verified with the `LID_HEARTBEAT_SECRET`
//! secret. Same checks and error code (`heartbeat_trigger_invalid`, 401) as `lid serve`'s
//! `host/src/trigger.rs` (signature, algorithm, expiry with 5 s leeway, subject, claims).
//! EdDSA triggers are served by `lid serve` only (README).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Deserialize;

use crate::error::ApiError;

/// The verified claims of a trigger.
#[derive(Debug, Clone, Deserialize)]
pub struct Trigger {
    pub sub: String,
    pub wake_reason: String,
    pub heartbeat_id: String,
    #[serde(default)]
    pub session_start: Option<u64>,
    pub exp: u64,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
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
    exp: Option<u64>,
}

fn invalid(why: impl std::fmt::Display) -> ApiError {
    ApiError::new(401, "heartbeat_trigger_invalid", format!("the heartbeat trigger is not a valid signed trigger ({why}); it must be a HS256 JWT from the control plane"))
}

/// Verify `token` for `agent` with the shared secret at `now_s` (Unix seconds).
pub fn verify(secret: &[u8], token: &str, agent: &str, now_s: u64) -> Result<Trigger, ApiError> {
    let token = token.trim();
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(invalid("InvalidToken"));
    };
    let header: Header = URL_SAFE_NO_PAD.decode(h).ok().and_then(|b| serde_json::from_slice(&b).ok()).ok_or_else(|| invalid("InvalidToken"))?;
    if header.alg != "HS256" {
        return Err(invalid("InvalidAlgorithm"));
    }
    let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| invalid("InvalidSignature"))?;
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).map_err(|_| invalid("InvalidKey"))?;
    mac.update(h.as_bytes());
    mac.update(b".");
    mac.update(p.as_bytes());
    mac.verify_slice(&sig).map_err(|_| invalid("InvalidSignature"))?;
    let claims: RawClaims = URL_SAFE_NO_PAD.decode(p).ok().and_then(|b| serde_json::from_slice(&b).ok()).ok_or_else(|| invalid("Json"))?;
    let (Some(sub), Some(exp)) = (claims.sub, claims.exp) else {
        return Err(invalid("MissingRequiredClaim"));
    };
    if exp + 5 < now_s {
        return Err(invalid("ExpiredSignature"));
    }
    if sub != agent {
        return Err(ApiError::new(401, "heartbeat_trigger_invalid", format!("the trigger was issued for agent {sub:?}, not {agent:?}")));
    }
    if claims.wake_reason.trim().is_empty() || claims.heartbeat_id.trim().is_empty() {
        return Err(ApiError::new(401, "heartbeat_trigger_invalid", "the trigger must carry a non-empty `wake_reason` and `heartbeat_id`"));
    }
    Ok(Trigger { sub, wake_reason: claims.wake_reason, heartbeat_id: claims.heartbeat_id, session_start: claims.session_start, exp })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &[u8], claims: &str) -> String {
        let h = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let p = URL_SAFE_NO_PAD.encode(claims.as_bytes());
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).unwrap();
        mac.update(format!("{h}.{p}").as_bytes());
        format!("{h}.{p}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn accepts_good_and_refuses_bad_triggers() {
        let good = sign(b"s", r#"{"sub":"a","wake_reason":"manual","heartbeat_id":"h","exp":1000}"#);
        assert_eq!(verify(b"s", &good, "a", 900).unwrap().wake_reason, "manual");
        assert_eq!(verify(b"t", &good, "a", 900).unwrap_err().code, "heartbeat_trigger_invalid");
        assert!(verify(b"s", &good, "b", 900).is_err());
        assert!(verify(b"s", &good, "a", 2000).is_err());
        let no_exp = sign(b"s", r#"{"sub":"a","wake_reason":"manual","heartbeat_id":"h"}"#);
        assert!(verify(b"s", &no_exp, "a", 900).is_err());
        assert!(verify(b"s", "a.b", "a", 900).is_err());
    }
}
