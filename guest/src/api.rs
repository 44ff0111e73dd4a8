//! JSON entry points: the engine's whole surface as `&str -> Result<String, EngineError>`.
//!
//! The component glue (`component.rs`), the worker and the browser build call exactly
//! these, so every host produces byte-identical JSON for the same inputs (§21.3.4).

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::manifest::{self, Manifest, ValidateOptions};
use crate::rank::Weights;
use crate::recall::{RecallContext, RecallRequest};
use crate::store::{AuditSink, Facts};

fn to_json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| format!("{{\"error\":{{\"code\":\"internal\",\"message\":{:?}}}}}", e.to_string()))
}

fn parse<T: serde::de::DeserializeOwned>(what: &'static str, s: &str) -> Result<T, EngineError> {
    serde_json::from_str(s).map_err(|e| EngineError::json::<T>(what, s, e))
}

fn parse_or_default<T: serde::de::DeserializeOwned + Default>(what: &'static str, s: &str) -> Result<T, EngineError> {
    if s.trim().is_empty() {
        Ok(T::default())
    } else {
        parse(what, s)
    }
}

/// Parse a manifest that is expected to be valid; a structurally broken one is an error,
/// and so is one whose identity cannot form `instruction:` URIs (§21.4.1: an empty
/// agent or deployment, a floating version such as `latest`) or that names a unit twice
/// (§21.2.2: names are unique; it would be recalled and preloaded twice). The other
/// rules are the publisher's ([`manifest::validate`]); these callers serve what was
/// published, or a local directory during coexistence (§21.6.1).
pub fn load_manifest(json: &str) -> Result<Manifest, EngineError> {
    let m = manifest::parse(json)?;
    let problems = manifest::serving_problems(&m);
    match problems.first() {
        None => Ok(m),
        Some(first) => Err(EngineError::ManifestRejected {
            code: first.code.clone(),
            summary: problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; "),
            problems: serde_json::json!({ "errors": problems }),
        }),
    }
}

pub fn count_tokens(text: &str) -> u32 {
    crate::tokens::count(text) as u32
}

pub fn validate_manifest(json: &str, options: &str) -> String {
    let opts: ValidateOptions = match parse_or_default("validate options", options) {
        Ok(o) => o,
        Err(e) => {
            return to_json(&manifest::Report {
                ok: false,
                token_count: 0,
                token_count_at_least: false,
                token_cap: manifest::MANIFEST_TOKEN_CAP,
                entry_tokens: vec![],
                errors: vec![manifest::Problem { code: e.code().into(), entry: None, field: None, message: e.to_string() }],
                warnings: vec![],
                approvals_needed: vec![],
                manifest: None,
            })
        }
    };
    to_json(&manifest::validate(json, &opts))
}

pub fn render_stub(manifest: &str, profile: Option<&str>, facts: &dyn Facts) -> Result<String, EngineError> {
    let m = load_manifest(manifest)?;
    Ok(to_json(&crate::stub::render(&m, profile, facts)?))
}

/// What a `rank`/`recall` call ranks: an agent's manifest, or a knowledge pack opened
/// from its precomputed index (hosts send a [`crate::knowledge::PackDocument`] in place
/// of the manifest, its files as `path:` facts).
enum Input {
    Manifest(Manifest),
    Pack(Box<crate::knowledge::Opened>),
}

/// `intent`: what a pack is opened to rank (its split index fetches only what that reaches).
fn input(manifest: &str, facts: &dyn Facts, intent: &str) -> Result<Input, EngineError> {
    if is_pack(manifest) {
        if let Some(opened) = crate::knowledge::open_cached(manifest, facts, Some(intent)) {
            return Ok(Input::Pack(Box::new(opened)));
        }
    }
    match crate::knowledge::PackDocument::detect(manifest) {
        Some(doc) => Ok(Input::Pack(Box::new(crate::knowledge::open(&doc.knowledge_pack, facts, Some(intent))?))),
        None => Ok(Input::Manifest(load_manifest(manifest)?)),
    }
}

