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
//! The store records which key signs it (`org_signing_key`, `migrations/0008_org_key.sql`),
//! so a host given another key refuses ([`key_check`], 503 [`ORG_KEY_MISMATCH`]) instead
//! of quarantining every fact. A rotation re-signs every fact the old key signed with the
//! new one ([`OrgKey::resign`]) and records the new key, in one transaction.
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

pub fn hex(b: &[u8]) -> String {
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
        self.chain(&fact.payload())
    }

    /// Whether `chain` holds a valid signature of `fact` by this key.
    pub fn verify(&self, fact: &Signed, chain: Option<&str>) -> Result<(), Unattested> {
        let sig = self.signature_in(chain)?;
        let sha = hex(&Sha256::digest(fact.content.as_bytes()));
        if fact.sha256.is_some_and(|claimed| claimed != sha) {
            return Err(Unattested::BadSignature);
        }
        self.verifying.verify(&fact.payload_with(&sha), &sig).map_err(|_| Unattested::BadSignature)
    }

    /// This key's signature in `chain`.
    fn signature_in(&self, chain: Option<&str>) -> Result<Signature, Unattested> {
        let chain = chain.filter(|c| !c.trim().is_empty()).ok_or(Unattested::Missing)?;
        let entries: Vec<Entry> = serde_json::from_str(chain).map_err(|e| Unattested::Malformed(e.to_string()))?;
        let ours = entries.iter().find(|e| e.alg == ALG && e.kid == self.kid).ok_or_else(|| Unattested::UnknownKey(self.kid.clone()))?;
        URL_SAFE_NO_PAD.decode(&ours.sig).ok().and_then(|b| Signature::from_slice(&b).ok()).ok_or(Unattested::BadSignature)
    }

    /// A rotation's new chain for a fact that `old` signed (`chain`): this key's signature
    /// over the same fields. The store's digest (`fact.sha256`, required) stands for the
    /// content, which is not read: a row whose content no longer matches its digest is
    /// re-signed as it was and still fails [`OrgKey::verify`] on every read. A chain `old`
    /// did not sign is refused as [`OrgKey::verify`] would refuse it.
    pub fn resign(&self, old: &OrgKey, fact: &Signed, chain: Option<&str>) -> Result<String, Unattested> {
        let sha = fact.sha256.ok_or(Unattested::BadSignature)?;
        let payload = fact.payload_with(sha);
        old.verifying.verify(&payload, &old.signature_in(chain)?).map_err(|_| Unattested::BadSignature)?;
        Ok(self.chain(&payload))
    }

    fn chain(&self, payload: &[u8]) -> String {
        let sig = self.signing.sign(payload);
        let chain = [Entry { alg: ALG.into(), kid: self.kid.clone(), sig: URL_SAFE_NO_PAD.encode(sig.to_bytes()) }];
        serde_json::to_string(&chain).unwrap_or_default()
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

/// The store's record of the org key that signs its facts (`migrations/0008_org_key.sql`):
/// its key id, or no row before a host first recorded one.
pub const RECORDED_KEY_SQL: &str = "SELECT kid FROM org_signing_key WHERE id = 1";

/// Record `?1` (kid), `?2` (public key, base64url), `?3` (ms) as the store's org key.
pub const RECORD_KEY_SQL: &str = "INSERT INTO org_signing_key (id, kid, public_key, since) VALUES (1, ?1, ?2, ?3)
     ON CONFLICT (id) DO UPDATE SET kid = excluded.kid, public_key = excluded.public_key, since = excluded.since";

/// How many facts carry a chain (`signed`) and how many of those name the key whose
/// [`kid_needle`] is `?1` (`by_key`): what a store with no record yet is judged by.
pub const SIGNED_BY_SQL: &str = "SELECT (SELECT count(*) FROM instruction_facts WHERE attestation_chain IS NOT NULL) AS signed,
            (SELECT count(*) FROM instruction_facts WHERE instr(attestation_chain, ?1) > 0) AS by_key";

/// The text a chain written by [`OrgKey::sign`] holds for `kid` (a kid is `org-` and hex,
/// so it needs no escaping in JSON).
pub fn kid_needle(kid: &str) -> String {
    format!("\"kid\":\"{kid}\"")
}

/// Every signed fact, with what [`OrgKey::resign`] needs (no content: the stored digest
/// stands for it), oldest first.
pub const RESIGN_ROWS_SQL: &str = "SELECT uri, version, interpret_as, authored_by, authored_at, source_trust, tokens, sha256, attestation_chain
     FROM instruction_facts WHERE attestation_chain IS NOT NULL ORDER BY rowid";

/// A row of [`RESIGN_ROWS_SQL`], as both hosts read it.
#[derive(Debug, Clone, Deserialize)]
pub struct StoredChain {
    pub uri: String,
    pub version: String,
    pub interpret_as: String,
    pub authored_by: String,
    pub authored_at: String,
    pub source_trust: f64,
    pub tokens: i64,
    pub sha256: String,
    pub attestation_chain: String,
}

impl StoredChain {
    /// `new`'s chain for this fact, if `old` signed it ([`OrgKey::resign`], from the
    /// stored digest).
    pub fn resign(&self, new: &OrgKey, old: &OrgKey) -> Result<String, Unattested> {
        let fact = Signed {
            uri: &self.uri,
            version: &self.version,
            interpret_as: &self.interpret_as,
            content: "",
            authored_by: &self.authored_by,
            authored_at: &self.authored_at,
            source_trust: self.source_trust,
            tokens: self.tokens,
            sha256: Some(&self.sha256),
        };
        new.resign(old, &fact, Some(&self.attestation_chain))
    }
}

/// Replace fact `?2`'s chain `?3` by `?1` (unchanged when another writer got there first).
pub const RESIGN_SQL: &str = "UPDATE instruction_facts SET attestation_chain = ?1 WHERE uri = ?2 AND attestation_chain = ?3";

/// The service event of a rotation: `{"from", "to", "resigned", "kept"}`.
pub const ROTATED_EVENT: &str = "org_key_rotated";

/// A rotation's record of the new key (`?1` kid, `?2` public key, `?3` ms), made only while
/// the record still names the old key `?4`. Two hosts may rotate one store at once (the
/// worker's isolates each rotate on their first read after a deploy): the second one's
/// changes nothing, and the record keeps the first one's time.
pub const ROTATE_KEY_SQL: &str = "UPDATE org_signing_key SET kid = ?1, public_key = ?2, since = ?3 WHERE id = 1 AND kid = ?4";

/// A rotation's service event (`?1` id, `?2` kind: [`ROTATED_EVENT`], `?3` detail JSON,
/// `?4` ms), written only while the record still names the old key `?5`: run before
/// [`ROTATE_KEY_SQL`] in the rotation's transaction, it is written once however many hosts
/// rotate the store at once.
pub const ROTATED_EVENT_SQL: &str = "INSERT INTO service_events (id, agent_id, kind, detail, created_at)
     SELECT ?1, NULL, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM org_signing_key WHERE id = 1 AND kid = ?5)";

