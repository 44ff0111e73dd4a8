//! The worker's storage: instruction facts in **KV**, everything relational in **D1**
//! (the §21.7 tables and lid's, created by `migrations/*.sql` unchanged).
//!
//! KV layout (binding `FACTS`): one immutable value per fact, the fact's JSON (the shape
//! `lid serve` hands the component, `lid_core::store::Fact`) under its full
//! `instruction:` URI. A URI is written once and never rewritten (§21.4.2), so a KV read
//! can be stale only by being *absent*, never by showing other content.
//!
//! Every fact carries the org key's signature (§21.4.3, `lid_shared::attest`), kept in the
//! ledger's `attestation_chain`; a fact read from KV is checked against it before the
//! engine sees it, so a KV value or ledger row changed by anything but the service is
//! quarantined and never served (a tampered version gives way to the one before it).
//!
//! D1 (binding `DB`) holds the fact ledger (`instruction_facts`: which versions exist,
//! `valid_until`, provenance; strongly consistent, so it decides conflicts and the next
//! version), the manifest registry (`instruction_manifests`), audit, stubs, keys,
//! coverage. A publish writes the facts to KV first and commits the D1 rows in one batch
//! (a transaction) with the registry row; a reader that sees the new registry row before
//! KV shows a new unit version gets the newest version KV does show (see the README).
//!
//! Each isolate keeps the agent's [`Snapshot`] (manifest + facts) keyed by the D1 head
//! (current manifest row, newest ledger rowid), as `lid serve` does, and the ranker's
//! derived index blobs in memory.
//!
//! The recall `content` channel (Spec-13) reads the agent's content-typed units and its
//! uploaded knowledge packs (registry `knowledge_packs`, files as content facts in KV
//! under `knowledge:{deployment}/{agent}/{pack}/{version}/{path}`), listed for the engine
//! as [`ContentSources`]. Quarantined facts (`migrations/0002_content_channel.sql`) live
//! in the D1 ledger only: they are never written to KV, so the engine cannot read them.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use lid_core::content::{ContentSources, StoredPack};
use lid_core::store::{Fact, Facts, InterpretAs, StoreError};
use lid_shared::attest::{OrgKey, Signed, Unattested};
use serde::Deserialize;
use serde_json::Value;
use worker::wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, KvStore};

use crate::error::{ApiError, ApiResult};

/// The most KV reads or writes one request has in flight at once.
const KV_IN_FLIGHT: usize = 64;

/// Workers KV's key limit, in bytes: a fact's URI is its key.
pub const KV_KEY_MAX: usize = 512;
/// The largest fact content the worker stores: D1 refuses a row over 2,000,000 bytes (the
/// ledger keeps the content beside its KV copy), so a little under it.
pub const FACT_CONTENT_MAX: usize = 1_900_000;

/// Whether the worker can store `fact` at all (KV key length, D1 row size): refused before
/// anything is written, with what to change, instead of a retryable storage error.
pub fn check_storable(fact: &Fact) -> ApiResult<()> {
    if fact.uri.len() > KV_KEY_MAX {
        return Err(ApiError::bad_request(
            "invalid_request",
            format!("the fact URI would be {} bytes, over the {KV_KEY_MAX}-byte key limit of the worker's KV store: use shorter agent, deployment, pack, unit or file names ({}…)", fact.uri.len(), fact.uri.chars().take(80).collect::<String>()),
        ));
    }
    if fact.content.len() > FACT_CONTENT_MAX {
        return Err(ApiError::new(
            413,
            "fact_too_large",
            format!("{} is {} bytes, over the worker's {FACT_CONTENT_MAX}-byte limit for one fact (its D1 row): split it into smaller units or files", fact.uri.chars().take(120).collect::<String>(), fact.content.len()),
        ));
    }
    Ok(())
}

/// A value bound into a D1 statement.
pub trait Arg {
    fn js(&self) -> JsValue;
}
impl Arg for &str {
    fn js(&self) -> JsValue {
        JsValue::from_str(self)
    }
}
impl Arg for String {
    fn js(&self) -> JsValue {
        JsValue::from_str(self)
    }
}
impl Arg for &String {
    fn js(&self) -> JsValue {
        JsValue::from_str(self)
    }
}
impl Arg for i64 {
    fn js(&self) -> JsValue {
        JsValue::from_f64(*self as f64)
    }
}
impl Arg for f64 {
    fn js(&self) -> JsValue {
        JsValue::from_f64(*self)
    }
}
impl<T: Arg> Arg for Option<T> {
    fn js(&self) -> JsValue {
        self.as_ref().map(Arg::js).unwrap_or(JsValue::NULL)
    }
}

/// `args![a, b, …]`: the D1 bind list.
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => { vec![$($crate::store::Arg::js(&$a)),*] };
}

/// The snapshot head of an agent: current registry row, newest ledger rowid.
pub const HEAD_SQL: &str = "SELECT m.id AS id, (SELECT coalesce(max(rowid), 0) FROM instruction_facts WHERE agent_id = ?1) AS generation
     FROM instruction_manifests m WHERE m.agent_id = ?1 AND m.superseded_at IS NULL";

#[derive(Deserialize)]
pub struct Head {
    pub id: String,
    pub generation: i64,
}