/// Whether a document is a knowledge pack's as hosts send it (the cheap test before
/// parsing it): `knowledge_pack` is its first key. Only the start is read, however large
/// an agent's manifest; a pack document written otherwise is still recognised by
/// [`crate::knowledge::PackDocument::detect`], without the fast path.
fn is_pack(document: &str) -> bool {
    document.trim_start().strip_prefix('{').is_some_and(|rest| rest.trim_start().starts_with("\"knowledge_pack\""))
}

/// Run `f` over the corpus of an [`Input`].
fn with_corpus<T>(input: Input, facts: &dyn Facts, f: impl FnOnce(&crate::recall::Corpus<'_>) -> Result<T, EngineError>) -> Result<T, EngineError> {
    match input {
        Input::Manifest(m) => f(&crate::recall::Corpus::load(&m, facts)?),
        Input::Pack(opened) => {
            let crate::knowledge::Opened { manifest, ranker, tokens, table } = *opened;
            let corpus = crate::recall::Corpus::from_index(&manifest, ranker, tokens, facts, table)
                .ok_or_else(|| EngineError::BackendUnavailable("a knowledge pack index does not match its units".into()))?;
            f(&corpus)
        }
    }
}

/// `recall_instruction` over an agent's manifest or a knowledge pack document.
pub fn recall(manifest: &str, request: &str, context: &str, facts: &dyn Facts, audit: &dyn AuditSink) -> Result<String, EngineError> {
    let req: RecallRequest = parse("recall request", request)?;
    let ctx: RecallContext = parse_or_default("recall context", context)?;
    crate::recall::check_request(&req)?;
    let run = |c: &crate::recall::Corpus<'_>| Ok(to_json(&crate::recall::recall_corpus(c, facts, audit, &req, &ctx)?));
    // The corpus the host names is prepared: its manifest comes with it, unparsed. A host
    // that sends no manifest (an empty string) vouches for its corpus key alone, and is
    // told to send the manifest when nothing is prepared under it.
    let key = if is_pack(manifest) { None } else { crate::recall::prepared_key(ctx.corpus_key.as_deref()) };
    if let Some(key) = key.as_deref() {
        if let Some((m, entries, p)) = crate::recall::cached_prepared(facts, key, Some(req.intent.trim()), manifest) {
            if let Some(c) = crate::recall::Corpus::from_prepared(&m, entries, p, facts) {
                return run(&c);
            }
        }
    }
    if manifest.is_empty() {
        return Err(EngineError::CorpusNotPrepared);
    }
    let input = input(manifest, facts, req.intent.trim())?;
    match input {
        Input::Manifest(m) => run(&crate::recall::Corpus::open(&m, facts, key.as_deref().map(|k| (k, crate::recall::Source::of(manifest))))?),
        pack => with_corpus(pack, facts, run),
    }
}

/// One ranked unit in `rank` output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankedUnit {
    pub name: String,
    pub score: f64,
    pub lexical: f64,
    pub semantic: f64,
    pub graph: f64,
    /// The surface signal, in a corpus large enough to have one (left out when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub surface: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankOutput {
    pub ranked: Vec<RankedUnit>,
    /// Units whose content could not be read, so were not ranked.
    pub unavailable: Vec<String>,
}

/// Every unit of an agent's manifest or a knowledge pack document, ranked for `intent`.
pub fn rank(manifest: &str, intent: &str, wake_reason: Option<&str>, facts: &dyn Facts) -> Result<String, EngineError> {
    if intent.trim().is_empty() {
        return Err(EngineError::IntentRequired);
    }
    with_corpus(input(manifest, facts, intent)?, facts, |corpus| {
        let ranked = corpus
            .rank(intent, wake_reason, &Weights::default(), &[])
            .into_iter()
            .map(|s| RankedUnit { name: s.name, score: s.score, lexical: crate::recall::round6(s.lexical), semantic: crate::recall::round6(s.semantic), graph: crate::recall::round6(s.graph), surface: crate::recall::round6(s.surface) })
            .collect();
        let unavailable = corpus.unavailable();
        Ok(to_json(&RankOutput { ranked, unavailable }))
    })
}

