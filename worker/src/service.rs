//! The operations of the worker (§21.8), mirroring `lid serve`'s `host/src/service.rs`
//! route for route: the same validation, coverage gate, stubs, audit and JSON. The engine
//! is `lid-core` linked directly (compiled for `wasm32-unknown-unknown`); its synchronous
//! storage ports are served from a [`Snapshot`](crate::store::Snapshot) read ahead from
//! KV and D1, and audit records it appends are buffered, then written to D1 *before* the
//! answer is returned (§21.5.1).

use std::cell::RefCell;
use std::collections::BTreeMap;

use lid_core::store::{AuditSink, Fact, InterpretAs};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::args;
use crate::auth::{check_agent_id, Principal, CAP_INSTRUCTION_WRITE};
use crate::error::{ApiError, ApiResult};
use crate::store::{current_manifest_id, current_version, event, ledger_insert, sha_of, split_fact_uri, unless_moved, write_basis, Snapshot, Store, WorkerFacts};
use crate::util::{iso, now_ms, random_hex, sha256_hex, uuid4};

pub use lid_shared::heartbeat::PROFILES;
/// The rolling audit window (§21.5.3).
pub const AUDIT_WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;

/// Per-request state: the bindings and the configuration from vars/secrets.
pub struct Service {
    pub store: Store,
    pub env_keys: Vec<crate::auth::EnvKey>,
    /// `LID_HEARTBEAT_SECRET`: the HS256 key of heartbeat triggers.
    pub heartbeat_secret: Option<String>,
    /// `LID_HEARTBEAT_PUBLIC_KEY`: an Ed25519 public key (base64url, the JWK `x`) for EdDSA
    /// triggers; wins over the secret when both are set.
    pub heartbeat_public_key: Option<String>,
    pub wake_reasons: Option<Vec<String>>,
}

/// Audit records the engine appends during one call, written to D1 after it.
#[derive(Default)]
struct Buffered(RefCell<Vec<String>>);

impl AuditSink for Buffered {
    fn append(&self, record_json: &str) -> Result<(), String> {
        self.0.borrow_mut().push(record_json.to_string());
        Ok(())
    }
}

pub use lid_shared::audit::AuditRow;


/// The engine's identity (`GET /healthz`, `embedding_model_version`).
pub fn info() -> Value {
    serde_json::from_str(&lid_core::api::info()).unwrap_or(Value::Null)
}

/// An always-applicable unit is embedded in the boot stub (§21.1.1): a write or a
/// promotion of its instruction text is refused (`boot_stub_too_large`) when the stub of
/// any profile, with the new text, would no longer fit (§21.1.2), as on `lid serve`.
fn stub_still_fits(current: Option<&Snapshot>, kind: Kind, entry: Option<&Value>, unit_key: &str, fact: &Fact) -> ApiResult<()> {
    if let (Some(s), true) = (current, lid_shared::units::changes_stub(kind, entry)) {
        let mut facts = s.facts.clone();
        facts.insert(unit_key, fact.clone());
        for p in PROFILES {
            lid_core::api::render_stub(&s.manifest_json, Some(p), &facts)?;
        }
    }
    Ok(())
}

pub fn ranker_version() -> String {
    lid_core::rank::RANKER_VERSION.to_string()
}

fn stub_version() -> i64 {
    lid_core::stub::STUB_VERSION as i64
}

fn parse(s: &str) -> ApiResult<Value> {
    serde_json::from_str(s).map_err(ApiError::engine_json)
}

/// A snapshot's (deployment, manifest version).
fn current_of(s: &Snapshot) -> (String, String) {
    let m: Value = serde_json::from_str(&s.manifest_json).unwrap_or(Value::Null);
    (m["deployment"].as_str().unwrap_or_default().to_string(), s.version.clone())
}

/// A boot-context request as the route reads it: `?profile=`, `?budget=`, `?query=`, the
/// `X-Lid-Trigger` header, and whether to record the preloads' audit (not for a HEAD).
#[derive(Clone, Copy)]
pub struct BootQuery<'a> {
    pub profile: Option<&'a str>,
    pub budget: Option<&'a str>,
    pub query: Option<&'a str>,
    pub trigger: Option<&'a str>,
    pub record: bool,
}

/// The engine call's context: time, entropy, heartbeat, who is calling (the key's
/// identity, for the audit record) and the soft-lifted units.
fn context(heartbeat_id: &str, session_start: Option<u64>, caller: &str, lift: &[String]) -> String {
    let now = now_ms() as u64;
    json!({"now_ms": now, "entropy": random_hex(20), "heartbeat_id": heartbeat_id, "session_start_ms": session_start.unwrap_or(now), "caller": caller, "lift_units": lift}).to_string()
}

/// How to give the worker a heartbeat trigger key (the `heartbeat_not_configured` message).
const KEY_HOWTO: &str = "set the LID_HEARTBEAT_SECRET secret for HS256 triggers (wrangler secret put LID_HEARTBEAT_SECRET) or the LID_HEARTBEAT_PUBLIC_KEY var for EdDSA triggers (the Ed25519 public key, base64url, the JWK `x`)";

impl Service {
    /// The heartbeat trigger key from the worker's configuration (`None`: none set; a
    /// malformed `LID_HEARTBEAT_PUBLIC_KEY` is a 503 `heartbeat_not_configured`).
    fn trigger_key(&self) -> ApiResult<Option<crate::jwt::TriggerKey>> {
        crate::jwt::TriggerKey::from_config(self.heartbeat_secret.as_deref(), self.heartbeat_public_key.as_deref())
    }

    async fn snapshot(&self, agent: &str) -> ApiResult<std::rc::Rc<Snapshot>> {
        self.store.snapshot(agent).await?.ok_or_else(|| ApiError::manifest_not_found(agent))
    }

    /// Write buffered audit records to `instruction_audit` (+ meta); the error names the
    /// failure (`audit_write_failed` in the response's warnings, as the engine reports it).
    async fn flush_audit(&self, audit: &Buffered) -> Result<(), String> {
        let lines = audit.0.borrow().clone();
        let mut stmts = Vec::new();
        for line in lines {
            let r: AuditRow = serde_json::from_str(&line).map_err(|e| format!("audit record is not valid JSON: {e}"))?;
            let ins = self.store.stmt(
                lid_shared::audit::INSERT_AUDIT_SQL,
                args![r.id, r.agent_id, r.heartbeat_id, r.session_start, r.intent, json!(r.loaded_chunks).to_string(), json!(r.used_chunks).to_string(), json!(r.missed_chunks).to_string(), r.audit_token, r.created_at],
            );
            let meta = self.store.stmt(
                lid_shared::audit::INSERT_AUDIT_META_SQL,
                args![
                    r.id,
                    if r.source.is_empty() { "recall_instruction".to_string() } else { r.source.clone() },
                    r.manifest_version,
                    json!(r.content_served).to_string(),
                    json!(r.chunk_sha256).to_string(),
                    r.assembly_sha256,
                    r.request.as_ref().filter(|q| q.is_object()).map(Value::to_string),
                    json!(r.warnings).to_string(),
                    r.error.as_ref().map(Value::to_string),
                    r.caller,
                    r.corpus_key
                ],
            );
            stmts.push(ins.map_err(|e| e.0.message)?);
            stmts.push(meta.map_err(|e| e.0.message)?);
        }
        if stmts.is_empty() {
            return Ok(());
        }
        self.store.batch(stmts).await.map_err(|e| {
            worker::console_error!("audit_write_failed: the recall was answered but its audit record was not stored: {e}");
            e.to_string()
        })
    }

    // ---- reads ---------------------------------------------------------------------

    /// §21.8.2: the current manifest, with the ranker ("embedding model") version.
    pub async fn get_manifest(&self, agent: &str, admin: bool) -> ApiResult<Value> {
        let s = self.snapshot(agent).await?;
        let view = lid_shared::publish::ManifestView {
            agent,
            manifest_json: &s.manifest_json,
            version: &s.version,
            fact_uri: &s.fact_uri,
            token_count: s.token_count,
            created_at_ms: s.created_at,
            ranker_version: &ranker_version(),
            provenance: admin.then_some(&s.provenance),
        };
        view.response().map_err(ApiError::backend)
    }

    /// §21.8.1: the boot stub (markdown, manifest version, token count, stub version).
    pub async fn boot_stub(&self, agent: &str, profile: Option<&str>) -> ApiResult<(String, String, i64, i64)> {
        let s = self.snapshot(agent).await?;
        self.stub_of(&s, profile).await
    }

