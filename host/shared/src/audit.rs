//! One row of `instruction_audit` (+ its meta) as the engine writes it (§21.5.1; the
//! columns are §21.7's): the engine's audit record (JSON) is read into this shape by both
//! hosts, and rows read back from SQLite or D1 are returned in it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct AuditRow {
    pub id: String,
    pub agent_id: String,
    pub heartbeat_id: String,
    pub session_start: i64,
    /// Who made the call (the engine's record has it from the host's context): the key's
    /// identity, `''` on rows written before `migrations/0009_audit_caller.sql`.
    #[serde(default)]
    pub caller: String,
    /// The state the call ran on, as the host named it to the engine (`corpus_key`; ''
    /// on rows written before `migrations/0010_audit_corpus_key.sql`).
    #[serde(default, skip_serializing)]
    pub corpus_key: String,
    pub intent: String,
    #[serde(deserialize_with = "crate::string_list")]
    pub loaded_chunks: Vec<String>,
    #[serde(default, deserialize_with = "crate::string_list")]
    pub used_chunks: Vec<String>,
    #[serde(default, deserialize_with = "crate::string_list")]
    pub missed_chunks: Vec<String>,
    pub audit_token: String,
    #[serde(default)]
    pub audit_closed: Option<i64>,
    pub created_at: i64,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub manifest_version: String,
    /// The content channel items served (`{uri, sha256}`, Spec-13); not part of replies.
    #[serde(default, skip_serializing)]
    pub content_served: Vec<Value>,
    /// Content-addressed recall: each loaded chunk's SHA-256, the assembly digest and the
    /// request as the engine read it (for `lid audit replay --db`); not part of replies.
    #[serde(default, skip_serializing)]
    pub chunk_sha256: Vec<String>,
    #[serde(default, skip_serializing)]
    pub assembly_sha256: String,
    #[serde(default, skip_serializing)]
    pub request: Option<Value>,
    /// A preload's warnings and the error that aborted one (§21.1.5 rule 4), each
    /// `{code, unit, message}`: stored with the row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// Insert one audit row, as both hosts do (SQLite and D1 run the same SQL): parameters
/// `id, agent_id, heartbeat_id, session_start, intent, loaded_chunks, used_chunks,
/// missed_chunks, audit_token, created_at`. `session_start` is "the heartbeat start"
/// (§21.5.1): a record naming a heartbeat already on record (its preloads, an earlier
/// recall) takes that heartbeat's start, and otherwise its own (a signed trigger's
/// `session_start`, else the record's time); of the two, the earlier. So a recall that
/// named a heartbeat's id first cannot move the start its signed trigger states later.
/// `migrations/0006_audit_heartbeats.sql` indexes the lookup.
pub const INSERT_AUDIT_SQL: &str = "INSERT INTO instruction_audit (id, agent_id, heartbeat_id, session_start, intent, loaded_chunks, used_chunks, missed_chunks, audit_token, audit_closed, created_at)
 VALUES (?1, ?2, ?3, min(coalesce((SELECT min(session_start) FROM instruction_audit WHERE agent_id = ?2 AND heartbeat_id = ?3 AND ?3 <> ''), ?4), ?4), ?5, ?6, ?7, ?8, ?9, NULL, ?10)";

/// Insert one audit row's meta (`instruction_audit_meta`), as both hosts do: parameters
/// `id, source, manifest_version, content_served, chunk_sha256, assembly_sha256, request,
/// warnings, error, caller, corpus_key`.
pub const INSERT_AUDIT_META_SQL: &str = "INSERT INTO instruction_audit_meta (id, source, manifest_version, content_served, chunk_sha256, assembly_sha256, request, warnings, error, caller, corpus_key)
 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// The most audit rows a window's figures are computed over (the coverage route's
