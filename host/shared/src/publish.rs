//! A manifest publish's coverage verdict and provenance (§21.8.3 Approach A, S7): which
//! units failed the paraphrase gate, the refusal when the gate is not skipped, and what a
//! skipped gate records — the units that would have failed, the admins who signed (two
//! distinct ones when any entry is `guarantee_load`) and the re-certification deadline.

use serde_json::{json, Value};

use crate::time::iso;
use crate::Refusal;

/// The manifest document's fields (§21.2.1).
const MANIFEST_FIELDS: [&str; 8] = ["agent_id", "deployment", "agent_role", "manifest_version", "version", "published_at", "entries", "heartbeat_contract"];

/// What a publish request adds to the manifest document.
const REQUEST_FIELDS: [&str; 3] = ["units", "approvals", "skip_coverage_gate"];
/// The approvals a publish may carry (the engine's `Approvals`).
const APPROVALS: [&str; 3] = ["guarantee_load", "task_types", "force_position"];

/// A `PUT .../instruction-manifest` body (or `lid publish`'s), read: the JSON object, the
/// version, the approvals and whether the coverage gate is skipped; then
/// [`PublishRequest::deployment`] once the agent's current manifest is known.
pub struct PublishRequest<'a> {
    pub obj: &'a serde_json::Map<String, Value>,
    pub version: String,
    pub approvals: Value,
    pub skip: bool,
}

impl<'a> PublishRequest<'a> {
    /// Read `body` for the route's `agent`: the §21.2.1 manifest fields and the request's
    /// own (`units`, `approvals`, `skip_coverage_gate`), each of its type; an unknown
    /// field or the version given twice is refused, as `lid validate` refuses them.
    pub fn read(agent: &str, body: &'a Value) -> Result<Self, Refusal> {
        let Some(obj) = body.as_object() else {
            return Err(Refusal::invalid_request("send the manifest as a JSON object with `manifest_version` and `entries`"));
        };
        if let Some(unknown) = obj.keys().find(|k| !MANIFEST_FIELDS.contains(&k.as_str()) && !REQUEST_FIELDS.contains(&k.as_str())) {
            return Err(Refusal::new(400, "manifest_invalid", format!("unknown field `{unknown}`: a manifest has {} (§21.2.1), and a publish may add {}", MANIFEST_FIELDS.join(", "), REQUEST_FIELDS.join(", "))));
        }
        if obj.contains_key("version") && obj.contains_key("manifest_version") {
            return Err(Refusal::new(400, "manifest_invalid", "the version is given twice, as `manifest_version` and `version`; keep `manifest_version`"));
        }
        for (field, want, ok) in [
            ("agent_id", "a string", Value::is_string as fn(&Value) -> bool),
            ("deployment", "a string", Value::is_string),
            ("manifest_version", "a string such as \"v2\"", Value::is_string),
            ("version", "a string such as \"v2\"", Value::is_string),
            ("published_at", "an RFC 3339 time (the service stamps its own)", Value::is_string),
            ("skip_coverage_gate", "true or false", Value::is_boolean),
            ("approvals", "an object such as {\"guarantee_load\": true}", Value::is_object),
            ("units", "an object of unit name to markdown text", Value::is_object),
        ] {
            if let Some(v) = obj.get(field).filter(|v| !ok(v)) {
                return Err(Refusal::invalid_request(format!("`{field}` must be {want}, not {v}")));
            }
        }
        if let Some(a) = obj.get("agent_id").and_then(Value::as_str) {
            if a != agent {
                return Err(Refusal::invalid_request(format!("the body is for agent {a:?} but the route is for {agent:?}")));
            }
        }
        let version = obj.get("version").or_else(|| obj.get("manifest_version")).and_then(Value::as_str).unwrap_or_default().to_string();
        if version.is_empty() {
            return Err(Refusal::invalid_request("the manifest needs a `manifest_version` (e.g. \"v2\")"));
        }
        let approvals = obj.get("approvals").cloned().unwrap_or(json!({}));
        // a misspelt approval would approve nothing, yet be recorded as granted
        if let Some(k) = approvals.as_object().and_then(|a| a.keys().find(|k| !APPROVALS.contains(&k.as_str()))) {
            let shown: String = k.chars().take(80).collect();
            return Err(Refusal::invalid_request(format!("unknown approval {shown:?}: `approvals` has {} (§21.3.3, §21.1.5)", APPROVALS.join(", "))));
        }
        let skip = obj.get("skip_coverage_gate").and_then(Value::as_bool).unwrap_or(false);
        Ok(PublishRequest { obj, version, approvals, skip })
    }

    /// `manifest` with the `published_at` the body carries, when it carries one: the
    /// service stamps its own publish time, but the host validates this document too, so
    /// that a time that is not RFC 3339 is refused as `lid validate` refuses it.
    pub fn as_sent(&self, manifest: &Value) -> Option<Value> {
        let p = self.obj.get("published_at").and_then(Value::as_str).filter(|p| !p.is_empty())?;
        let mut doc = manifest.clone();
        doc["published_at"] = json!(p);
        Some(doc)
    }

