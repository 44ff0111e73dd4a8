//! Attestation of instruction facts (§21.4.3): every fact a host stores carries an
//! `attestation_chain` with at least one signature from the org manifest key, and a fact
//! whose chain is missing or does not verify is quarantined (§19.5), never served.
//!
//! The org key is an Ed25519 key held outside the fact store (`lid serve`: a file beside
//! the database; the worker: the `LID_ORG_SIGNING_KEY` secret), so a row written or edited
//! in SQLite, D1 or KV by anything but the service cannot carry a valid signature. What is
//! signed is [`Signed::payload`]: the fact's URI, version, kind, the SHA-256 of its
//! content (computed from the content at every check, never read from the row), its author,
//! authoring time, `source_trust` and token count, as one JSON array; the content digest a
//! store keeps beside the content is checked against it too. The chain is a JSON array of
//! `{"alg": "Ed25519", "kid", "sig"}` (base64url, no padding); it verifies when one entry
//! names the org key's `kid` and its signature verifies.
//!
//! Databases from before attestation: their rows are adopted once, signed by the host on
//! its first start with a key (`migrations/0007_attestation.sql` records the newest rowid
//! at migration time; only rows up to it are adopted).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The one algorithm a chain entry may name.
pub const ALG: &str = "Ed25519";

/// Quarantine a fact whose attestation failed (`?1` the [`Unattested::reason`], `?2` its
/// URI), as federated facts are (`quarantine = 'quarantined'`, Spec-13): no read serves it
/// again, and an admin can promote it. Changes nothing for a row already quarantined.
pub const QUARANTINE_SQL: &str = "UPDATE instruction_facts SET quarantine = 'quarantined', quarantine_reason = ?1 WHERE uri = ?2 AND quarantine IS NULL";

/// The error code (ours, 503) of a read of an agent whose current manifest fact is
/// quarantined for its attestation.
pub const MANIFEST_UNATTESTED: &str = "manifest_unattested";

/// 503 `manifest_unattested`: the agent's current manifest fact `uri` failed its
/// attestation (`reason`) and is quarantined; what to do about it.
pub fn manifest_unattested(agent: &str, uri: &str, reason: &str) -> crate::Refusal {
    crate::Refusal::new(
        503,
        MANIFEST_UNATTESTED,
        format!("the current manifest fact {uri} of agent {agent:?} failed its attestation ({reason}) and is quarantined (§21.4.3): an admin publishes the manifest again (PUT /v1/agents/{agent}/instruction-manifest with a new version and the deployment)"),
    )
}

/// The error code (ours, 503) of a host that has no org key to sign and check facts with.
pub const ORG_KEY_MISSING: &str = "org_key_missing";

/// The service event recorded when a fact is quarantined for its attestation.
pub const EVENT: &str = "fact_unattested";

/// The fields of a fact that its signature covers.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    pub uri: &'a str,
    pub version: &'a str,
    /// `instruction` or `content`.
    pub interpret_as: &'a str,
    pub content: &'a str,
    pub authored_by: &'a str,
    pub authored_at: &'a str,
    pub source_trust: f64,
    /// The content's cl100k token count as stored (the engine budgets by it).
    pub tokens: i64,
    /// The content's SHA-256 as the store gives it (it keys cached ranker indexes), if it
    /// does: not signed, but checked against the content on every verification.
    pub sha256: Option<&'a str>,
}

impl Signed<'_> {
    /// The bytes signed: a JSON array (unambiguous whatever the strings hold) of a tag,
    /// the fields and the content's lowercase hex SHA-256.
    pub fn payload(&self) -> Vec<u8> {
        self.payload_with(&hex(&Sha256::digest(self.content.as_bytes())))
    }

    fn payload_with(&self, sha: &str) -> Vec<u8> {
        let trust = serde_json::Number::from_f64(self.source_trust).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null);
        serde_json::json!(["lid-attestation:v1", self.uri, self.version, self.interpret_as, sha, self.authored_by, self.authored_at, trust, self.tokens])
            .to_string()
            .into_bytes()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One entry of an `attestation_chain`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub alg: String,
    pub kid: String,
    pub sig: String,
}

/// Why a fact's attestation does not hold.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unattested {
    #[error("the fact has no attestation_chain")]
    Missing,
    #[error("the attestation_chain is not a list of {{alg, kid, sig}}: {0}")]
    Malformed(String),
    #[error("no signature in the attestation_chain is from the org key {0}")]
    UnknownKey(String),
    #[error("the org key's signature does not match the fact (its content or provenance changed after signing)")]
    BadSignature,
}

impl Unattested {
    /// The reason recorded in the quarantine event.
    pub fn reason(&self) -> &'static str {
        match self {
            Unattested::Missing => "attestation_missing",
            Unattested::Malformed(_) => "attestation_malformed",
            Unattested::UnknownKey(_) => "attestation_unknown_key",
            Unattested::BadSignature => "attestation_invalid",
        }
    }
}