pub fn preload(manifest: &str, wake_reason: &str, stub_tokens: u32, context: &str, facts: &dyn Facts, audit: &dyn AuditSink) -> Result<String, EngineError> {
    let m = load_manifest(manifest)?;
    if wake_reason.trim().is_empty() {
        return Err(EngineError::InvalidRequest("a verified wake reason is required for preloads (§21.1.5)".into()));
    }
    let ctx: RecallContext = parse_or_default("preload context", context)?;
    Ok(to_json(&crate::preload::preload_audited(&m, facts, audit, wake_reason, stub_tokens, &ctx)?))
}

/// The engine's identity: crate version, ranker version (the §21.8.3 "embedding model
/// version"), stub schema version and WIT package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Info {
    pub engine: String,
    pub ranker_version: String,
    pub stub_version: u32,
    pub wit: String,
}

pub fn info() -> String {
    to_json(&Info {
        engine: env!("CARGO_PKG_VERSION").to_string(),
        ranker_version: crate::rank::RANKER_VERSION.to_string(),
        stub_version: crate::stub::STUB_VERSION,
        wit: "lid:engine@0.1.0".to_string(),
    })
}

pub fn coverage(manifest: &str, options: &str, facts: &dyn Facts) -> Result<String, EngineError> {
    let m = load_manifest(manifest)?;
    let opts: crate::coverage::CoverageOptions = parse_or_default("coverage options", options)?;
    Ok(to_json(&crate::coverage::run(&m, facts, &opts)?))
}

pub fn migrate(markdown: &str, options: &str) -> Result<String, EngineError> {
    let opts: crate::migrate::MigrateOptions = parse("migrate options", options)?;
    Ok(to_json(&crate::migrate::migrate(markdown, &opts)?))
}

/// Retrieval-quality report over ranked probes (§21.6.4 metrics, offline): hit@1/3/10,
/// MRR, none-probe AUC, per agent, plus a plain-text table under `"table"`, and every
/// positive probe missed at 1 or 3 under `"misses"` (one line each under `"misses_table"`).
pub fn eval_report(results: &str) -> Result<String, EngineError> {
    let results: Vec<crate::eval::ProbeResult> = parse("probe results", results)?;
    let report = crate::eval::evaluate(&results);
    // Overall metrics at the top level (`probes`, `hit_at_1`, …), then the breakdowns.
    let mut value = json_value(&report.overall);
    if let Some(obj) = value.as_object_mut() {
        obj.insert("per_agent".into(), json_value(&report.per_agent));
        obj.insert("misses_at_3".into(), json_value(&report.misses_at_3));
        obj.insert("misses".into(), json_value(&report.misses));
        obj.insert("table".into(), serde_json::Value::String(crate::eval::format_table(&report)));
        obj.insert("misses_table".into(), serde_json::Value::String(crate::eval::format_misses(&report)));
    }
    Ok(value.to_string())
}

/// A plain data type as a JSON value (cannot fail for the types used here).
fn json_value<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

pub fn audit_metrics(records: &str, k: u32) -> Result<String, EngineError> {
    let recs: Vec<crate::audit::AuditRecord> = parse("audit records", records)?;
    Ok(to_json(&crate::audit::metrics(&recs, k.max(1) as usize)))
}

/// Check a §21.5.2 audit submission body; the normalised submission as JSON.
pub fn check_audit_submission(body: &str) -> Result<String, EngineError> {
    Ok(to_json(&crate::audit::parse_submission(body)?))
}

/// A handoff message composed into Session Markdown:
/// `{"handoff": {normalised}, "session_markdown": "..."}`.
pub fn compose_handoff(handoff: &str) -> Result<String, EngineError> {
    let h = crate::handoff::parse_handoff(handoff).map_err(EngineError::Handoff)?;
    let session_markdown = crate::handoff::render_session(&h);
    Ok(to_json(&serde_json::json!({ "handoff": h, "session_markdown": session_markdown })))
}

/// A Session document read back into its handoff message (normalised JSON).
pub fn session_to_handoff(markdown: &str) -> Result<String, EngineError> {
    Ok(to_json(&crate::handoff::parse_session(markdown).map_err(EngineError::Handoff)?))
}