    /// The deployment: the body's, else that of the agent's current manifest.
    pub fn deployment(&self, current: Option<&str>) -> Result<String, Refusal> {
        match (self.obj.get("deployment").and_then(Value::as_str), current) {
            (Some(d), _) | (None, Some(d)) => Ok(d.to_string()),
            (None, None) => Err(Refusal::invalid_request("the first manifest of an agent needs `deployment`")),
        }
    }

    /// The key [`REVIEWED_HORIZON_SQL`] reads for this publish of `agent`: the agent and
    /// the names of the entries whose text the publish reviews (`guarantee_load`,
    /// `force_position: "prepend"`, `always_applicable`; §21.3.3 rules 1 and 5, §21.1.1),
    /// sorted. It comes from the body alone, so it is known before the snapshot is read.
    pub fn reviewed_key(&self, agent: &str) -> String {
        let entries = self.obj.get("entries").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let units: std::collections::BTreeSet<&str> = entries.iter().filter(|e| reviewed(e)).filter_map(|e| e["name"].as_str()).collect();
        json!({"agent": agent, "units": units}).to_string()
    }

    /// The manifest document as published (§21.2): the body's entries under the route's
    /// agent id and `deployment`, stamped with the publish time. `agent_role` and
    /// `heartbeat_contract` (the stub's, §21.1.1) are the body's, else those of the agent's
    /// `previous` manifest (its JSON), as the deployment is: §21.8.3's body carries
    /// neither, and a publish in that shape must not blank the stub's role.
    pub fn manifest(&self, agent: &str, deployment: &str, previous: Option<&str>, now_ms: i64) -> Value {
        let previous: Value = previous.and_then(|p| serde_json::from_str(p).ok()).unwrap_or(Value::Null);
        let field = |name: &str| self.obj.get(name).filter(|v| !v.is_null()).or_else(|| previous.get(name).filter(|v| !v.is_null())).cloned();
        let mut manifest = json!({
            "agent_id": agent,
            "deployment": deployment,
            "agent_role": field("agent_role").unwrap_or(json!("")),
            "manifest_version": self.version,
            "published_at": iso(now_ms),
            "entries": self.obj.get("entries").cloned().unwrap_or(Value::Null),
        });
        if let Some(h) = field("heartbeat_contract") {
            manifest["heartbeat_contract"] = h;
        }
        manifest
    }
}

/// 400 `manifest_entry_invalid` naming every entry whose `fact_uri` has no stored fact
/// (`exists` says whether one is, counting the units sent with the publish), or `None`.
/// Without this the coverage gate would report the unit as never recalled and advise
/// trigger intents, and a skipped gate would publish a manifest recall cannot serve.
pub fn unstored_units(entries: &[Value], exists: impl Fn(&str) -> bool) -> Option<Refusal> {
    let problems: Vec<Value> = entries
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?, e["fact_uri"].as_str().filter(|u| !u.is_empty())?)))
        .filter(|(_, uri)| !exists(uri))
        .map(|(name, uri)| json!({"code": "manifest_entry_invalid", "entry": name, "field": "fact_uri", "message": format!("no fact is stored at {uri}: send the unit's text in `units`, or write it first with PUT …/units/{name}")}))
        .collect();
    entries_refusal(problems, ("names a unit that is not stored", "name units that are not stored"), "")
}

/// 400 `manifest_entry_invalid` naming every entry whose `fact_uri` is a quarantined fact
/// (`quarantined` gives its reason: an attestation failure, §21.4.3), or `None`. Such a
/// fact is never served, and its URI is taken (facts are immutable), so sending its text
/// again cannot bring it back: a new version of the unit or a promotion does.
pub fn quarantined_units(entries: &[Value], agent: &str, quarantined: impl Fn(&str) -> Option<String>) -> Option<Refusal> {
    let problems: Vec<Value> = entries
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?, e["fact_uri"].as_str().filter(|u| !u.is_empty())?)))
        .filter_map(|(name, uri)| quarantined(uri).map(|why| (name, uri, why)))
        .map(|(name, uri, why)| json!({"code": "manifest_entry_invalid", "entry": name, "field": "fact_uri", "message": format!("the fact at {uri} is quarantined ({why}) and is never served: name a new version of the unit in fact_uri (with its text in `units`), or promote it (POST /v1/agents/{agent}/facts/promote)")}))
        .collect();
    entries_refusal(problems, ("names a quarantined fact", "name quarantined facts"), "")
}

/// 400 `manifest_entry_invalid` for `problems` (one per entry, `entry` naming it), or
/// `None` when there are none: "1 entry {one}: a{then}", "N entries {many}: a, b{then}".
fn entries_refusal(problems: Vec<Value>, (one, many): (&str, &str), then: &str) -> Option<Refusal> {
    if problems.is_empty() {
        return None;
    }
    let names: Vec<&str> = problems.iter().filter_map(|p| p["entry"].as_str()).collect();
    Some(Refusal::new(400, "manifest_entry_invalid", format!("{} {}: {}{then}", names.len(), if names.len() == 1 { format!("entry {one}") } else { format!("entries {many}") }, names.join(", "))).with_details(json!({"errors": problems})))
}

