//! Knowledge pack uploads (`PUT .../knowledge/{pack}`): the request read, and the
//! pack's entry in the agent's catalog (`GET .../knowledge`): the upload's identity, then
//! the pack's catalog fields (`KNOWLEDGE.md` front matter).

use serde_json::{json, Map, Value};

use crate::time::iso;
use crate::Refusal;

/// A knowledge pack upload's `knowledge_md` and `units` (file key to markdown text),
/// each of its type; `deployment` (read by [`crate::units::deployment`], for an agent with
/// no manifest yet) is allowed too; any other field is refused.
pub fn upload_fields(body: &Value) -> Result<(&str, Map<String, Value>), Refusal> {
    const SHAPE: &str = "send the pack as {\"knowledge_md\": \"<KNOWLEDGE.md text>\", \"units\": {\"<name or path>\": \"<text>\"}} (and \"deployment\" for an agent with no manifest yet)";
    let Some(obj) = body.as_object() else {
        return Err(Refusal::invalid_request(SHAPE));
    };
    if let Some(k) = obj.keys().find(|k| !["knowledge_md", "units", "deployment"].contains(&k.as_str())) {
        return Err(Refusal::invalid_request(format!("unknown field `{k}`: {SHAPE}")));
    }
    let kmd = obj.get("knowledge_md").and_then(Value::as_str).ok_or_else(|| Refusal::invalid_request(SHAPE))?;
    let units = match obj.get("units") {
        None => Map::new(),
        Some(Value::Object(u)) => u.clone(),
        Some(other) => return Err(Refusal::invalid_request(format!("`units` must be an object of file name to text, not {other}: {SHAPE}"))),
    };
    if let Some((k, _)) = units.iter().find(|(_, v)| !v.is_string()) {
        return Err(Refusal::invalid_request(format!("`units.{k}` must be the file's markdown text")));
    }
    Ok((kmd, units))
}

/// Whether a pack version stored with digest `stored` holds the files an upload of
/// `agent`'s with the engine's digest `files_digest` sends: its [`scoped_digest`], or, for a
/// version a release before scoped digests stored, the files' digest itself (an upgrade
/// audit: the first identical upload after upgrading was stored as a new version). An
/// unscoped digest is one this agent's own earlier upload stored, so it tells no one else
/// anything.
pub fn same_upload(stored: &str, agent: &str, files_digest: &str) -> bool {
    stored == scoped_digest(agent, files_digest) || (!files_digest.is_empty() && stored == files_digest)
}

/// The digest a host stores for an upload of `agent`'s, from the engine's digest of the
/// pack's files: scoped to the agent, so that the index cached under it (the engine's
/// pack key) is never one another agent's identical upload built. Else an upload that
/// found another tenant's index would be answered seconds faster, telling its sender
/// that someone holds exactly those files.
pub fn scoped_digest(agent: &str, files_digest: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in ["lid-pack-upload:v1", agent, files_digest] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    crate::attest::hex(&h.finalize())
}

/// The catalog entry of pack `pack` at upload `version` (uploaded at `at` Unix ms by `by`).
pub fn pack_entry(pack: &str, version: &str, catalog: &Value, digest: &str, at: i64, by: &str) -> Value {
    let mut e = json!({"pack": pack, "upload_version": version, "digest": digest, "uploaded_at": iso(at), "uploaded_by": by});
    if let (Some(o), Some(c)) = (e.as_object_mut(), catalog.as_object()) {
        for (k, v) in c {
            o.insert(k.clone(), v.clone());
        }
    }
    e
}

/// The recall an upload runs over a pack's staged facts alone to build (and cache) the
/// pack's ranker index before anything is stored: `(manifest, request, context)`, the
/// same on both hosts. The manifest names one unit no store holds, so the recall ranks
/// nothing but the pack; its audit goes nowhere (the hosts pass no audit sink).
pub fn index_probe(agent: &str, deployment: &str, pack: &str, now_ms: i64) -> (String, String, String) {
    let manifest = json!({"agent_id": agent, "deployment": deployment, "manifest_version": "v1",
        "entries": [{"name": "lid-pack-index", "description": "Builds a knowledge pack's index before the pack is stored.", "path": "lid-pack-index.md"}]});
    let request = json!({"intent": pack.replace(['-', '_', '.'], " "), "max_chunks": 1, "max_content": 1});
    let context = json!({"now_ms": now_ms, "entropy": "00000000000000000000", "heartbeat_id": ""});
    (manifest.to_string(), request.to_string(), context.to_string())
}

/// A pack's (`?2`) upload rows for agent `?1`: `version`, `digest`, `superseded_at` and
/// how many of the version's facts are `quarantined`. An upload identical to the current
/// version is `unchanged` only when none is: a file quarantined since (its row changed
/// outside the service, §21.4.3) is not served, so the same upload stores the pack again,
/// signed, as a new version.
pub const PACK_UPLOADS_SQL: &str = "SELECT version, digest, superseded_at,
    (SELECT count(*) FROM instruction_facts f WHERE f.agent_id = k.agent_id AND substr(f.uri, 1, length(k.prefix)) = k.prefix AND f.quarantine IS NOT NULL) AS quarantined
  FROM knowledge_packs k WHERE k.agent_id = ?1 AND k.pack = ?2";