/// `audit_7d`, `lid audit report`): the agent's newest, so that one engine call (about
/// 1 KiB of its memory a row) and the host's copy stay bounded however busy the agent is
/// (a soak audit: 20,000 rows ran a 32 MiB engine out of memory, 50,000 a 64 MiB one). A window with more
/// rows is reported over these, and says so (`truncated`).
pub const WINDOW_ROWS_MAX: usize = 20_000;

/// An agent's (`?1`) audit rows created at or after `?2`, newest first, at most `?3`
/// ([`WINDOW_ROWS_MAX`] and one more, to tell a full window): the columns of
/// [`AuditRow`] that the window's figures read, the intent left out.
pub const WINDOW_ROWS_SQL: &str = "SELECT a.id AS id, a.agent_id AS agent_id, a.heartbeat_id AS heartbeat_id, a.session_start AS session_start, '' AS intent,
        a.loaded_chunks AS loaded_chunks, a.used_chunks AS used_chunks, a.missed_chunks AS missed_chunks,
        a.audit_token AS audit_token, a.audit_closed AS audit_closed, a.created_at AS created_at,
        coalesce(m.source, 'recall_instruction') AS source, coalesce(m.manifest_version, '') AS manifest_version,
        coalesce(m.caller, '') AS caller
 FROM instruction_audit a LEFT JOIN instruction_audit_meta m ON m.id = a.id
 WHERE a.agent_id = ?1 AND a.created_at >= ?2 ORDER BY a.created_at DESC, a.id DESC LIMIT ?3";

/// The rows [`WINDOW_ROWS_SQL`] gave, oldest first and at most [`WINDOW_ROWS_MAX`], and
/// whether older ones were left out.
pub fn window(mut newest_first: Vec<AuditRow>) -> (Vec<AuditRow>, bool) {
    let truncated = newest_first.len() > WINDOW_ROWS_MAX;
    newest_first.truncate(WINDOW_ROWS_MAX);
    newest_first.reverse();
    (newest_first, truncated)
}

/// How long an audit token takes feedback (§21.5.2: 24 hours after its recall).
pub const TOKEN_TTL_MS: i64 = 24 * 3600 * 1000;

/// The stored state of the record a submission names, as both hosts read it.
pub struct Stored<'a> {
    pub created_at: i64,
    pub closed: bool,
    /// The record's `loaded_chunks`, `used_chunks` and `missed_chunks` columns (JSON lists).
    pub loaded_json: &'a str,
    pub used_json: &'a str,
    pub missed_json: &'a str,
}

/// §21.5.2 for a found record its caller may close: `Ok(true)` to close it with the
/// feedback, `Ok(false)` when it is closed already with the same feedback (a silent
/// success, at any age: "a second submission with the same `audit_token` MUST return 204
/// without modifying the record"), else the refusal: other feedback for a closed record,
/// a missed unit the recall loaded, or a token older than 24 hours.
pub fn closing(stored: &Stored<'_>, now_ms: i64, used: &[String], missed: &[String]) -> Result<bool, crate::Refusal> {
    if stored.closed {
        return resubmission(stored.used_json, stored.missed_json, used, missed).map(|()| false);
    }
    if let Some(refusal) = missed_but_loaded(stored.loaded_json, missed) {
        return Err(refusal);
    }
    if now_ms - stored.created_at > TOKEN_TTL_MS {
        return Err(crate::Refusal::new(400, "audit_token_expired", "this audit token is older than 24 hours (§21.5.2); feedback must be sent at heartbeat end"));
    }
    Ok(true)
}

/// §21.5.1: a missed unit is one the agent referenced "but that were not in
/// `loaded_chunks`": feedback that calls a unit this recall loaded missed is refused.
/// `loaded_json` is the record's `loaded_chunks` column (a JSON list of names).
pub fn missed_but_loaded(loaded_json: &str, missed: &[String]) -> Option<crate::Refusal> {
    let loaded: Vec<String> = serde_json::from_str(loaded_json).unwrap_or_default();
    let both: Vec<&String> = missed.iter().filter(|m| loaded.contains(m)).collect();
    (!both.is_empty()).then(|| {
        crate::Refusal::invalid_request(format!("{both:?} in `missed_chunks` were loaded by this recall: report what the agent applied in `used_chunks`; missed units are ones it needed and did not receive (§21.5.1)"))
    })
}