    /// The boot stub for `profile`, rendered from the verified snapshot (kept with it:
    /// `StubMemo`) and recorded in `boot_stubs`, never served from that table.
    async fn stub_of(&self, s: &Snapshot, profile: Option<&str>) -> ApiResult<(String, String, i64, i64)> {
        let agent = s.agent_id.as_str();
        let profile = lid_shared::heartbeat::profile_or_generic(profile);
        let sv = stub_version();
        if let Some((body, tokens)) = s.stubs.get(profile, sv) {
            return Ok((body, s.version.clone(), tokens, sv));
        }
        let stub = parse(&lid_core::api::render_stub(&s.manifest_json, Some(profile), &s.facts)?)?;
        let body = stub["text"].as_str().unwrap_or_default().to_string();
        let tokens = stub["total_tokens"].as_i64().unwrap_or(0);
        {
            // Record it only if nothing changed since the snapshot (one conditional
            // statement): a racing publish or unit write has already cleared the rows.
            let recorded = self
                .store
                .run(
                    "INSERT OR REPLACE INTO boot_stubs (agent_id, adapter_profile, stub_version, body, token_count, generated_at, manifest_version)
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
                     WHERE EXISTS (SELECT 1 FROM instruction_manifests WHERE id = ?8 AND superseded_at IS NULL)
                       AND (SELECT coalesce(max(rowid), 0) FROM instruction_facts WHERE agent_id = ?1) = ?9",
                    args![agent, profile, sv, body, tokens, now_ms(), s.version, s.manifest_id, s.generation],
                )
                .await;
            match recorded {
                // kept with the snapshot once its record is written: later requests serve it
                Ok(_) => {
                    s.stubs.put(profile, sv, &body, tokens);
                }
                // best effort, as on lid serve: served all the same, recorded on a later request
                Err(e) => worker::console_warn!("boot_stubs record for {agent} ({profile}) not written: {}", e.0.message),
            }
        }
        Ok((body, s.version.clone(), tokens, sv))
    }

    /// §21.8.4 / §21.3: recall; the audit record is stored before the answer.
    /// `head` is the agent's snapshot head, read with the caller's key.
    pub async fn recall(&self, agent: &str, caller: &str, body: &str, head: Option<(String, i64)>) -> ApiResult<String> {
        // Only the heartbeat id is read here; the engine reads (and checks) the rest.
        let (body, heartbeat_id) = lid_shared::heartbeat::recall_body(body)?;
        let s = self.store.snapshot_at(agent, head).await?.ok_or_else(|| ApiError::manifest_not_found(agent))?;
        let ctx = context(&heartbeat_id, None, caller, &s.lift_units);
        let audit = Buffered::default();
        let out = lid_core::api::recall(&s.manifest_json, body, &ctx, &s.facts, &audit)?;
        match self.flush_audit(&audit).await {
            Ok(()) => Ok(out),
            Err(e) => {
                let mut v = parse(&out)?;
                lid_shared::audit::recall_unrecorded(&mut v, &e);
                Ok(v.to_string())
            }
        }
    }

    /// Heartbeat: verify the signed trigger (S1), then the boot stub and the §21.1.5
    /// preloads for its wake reason, audited as `task_type_preload`.
    pub async fn heartbeat(&self, agent: &str, caller: &str, body: &Value) -> ApiResult<Value> {
        let Some(key) = self.trigger_key()? else {
            return Err(ApiError::new(503, "heartbeat_not_configured", format!("this worker has no heartbeat signing key: {KEY_HOWTO}")));
        };
        let (token, profile) = lid_shared::heartbeat::heartbeat_request(body)?;
        let t = key.verify(token, agent, (now_ms() / 1000) as u64)?;
        let s = self.snapshot(agent).await?;
        let (stub, version, stub_tokens, _) = self.stub_of(&s, profile).await?;
        let ctx = context(&t.heartbeat_id, t.session_start, caller, &s.lift_units);
        let audit = Buffered::default();
        let preloaded = lid_core::api::preload(&s.manifest_json, &t.wake_reason, stub_tokens.max(0) as u32, &ctx, &s.facts, &audit);
        if preloaded.is_err() {
            // An aborted heartbeat's error is audited too (§21.1.5 rule 4), best effort.
            let _ = self.flush_audit(&audit).await;
        }
        let mut p = parse(&preloaded?)?;
        if let Err(e) = self.flush_audit(&audit).await {
            lid_shared::audit::preload_unrecorded(&mut p, &e);
        }
        Ok(lid_shared::heartbeat::Heartbeat { agent, trigger: &t, manifest_version: &version, stub: &stub, stub_tokens, profile, preloads: p }.response())
    }

    /// `POST /v1/agents/{id}/handoff`, as `lid serve` does it: validate and render in the
    /// core, then keep it as the agent's current session (a `handoff` service event).
    pub async fn handoff(&self, agent: &str, body: &str, who: &Principal) -> ApiResult<Value> {
        let v = parse(&lid_core::api::compose_handoff(body)?)?;
        let h = &v["handoff"];
        let (_, from) = lid_shared::heartbeat::handoff_parties(h, agent)?;
        let sender = who.role == crate::auth::Role::Agent && who.agent_id.as_deref() == Some(from);
        if !sender || who.is_agent(agent) {
            who.require_self(agent)?;
        } else {
            let receiver = self.store.writable_snapshot(agent).await?.map(|s| current_of(&s).0);
            let sending = self.store.writable_snapshot(from).await?.map(|s| current_of(&s).0);
            lid_shared::heartbeat::sender_may_hand_off(agent, from, receiver.as_deref(), sending.as_deref())?;
        }
        self.snapshot(agent).await?;
        let id = format!("evt_{}", random_hex(12));
        let detail = json!({"handoff": h, "session_markdown": v["session_markdown"], "key_id": who.key_id, "entity_uri": who.entity_uri});
        self.store
            .run("INSERT INTO service_events (id, agent_id, kind, detail, created_at) VALUES (?1, ?2, 'handoff', ?3, ?4)", args![id.as_str(), agent, detail.to_string(), now_ms()])
            .await?;
        Ok(json!({"agent_id": agent, "handoff_id": id, "task_id": h["task_id"], "handoff": h, "session_markdown": v["session_markdown"]}))
    }

    /// The agent's current handoff (the latest one posted), if any.
    async fn latest_handoff(&self, agent: &str) -> ApiResult<Option<Value>> {
        #[derive(Deserialize)]
        struct Row {
            detail: String,
        }
        let row: Option<Row> = self.store.first(lid_shared::heartbeat::LATEST_HANDOFF_SQL, args![agent]).await?;
        row.map(|r| serde_json::from_str::<Value>(&r.detail).map(|v| v["handoff"].clone()).map_err(ApiError::engine_json)).transpose()
    }

    /// `GET /v1/agents/{id}/boot-context`, as `lid serve` does it.
    pub async fn boot_context(&self, agent: &str, caller: &str, q: &BootQuery<'_>) -> ApiResult<Value> {
        let BootQuery { profile, budget, query, trigger, record } = *q;
        let s = self.snapshot(agent).await?;
        let mut req = json!({"profile": profile, "budgets": budget, "knowledge_query": query});
        let mut heartbeat = (String::new(), None);
        if let Some(token) = trigger {
            let Some(key) = self.trigger_key()? else {
                return Err(ApiError::new(503, "heartbeat_not_configured", format!("this worker has no heartbeat signing key, so it cannot verify the trigger: {KEY_HOWTO}")));
            };
            let t = key.verify(token, agent, (now_ms() / 1000) as u64)?;
            req["wake_reason"] = json!(t.wake_reason);
            heartbeat = (t.heartbeat_id, t.session_start);
        }
        lid_shared::heartbeat::session_source(&mut req, self.latest_handoff(agent).await.map_err(|e| e.0.message));
        let ctx = context(&heartbeat.0, heartbeat.1, caller, &s.lift_units);
        let audit = Buffered::default();
        let mut v = parse(&lid_core::api::compose_context(&s.manifest_json, &req.to_string(), &ctx, &s.facts, &audit)?)?;
        // (a HEAD audits nothing: RFC 9110 §9.2.1)
        if !record {
            return Ok(v);
        }
        if let Err(e) = self.flush_audit(&audit).await {
            if let Some(w) = v["bundle"].get_mut("warnings").and_then(Value::as_array_mut) {
                w.push(json!(format!("audit_write_failed: {e}")));
            }
            // the Markdown rendering says it too, as lid serve's (whose engine writes the audit)
            if let Ok(b) = serde_json::from_value::<lid_core::context::Bundle>(v["bundle"].clone()) {
                v["markdown"] = json!(lid_core::context::render_markdown(&b));
            }
            // (no token for a record that was not stored, as a recall's: lid_shared::audit)
            v["audit_token"] = json!("");
        }
        Ok(v)
    }