/// The entry an unchanged re-upload answers with: the stored upload's own fields
/// (version, digest, time, uploader) with the catalog the engine read from the files now,
/// and whether the stored catalog differs from it. The catalog is derived from the
/// files by the engine's reading rules, which a release can change (how files are named
/// as units, so how many there are): a stale one is refreshed with
/// [`REFRESH_CATALOG_SQL`]; the facts are the same bytes and are not touched.
pub fn unchanged_entry(stored: &Value, catalog: &Value) -> (Value, bool) {
    let mut e = serde_json::Map::new();
    for k in ["pack", "upload_version", "digest", "uploaded_at", "uploaded_by"] {
        if let Some(v) = stored.get(k) {
            e.insert(k.to_string(), v.clone());
        }
    }
    for (k, v) in catalog.as_object().into_iter().flatten() {
        e.insert(k.clone(), v.clone());
    }
    let e = Value::Object(e);
    let stale = e != *stored;
    (e, stale)
}

/// Refresh the current upload's stored catalog (`meta`) and unit count:
/// `(meta, units, agent, pack, version)`.
pub const REFRESH_CATALOG_SQL: &str = "UPDATE knowledge_packs SET meta = ?1, units = ?2 WHERE agent_id = ?3 AND pack = ?4 AND version = ?5 AND superseded_at IS NULL";

#[cfg(test)]
mod tests {
    /// An upload is unchanged against the version stored with its agent-scoped digest,
    /// or with the plain files' digest an older release stored; never another agent's.
    #[test]
    fn an_upload_is_the_same_as_its_scoped_or_legacy_digest() {
        use super::{same_upload, scoped_digest};
        let files = "ab".repeat(32);
        assert!(same_upload(&scoped_digest("eng", &files), "eng", &files));
        assert!(same_upload(&files, "eng", &files), "the digest a release before scoping stored");
        assert!(!same_upload(&scoped_digest("ops", &files), "eng", &files));
        assert!(!same_upload(&scoped_digest("eng", &"cd".repeat(32)), "eng", &files));
        assert!(!same_upload("", "eng", ""));
    }

    /// An unchanged re-upload answers with the catalog read now, keeps the stored upload's
    /// own fields, and says whether the stored catalog is stale (a reading rule changed
    /// since: three files once named as one unit are three).
    #[test]
    fn an_unchanged_upload_answers_with_the_catalog_read_now() {
        let stored = super::pack_entry("zh", "v1", &serde_json::json!({"name": "zh", "status": "ready", "units": 1, "retired": "x"}), "ab", 0, "key:1");
        let fresh = serde_json::json!({"name": "zh", "status": "ready", "units": 3});
        let (e, stale) = super::unchanged_entry(&stored, &fresh);
        assert!(stale);
        assert_eq!(e.to_string(), r#"{"pack":"zh","upload_version":"v1","digest":"ab","uploaded_at":"1970-01-01T00:00:00Z","uploaded_by":"key:1","name":"zh","status":"ready","units":3}"#);
        let (again, stale) = super::unchanged_entry(&e, &fresh);
        assert!(!stale, "a current catalog is not rewritten");
        assert_eq!(again, e);
    }

    #[test]
    fn entry_then_catalog_fields() {
        let e = super::pack_entry("ops", "v2", &serde_json::json!({"name": "Ops", "status": "ready"}), "ab", 0, "key:1");
        assert_eq!(e.to_string(), r#"{"pack":"ops","upload_version":"v2","digest":"ab","uploaded_at":"1970-01-01T00:00:00Z","uploaded_by":"key:1","name":"Ops","status":"ready"}"#);
        // one agent's digest of given files is stable and its own
        let d = "0".repeat(64);
        assert_eq!(super::scoped_digest("a", &d), super::scoped_digest("a", &d));
        assert_ne!(super::scoped_digest("a", &d), super::scoped_digest("b", &d));
        assert_ne!(super::scoped_digest("a", &d), super::scoped_digest("a", &"1".repeat(64)));
        assert_eq!(super::scoped_digest("a", &d).len(), 64);
    }

    #[test]
    fn an_upload_is_read_field_by_field() {
        use super::upload_fields;
        use serde_json::json;
        let body = json!({"knowledge_md": "---\nname: Ops\n---", "units": {"a.md": "# A"}, "deployment": "acme"});
        let (kmd, units) = upload_fields(&body).unwrap();
        assert_eq!((kmd, units.len(), units["a.md"].as_str()), ("---\nname: Ops\n---", 1, Some("# A")));
        assert!(upload_fields(&json!({"knowledge_md": "k"})).unwrap().1.is_empty(), "a pack of KNOWLEDGE.md alone");
        for (bad, needle) in [
            (json!({"knowledge_md": "k", "unit": {}}), "unknown field `unit`"),
            (json!({"units": {}}), "send the pack as"),
            (json!({"knowledge_md": 5}), "send the pack as"),
            (json!({"knowledge_md": "k", "units": ["a"]}), "`units` must be an object"),
            (json!({"knowledge_md": "k", "units": {"a.md": "x", "b.md": 1}}), "`units.b.md` must be"),
            (json!("k"), "send the pack as"),
        ] {
            let e = upload_fields(&bad).unwrap_err();
            assert!(e.code == "invalid_request" && e.message.contains(needle), "{bad}: {}", e.message);
        }
    }

    /// The index-building recall: a manifest naming one unit no store holds, an intent of
    /// the pack's name in words, one chunk and one content item, the upload's clock.
    #[test]
    fn the_index_probe_ranks_the_pack_alone() {
        let (manifest, request, context) = super::index_probe("eng", "acme", "ops-run_book.v2", 7);
        let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        assert_eq!((m["agent_id"].as_str(), m["deployment"].as_str(), m["manifest_version"].as_str()), (Some("eng"), Some("acme"), Some("v1")));
        assert_eq!((m["entries"].as_array().map(Vec::len), m["entries"][0]["name"].as_str()), (Some(1), Some("lid-pack-index")));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&request).unwrap(), serde_json::json!({"intent": "ops run book v2", "max_chunks": 1, "max_content": 1}));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&context).unwrap()["now_ms"], 7);
    }
}