/// The composed boot context (`crate::context`): `{"bundle": {..}, "markdown": "..",
/// "audit_token": ".."}` (the preloads' audit record; empty when none was stored).
/// `context` is as for `recall`; the task-type preloads are audited through `audit`.
pub fn compose_context(manifest: &str, request: &str, context: &str, facts: &dyn Facts, audit: &dyn AuditSink) -> Result<String, EngineError> {
    let m = load_manifest(manifest)?;
    let req: crate::context::ContextRequest = parse_or_default("boot context request", request)?;
    let ctx: RecallContext = parse_or_default("boot context host context", context)?;
    let bundle = crate::context::compose(&m, facts, audit, &req, &ctx)?;
    let markdown = crate::context::render_markdown(&bundle);
    Ok(to_json(&serde_json::json!({ "bundle": bundle, "markdown": markdown, "audit_token": bundle.audit_token })))
}

/// Export a manifest and its units as a SKILL.md tree, one AGENTS.md or Cursor rules
/// ([`crate::export`]): `{"format","files":[{"path","content"}],"unavailable"}`.
pub fn export(manifest: &str, format: &str, facts: &dyn Facts) -> Result<String, EngineError> {
    Ok(to_json(&crate::export::export(&load_manifest(manifest)?, facts, format)?))
}

/// Knowledge catalog and activation ([`crate::resolve`], runtime standard steps 2–3):
/// `request` is `{"packs": [{"path","knowledge_md"}], "activate": {"query","explicit",
/// "disabled","implicit"}?}` in discovery order; returns `{"catalog": {"packs",
/// "diagnostics"}, "activated": {"packs","diagnostics"} | null}`.
pub fn knowledge_catalog(request: &str) -> Result<String, EngineError> {
    #[derive(Deserialize)]
    struct Req {
        packs: Vec<crate::resolve::Found>,
        #[serde(default)]
        activate: Option<crate::resolve::Activate>,
    }
    let r: Req = parse("knowledge catalog request", request)?;
    let catalog = crate::resolve::catalog(&r.packs);
    let activated = r.activate.as_ref().map(|a| crate::resolve::activate(&catalog, a));
    Ok(to_json(&serde_json::json!({ "catalog": catalog, "activated": activated })))
}

/// Knowledge selection ([`crate::resolve::select`], steps 4–6): `request` is
/// `{"query","budget","packs": [{"path","activation","knowledge_md","files": {path: text}}]}`;
/// returns `{"items","fenced","record"}`.
pub fn knowledge_select(request: &str) -> Result<String, EngineError> {
    let r: crate::resolve::Select = parse("knowledge selection request", request)?;
    Ok(to_json(&crate::resolve::select(&r)?))
}

/// Admission lint of unit texts (`[{"name","content","interpret_as"}]`): a
/// [`crate::lint::Report`] as JSON.
pub fn lint_units(units: &str) -> Result<String, EngineError> {
    let units: Vec<crate::lint::UnitText> = parse("units to lint", units)?;
    Ok(to_json(&crate::lint::lint(&units)))
}

/// How `version` orders against `than` (§21.4.1–§21.4.2), for a host deciding whether a
/// write comes after a unit's latest version: an error when `version` is not a concrete
/// version (empty, a floating alias such as `latest`, no digit), else -1, 0 (the same
/// version, however spelled: `2`, `v2`, `v2.0`) or 1 by precedence; 1 without `than`.
pub fn version_order(version: &str, than: Option<&str>) -> Result<i8, EngineError> {
    crate::uri::check_version(version).map_err(|e| EngineError::InvalidRequest(format!("`version` {version:?}: {e}")))?;
    Ok(match than.map(|t| crate::uri::version_precedence(version, t)) {
        Some(std::cmp::Ordering::Less) => -1,
        Some(std::cmp::Ordering::Equal) => 0,
        Some(std::cmp::Ordering::Greater) | None => 1,
    })
}

/// A knowledge pack to store (`PUT /v1/agents/{id}/knowledge/{pack}`): the pack id,
/// its `KNOWLEDGE.md` and its context files by key.
#[derive(Deserialize)]
struct PackUpload {
    id: String,
    knowledge_md: String,
    #[serde(default)]
    units: std::collections::BTreeMap<String, String>,
}