/// An org key given in a form that is not one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("an org key is the base64url (no padding) of a 32-byte Ed25519 seed, 43 characters; got {0}")]
pub struct KeyError(pub String);

/// The org manifest key: signs what the host writes and verifies what it reads.
#[derive(Clone)]
pub struct OrgKey {
    signing: SigningKey,
    verifying: VerifyingKey,
    kid: String,
}

impl std::fmt::Debug for OrgKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the seed.
        write!(f, "OrgKey({})", self.kid)
    }
}

impl OrgKey {
    pub fn from_seed(seed: [u8; 32]) -> Self {
        let signing = SigningKey::from_bytes(&seed);
        let verifying = signing.verifying_key();
        let kid = format!("org-{}", &hex(&Sha256::digest(verifying.as_bytes()))[..16]);
        OrgKey { signing, verifying, kid }
    }

    /// A key from its text form ([`OrgKey::to_text`]); surrounding whitespace is ignored.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let t = text.trim();
        let bytes = URL_SAFE_NO_PAD.decode(t).map_err(|e| KeyError(format!("text that is not base64url ({e})")))?;
        let seed: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| KeyError(format!("{} bytes", b.len())))?;
        Ok(Self::from_seed(seed))
    }

    /// The seed as base64url without padding (what a key file or secret holds).
    pub fn to_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.signing.to_bytes())
    }

    /// The key id chain entries name: `org-` and 16 hex digits of the public key's SHA-256.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The public key as base64url (the JWK `x`), for operators who verify facts elsewhere.
    pub fn public_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.verifying.as_bytes())
    }

    /// The `attestation_chain` of `fact`: one signature by this key.
    pub fn sign(&self, fact: &Signed) -> String {
        let sig = self.signing.sign(&fact.payload());
        let chain = [Entry { alg: ALG.into(), kid: self.kid.clone(), sig: URL_SAFE_NO_PAD.encode(sig.to_bytes()) }];
        serde_json::to_string(&chain).unwrap_or_default()
    }

    /// Whether `chain` holds a valid signature of `fact` by this key.
    pub fn verify(&self, fact: &Signed, chain: Option<&str>) -> Result<(), Unattested> {
        let chain = chain.filter(|c| !c.trim().is_empty()).ok_or(Unattested::Missing)?;
        let entries: Vec<Entry> = serde_json::from_str(chain).map_err(|e| Unattested::Malformed(e.to_string()))?;
        let ours = entries.iter().find(|e| e.alg == ALG && e.kid == self.kid).ok_or_else(|| Unattested::UnknownKey(self.kid.clone()))?;
        let sig = URL_SAFE_NO_PAD.decode(&ours.sig).ok().and_then(|b| Signature::from_slice(&b).ok()).ok_or(Unattested::BadSignature)?;
        let sha = hex(&Sha256::digest(fact.content.as_bytes()));
        if fact.sha256.is_some_and(|claimed| claimed != sha) {
            return Err(Unattested::BadSignature);
        }
        self.verifying.verify(&fact.payload_with(&sha), &sig).map_err(|_| Unattested::BadSignature)
    }
}

/// The facts a host has already verified, by the SHA-256 of their signed payload and
/// chain, so that a snapshot rebuilt after one write checks one signature (an Ed25519
/// verification costs far more than the hash). Bounded: emptied when full.
#[derive(Default)]
pub struct Memo {
    verified: std::sync::Mutex<std::collections::HashSet<[u8; 32]>>,
}

/// Bound of a [`Memo`].
const MEMO_MAX: usize = 1 << 16;

