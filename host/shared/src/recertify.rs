//! Re-certification of published manifests through the coverage gate (§21.8.3: "When the
//! deployment's embedding model version changes, all existing manifests MUST be
//! re-certified through this gate"; S10: within 7 days of a gate bypass), as both hosts
//! run it: `lid serve` at start and hourly (and `lid recertify`), the worker on its Cron
//! Trigger. What this module owns: the query that lists the current manifests with what
//! [`crate::publish::recertification_due`] needs, the rows a run writes, and the result
//! each host reports. The gate itself is the engine's; the I/O is each host's.

use serde::Deserialize;
use serde_json::{json, Value};

/// Every current manifest (one per agent, by agent id) with its publish time, the
/// provenance of its manifest fact and the ranker of its latest re-certification (NULL
/// before the first): the rows [`Candidate`] reads.
pub const CANDIDATES_SQL: &str = "SELECT m.agent_id AS agent_id, m.version AS manifest_version, m.created_at AS published_at,
  coalesce(f.provenance, '{}') AS provenance,
  (SELECT c.ranker_version FROM manifest_certifications c WHERE c.agent_id = m.agent_id AND c.manifest_version = m.version
    ORDER BY c.certified_at DESC, c.rowid DESC LIMIT 1) AS last_certified_under
 FROM instruction_manifests m LEFT JOIN instruction_facts f ON f.uri = m.fact_uri
 WHERE m.superseded_at IS NULL ORDER BY m.agent_id";

/// One coverage row of a gate run (`coverage_reports`): parameters `agent_id,
/// manifest_version, unit, coverage_pct, hit_at_10, probe_count, evaluated_at`, from
/// [`coverage_row`]. A publish and a re-certification write the same rows.
pub const INSERT_COVERAGE_SQL: &str = "INSERT OR REPLACE INTO coverage_reports (agent_id, manifest_version, unit, coverage_pct, hit_at_10, probe_count, evaluated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// One re-certification (`manifest_certifications`): parameters `agent_id,
/// manifest_version, ranker_version, reason, passed, failing, certified_at`.
pub const INSERT_CERTIFICATION_SQL: &str = "INSERT OR REPLACE INTO manifest_certifications (agent_id, manifest_version, ranker_version, reason, passed, failing, certified_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// One unit of the engine's coverage report as the row's `(unit, coverage_pct,
/// hit_at_10, probe_count)`.
pub fn coverage_row(u: &Value) -> (String, f64, f64, i64) {
    (u["unit"].as_str().unwrap_or_default().to_string(), u["coverage_pct"].as_f64().unwrap_or(0.0), u["hit_at_10"].as_f64().unwrap_or(0.0), u["paraphrases"].as_i64().unwrap_or(0))
}

/// A row of [`CANDIDATES_SQL`].
#[derive(Debug, Clone, Deserialize)]
pub struct Candidate {
    pub agent_id: String,
    pub manifest_version: String,
    pub published_at: i64,
    pub provenance: String,
    pub last_certified_under: Option<String>,
}

impl Candidate {
    /// Why this manifest must go through the gate again under `ranker_version` at
    /// `now_ms`, if it must ([`crate::publish::recertification_due`]).
    pub fn due(&self, ranker_version: &str, now_ms: i64) -> Option<&'static str> {
        crate::publish::recertification_due(&self.provenance(), self.published_at, self.last_certified_under.as_deref(), ranker_version, now_ms)
    }

    /// The ranker the manifest was last certified under: its latest re-certification's,
    /// else its publish's (`embedding_model_version`).
    pub fn certified_under(&self) -> String {
        self.last_certified_under.clone().or_else(|| self.provenance()["embedding_model_version"].as_str().map(str::to_string)).unwrap_or_default()
    }

    fn provenance(&self) -> Value {
        serde_json::from_str(&self.provenance).unwrap_or(Value::Null)
    }
}

/// What one re-certification found, given the engine's coverage report.
pub struct Outcome {
    /// `{agent_id, manifest_version, reason, certified_under, ranker_version, passed,
    /// failing: [{unit, coverage_pct}]}`: what `lid recertify` prints, the service event's
    /// detail and the worker's log line; the certification row's columns come from it.
    pub result: Value,
}

impl Outcome {
    pub fn new(c: &Candidate, reason: &str, ranker_version: &str, coverage: &Value) -> Outcome {
        let failing: Vec<Value> = crate::publish::failing_units(coverage).iter().map(|f| json!({"unit": f["unit"], "coverage_pct": f["coverage_pct"]})).collect();
        let result = json!({
            "agent_id": c.agent_id, "manifest_version": c.manifest_version, "reason": reason, "certified_under": c.certified_under(),
            "ranker_version": ranker_version, "passed": failing.is_empty(), "failing": failing,
        });
        Outcome { result }
    }