/// The error code (ours, 503) of a host whose org key is not the one the store's facts
/// are signed by.
pub const ORG_KEY_MISMATCH: &str = "org_key_mismatch";

/// What a host does about the store's recorded org key (see [`key_check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyCheck {
    /// The record names the host's key: go on.
    Current,
    /// No record yet, and the host's key signed the store's facts (or there are none):
    /// record it ([`RECORD_KEY_SQL`]).
    Record,
    /// The record names the host's previous key (a rotation under way): re-sign every
    /// fact it signed with the current key, then record the current key.
    Rotate,
    /// Another key signed the store's facts (`kid`, or `None` when only the count says
    /// so): refuse, rather than quarantine every fact as unattested.
    Mismatch(Option<String>),
}

/// Judge the store's record (`recorded`; without one, `signed` facts of which `by_key`
/// name `current`) against the host's `current` key and, during a rotation, its
/// `previous` one.
pub fn key_check(recorded: Option<&str>, current: &OrgKey, previous: Option<&OrgKey>, signed: i64, by_key: i64) -> KeyCheck {
    match recorded {
        Some(kid) if kid == current.kid() => KeyCheck::Current,
        Some(kid) if previous.is_some_and(|p| p.kid() == kid) => KeyCheck::Rotate,
        Some(kid) => KeyCheck::Mismatch(Some(kid.to_string())),
        None if signed == 0 || by_key > 0 => KeyCheck::Record,
        None => KeyCheck::Mismatch(None),
    }
}

