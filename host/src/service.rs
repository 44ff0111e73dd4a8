//! The operations of `lid serve` (§21.8), independent of HTTP: the HTTP routes
//! ([`crate::http`]) and the CLI (`lid publish`, `lid audit report`) call these, so a
//! publish from the command line takes exactly the route's code path.
//!
//! Every engine step runs in the component ([`Runtime`]), with the agent's facts served
//! from a database [`Snapshot`](crate::db::Snapshot) and audit records appended to
//! `instruction_audit`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rusqlite::{params, OptionalExtension};
use serde_json::{json, Value};

use crate::apierror::ApiError;
use crate::auth::Principal;
use crate::db::{current_manifest_id, fact_exists, insert_event, insert_fact, iso, latest_in, now_ms, random_hex, sha256_hex, Db, DbAudit, DbError, DeferredAudit, FactWrite, NewFact, SnapshotFacts};
use crate::engine::{NoAudit, Runtime, Storage};
use crate::trigger::TriggerKey;
use lid_shared::coverage::CoverageRow;
use lid_shared::federation::{federated_fields, promotion_claims};
use lid_shared::packs::pack_entry;
use lid_shared::publish::PublishRequest;
use lid_shared::units::Kind;

pub use lid_shared::heartbeat::PROFILES;
/// The rolling audit window (§21.5.3).
pub const AUDIT_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;

/// Shared state of the service.
pub struct Service {
    pub db: Arc<Db>,
    pub rt: Arc<Runtime>,
    /// The registered wake-reason enum (`None`: the engine's built-in one).
    pub wake_reasons: Option<Vec<String>>,
    pub trigger_key: Option<TriggerKey>,
    /// `ranker_version`, `stub_version`, … from the engine.
    pub info: Value,
}

/// The query of `GET /v1/agents/{id}/boot-context`: `profile`, `budget` (e.g.
/// `task=1500,session=800`), `query` (selects knowledge), and the control plane's signed `trigger` (taken from the
/// `X-Lid-Trigger` header), whose wake reason selects the task preloads (S1).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct ContextQuery {
    pub profile: Option<String>,
    pub budget: Option<String>,
    pub format: Option<String>,
    /// The query that selects the knowledge section from the agent's uploaded packs and
    /// content facts (default: the current handoff's task).
    pub query: Option<String>,
    #[serde(skip)]
    pub trigger: Option<String>,
    /// A HEAD request: composed as the GET is, but nothing is audited (a HEAD is safe,
    /// RFC 9110 §9.2.1) and no audit token is answered.
    #[serde(skip)]
    pub head: bool,
}

/// Who performs a publish or a write, as recorded in provenance.
#[derive(Debug, Clone)]
pub struct Actor {
    pub key_id: String,
    pub entity_uri: String,
    pub is_admin: bool,
    pub instruction_write: bool,
}

impl From<&Principal> for Actor {
    fn from(p: &Principal) -> Self {
        Actor { key_id: p.key_id.clone(), entity_uri: p.entity_uri.clone(), is_admin: p.is_admin(), instruction_write: p.has(crate::auth::CAP_INSTRUCTION_WRITE) }
    }
}

fn engine<T>(r: anyhow::Result<Result<T, crate::engine::EngineFailure>>) -> Result<T, ApiError> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(f)) => Err(f.into()),
        Err(e) => Err(ApiError::engine(e)),
    }
}

/// A write's snapshot is of the manifest its basis names (a snapshot cached under a stamp
/// that had not yet moved can lag a publish the basis, read just before, saw).
fn same_basis(agent: &str, basis: Option<&str>, snapshot: Option<&crate::db::Snapshot>) -> Result<(), ApiError> {
    match (basis.and_then(lid_shared::units::basis_manifest), snapshot) {
        (Some(id), Some(s)) if s.manifest_id != id => Err(lid_shared::units::basis_moved(agent).into()),
        _ => Ok(()),
    }
}

/// What a write for `agent` is checked against ([`crate::db::write_basis`]), read before
/// its checks.
fn read_basis(db: &Db, agent: &str) -> Result<Option<String>, ApiError> {
    Ok(db.read(|c| crate::db::write_basis(c, agent))?)
}

/// In a write's transaction: its basis is still `basis`, else the retryable 409.
fn basis_held(tx: &rusqlite::Transaction, agent: &str, basis: &Option<String>) -> Result<(), ApiError> {
    if crate::db::write_basis(tx, agent)? != *basis {
        return Err(lid_shared::units::basis_moved(agent).into());
    }
    Ok(())
}

fn parse_json(s: &str) -> Result<Value, ApiError> {
    serde_json::from_str(s).map_err(|e| ApiError::new(500, "engine_failed", format!("the engine returned invalid JSON: {e}")))
}

/// A recall response whose audit row could not be stored: the response still returns
/// (§21.3.4), as [`lid_shared::audit::recall_unrecorded`] words it. A response that is not
/// JSON is returned as it is.
pub fn with_audit_warning(response: String, error: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(&response) else {
        return response;
    };
    lid_shared::audit::recall_unrecorded(&mut v, error);
    v.to_string()
}

/// The engine's normalised §21.5.2 submission (`check-audit-submission`).
#[derive(serde::Deserialize)]
struct Submission {
    audit_token: String,
    used_chunks: Vec<String>,
    missed_chunks: Vec<String>,
}

/// `facts` as the engine reads them from `base` once written (each fact, and its unit's
/// version list with the new version): what a write is checked against before it commits.
fn staged_facts(base: &SnapshotFacts, facts: &[NewFact]) -> BTreeMap<String, Vec<u8>> {
    let mut overlay = BTreeMap::new();
    for f in facts {
        overlay.insert(f.uri.clone(), f.engine_json(None));
        let mut versions: Vec<String> = overlay.get(&f.unit_key).or_else(|| base.raw(&f.unit_key)).and_then(|b| serde_json::from_slice(b).ok()).unwrap_or_default();
        versions.push(f.version.clone());
        overlay.insert(f.unit_key.clone(), serde_json::to_vec(&versions).unwrap_or_default());
    }
    overlay
}

/// A snapshot's (deployment, manifest version).
fn current_of(s: &crate::db::Snapshot) -> (String, String) {
    let m: Value = serde_json::from_str(&s.manifest_json).unwrap_or(Value::Null);
    (m["deployment"].as_str().unwrap_or_default().to_string(), s.version.clone())
}

impl Service {
    pub fn new(db: Arc<Db>, rt: Arc<Runtime>, wake_reasons: Option<Vec<String>>, trigger_key: Option<TriggerKey>) -> anyhow::Result<Self> {
        let info: Value = serde_json::from_str(&rt.info()?)?;
        Ok(Service { db, rt, wake_reasons, trigger_key, info })
    }

    pub fn ranker_version(&self) -> String {
        self.info["ranker_version"].as_str().unwrap_or_default().to_string()
    }

    fn stub_version(&self) -> i64 {
        self.info["stub_version"].as_i64().unwrap_or(1)
    }

    fn snapshot(&self, agent: &str) -> Result<Arc<crate::db::Snapshot>, ApiError> {
        self.snapshot_at(agent, self.db.stamp())
    }

    /// The agent's snapshot for a write (or re-certification): one whose manifest fact is
    /// quarantined for its attestation is none, so that an admin can publish again (and
    /// write units first), as for an agent that has no manifest yet.
    fn writable_snapshot(&self, agent: &str) -> Result<Option<Arc<crate::db::Snapshot>>, ApiError> {
        match self.db.snapshot(agent) {
            Err(DbError::ManifestUnattested { .. }) => Ok(None),
            r => r.map_err(ApiError::snapshot),
        }
    }

    /// [`Service::snapshot`] checked against a [`crate::db::Stamp`] the caller has taken.
    fn snapshot_at(&self, agent: &str, stamp: Option<crate::db::Stamp>) -> Result<Arc<crate::db::Snapshot>, ApiError> {
        self.db.snapshot_at(agent, stamp).map_err(ApiError::snapshot)?.ok_or_else(|| ApiError::manifest_not_found(agent))
    }