    /// §21.5.2: close an audit record with usage feedback. Idempotent.
    pub async fn submit_audit(&self, who: &Principal, body: &Value) -> ApiResult<()> {
        // The core's shape checks, as lid serve runs them through the component.
        let sub = lid_core::audit::parse_submission(&body.to_string())?;
        let (token, used, missed) = (sub.audit_token.as_str(), sub.used_chunks, sub.missed_chunks);
        #[derive(Deserialize)]
        struct Row {
            agent_id: String,
            created_at: i64,
            audit_closed: Option<i64>,
            used_chunks: String,
            missed_chunks: String,
            loaded_chunks: String,
        }
        let (used_json, missed_json) = (json!(used).to_string(), json!(missed).to_string());
        for _ in 0..2 {
            let row: Option<Row> = self.store.first("SELECT agent_id, created_at, audit_closed, used_chunks, missed_chunks, loaded_chunks FROM instruction_audit WHERE audit_token = ?1", args![token]).await?;
            let Some(r) = row else {
                return Err(ApiError::bad_request("audit_token_invalid", "this audit token is not recognised: submit the token from a recall_instruction response"));
            };
            who.require_self(&r.agent_id)?;
            let now = now_ms();
            let stored = lid_shared::audit::Stored { created_at: r.created_at, closed: r.audit_closed.is_some(), loaded_json: &r.loaded_chunks, used_json: &r.used_chunks, missed_json: &r.missed_chunks };
            if !lid_shared::audit::closing(&stored, now, &used, &missed)? {
                return Ok(());
            }
            let manifest = match self.snapshot(&r.agent_id).await {
                Ok(s) => Some(s),
                Err(e) if e.code == "manifest_not_found" => None,
                Err(e) => return Err(e),
            };
            if let Some(refusal) = lid_shared::audit::unknown_units(manifest.as_deref().map(|s| s.manifest_json.as_str()), &r.loaded_chunks, &used, &missed) {
                return Err(refusal.into());
            }
            let changed = self
                .store
                .run("UPDATE instruction_audit SET used_chunks = ?1, missed_chunks = ?2, audit_closed = ?3 WHERE audit_token = ?4 AND audit_closed IS NULL", args![used_json, missed_json, now, token])
                .await?;
            if changed > 0 {
                return Ok(());
            }
            // Closed concurrently: look again (identical feedback is still a success).
        }
        Err(ApiError::bad_request("audit_token_invalid", "this audit record was closed concurrently with different feedback"))
    }

    async fn audit_rows(&self, agent: &str, since: i64) -> ApiResult<(Vec<AuditRow>, bool)> {
        let rows = self.store.all(lid_shared::audit::WINDOW_ROWS_SQL, args![agent, since, lid_shared::audit::WINDOW_ROWS_MAX as i64 + 1]).await?;
        Ok(lid_shared::audit::window(rows))
    }

    /// §21.8.6: per-unit coverage from the publish-time probe run plus the rolling 7-day
    /// audit; `coverage_status` and the alert for admins only (S11).
    pub async fn coverage(&self, agent: &str, admin: bool) -> ApiResult<Value> {
        let s = self.snapshot(agent).await?;
        let rows: Vec<CoverageRow> = self
            .store
            .all("SELECT unit, coverage_pct, hit_at_10, probe_count, evaluated_at FROM coverage_reports WHERE agent_id = ?1 AND manifest_version = ?2", args![agent, s.version])
            .await?;
        if rows.is_empty() {
            return Err(ApiError::new(404, "coverage_not_found", format!("no coverage report has been generated for agent {agent:?} version {}; publish the manifest again to run the probes", s.version)));
        }
        let (audit, truncated) = self.audit_rows(agent, now_ms() - AUDIT_WINDOW_MS).await?;
        let recs = serde_json::to_string(&audit).map_err(ApiError::engine_json)?;
        let mut metrics = parse(&lid_core::api::audit_metrics(&recs, 3)?)?;
        metrics["truncated"] = json!(truncated);
        let subject = lid_shared::coverage::Subject { agent, manifest_version: &s.version, manifest_json: &s.manifest_json, ranker_version: &ranker_version() };
        Ok(lid_shared::coverage::report(&subject, rows, &audit, &metrics, admin))
    }