/// 400 `manifest_entry_invalid` for entries a service cannot serve: a `path` with no
/// `fact_uri` (§21.2.2 allows it, "relative to the agent's instructions root"). The
/// services keep units as stored facts and have no instructions root, so such a unit
/// would be unavailable to every recall (and fail the coverage gate at 0 %); `path`-only
/// entries are for agent directories (`lid recall AGENT_DIR`). Every such entry is named.
pub fn path_only_entries(entries: &[Value], deployment: &str, agent: &str) -> Option<Refusal> {
    let problems: Vec<Value> = entries
        .iter()
        .filter(|e| e["fact_uri"].as_str().is_none_or(str::is_empty))
        .filter_map(|e| Some((e["name"].as_str()?, e["path"].as_str().filter(|p| !p.is_empty())?)))
        .map(|(name, path)| {
            json!({"code": "manifest_entry_invalid", "entry": name, "field": "fact_uri", "message": format!(
                "entry {name:?} has only a `path` ({path}); the service serves units from stored facts and has no instructions root: give it a `fact_uri` (instruction:{deployment}/{agent}/{name}/v1) and send its text in `units` (`lid publish` sends units/{name}.md)"
            )})
        })
        .collect();
    entries_refusal(problems, ("with only a `path` cannot be served by the service (it keeps units as facts)", "with only a `path` cannot be served by the service (it keeps units as facts)"), "; give each a `fact_uri`")
}

/// A publish by an admin key without `instruction:write`. The manifest is itself an
/// instruction-typed fact, and its text reaches the agent as instructions (`agent_role`
/// and `heartbeat_contract` in the boot stub, every entry's description in the
/// manifest the agent reads), so publishing one needs that capability, as writing a
/// unit does (Spec-13: "Writing instruction-typed facts MUST require explicit
/// instruction:write authority. General write authority is insufficient").
pub fn instruction_write_required() -> Refusal {
    Refusal::new(
        403,
        "instruction_write_required",
        "publishing a manifest writes instruction facts (the manifest itself, whose agent_role, heartbeat_contract and descriptions reach the agent, and any `units` it carries) and needs the `instruction:write` capability (Spec-13); admin authority alone is not enough: publish with a key that holds it (`lid keys create --role admin --cap instruction:write`)",
    )
}

/// 409 `manifest_version_conflict`: `version` of `agent` is already published.
pub fn version_conflict(agent: &str, version: &str) -> Refusal {
    Refusal::new(409, "manifest_version_conflict", format!("version {version:?} of agent {agent:?} is already published; versions are immutable (§21.8.3): publish a new version"))
}

/// An agent's current manifest as `GET .../instruction-manifest` shows it (§21.8.2): the
/// stored manifest document's fields, where it is kept, its size and the ranker ("embedding
/// model") version; `provenance` only for an admin.
pub struct ManifestView<'a> {
    pub agent: &'a str,
    pub manifest_json: &'a str,
    pub version: &'a str,
    pub fact_uri: &'a str,
    pub token_count: i64,
    pub created_at_ms: i64,
    pub ranker_version: &'a str,
    pub provenance: Option<&'a Value>,
}

impl ManifestView<'_> {
    /// The response body; an error only when the stored document is not JSON.
    pub fn response(self) -> Result<Value, serde_json::Error> {
        let m: Value = serde_json::from_str(self.manifest_json)?;
        let mut out = json!({
            "agent_id": self.agent,
            "deployment": m["deployment"],
            "agent_role": m["agent_role"],
            "manifest_version": self.version,
            "fact_uri": self.fact_uri,
            "token_count": self.token_count,
            "entries": m["entries"],
            "last_updated_at": iso(self.created_at_ms),
            "embedding_model_version": self.ranker_version,
        });
        if let Some(p) = self.provenance {
            out["provenance"] = p.clone();
        }
        Ok(out)
    }
}

/// The id of an agent's (`?1`) current `instruction_manifests` row: the head a publish is
/// planned against and checked against again when it commits.
pub const CURRENT_MANIFEST_ID_SQL: &str = "SELECT id FROM instruction_manifests WHERE agent_id = ?1 AND superseded_at IS NULL ORDER BY created_at DESC, rowid DESC LIMIT 1";

/// The newest servable fact row, as text (a D1 guard compares it with a bound string),
/// among the units whose text a publish reviews: `?1` is [`PublishRequest::reviewed_key`],
/// a JSON object naming the agent and those units. A publish reads it before its snapshot
/// and again in its transaction (on D1, a guard in its batch): a unit that the new
/// manifest makes `guarantee_load`, `force_position: "prepend"` or `always_applicable`,
/// written meanwhile, was checked by its write under the manifest before (which let it
/// through unreviewed) and by the publish not at all (the coverage gate, the stubs and the
/// approvals saw its earlier text), so the publish is [`units_moved`]. A write to any other
/// unit while a publish is checked is as if it came just after the publish, and does not
/// stop it: continuous writes to an agent's ordinary units never starve its publishes.
pub const REVIEWED_HORIZON_SQL: &str = "SELECT CAST(coalesce(max(rowid), 0) AS TEXT) AS horizon FROM instruction_facts WHERE agent_id = json_extract(?1, '$.agent') AND quarantine IS NULL AND unit_name IN (SELECT value FROM json_each(?1, '$.units'))";