/// The two bindings, and the org key (`LID_ORG_SIGNING_KEY`) or why there is none, and
/// during a rotation the key before it (`LID_ORG_SIGNING_KEY_PREVIOUS`).
pub struct Store {
    pub db: D1Database,
    pub kv: KvStore,
    pub org: Result<OrgKey, String>,
    pub previous: Option<OrgKey>,
}

/// The fields of a fact the org key signs, as [`ledger_insert`] signs them.
pub fn signed(f: &Fact) -> Signed<'_> {
    Signed {
        uri: &f.uri,
        version: &f.version,
        interpret_as: if f.interpret_as == InterpretAs::Content { "content" } else { "instruction" },
        content: &f.content,
        authored_by: f.authored_by.as_deref().unwrap_or_default(),
        authored_at: f.authored_at.as_deref().unwrap_or_default(),
        source_trust: f.source_trust.unwrap_or(1.0),
        tokens: f.tokens.unwrap_or(0).into(),
        sha256: f.sha256.as_deref(),
    }
}

/// Facts left out of a read for their attestation: (URI, why), to be quarantined.
pub type Unattesteds = Vec<(String, Unattested)>;

/// One `instruction_facts` row, without content (the ledger).
#[derive(Debug, Clone, Deserialize)]
pub struct LedgerRow {
    pub uri: String,
    pub unit_key: String,
    pub version: String,
    pub valid_until: Option<String>,
    pub sha256: String,
    pub provenance: Option<String>,
    #[serde(default)]
    pub interpret_as: Option<String>,
    /// `quarantined` / `promoted` (Spec-13), `None` for a live fact.
    #[serde(default)]
    pub quarantine: Option<String>,
    /// Why it is quarantined, for a fact that failed its attestation.
    #[serde(default)]
    pub quarantine_reason: Option<String>,
    /// The org key's signatures (§21.4.3).
    #[serde(default)]
    pub attestation_chain: Option<String>,
}

/// One agent's current manifest and the facts it needs, as the engine sees them.
pub struct Snapshot {
    pub agent_id: String,
    pub manifest_id: String,
    pub generation: i64,
    pub version: String,
    pub fact_uri: String,
    pub token_count: i64,
    pub created_at: i64,
    pub manifest_json: String,
    pub provenance: Value,
    pub lift_units: Vec<String>,
    pub ledger: Vec<LedgerRow>,
    pub facts: WorkerFacts,
    /// Its boot stubs, rendered from these facts (never read from `boot_stubs`).
    pub stubs: lid_shared::heartbeat::StubMemo,
}

/// What the isolate's cache of derived indexes may hold before it starts over (an
/// isolate has 128 MB in all).
const DERIVED_MAX_BYTES: usize = 32 << 20;
const DERIVED_MAX_ENTRIES: usize = 8192;

thread_local! {
    /// The facts this isolate has verified (a snapshot rebuilt after one write checks one
    /// signature).
    static VERIFIED: lid_shared::attest::Memo = lid_shared::attest::Memo::default();
    /// The org key this isolate has found the store to record ([`Store::settle_key`]).
    static SETTLED_KID: RefCell<Option<String>> = const { RefCell::new(None) };
    static SNAPSHOTS: RefCell<HashMap<String, Rc<Snapshot>>> = RefCell::new(HashMap::new());
    static DERIVED: RefCell<HashMap<String, Rc<Vec<u8>>>> = RefCell::new(HashMap::new());
}

/// The facts one engine call may read: the agent's own (§21.4.5), plus the isolate's
/// cache of derived ranker indexes (keyed by a fingerprint of their inputs: never stale).
#[derive(Clone, Default)]
pub struct WorkerFacts {
    facts: BTreeMap<String, Fact>,
    versions: BTreeMap<String, Vec<String>>,
    content: Option<ContentSources>,
}

impl WorkerFacts {
    pub fn insert(&mut self, unit_key: &str, fact: Fact) {
        let list = self.versions.entry(unit_key.to_string()).or_default();
        if !list.contains(&fact.version) {
            list.push(fact.version.clone());
        }
        self.facts.insert(fact.uri.clone(), fact);
    }

    pub fn contains(&self, uri: &str) -> bool {
        self.facts.contains_key(uri)
    }

    /// What the recall `content` channel serves from these facts.
    pub fn set_content(&mut self, content: ContentSources) {
        self.content = Some(content);
    }
}

impl Facts for WorkerFacts {
    fn get(&self, uri: &str) -> Result<Option<Fact>, StoreError> {
        Ok(self.facts.get(uri).cloned())
    }
    fn versions(&self, unit_key: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.versions.get(unit_key).cloned().unwrap_or_default())
    }
    fn cached(&self, key: &str) -> Option<Vec<u8>> {
        DERIVED.with(|d| d.borrow().get(key).map(|b| b.as_ref().clone()))
    }
    fn content_sources(&self, _agent_id: &str) -> Result<Option<ContentSources>, StoreError> {
        Ok(self.content.clone())
    }
    fn cache(&self, key: &str, blob: &[u8]) {
        DERIVED.with(|d| {
            let mut d = d.borrow_mut();
            // Bounded by bytes, not entries: a large pack's index is cached split into
            // hundreds of small segments, all of which its recalls need.
            let held: usize = d.values().map(|b| b.len()).sum();
            if held + blob.len() > DERIVED_MAX_BYTES || d.len() >= DERIVED_MAX_ENTRIES {
                d.clear();
            }
            d.insert(key.to_string(), Rc::new(blob.to_vec()));
        });
    }
}