/// The message of a [`KeyCheck::Mismatch`]: the store's facts are signed by `recorded`
/// (or another key), the host holds `ours`; `remedy` says where the right key goes.
pub fn mismatch_message(recorded: Option<&str>, ours: &str, remedy: &str) -> String {
    let theirs = recorded.map_or("another org key".to_string(), |k| format!("org key {k}"));
    format!("the store's facts are signed by {theirs}, but this host's org key is {ours}: {remedy}; a host with the wrong key would quarantine every fact as unattested (§21.4.3), so it serves none")
}

/// 503 [`ORG_KEY_MISMATCH`] with a [`mismatch_message`].
pub fn org_key_mismatch(message: impl Into<String>) -> crate::Refusal {
    crate::Refusal::new(503, ORG_KEY_MISMATCH, message)
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

    #[test]
    fn a_rotation_re_signs_what_the_old_key_signed_and_nothing_else() {
        let (old, new) = (key(5), key(6));
        let f = fact("Review every diff.");
        let digest = hex(&Sha256::digest(f.content.as_bytes()));
        let stored = Signed { sha256: Some(&digest), ..f };
        let chain = old.sign(&f);
        // Re-signed from the stored digest alone (no content), it verifies under the new key
        // only, and the same as a fresh signature (Ed25519 is deterministic).
        let row = Signed { content: "", ..stored };
        let resigned = new.resign(&old, &row, Some(&chain)).unwrap();
        assert_eq!(new.verify(&stored, Some(&resigned)), Ok(()));
        assert_eq!(resigned, new.sign(&f));
        assert_eq!(old.verify(&stored, Some(&resigned)), Err(Unattested::UnknownKey(old.kid().to_string())));
        // A chain the old key did not sign, or over other fields, is not re-signed.
        assert_eq!(new.resign(&old, &row, None), Err(Unattested::Missing));
        assert_eq!(new.resign(&old, &row, Some(&key(7).sign(&f))), Err(Unattested::UnknownKey(old.kid().to_string())));
        assert_eq!(new.resign(&old, &Signed { tokens: 5, ..row }, Some(&chain)), Err(Unattested::BadSignature));
        // Without the stored digest there is nothing to sign.
        assert_eq!(new.resign(&old, &Signed { sha256: None, ..row }, Some(&chain)), Err(Unattested::BadSignature));
        // A row whose content changed keeps failing after the rotation.
        let tampered_digest = hex(&Sha256::digest(b"Skip review."));
        let tampered = Signed { sha256: Some(&tampered_digest), ..row };
        assert_eq!(new.resign(&old, &tampered, Some(&chain)), Err(Unattested::BadSignature));
        let changed_content = new.resign(&old, &row, Some(&chain)).unwrap();
        assert_eq!(new.verify(&Signed { content: "Skip review.", ..stored }, Some(&changed_content)), Err(Unattested::BadSignature));
        // The chain names its kid as kid_needle finds it.
        assert!(resigned.contains(&kid_needle(new.kid())), "{resigned}");
    }

    #[test]
    fn the_recorded_key_decides_whether_a_host_may_go_on() {
        let (cur, prev, other) = (key(1), key(2), key(3));
        assert_eq!(key_check(Some(cur.kid()), &cur, None, 10, 10), KeyCheck::Current);
        assert_eq!(key_check(Some(prev.kid()), &cur, Some(&prev), 10, 0), KeyCheck::Rotate);
        assert_eq!(key_check(Some(other.kid()), &cur, Some(&prev), 10, 0), KeyCheck::Mismatch(Some(other.kid().to_string())));
        assert_eq!(key_check(Some(prev.kid()), &cur, None, 10, 0), KeyCheck::Mismatch(Some(prev.kid().to_string())));
        // No record yet: an empty store, or one this key signed, is recorded; else refused.
        assert_eq!(key_check(None, &cur, None, 0, 0), KeyCheck::Record);
        assert_eq!(key_check(None, &cur, None, 10, 1), KeyCheck::Record);
        assert_eq!(key_check(None, &cur, None, 10, 0), KeyCheck::Mismatch(None));
        let m = mismatch_message(Some(other.kid()), cur.kid(), "restore the key file");
        assert!(m.contains(other.kid()) && m.contains(cur.kid()) && m.contains("restore the key file"), "{m}");
        assert_eq!(org_key_mismatch(m).status, 503);
    }

    /// The public key operators verify facts with elsewhere (the JWK `x`): the 32 bytes
    /// that check the key's signatures; `Debug` names the key by its kid.
    #[test]
    fn the_public_text_verifies_the_keys_signatures() {
        let k = key(8);
        let f = fact("Review every diff.");
        let x: [u8; 32] = URL_SAFE_NO_PAD.decode(k.public_text()).unwrap().try_into().unwrap();
        let public = VerifyingKey::from_bytes(&x).unwrap();
        let chain: Vec<Entry> = serde_json::from_str(&k.sign(&f)).unwrap();
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(&chain[0].sig).unwrap()).unwrap();
        assert!(public.verify(&f.payload(), &sig).is_ok());
        assert_ne!(k.public_text(), key(9).public_text());
        assert_eq!(format!("{k:?}"), format!("OrgKey({})", k.kid()));
    }

    /// [`SIGNED_BY_SQL`] counts the facts whose chain holds the needle: it is the key's own
    /// `"kid"` entry, found in its chains and in no other key's.
    #[test]
    fn the_kid_needle_is_found_in_the_keys_chains_only() {
        let (k, other) = (key(1), key(2));
        assert_eq!(kid_needle(k.kid()), format!("\"kid\":\"{}\"", k.kid()));
        let f = fact("x");
        assert!(k.sign(&f).contains(&kid_needle(k.kid())));
        assert!(!other.sign(&f).contains(&kid_needle(k.kid())));
    }

    /// A stored row (no content, its digest) re-signed by the new key verifies with its
    /// content under the new key; a row the old key did not sign is not re-signed.
    #[test]
    fn a_stored_chain_is_re_signed_from_its_row() {
        let (old, new) = (key(5), key(6));
        let f = fact("Review every diff.");
        let digest = hex(&Sha256::digest(f.content.as_bytes()));
        let row = |chain: String| StoredChain {
            uri: f.uri.into(),
            version: f.version.into(),
            interpret_as: f.interpret_as.into(),
            authored_by: f.authored_by.into(),
            authored_at: f.authored_at.into(),
            source_trust: f.source_trust,
            tokens: f.tokens,
            sha256: digest.clone(),
            attestation_chain: chain,
        };
        let resigned = row(old.sign(&f)).resign(&new, &old).unwrap();
        assert_eq!(new.verify(&f, Some(&resigned)), Ok(()));
        assert_eq!(row(key(7).sign(&f)).resign(&new, &old), Err(Unattested::UnknownKey(old.kid().to_string())));
        assert_eq!(StoredChain { tokens: 5, ..row(old.sign(&f)) }.resign(&new, &old), Err(Unattested::BadSignature));
    }

    /// The memo keeps every fact that passed, up to [`MEMO_MAX`], then starts again.
    #[test]
    fn the_memo_keeps_what_passed_up_to_its_bound() {
        let (k, memo) = (key(3), Memo::default());
        let (a, b) = (fact("a"), fact("b"));
        for f in [&a, &b] {
            assert_eq!(memo.verify(&k, f, Some(&k.sign(f))), Ok(()));
        }
        assert_eq!(memo.verified.lock().unwrap().len(), 2);
        memo.verified.lock().unwrap().extend((0..MEMO_MAX as u32).map(|i| {
            let mut id = [0xff; 32];
            id[..4].copy_from_slice(&i.to_le_bytes());
            id
        }));
        let c = fact("c");
        assert_eq!(memo.verify(&k, &c, Some(&k.sign(&c))), Ok(()));
        assert_eq!(memo.verified.lock().unwrap().len(), 1, "emptied when full");
    }
}