/// One context file of a read pack upload.
#[derive(Serialize)]
struct PackFile {
    /// The key it was sent under.
    key: String,
    /// Its pack-relative path (`units/<name>.md` for a bare name).
    path: String,
    /// Its unit name and title (the ranker's description).
    name: String,
    title: String,
    tokens: u32,
    sha256: String,
}

/// The pack-relative path a unit key names: a key with a `/` is a path as is; a bare
/// name is `units/<name>.md`.
fn pack_path(key: &str) -> String {
    if key.contains('/') {
        key.to_string()
    } else if key.ends_with(".md") {
        format!("units/{key}")
    } else {
        format!("units/{key}.md")
    }
}

/// Read a knowledge-pack upload (`{"id","knowledge_md","units":{key: text}}`) as hosts
/// store it (Agent Knowledge runtime, Steps 1–2, [`crate::knowledge`]): the compact
/// `catalog` entry, the full front matter (`meta`), every context file (`files`: key,
/// path, unit name, title, tokens, sha256, by path), layout `collisions` and the pack
/// `digest` ([`crate::content::pack_digest`]). Front-matter problems are 422 with the
/// knowledge error's code; `invalid_request`: a key that names no context file, a key
/// holding a character the admission lint refuses or a line break (the path is served in
/// the fact URI and the `<knowledge_pack path="…">` fence), and files that give one unit
/// name where no layout comes first ([`crate::knowledge::NameClash`]: all but one would be
/// stored and never served). A `units/` file over a `compiled/` or `documents/` one of
/// the same name is the documented precedence: listed in `collisions`.
pub fn read_knowledge_pack(upload: &str) -> Result<String, EngineError> {
    let up: PackUpload = parse("knowledge pack upload", upload)?;
    let hidden: Vec<String> = up
        .units
        .keys()
        .filter_map(|key| {
            crate::knowledge::line_hidden_character(key).map(|(at, c, what)| format!("unit key {key:?} holds U+{:04X}, {what}, at character {at}", c as u32))
        })
        .collect();
    if !hidden.is_empty() {
        return Err(EngineError::InvalidRequest(format!(
            "{}: a pack file's path is served to agents as it is (in its fact URI and its <knowledge_pack path=\"…\"> fence), so it may not hold characters a reviewer cannot see; rename the file",
            hidden.join("; ")
        )));
    }
    let mut by_path: std::collections::BTreeMap<String, (&str, &str)> = std::collections::BTreeMap::new();
    let mut bad = Vec::new();
    for (key, text) in &up.units {
        let path = pack_path(key);
        if crate::knowledge::unit_name(&path).is_none() {
            bad.push(key.clone());
        } else if by_path.insert(path.clone(), (key, text)).is_some() {
            return Err(EngineError::InvalidRequest(format!("two unit keys name the same file {path:?}")));
        }
    }
    if !bad.is_empty() {
        return Err(EngineError::InvalidRequest(format!(
            "unit keys {bad:?} name no context file: use a bare unit name (stored as units/<name>.md) or a path units/<name>.md, compiled/…/<part>.md or documents/…/<part>.md"
        )));
    }
    let spec = crate::knowledge::PackSpec { id: up.id.clone(), knowledge_md: up.knowledge_md.clone(), files: by_path.keys().cloned().collect(), digest: None };
    let pack = crate::knowledge::read_pack(&spec, |name, path| by_path.get(path).map(|(_, text)| crate::knowledge::unit_title(name, text))).map_err(EngineError::Knowledge)?;
    if !pack.clashes.is_empty() {
        // (each file with the key it was sent under, where that is not its path: a bare name)
        let show = |p: &str| match by_path.get(p) {
            Some((key, _)) if *key != p => format!("{p} (unit key {key:?})"),
            _ => p.to_string(),
        };
        let each: Vec<String> = pack.clashes.iter().map(|c| c.describe(show)).collect();
        return Err(EngineError::InvalidRequest(format!("{}; the others would be stored and never served: {}; nothing was stored", each.join("; "), crate::knowledge::NAME_CLASH_FIX)));
    }
    let names: std::collections::BTreeMap<&str, (&str, &str)> =
        pack.manifest.entries.iter().filter_map(|e| e.path.as_deref().map(|p| (p, (e.name.as_str(), e.description.as_str())))).collect();
    let files: Vec<PackFile> = by_path
        .iter()
        .map(|(path, (key, text))| {
            let (name, title) = names.get(path.as_str()).copied().unwrap_or_default();
            PackFile {
                key: key.to_string(),
                path: path.clone(),
                name: name.to_string(),
                title: title.to_string(),
                tokens: count_tokens(text),
                sha256: crate::store::Fact { content: text.to_string(), ..Default::default() }.content_sha256(),
            }
        })
        .collect();
    let contents: Vec<(String, String)> = by_path.iter().map(|(p, (_, t))| (p.clone(), t.to_string())).collect();
    // The compact catalog entry (runtime standard, Step 2): the required fields, `trust`
    // and `version` (null when absent), the optional catalog fields present, the units.
    let m = &pack.meta;
    let mut catalog = serde_json::json!({
        "name": m.name, "description": m.description, "type": m.kind, "status": m.status,
        "trust": m.fields.get("trust"), "version": m.fields.get("version"), "units": pack.manifest.entries.len(),
    });
    for f in ["profile", "runtime.mode", "language", "grounding", "scope", "compatibility"] {
        if let Some(v) = m.fields.get(f) {
            catalog[f] = serde_json::json!(v);
        }
    }
    Ok(to_json(&serde_json::json!({
        "id": up.id,
        "catalog": catalog,
        "meta": pack.meta,
        "files": files,
        "collisions": pack.collisions,
        "digest": crate::content::pack_digest(&up.knowledge_md, &contents),
    })))
}