/// A current `knowledge_packs` row.
#[derive(Debug, Clone, Deserialize)]
pub struct PackRow {
    pub pack: String,
    pub version: String,
    pub prefix: String,
    pub meta: String,
    pub files: String,
    pub digest: String,
    pub created_at: i64,
    pub uploaded_by: String,
}

/// `instruction:{d}/{a}/{unit}/{version}` → (unit key, unit name, version).
pub fn split_fact_uri(uri: &str) -> Option<(String, String, String)> {
    let rest = uri.strip_prefix("instruction:")?;
    let mut parts = rest.split('/');
    let (d, a, u, v) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || [d, a, u, v].iter().any(|s| s.is_empty()) {
        return None;
    }
    Some((format!("instruction:{d}/{a}/{u}"), u.to_string(), v.to_string()))
}

impl Store {
    pub fn stmt(&self, sql: &str, args: Vec<JsValue>) -> ApiResult<D1PreparedStatement> {
        Ok(self.db.prepare(sql).bind(&args)?)
    }

    /// All rows of a query.
    pub async fn all<T: for<'de> Deserialize<'de>>(&self, sql: &str, args: Vec<JsValue>) -> ApiResult<Vec<T>> {
        Ok(self.stmt(sql, args)?.all().await?.results::<T>()?)
    }

    /// The first row of a query.
    pub async fn first<T: for<'de> Deserialize<'de>>(&self, sql: &str, args: Vec<JsValue>) -> ApiResult<Option<T>> {
        Ok(self.stmt(sql, args)?.first::<T>(None).await?)
    }

    /// Run one statement; the number of rows it changed.
    pub async fn run(&self, sql: &str, args: Vec<JsValue>) -> ApiResult<usize> {
        let r = self.stmt(sql, args)?.run().await?;
        Ok(r.meta()?.and_then(|m| m.changes).unwrap_or(0))
    }

    /// Run statements as one D1 batch: a transaction, all or nothing.
    pub async fn batch(&self, stmts: Vec<D1PreparedStatement>) -> Result<(), worker::Error> {
        let rs = self.db.batch(stmts).await?;
        if let Some(e) = rs.iter().find_map(|r| r.error()) {
            return Err(worker::Error::RustError(e));
        }
        Ok(())
    }

    /// (current manifest row id, newest ledger rowid) of `agent`: what a snapshot is built from.
    pub async fn head(&self, agent: &str) -> ApiResult<Option<(String, i64)>> {
        let h: Option<Head> = self.first(HEAD_SQL, args![agent]).await?;
        Ok(h.map(|h| (h.id, h.generation)))
    }

    pub async fn ledger(&self, agent: &str) -> ApiResult<Vec<LedgerRow>> {
        self.all(
            "SELECT uri, unit_key, version, valid_until, sha256, provenance, interpret_as, quarantine, quarantine_reason, attestation_chain FROM instruction_facts WHERE agent_id = ?1 ORDER BY rowid",
            args![agent],
        )
        .await
    }