/// 409 `manifest_version_conflict` (retryable): a unit whose text this publish reviews was
/// written while it was checked ([`REVIEWED_HORIZON_SQL`]); nothing was written.
pub fn units_moved(agent: &str) -> Refusal {
    Refusal::new(409, "manifest_version_conflict", format!("a unit of agent {agent:?} that this manifest makes guarantee_load, force_position \"prepend\" or always_applicable was written while the manifest was being checked; nothing was written: publish again, and it is checked against the units as they are now"))
        .with_details(serde_json::json!({"retryable": true}))
}

/// 409 `manifest_version_conflict` (retryable): another publish of `agent` committed while
/// this one was checked, so it was planned against a manifest that is no longer current;
/// nothing was written (§21.4.1: versions increase monotonically).
pub fn published_concurrently(agent: &str) -> Refusal {
    Refusal::new(409, "manifest_version_conflict", format!("another manifest of agent {agent:?} was published while this one was being checked; nothing was written: read the current version and publish one after it"))
        .with_details(serde_json::json!({"retryable": true}))
}

/// The refusal for an engine validation report (§21.2, §21.9) that is not `ok`: every
/// problem at once, the first one's code (409 for a version conflict, else 400).
pub fn validation_refusal(report: &Value) -> Option<Refusal> {
    if report["ok"].as_bool().unwrap_or(false) {
        return None;
    }
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    let code = errors.first().and_then(|e| e["code"].as_str()).unwrap_or("manifest_invalid").to_string();
    let status = if code == "manifest_version_conflict" { 409 } else { 400 };
    let summary = errors.iter().map(|e| format!("{}{}: {}", e["code"].as_str().unwrap_or(""), e["entry"].as_str().map(|n| format!(" [{n}]")).unwrap_or_default(), e["message"].as_str().unwrap_or(""))).collect::<Vec<_>>().join("; ");
    Some(
        Refusal::new(status, code, format!("manifest rejected ({} problem(s)): {summary}", errors.len()))
            .with_details(json!({"errors": errors, "warnings": report["warnings"], "token_count": report["token_count"]})),
    )
}

/// Re-certification deadline after a coverage-gate bypass (S10).
pub const RECERTIFY_MS: i64 = 7 * 24 * 3600 * 1000;

/// The units of the engine's coverage report (`{"units": [{unit, passed, coverage_pct,
/// failed}]}`) that did not pass, as `{unit, coverage_pct, failed_paraphrases}`.
pub fn failing_units(coverage: &Value) -> Vec<Value> {
    coverage["units"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| !u["passed"].as_bool().unwrap_or(false))
        .map(|u| json!({"unit": u["unit"], "coverage_pct": u["coverage_pct"], "failed_paraphrases": u["failed"]}))
        .collect()
}

/// Why a published manifest must go through the coverage gate again, if it must:
/// `ranker_changed` when the ranker it was last certified under (its latest
/// re-certification `last`, else its provenance's `embedding_model_version`) is not
/// `ranker_version` (§21.8.3: "all existing manifests MUST be re-certified through this
/// gate before the new model version is activated for production recall");
/// `coverage_gate_bypassed` when its publish skipped a failing gate [`RECERTIFY_MS`] ago
/// or more and nothing has re-certified it since (S10).
pub fn recertification_due(provenance: &Value, published_at_ms: i64, last: Option<&str>, ranker_version: &str, now_ms: i64) -> Option<&'static str> {
    let certified_under = last.or_else(|| provenance["embedding_model_version"].as_str()).unwrap_or_default();
    if certified_under != ranker_version {
        return Some("ranker_changed");
    }
    let bypassed = provenance["coverage_gate"]["would_have_failed"].as_array().is_some_and(|f| !f.is_empty());
    (last.is_none() && bypassed && now_ms >= published_at_ms.saturating_add(RECERTIFY_MS)).then_some("coverage_gate_bypassed")
}

/// The digest a publish records and a co-signature names (`manifest_sha256`): SHA-256 of
/// the entries' compact JSON with every object's keys sorted, so the same entries sent
/// by another serializer (keys in another order, other whitespace) have the same digest.
pub fn manifest_digest(entries: &[Value]) -> String {
    use sha2::{Digest, Sha256};
    let mut v = Value::Array(entries.to_vec());
    v.sort_all_objects();
    crate::attest::hex(&Sha256::digest(v.to_string().as_bytes()))
}

/// Whether a publish reviews `entry`'s text: a unit write could not change it alone
/// (`units::check_reviewed`) or it is embedded in the boot stub (`units::changes_stub`).
fn reviewed(entry: &Value) -> bool {
    entry["guarantee_load"] == Value::Bool(true) || entry["force_position"].as_str() == Some("prepend") || entry["always_applicable"] == Value::Bool(true)
}

/// Whether skipping the gate needs a second admin's co-signature: any `guarantee_load` entry.
pub fn needs_cosignature(entries: &[Value]) -> bool {
    entries.iter().any(|e| e["guarantee_load"].as_bool().unwrap_or(false))
}

/// The provenance every publish records, before the gate's part.
pub fn provenance(entity_uri: &str, key_id: &str, now_ms: i64, manifest_sha256: &str, ranker_version: &str, approvals: &Value) -> Value {
    json!({
        "published_by": entity_uri,
        "key_id": key_id,
        "published_at": iso(now_ms),
        "manifest_sha256": manifest_sha256,
        "embedding_model_version": ranker_version,
        "approvals": {"approved_by": entity_uri, "granted": approvals},
    })
}