/// §21.5.1: feedback names units ("unit names the agent demonstrably applied", "unit
/// names the agent referenced"): a name that is neither a unit of the agent's manifest
/// (`manifest_json`, the one in force) nor one the recall loaded is a typo, which would
/// skew §21.5.3's metrics for good, so the submission is refused and nothing recorded.
pub fn unknown_units(manifest_json: Option<&str>, loaded_json: &str, used: &[String], missed: &[String]) -> Option<crate::Refusal> {
    let loaded: Vec<String> = serde_json::from_str(loaded_json).unwrap_or_default();
    let manifest: Value = manifest_json.and_then(|m| serde_json::from_str(m).ok()).unwrap_or(Value::Null);
    let units: Vec<&str> = manifest["entries"].as_array().into_iter().flatten().filter_map(|e| e["name"].as_str()).collect();
    let known = |n: &String| loaded.contains(n) || units.contains(&n.as_str());
    let (field, name) = used.iter().find(|n| !known(n)).map(|n| ("used_chunks", n)).or_else(|| missed.iter().find(|n| !known(n)).map(|n| ("missed_chunks", n)))?;
    Some(crate::Refusal::invalid_request(format!("`{field}` names {name:?}, which is neither a unit of the agent's manifest nor one this recall loaded: a typo? (§21.5.1: feedback names units); nothing was recorded")))
}

/// §21.5.2 on a record already closed: "a duplicate submission with the same token is a
/// silent success" (`Ok`), else `audit_token_invalid`. `used_json` / `missed_json` are the
/// record's columns; the feedback is two sets of unit names, so their order (and a name
/// given twice) does not make a submission different.
pub fn resubmission(used_json: &str, missed_json: &str, used: &[String], missed: &[String]) -> Result<(), crate::Refusal> {
    fn set(v: &[String]) -> std::collections::BTreeSet<&String> {
        v.iter().collect()
    }
    let stored = |j: &str| serde_json::from_str::<Vec<String>>(j).unwrap_or_default();
    if set(&stored(used_json)) == set(used) && set(&stored(missed_json)) == set(missed) {
        Ok(())
    } else {
        Err(crate::Refusal::new(400, "audit_token_invalid", "this audit record is already closed with different feedback; audit records are append-only"))
    }
}

/// A recall answered when its audit row could not be stored (§21.3.4: the response still
/// returns): the `audit_write_failed` warning, as the engine words it when its own append
/// fails, and an empty `audit_token`, since no record holds the token and a §21.5.2
/// submission of it could only be refused.
pub fn recall_unrecorded(response: &mut Value, error: &str) {
    let Some(o) = response.as_object_mut() else { return };
    if let Some(t) = o.get_mut("audit_token") {
        *t = Value::String(String::new());
    }
    push_warning(o, Value::String(format!("audit_write_failed: {error}; this recall has no audit_token")));
}

/// The same for a §21.1.5 preload answer: its warnings are `{code, unit, message}`
/// objects, and a preload without a record has no `audit_token`, as the engine leaves it.
pub fn preload_unrecorded(preloads: &mut Value, error: &str) {
    let Some(o) = preloads.as_object_mut() else { return };
    o.remove("audit_token");
    push_warning(o, serde_json::json!({"code": "audit_write_failed", "unit": null, "message": format!("the preload audit record could not be written: {error}")}));
}