    // ---- writes ----------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn new_fact(uri: &str, version: &str, content: &str, interpret_as: InterpretAs, author: &str, trust: f64) -> Fact {
        Fact {
            uri: uri.to_string(),
            content: content.to_string(),
            version: version.to_string(),
            interpret_as,
            valid_until: None,
            authored_by: Some(author.to_string()),
            authored_at: Some(iso(now_ms())),
            source_trust: Some(trust),
            derived_from: None,
            tokens: Some(lid_core::api::count_tokens(content)),
            sha256: Some(sha256_hex(content.as_bytes())),
            quarantined: false,
        }
    }

    /// Admission lint (README, "Admission lint"), as `lid serve` runs it: hidden,
    /// bidirectional, zero-width or control characters and over-long lines refuse the
    /// write (`unit_admission_rejected`, 422, recorded as a service event); injection-like
    /// instruction text is a warning.
    async fn admit(&self, agent: &str, units: Vec<Value>) -> ApiResult<Vec<Value>> {
        if units.is_empty() {
            return Ok(vec![]);
        }
        let r = parse(&lid_core::api::lint_units(&Value::Array(units).to_string())?)?;
        let errors = r["errors"].as_array().cloned().unwrap_or_default();
        if !errors.is_empty() {
            if let Ok(st) = event(&self.store, Some(agent), "admission_rejected", &json!({"errors": errors}), now_ms()) {
                let _ = self.store.batch(vec![st]).await;
            }
            let summary = errors.iter().map(|e| format!("{} [{} line {}]", e["code"].as_str().unwrap_or(""), e["unit"].as_str().unwrap_or(""), e["line"])).collect::<Vec<_>>().join("; ");
            return Err(ApiError::new(422, "unit_admission_rejected", format!("unit text refused ({} finding(s)): {summary}; remove the characters or break the lines and retry", errors.len()))
                .with_details(json!({"errors": errors, "warnings": r["warnings"]})));
        }
        Ok(r["warnings"].as_array().cloned().unwrap_or_default())
    }

    /// `PUT /v1/agents/{id}/units/{name}`: a new immutable unit version (Spec-13 gate;
    /// denials recorded in `service_events`), after the unit's latest version (§21.4.1),
    /// never content over an instruction (Spec-13), and never an always-applicable unit
    /// that would push the stub past 500 tokens (§21.1.2). KV first, then the ledger row.
    pub async fn write_unit(&self, agent: &str, name: &str, body: &Value, who: &Principal) -> ApiResult<Value> {
        let req = lid_shared::units::UnitWrite::read(name, body)?;
        let interpret_as = req.kind.as_str();
        let check = if req.kind == Kind::Instruction { who.require_instruction_write(agent) } else { who.require_content_write(agent) };
        if let Err(e) = check {
            let detail = json!({"unit": name, "interpret_as": interpret_as, "key_id": who.key_id, "entity_uri": who.entity_uri, "code": e.code});
            if let Ok(st) = event(&self.store, Some(agent), "capability_denied", &detail, now_ms()) {
                let _ = self.store.batch(vec![st]).await;
            }
            return Err(e.into());
        }
        let admission_warnings = self.admit(agent, vec![json!({"name": name, "content": req.content, "interpret_as": interpret_as})]).await?;
        // (the org key's refusals keep their code: they say what to fix, and nothing is unreadable)
        let keep = ["recall_backend_unavailable", lid_shared::attest::ORG_KEY_MISMATCH, lid_shared::attest::ORG_KEY_MISSING];
        // read before the snapshot the checks use, so that a publish between them shows
        let basis = write_basis(&self.store, agent).await?;
        let current = self.store.writable_snapshot(agent).await.map_err(|e| if keep.contains(&&*e.code) { e } else { ApiError::backend(e.0.message) })?;
        let deployment = self.write_deployment(agent, current.as_deref().map(|s| current_of(s).0), body).await?;
        let unit_key = format!("instruction:{deployment}/{agent}/{name}");
        let entry = current.as_deref().and_then(|s| lid_shared::units::manifest_entry(&s.manifest_json, name));
        lid_shared::units::check_reviewed(name, req.kind, entry.as_ref())?;
        let latest = current_version(&self.store, &unit_key).await?;
        lid_shared::units::check_kind(name, req.kind, latest.as_ref(), entry.is_some())?;
        let version = lid_shared::units::plan_version(req.version, latest.as_ref(), Some(lid_shared::units::Rewrite { content: req.content, kind: req.kind, author: &who.entity_uri }), |v, t| lid_core::api::version_order(v, t).map_err(ApiError::from))?;
        let uri = format!("{unit_key}/{version}");
        if split_fact_uri(&uri).is_none() || lid_core::uri::InstructionUri::parse(&uri).is_err() {
            return Err(ApiError::bad_request("invalid_request", format!("{uri:?} is not a valid instruction: URI (unit names are kebab-case, versions like v2; no floating aliases)")));
        }
        let ia = if req.kind == Kind::Content { InterpretAs::Content } else { InterpretAs::Instruction };
        let fact = Self::new_fact(&uri, &version, req.content, ia, &who.entity_uri, lid_shared::units::source_trust(who));
        stub_still_fits(current.as_deref(), req.kind, entry.as_ref(), &unit_key, &fact)?;
        let sha = fact.sha256.clone().unwrap_or_default();
        let out = |unchanged: bool| json!({"uri": uri, "version": version, "sha256": sha, "tokens": fact.tokens, "interpret_as": interpret_as, "unchanged": unchanged, "admission_warnings": admission_warnings});
        match sha_of(&self.store, &uri).await? {
            Some(h) if h == sha => return Ok(out(true)),
            Some(_) => return Err(lid_shared::units::version_taken(&uri, req.version).into()),
            None => {}
        }
        let now = now_ms();
        self.store.put_fact(&fact).await?;
        let mut stmts = self.unmoved(agent, basis.as_deref(), &unit_key, latest.as_ref())?;
        stmts.extend(ledger_insert(&self.store, &fact, &unit_key, agent, name, latest.as_ref().map(|l| l.sha256.as_str()), &json!({"written_by_key": who.key_id}), now)?);
        // The stub embeds always-applicable units: a new version invalidates it.
        stmts.push(self.store.stmt("DELETE FROM boot_stubs WHERE agent_id = ?1", args![agent])?);
        stmts.push(event(&self.store, Some(agent), "instruction_write", &json!({"uri": uri, "interpret_as": interpret_as, "entity_uri": who.entity_uri}), now)?);
        if let Err(e) = self.store.batch(stmts).await {
            // The URI was taken concurrently (primary key), or D1 failed: what the ledger
            // holds goes back to KV, which this write may have overwritten.
            self.store.restore_committed(&[uri.as_str()]).await?;
            return match sha_of(&self.store, &uri).await? {
                Some(h) if h == sha => Ok(out(true)),
                Some(_) => Err(lid_shared::units::version_taken(&uri, req.version).into()),
                None => Err(self.moved(agent, basis.as_deref(), &uri, e).await),
            };
        }
        Ok(out(false))
    }

    /// A unit write's guards, first in its batch: the agent's write basis and the unit's
    /// latest version are still those its checks were made against (as `lid serve`
    /// checks them in its transaction).
    fn unmoved(&self, agent: &str, basis: Option<&str>, unit_key: &str, latest: Option<&lid_shared::units::Latest>) -> ApiResult<Vec<worker::D1PreparedStatement>> {
        Ok(vec![
            unless_moved(&self.store, lid_shared::units::WRITE_BASIS_SQL, agent, basis)?,
            unless_moved(&self.store, crate::store::LATEST_URI_SQL, unit_key, latest.map(|l| l.uri.as_str()))?,
        ])
    }

    /// The refusal for a unit write whose batch failed: retryable when a guard of
    /// [`Service::unmoved`] failed (which one, read again), else the storage error.
    async fn moved(&self, agent: &str, basis: Option<&str>, uri: &str, e: worker::Error) -> ApiError {
        if !e.to_string().contains(crate::store::MOVED) {
            return ApiError::storage(e);
        }
        match write_basis(&self.store, agent).await {
            Ok(now) if now.as_deref() != basis => lid_shared::units::basis_moved(agent).into(),
            _ => lid_shared::units::written_concurrently(uri).into(),
        }
    }

    /// Re-certify every current manifest that is due (§21.8.3, S10), as `lid serve` does
    /// (`lid_shared::recertify`): run on the Cron Trigger (`wrangler.toml` `[triggers]`).
    /// Per manifest, one D1 batch: its coverage rows, a `manifest_certifications` row and a
    /// `manifest_recertified` / `recertification_failed` service event. A manifest that
    /// fails stays served; the failure is recorded for an admin to fix with a new version.
    pub async fn recertify(&self, now: i64) -> ApiResult<Vec<Value>> {
        use lid_shared::recertify::{Candidate, CANDIDATES_SQL};
        let ranker = ranker_version();
        let candidates: Vec<Candidate> = self.store.all(CANDIDATES_SQL, vec![]).await?;
        let mut out = Vec::new();
        for c in candidates {
            let Some(reason) = c.due(&ranker, now) else { continue };
            // One manifest that cannot be read now (a KV read not yet visible, D1 busy) is
            // logged and left for the next trigger; the others go on.
            match self.recertify_one(&c, reason, &ranker, now).await {
                Ok(Some(r)) => out.push(r),
                Ok(None) => {}
                Err(e) => worker::console_error!("re-certification of {} {} could not run: {}: {}; the next trigger retries it", c.agent_id, c.manifest_version, e.code, e.message),
            }
        }
        Ok(out)
    }

    async fn recertify_one(&self, c: &lid_shared::recertify::Candidate, reason: &str, ranker: &str, now: i64) -> ApiResult<Option<Value>> {
        use lid_shared::recertify::{coverage_row, Outcome, INSERT_CERTIFICATION_SQL, INSERT_COVERAGE_SQL};
        // A version published since the query certified itself.
        let Some(s) = self.store.writable_snapshot(&c.agent_id).await?.filter(|s| s.version == c.manifest_version) else { return Ok(None) };
        let cov = parse(&lid_core::api::coverage(&s.manifest_json, "{}", &s.facts)?)?;
        let o = Outcome::new(c, reason, ranker, &cov);
        let mut stmts = Vec::new();
        for u in cov["units"].as_array().into_iter().flatten() {
            let (unit, pct, hit, probes) = coverage_row(u);
            stmts.push(self.store.stmt(INSERT_COVERAGE_SQL, args![c.agent_id, c.manifest_version, unit, pct, hit, probes, now])?);
        }
        stmts.push(self.store.stmt(INSERT_CERTIFICATION_SQL, args![c.agent_id, c.manifest_version, ranker, reason, o.passed() as i64, o.failing_json(), now])?);
        stmts.push(event(&self.store, Some(&c.agent_id), o.event_kind(), &o.result, now)?);
        self.store.batch(stmts).await.map_err(ApiError::storage)?;
        Ok(Some(o.result))
    }

    /// `POST …/instruction-manifest/cosignatures`: a second admin co-signs a coverage-gate
    /// bypass of one exact manifest (S7).
    /// 409 `manifest_version_conflict` when `version` of `agent` is already published.
    async fn version_unpublished(&self, agent: &str, version: &str) -> ApiResult<()> {
        #[derive(Deserialize)]
        struct One {}
        match self.store.first::<One>("SELECT 1 AS one FROM instruction_manifests WHERE agent_id = ?1 AND version = ?2", args![agent, version]).await? {
            Some(_) => Err(lid_shared::publish::version_conflict(agent, version).into()),
            None => Ok(()),
        }
    }

    pub async fn cosign(&self, agent: &str, body: &Value, who: &Principal) -> ApiResult<Value> {
        who.require_admin()?;
        let (version, digest) = lid_shared::publish::cosignature_request(agent, body)?;
        // a version a publish could take: a real one (no floating alias), not yet published
        lid_core::api::version_order(version, None)?;
        self.version_unpublished(agent, version).await?;
        self.store
            .run(
                "INSERT OR IGNORE INTO publish_cosignatures (agent_id, version, manifest_sha256, entity_uri, key_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                args![agent, version, digest, who.entity_uri, who.key_id, now_ms()],
            )
            .await?;
        Ok(json!({"agent_id": agent, "version": version, "manifest_sha256": digest, "cosigned_by": who.entity_uri}))
    }

    /// `PUT /v1/agents/{id}/instruction-manifest` (§21.8.3): validate, run the coverage
    /// gate, render the stubs; then write the new facts to KV, and commit the ledger
    /// rows, the registry row (previous superseded), the stub cache and the coverage
    /// report in one D1 batch. Readers find the new version only through the registry
    /// row, which is committed after every fact is in KV.
    pub async fn publish(&self, agent: &str, body: &Value, who: &Principal) -> ApiResult<Value> {
        who.require_admin()?;
        check_agent_id(agent)?;
        if !who.has(CAP_INSTRUCTION_WRITE) {
            if let Ok(st) = event(&self.store, Some(agent), "capability_denied", &json!({"action": "publish", "entity_uri": who.entity_uri, "key_id": who.key_id}), now_ms()) {
                let _ = self.store.batch(vec![st]).await;
            }
            return Err(lid_shared::publish::instruction_write_required().into());
        }
        let req = PublishRequest::read(agent, body)?;
        let (obj, version, skip) = (req.obj, req.version.clone(), req.skip);
        // The head this publish is planned against, read before the snapshot: the batch
        // below commits only if it is still the head (another publish may commit meanwhile).
        let head = current_manifest_id(&self.store, agent).await?;
        // likewise the units whose text it reviews: one written meanwhile was not what was
        // checked (a write to any other unit does not stop it)
        let reviewed = req.reviewed_key(agent);
        let horizon = crate::store::reviewed_horizon(&self.store, &reviewed).await?;
        let snapshot = self.store.writable_snapshot(agent).await?;
        let current = snapshot.as_deref().map(current_of);
        let deployment = req.deployment(current.as_ref().map(|c| c.0.as_str()))?;
        let now = now_ms();
        let manifest = req.manifest(agent, &deployment, snapshot.as_deref().map(|s| s.manifest_json.as_str()), now);
        if let Some(doc) = req.as_sent(&manifest) {
            let sent = parse(&lid_core::api::validate_manifest(&doc.to_string(), &json!({"wake_reasons": self.wake_reasons}).to_string()))?;
            if let Some(refusal) = lid_shared::publish::validation_refusal(&sent) {
                return Err(refusal.into());
            }
        }
        let manifest_json = manifest.to_string();
        let approvals = req.approvals.clone();

        // 1. Validation (§21.2, §21.9), with approvals enforced and versions monotonic.
        let vopts = json!({"wake_reasons": self.wake_reasons, "approvals": approvals, "previous_version": current.as_ref().map(|c| c.1.clone())});
        let report = parse(&lid_core::api::validate_manifest(&manifest_json, &vopts.to_string()))?;
        if let Some(refusal) = lid_shared::publish::validation_refusal(&report) {
            return Err(refusal.into());
        }
        // a version taken before, once the manifest's own problems are all said
        self.version_unpublished(agent, &version).await?;
        let token_count = report["token_count"].as_i64().unwrap_or(0);
        let entries = manifest["entries"].as_array().cloned().unwrap_or_default();
        if let Some(refusal) = lid_shared::publish::path_only_entries(&entries, &deployment, agent) {
            return Err(refusal.into());
        }

        // 2. Unit contents sent with the manifest become new fact versions (Spec-13 gate).
        let ledger = match &snapshot {
            Some(s) => s.ledger.clone(),
            None => self.store.ledger(agent).await?,
        };
        let mut staged: Vec<(Fact, String, String)> = Vec::new(); // (fact, unit key, unit name)
        // each staged fact's unit's latest when it was checked, compared again in the batch
        let mut staged_after: Vec<Option<String>> = Vec::new();
        let mut admission_warnings = Vec::new();
        // by name, so the answer (and the warnings) do not follow the body's key order
        if let Some(units) = obj.get("units").and_then(Value::as_object).map(|m| m.iter().collect::<std::collections::BTreeMap<_, _>>()) {
            admission_warnings = self.admit(agent, units.iter().filter_map(|(n, c)| c.as_str().map(|c| json!({"name": n, "content": c, "interpret_as": "instruction"}))).collect()).await?;
            for (name, content) in units {
                let Some(content) = content.as_str() else {
                    return Err(ApiError::bad_request("invalid_request", format!("`units.{name}` must be the unit's markdown text")));
                };
                let entry = entries.iter().find(|e| e["name"].as_str() == Some(name.as_str()));
                let Some(uri) = entry.and_then(|e| e["fact_uri"].as_str()) else {
                    return Err(ApiError::bad_request("manifest_entry_invalid", format!("`units.{name}` has no manifest entry with a fact_uri to store it under")));
                };
                let Some((unit_key, unit_name, v)) = split_fact_uri(uri) else {
                    return Err(ApiError::bad_request("manifest_entry_invalid", format!("entry {name:?} has an invalid fact_uri {uri:?}")));
                };
                let fact = Self::new_fact(uri, &v, content, InterpretAs::Instruction, &who.entity_uri, 0.9);
                if let Some(existing) = ledger.iter().find(|r| r.uri == uri) {
                    if Some(&existing.sha256) != fact.sha256.as_ref() {
                        return Err(ApiError::new(409, "fact_version_conflict", format!("{uri} already exists with other content; facts are immutable (§21.4.2): bump the unit's version in its fact_uri")));
                    }
                    continue;
                }
                // new content takes a version after the unit's latest (§21.4.1)
                let latest = current_version(&self.store, &unit_key).await?;
                lid_shared::units::check_published_version(uri, &v, latest.as_ref(), |v, t| lid_core::api::version_order(v, t).map_err(ApiError::from))?;
                staged_after.push(latest.map(|l| l.uri));
                staged.push((fact, unit_key, unit_name));
            }
        }
        let staged_facts: Vec<Fact> = staged.iter().map(|s| s.0.clone()).collect();
        let mut bad = Vec::new();
        let (facts, _complete) = self.store.facts_for(&manifest_json, &ledger, &staged_facts, &mut bad).await?;
        self.store.quarantine_unattested(agent, &bad).await?;
        if let Some(refusal) = lid_shared::publish::quarantined_units(&entries, agent, |uri| {
            let now = bad.iter().find(|(u, _)| u == uri).map(|(_, why)| why.reason().to_string());
            now.or_else(|| ledger.iter().find(|r| r.uri == uri && r.quarantine.is_some()).map(|r| r.quarantine_reason.clone().or_else(|| r.quarantine.clone()).unwrap_or_default()))
        }) {
            return Err(refusal.into());
        }
        if let Some(refusal) = lid_shared::publish::unstored_units(&entries, |uri| ledger.iter().any(|r| r.uri == uri) || staged_facts.iter().any(|f| f.uri == uri)) {
            return Err(refusal.into());
        }

        // 3. The coverage gate (§21.8.3, Approach A).
        let cov = parse(&lid_core::api::coverage(&manifest_json, "{}", &facts)?)?;
        let cov_units = cov["units"].as_array().cloned().unwrap_or_default();
        let failing = lid_shared::publish::failing_units(&cov);
        let digest = lid_shared::publish::manifest_digest(&entries);
        let mut provenance = lid_shared::publish::provenance(&who.entity_uri, &who.key_id, now, &digest, &ranker_version(), &approvals);
        let cosignature_needed = lid_shared::publish::needs_cosignature(&entries);
        let mut signers: Vec<String> = vec![who.entity_uri.clone()];
        if !failing.is_empty() && skip && cosignature_needed {
            #[derive(Deserialize)]
            struct Signer {
                entity_uri: String,
            }
            let cos: Vec<Signer> = self
                .store
                .all("SELECT entity_uri FROM publish_cosignatures WHERE agent_id = ?1 AND version = ?2 AND manifest_sha256 = ?3 ORDER BY entity_uri", args![agent, version, digest])
                .await?;
            signers.extend(cos.into_iter().map(|s| s.entity_uri));
        }
        provenance["coverage_gate"] = lid_shared::publish::Gate { failing: &failing, skip, signers, cosignature_needed, version: &version, manifest_sha256: &digest, now_ms: now }.verdict()?;

        // 4. The stubs for every profile (a stub over 500 body tokens fails the publish).
        let mut stubs = Vec::new();
        for p in PROFILES {
            let s = parse(&lid_core::api::render_stub(&manifest_json, Some(p), &facts)?)?;
            stubs.push((p.to_string(), s["text"].as_str().unwrap_or_default().to_string(), s["total_tokens"].as_i64().unwrap_or(0)));
        }

        // 5. KV first (facts, then the manifest fact), D1 last (one batch, registry row included).
        let manifest_uri = format!("instruction:{deployment}/{agent}/manifest/{version}");
        let mut mfact = Self::new_fact(&manifest_uri, &version, &manifest_json, InterpretAs::Instruction, &who.entity_uri, 1.0);
        mfact.tokens = Some(token_count as u32);
        let manifest_key = format!("instruction:{deployment}/{agent}/manifest");
        self.store.put_facts(staged.iter().map(|(f, _, _)| f)).await?;
        self.store.put_fact(&mfact).await?;
        let mut stmts = vec![
            unless_moved(&self.store, lid_shared::publish::CURRENT_MANIFEST_ID_SQL, agent, head.as_deref())?,
            unless_moved(&self.store, lid_shared::publish::REVIEWED_HORIZON_SQL, &reviewed, Some(&horizon))?,
        ];
        for ((_, key, _), after) in staged.iter().zip(&staged_after) {
            stmts.push(unless_moved(&self.store, crate::store::LATEST_URI_SQL, key, after.as_deref())?);
        }
        let mut prev_by_key: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        for r in ledger.iter().filter(|r| r.valid_until.is_none()) {
            prev_by_key.insert(r.unit_key.as_str(), Some(r.sha256.as_str()));
        }
        for (f, key, name) in &staged {
            let prev = prev_by_key.get(key.as_str()).copied().flatten();
            stmts.extend(ledger_insert(&self.store, f, key, agent, name, prev, &json!({"published_with": version}), now)?);
        }
        let prev_manifest = prev_by_key.get(manifest_key.as_str()).copied().flatten();
        stmts.extend(ledger_insert(&self.store, &mfact, &manifest_key, agent, "manifest", prev_manifest, &provenance, now)?);
        stmts.push(self.store.stmt("UPDATE instruction_manifests SET superseded_at = ?1 WHERE agent_id = ?2 AND superseded_at IS NULL", args![now, agent])?);
        stmts.push(self.store.stmt(
            "INSERT INTO instruction_manifests (id, agent_id, version, fact_uri, token_count, body, created_at, superseded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL)",
            args![uuid4(), agent, version, manifest_uri, token_count, json!(entries).to_string(), now],
        )?);
        stmts.push(self.store.stmt("DELETE FROM boot_stubs WHERE agent_id = ?1", args![agent])?);
        let sv = stub_version();
        for (p, text, tokens) in &stubs {
            stmts.push(self.store.stmt(
                "INSERT INTO boot_stubs (agent_id, adapter_profile, stub_version, body, token_count, generated_at, manifest_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                args![agent, p, sv, text, *tokens, now, version],
            )?);
        }
        for u in &cov_units {
            let (unit, pct, hit, probes) = lid_shared::recertify::coverage_row(u);
            stmts.push(self.store.stmt(lid_shared::recertify::INSERT_COVERAGE_SQL, args![agent, version, unit, pct, hit, probes, now])?);
        }
        if skip && !failing.is_empty() {
            stmts.push(event(&self.store, Some(agent), "coverage_gate_bypassed", &json!({"version": version, "provenance": provenance["coverage_gate"]}), now)?);
        }
        if let Err(e) = self.store.batch(stmts).await {
            // A unique key (manifest version, fact URI) taken concurrently, or D1 failed:
            // what the ledger holds goes back to KV, which this publish may have overwritten.
            let uris: Vec<&str> = staged.iter().map(|(f, _, _)| f.uri.as_str()).chain([mfact.uri.as_str()]).collect();
            self.store.restore_committed(&uris).await?;
            let msg = e.to_string();
            if msg.contains(crate::store::MOVED) {
                // which guard failed: the head, the reviewed units, else a staged unit's
                // latest (the refusals `lid serve` gives for each)
                if current_manifest_id(&self.store, agent).await.ok().as_ref() != Some(&head) {
                    return Err(lid_shared::publish::published_concurrently(agent).into());
                }
                if crate::store::reviewed_horizon(&self.store, &reviewed).await.ok().as_ref() != Some(&horizon) {
                    return Err(lid_shared::publish::units_moved(agent).into());
                }
                let staged_uris: Vec<&str> = staged.iter().map(|(f, _, _)| f.uri.as_str()).collect();
                return Err(lid_shared::units::written_concurrently(&staged_uris.join(", ")).into());
            }
            if msg.contains("UNIQUE") || msg.contains("constraint") {
                return Err(ApiError::new(409, "manifest_version_conflict", format!("version {version:?} (or one of its facts) was published concurrently; versions are immutable")));
            }
            return Err(ApiError::storage(e));
        }
        Ok(json!({
            "agent_id": agent,
            "manifest_version": version,
            "fact_uri": manifest_uri,
            "token_count": token_count,
            "coverage_report": cov_units.iter().map(|u| json!({"unit": u["unit"], "coverage_pct": u["coverage_pct"], "passed": u["passed"], "hit_at_10": u["hit_at_10"]})).collect::<Vec<_>>(),
            "units_written": staged.iter().map(|s| s.0.uri.clone()).collect::<Vec<_>>(),
            "warnings": report["warnings"],
            "admission_warnings": admission_warnings,
            "provenance": provenance,
        }))
    }
}