    /// One fact from KV.
    /// [`Store::kv_fact`] of each of `uris`, in order: in parallel, but at most
    /// [`KV_IN_FLIGHT`] at a time (a pack of thousands of files read all at once ran workerd
    /// out of open files and stalled every request).
    async fn kv_facts<'u>(&self, uris: impl Iterator<Item = &'u str>) -> Vec<Result<Option<Fact>, String>> {
        let uris: Vec<&str> = uris.collect();
        let mut got = Vec::with_capacity(uris.len());
        for chunk in uris.chunks(KV_IN_FLIGHT) {
            got.extend(futures_util::future::join_all(chunk.iter().map(|uri| self.kv_fact(uri))).await);
        }
        got
    }

    pub async fn kv_fact(&self, uri: &str) -> Result<Option<Fact>, String> {
        let t = self.kv.get(uri).text().await.map_err(|e| e.to_string())?;
        match t {
            None => Ok(None),
            Some(t) => serde_json::from_str(&t).map(Some).map_err(|e| format!("fact {uri} is not valid JSON: {e}")),
        }
    }

    /// Store one fact in KV (immutable: written once per URI). Without an org key, or with
    /// one the store does not record, nothing is written: the ledger row that would sign it
    /// could not be.
    pub async fn put_fact(&self, fact: &Fact) -> ApiResult<()> {
        check_storable(fact)?;
        self.settle_key().await?;
        let json = serde_json::to_string(fact).map_err(ApiError::storage)?;
        self.kv.put(&fact.uri, json)?.execute().await?;
        Ok(())
    }

    /// After a write lost its D1 batch (a URI taken concurrently): its facts went to KV
    /// first, so a URI the winner holds may now hold the loser's value there. Put back what
    /// the ledger committed for each of `uris` (the winner's fields, which its attestation
    /// covers); a URI with no ledger row is left alone (nothing reads it). Each loser does
    /// this after its own KV write, so the last value written is always the committed one.
    pub async fn restore_committed(&self, uris: &[&str]) -> ApiResult<()> {
        #[derive(serde::Deserialize)]
        struct Row {
            uri: String,
            version: String,
            content: String,
            interpret_as: InterpretAs,
            authored_by: String,
            authored_at: String,
            source_trust: f64,
            tokens: i64,
            sha256: String,
        }
        for uri in uris {
            let row: Option<Row> = self
                .first("SELECT uri, version, content, interpret_as, authored_by, authored_at, source_trust, tokens, sha256 FROM instruction_facts WHERE uri = ?1", args![*uri])
                .await?;
            let Some(r) = row else { continue };
            let fact = Fact {
                uri: r.uri,
                content: r.content,
                version: r.version,
                interpret_as: r.interpret_as,
                authored_by: Some(r.authored_by),
                authored_at: Some(r.authored_at),
                source_trust: Some(r.source_trust),
                tokens: u32::try_from(r.tokens).ok(),
                sha256: Some(r.sha256),
                ..Fact::default()
            };
            self.put_fact(&fact).await?;
        }
        Ok(())
    }

    /// [`Store::put_fact`] for each of `facts`, in parallel, at most [`KV_IN_FLIGHT`]
    /// at a time.
    pub async fn put_facts<'f>(&self, facts: impl Iterator<Item = &'f Fact>) -> ApiResult<()> {
        let all: Vec<&Fact> = facts.collect();
        // every one checked before any is written
        for f in &all {
            check_storable(f)?;
        }
        for chunk in all.chunks(KV_IN_FLIGHT) {
            futures_util::future::try_join_all(chunk.iter().map(|f| self.put_fact(f))).await?;
        }
        Ok(())
    }

    /// The org key, or 503 `org_key_missing` saying how to give the worker one.
    pub fn org(&self) -> ApiResult<&OrgKey> {
        self.org.as_ref().map_err(|why| {
            ApiError::new(
                503,
                lid_shared::attest::ORG_KEY_MISSING,
                format!("{why}: the worker signs every fact it stores and checks every fact it reads with the org key (§21.4.3); set the LID_ORG_SIGNING_KEY secret (wrangler secret put LID_ORG_SIGNING_KEY; locally --var or .dev.vars) to the base64url of a 32-byte Ed25519 seed, as `lid serve` keeps in its .org-key file"),
            )
        })
    }

    /// Read `wanted` (unit key or pack file key, URI) from KV in parallel ([`KV_IN_FLIGHT`]) into `facts`,
    /// each checked against its ledger row's signature: one that fails is left out and
    /// added to `bad`. Returns whether every fact was visible in KV and whether any failed.
    async fn read_checked(&self, wanted: &[(String, String)], chains: &HashMap<&str, Option<&str>>, facts: &mut WorkerFacts, bad: &mut Unattesteds) -> ApiResult<(bool, bool)> {
        let key = self.org()?;
        let got = self.kv_facts(wanted.iter().map(|(_, uri)| uri.as_str())).await;
        let (mut complete, mut failed) = (true, false);
        for ((k, uri), f) in wanted.iter().zip(got) {
            match f.map_err(ApiError::backend)? {
                Some(fact) => match VERIFIED.with(|m| m.verify(key, &signed(&fact), chains.get(uri.as_str()).copied().flatten())) {
                    Ok(()) => facts.insert(k, fact),
                    Err(why) => {
                        bad.push((uri.clone(), why));
                        failed = true;
                    }
                },
                // Committed in D1 but not yet visible in this KV location.
                None => complete = false,
            }
        }
        Ok((complete, failed))
    }

    /// The facts `manifest` needs (the latest ledger version of each entry's unit and the
    /// exact `fact_uri`), read from KV in parallel; `staged` facts (not yet stored) win.
    /// A fact that fails its attestation is added to `bad` and the unit's version before
    /// it read instead. Returns the facts and whether every fact the ledger names was
    /// visible in KV.
    pub async fn facts_for(&self, manifest_json: &str, ledger: &[LedgerRow], staged: &[Fact], bad: &mut Unattesteds) -> ApiResult<(WorkerFacts, bool)> {
        let m = lid_core::api::load_manifest(manifest_json).map_err(ApiError::from)?;
        let chains: HashMap<&str, Option<&str>> = ledger.iter().map(|r| (r.uri.as_str(), r.attestation_chain.as_deref())).collect();
        let mut facts = WorkerFacts::default();
        for f in staged {
            if let Some((key, _, _)) = split_fact_uri(&f.uri) {
                facts.insert(&key, f.clone());
            }
        }
        let mut complete = true;
        loop {
            let mut by_key: BTreeMap<&str, Vec<&LedgerRow>> = BTreeMap::new();
            for r in ledger.iter().filter(|r| r.quarantine.is_none() && !bad.iter().any(|(u, _)| *u == r.uri)) {
                by_key.entry(r.unit_key.as_str()).or_default().push(r);
            }
            let mut wanted: Vec<(String, String)> = Vec::new(); // (unit key, uri)
            for e in &m.entries {
                let Some(uri) = e.fact_uri.as_deref().filter(|u| !u.is_empty()) else { continue };
                let Some((key, _, _)) = split_fact_uri(uri) else { continue };
                let rows = by_key.get(key.as_str()).cloned().unwrap_or_default();
                let versions: Vec<String> = rows.iter().map(|r| r.version.clone()).collect();
                if let Some(v) = lid_core::uri::latest(&versions) {
                    wanted.push((key.clone(), format!("{key}/{v}")));
                }
                if rows.iter().any(|r| r.uri == uri) {
                    wanted.push((key.clone(), uri.to_string()));
                }
            }
            wanted.sort();
            wanted.dedup();
            wanted.retain(|(_, u)| !facts.contains(u));
            let (seen, failed) = self.read_checked(&wanted, &chains, &mut facts, bad).await?;
            complete &= seen;
            if !failed {
                break;
            }
        }
        let valid_until: HashMap<&str, &Option<String>> = ledger.iter().map(|r| (r.uri.as_str(), &r.valid_until)).collect();
        for f in facts.facts.values_mut() {
            if let Some(Some(v)) = valid_until.get(f.uri.as_str()) {
                f.valid_until = Some(v.clone());
            }
        }
        Ok((facts, complete))
    }

    /// The agent's current packs (registry rows, by pack id).
    pub async fn current_packs(&self, agent: &str) -> ApiResult<Vec<PackRow>> {
        self.all("SELECT pack, version, prefix, meta, files, digest, created_at, uploaded_by FROM knowledge_packs WHERE agent_id = ?1 AND superseded_at IS NULL ORDER BY pack", args![agent]).await
    }

    /// Read the content channel's sources into `facts` (Spec-13): the latest version of
    /// each content-typed unit and every file of each current pack, from KV in parallel,
    /// each checked as [`Store::facts_for`] checks them. Returns whether every fact the
    /// ledger names was visible in KV.
    pub async fn content_for(&self, agent: &str, ledger: &[LedgerRow], facts: &mut WorkerFacts, bad: &mut Unattesteds) -> ApiResult<bool> {
        let live = |r: &&LedgerRow| r.quarantine.is_none() && r.uri.starts_with("instruction:");
        let content_keys: Vec<String> = ledger
            .iter()
            .filter(|r| live(r) && r.interpret_as.as_deref() == Some("content"))
            .map(|r| r.unit_key.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let chains: HashMap<&str, Option<&str>> = ledger.iter().map(|r| (r.uri.as_str(), r.attestation_chain.as_deref())).collect();
        let packs = self.current_packs(agent).await.map_err(|e| ApiError::backend(e.0.message))?;
        let mut wanted: Vec<(String, String)> = Vec::new(); // (unit key, uri)
        let mut stored = Vec::new();
        for p in &packs {
            let files: Vec<String> = serde_json::from_str(&p.files).map_err(|e| ApiError::backend(format!("knowledge_packs.files of {}: {e}", p.pack)))?;
            for f in std::iter::once("KNOWLEDGE.md").chain(files.iter().map(String::as_str)) {
                let uri = format!("{}{f}", p.prefix);
                wanted.push((uri.clone(), uri));
            }
            stored.push(StoredPack { id: p.pack.clone(), version: p.version.clone(), prefix: p.prefix.clone(), files, digest: Some(p.digest.clone()) });
        }
        let mut complete = true;
        loop {
            let mut units: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for r in ledger.iter().filter(live).filter(|r| !bad.iter().any(|(u, _)| *u == r.uri)) {
                units.entry(r.unit_key.as_str()).or_default().push(r.version.clone());
            }
            for key in &content_keys {
                if let Some(v) = lid_core::uri::latest(units.get(key.as_str()).map(Vec::as_slice).unwrap_or_default()) {
                    wanted.push((key.clone(), format!("{key}/{v}")));
                }
            }
            wanted.retain(|(_, u)| !facts.contains(u) && !bad.iter().any(|(b, _)| b == u));
            let (seen, failed) = self.read_checked(&wanted, &chains, facts, bad).await?;
            complete &= seen;
            wanted.clear();
            if !failed {
                break;
            }
        }
        if !content_keys.is_empty() || !stored.is_empty() {
            facts.content = Some(ContentSources { facts: content_keys, packs: stored });
        }
        Ok(complete)
    }

    /// Quarantine facts whose attestation failed (§21.4.3, §19.5), as `lid serve` does:
    /// `lid_shared::attest::QUARANTINE_SQL` and a `fact_unattested` service event each.
    pub async fn quarantine_unattested(&self, agent: &str, bad: &Unattesteds) -> ApiResult<()> {
        if bad.is_empty() {
            return Ok(());
        }
        let kid = self.org()?.kid().to_string();
        let now = crate::util::now_ms();
        let mut stmts = Vec::new();
        for (uri, why) in bad {
            worker::console_warn!("quarantined {uri}: {}", why.reason());
            stmts.push(self.stmt(lid_shared::attest::QUARANTINE_SQL, args![why.reason(), uri])?);
            stmts.push(event(self, Some(agent), lid_shared::attest::EVENT, &serde_json::json!({"uri": uri, "reason": why.reason(), "message": why.to_string(), "kid": kid}), now)?);
        }
        self.batch(stmts).await.map_err(ApiError::storage)
    }

    /// Check the org key against the one the store records (`org_signing_key`,
    /// [`lid_shared::attest::key_check`]), once per isolate and key, before it signs or
    /// checks a fact: a store with no record yet records this key (if it signed the facts,
    /// or there are none); a store that records `LID_ORG_SIGNING_KEY_PREVIOUS` is rotated
    /// (every fact that key signed re-signed with this one, and the new key recorded, in
    /// one batch, as `lid org-key rotate` does); any other key is 503 `org_key_mismatch`,
    /// never a reason to quarantine every fact.
    pub async fn settle_key(&self) -> ApiResult<()> {
        use lid_shared::attest::{self, KeyCheck};
        let key = self.org()?;
        if SETTLED_KID.with(|k| k.borrow().as_deref() == Some(key.kid())) {
            return Ok(());
        }
        #[derive(Deserialize)]
        struct Recorded {
            kid: String,
        }
        #[derive(Deserialize)]
        struct Counts {
            signed: i64,
            by_key: i64,
        }
        let recorded: Option<Recorded> = self.first(attest::RECORDED_KEY_SQL, args![]).await?;
        let recorded = recorded.map(|r| r.kid);
        let counts = match recorded {
            Some(_) => Counts { signed: 0, by_key: 0 },
            None => self.first(attest::SIGNED_BY_SQL, args![attest::kid_needle(key.kid())]).await?.unwrap_or(Counts { signed: 0, by_key: 0 }),
        };
        let now = crate::util::now_ms();
        match attest::key_check(recorded.as_deref(), key, self.previous.as_ref(), counts.signed, counts.by_key) {
            KeyCheck::Current => {}
            KeyCheck::Record => {
                self.run(attest::RECORD_KEY_SQL, args![key.kid(), key.public_text(), now]).await?;
            }
            KeyCheck::Rotate => {
                let Some(old) = self.previous.as_ref() else { return Err(ApiError::backend("a rotation without a previous key")) };
                let rows: Vec<attest::StoredChain> = self.all(attest::RESIGN_ROWS_SQL, args![]).await?;
                let (mut stmts, mut kept) = (Vec::new(), 0);
                for r in &rows {
                    match r.resign(key, old) {
                        Ok(chain) => stmts.push(self.stmt(attest::RESIGN_SQL, args![chain, r.uri, r.attestation_chain])?),
                        Err(_) => kept += 1,
                    }
                }
                let resigned = stmts.len();
                // Another isolate may be rotating the store at this moment: its re-signing
                // writes the same chains (Ed25519 is deterministic; RESIGN_SQL changes a
                // row only from the chain read), and of the two batches only the first
                // writes the event and the record (both are conditional on the old key).
                let detail = serde_json::json!({"from": old.kid(), "to": key.kid(), "resigned": resigned, "kept": kept});
                stmts.push(self.stmt(attest::ROTATED_EVENT_SQL, args![format!("evt_{}", crate::util::random_hex(12)), attest::ROTATED_EVENT, detail.to_string(), now, old.kid()])?);
                stmts.push(self.stmt(attest::ROTATE_KEY_SQL, args![key.kid(), key.public_text(), now, old.kid()])?);
                self.batch(stmts).await.map_err(ApiError::storage)?;
                worker::console_log!("rotated the org key {} -> {}: {resigned} facts re-signed, {kept} kept", old.kid(), key.kid());
            }
            KeyCheck::Mismatch(kid) => {
                let remedy = "set LID_ORG_SIGNING_KEY to the key the store was used with; to rotate to a new key, give the old one as LID_ORG_SIGNING_KEY_PREVIOUS and the new one as LID_ORG_SIGNING_KEY";
                return Err(attest::org_key_mismatch(attest::mismatch_message(kid.as_deref(), key.kid(), remedy)).into());
            }
        }
        SETTLED_KID.with(|k| *k.borrow_mut() = Some(key.kid().to_string()));
        Ok(())
    }

    /// Sign, once, the facts written before attestation (`migrations/0007_attestation.sql`:
    /// rows up to the rowid it recorded that have no chain), from their KV values, as `lid
    /// serve` does on its first start with a key; then forget the mark. A fact not yet
    /// visible in KV keeps the mark for the next read.
    pub async fn adopt(&self) -> ApiResult<usize> {
        #[derive(Deserialize)]
        struct Mark {
            m: Option<i64>,
        }
        let mark: Option<Mark> = self.first("SELECT max(max_rowid) AS m FROM attestation_adoption", args![]).await?;
        let Some(max) = mark.and_then(|m| m.m) else { return Ok(0) };
        #[derive(Deserialize)]
        struct Row {
            uri: String,
        }
        let rows: Vec<Row> = self.all("SELECT uri FROM instruction_facts WHERE rowid <= ?1 AND attestation_chain IS NULL AND quarantine IS NULL ORDER BY rowid", args![max]).await?;
        let key = self.org()?;
        let got = self.kv_facts(rows.iter().map(|r| r.uri.as_str())).await;
        let (mut stmts, mut missing) = (Vec::new(), 0);
        for (r, f) in rows.iter().zip(got) {
            match f.map_err(ApiError::backend)? {
                Some(fact) => stmts.push(self.stmt("UPDATE instruction_facts SET attestation_chain = ?1 WHERE uri = ?2 AND attestation_chain IS NULL", args![key.sign(&signed(&fact)), r.uri])?),
                None => missing += 1,
            }
        }
        let adopted = stmts.len();
        if missing == 0 {
            stmts.push(self.stmt("DELETE FROM attestation_adoption", args![])?);
        }
        if adopted > 0 {
            stmts.push(event(self, None, "facts_adopted", &serde_json::json!({"facts": adopted, "kid": key.kid()}), crate::util::now_ms())?);
        }
        if !stmts.is_empty() {
            self.batch(stmts).await.map_err(ApiError::storage)?;
        }
        Ok(adopted)
    }

    /// The agent's snapshot for a write (or re-certification): one whose manifest fact is
    /// quarantined for its attestation is none, so that an admin can publish again (and
    /// write units first), as for an agent that has no manifest yet (as `lid serve`).
    pub async fn writable_snapshot(&self, agent: &str) -> ApiResult<Option<Rc<Snapshot>>> {
        match self.snapshot(agent).await {
            Err(e) if e.code == lid_shared::attest::MANIFEST_UNATTESTED => Ok(None),
            r => r,
        }
    }

    /// The agent's current snapshot, `None` when it has no manifest.
    pub async fn snapshot(&self, agent: &str) -> ApiResult<Option<Rc<Snapshot>>> {
        let head = self.head(agent).await.map_err(|e| ApiError::backend(e.0.message))?;
        self.snapshot_at(agent, head).await
    }

    /// The snapshot for an already read head (`None`: the agent has no manifest).
    pub async fn snapshot_at(&self, agent: &str, head: Option<(String, i64)>) -> ApiResult<Option<Rc<Snapshot>>> {
        let Some((manifest_id, generation)) = head else {
            return Ok(None);
        };
        let hit = SNAPSHOTS.with(|s| s.borrow().get(agent).filter(|s| s.manifest_id == manifest_id && s.generation == generation).cloned());
        if let Some(s) = hit {
            return Ok(Some(s));
        }
        #[derive(Deserialize)]
        struct Row {
            version: String,
            fact_uri: String,
            token_count: i64,
            created_at: i64,
        }
        let row: Row = self
            .first("SELECT version, fact_uri, token_count, created_at FROM instruction_manifests WHERE id = ?1", args![manifest_id])
            .await
            .map_err(|e| ApiError::backend(e.0.message))?
            .ok_or_else(|| ApiError::backend("the manifest row vanished while reading it"))?;
        // The store's org key checked (once per isolate), and a database from before
        // attestation: its facts are signed first (once).
        self.settle_key().await?;
        self.adopt().await?;
        let ledger = self.ledger(agent).await.map_err(|e| ApiError::backend(e.0.message))?;
        let manifest_row = ledger.iter().find(|r| r.uri == row.fact_uri);
        if let Some(reason) = manifest_row.and_then(|r| r.quarantine_reason.as_deref()) {
            return Err(lid_shared::attest::manifest_unattested(agent, &row.fact_uri, reason).into());
        }
        let manifest = self
            .kv_fact(&row.fact_uri)
            .await
            .map_err(ApiError::backend)?
            .ok_or_else(|| ApiError::backend(format!("manifest fact {} is not visible in KV yet (eventual consistency); retry in a few seconds", row.fact_uri)))?;
        let key = self.org()?;
        if let Err(why) = VERIFIED.with(|m| m.verify(key, &signed(&manifest), manifest_row.and_then(|r| r.attestation_chain.as_deref()))) {
            let reason = why.to_string();
            self.quarantine_unattested(agent, &vec![(row.fact_uri.clone(), why)]).await?;
            return Err(lid_shared::attest::manifest_unattested(agent, &row.fact_uri, &reason).into());
        }
        let provenance = manifest_row.and_then(|r| r.provenance.as_deref()).and_then(|p| serde_json::from_str(p).ok()).unwrap_or(Value::Null);
        let mut bad = Vec::new();
        let (mut facts, complete) = self.facts_for(&manifest.content, &ledger, &[], &mut bad).await?;
        let content_complete = self.content_for(agent, &ledger, &mut facts, &mut bad).await?;
        self.quarantine_unattested(agent, &bad).await?;
        let complete = complete && content_complete;
        #[derive(Deserialize)]
        struct Unit {
            unit: String,
        }
        let lift: Vec<Unit> = self
            .all("SELECT unit FROM coverage_reports WHERE agent_id = ?1 AND manifest_version = ?2 AND hit_at_10 < 0.4 ORDER BY unit", args![agent, row.version])
            .await
            .map_err(|e| ApiError::backend(e.0.message))?;
        let snap = Rc::new(Snapshot {
            agent_id: agent.to_string(),
            manifest_id,
            generation,
            version: row.version,
            fact_uri: row.fact_uri,
            token_count: row.token_count,
            created_at: row.created_at,
            manifest_json: manifest.content,
            provenance,
            lift_units: lift.into_iter().map(|u| u.unit).collect(),
            ledger,
            facts,
            stubs: Default::default(),
        });
        if complete {
            SNAPSHOTS.with(|s| s.borrow_mut().insert(agent.to_string(), snap.clone()));
        }
        Ok(Some(snap))
    }
}