/// Warm lazily initialised state (for snapshots and benchmarks).
pub fn warm() {
    crate::tokens::warm();
    let _ = crate::tokens::count("warm up the tokenizer");
}

#[cfg(test)]
mod tests {
    use crate::store::{Fact, MemoryFacts, NoAudit};

    /// A wrong-typed field in well-formed JSON is `invalid_request` naming the field in
    /// JSON terms; only input that is not JSON is `invalid_json` (with its position).
    #[test]
    fn wrong_typed_fields_are_invalid_requests_and_broken_json_is_invalid_json() {
        let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1", "entries": []}).to_string();
        let facts = MemoryFacts::new();
        let e = super::recall(&m, r#"{"intent":"x","max_chunks":"3"}"#, "", &facts, &NoAudit).unwrap_err();
        assert_eq!((e.code(), e.status()), ("invalid_request", 400));
        assert_eq!(e.to_string(), "invalid request: `max_chunks` in the recall request must be a whole number from 1 to 50, not a string");
        let e = super::recall(&m, r#"{"intent":"x","max_chunks":3"#, "", &facts, &NoAudit).unwrap_err();
        assert_eq!((e.code(), e.status()), ("invalid_json", 400));
        assert!(e.to_string().contains("line 1 column"), "{e}");
        let report: serde_json::Value = serde_json::from_str(&super::validate_manifest(&m, r#"{"approvals":"all"}"#)).unwrap();
        assert_eq!(report["errors"][0]["code"], "invalid_request", "{report}");
        assert_eq!(report["errors"][0]["message"], "invalid request: `approvals` in the validate options must be an object, not a string");
        let report: serde_json::Value = serde_json::from_str(&super::validate_manifest(&m, "{approvals}")).unwrap();
        assert_eq!(report["errors"][0]["code"], "invalid_json", "{report}");
    }

    const PACK_KMD: &str = "---\nname: zh-ops\ndescription: Payments API facts\ntype: reference\nstatus: ready\n---\n# Guide\n";

    fn read_pack(kmd: &str, units: serde_json::Value) -> Result<serde_json::Value, crate::error::EngineError> {
        super::read_knowledge_pack(&serde_json::json!({"id": "zh-ops", "knowledge_md": kmd, "units": units}).to_string()).map(|s| serde_json::from_str(&s).unwrap())
    }

    /// Audit finding 01 (repro `01-pack-unit-names-collapse.py`): files named in another
    /// script are one unit each (runtime standard, Step 4: every context file can be
    /// selected); files that still give one name (`Deploys`, `deploys`) are refused, naming
    /// the files and the keys, where they were stored and all but one never served. A
    /// `units/` file over a `documents/` one of its name is the documented precedence.
    #[test]
    fn a_pack_upload_names_units_in_any_script_and_refuses_files_that_give_one_name() {
        let units = serde_json::json!({
            "units/部署.md": "# Deploy windows\n\nThe payments API is deployed Monday to Thursday, 09:00-16:00 UTC.\n",
            "units/限额.md": "# Rate limits\n\nThe payments API allows 600 requests per minute per merchant.\n",
            "units/回滚.md": "# Rollback\n\nRollbacks of the payments API take about 4 minutes.\n",
        });
        let v = read_pack(PACK_KMD, units.clone()).unwrap();
        assert_eq!(v["catalog"]["units"], 3);
        let names: Vec<&str> = v["files"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["回滚", "部署", "限额"]);
        assert_eq!(v["collisions"], serde_json::json!([]));
        let e = read_pack(PACK_KMD, serde_json::json!({"Deploys": "# A\n", "deploys": "# B\n", "units/限额.md": "# C\n"})).unwrap_err();
        assert_eq!((e.code(), e.status()), ("invalid_request", 400));
        let m = e.to_string();
        assert!(m.contains("files units/Deploys.md (unit key \"Deploys\"), units/deploys.md (unit key \"deploys\") give one unit name \"deploys\", so only units/Deploys.md (unit key \"Deploys\") is served"), "{m}");
        assert!(m.contains("rename the files so their names differ; nothing was stored"), "{m}");
        let e = read_pack(PACK_KMD, serde_json::json!({"compiled/a/b.md": "x", "compiled/a-b.md": "y"})).unwrap_err();
        assert!(e.to_string().contains("files compiled/a-b.md, compiled/a/b.md give one unit name \"a-b\""), "{e}");
        // the documented precedence is no clash: the units/ file is served, the loser listed
        let v = read_pack(PACK_KMD, serde_json::json!({"deploys": "# A\n", "documents/Deploys.md": "# B\n"})).unwrap();
        assert_eq!((v["catalog"]["units"].as_u64(), v["collisions"].clone()), (Some(1), serde_json::json!(["deploys"])));
    }

    /// Audit finding 09 (repro `09-pack-path-hidden-chars.py`): a unit key holding a bidi,
    /// zero-width or control character (it becomes the fact URI and the fence's `path`) is
    /// refused, naming the key and the character; a key in another script is not.
    #[test]
    fn a_pack_upload_refuses_keys_holding_hidden_characters() {
        for (key, cp) in [("units/dep\u{202e}loys.md", "U+202E"), ("units/dep\u{200b}loys.md", "U+200B"), ("units/dep\u{1}loys.md", "U+0001"), ("dep\nloys", "U+000A"), ("dep\u{2028}loys", "U+2028")] {
            let e = read_pack(PACK_KMD, serde_json::json!({ key: "# Deploy windows\n\nDeployed Monday to Thursday.\n" })).unwrap_err();
            assert_eq!((e.code(), e.status()), ("invalid_request", 400), "{key:?}");
            let m = e.to_string();
            assert!(m.contains(&format!("unit key {key:?} holds {cp}, ")) && m.contains("at character "), "{m}");
            assert!(!m.contains(['\u{202e}', '\u{200b}', '\u{1}', '\n', '\u{2028}']), "the message shows the character escaped: {m:?}");
        }
        assert!(read_pack(PACK_KMD, serde_json::json!({"units/部署 窗口.md": "x", "Überblick": "y"})).is_ok());
    }

    /// Audit finding 07 (repro `07-lint-lone-cr-lines.py`): a `KNOWLEDGE.md` whose lines end
    /// in a lone CR is read as with LF or CRLF.
    #[test]
    fn a_pack_upload_reads_a_knowledge_md_with_lone_cr_lines() {
        let units = serde_json::json!({"deploys": "# Deploys\n\nMonday to Thursday.\n"});
        let lf = read_pack(PACK_KMD, units.clone()).unwrap();
        for eol in ["\r\n", "\r"] {
            let v = read_pack(&PACK_KMD.replace('\n', eol), units.clone()).unwrap();
            assert_eq!(v["catalog"], lf["catalog"], "{eol:?}");
        }
    }

    /// The stub's tool schema has `additionalProperties: false` (§21.3.1): a field the
    /// request does not have is refused, naming it and the fields there are, instead of
    /// being dropped while its default is served. `heartbeat_id` is the host's (§21.5.1).
    #[test]
    fn a_recall_request_with_a_field_it_does_not_have_is_refused() {
        let m = serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1", "entries": []}).to_string();
        let facts = MemoryFacts::new();
        let e = super::recall(&m, r#"{"intent":"x","max_chunk":1}"#, "", &facts, &NoAudit).unwrap_err();
        assert_eq!((e.code(), e.status()), ("invalid_request", 400));
        assert!(e.to_string().contains("unknown field \"max_chunk\": expected one of \"intent\", \"max_chunks\""), "{e}");
        let ok = super::recall(&m, r#"{"intent":"x","max_chunks":1,"heartbeat_id":"run-1","wake_reason":"manual"}"#, "", &facts, &NoAudit).unwrap();
        assert!(ok.contains("\"chunks\""), "{ok}");
    }

    /// §21.2.2: a unit name is unique. A manifest that repeats one is refused by every
    /// call that serves it, naming the entry and the field, instead of recalling and
    /// preloading the unit twice.
    #[test]
    fn a_manifest_that_names_a_unit_twice_is_refused_not_served_twice() {
        let e = serde_json::json!({"name": "deploy-rules", "description": "Deploy rules.", "required_by_task_types": ["issue_assigned"], "guarantee_load": false,
            "load_triggers": {"intents": ["deploy to production"], "keywords": [], "task_types": []}, "fact_uri": "instruction:acme/eng/deploy-rules/v1", "path": null});
        let mut other = e.clone();
        other["name"] = "other-rules".into();
        other["fact_uri"] = "instruction:acme/eng/other-rules/v1".into();
        let manifest = |entries: Vec<serde_json::Value>| serde_json::json!({"agent_id": "eng", "deployment": "acme", "agent_role": "Engineer", "manifest_version": "v1", "entries": entries}).to_string();
        let mut facts = MemoryFacts::new();
        for name in ["deploy-rules", "other-rules"] {
            facts.insert(Fact { uri: format!("instruction:acme/eng/{name}/v1"), content: "Deploy only after review.".into(), version: "v1".into(), ..Fact::default() });
        }
        let twice = manifest(vec![e.clone(), other.clone(), e.clone()]);
        let req = r#"{"intent": "deploy to production", "max_chunks": 10}"#;
        for err in [super::recall(&twice, req, "", &facts, &NoAudit).unwrap_err(), super::preload(&twice, "issue_assigned", 0, "", &facts, &NoAudit).unwrap_err()] {
            assert_eq!(err.code(), "manifest_entry_invalid");
            assert_eq!(err.status(), 400);
            let body = err.body();
            assert_eq!(body.details["errors"][0]["entry"], "deploy-rules", "{body:?}");
            assert_eq!(body.details["errors"][0]["field"], "name");
        }
        // A floating version or an empty agent cannot name the manifest's URI.
        let mut floating: serde_json::Value = serde_json::from_str(&manifest(vec![e.clone(), other.clone()])).unwrap();
        floating["manifest_version"] = "latest".into();
        floating["agent_id"] = "".into();
        let err = super::render_stub(&floating.to_string(), None, &facts).unwrap_err();
        assert_eq!(err.code(), "manifest_invalid");
        let body = err.body();
        let fields: Vec<&str> = body.details["errors"].as_array().unwrap().iter().filter_map(|p| p["field"].as_str()).collect();
        assert_eq!(fields, ["agent_id", "manifest_version"]);
        // The same entries, each once, are served.
        let once = manifest(vec![e, other]);
        let v: serde_json::Value = serde_json::from_str(&super::recall(&once, req, "", &facts, &NoAudit).unwrap()).unwrap();
        assert_eq!(v["chunks"].as_array().map(Vec::len), Some(2));
        assert!(super::preload(&once, "issue_assigned", 0, "", &facts, &NoAudit).is_ok());
    }
}
