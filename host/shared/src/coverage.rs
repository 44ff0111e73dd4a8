//! The coverage route's report (§21.8.6): per unit, the publish-time probe run's figures
//! and the rolling 7-day audit counts; `coverage_status`, the miss-rate alert and the
//! guaranteed units' relevance warnings (§21.3.3 rule 4) only for admins (S11: an agent's
//! key sees raw numbers).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::audit::AuditRow;
use crate::time::iso;

/// A unit whose probe hit@10 is below this is `coverage_critical`.
pub const CRITICAL_HIT_AT_10: f64 = 0.4;

/// §21.3.3 rule 4: "implementations SHOULD warn (non-fatal) if a guaranteed unit has an
/// empirical `P(relevant | recall_invoked) < 0.6` based on the discovery audit".
pub const GUARANTEE_MIN_RELEVANCE: f64 = 0.6;
/// Closed recalls that loaded a guaranteed unit before its relevance is judged (fewer
/// say too little to remove a flag an admin approved).
pub const GUARANTEE_MIN_EVIDENCE: u64 = 20;

/// One `coverage_reports` row (§21.5.5 probe set, evaluated at publish).
#[derive(Debug, Clone, Deserialize)]
pub struct CoverageRow {
    pub unit: String,
    pub coverage_pct: f64,
    pub hit_at_10: f64,
    pub probe_count: i64,
    pub evaluated_at: i64,
}

/// What the report is about: the agent's current manifest and its engine.
pub struct Subject<'a> {
    pub agent: &'a str,
    pub manifest_version: &'a str,
    pub manifest_json: &'a str,
    pub ranker_version: &'a str,
}

/// The report over `rows` (the current version's) and `audit` (the last 7 days' rows,
/// summarised by the engine into `metrics`: `{events, supervisor_events, closed_events,
/// recall_at_k, hit_at_k, miss_rate, alert}` at k = 3, and the host's `truncated`: the
/// window had more than [`crate::audit::WINDOW_ROWS_MAX`] rows), in manifest order.
pub fn report(subject: &Subject, rows: Vec<CoverageRow>, audit: &[AuditRow], metrics: &Value, admin: bool) -> Value {
    let by_unit: BTreeMap<String, CoverageRow> = rows.into_iter().map(|r| (r.unit.clone(), r)).collect();
    let mut counts: BTreeMap<&str, [u64; 3]> = BTreeMap::new();
    for r in audit {
        for (i, list) in [&r.loaded_chunks, &r.used_chunks, &r.missed_chunks].into_iter().enumerate() {
            for u in list {
                counts.entry(u.as_str()).or_default()[i] += 1;
            }
        }
    }
    let m: Value = serde_json::from_str(subject.manifest_json).unwrap_or(Value::Null);
    let mut units = Vec::new();
    let mut warnings = Vec::new();
    let mut evaluated_at = 0;
    for e in m["entries"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().unwrap_or_default();
        let c = counts.get(name).copied().unwrap_or_default();
        let mut u = json!({"name": name, "audit_7d": {"loaded": c[0], "used": c[1], "missed": c[2]}});
        if admin && e["guarantee_load"] == true {
            let (relevance, warning) = guarantee_relevance(name, audit);
            u["guarantee_relevance"] = relevance;
            warnings.extend(warning);
        }
        match by_unit.get(name) {
            Some(r) => {
                evaluated_at = evaluated_at.max(r.evaluated_at);
                u["coverage_pct"] = json!(r.coverage_pct);
                u["hit_at_10"] = json!(r.hit_at_10);
                u["probe_count"] = json!(r.probe_count);
                u["last_evaluated_at"] = json!(iso(r.evaluated_at));
                if admin {
                    u["coverage_status"] = json!(if r.hit_at_10 >= CRITICAL_HIT_AT_10 { "ok" } else { "coverage_critical" });
                }
            }
            None => {
                if admin {
                    u["coverage_status"] = json!("not_evaluated");
                }
            }
        }
        units.push(u);
    }
    let mut out = json!({
        "agent_id": subject.agent,
        "manifest_version": subject.manifest_version,
        "embedding_model_version": subject.ranker_version,
        "evaluated_at": iso(evaluated_at),
        "units": units,
        "audit_7d": {"events": metrics["events"], "supervisor_events": metrics["supervisor_events"], "closed_events": metrics["closed_events"], "recall_at_3": metrics["recall_at_k"], "hit_at_3": metrics["hit_at_k"], "miss_rate": metrics["miss_rate"], "truncated": metrics["truncated"].as_bool().unwrap_or(false)},
    });
    if admin {
        out["audit_7d"]["alert"] = metrics["alert"].clone();
        out["warnings"] = Value::Array(warnings);
    }
    out
}