impl Memo {
    /// [`OrgKey::verify`], remembering facts that passed.
    pub fn verify(&self, key: &OrgKey, fact: &Signed, chain: Option<&str>) -> Result<(), Unattested> {
        let mut h = Sha256::new();
        h.update(key.kid.as_bytes());
        h.update([0]);
        h.update(fact.payload());
        h.update([0]);
        h.update(fact.sha256.unwrap_or("").as_bytes());
        h.update([0]);
        h.update(chain.unwrap_or("").as_bytes());
        let id: [u8; 32] = h.finalize().into();
        if self.verified.lock().map(|v| v.contains(&id)).unwrap_or(false) {
            return Ok(());
        }
        key.verify(fact, chain)?;
        if let Ok(mut v) = self.verified.lock() {
            if v.len() >= MEMO_MAX {
                v.clear();
            }
            v.insert(id);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(content: &str) -> Signed<'_> {
        Signed {
            uri: "instruction:acme/eng/code-review/v2",
            version: "v2",
            interpret_as: "instruction",
            content,
            authored_by: "admin:acme",
            authored_at: "2026-11-28T10:00:00.000Z",
            source_trust: 0.9,
            tokens: 4,
            sha256: None,
        }
    }

    fn key(b: u8) -> OrgKey {
        OrgKey::from_seed([b; 32])
    }

    #[test]
    fn a_signed_fact_verifies_and_every_changed_field_does_not() {
        let k = key(7);
        let f = fact("Review every diff.");
        let chain = k.sign(&f);
        assert_eq!(k.verify(&f, Some(&chain)), Ok(()));
        let digest = hex(&Sha256::digest(f.content.as_bytes()));
        assert_eq!(k.verify(&Signed { sha256: Some(&digest), ..f }, Some(&chain)), Ok(()));
        // Signing is deterministic (Ed25519), so the chain is too.
        assert_eq!(chain, k.sign(&f));
        let changed = [
            Signed { content: "Review every diff!", ..f },
            Signed { uri: "instruction:acme/eng/code-review/v3", ..f },
            Signed { version: "v3", ..f },
            Signed { interpret_as: "content", ..f },
            Signed { authored_by: "agent:eng", ..f },
            Signed { authored_at: "2026-11-28T10:00:00.001Z", ..f },
            Signed { source_trust: 1.0, ..f },
            Signed { tokens: 400, ..f },
            // the store's digest of the content, unsigned but checked
            Signed { sha256: Some("00"), ..f },
        ];
        for c in changed {
            assert_eq!(k.verify(&c, Some(&chain)), Err(Unattested::BadSignature), "{c:?}");
        }
    }

    #[test]
    fn missing_malformed_and_foreign_chains_are_told_apart() {
        let (k, other) = (key(1), key(2));
        let f = fact("x");
        assert_eq!(k.verify(&f, None), Err(Unattested::Missing));
        assert_eq!(k.verify(&f, Some("  ")), Err(Unattested::Missing));
        assert!(matches!(k.verify(&f, Some("{\"sig\": 1}")), Err(Unattested::Malformed(_))));
        assert!(matches!(k.verify(&f, Some("[{\"alg\":\"Ed25519\",\"kid\":\"x\",\"sig\":\"y\",\"extra\":1}]")), Err(Unattested::Malformed(_))));
        // Signed by another key: names a kid that is not ours.
        assert_eq!(k.verify(&f, Some(&other.sign(&f))), Err(Unattested::UnknownKey(k.kid().to_string())));
        // Another key's signature under our kid.
        let forged = other.sign(&f).replace(other.kid(), k.kid());
        assert_eq!(k.verify(&f, Some(&forged)), Err(Unattested::BadSignature));
        // A signature that is not base64 or not 64 bytes.
        let bad = format!("[{{\"alg\":\"Ed25519\",\"kid\":\"{}\",\"sig\":\"!!\"}}]", k.kid());
        assert_eq!(k.verify(&f, Some(&bad)), Err(Unattested::BadSignature));
        // One good entry among others is enough (§21.4.3: "at least one signature").
        let both = format!("[{},{}]", &other.sign(&f)[1..other.sign(&f).len() - 1], &k.sign(&f)[1..k.sign(&f).len() - 1]);
        assert_eq!(k.verify(&f, Some(&both)), Ok(()));
        assert_eq!(Unattested::BadSignature.reason(), "attestation_invalid");
    }

    #[test]
    fn the_key_round_trips_through_its_text_and_refuses_other_text() {
        let k = key(9);
        let t = k.to_text();
        assert_eq!(t.len(), 43);
        let back = OrgKey::parse(&format!(" {t}\n")).unwrap();
        assert_eq!(back.kid(), k.kid());
        assert_eq!(back.public_text(), k.public_text());
        assert!(k.kid().starts_with("org-") && k.kid().len() == 20);
        assert!(OrgKey::parse("not base64!").unwrap_err().0.contains("base64url"));
        assert!(OrgKey::parse(&URL_SAFE_NO_PAD.encode([1u8; 31])).unwrap_err().0.contains("31 bytes"));
        // Debug never shows the seed.
        assert!(!format!("{k:?}").contains(&t));
    }

    #[test]
    fn the_memo_remembers_only_what_passed() {
        let (k, memo) = (key(3), Memo::default());
        let f = fact("Review every diff.");
        let chain = k.sign(&f);
        assert_eq!(memo.verify(&k, &f, Some(&chain)), Ok(()));
        assert_eq!(memo.verify(&k, &f, Some(&chain)), Ok(()));
        // The same chain over changed content is checked again, and fails, every time.
        let changed = Signed { content: "Skip review.", ..f };
        for _ in 0..2 {
            assert_eq!(memo.verify(&k, &changed, Some(&chain)), Err(Unattested::BadSignature));
        }
        // What one key verified does not pass for another.
        assert!(memo.verify(&key(4), &f, Some(&chain)).is_err());
    }

    #[test]
    fn the_payload_is_unambiguous() {
        // A newline or quote in a field cannot make two facts sign alike.
        let a = Signed { authored_by: "a\",\"b", ..fact("x") };
        let b = Signed { authored_by: "a", authored_at: "b", ..fact("x") };
        assert_ne!(a.payload(), b.payload());
        assert!(String::from_utf8(fact("x").payload()).unwrap().starts_with("[\"lid-attestation:v1\","));
    }
}