#[allow(clippy::too_many_arguments)]
/// The D1 statements that record one new fact version in the ledger (§21.4.2–3): the
/// previous version gets `valid_until`, the new row names its sha256 in `derived_from`
/// and carries the org key's signature (§21.4.3). `prev_sha` is the current version's
/// sha256, read before the batch.
pub fn ledger_insert(store: &Store, f: &Fact, unit_key: &str, agent: &str, unit_name: &str, prev_sha: Option<&str>, provenance: &Value, now: i64) -> ApiResult<Vec<D1PreparedStatement>> {
    let when = crate::util::iso(now);
    Ok(vec![
        store.stmt("UPDATE instruction_facts SET valid_until = ?1 WHERE unit_key = ?2 AND valid_until IS NULL", args![when, unit_key])?,
        store.stmt(
            "INSERT INTO instruction_facts (uri, unit_key, agent_id, unit_name, version, content, interpret_as, sha256, tokens,
                authored_by, authored_at, source_trust, derived_from, valid_until, provenance, created_at, attestation_chain)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, NULL, ?14, ?15, ?16)",
            args![
                f.uri,
                unit_key,
                agent,
                unit_name,
                f.version,
                f.content,
                if f.interpret_as == lid_core::store::InterpretAs::Content { "content" } else { "instruction" },
                f.sha256.clone().unwrap_or_default(),
                f.tokens.unwrap_or(0) as i64,
                f.authored_by.clone().unwrap_or_default(),
                f.authored_at.clone().unwrap_or_default(),
                f.source_trust.unwrap_or(1.0),
                prev_sha.map(str::to_string),
                provenance.to_string(),
                now,
                store.org()?.sign(&signed(f))
            ],
        )?,
    ])
}