    /// Every unit passed the gate.
    pub fn passed(&self) -> bool {
        self.result["passed"] == true
    }

    /// The `manifest_certifications` row's `failing` column: `[{unit, coverage_pct}]`.
    pub fn failing_json(&self) -> String {
        self.result["failing"].to_string()
    }

    /// The service event a run records: `manifest_recertified` or `recertification_failed`.
    pub fn event_kind(&self) -> &'static str {
        if self.passed() {
            "manifest_recertified"
        } else {
            "recertification_failed"
        }
    }
}

/// One line per re-certified manifest, as `lid recertify` prints them and the services log them.
pub fn line(r: &Value) -> String {
    let failing: Vec<String> = r["failing"].as_array().into_iter().flatten().map(|f| format!("{} ({:.0}%)", f["unit"].as_str().unwrap_or(""), f["coverage_pct"].as_f64().unwrap_or(0.0) * 100.0)).collect();
    let (agent, version, reason) = (r["agent_id"].as_str().unwrap_or(""), r["manifest_version"].as_str().unwrap_or(""), r["reason"].as_str().unwrap_or(""));
    let under = r["certified_under"].as_str().unwrap_or("");
    if failing.is_empty() {
        format!("re-certified {agent} {version} ({reason}; was certified under {under:?})")
    } else {
        format!("FAILED re-certification {agent} {version} ({reason}): {}; it is still served: publish a version whose triggers cover them", failing.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(provenance: Value, last: Option<&str>) -> Candidate {
        Candidate { agent_id: "a".into(), manifest_version: "v1".into(), published_at: 1_000, provenance: provenance.to_string(), last_certified_under: last.map(str::to_string) }
    }

    #[test]
    fn a_candidate_is_due_after_a_ranker_change_or_a_week_after_a_bypass() {
        let c = candidate(json!({"embedding_model_version": "r1"}), None);
        assert_eq!((c.due("r1", 1_000), c.due("r2", 1_000), c.certified_under()), (None, Some("ranker_changed"), "r1".to_string()));
        let recertified = candidate(json!({"embedding_model_version": "r1"}), Some("r2"));
        assert_eq!((recertified.due("r2", 1_000), recertified.certified_under()), (None, "r2".to_string()));
        let bypassed = candidate(json!({"embedding_model_version": "r1", "coverage_gate": {"would_have_failed": [{"unit": "x"}]}}), None);
        let week = crate::publish::RECERTIFY_MS;
        assert_eq!((bypassed.due("r1", 1_000 + week - 1), bypassed.due("r1", 1_000 + week)), (None, Some("coverage_gate_bypassed")));
        // an unreadable provenance counts as certified under no ranker: due
        let broken = Candidate { provenance: "not json".into(), ..candidate(json!({}), None) };
        assert_eq!(broken.due("r1", 0), Some("ranker_changed"));
    }

    #[test]
    fn an_outcome_names_the_failing_units() {
        let c = candidate(json!({"embedding_model_version": "r1"}), None);
        let cov = json!({"units": [{"unit": "good", "passed": true, "coverage_pct": 1.0}, {"unit": "weak", "passed": false, "coverage_pct": 0.4, "failed": ["p"]}]});
        let o = Outcome::new(&c, "ranker_changed", "r2", &cov);
        assert_eq!((o.passed(), o.event_kind(), o.failing_json().as_str()), (false, "recertification_failed", r#"[{"unit":"weak","coverage_pct":0.4}]"#));
        assert_eq!(o.result["certified_under"], "r1");
        assert!(line(&o.result).starts_with("FAILED re-certification a v1 (ranker_changed): weak (40%); it is still served"), "{}", line(&o.result));
        let ok = Outcome::new(&c, "ranker_changed", "r2", &json!({"units": [{"unit": "good", "passed": true}]}));
        assert_eq!((ok.passed(), ok.event_kind(), line(&ok.result)), (true, "manifest_recertified", r#"re-certified a v1 (ranker_changed; was certified under "r1")"#.to_string()));
    }

    /// A unit of the engine's coverage report (its `paraphrases` is the probe count) as the
    /// `coverage_reports` row a gate run writes; what it lacks is zero.
    #[test]
    fn a_coverage_row_takes_the_units_figures_from_the_engine_report() {
        let u = json!({"unit": "deploy", "passed": false, "coverage_pct": 0.75, "hit_at_10": 0.5, "paraphrases": 8, "failed": ["p"]});
        assert_eq!(coverage_row(&u), ("deploy".to_string(), 0.75, 0.5, 8));
        assert_eq!(coverage_row(&json!({"unit": "x"})), ("x".to_string(), 0.0, 0.0, 0));
    }
}
