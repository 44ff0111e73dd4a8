//! The engine's two storage ports: instruction facts and the audit sink.
//!
//! The core reaches storage only through these traits. Hosts implement them: the
//! WASI component over `wasi:keyvalue` (facts) and `lid:engine/audit`, the CLI over an
//! agent directory, the service over SQLite, the worker over KV and D1.
//!
//! Facts are versioned and immutable (§21.4.2). A fact is stored under its full
//! `instruction:` URI; the version list of a unit under its version-less key
//! (`instruction:{deployment}/{agent}/{unit}`), as a JSON array of version strings.
//! File-path units (§21.6.1) are read under `path:{relative path}`. The sources of an
//! agent's recall `content` channel are listed under `lid-content:{agent_id}`
//! ([`crate::content::ContentSources`], Spec-13).

use serde::{Deserialize, Serialize};

/// How a fact may be interpreted (Spec-13): instructions steer the agent, content is data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterpretAs {
    #[default]
    Instruction,
    Content,
}

/// One stored fact: a unit's content at one version, with provenance (§21.4.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub uri: String,
    pub content: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub interpret_as: InterpretAs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authored_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authored_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_trust: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
    /// Exact cl100k count of `content`, precomputed at write time when available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// Lowercase hex SHA-256 of `content`, computed by the host at write time when
    /// available (it keys the cached ranker index; the engine hashes `content` itself
    /// when it is absent or malformed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Held in quarantine (Spec-13, "Federation boundary": a fact from another
    /// organisation or a federation peer): never served in either recall channel.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
}

impl Fact {
    /// The SHA-256 of the content: the host's precomputed one when well-formed, else computed.
    pub fn content_sha256(&self) -> String {
        match &self.sha256 {
            Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) => h.clone(),
            _ => crate::digest::sha256_hex(self.content.as_bytes()),
        }
    }
}

/// A storage failure. Hosts map it to `503 recall_backend_unavailable` (§21.9).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fact store unavailable: {0}")]
pub struct StoreError(pub String);

/// Read access to instruction facts.
pub trait Facts {
    /// The fact stored at exactly `uri` (a versioned `instruction:` URI or a `path:` key).
    fn get(&self, uri: &str) -> Result<Option<Fact>, StoreError>;
    /// The versions of a unit, given its version-less key (any order).
    fn versions(&self, unit_key: &str) -> Result<Vec<String>, StoreError>;
    /// A derived blob (the ranker's index, [`crate::recall::INDEX_PREFIX`]) cached under a
    /// content fingerprint. Best-effort: `None` on a miss or when the host keeps none.
    fn cached(&self, _key: &str) -> Option<Vec<u8>> {
        None
    }
    /// Offer a derived blob for caching. Best-effort; hosts may ignore it. The key is a
    /// fingerprint of everything the blob was derived from, so entries never go stale.
    fn cache(&self, _key: &str, _blob: &[u8]) {}
    /// What the agent's recall `content` channel may serve ([`crate::content`]); `None`
    /// when the host lists nothing (the channel is then empty).
    fn content_sources(&self, _agent_id: &str) -> Result<Option<crate::content::ContentSources>, StoreError> {
        Ok(None)
    }
}

/// Append-only audit sink (§21.5.1). Appends may fail; callers must not lose the response.
pub trait AuditSink {
    fn append(&self, record_json: &str) -> Result<(), String>;
}

/// An audit sink that drops every record (for ranking-only calls such as eval).
pub struct NoAudit;

impl AuditSink for NoAudit {
    fn append(&self, _record_json: &str) -> Result<(), String> {
        Ok(())
    }
}

/// An audit sink that keeps every record, for tests.
#[cfg(test)]
#[derive(Default)]
pub struct Records(pub std::cell::RefCell<Vec<String>>);

#[cfg(test)]
impl AuditSink for Records {
    fn append(&self, record_json: &str) -> Result<(), String> {
        self.0.borrow_mut().push(record_json.to_string());
        Ok(())
    }
}

/// A simple in-memory fact store, used by tests, benches and hosts that load a directory.
#[derive(Debug, Default)]
pub struct MemoryFacts {
    facts: std::collections::BTreeMap<String, Fact>,
    versions: std::collections::BTreeMap<String, Vec<String>>,
    derived: std::sync::Mutex<std::collections::BTreeMap<String, Vec<u8>>>,
    content: std::collections::BTreeMap<String, crate::content::ContentSources>,
}

impl MemoryFacts {
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert a fact; an `instruction:` URI also registers its version under the unit key.
    pub fn insert(&mut self, fact: Fact) {
        if let Ok(u) = crate::uri::InstructionUri::parse(&fact.uri) {
            let list = self.versions.entry(u.unit_key()).or_default();
            if !list.contains(&u.version) {
                list.push(u.version.clone());
            }
        }
        self.facts.insert(fact.uri.clone(), fact);
    }

    /// The keys of the derived blobs held (ranker indexes and their segments).
    pub fn derived_keys(&self) -> Vec<String> {
        self.derived_sizes().into_iter().map(|(k, _)| k).collect()
    }

    /// Each derived blob held, with its size in bytes.
    pub fn derived_sizes(&self) -> Vec<(String, usize)> {
        self.derived.lock().map(|d| d.iter().map(|(k, v)| (k.clone(), v.len())).collect()).unwrap_or_default()
    }

    /// Drop a derived blob, as a host's cache may evict one.
    pub fn forget(&self, key: &str) {
        if let Ok(mut d) = self.derived.lock() {
            d.remove(key);
        }
    }

    /// List what `agent_id`'s recall content channel may serve.
    pub fn set_content_sources(&mut self, agent_id: &str, sources: crate::content::ContentSources) {
        self.content.insert(agent_id.to_string(), sources);
    }
}

impl Facts for MemoryFacts {
    fn get(&self, uri: &str) -> Result<Option<Fact>, StoreError> {
        Ok(self.facts.get(uri).cloned())
    }
    fn versions(&self, unit_key: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.versions.get(unit_key).cloned().unwrap_or_default())
    }
    fn cached(&self, key: &str) -> Option<Vec<u8>> {
        self.derived.lock().ok()?.get(key).cloned()
    }
    fn cache(&self, key: &str, blob: &[u8]) {
        if let Ok(mut d) = self.derived.lock() {
            d.insert(key.to_string(), blob.to_vec());
        }
    }
    fn content_sources(&self, agent_id: &str) -> Result<Option<crate::content::ContentSources>, StoreError> {
        Ok(self.content.get(agent_id).cloned())
    }
}