    /// The engine call's context: time, entropy, heartbeat, who is calling (the key's
    /// identity, for the audit record), the snapshot's soft-lifted units, the registered
    /// wake reasons, and its identity as `corpus_key` (the manifest row and its
    /// generation change with every publish and fact write), so the engine keeps the
    /// corpus prepared.
    fn context(&self, heartbeat_id: &str, session_start: Option<u64>, caller: &str, s: &crate::db::Snapshot) -> String {
        /// The context's fields (`wit/lid.wit`, `recall`), in this order.
        #[derive(serde::Serialize)]
        struct Context<'a> {
            now_ms: u64,
            entropy: String,
            heartbeat_id: &'a str,
            session_start_ms: u64,
            caller: &'a str,
            lift_units: &'a [String],
            corpus_key: String,
            /// the deployment's registered wake reasons (`--wake-reason`), for preloads
            #[serde(skip_serializing_if = "Option::is_none")]
            wake_reasons: Option<&'a [String]>,
        }
        let now = now_ms() as u64;
        let c = Context {
            now_ms: now,
            entropy: random_hex(20),
            heartbeat_id,
            session_start_ms: session_start.unwrap_or(now),
            caller,
            lift_units: &s.lift_units,
            corpus_key: s.corpus_key(),
            wake_reasons: self.wake_reasons.as_deref(),
        };
        serde_json::to_string(&c).unwrap_or_default()
    }

    // ---- reads ---------------------------------------------------------------------

    /// §21.8.2: the current manifest, with the ranker ("embedding model") version.
    pub fn get_manifest(&self, agent: &str, admin: bool) -> Result<Value, ApiError> {
        let s = self.snapshot(agent)?;
        let view = lid_shared::publish::ManifestView {
            agent,
            manifest_json: &s.manifest_json,
            version: &s.version,
            fact_uri: &s.fact_uri,
            token_count: s.token_count,
            created_at_ms: s.created_at,
            ranker_version: &self.ranker_version(),
            provenance: admin.then_some(&s.provenance),
        };
        view.response().map_err(|e| ApiError::backend(DbError::Corrupt(e.to_string())))
    }

    /// §21.8.1: the boot stub for `profile` (unknown: generic), rendered from the agent's
    /// verified snapshot (kept with it: `StubMemo`) and recorded in `boot_stubs`.
    /// Returns (markdown, manifest version, token count, stub version).
    pub fn boot_stub(&self, agent: &str, profile: Option<&str>) -> Result<(String, String, i64, i64), ApiError> {
        self.stub_of(&*self.snapshot(agent)?, profile)
    }

    /// [`Service::boot_stub`] for an already loaded snapshot.
    fn stub_of(&self, s: &crate::db::Snapshot, profile: Option<&str>) -> Result<(String, String, i64, i64), ApiError> {
        let agent = s.agent_id.as_str();
        let profile = lid_shared::heartbeat::profile_or_generic(profile);
        let sv = self.stub_version();
        if let Some((body, tokens)) = s.stubs.get(profile, sv) {
            return Ok((body, s.version.clone(), tokens, sv));
        }
        let st = Storage { facts: s.facts.clone(), audit: Arc::new(NoAudit) };
        let stub = parse_json(&engine(self.rt.render_stub(&st, &s.manifest_json, Some(profile)))?)?;
        let body = stub["text"].as_str().unwrap_or_default().to_string();
        let tokens = stub["total_tokens"].as_i64().unwrap_or(0);
        let recorded = self.db.write(|tx| {
            // Record it only if nothing changed since the snapshot: a publish or a unit
            // write that raced this render has already cleared the agent's rows, and a
            // stale stub must never be recorded over them.
            if crate::db::head(tx, agent)? == Some((s.manifest_id.clone(), s.generation)) {
                tx.execute(
                    "INSERT OR REPLACE INTO boot_stubs (agent_id, adapter_profile, stub_version, body, token_count, generated_at, manifest_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![agent, profile, sv, body, tokens, now_ms(), s.version],
                )?;
            }
            Ok::<_, DbError>(())
        });
        match recorded {
            // kept with the snapshot once its record is written: later requests serve it
            Ok(()) => {
                s.stubs.put(profile, sv, &body, tokens);
            }
            // The record is best effort, as an audit row: the stub (rendered from signed
            // facts) is served all the same, and the next request renders and records again.
            Err(e) => tracing::warn!(agent, profile, error = %e, "boot_stubs record not written; the stub is served, and recorded on a later request"),
        }
        Ok((body, s.version.clone(), tokens, sv))
    }

    /// §21.8.4 / §21.3: recall for `agent`; the engine appends the audit record before
    /// answering. `body` is the request JSON, passed to the engine as is.
    pub fn recall(&self, agent: &str, caller: &str, body: &str) -> Result<String, ApiError> {
        self.recall_with(agent, caller, body, Arc::new(DbAudit(self.db.clone())), self.db.stamp())
    }

    /// [`Service::recall`] whose audit row is queued, not yet committed: the caller must
    /// await [`DeferredAudit::committed`] before it answers (and add the warning
    /// [`with_audit_warning`] makes when that fails), as the HTTP route does.
    /// `stamp`: the [`crate::db::Stamp`] the caller authenticated against (the agent's head
    /// is checked against the same one).
    pub fn recall_deferred(&self, agent: &str, caller: &str, body: &str, stamp: Option<crate::db::Stamp>) -> Result<(String, Arc<DeferredAudit>), ApiError> {
        let audit = Arc::new(DeferredAudit::new(self.db.clone()));
        Ok((self.recall_with(agent, caller, body, audit.clone(), stamp)?, audit))
    }

    fn recall_with(&self, agent: &str, caller: &str, body: &str, audit: Arc<dyn crate::engine::AuditLog>, stamp: Option<crate::db::Stamp>) -> Result<String, ApiError> {
        // The host reads only the heartbeat id; the engine reads (and checks) the rest.
        let (body, heartbeat_id) = lid_shared::heartbeat::recall_body(body)?;
        let s = self.snapshot_at(agent, stamp)?;
        let ctx = self.context(&heartbeat_id, None, caller, &s);
        let st = Storage { facts: s.facts.clone(), audit };
        // The first recall of a snapshot may build its corpus's index: not on the recall
        // slots, which then stay small (see `Runtime::recall_preparing`). Later ones send
        // no manifest: the corpus key names it (`Runtime::recall_prepared`).
        if s.facts.prepared() {
            return engine(self.rt.recall_prepared(&st, &s.manifest_json, body, &ctx));
        }
        let r = engine(self.rt.recall_preparing(&st, &s.manifest_json, body, &ctx));
        if r.is_ok() {
            s.facts.mark_prepared();
        }
        r
    }

    /// Heartbeat (ours): verify the signed trigger, then the boot stub followed by the
    /// task-type preloads for its wake reason (§21.1.5), audited as `task_type_preload`.
    /// Any `wake_reason` outside the signed trigger is ignored (S1).
    pub fn heartbeat(&self, agent: &str, caller: &str, body: &Value) -> Result<Value, ApiError> {
        let Some(key) = &self.trigger_key else {
            return Err(ApiError::new(503, "heartbeat_not_configured", "this server has no heartbeat signing key: set LID_HEARTBEAT_SECRET (the HS256 secret the control plane signs triggers with; another variable with --heartbeat-secret-env) or start it with --heartbeat-public-key FILE (Ed25519)"));
        };
        let (token, profile) = lid_shared::heartbeat::heartbeat_request(body)?;
        let t = key.verify(token, agent)?;
        let s = self.snapshot(agent)?;
        let (stub, version, stub_tokens, _) = self.stub_of(&s, profile)?;
        let ctx = self.context(&t.heartbeat_id, t.session_start, caller, &s);
        let st = Storage { facts: s.facts.clone(), audit: Arc::new(DbAudit(self.db.clone())) };
        let p = parse_json(&engine(self.rt.preload(&st, &s.manifest_json, &t.wake_reason, stub_tokens.max(0) as u32, &ctx))?)?;
        Ok(lid_shared::heartbeat::Heartbeat { agent, trigger: &t, manifest_version: &version, stub: &stub, stub_tokens, profile, preloads: p }.response())
    }

    /// `POST /v1/agents/{id}/handoff` (issue 5, handoffs): validate the handoff message in
    /// the engine, render its Session Markdown, and keep it as the agent's current session
    /// (the session section of its boot context). Allowed to an admin, the receiving agent
    /// and the sending agent (`from_agent` must then be the key's own agent).
    pub fn handoff(&self, agent: &str, body: &str, who: &Principal) -> Result<Value, ApiError> {
        let v = parse_json(&engine(self.rt.compose_handoff(body))?)?;
        let h = &v["handoff"];
        let (_, from) = lid_shared::heartbeat::handoff_parties(h, agent)?;
        let sender = who.role == crate::auth::Role::Agent && who.agent_id.as_deref() == Some(from);
        if !sender || who.is_agent(agent) {
            who.require_self(agent)?;
        } else {
            let deployment = |a: &str| self.current(a).map(|c| c.map(|c| c.0));
            lid_shared::heartbeat::sender_may_hand_off(agent, from, deployment(agent)?.as_deref(), deployment(from)?.as_deref())?;
        }
        self.snapshot(agent)?;
        let detail = json!({"handoff": h, "session_markdown": v["session_markdown"], "key_id": who.key_id, "entity_uri": who.entity_uri});
        let id = self.db.write(|tx| insert_event(tx, Some(agent), "handoff", &detail, now_ms()))?;
        Ok(json!({"agent_id": agent, "handoff_id": id, "task_id": h["task_id"], "handoff": h, "session_markdown": v["session_markdown"]}))
    }

    /// The agent's current handoff (the latest one posted), if any.
    fn latest_handoff(&self, agent: &str) -> Result<Option<Value>, ApiError> {
        let detail: Option<String> = self.db.read(|c| {
            Ok(c.query_row(lid_shared::heartbeat::LATEST_HANDOFF_SQL, params![agent], |r| r.get(0))
                .optional()?)
        })?;
        detail.map(|d| serde_json::from_str::<Value>(&d).map(|v| v["handoff"].clone()).map_err(|e| ApiError::backend(DbError::Corrupt(e.to_string())))).transpose()
    }

    /// `GET /v1/agents/{id}/boot-context` (issue 5, composed boot context): identity (the
    /// boot stub), session (the latest handoff), task (the preloads of the wake reason of a
    /// verified trigger, S1), knowledge; `q` holds the profile, budgets and trigger. An
    /// unreadable session degrades the bundle with a warning instead of failing it.
    pub fn boot_context(&self, agent: &str, caller: &str, q: &ContextQuery) -> Result<Value, ApiError> {
        let s = self.snapshot(agent)?;
        let mut req = json!({"profile": q.profile, "budgets": q.budget, "knowledge_query": q.query});
        let mut heartbeat = (String::new(), None);
        if let Some(token) = q.trigger.as_deref() {
            let Some(key) = &self.trigger_key else {
                return Err(ApiError::new(503, "heartbeat_not_configured", "this server has no heartbeat signing key, so it cannot verify the trigger: set LID_HEARTBEAT_SECRET (the HS256 secret the control plane signs triggers with; another variable with --heartbeat-secret-env) or start it with --heartbeat-public-key FILE (Ed25519)"));
            };
            let t = key.verify(token, agent)?;
            req["wake_reason"] = json!(t.wake_reason);
            heartbeat = (t.heartbeat_id, t.session_start);
        }
        lid_shared::heartbeat::session_source(&mut req, self.latest_handoff(agent).map_err(|e| e.0.message));
        let ctx = self.context(&heartbeat.0, heartbeat.1, caller, &s);
        let audit: Arc<dyn crate::engine::AuditLog> = if q.head { Arc::new(NoAudit) } else { Arc::new(DbAudit(self.db.clone())) };
        let st = Storage { facts: s.facts.clone(), audit };
        parse_json(&engine(self.rt.compose_context(&st, &s.manifest_json, &req.to_string(), &ctx))?)
    }

    /// §21.5.2: close an audit record with usage feedback. Idempotent.
    pub fn submit_audit(&self, who: &Principal, body: &Value) -> Result<(), ApiError> {
        // The shape checks are the core's, so every host answers alike.
        let checked = parse_json(&engine(self.rt.check_audit_submission(&body.to_string()))?)?;
        let sub: Submission = serde_json::from_value(checked).map_err(|e| ApiError::new(500, "engine_failed", format!("the engine returned an unexpected submission: {e}")))?;
        let (token, used, missed) = (sub.audit_token.as_str(), sub.used_chunks, sub.missed_chunks);
        let row = self.db.read(|c| {
            Ok(c.query_row("SELECT agent_id, created_at, audit_closed, used_chunks, missed_chunks, loaded_chunks FROM instruction_audit WHERE audit_token = ?1", params![token], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, Option<i64>>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?, r.get::<_, String>(5)?))
            })
            .optional()?)
        })?;
        let Some((agent, created, closed, used0, missed0, loaded)) = row else {
            return Err(ApiError::bad_request("audit_token_invalid", "this audit token is not recognised: submit the token from a recall_instruction response"));
        };
        who.require_self(&agent)?;
        let now = now_ms();
        let stored = lid_shared::audit::Stored { created_at: created, closed: closed.is_some(), loaded_json: &loaded, used_json: &used0, missed_json: &missed0 };
        if !lid_shared::audit::closing(&stored, now, &used, &missed)? {
            return Ok(());
        }
        let manifest = match self.snapshot(&agent) {
            Ok(s) => Some(s),
            Err(e) if e.code == "manifest_not_found" => None,
            Err(e) => return Err(e),
        };
        if let Some(refusal) = lid_shared::audit::unknown_units(manifest.as_deref().map(|s| s.manifest_json.as_str()), &loaded, &used, &missed) {
            return Err(refusal.into());
        }
        let (used_json, missed_json) = (json!(used).to_string(), json!(missed).to_string());
        let changed = self.db.write(|tx| {
            Ok::<_, DbError>(tx.execute(
                "UPDATE instruction_audit SET used_chunks = ?1, missed_chunks = ?2, audit_closed = ?3 WHERE audit_token = ?4 AND audit_closed IS NULL",
                params![used_json, missed_json, now, token],
            )?)
        })?;
        if changed == 0 {
            // Closed concurrently: identical feedback is still a success.
            return self.submit_audit(who, body);
        }
        Ok(())
    }

    /// §21.8.6: per-unit coverage from the publish-time probe run, plus the audit log's
    /// rolling 7 days. `coverage_status` only for admins (S11).
    pub fn coverage(&self, agent: &str, admin: bool) -> Result<Value, ApiError> {
        let s = self.snapshot(agent)?;
        let rows = self.db.read(|c| {
            let mut st = c.prepare_cached("SELECT unit, coverage_pct, hit_at_10, probe_count, evaluated_at FROM coverage_reports WHERE agent_id = ?1 AND manifest_version = ?2")?;
            let rows = st.query_map(params![agent, s.version], |r| {
                Ok(CoverageRow { unit: r.get(0)?, coverage_pct: r.get(1)?, hit_at_10: r.get(2)?, probe_count: r.get(3)?, evaluated_at: r.get(4)? })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        if rows.is_empty() {
            return Err(ApiError::new(404, "coverage_not_found", format!("no coverage report has been generated for agent {agent:?} version {}; publish the manifest again to run the probes", s.version)));
        }
        let (audit, truncated) = self.db.audit_rows(agent, now_ms() - AUDIT_WINDOW_MS)?;
        let (mut metrics, n) = self.audit_metrics(&audit, 3)?;
        metrics["truncated"] = json!(truncated || n < audit.len());
        let audit = &audit[audit.len() - n..];
        let subject = lid_shared::coverage::Subject { agent, manifest_version: &s.version, manifest_json: &s.manifest_json, ranker_version: &self.ranker_version() };
        Ok(lid_shared::coverage::report(&subject, rows, audit, &metrics, admin))
    }

    /// Re-certify every current manifest that is due (§21.8.3, S10; see
    /// [`lid_shared::publish::recertification_due`]): run the coverage gate over it under the
    /// running ranker and, in one transaction per agent, replace its coverage rows, add a
    /// `manifest_certifications` row and a `manifest_recertified` (or
    /// `recertification_failed`) service event. A manifest that fails stays served, as
    /// there is no other ranker to serve it with; the failure is recorded and reported
    /// for an admin to fix with a new version. One result per manifest re-certified:
    /// `{agent_id, manifest_version, reason, certified_under, ranker_version, passed, failing}`.
    pub fn recertify(&self, now: i64) -> Result<Vec<Value>, ApiError> {
        use lid_shared::recertify::{coverage_row, Candidate, Outcome, CANDIDATES_SQL, INSERT_CERTIFICATION_SQL, INSERT_COVERAGE_SQL};
        let ranker = self.ranker_version();
        let candidates: Vec<Candidate> = self.db.read(|c| {
            let mut st = c.prepare(CANDIDATES_SQL)?;
            let rows = st.query_map([], |r| {
                Ok(Candidate { agent_id: r.get(0)?, manifest_version: r.get(1)?, published_at: r.get(2)?, provenance: r.get(3)?, last_certified_under: r.get(4)? })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        let mut out = Vec::new();
        for c in candidates {
            let Some(reason) = c.due(&ranker, now) else { continue };
            // A version published since the query certified itself.
            let Some(s) = self.writable_snapshot(&c.agent_id)?.filter(|s| s.version == c.manifest_version) else { continue };
            let st = Storage { facts: s.facts.clone(), audit: Arc::new(NoAudit) };
            let cov = parse_json(&engine(self.rt.coverage(&st, &s.manifest_json, "{}"))?)?;
            let o = Outcome::new(&c, reason, &ranker, &cov);
            self.db.write(|tx| {
                for u in cov["units"].as_array().into_iter().flatten() {
                    let (unit, pct, hit, probes) = coverage_row(u);
                    tx.execute(INSERT_COVERAGE_SQL, params![c.agent_id, c.manifest_version, unit, pct, hit, probes, now])?;
                }
                tx.execute(INSERT_CERTIFICATION_SQL, params![c.agent_id, c.manifest_version, ranker, reason, o.passed(), o.failing_json(), now])?;
                insert_event(tx, Some(&c.agent_id), o.event_kind(), &o.result, now)?;
                Ok::<_, DbError>(())
            })?;
            out.push(o.result);
        }
        Ok(out)
    }

    /// §21.5.3 metrics (through the engine) over the newest of `rows` (oldest first) that
    /// one engine call can hold: all of them, else, when the call traps (its memory ran
    /// out), the newest half, again. The metrics, and how many of the newest rows they are over.
    pub fn audit_metrics(&self, rows: &[crate::db::AuditRow], k: u32) -> Result<(Value, usize), ApiError> {
        let st = Storage::none();
        let mut n = rows.len();
        loop {
            let recs = serde_json::to_string(&rows[rows.len() - n..]).map_err(|e| ApiError::new(500, "engine_failed", e.to_string()))?;
            match self.rt.audit_metrics(&st, &recs, k) {
                Err(e) if n > 1 && e.chain().any(|c| c.is::<wasmtime::Trap>()) => {
                    tracing::warn!(rows = n, error = %format!("{e:#}"), "audit figures: the engine could not hold the rows; taking the newest half");
                    n /= 2;
                }
                r => return Ok((parse_json(&engine(r)?)?, n)),
            }
        }
    }

    // ---- writes ----------------------------------------------------------------------

    /// The current manifest's (deployment, version), if any.
    fn current(&self, agent: &str) -> Result<Option<(String, String)>, ApiError> {
        Ok(self.writable_snapshot(agent)?.map(|s| current_of(&s)))
    }

    /// `PUT /v1/agents/{id}/units/{name}`: a new immutable version of one unit's content.
    /// Instruction-typed content needs `instruction:write` (Spec-13); a denial is audited.
    /// The version must come after the unit's latest (§21.4.1), content never replaces an
    /// instruction (Spec-13), and an always-applicable unit that would push the boot stub
    /// over its 500 tokens is refused (§21.1.2): nothing is written then.
    pub fn write_unit(&self, agent: &str, name: &str, body: &Value, who: &Principal) -> Result<Value, ApiError> {
        let req = lid_shared::units::UnitWrite::read(name, body)?;
        let interpret_as = req.kind.as_str();
        let check = if req.kind == Kind::Instruction { who.require_instruction_write(agent) } else { who.require_content_write(agent) };
        if let Err(e) = check {
            let detail = json!({"unit": name, "interpret_as": interpret_as, "key_id": who.key_id, "entity_uri": who.entity_uri, "code": e.code});
            let _ = self.db.write(|tx| insert_event(tx, Some(agent), "capability_denied", &detail, now_ms()).map(|_| ()));
            return Err(e.into());
        }
        let admission_warnings = self.admit(agent, vec![json!({"name": name, "content": req.content, "interpret_as": interpret_as})])?;
        // read before the snapshot the checks use, so that a publish between them shows
        let basis = read_basis(&self.db, agent)?;
        let snapshot = self.writable_snapshot(agent)?;
        same_basis(agent, basis.as_deref(), snapshot.as_deref())?;
        let deployment = self.write_deployment(agent, snapshot.as_deref().map(|s| current_of(s).0), body)?;
        let unit_key = format!("instruction:{deployment}/{agent}/{name}");
        let entry = snapshot.as_deref().and_then(|s| lid_shared::units::manifest_entry(&s.manifest_json, name));
        lid_shared::units::check_reviewed(name, req.kind, entry.as_ref())?;
        let latest = self.latest_fact(&unit_key)?;
        lid_shared::units::check_kind(name, req.kind, latest.as_ref(), entry.is_some())?;
        let version = lid_shared::units::plan_version(req.version, latest.as_ref(), Some(lid_shared::units::Rewrite { content: req.content, kind: req.kind, author: &who.entity_uri }), |v, t| engine(self.rt.version_order(v, t)))?;
        let uri = format!("{unit_key}/{version}");
        if crate::db::split_fact_uri(&uri).is_none() {
            return Err(ApiError::bad_request("invalid_request", format!("{uri:?} is not a valid instruction: URI (unit names are kebab-case, versions like v2; no floating aliases)")));
        }
        let mut fact = self.new_fact(agent, name, &uri, &unit_key, &version, req.content, interpret_as, &who.entity_uri, json!({"written_by_key": who.key_id}))?;
        fact.source_trust = lid_shared::units::source_trust(who);
        self.stub_still_fits(snapshot.as_deref(), req.kind, entry.as_ref(), &fact)?;
        let now = now_ms();
        let w = self.db.write(|tx| {
            basis_held(tx, agent, &basis)?;
            if latest_in(tx, &unit_key)? != latest && !fact_exists(tx, &uri)? {
                return Err(lid_shared::units::written_concurrently(&uri).into());
            }
            let r = insert_fact(tx, &fact, now, self.db.attestor())?;
            if r == Ok(FactWrite::Inserted) {
                // The stub embeds always-applicable units: a new version invalidates it.
                tx.execute("DELETE FROM boot_stubs WHERE agent_id = ?1", params![agent]).map_err(DbError::from)?;
                insert_event(tx, Some(agent), "instruction_write", &json!({"uri": uri, "interpret_as": interpret_as, "entity_uri": who.entity_uri}), now)?;
            }
            Ok::<_, ApiError>(r)
        })?;
        match w {
            Ok(w) => Ok(json!({"uri": uri, "version": version, "sha256": fact.sha256(), "tokens": fact.tokens, "interpret_as": interpret_as, "unchanged": w == FactWrite::Unchanged, "admission_warnings": admission_warnings})),
            Err(_) => Err(lid_shared::units::version_taken(&uri, req.version).into()),
        }
    }

    /// An always-applicable unit is embedded in the boot stub (§21.1.1): a write or a
    /// promotion of its instruction text is refused (`boot_stub_too_large`) when the stub
    /// of any profile, with the new text, would no longer fit (§21.1.2).
    fn stub_still_fits(&self, snapshot: Option<&crate::db::Snapshot>, kind: lid_shared::units::Kind, entry: Option<&Value>, fact: &NewFact) -> Result<(), ApiError> {
        if let (Some(s), true) = (snapshot, lid_shared::units::changes_stub(kind, entry)) {
            let st = Storage { facts: Arc::new(s.facts.overlay(staged_facts(&s.facts, std::slice::from_ref(fact)))), audit: Arc::new(NoAudit) };
            for p in PROFILES {
                engine(self.rt.render_stub(&st, &s.manifest_json, Some(p)))?;
            }
        }
        Ok(())
    }

    /// The unit's latest fact in the ledger.
    fn latest_fact(&self, unit_key: &str) -> Result<Option<lid_shared::units::Latest>, ApiError> {
        Ok(self.db.read(|c| latest_in(c, unit_key))?)
    }

    /// Admission lint (README, "Admission lint"): hidden, bidirectional, zero-width or
    /// control characters and over-long lines refuse the write (`unit_admission_rejected`,
    /// 422, recorded as a service event); injection-like instruction text is a warning.
    fn admit(&self, agent: &str, units: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        if units.is_empty() {
            return Ok(vec![]);
        }
        let r = parse_json(&engine(self.rt.lint_units(&Value::Array(units).to_string()))?)?;
        let errors = r["errors"].as_array().cloned().unwrap_or_default();
        if !errors.is_empty() {
            let _ = self.db.write(|tx| insert_event(tx, Some(agent), "admission_rejected", &json!({"errors": errors}), now_ms()).map(|_| ()));
            let summary = errors.iter().map(|e| format!("{} [{} line {}]", e["code"].as_str().unwrap_or(""), e["unit"].as_str().unwrap_or(""), e["line"])).collect::<Vec<_>>().join("; ");
            return Err(ApiError::new(422, "unit_admission_rejected", format!("unit text refused ({} finding(s)): {summary}; remove the characters or break the lines and retry", errors.len()))
                .with_details(json!({"errors": errors, "warnings": r["warnings"]})));
        }
        Ok(r["warnings"].as_array().cloned().unwrap_or_default())
    }

    #[allow(clippy::too_many_arguments)]
    fn new_fact(&self, agent: &str, name: &str, uri: &str, unit_key: &str, version: &str, content: &str, interpret_as: &str, author: &str, provenance: Value) -> Result<NewFact, ApiError> {
        let st = Storage::none();
        let tokens = self.rt.count_tokens(&st, content).map_err(ApiError::engine)?;
        Ok(NewFact {
            uri: uri.to_string(),
            unit_key: unit_key.to_string(),
            agent_id: agent.to_string(),
            unit_name: name.to_string(),
            version: version.to_string(),
            content: content.to_string(),
            interpret_as: interpret_as.to_string(),
            tokens: tokens as i64,
            authored_by: author.to_string(),
            authored_at: iso(now_ms()),
            source_trust: 0.9,
            provenance,
        })
    }

    /// `POST /v1/agents/{id}/instruction-manifest/cosignatures`: a second admin co-signs a
    /// coverage-gate bypass for one exact manifest (S7).
    pub fn cosign(&self, agent: &str, body: &Value, who: &Principal) -> Result<Value, ApiError> {
        who.require_admin()?;
        let (version, digest) = lid_shared::publish::cosignature_request(agent, body)?;
        // a version a publish could take: a real one (no floating alias), not yet published
        engine(self.rt.version_order(version, None))?;
        self.version_unpublished(agent, version)?;
        self.db.write(|tx| {
            tx.execute(
                "INSERT OR IGNORE INTO publish_cosignatures (agent_id, version, manifest_sha256, entity_uri, key_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![agent, version, digest, who.entity_uri, who.key_id, now_ms()],
            )?;
            Ok::<_, DbError>(())
        })?;
        Ok(json!({"agent_id": agent, "version": version, "manifest_sha256": digest, "cosigned_by": who.entity_uri}))
    }

    /// 409 `manifest_version_conflict` when `version` of `agent` is already published.
    fn version_unpublished(&self, agent: &str, version: &str) -> Result<(), ApiError> {
        let published = self.db.read(|c| Ok(c.query_row("SELECT 1 FROM instruction_manifests WHERE agent_id = ?1 AND version = ?2", params![agent, version], |_| Ok(())).optional()?))?;
        match published {
            Some(()) => Err(lid_shared::publish::version_conflict(agent, version).into()),
            None => Ok(()),
        }
    }

    /// A manifest document as written (`lid publish`'s `manifest.json`), validated as
    /// `lid validate` validates it, with this service's wake reasons: `lid publish` sends
    /// the service its fields, so what only the document shows (an unknown field, the
    /// version given twice, a null role) is refused here, as `lid validate` refuses it.
    pub fn check_manifest_document(&self, manifest_json: &str) -> Result<(), ApiError> {
        let vopts = json!({"wake_reasons": self.wake_reasons});
        let report = parse_json(&self.rt.validate_manifest(&Storage::none(), manifest_json, &vopts.to_string()).map_err(ApiError::engine)?)?;
        match lid_shared::publish::validation_refusal(&report) {
            Some(refusal) => Err(refusal.into()),
            None => Ok(()),
        }
    }

    /// `PUT /v1/agents/{id}/instruction-manifest` (§21.8.3), and `lid publish`: validate,
    /// run the coverage gate, render the stubs, then in one transaction write the unit
    /// facts and the manifest fact, supersede the previous `instruction_manifests` row,
    /// replace the stub cache and store the coverage report.
    pub fn publish(&self, agent: &str, body: &Value, who: &Actor) -> Result<Value, ApiError> {
        if !who.is_admin {
            return Err(ApiError::new(403, "admin_required", "only an admin API key may publish a manifest (§21.8.3)"));
        }
        crate::auth::check_agent_id(agent)?;
        if !who.instruction_write {
            let _ = self.db.write(|tx| insert_event(tx, Some(agent), "capability_denied", &json!({"action": "publish", "entity_uri": who.entity_uri, "key_id": who.key_id}), now_ms()).map(|_| ()));
            return Err(lid_shared::publish::instruction_write_required().into());
        }
        let req = PublishRequest::read(agent, body)?;
        let (obj, version, skip) = (req.obj, req.version.clone(), req.skip);
        // The head this publish is planned against, read before the snapshot: the write
        // below commits only if it is still the head (another publish may commit meanwhile).
        let head = self.db.read(|c| current_manifest_id(c, agent))?;
        // likewise the units whose text it reviews: one written meanwhile was not what was
        // checked (a write to any other unit does not stop it)
        let reviewed = req.reviewed_key(agent);
        let horizon = self.db.read(|c| crate::db::reviewed_horizon(c, &reviewed))?;
        let snapshot = self.writable_snapshot(agent)?;
        let current = snapshot.as_deref().map(current_of);
        let deployment = req.deployment(current.as_ref().map(|c| c.0.as_str()))?;
        let now = now_ms();
        let manifest = req.manifest(agent, &deployment, snapshot.as_deref().map(|s| s.manifest_json.as_str()), now);
        if let Some(doc) = req.as_sent(&manifest) {
            self.check_manifest_document(&doc.to_string())?;
        }
        let manifest_json = manifest.to_string();
        let approvals = req.approvals.clone();

        // 1. Validation (§21.2, §21.9), with approvals enforced and versions monotonic.
        let vopts = json!({"wake_reasons": self.wake_reasons, "approvals": approvals, "previous_version": current.as_ref().map(|c| c.1.clone())});
        let empty = Storage::none();
        let report = parse_json(&self.rt.validate_manifest(&empty, &manifest_json, &vopts.to_string()).map_err(ApiError::engine)?)?;
        if let Some(refusal) = lid_shared::publish::validation_refusal(&report) {
            return Err(refusal.into());
        }
        // a version taken before, once the manifest's own problems are all said
        self.version_unpublished(agent, &version)?;
        let token_count = report["token_count"].as_i64().unwrap_or(0);
        let entries = manifest["entries"].as_array().cloned().unwrap_or_default();
        if let Some(refusal) = lid_shared::publish::path_only_entries(&entries, &deployment, agent) {
            return Err(refusal.into());
        }

        // 2. Unit contents sent with the manifest become new fact versions (Spec-13 gate).
        let base = match &snapshot {
            Some(s) => s.facts.clone(),
            // a first publish may name units written before it (`PUT …/units/{name}`)
            None => Arc::new(self.db.unpublished_facts(agent).map_err(ApiError::snapshot)?),
        };
        let mut staged: Vec<NewFact> = Vec::new();
        // each staged fact's unit's latest when it was checked, compared again at the write
        let mut staged_after: Vec<Option<String>> = Vec::new();
        let mut admission_warnings = Vec::new();
        // by name, so the answer (and the warnings) do not follow the body's key order
        if let Some(units) = obj.get("units").and_then(Value::as_object).map(|m| m.iter().collect::<std::collections::BTreeMap<_, _>>()) {
            admission_warnings = self.admit(agent, units.iter().filter_map(|(n, c)| c.as_str().map(|c| json!({"name": n, "content": c, "interpret_as": "instruction"}))).collect())?;
            for (name, content) in units {
                let Some(content) = content.as_str() else {
                    return Err(ApiError::bad_request("invalid_request", format!("`units.{name}` must be the unit's markdown text")));
                };
                let entry = entries.iter().find(|e| e["name"].as_str() == Some(name.as_str()));
                let Some(uri) = entry.and_then(|e| e["fact_uri"].as_str()) else {
                    return Err(ApiError::bad_request("manifest_entry_invalid", format!("`units.{name}` has no manifest entry with a fact_uri to store it under")));
                };
                let Some((unit_key, unit_name, v)) = crate::db::split_fact_uri(uri) else {
                    return Err(ApiError::bad_request("manifest_entry_invalid", format!("entry {name:?} has an invalid fact_uri {uri:?}")));
                };
                let fact = self.new_fact(agent, &unit_name, uri, &unit_key, &v, content, "instruction", &who.entity_uri, json!({"published_with": version}))?;
                if let Some(existing) = base.raw(uri) {
                    let same = serde_json::from_slice::<Value>(existing).ok().and_then(|f| f["sha256"].as_str().map(|h| h == fact.sha256())).unwrap_or(false);
                    if !same {
                        return Err(ApiError::new(409, "fact_version_conflict", format!("{uri} already exists with other content; facts are immutable (§21.4.2): bump the unit's version in its fact_uri")));
                    }
                    continue;
                }
                // new content takes a version after the unit's latest (§21.4.1)
                let latest = self.latest_fact(&unit_key)?;
                lid_shared::units::check_published_version(uri, &v, latest.as_ref(), |v, t| engine(self.rt.version_order(v, t)))?;
                staged_after.push(latest.map(|l| l.uri));
                staged.push(fact);
            }
        }
        let held = self.db.read(|c| {
            let mut st = c.prepare_cached("SELECT coalesce(quarantine_reason, quarantine) FROM instruction_facts WHERE uri = ?1 AND quarantine IS NOT NULL")?;
            let mut held = BTreeMap::new();
            for uri in entries.iter().filter_map(|e| e["fact_uri"].as_str()) {
                if let Some(why) = st.query_row(params![uri], |r| r.get::<_, String>(0)).optional()? {
                    held.insert(uri.to_string(), why);
                }
            }
            Ok(held)
        })?;
        if let Some(refusal) = lid_shared::publish::quarantined_units(&entries, agent, |uri| held.get(uri).cloned()) {
            return Err(refusal.into());
        }
        let facts = Arc::new(base.overlay(staged_facts(&base, &staged)));
        if let Some(refusal) = lid_shared::publish::unstored_units(&entries, |uri| facts.raw(uri).is_some()) {
            return Err(refusal.into());
        }
        let st = Storage { facts: facts.clone(), audit: Arc::new(NoAudit) };

        // 3. The coverage gate (§21.8.3, Approach A).
        let cov = parse_json(&engine(self.rt.coverage(&st, &manifest_json, "{}"))?)?;
        let cov_units = cov["units"].as_array().cloned().unwrap_or_default();
        let failing = lid_shared::publish::failing_units(&cov);
        let digest = lid_shared::publish::manifest_digest(&entries);
        let mut provenance = lid_shared::publish::provenance(&who.entity_uri, &who.key_id, now, &digest, &self.ranker_version(), &approvals);
        let cosignature_needed = lid_shared::publish::needs_cosignature(&entries);
        let mut signers: Vec<String> = vec![who.entity_uri.clone()];
        if !failing.is_empty() && skip && cosignature_needed {
            signers.extend(self.db.read(|c| {
                let mut st = c.prepare("SELECT entity_uri FROM publish_cosignatures WHERE agent_id = ?1 AND version = ?2 AND manifest_sha256 = ?3 ORDER BY entity_uri")?;
                let rows = st.query_map(params![agent, version, digest], |r| r.get::<_, String>(0))?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })?);
        }
        provenance["coverage_gate"] = lid_shared::publish::Gate { failing: &failing, skip, signers, cosignature_needed, version: &version, manifest_sha256: &digest, now_ms: now }.verdict()?;

        // 4. The stubs for every profile (a stub over 500 body tokens fails the publish).
        let mut stubs = Vec::new();
        for p in PROFILES {
            let s = parse_json(&engine(self.rt.render_stub(&st, &manifest_json, Some(p)))?)?;
            stubs.push((p.to_string(), s["text"].as_str().unwrap_or_default().to_string(), s["total_tokens"].as_i64().unwrap_or(0)));
        }

        // 5. One transaction: facts, manifest fact, registry row, stub cache, coverage.
        let manifest_uri = format!("instruction:{deployment}/{agent}/manifest/{version}");
        let mfact = NewFact {
            uri: manifest_uri.clone(),
            unit_key: format!("instruction:{deployment}/{agent}/manifest"),
            agent_id: agent.to_string(),
            unit_name: "manifest".into(),
            version: version.clone(),
            content: manifest_json.clone(),
            interpret_as: "instruction".into(),
            tokens: token_count,
            authored_by: who.entity_uri.clone(),
            authored_at: iso(now),
            source_trust: 1.0,
            provenance: provenance.clone(),
        };
        let sv = self.stub_version();
        let written: Vec<String> = staged.iter().map(|f| f.uri.clone()).collect();
        self.db.write(|tx| {
            if current_manifest_id(tx, agent)? != head {
                return Err(lid_shared::publish::published_concurrently(agent).into());
            }
            if crate::db::reviewed_horizon(tx, &reviewed)? != horizon {
                return Err(lid_shared::publish::units_moved(agent).into());
            }
            for (f, after) in staged.iter().zip(&staged_after) {
                if latest_in(tx, &f.unit_key)?.map(|l| l.uri) != *after {
                    return Err(lid_shared::units::written_concurrently(&f.uri).into());
                }
                if let Err(h) = insert_fact(tx, f, now, self.db.attestor())? {
                    return Err(ApiError::new(409, "fact_version_conflict", format!("{} was written concurrently with other content (sha256 {h})", f.uri)));
                }
            }
            if let Err(_h) = insert_fact(tx, &mfact, now, self.db.attestor())? {
                return Err(ApiError::new(409, "manifest_version_conflict", format!("{manifest_uri} already exists; versions are immutable")));
            }
            tx.execute("UPDATE instruction_manifests SET superseded_at = ?1 WHERE agent_id = ?2 AND superseded_at IS NULL", params![now, agent]).map_err(DbError::from)?;
            tx.execute(
                "INSERT INTO instruction_manifests (id, agent_id, version, fact_uri, token_count, body, created_at, superseded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL)",
                params![crate::db::uuid4(), agent, version, manifest_uri, token_count, json!(entries).to_string(), now],
            )
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
                    ApiError::new(409, "manifest_version_conflict", format!("version {version:?} is already published; versions are immutable"))
                }
                e => ApiError::storage(e.into()),
            })?;
            tx.execute("DELETE FROM boot_stubs WHERE agent_id = ?1", params![agent]).map_err(DbError::from)?;
            for (p, text, tokens) in &stubs {
                tx.execute(
                    "INSERT INTO boot_stubs (agent_id, adapter_profile, stub_version, body, token_count, generated_at, manifest_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![agent, p, sv, text, tokens, now, version],
                )
                .map_err(DbError::from)?;
            }
            for u in &cov_units {
                let (unit, pct, hit, probes) = lid_shared::recertify::coverage_row(u);
                tx.execute(lid_shared::recertify::INSERT_COVERAGE_SQL, params![agent, version, unit, pct, hit, probes, now]).map_err(DbError::from)?;
            }
            if skip && !failing.is_empty() {
                insert_event(tx, Some(agent), "coverage_gate_bypassed", &json!({"version": version, "provenance": provenance["coverage_gate"]}), now)?;
            }
            Ok::<_, ApiError>(())
        })?;
        Ok(json!({
            "agent_id": agent,
            "manifest_version": version,
            "fact_uri": manifest_uri,
            "token_count": token_count,
            "coverage_report": cov_units.iter().map(|u| json!({"unit": u["unit"], "coverage_pct": u["coverage_pct"], "passed": u["passed"], "hit_at_10": u["hit_at_10"]})).collect::<Vec<_>>(),
            "units_written": written,
            "warnings": report["warnings"],
            "admission_warnings": admission_warnings,
            "provenance": provenance,
        }))
    }
}

// ---- the content channel: knowledge packs, quarantine (Spec-13) -------------------------


impl Service {
    /// The agent's deployment: the current manifest's, else `deployment` from the body.
    fn deployment_of(&self, agent: &str, body: &Value) -> Result<String, ApiError> {
        self.write_deployment(agent, self.current(agent)?.map(|c| c.0), body)
    }

    /// The deployment a write for `agent` goes to ([`lid_shared::units::deployment`]): the
    /// current manifest's (`current`), else that of the agent's earlier units, else the body's.
    fn write_deployment(&self, agent: &str, current: Option<String>, body: &Value) -> Result<String, ApiError> {
        let earlier: Option<String> = match current {
            Some(_) => None,
            None => self.db.read(|c| Ok(c.query_row(lid_shared::units::FIRST_DEPLOYED_FACT_SQL, params![agent], |r| r.get(0)).optional()?))?,
        };
        Ok(lid_shared::units::deployment(agent, current, earlier.as_deref().and_then(lid_shared::units::deployment_in), body)?)
    }

    /// Record a denied write as a `capability_denied` service event, then return the denial.
    fn denied(&self, agent: &str, who: &Principal, action: &str, e: impl Into<ApiError>, extra: Value) -> ApiError {
        let e: ApiError = e.into();
        let mut detail = json!({"action": action, "key_id": who.key_id, "entity_uri": who.entity_uri, "code": e.code});
        if let (Some(d), Some(x)) = (detail.as_object_mut(), extra.as_object()) {
            d.extend(x.clone());
        }
        let _ = self.db.write(|tx| insert_event(tx, Some(agent), "capability_denied", &detail, now_ms()).map(|_| ()));
        e
    }

    /// Build a pack's ranker index before the pack is stored, through a recall (audited
    /// nowhere) over its staged facts alone, on the recall's own engine limits: the index
    /// is cached under the pack's digest, so the agent's recalls read it and never build
    /// it. A pack whose index cannot be built within those limits is refused here
    /// (`knowledge_pack_too_large`, nothing written), where stored it would have failed
    /// every recall of the agent, each one spending the engine's whole time limit.
    fn index_pack(&self, agent: &str, deployment: &str, pack: &str, listing: Value, facts: &[NewFact]) -> Result<(), ApiError> {
        let staged = crate::db::SnapshotFacts::staged_pack(self.db.clone(), agent, facts, listing);
        let st = Storage { facts: Arc::new(staged), audit: Arc::new(NoAudit) };
        let (manifest, request, ctx) = lid_shared::packs::index_probe(agent, deployment, pack, now_ms());
        match engine(self.rt.recall_preparing(&st, &manifest, &request, &ctx)) {
            Ok(_) => Ok(()),
            Err(e) if e.0.code == "engine_failed" || e.0.code == "engine_interrupted" => Err(ApiError::new(
                413,
                "knowledge_pack_too_large",
                format!("pack {pack:?}: its ranker index could not be built within the engine's limits, so every recall of the agent would fail on it; nothing was stored. Split it into smaller packs, or raise lid serve's --memory-mib / --call-timeout-ms ({})", e.0.message),
            )),
            Err(e) => Err(e),
        }
    }

    /// `PUT /v1/agents/{id}/knowledge/{pack}`: store a knowledge pack as content facts
    /// (`interpret_as: content`) and register it, in one transaction. Write authority for
    /// the agent (its own key or an admin) is enough: content is data, not instructions.
    /// Returns the pack's catalog entry and whether anything changed.
    pub fn upload_knowledge(&self, agent: &str, pack: &str, body: &Value, who: &Principal) -> Result<(Value, bool), ApiError> {
        if let Err(e) = who.require_self(agent) {
            return Err(self.denied(agent, who, "knowledge_upload", e, json!({"pack": pack})));
        }
        let (kmd, units) = lid_shared::packs::upload_fields(body)?;
        let read = parse_json(&engine(self.rt.read_knowledge_pack(&json!({"id": pack, "knowledge_md": kmd, "units": units}).to_string()))?)?;
        let files = read["files"].as_array().cloned().unwrap_or_default();
        let text_of = |f: &Value| units.get(f["key"].as_str().unwrap_or_default()).and_then(Value::as_str).unwrap_or_default().to_string();
        let mut lint = vec![json!({"name": "KNOWLEDGE.md", "content": kmd, "interpret_as": "content"})];
        lint.extend(files.iter().map(|f| json!({"name": f["path"], "content": text_of(f), "interpret_as": "content"})));
        let admission_warnings = self.admit(agent, lint)?;
        let basis = read_basis(&self.db, agent)?;
        let deployment = self.deployment_of(agent, body)?;
        let digest = lid_shared::packs::scoped_digest(agent, read["digest"].as_str().unwrap_or_default());
        let rows: Vec<(String, String, Option<i64>, i64)> = self.db.read(|c| {
            let mut st = c.prepare_cached(lid_shared::packs::PACK_UPLOADS_SQL)?;
            let rows = st.query_map(params![agent, pack], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        let files_digest = read["digest"].as_str().unwrap_or_default();
        if let Some((v, ..)) = rows.iter().find(|(_, d, s, quarantined)| s.is_none() && lid_shared::packs::same_upload(d, agent, files_digest) && *quarantined == 0) {
            let stored = self.knowledge_catalog(agent)?.into_iter().find(|e| e["pack"] == pack).unwrap_or(Value::Null);
            let (mut entry, stale) = lid_shared::packs::unchanged_entry(&stored, &read["catalog"]);
            if stale {
                let catalog = &read["catalog"];
                self.db.write(|tx| tx.execute(lid_shared::packs::REFRESH_CATALOG_SQL, params![catalog.to_string(), catalog["units"].as_i64().unwrap_or(0), agent, pack, v]).map_err(DbError::from))?;
            }
            entry["unchanged"] = json!(true);
            entry["upload_version"] = json!(v);
            entry["admission_warnings"] = json!(admission_warnings);
            return Ok((entry, false));
        }
        let n = rows.iter().filter_map(|(v, ..)| v.strip_prefix('v').and_then(|n| n.parse::<u64>().ok())).max().unwrap_or(0) + 1;
        let version = format!("v{n}");
        let prefix = format!("knowledge:{deployment}/{agent}/{pack}/{version}/");
        let key_prefix = format!("knowledge:{deployment}/{agent}/{pack}/");
        let now = now_ms();
        let provenance = json!({"knowledge_pack": pack, "pack_version": version, "uploaded_by_key": who.key_id});
        let trust = lid_shared::units::source_trust(who);
        let mut facts = vec![self.new_fact(agent, &format!("{pack}/KNOWLEDGE.md"), &format!("{prefix}KNOWLEDGE.md"), &format!("{key_prefix}KNOWLEDGE.md"), &version, kmd, "content", &who.entity_uri, provenance.clone())?];
        facts[0].source_trust = trust;
        for f in &files {
            let path = f["path"].as_str().unwrap_or_default();
            facts.push(NewFact {
                uri: format!("{prefix}{path}"),
                unit_key: format!("{key_prefix}{path}"),
                agent_id: agent.to_string(),
                unit_name: format!("{pack}/{path}"),
                version: version.clone(),
                content: text_of(f),
                interpret_as: "content".into(),
                tokens: f["tokens"].as_i64().unwrap_or(0),
                authored_by: who.entity_uri.clone(),
                authored_at: iso(now),
                source_trust: trust,
                provenance: provenance.clone(),
            });
        }
        let catalog = read["catalog"].clone();
        let units_n = catalog["units"].as_i64().unwrap_or(0);
        let paths: Vec<&str> = files.iter().filter_map(|f| f["path"].as_str()).collect();
        let listing = json!({"id": pack, "version": version, "prefix": prefix, "files": paths, "digest": digest});
        self.index_pack(agent, &deployment, pack, listing, &facts)?;
        self.db.write(|tx| {
            basis_held(tx, agent, &basis)?;
            for f in &facts {
                if let Err(h) = insert_fact(tx, f, now, self.db.attestor())? {
                    return Err(ApiError::new(409, "fact_version_conflict", format!("{} was written concurrently with other content (sha256 {h}); retry the upload", f.uri)));
                }
            }
            // Files of the previous version that this one no longer has are retired too.
            tx.execute(
                "UPDATE instruction_facts SET valid_until = ?1 WHERE agent_id = ?2 AND substr(unit_key, 1, length(?3)) = ?3 AND valid_until IS NULL AND substr(uri, 1, length(?4)) <> ?4",
                params![iso(now), agent, key_prefix, prefix],
            )
            .map_err(DbError::from)?;
            tx.execute("UPDATE knowledge_packs SET superseded_at = ?1 WHERE agent_id = ?2 AND pack = ?3 AND superseded_at IS NULL", params![now, agent, pack]).map_err(DbError::from)?;
            tx.execute(
                "INSERT INTO knowledge_packs (agent_id, pack, version, prefix, meta, files, digest, units, uploaded_by, created_at, superseded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL)",
                params![agent, pack, version, prefix, catalog.to_string(), json!(paths).to_string(), digest, units_n, who.entity_uri, now],
            )
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => ApiError::new(409, "fact_version_conflict", format!("pack {pack:?} {version} was uploaded concurrently; retry")),
                e => ApiError::storage(e.into()),
            })?;
            insert_event(tx, Some(agent), "knowledge_pack_upload", &json!({"pack": pack, "version": version, "digest": digest, "entity_uri": who.entity_uri}), now)?;
            Ok::<_, ApiError>(())
        })?;
        let mut entry = pack_entry(pack, &version, &catalog, &digest, now, &who.entity_uri);
        entry["unchanged"] = json!(false);
        entry["files"] = json!(facts.iter().skip(1).map(|f| json!({"path": f.uri.strip_prefix(&prefix).unwrap_or_default(), "uri": f.uri, "sha256": f.sha256(), "tokens": f.tokens})).collect::<Vec<_>>());
        entry["collisions"] = read["collisions"].clone();
        entry["admission_warnings"] = json!(admission_warnings);
        Ok((entry, true))
    }

    /// `GET /v1/agents/{id}/knowledge`: the catalog of the agent's current packs, by id.
    pub fn knowledge_catalog(&self, agent: &str) -> Result<Vec<Value>, ApiError> {
        Ok(self.db.read(|c| {
            let mut st = c.prepare_cached("SELECT pack, version, meta, digest, created_at, uploaded_by FROM knowledge_packs WHERE agent_id = ?1 AND superseded_at IS NULL ORDER BY pack")?;
            let rows = st.query_map(params![agent], |r| {
                let meta: Value = serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or(Value::Null);
                Ok(pack_entry(&r.get::<_, String>(0)?, &r.get::<_, String>(1)?, &meta, &r.get::<_, String>(3)?, r.get(4)?, &r.get::<_, String>(5)?))
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?)
    }

    /// `POST /v1/agents/{id}/federated-facts`: a fact from another organisation or a
    /// federation peer (`origin`), stored in quarantine (Spec-13). Sender claims asking
    /// for more (`promote`, `quarantine: false`, `interpret_as: instruction`, a trust) are
    /// ignored and recorded as a `promotion_rejected` service event; the fact stays
    /// quarantined until an admin promotes it.
    pub fn receive_federated(&self, agent: &str, body: &Value, who: &Principal) -> Result<Value, ApiError> {
        if let Err(e) = who.require_self(agent) {
            return Err(self.denied(agent, who, "federated_fact", e, json!({})));
        }
        let (name, content, origin) = federated_fields(body)?;
        let claims = promotion_claims(body);
        let admission_warnings = self.admit(agent, vec![json!({"name": name, "content": content, "interpret_as": "content"})])?;
        let deployment = self.deployment_of(agent, body)?;
        let sha = sha256_hex(content.as_bytes());
        let uri = format!("quarantine:{deployment}/{agent}/{name}/{}", &sha[..16]);
        let provenance = json!({"origin": origin, "received_by": who.entity_uri, "key_id": who.key_id, "sender_claims": claims});
        let mut fact = self.new_fact(agent, name, &uri, &uri, "q1", content, "content", origin, provenance)?;
        fact.source_trust = 0.0;
        let now = now_ms();
        let (written, status) = self.db.write(|tx| {
            let w = insert_fact(tx, &fact, now, self.db.attestor())?;
            if w == Ok(FactWrite::Inserted) {
                tx.execute("UPDATE instruction_facts SET quarantine = 'quarantined', origin = ?1 WHERE uri = ?2", params![origin, uri])?;
                insert_event(tx, Some(agent), "fact_quarantined", &json!({"uri": uri, "name": name, "origin": origin, "entity_uri": who.entity_uri}), now)?;
            }
            if !claims.is_empty() {
                let detail = json!({"uri": uri, "origin": origin, "claims": claims, "entity_uri": who.entity_uri, "reason": "a sender's assertion cannot promote a fact (Spec-13, federation boundary)"});
                insert_event(tx, Some(agent), "promotion_rejected", &detail, now)?;
            }
            let (status, held): (Option<String>, Option<String>) = tx.query_row("SELECT quarantine, origin FROM instruction_facts WHERE uri = ?1", params![uri], |r| Ok((r.get(0)?, r.get(1)?))).optional()?.unwrap_or_default();
            let held = held.unwrap_or_default();
            if w == Ok(FactWrite::Unchanged) && held != origin {
                insert_event(tx, Some(agent), "fact_received_again", &lid_shared::federation::received_again(&uri, origin, &held, &who.entity_uri), now)?;
            }
            Ok::<_, DbError>((w, (status, held)))
        })?;
        let (status, held) = status;
        if written.is_err() {
            return Err(ApiError::new(409, "fact_version_conflict", format!("{uri} holds other content")));
        }
        Ok(json!({
            "uri": uri, "name": name, "origin": held, "sha256": sha, "quarantine": status,
            "ignored_claims": claims.keys().collect::<Vec<_>>(), "unchanged": written == Ok(FactWrite::Unchanged), "admission_warnings": admission_warnings,
        }))
    }

    /// `GET /v1/agents/{id}/federated-facts` (admins): quarantined and promoted facts.
    pub fn federated_facts(&self, agent: &str) -> Result<Value, ApiError> {
        let facts = self.db.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT uri, unit_name, origin, quarantine, sha256, content, created_at, provenance, quarantine_reason FROM instruction_facts WHERE agent_id = ?1 AND quarantine IS NOT NULL ORDER BY created_at, uri",
            )?;
            let rows = st.query_map(params![agent], |r| {
                let prov: Value = serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or(Value::Null);
                Ok(json!({"uri": r.get::<_, String>(0)?, "name": r.get::<_, String>(1)?, "origin": r.get::<_, Option<String>>(2)?, "quarantine": r.get::<_, String>(3)?,
                    "sha256": r.get::<_, String>(4)?, "content": r.get::<_, String>(5)?, "received_at": iso(r.get(6)?), "sender_claims": prov["sender_claims"], "received_by": prov["received_by"],
                    "quarantine_reason": r.get::<_, Option<String>>(8)?}))
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        Ok(json!({"agent_id": agent, "facts": facts}))
    }

    /// `POST /v1/agents/{id}/facts/promote`: an admin holding `instruction:write` promotes
    /// a quarantined fact into the agent's live facts (`interpret_as` content by default,
    /// or instruction), as a new version of unit `name` (default: the fact's own name).
    /// The quarantined row becomes `promoted`; who promoted it is recorded (Spec-13, Audit).
    pub fn promote(&self, agent: &str, body: &Value, who: &Principal) -> Result<Value, ApiError> {
        if let Err(e) = who.require_admin().and_then(|_| who.require_instruction_write(agent)) {
            return Err(self.denied(agent, who, "promote", e, json!({"uri": body.get("uri")})));
        }
        let (kind, requested) = lid_shared::units::promotion(body)?;
        let uri = requested.uri.to_string();
        let interpret_as = kind.as_str();
        let row: Option<(String, String, Option<String>, String)> = self.db.read(|c| {
            Ok(c.query_row("SELECT content, unit_name, origin, quarantine FROM instruction_facts WHERE uri = ?1 AND agent_id = ?2 AND quarantine IS NOT NULL", params![uri, agent], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?)
        })?;
        let Some((content, qname, origin, state)) = row else {
            return Err(ApiError::new(404, "quarantined_fact_not_found", format!("agent {agent:?} has no quarantined fact {uri:?}: GET /v1/agents/{agent}/federated-facts lists them")));
        };
        if state == "promoted" {
            return Err(ApiError::new(409, "fact_already_promoted", format!("{uri} was already promoted; quarantined facts are promoted once")));
        }
        let name = requested.name.unwrap_or(&qname).to_string();
        lid_shared::units::check_name(&name)?;
        let admission_warnings = self.admit(agent, vec![json!({"name": name, "content": content, "interpret_as": interpret_as})])?;
        let basis = read_basis(&self.db, agent)?;
        let snapshot = self.writable_snapshot(agent)?;
        same_basis(agent, basis.as_deref(), snapshot.as_deref())?;
        let deployment = self.write_deployment(agent, snapshot.as_deref().map(|s| current_of(s).0), body)?;
        let unit_key = format!("instruction:{deployment}/{agent}/{name}");
        let entry = snapshot.as_deref().and_then(|s| lid_shared::units::manifest_entry(&s.manifest_json, &name));
        lid_shared::units::check_reviewed(&name, kind, entry.as_ref())?;
        let in_manifest = entry.is_some();
        let latest = self.latest_fact(&unit_key)?;
        lid_shared::units::check_kind(&name, kind, latest.as_ref(), in_manifest)?;
        let version = lid_shared::units::plan_version(requested.version, latest.as_ref(), None, |v, t| engine(self.rt.version_order(v, t)))?;
        let live = format!("{unit_key}/{version}");
        if crate::db::split_fact_uri(&live).is_none() {
            return Err(ApiError::bad_request("invalid_request", format!("{live:?} is not a valid instruction: URI (unit names are kebab-case, versions like v2)")));
        }
        let origin = origin.unwrap_or_default();
        let provenance = json!({"promoted_from": uri, "promoted_by": who.entity_uri, "key_id": who.key_id, "origin": origin});
        let author = lid_shared::units::promoted_author(&origin, &who.entity_uri);
        let mut fact = self.new_fact(agent, &name, &live, &unit_key, &version, &content, interpret_as, author, provenance)?;
        fact.source_trust = lid_shared::units::PROMOTED_TRUST;
        self.stub_still_fits(snapshot.as_deref(), kind, entry.as_ref(), &fact)?;
        let now = now_ms();
        self.db.write(|tx| {
            basis_held(tx, agent, &basis)?;
            if latest_in(tx, &unit_key)? != latest {
                return Err(lid_shared::units::written_concurrently(&live).into());
            }
            if insert_fact(tx, &fact, now, self.db.attestor())? != Ok(FactWrite::Inserted) {
                return Err(ApiError::new(409, "fact_version_conflict", format!("{live} already exists; pass another `version`")));
            }
            if tx.execute("UPDATE instruction_facts SET quarantine = 'promoted' WHERE uri = ?1 AND quarantine = 'quarantined'", params![uri]).map_err(DbError::from)? != 1 {
                return Err(ApiError::new(409, "fact_already_promoted", format!("{uri} was promoted concurrently")));
            }
            if interpret_as == "instruction" {
                tx.execute("DELETE FROM boot_stubs WHERE agent_id = ?1", params![agent]).map_err(DbError::from)?;
            }
            let detail = json!({"uri": live, "promoted_from": uri, "interpret_as": interpret_as, "origin": origin, "promoted_by": who.entity_uri, "key_id": who.key_id});
            insert_event(tx, Some(agent), "fact_promoted", &detail, now)?;
            Ok::<_, ApiError>(())
        })?;
        Ok(json!({"uri": live, "version": version, "interpret_as": interpret_as, "sha256": fact.sha256(), "promoted_from": uri, "promoted_by": who.entity_uri, "origin": origin, "admission_warnings": admission_warnings}))
    }

    /// `GET /v1/agents/{id}/service-events` (admins): the agent's service events, oldest
    /// first (capability denials, quarantines, rejected promotions, promotions, …),
    /// optionally of one `kind`.
    pub fn service_events(&self, agent: &str, kind: Option<&str>) -> Result<Value, ApiError> {
        let events = self.db.read(|c| {
            let mut st = c.prepare_cached("SELECT id, kind, detail, created_at FROM service_events WHERE agent_id = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY created_at, rowid")?;
            let rows = st.query_map(params![agent, kind], |r| {
                let detail: Value = serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or(Value::Null);
                Ok(json!({"id": r.get::<_, String>(0)?, "kind": r.get::<_, String>(1)?, "detail": detail, "created_at": iso(r.get(3)?)}))
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        Ok(json!({"agent_id": agent, "events": events}))
    }
}