/// Facts for engine calls that read none.
pub fn no_facts() -> WorkerFacts {
    WorkerFacts::default()
}

// ---- the content channel: knowledge packs, quarantine (Spec-13) -------------------------
// Mirrors `lid serve` (host/src/service.rs) route for route; see its docs.

pub use lid_shared::federation::{federated_fields, promotion_claims};

use lid_shared::coverage::CoverageRow;
use lid_shared::packs::pack_entry;
use lid_shared::publish::PublishRequest;
use lid_shared::units::Kind;

impl Service {
    /// The agent's deployment: the current manifest's, else `deployment` from the body.
    async fn deployment_of(&self, agent: &str, body: &Value) -> ApiResult<String> {
        let current = self.store.writable_snapshot(agent).await?;
        self.write_deployment(agent, current.as_deref().map(|s| current_of(s).0), body).await
    }

    /// The deployment a write for `agent` goes to ([`lid_shared::units::deployment`]): the
    /// current manifest's (`current`), else that of the agent's earlier units, else the body's.
    async fn write_deployment(&self, agent: &str, current: Option<String>, body: &Value) -> ApiResult<String> {
        #[derive(Deserialize)]
        struct First {
            uri: String,
        }
        let earlier = match current {
            Some(_) => None,
            None => self.store.first::<First>(lid_shared::units::FIRST_DEPLOYED_FACT_SQL, args![agent]).await?.map(|f| f.uri),
        };
        Ok(lid_shared::units::deployment(agent, current, earlier.as_deref().and_then(lid_shared::units::deployment_in), body)?)
    }