/// The uri of a unit's (`?1`, its unit key) live version: what a publish's staged fact was
/// checked against, checked again in its batch ([`unless_moved`]).
pub const LATEST_URI_SQL: &str = "SELECT uri FROM instruction_facts WHERE unit_key = ?1 AND valid_until IS NULL ORDER BY created_at DESC, rowid DESC LIMIT 1";

/// The live version of a unit in the ledger.
pub async fn current_version(store: &Store, unit_key: &str) -> ApiResult<Option<lid_shared::units::Latest>> {
    #[derive(Deserialize)]
    struct R {
        uri: String,
        version: String,
        interpret_as: String,
        sha256: String,
        authored_by: String,
        quarantined: i64,
    }
    let r: Option<R> = store.first(lid_shared::units::LATEST_SQL, args![unit_key]).await?;
    Ok(r.map(|r| lid_shared::units::Latest { uri: r.uri, version: r.version, interpret_as: r.interpret_as, sha256: r.sha256, authored_by: r.authored_by, quarantined: r.quarantined != 0 }))
}

/// The id of `agent`'s current `instruction_manifests` row, if it has one.
pub async fn current_manifest_id(store: &Store, agent: &str) -> ApiResult<Option<String>> {
    #[derive(Deserialize)]
    struct R {
        id: String,
    }
    let r: Option<R> = store.first(lid_shared::publish::CURRENT_MANIFEST_ID_SQL, args![agent]).await?;
    Ok(r.map(|r| r.id))
}