/// Where a publish's gate stands, given the admins who signed for skipping it.
pub struct Gate<'a> {
    pub failing: &'a [Value],
    pub skip: bool,
    /// The publisher, then any co-signers (for this version and manifest digest).
    pub signers: Vec<String>,
    pub cosignature_needed: bool,
    pub version: &'a str,
    pub manifest_sha256: &'a str,
    pub now_ms: i64,
}

impl Gate<'_> {
    /// The provenance's `coverage_gate` record, or the refusal: 400
    /// `manifest_coverage_failure` when units fail and the gate is not skipped, 403
    /// `cosignature_required` when skipping it needs a second distinct admin.
    pub fn verdict(self) -> Result<Value, Refusal> {
        let failing = self.failing;
        if failing.is_empty() {
            // Nothing was bypassed: the gate ran and passed, so the provenance records no
            // bypass (S7's co-signatures are for a bypass record), only that one was asked.
            return Ok(if self.skip { json!({"skipped": false, "passed": true, "skip_requested": true}) } else { json!({"skipped": false, "passed": true}) });
        }
        if !self.skip {
            return Err(Refusal::new(
                400,
                "manifest_coverage_failure",
                format!(
                    "{} unit(s) failed the paraphrase coverage gate (top-3 for ≥80% of paraphrases): {}; add trigger intents or keywords in the wording agents use, or publish with skip_coverage_gate",
                    failing.len(),
                    failing.iter().map(|f| format!("{} ({:.0}%)", f["unit"].as_str().unwrap_or(""), f["coverage_pct"].as_f64().unwrap_or(0.0) * 100.0)).collect::<Vec<_>>().join(", ")
                ),
            )
            .with_details(json!({"failing_units": failing})));
        }
        // as compared (S7): an identity an older release stored untrimmed is its owner's
        let mut signers: Vec<String> = self.signers.iter().map(|s| s.trim().to_string()).collect();
        signers.sort();
        signers.dedup();
        if self.cosignature_needed && signers.len() < 2 {
            return Err(Refusal::new(
                403,
                "cosignature_required",
                "skipping the coverage gate on a manifest with guarantee_load entries needs co-signatures of two distinct admins (S7): a second admin must POST this error's `details.version` and `details.manifest_sha256` as {\"version\", \"manifest_sha256\"} to /v1/agents/{id}/instruction-manifest/cosignatures (on `lid serve`'s database also `lid cosign AGENT --version V --manifest-sha256 D --db DB`, that admin's key in LID_ADMIN_KEY), then publish again",
            )
            .with_details(json!({"version": self.version, "manifest_sha256": self.manifest_sha256, "failing_units": failing})));
        }
        Ok(json!({
            "skipped": true,
            "would_have_failed": failing.iter().map(|f| json!({"unit": f["unit"], "coverage_pct": f["coverage_pct"]})).collect::<Vec<_>>(),
            "cosigned_by": signers,
            "recertify_by": iso(self.now_ms + RECERTIFY_MS),
        }))
    }
}