    /// Record a denied write as a `capability_denied` service event; returns the denial.
    async fn denied(&self, agent: &str, who: &Principal, action: &str, e: impl Into<ApiError>, extra: Value) -> ApiError {
        let e: ApiError = e.into();
        let mut detail = json!({"action": action, "key_id": who.key_id, "entity_uri": who.entity_uri, "code": e.code});
        if let (Some(d), Some(x)) = (detail.as_object_mut(), extra.as_object()) {
            d.extend(x.clone());
        }
        if let Ok(st) = event(&self.store, Some(agent), "capability_denied", &detail, now_ms()) {
            let _ = self.store.batch(vec![st]).await;
        }
        e
    }

    /// `PUT /v1/agents/{id}/knowledge/{pack}`: the pack's files to KV first, then the
    /// ledger rows and the registry row in one D1 batch (as publish does).
    pub async fn upload_knowledge(&self, agent: &str, pack: &str, body: &Value, who: &Principal) -> ApiResult<(Value, bool)> {
        if let Err(e) = who.require_self(agent) {
            return Err(self.denied(agent, who, "knowledge_upload", e, json!({"pack": pack})).await);
        }
        let (kmd, units) = lid_shared::packs::upload_fields(body)?;
        let read = parse(&lid_core::api::read_knowledge_pack(&json!({"id": pack, "knowledge_md": kmd, "units": units}).to_string())?)?;
        let files = read["files"].as_array().cloned().unwrap_or_default();
        let text_of = |f: &Value| units.get(f["key"].as_str().unwrap_or_default()).and_then(Value::as_str).unwrap_or_default().to_string();
        let mut lint = vec![json!({"name": "KNOWLEDGE.md", "content": kmd, "interpret_as": "content"})];
        lint.extend(files.iter().map(|f| json!({"name": f["path"], "content": text_of(f), "interpret_as": "content"})));
        let admission_warnings = self.admit(agent, lint).await?;
        let basis = write_basis(&self.store, agent).await?;
        let deployment = self.deployment_of(agent, body).await?;
        let digest = lid_shared::packs::scoped_digest(agent, read["digest"].as_str().unwrap_or_default());
        #[derive(Deserialize)]
        struct Row {
            version: String,
            digest: String,
            superseded_at: Option<i64>,
            quarantined: i64,
        }
        let rows: Vec<Row> = self.store.all(lid_shared::packs::PACK_UPLOADS_SQL, args![agent, pack]).await?;
        let files_digest = read["digest"].as_str().unwrap_or_default();
        if let Some(r) = rows.iter().find(|r| r.superseded_at.is_none() && lid_shared::packs::same_upload(&r.digest, agent, files_digest) && r.quarantined == 0) {
            let stored = self.knowledge_catalog(agent).await?.into_iter().find(|e| e["pack"] == pack).unwrap_or(Value::Null);
            let (mut entry, stale) = lid_shared::packs::unchanged_entry(&stored, &read["catalog"]);
            if stale {
                let catalog = &read["catalog"];
                self.store.run(lid_shared::packs::REFRESH_CATALOG_SQL, args![catalog.to_string(), catalog["units"].as_i64().unwrap_or(0), agent, pack, r.version.as_str()]).await?;
            }
            entry["unchanged"] = json!(true);
            entry["upload_version"] = json!(r.version);
            entry["admission_warnings"] = json!(admission_warnings);
            return Ok((entry, false));
        }
        let n = rows.iter().filter_map(|r| r.version.strip_prefix('v').and_then(|n| n.parse::<u64>().ok())).max().unwrap_or(0) + 1;
        let version = format!("v{n}");
        let prefix = format!("knowledge:{deployment}/{agent}/{pack}/{version}/");
        let key_prefix = format!("knowledge:{deployment}/{agent}/{pack}/");
        let now = now_ms();
        let provenance = json!({"knowledge_pack": pack, "pack_version": version, "uploaded_by_key": who.key_id});
        let mut facts: Vec<(Fact, String, String)> = vec![(Self::new_fact(&format!("{prefix}KNOWLEDGE.md"), &version, kmd, InterpretAs::Content, &who.entity_uri, lid_shared::units::source_trust(who)), format!("{key_prefix}KNOWLEDGE.md"), format!("{pack}/KNOWLEDGE.md"))];
        for f in &files {
            let path = f["path"].as_str().unwrap_or_default();
            facts.push((Self::new_fact(&format!("{prefix}{path}"), &version, &text_of(f), InterpretAs::Content, &who.entity_uri, lid_shared::units::source_trust(who)), format!("{key_prefix}{path}"), format!("{pack}/{path}")));
        }
        let ledger = self.store.ledger(agent).await?;
        let prev: BTreeMap<&str, &str> = ledger.iter().filter(|r| r.valid_until.is_none()).map(|r| (r.unit_key.as_str(), r.sha256.as_str())).collect();
        let catalog = read["catalog"].clone();
        let paths: Vec<&str> = files.iter().filter_map(|f| f["path"].as_str()).collect();
        // The pack's ranker index, built before anything is stored, as `lid serve` builds
        // it: this isolate keeps it for the agent's recalls, and a pack whose index cannot
        // be built fails this upload, not every recall after it.
        let mut staged = crate::store::WorkerFacts::default();
        for (f, key, _) in &facts {
            staged.insert(key, f.clone());
        }
        let listing = lid_core::content::StoredPack { id: pack.to_string(), version: version.clone(), prefix: prefix.clone(), files: paths.iter().map(|p| p.to_string()).collect(), digest: Some(digest.clone()) };
        staged.set_content(lid_core::content::ContentSources { facts: vec![], packs: vec![listing] });
        let (probe, request, ctx) = lid_shared::packs::index_probe(agent, &deployment, pack, now);
        lid_core::api::recall(&probe, &request, &ctx, &staged, &lid_core::store::NoAudit)?;
        self.store.put_facts(facts.iter().map(|(f, _, _)| f)).await?;
        let mut stmts = vec![unless_moved(&self.store, lid_shared::units::WRITE_BASIS_SQL, agent, basis.as_deref())?];
        for (f, key, name) in &facts {
            stmts.extend(ledger_insert(&self.store, f, key, agent, name, prev.get(key.as_str()).copied(), &provenance, now)?);
        }
        stmts.push(self.store.stmt(
            "UPDATE instruction_facts SET valid_until = ?1 WHERE agent_id = ?2 AND substr(unit_key, 1, length(?3)) = ?3 AND valid_until IS NULL AND substr(uri, 1, length(?4)) <> ?4",
            args![iso(now), agent, key_prefix, prefix],
        )?);
        stmts.push(self.store.stmt("UPDATE knowledge_packs SET superseded_at = ?1 WHERE agent_id = ?2 AND pack = ?3 AND superseded_at IS NULL", args![now, agent, pack])?);
        stmts.push(self.store.stmt(
            "INSERT INTO knowledge_packs (agent_id, pack, version, prefix, meta, files, digest, units, uploaded_by, created_at, superseded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL)",
            args![agent, pack, version, prefix, catalog.to_string(), json!(paths).to_string(), digest, catalog["units"].as_i64().unwrap_or(0), who.entity_uri, now],
        )?);
        stmts.push(event(&self.store, Some(agent), "knowledge_pack_upload", &json!({"pack": pack, "version": version, "digest": digest, "entity_uri": who.entity_uri}), now)?);
        if let Err(e) = self.store.batch(stmts).await {
            let uris: Vec<&str> = facts.iter().map(|(f, _, _)| f.uri.as_str()).collect();
            self.store.restore_committed(&uris).await?;
            let msg = e.to_string();
            if msg.contains(crate::store::MOVED) {
                return Err(lid_shared::units::basis_moved(agent).into());
            }
            if msg.contains("UNIQUE") || msg.contains("constraint") {
                return Err(ApiError::new(409, "fact_version_conflict", format!("pack {pack:?} {version} was uploaded concurrently; retry")));
            }
            return Err(ApiError::storage(e));
        }
        let mut entry = pack_entry(pack, &version, &catalog, &digest, now, &who.entity_uri);
        entry["unchanged"] = json!(false);
        entry["files"] = json!(facts
            .iter()
            .skip(1)
            .map(|(f, _, _)| json!({"path": f.uri.strip_prefix(&prefix).unwrap_or_default(), "uri": f.uri, "sha256": f.sha256, "tokens": f.tokens}))
            .collect::<Vec<_>>());
        entry["collisions"] = read["collisions"].clone();
        entry["admission_warnings"] = json!(admission_warnings);
        Ok((entry, true))
    }