/// The newest servable fact row among the units a publish reviews
/// ([`lid_shared::publish::REVIEWED_HORIZON_SQL`]; `key` is its `reviewed_key`).
pub async fn reviewed_horizon(store: &Store, key: &str) -> ApiResult<String> {
    #[derive(Deserialize)]
    struct R {
        horizon: String,
    }
    Ok(store.first::<R>(lid_shared::publish::REVIEWED_HORIZON_SQL, args![key]).await?.map(|r| r.horizon).unwrap_or_else(|| "0".into()))
}

/// What a write for `agent` is checked against ([`lid_shared::units::WRITE_BASIS_SQL`]).
pub async fn write_basis(store: &Store, agent: &str) -> ApiResult<Option<String>> {
    #[derive(Deserialize)]
    struct R {
        basis: Option<String>,
    }
    Ok(store.first::<R>(lid_shared::units::WRITE_BASIS_SQL, args![agent]).await?.and_then(|r| r.basis))
}

/// What the failure of an [`unless_moved`] statement says.
pub const MOVED: &str = "NOT NULL constraint failed: instruction_manifests.agent_id";

/// A D1 batch's compare-and-set (a batch is one transaction, but has no `IF`): this
/// statement fails the batch, with a NOT NULL constraint error, unless `current` (a
/// one-value query over `?1`) still gives `expected` (`?2`, NULL for none); it writes
/// nothing when it holds. So a write planned against a head fails if the head moved.
pub fn unless_moved(store: &Store, current: &str, key: &str, expected: Option<&str>) -> ApiResult<D1PreparedStatement> {
    store.stmt(
        &format!("INSERT INTO instruction_manifests (id, agent_id, version, fact_uri, token_count, body, created_at) SELECT 'lid-head-moved', NULL, '', '', 0, '', 0 WHERE ({current}) IS NOT ?2"),
        args![key, expected],
    )
}

/// The sha256 of the fact at exactly `uri`, if the ledger has it.
pub async fn sha_of(store: &Store, uri: &str) -> ApiResult<Option<String>> {
    #[derive(Deserialize)]
    struct R {
        sha256: String,
    }
    Ok(store.first::<R>("SELECT sha256 FROM instruction_facts WHERE uri = ?1", args![uri]).await?.map(|r| r.sha256))
}

/// Insert a service event statement (coverage bypass, capability denial, …).
pub fn event(store: &Store, agent: Option<&str>, kind: &str, detail: &Value, now: i64) -> ApiResult<D1PreparedStatement> {
    store.stmt(
        "INSERT INTO service_events (id, agent_id, kind, detail, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        args![format!("evt_{}", crate::util::random_hex(12)), agent.map(str::to_string), kind, detail.to_string(), now],
    )
}