/// A guaranteed unit's empirical `P(relevant | recall_invoked)` (§21.3.3 rule 4): of the
/// closed recalls (the agent said what it used; heartbeat preloads are not recalls) that
/// loaded it, the share that used it; with a `guarantee_low_relevance` warning when that
/// is under [`GUARANTEE_MIN_RELEVANCE`] over [`GUARANTEE_MIN_EVIDENCE`] or more recalls.
fn guarantee_relevance(name: &str, audit: &[AuditRow]) -> (Value, Option<Value>) {
    let closed: Vec<&AuditRow> = audit.iter().filter(|r| r.audit_closed.is_some() && r.source != "task_type_preload" && r.loaded_chunks.iter().any(|c| c == name)).collect();
    let used = closed.iter().filter(|r| r.used_chunks.iter().any(|c| c == name)).count() as u64;
    let n = closed.len() as u64;
    let p = (n > 0).then(|| (used as f64 / n as f64 * 1e6).round() / 1e6);
    let relevance = json!({"closed_recalls": n, "used": used, "p_relevant": p});
    let warning = p.filter(|&p| n >= GUARANTEE_MIN_EVIDENCE && p < GUARANTEE_MIN_RELEVANCE).map(|p| {
        json!({
            "code": "guarantee_low_relevance", "unit": name, "p_relevant": p,
            "message": format!("guaranteed unit {name:?} was used in {used} of the {n} closed recalls that loaded it in the last 7 days (P(relevant) {p:.2} < {GUARANTEE_MIN_RELEVANCE}, §21.3.3 rule 4): consider publishing a version without `guarantee_load` on it"),
        })
    });
    (relevance, warning)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(unit: &str, hit_at_10: f64, at: i64) -> CoverageRow {
        CoverageRow { unit: unit.into(), coverage_pct: 0.8, hit_at_10, probe_count: 5, evaluated_at: at }
    }

    /// §21.3.3 rule 4: the admin report gives each guaranteed unit's used/loaded share over
    /// closed recalls, and warns below 0.6 once there are enough of them.
    #[test]
    fn guaranteed_units_relevance_and_its_warning() {
        let manifest = r#"{"entries": [{"name": "rules", "guarantee_load": true}, {"name": "b"}]}"#;
        let subject = Subject { agent: "eng", manifest_version: "v2", manifest_json: manifest, ranker_version: "r" };
        let rec = |i: usize, used: bool, closed: bool, source: &str| {
            json!({"id": i.to_string(), "agent_id": "eng", "heartbeat_id": format!("h{i}"), "session_start": 0, "intent": "x", "loaded_chunks": ["b", "rules"],
                "used_chunks": if used { json!(["rules"]) } else { json!(["b"]) }, "audit_token": format!("t{i}"), "audit_closed": closed.then_some(5), "created_at": 0, "source": source})
        };
        let metrics = json!({"alert": false});
        let run = |rows: Vec<Value>| report(&subject, vec![row("rules", 0.9, 1)], &serde_json::from_value::<Vec<AuditRow>>(Value::Array(rows)).unwrap(), &metrics, true);
        // 10 of 20 closed recalls used it: 0.5 < 0.6, warned; open records and preloads do not count
        let mut rows: Vec<Value> = (0..20).map(|i| rec(i, i % 2 == 0, true, "recall_instruction")).collect();
        rows.extend((20..40).map(|i| rec(i, false, false, "recall_instruction")));
        rows.extend((40..60).map(|i| rec(i, false, true, "task_type_preload")));
        let r = run(rows.clone());
        assert_eq!(r["units"][0]["guarantee_relevance"], json!({"closed_recalls": 20, "used": 10, "p_relevant": 0.5}));
        assert!(r["units"][1].get("guarantee_relevance").is_none(), "only guaranteed units");
        let w = r["warnings"].as_array().unwrap();
        assert_eq!((w.len(), w[0]["code"].as_str(), w[0]["unit"].as_str()), (1, Some("guarantee_low_relevance"), Some("rules")), "{r}");
        // too few closed recalls to judge: no warning; at 0.6 or more: none either
        assert_eq!(run(rows[..19].to_vec())["warnings"], json!([]));
        let mostly: Vec<Value> = (0..20).map(|i| rec(i, i % 5 != 0, true, "recall_instruction")).collect();
        let r = run(mostly);
        assert_eq!((r["units"][0]["guarantee_relevance"]["p_relevant"].as_f64(), r["warnings"].clone()), (Some(0.8), json!([])));
        assert_eq!(run(vec![])["units"][0]["guarantee_relevance"], json!({"closed_recalls": 0, "used": 0, "p_relevant": null}));
    }

    /// §21.3.3 rule 4 warns below 0.6: 12 of 20 is not warned; recalls that did not load
    /// the unit do not count towards it.
    #[test]
    fn a_relevance_of_exactly_0_6_is_not_warned_and_only_recalls_that_loaded_the_unit_count() {
        let manifest = r#"{"entries": [{"name": "rules", "guarantee_load": true}]}"#;
        let subject = Subject { agent: "eng", manifest_version: "v2", manifest_json: manifest, ranker_version: "r" };
        let rec = |i: usize, loaded: &[&str], used: &[&str]| {
            json!({"id": i.to_string(), "agent_id": "eng", "heartbeat_id": "h", "session_start": 0, "intent": "x", "loaded_chunks": loaded, "used_chunks": used, "audit_token": format!("t{i}"), "audit_closed": 5, "created_at": 0, "source": "recall_instruction"})
        };
        let mut rows: Vec<Value> = (0..20).map(|i| rec(i, &["rules"], if i < 12 { &["rules"] } else { &[] })).collect();
        rows.extend((20..40).map(|i| rec(i, &["b"], &["b"])));
        let audit: Vec<AuditRow> = serde_json::from_value(Value::Array(rows)).unwrap();
        let r = report(&subject, vec![], &audit, &json!({}), true);
        assert_eq!(r["units"][0]["guarantee_relevance"], json!({"closed_recalls": 20, "used": 12, "p_relevant": 0.6}));
        assert_eq!(r["warnings"], json!([]));
    }

    #[test]
    fn per_unit_figures_and_admin_only_status() {
        let manifest = r#"{"entries": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}"#;
        let subject = Subject { agent: "eng", manifest_version: "v2", manifest_json: manifest, ranker_version: "lid-rank-9" };
        let audit: Vec<AuditRow> = serde_json::from_value(json!([
            {"id": "1", "agent_id": "eng", "heartbeat_id": "h", "session_start": 0, "intent": "x", "loaded_chunks": ["a", "b"], "missed_chunks": ["c"], "audit_token": "t1", "created_at": 0},
            {"id": "2", "agent_id": "eng", "heartbeat_id": "h", "session_start": 0, "intent": "y", "loaded_chunks": ["a"], "used_chunks": ["a"], "audit_token": "t2", "created_at": 0},
        ]))
        .unwrap();
        let metrics = json!({"events": 2, "closed_events": 1, "recall_at_k": 0.5, "hit_at_k": 0.5, "miss_rate": 0.5, "alert": false});
        let rows = || vec![row("a", 0.9, 1000), row("b", 0.2, 2000)];
        let admin = report(&subject, rows(), &audit, &metrics, true);
        let units = admin["units"].as_array().unwrap();
        assert_eq!(units.iter().map(|u| u["coverage_status"].as_str().unwrap()).collect::<Vec<_>>(), ["ok", "coverage_critical", "not_evaluated"]);
        assert_eq!(units[0]["audit_7d"], json!({"loaded": 2, "used": 1, "missed": 0}));
        assert_eq!(units[2]["audit_7d"], json!({"loaded": 0, "used": 0, "missed": 1}));
        assert_eq!((admin["evaluated_at"].as_str(), admin["audit_7d"]["alert"].as_bool()), (Some("1970-01-01T00:00:02Z"), Some(false)));
        let agent = report(&subject, rows(), &audit, &metrics, false);
        assert!(agent["units"].as_array().unwrap().iter().all(|u| u.get("coverage_status").is_none()));
        assert!(agent.get("warnings").is_none());
        assert!(agent["audit_7d"].get("alert").is_none());
        assert_eq!(agent["units"][1]["hit_at_10"], 0.2);
    }
}