    /// `GET /v1/agents/{id}/knowledge`: the catalog of the agent's current packs.
    pub async fn knowledge_catalog(&self, agent: &str) -> ApiResult<Vec<Value>> {
        Ok(self
            .store
            .current_packs(agent)
            .await?
            .into_iter()
            .map(|r| pack_entry(&r.pack, &r.version, &serde_json::from_str(&r.meta).unwrap_or(Value::Null), &r.digest, r.created_at, &r.uploaded_by))
            .collect())
    }

    /// `POST /v1/agents/{id}/federated-facts`: stored in quarantine (D1 only, never KV);
    /// sender claims are ignored and recorded as `promotion_rejected`.
    pub async fn receive_federated(&self, agent: &str, body: &Value, who: &Principal) -> ApiResult<Value> {
        if let Err(e) = who.require_self(agent) {
            return Err(self.denied(agent, who, "federated_fact", e, json!({})).await);
        }
        let (name, content, origin) = federated_fields(body)?;
        let claims = promotion_claims(body);
        let admission_warnings = self.admit(agent, vec![json!({"name": name, "content": content, "interpret_as": "content"})]).await?;
        let deployment = self.deployment_of(agent, body).await?;
        let sha = sha256_hex(content.as_bytes());
        let uri = format!("quarantine:{deployment}/{agent}/{name}/{}", &sha[..16]);
        let fact = Self::new_fact(&uri, "q1", content, InterpretAs::Content, origin, 0.0);
        // (its D1 ledger row holds the text: over the limit, refused before anything is written)
        crate::store::check_storable(&fact)?;
        let now = now_ms();
        let existing = sha_of(&self.store, &uri).await?;
        if existing.as_deref().is_some_and(|h| h != sha) {
            return Err(ApiError::new(409, "fact_version_conflict", format!("{uri} holds other content")));
        }
        let mut stmts = Vec::new();
        if existing.is_none() {
            let provenance = json!({"origin": origin, "received_by": who.entity_uri, "key_id": who.key_id, "sender_claims": claims});
            stmts.extend(ledger_insert(&self.store, &fact, &uri, agent, name, None, &provenance, now)?);
            stmts.push(self.store.stmt("UPDATE instruction_facts SET quarantine = 'quarantined', origin = ?1 WHERE uri = ?2", args![origin, uri])?);
            stmts.push(event(&self.store, Some(agent), "fact_quarantined", &json!({"uri": uri, "name": name, "origin": origin, "entity_uri": who.entity_uri}), now)?);
        }
        if !claims.is_empty() {
            let detail = json!({"uri": uri, "origin": origin, "claims": claims, "entity_uri": who.entity_uri, "reason": "a sender's assertion cannot promote a fact (Spec-13, federation boundary)"});
            stmts.push(event(&self.store, Some(agent), "promotion_rejected", &detail, now)?);
        }
        let mut unchanged = existing.is_some();
        if !stmts.is_empty() {
            if let Err(e) = self.store.batch(stmts).await {
                // Received concurrently (primary key): the identical fact is already held.
                if sha_of(&self.store, &uri).await?.as_deref() != Some(sha.as_str()) {
                    return Err(ApiError::storage(e));
                }
                unchanged = true;
            }
        }
        #[derive(Deserialize)]
        struct Q {
            quarantine: Option<String>,
            origin: Option<String>,
        }
        let q = self.store.first::<Q>("SELECT quarantine, origin FROM instruction_facts WHERE uri = ?1", args![uri]).await?;
        let (status, held) = q.map(|q| (q.quarantine, q.origin.unwrap_or_default())).unwrap_or_default();
        if unchanged && held != origin {
            let detail = lid_shared::federation::received_again(&uri, origin, &held, &who.entity_uri);
            self.store.batch(vec![event(&self.store, Some(agent), "fact_received_again", &detail, now)?]).await.map_err(ApiError::storage)?;
        }
        Ok(json!({
            "uri": uri, "name": name, "origin": held, "sha256": sha, "quarantine": status,
            "ignored_claims": claims.keys().collect::<Vec<_>>(), "unchanged": unchanged, "admission_warnings": admission_warnings,
        }))
    }

