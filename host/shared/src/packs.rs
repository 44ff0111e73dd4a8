//! An uploaded knowledge pack's entry in the agent's catalog (`GET .../knowledge`): the
//! upload's identity, then the pack's catalog fields (`KNOWLEDGE.md` front matter).

use serde_json::{json, Value};

use crate::time::iso;

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

#[cfg(test)]
mod tests {
    #[test]
    fn entry_then_catalog_fields() {
        let e = super::pack_entry("ops", "v2", &serde_json::json!({"name": "Ops", "status": "ready"}), "ab", 0, "key:1");
        assert_eq!(e.to_string(), r#"{"pack":"ops","upload_version":"v2","digest":"ab","uploaded_at":"1970-01-01T00:00:00Z","uploaded_by":"key:1","name":"Ops","status":"ready"}"#);
    }
}