fn push_warning(o: &mut serde_json::Map<String, Value>, warning: Value) {
    match o.get_mut("warnings") {
        Some(Value::Array(w)) => w.push(warning),
        _ => {
            o.insert("warnings".into(), Value::Array(vec![warning]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{missed_but_loaded, preload_unrecorded, recall_unrecorded, resubmission, AuditRow};

    #[test]
    fn a_resubmission_is_the_same_sets_of_names_in_any_order() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(resubmission(r#"["a","b"]"#, r#"["c"]"#, &v(&["b", "a"]), &v(&["c"])).is_ok());
        assert!(resubmission(r#"["a","b"]"#, "[]", &v(&["a", "b", "a"]), &[]).is_ok());
        let e = resubmission(r#"["a","b"]"#, "[]", &v(&["a"]), &[]).unwrap_err();
        assert_eq!(e.code, "audit_token_invalid");
        assert!(resubmission(r#"["a"]"#, "[]", &v(&["a"]), &v(&["c"])).is_err());
    }

    #[test]
    fn closing_a_record_follows_section_21_5_2() {
        use super::{closing, Stored, TOKEN_TTL_MS};
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let open = Stored { created_at: 0, closed: false, loaded_json: r#"["a","b"]"#, used_json: "[]", missed_json: "[]" };
        assert_eq!(closing(&open, 1, &v(&["a"]), &v(&["c"])), Ok(true));
        assert_eq!(closing(&open, 1, &v(&["a"]), &v(&["b"])).unwrap_err().code, "invalid_request");
        assert_eq!(closing(&open, TOKEN_TTL_MS + 1, &v(&["a"]), &[]).unwrap_err().code, "audit_token_expired");
        // closed: the same feedback is a success at any age; other feedback is refused
        let closed = Stored { closed: true, used_json: r#"["a"]"#, missed_json: r#"["c"]"#, ..open };
        assert_eq!(closing(&closed, 3 * TOKEN_TTL_MS, &v(&["a"]), &v(&["c"])), Ok(false));
        assert_eq!(closing(&closed, 1, &v(&["b"]), &[]).unwrap_err().code, "audit_token_invalid");
    }

    #[test]
    fn feedback_names_units() {
        use super::unknown_units;
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let m = r#"{"entries": [{"name": "deploy"}, {"name": "review"}]}"#;
        assert!(unknown_units(Some(m), r#"["old-unit"]"#, &v(&["deploy", "old-unit"]), &v(&["review"])).is_none(), "the manifest's or the recall's");
        let e = unknown_units(Some(m), "[]", &v(&["deploy"]), &v(&["reveiw"])).unwrap();
        assert!(e.code == "invalid_request" && e.message.contains("`missed_chunks` names \"reveiw\""), "{}", e.message);
        assert!(unknown_units(None, r#"["deploy"]"#, &v(&["deploy"]), &[]).is_none());
        assert!(unknown_units(None, "[]", &v(&["deploy"]), &[]).is_some());
    }

    #[test]
    fn a_loaded_unit_is_not_missed() {
        assert!(missed_but_loaded(r#"["a","b"]"#, &["c".into()]).is_none());
        let e = missed_but_loaded(r#"["a","b"]"#, &["b".into(), "c".into()]).unwrap();
        assert!(e.code == "invalid_request" && e.message.starts_with("[\"b\"]"), "{}", e.message);
    }

    #[test]
    fn reads_the_engine_record_and_a_stored_row() {
        let record = r#"{"id":"audi_1","agent_id":"a","heartbeat_id":"h","session_start":1,"intent":"deploy","loaded_chunks":["x","y"],"audit_token":"t","created_at":2,"source":"recall","manifest_version":"v1","chunk_sha256":["s"],"request":{"intent":"deploy"}}"#;
        let r: AuditRow = serde_json::from_str(record).unwrap();
        assert_eq!((r.loaded_chunks.as_slice(), r.used_chunks.len(), r.audit_closed), (["x".to_string(), "y".to_string()].as_slice(), 0, None));
        assert_eq!(r.chunk_sha256, ["s"]);
        // D1 hands TEXT columns back as strings
        let stored = r#"{"id":"audi_1","agent_id":"a","heartbeat_id":"h","session_start":1,"intent":"deploy","loaded_chunks":"[\"x\"]","used_chunks":"[]","missed_chunks":"[\"z\"]","audit_token":"t","audit_closed":3,"created_at":2}"#;
        let r: AuditRow = serde_json::from_str(stored).unwrap();
        assert_eq!((r.loaded_chunks.clone(), r.missed_chunks.clone(), r.audit_closed), (vec!["x".to_string()], vec!["z".to_string()], Some(3)));
        // replies leave out the replay fields
        let out = serde_json::to_value(&r).unwrap();
        assert!(out.get("request").is_none() && out.get("chunk_sha256").is_none() && out["loaded_chunks"][0] == "x");
    }

    #[test]
    fn an_unrecorded_answer_carries_no_token_and_says_why() {
        let mut r = serde_json::json!({"chunks": [], "audit_token": "audi_1", "warnings": ["w"]});
        recall_unrecorded(&mut r, "disk full");
        assert_eq!(r["audit_token"], "");
        assert_eq!(r["warnings"], serde_json::json!(["w", "audit_write_failed: disk full; this recall has no audit_token"]));
        let mut p = serde_json::json!({"units": [], "audit_token": "audi_2"});
        preload_unrecorded(&mut p, "disk full");
        assert!(p.get("audit_token").is_none(), "{p}");
        assert_eq!(p["warnings"][0]["code"], "audit_write_failed");
        assert!(p["warnings"][0]["message"].as_str().is_some_and(|m| m.ends_with("disk full")));
    }

    /// §21.5.2: feedback is taken for 24 hours after the recall, that instant included.
    #[test]
    fn a_token_takes_feedback_for_24_hours_after_its_recall() {
        use super::{closing, Stored};
        let at = 1_777_896_000_000;
        let open = Stored { created_at: at, closed: false, loaded_json: "[]", used_json: "[]", missed_json: "[]" };
        for now in [at, at + 1, at + 86_400_000] {
            assert_eq!(closing(&open, now, &[], &[]), Ok(true), "{now}");
        }
        assert_eq!(closing(&open, at + 86_400_001, &[], &[]).unwrap_err().code, "audit_token_expired");
    }

    /// The window's rows come newest first from the query, at most one more than
    /// [`super::WINDOW_ROWS_MAX`]: oldest first, the oldest past the bound left out and said.
    #[test]
    fn a_window_is_oldest_first_and_says_when_rows_were_left_out() {
        use super::{window, WINDOW_ROWS_MAX};
        let row = |i: usize| serde_json::from_value::<AuditRow>(serde_json::json!({"id": i.to_string(), "agent_id": "a", "heartbeat_id": "", "session_start": 0, "intent": "", "loaded_chunks": [], "audit_token": "", "created_at": i})).unwrap();
        let ids = |rows: &[AuditRow]| rows.iter().map(|r| r.created_at).collect::<Vec<_>>();
        let (rows, truncated) = window((0..3).rev().map(row).collect());
        assert_eq!((ids(&rows), truncated), (vec![0, 1, 2], false));
        assert!(!window(vec![]).1);
        let (rows, truncated) = window((0..WINDOW_ROWS_MAX).rev().map(row).collect());
        assert_eq!((rows.len(), rows[0].created_at, truncated), (WINDOW_ROWS_MAX, 0, false));
        let (rows, truncated) = window((0..=WINDOW_ROWS_MAX).rev().map(row).collect());
        assert_eq!((rows.len(), rows[0].created_at, rows[WINDOW_ROWS_MAX - 1].created_at, truncated), (WINDOW_ROWS_MAX, 1, WINDOW_ROWS_MAX as i64, true));
    }
}