    /// `GET /v1/agents/{id}/federated-facts` (admins).
    pub async fn federated_facts(&self, agent: &str) -> ApiResult<Value> {
        #[derive(Deserialize)]
        struct Row {
            uri: String,
            unit_name: String,
            origin: Option<String>,
            quarantine: String,
            sha256: String,
            content: String,
            created_at: i64,
            provenance: Option<String>,
            quarantine_reason: Option<String>,
        }
        let rows: Vec<Row> = self
            .store
            .all(
                "SELECT uri, unit_name, origin, quarantine, sha256, content, created_at, provenance, quarantine_reason FROM instruction_facts WHERE agent_id = ?1 AND quarantine IS NOT NULL ORDER BY created_at, uri",
                args![agent],
            )
            .await?;
        let facts: Vec<Value> = rows
            .into_iter()
            .map(|r| {
                let prov: Value = r.provenance.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or(Value::Null);
                json!({"uri": r.uri, "name": r.unit_name, "origin": r.origin, "quarantine": r.quarantine, "sha256": r.sha256, "content": r.content, "received_at": iso(r.created_at), "sender_claims": prov["sender_claims"], "received_by": prov["received_by"],
                    "quarantine_reason": r.quarantine_reason})
            })
            .collect();
        Ok(json!({"agent_id": agent, "facts": facts}))
    }

    /// `POST /v1/agents/{id}/facts/promote`: an admin holding `instruction:write` promotes
    /// a quarantined fact (new live fact to KV first, then one D1 batch whose first
    /// statement fails the CHECK constraint unless the row is still quarantined).
    pub async fn promote(&self, agent: &str, body: &Value, who: &Principal) -> ApiResult<Value> {
        if let Err(e) = who.require_admin().and_then(|_| who.require_instruction_write(agent)) {
            return Err(self.denied(agent, who, "promote", e, json!({"uri": body.get("uri")})).await);
        }
        let (kind, requested) = lid_shared::units::promotion(body)?;
        let (uri, interpret_as) = (requested.uri.to_string(), kind.as_str());
        #[derive(Deserialize)]
        struct Row {
            content: String,
            unit_name: String,
            origin: Option<String>,
            quarantine: String,
        }
        let row: Option<Row> = self
            .store
            .first("SELECT content, unit_name, origin, quarantine FROM instruction_facts WHERE uri = ?1 AND agent_id = ?2 AND quarantine IS NOT NULL", args![uri, agent])
            .await?;
        let Some(row) = row else {
            return Err(ApiError::new(404, "quarantined_fact_not_found", format!("agent {agent:?} has no quarantined fact {uri:?}: GET /v1/agents/{agent}/federated-facts lists them")));
        };
        let already = || ApiError::new(409, "fact_already_promoted", format!("{uri} was already promoted; quarantined facts are promoted once"));
        if row.quarantine == "promoted" {
            return Err(already());
        }
        let name = requested.name.unwrap_or(&row.unit_name).to_string();
        lid_shared::units::check_name(&name)?;
        let admission_warnings = self.admit(agent, vec![json!({"name": name, "content": row.content, "interpret_as": interpret_as})]).await?;
        let basis = write_basis(&self.store, agent).await?;
        let current = self.store.writable_snapshot(agent).await?;
        let deployment = self.write_deployment(agent, current.as_deref().map(|s| current_of(s).0), body).await?;
        let unit_key = format!("instruction:{deployment}/{agent}/{name}");
        let entry = current.as_deref().and_then(|s| lid_shared::units::manifest_entry(&s.manifest_json, &name));
        lid_shared::units::check_reviewed(&name, kind, entry.as_ref())?;
        let in_manifest = entry.is_some();
        let latest = current_version(&self.store, &unit_key).await?;
        lid_shared::units::check_kind(&name, kind, latest.as_ref(), in_manifest)?;
        let version = lid_shared::units::plan_version(requested.version, latest.as_ref(), None, |v, t| lid_core::api::version_order(v, t).map_err(ApiError::from))?;
        let live = format!("{unit_key}/{version}");
        if split_fact_uri(&live).is_none() || lid_core::uri::InstructionUri::parse(&live).is_err() {
            return Err(ApiError::bad_request("invalid_request", format!("{live:?} is not a valid instruction: URI (unit names are kebab-case, versions like v2)")));
        }
        if sha_of(&self.store, &live).await?.is_some() {
            return Err(ApiError::new(409, "fact_version_conflict", format!("{live} already exists; pass another `version`")));
        }
        let origin = row.origin.unwrap_or_default();
        let ia = if kind == Kind::Instruction { InterpretAs::Instruction } else { InterpretAs::Content };
        let fact = Self::new_fact(&live, &version, &row.content, ia, lid_shared::units::promoted_author(&origin, &who.entity_uri), lid_shared::units::PROMOTED_TRUST);
        stub_still_fits(current.as_deref(), kind, entry.as_ref(), &unit_key, &fact)?;
        let provenance = json!({"promoted_from": uri, "promoted_by": who.entity_uri, "key_id": who.key_id, "origin": origin});
        let now = now_ms();
        self.store.put_fact(&fact).await?;
        let mut stmts = self.unmoved(agent, basis.as_deref(), &unit_key, latest.as_ref())?;
        stmts.push(self.store.stmt("UPDATE instruction_facts SET quarantine = CASE WHEN quarantine = 'quarantined' THEN 'promoted' ELSE 'not-quarantined' END WHERE uri = ?1", args![uri])?);
        stmts.extend(ledger_insert(&self.store, &fact, &unit_key, agent, &name, latest.as_ref().map(|l| l.sha256.as_str()), &provenance, now)?);
        if ia == InterpretAs::Instruction {
            stmts.push(self.store.stmt("DELETE FROM boot_stubs WHERE agent_id = ?1", args![agent])?);
        }
        let detail = json!({"uri": live, "promoted_from": uri, "interpret_as": interpret_as, "origin": origin, "promoted_by": who.entity_uri, "key_id": who.key_id});
        stmts.push(event(&self.store, Some(agent), "fact_promoted", &detail, now)?);
        if let Err(e) = self.store.batch(stmts).await {
            self.store.restore_committed(&[fact.uri.as_str()]).await?;
            let msg = e.to_string();
            if msg.contains("CHECK") {
                return Err(already());
            }
            if msg.contains(crate::store::MOVED) {
                return Err(self.moved(agent, basis.as_deref(), &live, e).await);
            }
            if msg.contains("UNIQUE") || msg.contains("constraint") {
                return Err(ApiError::new(409, "fact_version_conflict", format!("{live} was written concurrently; pass another `version`")));
            }
            return Err(ApiError::storage(e));
        }
        Ok(json!({"uri": live, "version": version, "interpret_as": interpret_as, "sha256": fact.sha256, "promoted_from": uri, "promoted_by": who.entity_uri, "origin": origin, "admission_warnings": admission_warnings}))
    }

    /// `GET /v1/agents/{id}/service-events` (admins), oldest first, optionally one `kind`.
    pub async fn service_events(&self, agent: &str, kind: Option<&str>) -> ApiResult<Value> {
        #[derive(Deserialize)]
        struct Row {
            id: String,
            kind: String,
            detail: String,
            created_at: i64,
        }
        let rows: Vec<Row> = self
            .store
            .all("SELECT id, kind, detail, created_at FROM service_events WHERE agent_id = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY created_at, rowid", args![agent, kind.map(str::to_string)])
            .await?;
        let events: Vec<Value> = rows
            .into_iter()
            .map(|r| json!({"id": r.id, "kind": r.kind, "detail": serde_json::from_str::<Value>(&r.detail).unwrap_or(Value::Null), "created_at": iso(r.created_at)}))
            .collect();
        Ok(json!({"agent_id": agent, "events": events}))
    }
}
