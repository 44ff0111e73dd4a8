//! Task-type preloads (§21.1.5): the units whose `required_by_task_types` contain the
//! (already verified) wake reason, in manifest order, with no scoring.
//!
//! A missing fact falls back to `path`; otherwise a `preload_unit_unavailable` warning,
//! or a fatal error for a `guarantee_load` unit (rule 4). Stub + preloads over 2000
//! tokens gives `preload_budget_warning` (rule 5); nothing is ever dropped.

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::manifest::Manifest;
use crate::recall::RecallContext;
use crate::store::{AuditSink, Facts};

/// §21.1.5 rule 5 threshold for boot stub + preloads.
pub const PRELOAD_BUDGET: usize = 2000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreloadUnit {
    pub name: String,
    pub fact_uri: String,
    pub content: String,
    pub tokens: u32,
    pub version: String,
    pub valid_until: Option<String>,
    /// `task_type_preload`, or `fallback_path` when read from `path` (§21.1.5 rule 4).
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreloadWarning {
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preload {
    pub wake_reason: String,
    pub units: Vec<PreloadUnit>,
    pub total_tokens: u32,
    /// Body-plus-frontmatter tokens of the boot stub the preloads follow.
    pub stub_tokens: u32,
    pub warnings: Vec<PreloadWarning>,
    /// Token of the audit record written for this preload (empty when not audited).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub audit_token: String,
}

/// Compute the preloads for a verified `wake_reason`. `stub_tokens` is the token count of
/// the stub delivered before them (for the rule 5 budget check).
pub fn preload(m: &Manifest, facts: &dyn Facts, wake_reason: &str, stub_tokens: u32) -> Result<Preload, EngineError> {
    let mut units = Vec::new();
    let mut warnings = Vec::new();
    for e in m.entries.iter().filter(|e| e.required_by_task_types.iter().any(|t| t == wake_reason)) {
        match crate::recall::resolve_unit(m, e, facts)? {
            Some(r) => {
                let tokens = r.fact.tokens.unwrap_or_else(|| crate::tokens::count(&r.fact.content) as u32);
                units.push(PreloadUnit {
                    name: e.name.clone(),
                    // as recall names it: the fact read, or for content read from `path`
                    // (§21.6.1) the entry's own URI, whatever the source says
                    fact_uri: if r.source == "stigmem" { r.fact.uri.clone() } else { e.fact_uri.clone().unwrap_or_default() },
                    content: r.fact.content,
                    tokens,
                    version: r.fact.version,
                    valid_until: r.fact.valid_until,
                    source: if r.source == "fallback_path" { "fallback_path".into() } else { "task_type_preload".into() },
                });
            }
            None if e.guarantee_load => return Err(EngineError::PreloadUnitUnavailable { unit: e.name.clone() }),
            None => warnings.push(PreloadWarning {
                code: "preload_unit_unavailable".into(),
                unit: Some(e.name.clone()),
                message: format!("preload unit {:?} could not be read from its fact or path; the heartbeat continues without it (§21.1.5 rule 4)", e.name),
            }),
        }
    }
    let total_tokens: u32 = units.iter().map(|u| u.tokens).sum();
    warnings.extend(budget_warning(stub_tokens, total_tokens, ""));
    Ok(Preload { wake_reason: wake_reason.to_string(), units, total_tokens, stub_tokens, warnings, audit_token: String::new() })
}

/// §21.1.5 rule 5: `preload_budget_warning` when the stub and the preloads delivered come
/// to more than [`PRELOAD_BUDGET`] tokens. `dropped` says what was not delivered (a boot
/// context's task section budget); empty, the warning says nothing was dropped.
pub fn budget_warning(stub_tokens: u32, total_tokens: u32, dropped: &str) -> Option<PreloadWarning> {
    let sum = stub_tokens.saturating_add(total_tokens);
    (sum as usize > PRELOAD_BUDGET).then(|| PreloadWarning {
        code: "preload_budget_warning".into(),
        unit: None,
        message: format!(
            "boot stub ({stub_tokens}) + preloads ({total_tokens}) = {sum} tokens, over the {PRELOAD_BUDGET}-token target (§21.1.5 rule 5); {}",
            if dropped.is_empty() { "nothing was dropped" } else { dropped }
        ),
    })
}

/// [`preload`], then one audit record with `source: task_type_preload` (§21.1.5 rule 3):
/// the intent is `wake_reason:{reason}`, `loaded_chunks` the preloaded units and
/// `warnings` the preload's warnings. A failed append is reported as a
/// `audit_write_failed` warning; the preloads are still returned. When a `guarantee_load`
/// unit is unavailable the heartbeat is aborted with that error, and it is written to
/// the audit too, in a record that loads nothing (rule 4: "in all cases the warning or
/// error MUST be written").
pub fn preload_audited(m: &Manifest, facts: &dyn Facts, audit: &dyn AuditSink, wake_reason: &str, stub_tokens: u32, ctx: &RecallContext) -> Result<Preload, EngineError> {
    let (mut p, ids) = preload_checked(m, facts, audit, wake_reason, stub_tokens, ctx)?;
    record_delivered(m, &mut p, &ids, ctx, audit);
    Ok(p)
}

/// [`preload`] for a heartbeat or a boot context, before anything is delivered: the
/// `wake_reason_unregistered` warning added, and an aborted preload (a `guarantee_load`
/// unit unavailable) written to the audit as [`preload_audited`] says. The preloads that
/// are then delivered are recorded with [`record_delivered`], under these ids.
pub fn preload_checked(m: &Manifest, facts: &dyn Facts, audit: &dyn AuditSink, wake_reason: &str, stub_tokens: u32, ctx: &RecallContext) -> Result<(Preload, crate::audit::Ids), EngineError> {
    let ids = crate::audit::Ids::new(ctx.now_ms, &ctx.entropy);
    let mut p = match preload(m, facts, wake_reason, stub_tokens) {
        Ok(p) => p,
        Err(EngineError::PreloadUnitUnavailable { unit }) => {
            let e = EngineError::PreloadUnitUnavailable { unit: unit.clone() };
            let error = PreloadWarning { code: e.code().to_string(), unit: Some(unit), message: e.to_string() };
            let aborted = Preload { wake_reason: wake_reason.to_string(), units: vec![], total_tokens: 0, stub_tokens, warnings: vec![], audit_token: String::new() };
            // Best effort, as every audit write: the heartbeat is aborted either way.
            let _ = append(&record(m, &aborted, &ids, ctx, Some(error)), audit);
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    // A reason some entry names was admitted by the registry the manifest was published
    // under (the caller may not know a deployment's own list), so it is not flagged.
    let named = m.entries.iter().any(|e| e.required_by_task_types.iter().any(|t| t == wake_reason));
    if let Some(w) = unregistered(wake_reason, ctx.wake_reasons.as_deref()).filter(|_| !named) {
        p.warnings.insert(0, w);
    }
    Ok((p, ids))
}

/// The audit record of the preloads `p` delivers (its `units`: §21.5.1, `loaded_chunks`
/// is what was returned), with `source: task_type_preload`; sets `p.audit_token`, or adds
/// an `audit_write_failed` warning when the append fails (the preloads are still served).
pub fn record_delivered(m: &Manifest, p: &mut Preload, ids: &crate::audit::Ids, ctx: &RecallContext, audit: &dyn AuditSink) {
    match append(&record(m, p, ids, ctx, None), audit) {
        Ok(()) => p.audit_token = ids.audit_token.clone(),
        Err(e) => p.warnings.push(PreloadWarning { code: "audit_write_failed".into(), unit: None, message: format!("the preload audit record could not be written: {e}") }),
    }
}

/// A `wake_reason_unregistered` warning when `wake_reason` is not one of the deployment's
/// (`registered`, else the defaults). Publishing admits only registered wake reasons
/// into `required_by_task_types` (§21.2, `task_type_unknown`), so such a reason preloads
/// nothing; the warning says why, instead of an empty answer that looks like a quiet one
/// (a control plane's new event type, or `issue-assigned` for `issue_assigned`).
fn unregistered(wake_reason: &str, registered: Option<&[String]>) -> Option<PreloadWarning> {
    let registered = crate::manifest::registered_wake_reasons(registered);
    (!registered.iter().any(|w| w == wake_reason)).then(|| PreloadWarning {
        code: "wake_reason_unregistered".into(),
        unit: None,
        message: format!("wake reason {wake_reason:?} is not registered, so no unit is preloaded for it (§21.1.5); registered: {}", registered.join(", ")),
    })
}

fn append(record: &crate::audit::AuditRecord, audit: &dyn AuditSink) -> Result<(), String> {
    serde_json::to_string(record).map_err(|e| e.to_string()).and_then(|j| audit.append(&j))
}

/// The audit record of a preload (§21.1.5 rule 3), or of one aborted by `error`.
fn record(m: &Manifest, p: &Preload, ids: &crate::audit::Ids, ctx: &RecallContext, error: Option<PreloadWarning>) -> crate::audit::AuditRecord {
    let wake_reason = &p.wake_reason;
    crate::audit::AuditRecord {
        id: ids.event_id.clone(),
        agent_id: m.agent_id.clone(),
        heartbeat_id: ctx.heartbeat_id.clone(),
        session_start: ctx.session_start_ms.unwrap_or(ctx.now_ms),
        caller: ctx.caller.clone(),
        corpus_key: ctx.corpus_key.clone().unwrap_or_default(),
        intent: format!("wake_reason:{wake_reason}"),
        loaded_chunks: p.units.iter().map(|u| u.name.clone()).collect(),
        used_chunks: vec![],
        missed_chunks: vec![],
        audit_token: ids.audit_token.clone(),
        audit_closed: None,
        created_at: ctx.now_ms,
        source: "task_type_preload".into(),
        manifest_version: m.manifest_version.clone(),
        chunk_sha256: p.units.iter().map(|u| crate::store::Fact { content: u.content.clone(), ..Default::default() }.content_sha256()).collect(),
        assembly_sha256: String::new(),
        request: None,
        content_served: vec![],
        content_sha256: String::new(),
        warnings: p.warnings.clone(),
        error,
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{Fact, MemoryFacts};

    use crate::store::Records;

    /// §21.1.5 rule 4: "in all cases the warning or error MUST be written to the
    /// `instruction_audit` table (not only local log)": a missing preload's warning is in
    /// the heartbeat's record, and a missing guaranteed one aborts the heartbeat with an
    /// error that is recorded too.
    #[test]
    fn preload_warnings_and_the_aborting_error_reach_the_audit() {
        let entry = |name: &str, guaranteed: bool| {
            serde_json::json!({"name": name, "description": "A unit.", "required_by_task_types": ["issue_assigned"], "guarantee_load": guaranteed,
                "load_triggers": {"intents": [], "keywords": [], "task_types": []}, "fact_uri": format!("instruction:acme/eng/{name}/v1"), "path": null})
        };
        let manifest = |missing_guaranteed: bool| {
            let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v3", "entries": [entry("present", false), entry("missing", missing_guaranteed)]});
            crate::manifest::parse(&m.to_string()).unwrap()
        };
        let mut facts = MemoryFacts::new();
        facts.insert(Fact { uri: "instruction:acme/eng/present/v1".into(), content: "Check out the issue first.".into(), version: "v1".into(), ..Fact::default() });
        let ctx = crate::recall::RecallContext::default();

        let audit = Records(Default::default());
        let p = super::preload_audited(&manifest(false), &facts, &audit, "issue_assigned", 0, &ctx).unwrap();
        assert_eq!(p.warnings.len(), 1);
        let rec: crate::audit::AuditRecord = serde_json::from_str(&audit.0.borrow()[0]).unwrap();
        assert_eq!(rec.loaded_chunks, ["present"]);
        assert_eq!(rec.warnings, p.warnings, "the warning is in the audit record");
        assert_eq!(rec.warnings[0].unit.as_deref(), Some("missing"));
        assert!(rec.error.is_none());

        let audit = Records(Default::default());
        let err = super::preload_audited(&manifest(true), &facts, &audit, "issue_assigned", 0, &ctx).unwrap_err();
        assert_eq!(err.code(), "preload_unit_unavailable");
        let rows = audit.0.borrow();
        assert_eq!(rows.len(), 1, "the aborted heartbeat is recorded");
        let rec: crate::audit::AuditRecord = serde_json::from_str(&rows[0]).unwrap();
        let error = rec.error.expect("the error is in the record");
        assert_eq!((error.code.as_str(), error.unit.as_deref()), ("preload_unit_unavailable", Some("missing")));
        assert!(rec.loaded_chunks.is_empty(), "nothing was delivered");
        assert_eq!((rec.source.as_str(), rec.intent.as_str(), rec.manifest_version.as_str()), ("task_type_preload", "wake_reason:issue_assigned", "v3"));
    }

    /// A wake reason outside the deployment's registered ones preloads nothing, and says
    /// so first among the warnings (and in the audit record); the deployment's own list,
    /// when the host sends one, replaces the defaults.
    #[test]
    fn an_unregistered_wake_reason_is_named_in_a_warning() {
        let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1", "entries": [
            {"name": "triage", "description": "Triage.", "required_by_task_types": ["issue_assigned"], "guarantee_load": false,
             "load_triggers": {"intents": [], "keywords": [], "task_types": []}, "fact_uri": "instruction:acme/eng/triage/v1", "path": null}]});
        let m = crate::manifest::parse(&m.to_string()).unwrap();
        let mut facts = MemoryFacts::new();
        facts.insert(Fact { uri: "instruction:acme/eng/triage/v1".into(), content: "Reproduce first.".into(), version: "v1".into(), ..Fact::default() });
        let codes = |wake: &str, registered: Option<&[&str]>| {
            let ctx = crate::recall::RecallContext { wake_reasons: registered.map(|r| r.iter().map(|s| s.to_string()).collect()), ..Default::default() };
            let audit = Records(Default::default());
            let p = super::preload_audited(&m, &facts, &audit, wake, 0, &ctx).unwrap();
            let rec: crate::audit::AuditRecord = serde_json::from_str(&audit.0.borrow()[0]).unwrap();
            assert_eq!(rec.warnings, p.warnings);
            (p.units.len(), p.warnings.iter().map(|w| w.code.clone()).collect::<Vec<_>>(), p.warnings.first().map(|w| w.message.clone()).unwrap_or_default())
        };
        let (n, c, _) = codes("issue_assigned", None);
        assert_eq!((n, c.len()), (1, 0), "{c:?}");
        let (n, c, msg) = codes("issue-assigned", None);
        assert_eq!((n, c), (0, vec!["wake_reason_unregistered".to_string()]));
        assert!(msg.contains("\"issue-assigned\"") && msg.contains("issue_assigned"), "{msg}");
        assert_eq!(codes("manual", Some(&["issue_assigned", "deploy_requested"])).1, ["wake_reason_unregistered"]);
        assert!(codes("deploy_requested", Some(&["issue_assigned", "deploy_requested"])).1.is_empty());
        // A reason an entry names was registered where the manifest was published (a
        // deployment's own list the caller was not given): preloaded, and not flagged.
        let (n, c, _) = codes("issue_assigned", Some(&["deploy_requested"]));
        assert_eq!((n, c.len()), (1, 0), "{c:?}");
    }

    /// A unit read from its `path` because its fact is missing (§21.6.1) is named by the
    /// entry's `instruction:` URI, as recall names it, with `source: fallback_path`.
    #[test]
    fn a_fallback_unit_is_named_as_recall_names_it() {
        let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1", "entries": [
            {"name": "changelog", "description": "Write the changelog.", "required_by_task_types": ["issue_assigned"], "guarantee_load": false,
             "load_triggers": {"intents": ["write the changelog"], "keywords": [], "task_types": []}, "fact_uri": "instruction:acme/eng/changelog/v1", "path": "legacy/changelog.md"}]});
        let mut facts = MemoryFacts::new();
        facts.insert(Fact { uri: "path:legacy/changelog.md".into(), content: "Write the deploy changelog entry.".into(), ..Fact::default() });
        let m = crate::manifest::parse(&m.to_string()).unwrap();
        let p = super::preload(&m, &facts, "issue_assigned", 0).unwrap();
        assert_eq!((p.units[0].fact_uri.as_str(), p.units[0].source.as_str()), ("instruction:acme/eng/changelog/v1", "fallback_path"));
        let r = crate::recall::recall(&m, &facts, &crate::store::NoAudit, &crate::recall::RecallRequest { intent: "write the changelog".into(), ..Default::default() }, &Default::default()).unwrap();
        assert_eq!(r.chunks[0].fact_uri, p.units[0].fact_uri);
    }

    fn one_unit_manifest() -> crate::manifest::Manifest {
        let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1", "entries": [
            {"name": "triage", "description": "Triage.", "required_by_task_types": ["issue_assigned"], "guarantee_load": false,
             "load_triggers": {"intents": [], "keywords": [], "task_types": []}, "fact_uri": "instruction:acme/eng/triage/v1", "path": null}]});
        crate::manifest::parse(&m.to_string()).unwrap()
    }

    /// §21.1.5 rule 5: boot stub + preloads over 2000 tokens draws a
    /// `preload_budget_warning`, exactly 2000 does not, and the unit is delivered either way.
    #[test]
    fn the_budget_warning_starts_past_2000_tokens_and_drops_nothing() {
        let mut facts = MemoryFacts::new();
        facts.insert(Fact { uri: "instruction:acme/eng/triage/v1".into(), content: "Reproduce first.".into(), version: "v1".into(), tokens: Some(1500), ..Fact::default() });
        let m = one_unit_manifest();
        let at_cap = super::preload(&m, &facts, "issue_assigned", 500).unwrap();
        assert_eq!((at_cap.units.len(), at_cap.total_tokens, at_cap.stub_tokens), (1, 1500, 500));
        assert!(at_cap.warnings.is_empty(), "{:?}", at_cap.warnings);
        let over = super::preload(&m, &facts, "issue_assigned", 501).unwrap();
        assert_eq!(over.units.len(), 1, "nothing is dropped (rule 5: MUST NOT silently drop)");
        let codes: Vec<&str> = over.warnings.iter().map(|w| w.code.as_str()).collect();
        assert_eq!(codes, ["preload_budget_warning"]);
        assert!(over.warnings[0].message.contains("2001"), "{}", over.warnings[0].message);
    }

    /// The preload's audit record carries each delivered unit's content digest, so a
    /// replay can tell which text the agent was given (§21.5.1).
    #[test]
    fn the_preload_record_holds_the_digest_of_each_delivered_unit() {
        use sha2::Digest;
        let mut facts = MemoryFacts::new();
        facts.insert(Fact { uri: "instruction:acme/eng/triage/v1".into(), content: "Reproduce first.".into(), version: "v1".into(), ..Fact::default() });
        let audit = Records(Default::default());
        let p = super::preload_audited(&one_unit_manifest(), &facts, &audit, "issue_assigned", 0, &crate::recall::RecallContext::default()).unwrap();
        let rec: crate::audit::AuditRecord = serde_json::from_str(&audit.0.borrow()[0]).unwrap();
        assert_eq!(rec.loaded_chunks, ["triage"]);
        assert_eq!(rec.chunk_sha256, [format!("{:x}", sha2::Sha256::digest(b"Reproduce first."))]);
        assert_eq!(rec.audit_token, p.audit_token);
        assert!(crate::audit::valid_token(&p.audit_token), "{}", p.audit_token);
    }

}
