//! A manifest publish's coverage verdict and provenance (§21.8.3 Approach A, S7): which
//! units failed the paraphrase gate, the refusal when the gate is not skipped, and what a
//! skipped gate records — the units that would have failed, the admins who signed (two
//! distinct ones when any entry is `guarantee_load`) and the re-certification deadline.

use serde_json::{json, Value};

use crate::time::iso;
use crate::Refusal;

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
            return Ok(json!({"skipped": self.skip, "passed": true}));
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
        let mut signers = self.signers;
        signers.sort();
        signers.dedup();
        if self.cosignature_needed && signers.len() < 2 {
            return Err(Refusal::new(
                403,
                "cosignature_required",
                "skipping the coverage gate on a manifest with guarantee_load entries needs co-signatures of two distinct admins (S7): a second admin must POST the digest below to /v1/agents/{id}/instruction-manifest/cosignatures, then publish again",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn gate<'a>(failing: &'a [Value], skip: bool, signers: &[&str], cosignature_needed: bool) -> Gate<'a> {
        Gate { failing, skip, signers: signers.iter().map(|s| s.to_string()).collect(), cosignature_needed, version: "v2", manifest_sha256: "d", now_ms: 0 }
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
        let failing = [json!({"unit": "b", "coverage_pct": 0.6, "failed_paraphrases": ["x"]})];
        let e = gate(&failing, false, &["admin:a"], false).verdict().unwrap_err();
        assert_eq!((e.status, e.code), (400, "manifest_coverage_failure"));
        assert!(e.message.contains("b (60%)") && e.details["failing_units"][0]["unit"] == "b");
        let e = gate(&failing, true, &["admin:a", "admin:a"], true).verdict().unwrap_err();
        assert_eq!((e.status, e.code, e.details["manifest_sha256"].as_str()), (403, "cosignature_required", Some("d")));
        let ok = gate(&failing, true, &["admin:b", "admin:a"], true).verdict().unwrap();
        assert_eq!(ok, json!({"skipped": true, "would_have_failed": [{"unit": "b", "coverage_pct": 0.6}], "cosigned_by": ["admin:a", "admin:b"], "recertify_by": "1970-01-08T00:00:00Z"}));
        // without guarantee_load one admin may skip
        assert_eq!(gate(&failing, true, &["admin:a"], false).verdict().unwrap()["cosigned_by"], json!(["admin:a"]));
    }
}