/// A co-signature request (`POST /v1/agents/{id}/instruction-manifest/cosignatures`,
/// S7): the agent id checked as every write checks it, then `version` and the 64-hex
/// `manifest_sha256` from the `cosignature_required` error of the publish.
pub fn cosignature_request<'a>(agent: &str, body: &'a Value) -> Result<(&'a str, &'a str), Refusal> {
    crate::ids::check_agent_id(agent)?;
    if let Some(k) = body.as_object().and_then(|o| o.keys().find(|k| !["version", "manifest_sha256"].contains(&k.as_str()))) {
        return Err(Refusal::invalid_request(format!("unknown field `{k}`: a co-signature is {{\"version\", \"manifest_sha256\"}}")));
    }
    let version = body.get("version").and_then(Value::as_str).unwrap_or_default();
    let digest = body.get("manifest_sha256").and_then(Value::as_str).unwrap_or_default();
    // lowercase, as the publish computes and compares it: an uppercase digest would be
    // stored and never match
    if version.is_empty() || digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(Refusal::invalid_request("send {\"version\", \"manifest_sha256\"} with the digest as 64 lowercase hex digits: it is in the `cosignature_required` error of the publish"));
    }
    Ok((version, digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_naming_quarantined_facts_are_refused_each_with_its_reason() {
        let entries = vec![
            json!({"name": "a", "fact_uri": "instruction:d/x/a/v1"}),
            json!({"name": "b", "fact_uri": "instruction:d/x/b/v2"}),
            json!({"name": "c", "path": "units/c.md"}),
        ];
        assert_eq!(quarantined_units(&entries, "x", |_| None), None);
        let r = quarantined_units(&entries, "x", |u| u.ends_with("/b/v2").then(|| "attestation_invalid".to_string())).unwrap();
        assert_eq!((r.status, r.code.as_ref()), (400, "manifest_entry_invalid"));
        assert_eq!(r.message, "1 entry names a quarantined fact: b");
        let e = &r.details["errors"][0];
        assert_eq!((e["entry"].as_str(), e["field"].as_str()), (Some("b"), Some("fact_uri")));
        assert!(e["message"].as_str().unwrap().contains("quarantined (attestation_invalid)") && e["message"].as_str().unwrap().contains("/v1/agents/x/facts/promote"), "{e}");
    }

    #[test]
    fn a_cosignature_names_the_digest_in_lowercase() {
        let d = "ab".repeat(32);
        assert_eq!(cosignature_request("eng", &json!({"version": "v2", "manifest_sha256": d})).unwrap(), ("v2", d.as_str()));
        // the digest a co-signature names does not depend on key order or whitespace
        let a: Vec<Value> = serde_json::from_str(r#"[{"name": "a", "load_triggers": {"intents": ["x"], "task_types": []}, "guarantee_load": true}]"#).unwrap();
        let b: Vec<Value> = serde_json::from_str(r#"[{"guarantee_load":true,"load_triggers":{"task_types":[],"intents":["x"]},"name":"a"}]"#).unwrap();
        assert_eq!(manifest_digest(&a), manifest_digest(&b));
        assert_ne!(manifest_digest(&a), manifest_digest(&b[..0]));
        assert_eq!(manifest_digest(&a).len(), 64);
        let extra = cosignature_request("eng", &json!({"version": "v2", "manifest_sha256": d, "signer": "bob"})).unwrap_err();
        assert!(extra.message.starts_with("unknown field `signer`"), "{}", extra.message);
        for bad in [d.to_uppercase(), "ab".repeat(31), format!("{}zz", "ab".repeat(31))] {
            let e = cosignature_request("eng", &json!({"version": "v2", "manifest_sha256": bad})).unwrap_err();
            assert!(e.message.contains("64 lowercase hex digits"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn publish_requests() {
        let body = json!({"version": "v2", "entries": [{"name": "a"}], "approvals": {"guarantee_load": true}, "skip_coverage_gate": true, "agent_role": "Eng"});
        let r = PublishRequest::read("eng", &body).unwrap();
        assert_eq!((r.version.as_str(), r.deployment(Some("acme")).unwrap().as_str(), r.skip), ("v2", "acme", true));
        assert_eq!(r.approvals, json!({"guarantee_load": true}));
        assert_eq!(r.deployment(None).unwrap_err().message, "the first manifest of an agent needs `deployment`");
        assert_eq!(
            r.manifest("eng", "acme", None, 0).to_string(),
            r#"{"agent_id":"eng","deployment":"acme","agent_role":"Eng","manifest_version":"v2","published_at":"1970-01-01T00:00:00Z","entries":[{"name":"a"}]}"#
        );
        let with_hb = json!({"manifest_version": "v1", "deployment": "d", "heartbeat_contract": {"x": 1}});
        let r = PublishRequest::read("eng", &with_hb).unwrap();
        assert_eq!((r.deployment(Some("old")).unwrap().as_str(), r.skip, r.manifest("eng", "d", None, 0)["heartbeat_contract"]["x"].as_i64()), ("d", false, Some(1)));
        // A body without a role or heartbeat contract (§21.8.3's shape) keeps the previous
        // version's; a body that sets them wins.
        let previous = r#"{"agent_id":"eng","agent_role":"Release Engineer","heartbeat_contract":"instruction:d/eng/heartbeat/v1","entries":[]}"#;
        let bare = PublishRequest::read("eng", &json!({"version": "v3", "entries": []})).unwrap().manifest("eng", "d", Some(previous), 0);
        assert_eq!((bare["agent_role"].as_str(), bare["heartbeat_contract"].as_str()), (Some("Release Engineer"), Some("instruction:d/eng/heartbeat/v1")));
        assert_eq!(r.manifest("eng", "d", Some(previous), 0)["heartbeat_contract"]["x"].as_i64(), Some(1));
        let first = PublishRequest::read("eng", &json!({"version": "v1", "entries": []})).unwrap().manifest("eng", "d", None, 0);
        assert_eq!((first["agent_role"].as_str(), first.get("heartbeat_contract")), (Some(""), None));
        for (bad, code, needle) in [
            (json!([1]), "invalid_request", "JSON object"),
            (json!({"agent_id": "other", "version": "v1"}), "invalid_request", "for agent \"other\""),
            (json!({"entries": []}), "invalid_request", "needs a `manifest_version`"),
            (json!({"manifest_version": "v1", "bogus": 1}), "manifest_invalid", "`bogus`"),
            (json!({"manifest_version": "v9", "version": "v2"}), "manifest_invalid", "given twice"),
            (json!({"manifest_version": 5}), "invalid_request", "`manifest_version` must be a string"),
            (json!({"manifest_version": "v1", "skip_coverage_gate": "yes"}), "invalid_request", "`skip_coverage_gate` must be true or false"),
            (json!({"manifest_version": "v1", "approvals": "all"}), "invalid_request", "`approvals` must be an object"),
            (json!({"manifest_version": "v1", "approvals": {"guarantee_load": true, "force_positon": ["a"]}}), "invalid_request", "unknown approval \"force_positon\""),
            (json!({"manifest_version": "v1", "deployment": 5}), "invalid_request", "`deployment` must be a string"),
            (json!({"manifest_version": "v1", "units": []}), "invalid_request", "`units` must be an object"),
        ] {
            let e = PublishRequest::read("eng", &bad).err().unwrap();
            assert_eq!((e.status, e.code.as_ref()), (400, code), "{bad}");
            assert!(e.message.contains(needle), "{}", e.message);
        }
        assert_eq!(version_conflict("eng", "v1").status, 409);
        // a published_at is validated as sent, then replaced by the service's stamp
        let sent = json!({"manifest_version": "v1", "published_at": "yesterday"});
        let r = PublishRequest::read("eng", &sent).unwrap();
        let m = r.manifest("eng", "d", None, 0);
        assert_eq!((m["published_at"].as_str(), r.as_sent(&m).map(|d| d["published_at"].clone())), (Some("1970-01-01T00:00:00Z"), Some(json!("yesterday"))));
        assert!(PublishRequest::read("eng", &with_hb).unwrap().as_sent(&m).is_none());
    }

    #[test]
    fn entries_must_name_stored_units() {
        let entries = [json!({"name": "a", "fact_uri": "instruction:d/x/a/v1"}), json!({"name": "b", "fact_uri": "instruction:d/x/b/v1"}), json!({"name": "c", "path": "c.md"})];
        assert!(unstored_units(&entries, |_| true).is_none());
        let e = unstored_units(&entries, |u| u.ends_with("/a/v1")).unwrap();
        assert_eq!((e.status, e.code.as_ref()), (400, "manifest_entry_invalid"));
        assert_eq!(e.details["errors"][0]["entry"], "b");
        assert!(e.message.contains("1 entry") && e.message.ends_with(": b"), "{}", e.message);
    }

    #[test]
    fn validation_reports() {
        assert!(validation_refusal(&json!({"ok": true})).is_none());
        let report = json!({"ok": false, "errors": [{"code": "manifest_version_conflict", "message": "older"}, {"code": "manifest_entry_invalid", "entry": "a", "message": "bad"}], "token_count": 12});
        let e = validation_refusal(&report).unwrap();
        assert_eq!((e.status, e.code.as_ref()), (409, "manifest_version_conflict"));
        assert_eq!(e.message, "manifest rejected (2 problem(s)): manifest_version_conflict: older; manifest_entry_invalid [a]: bad");
        assert_eq!(e.details["token_count"], 12);
        let e = validation_refusal(&json!({"ok": false})).unwrap();
        assert_eq!((e.status, e.code.as_ref()), (400, "manifest_invalid"));
    }

    fn gate<'a>(failing: &'a [Value], skip: bool, signers: &[&str], cosignature_needed: bool) -> Gate<'a> {
        Gate { failing, skip, signers: signers.iter().map(|s| s.to_string()).collect(), cosignature_needed, version: "v2", manifest_sha256: "d", now_ms: 0 }
    }

    #[test]
    fn recertification_is_due_on_a_new_ranker_or_a_week_after_a_bypass() {
        let passed = json!({"embedding_model_version": "r2", "coverage_gate": {"skipped": false, "passed": true}});
        assert_eq!(recertification_due(&passed, 0, None, "r2", RECERTIFY_MS * 9), None);
        assert_eq!(recertification_due(&passed, 0, None, "r3", 1), Some("ranker_changed"));
        assert_eq!(recertification_due(&passed, 0, Some("r3"), "r3", 1), None, "re-certified under r3 already");
        assert_eq!(recertification_due(&json!(null), 0, None, "r3", 1), Some("ranker_changed"), "no provenance: never certified under r3");
        let bypassed = json!({"embedding_model_version": "r2", "coverage_gate": {"skipped": true, "would_have_failed": [{"unit": "b", "coverage_pct": 0.6}]}});
        assert_eq!(recertification_due(&bypassed, 1000, None, "r2", 1000 + RECERTIFY_MS - 1), None, "not yet a week");
        assert_eq!(recertification_due(&bypassed, 1000, None, "r2", 1000 + RECERTIFY_MS), Some("coverage_gate_bypassed"));
        assert_eq!(recertification_due(&bypassed, 1000, Some("r2"), "r2", 1000 + RECERTIFY_MS), None, "already re-certified");
        let skipped_but_passing = json!({"embedding_model_version": "r2", "coverage_gate": {"skipped": true, "passed": true}});
        assert_eq!(recertification_due(&skipped_but_passing, 0, None, "r2", RECERTIFY_MS * 9), None);
    }

    #[test]
    fn path_only_entries_are_named_with_the_fact_uri_to_give() {
        let entries = [json!({"name": "a", "fact_uri": "instruction:acme/eng/a/v1", "path": "units/a.md"}), json!({"name": "b", "fact_uri": null, "path": "units/b.md"}), json!({"name": "c", "fact_uri": "", "path": "legacy/c.md"})];
        let r = path_only_entries(&entries, "acme", "eng").unwrap();
        assert_eq!((r.status, &*r.code), (400, "manifest_entry_invalid"));
        assert!(r.message.contains("b, c"), "{}", r.message);
        let errors = r.details["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 2);
        assert!(errors[0]["message"].as_str().unwrap().contains("instruction:acme/eng/b/v1"), "{}", errors[0]);
        assert!(path_only_entries(&entries[..1], "acme", "eng").is_none(), "a fact_uri with a fallback path is served");
    }

    #[test]
    fn failing_units_from_the_engine_report() {
        let cov = json!({"units": [{"unit": "a", "passed": true, "coverage_pct": 1.0}, {"unit": "b", "passed": false, "coverage_pct": 0.6, "failed": ["x"]}]});
        assert_eq!(failing_units(&cov), [json!({"unit": "b", "coverage_pct": 0.6, "failed_paraphrases": ["x"]})]);
        assert!(failing_units(&json!({})).is_empty());
        assert!(needs_cosignature(&[json!({"guarantee_load": false}), json!({"guarantee_load": true})]));
        assert!(!needs_cosignature(&[json!({"name": "a"})]));
    }

    #[test]
    fn verdicts() {
        assert_eq!(gate(&[], false, &["admin:a"], true).verdict().unwrap(), json!({"skipped": false, "passed": true}));
        // a skip asked for on a passing gate bypasses nothing: no bypass is recorded, so one
        // admin suffices even with guarantee_load entries (S7 is about bypass records)
        assert_eq!(gate(&[], true, &["admin:a"], true).verdict().unwrap(), json!({"skipped": false, "passed": true, "skip_requested": true}));
        let failing = [json!({"unit": "b", "coverage_pct": 0.6, "failed_paraphrases": ["x"]})];
        let e = gate(&failing, false, &["admin:a"], false).verdict().unwrap_err();
        assert_eq!((e.status, e.code.as_ref()), (400, "manifest_coverage_failure"));
        assert!(e.message.contains("b (60%)") && e.details["failing_units"][0]["unit"] == "b");
        let e = gate(&failing, true, &["admin:a", "admin:a"], true).verdict().unwrap_err();
        assert_eq!((e.status, e.code.as_ref(), e.details["manifest_sha256"].as_str()), (403, "cosignature_required", Some("d")));
        let ok = gate(&failing, true, &["admin:b", "admin:a"], true).verdict().unwrap();
        assert_eq!(ok, json!({"skipped": true, "would_have_failed": [{"unit": "b", "coverage_pct": 0.6}], "cosigned_by": ["admin:a", "admin:b"], "recertify_by": "1970-01-08T00:00:00Z"}));
        // without guarantee_load one admin may skip
        assert_eq!(gate(&failing, true, &["admin:a"], false).verdict().unwrap()["cosigned_by"], json!(["admin:a"]));
    }

    /// The units whose text a publish reviews (§21.3.3 rules 1 and 5, §21.1.1): the key
    /// [`REVIEWED_HORIZON_SQL`] reads names exactly them, sorted and each once.
    #[test]
    fn the_reviewed_key_names_the_guaranteed_prepended_and_always_applicable_units_sorted() {
        let body = json!({"manifest_version": "v2", "entries": [
            {"name": "rules", "guarantee_load": true},
            {"name": "notes", "guarantee_load": false, "force_position": "append", "always_applicable": false},
            {"name": "first", "force_position": "prepend"},
            {"name": "style", "always_applicable": true},
            {"name": "loose", "guarantee_load": "true", "always_applicable": 1},
            {"name": "rules", "guarantee_load": true},
        ]});
        let r = PublishRequest::read("eng", &body).unwrap();
        assert_eq!(r.reviewed_key("eng"), r#"{"agent":"eng","units":["first","rules","style"]}"#);
        let plain = json!({"manifest_version": "v2", "entries": [{"name": "notes"}]});
        assert_eq!(PublishRequest::read("eng", &plain).unwrap().reviewed_key("eng"), r#"{"agent":"eng","units":[]}"#);
    }

    /// §21.8.2: the current manifest as `GET …/instruction-manifest` shows it; the
    /// provenance only when the host passes it (an admin's read).
    #[test]
    fn the_manifest_view_shows_the_stored_document_and_the_provenance_only_when_given() {
        let stored = r#"{"agent_id":"eng","deployment":"acme","agent_role":"Release Engineer","manifest_version":"v3","published_at":"x","entries":[{"name":"a"}]}"#;
        let view = |manifest_json, provenance| ManifestView { agent: "eng", manifest_json, version: "v3", fact_uri: "instruction:acme/eng/manifest/v3", token_count: 840, created_at_ms: 1_777_896_000_000, ranker_version: "r2", provenance };
        assert_eq!(
            view(stored, None).response().unwrap(),
            json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Release Engineer", "manifest_version": "v3", "fact_uri": "instruction:acme/eng/manifest/v3",
                "token_count": 840, "entries": [{"name": "a"}], "last_updated_at": "2026-05-04T12:00:00Z", "embedding_model_version": "r2"})
        );
        let p = json!({"published_by": "admin:a"});
        assert_eq!(view(stored, Some(&p)).response().unwrap()["provenance"], p);
        assert!(view("not json", None).response().is_err());
    }

    #[test]
    fn the_provenance_records_who_published_what_under_which_ranker() {
        let approvals = json!({"guarantee_load": true});
        assert_eq!(
            provenance("admin:alice", "key_01", 0, "d1", "r2", &approvals),
            json!({"published_by": "admin:alice", "key_id": "key_01", "published_at": "1970-01-01T00:00:00Z", "manifest_sha256": "d1", "embedding_model_version": "r2",
                "approvals": {"approved_by": "admin:alice", "granted": {"guarantee_load": true}}})
        );
    }
}
