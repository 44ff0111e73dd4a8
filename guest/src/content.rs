//! The recall `content` channel (Spec-13, `../shared/spec/capability-based-instructions.txt`,
//! "Recall-time enforcement": agent runtimes receive content and instructions through
//! separate structures) and uploaded knowledge packs served in it (Agent Knowledge
//! runtime, `agent-knowledge-runtime.txt`, Steps 3–5).
//!
//! Every `recall_instruction` response (§21.3.2) carries, beside the instruction
//! `chunks`, a `content` list: data relevant to the intent, each item fenced as
//! `<knowledge_pack name=… status=… trust=… mode="data">` with the fixed data preamble
//! ([`crate::context::fence`]). Candidates are the host's [`ContentSources`] for the agent:
//! - the agent's **content-typed facts** (`interpret_as: content`, the latest version of
//!   each listed unit; a unit whose latest version is an instruction is not content);
//! - the agent's **uploaded knowledge packs**: each pack's `KNOWLEDGE.md` and context
//!   files are content facts under the pack's `prefix`, ranked through the pack's
//!   precomputed index ([`crate::knowledge::open`]).
//!
//! Each source is ranked against the intent with the recall ranker; candidates at or
//! above `content_min_score` are taken best first (ties by pack, then name) while they
//! fit `max_content` (default 3) and `content_budget` (tokens of the fenced text, default
//! 1000; a budget of its own: content never takes instruction budget). A candidate that
//! does not fit takes its slot and is named in `content_omitted` (`content_budget`), as
//! §21.3.3 does for instructions. Persona packs (`runtime.mode: persona`) are fenced as
//! `mode="persona"` and placed before data items (runtime standard, Step 5).
//!
//! Separation is structural: the instruction assembly resolves only instruction-typed
//! facts ([`crate::recall::resolve_unit`]) and this channel only content-typed ones, so no
//! fact can be served in both. Quarantined facts (Spec-13, "Federation boundary") are
//! served in neither. Packs whose status is not `ready` (`stale`, `disputed`,
//! `needs-review`, …) are never served: each is named once in `content_omitted` with
//! reason `not_ready` (runtime standard: never silently treated as ready).

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::manifest::{Entry, Manifest};
use crate::rank::{Scored, Weights};
use crate::recall::{Corpus, Resolved};
use crate::store::{Fact, Facts, InterpretAs, StoreError};

/// Default `max_content` of a recall request.
pub const DEFAULT_MAX_CONTENT: u32 = 3;
/// Default `content_budget` (cl100k tokens of the fenced items).
pub const DEFAULT_CONTENT_BUDGET: u32 = 1000;
/// Default `content_min_score`: calibrated ranker scores below this are unrelated to the
/// intent (the ranker scores an unrelated intent below 0.2).
pub const DEFAULT_CONTENT_MIN_SCORE: f64 = 0.2;
/// Key prefix under which hosts store an agent's [`ContentSources`] in the facts bucket
/// (`lid-content:{agent_id}`, JSON).
pub const SOURCES_PREFIX: &str = "lid-content:";

/// What may be served in an agent's content channel, as the host lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentSources {
    /// Version-less unit keys (`instruction:{deployment}/{agent}/{unit}`) of the agent's
    /// content-typed units.
    #[serde(default)]
    pub facts: Vec<String>,
    /// The agent's current uploaded knowledge packs.
    #[serde(default)]
    pub packs: Vec<StoredPack>,
}

/// One uploaded knowledge pack: its files are content facts at `{prefix}{path}`, its
/// `KNOWLEDGE.md` at `{prefix}KNOWLEDGE.md`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredPack {
    /// The pack id (its route segment).
    pub id: String,
    /// The upload version (`v1`, `v2`, …).
    pub version: String,
    pub prefix: String,
    /// Relative paths of the pack's context files, sorted.
    pub files: Vec<String>,
    /// The pack digest ([`pack_digest`]): finds its precomputed index without reading units.
    #[serde(default)]
    pub digest: Option<String>,
}

/// One item of the content channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentItem {
    /// The unit name (a content fact's unit, or a pack unit's name).
    pub name: String,
    /// The fact served.
    pub uri: String,
    /// The pack id, `null` for a content fact.
    pub pack: Option<String>,
    /// The pack-relative path of a pack unit, `null` for a content fact.
    pub path: Option<String>,
    pub version: String,
    /// SHA-256 of the raw content (before fencing).
    pub sha256: String,
    /// cl100k tokens of `text` (what the content budget counts).
    pub tokens: u32,
    pub score: f64,
    /// The pack's status (always `ready`: nothing else is served); `ready` for facts.
    pub status: String,
    /// The pack's `trust`, or a fact's `source_trust`; empty when unknown.
    pub trust: String,
    /// `data` or `persona`.
    pub mode: String,
    /// The fenced text ([`crate::context::fence`]).
    pub text: String,
}

/// A content candidate left out, and why (`content_budget`, `not_ready`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentOmitted {
    pub name: String,
    pub pack: Option<String>,
    pub tokens: u32,
    pub reason: String,
}

/// What the channel serves for one intent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    pub items: Vec<ContentItem>,
    pub omitted: Vec<ContentOmitted>,
    pub warnings: Vec<String>,
}

/// The request fields of the channel.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_content: usize,
    pub budget: u64,
    pub min_score: f64,
}

/// [`content_sha256`] of an empty channel: SHA-256 of `[]`.
pub const EMPTY_CONTENT_SHA256: &str = "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945";

/// The digest of the content channel: SHA-256 of the JSON array of
/// `[uri, version, sha256, mode]` of every item, in order.
pub fn content_sha256(items: &[ContentItem]) -> String {
    if items.is_empty() {
        // (most recalls serve no content: the digest of `[]`, checked in the tests)
        return EMPTY_CONTENT_SHA256.to_string();
    }
    let rows: Vec<[&str; 4]> = items.iter().map(|c| [c.uri.as_str(), c.version.as_str(), c.sha256.as_str(), c.mode.as_str()]).collect();
    crate::digest::sha256_hex(serde_json::to_string(&rows).unwrap_or_default().as_bytes())
}

/// The digest of a pack's files, as hosts key its precomputed index: SHA-256 over the
/// SHA-256 of `KNOWLEDGE.md`, then per file (sorted by path) the path, a 0 byte and the
/// lowercase hex SHA-256 of its content. (`lid`'s pack directories use the same.)
pub fn pack_digest(knowledge_md: &str, files: &[(String, String)]) -> String {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut h = Sha256::new();
    h.update(Sha256::digest(knowledge_md.as_bytes()));
    for (path, content) in sorted {
        let sha = crate::digest::sha256_hex(content.as_bytes());
        h.update(path.as_bytes());
        h.update([0]);
        h.update(sha.as_bytes());
    }
    crate::digest::hex(&h.finalize())
}

/// A fact the content channel may serve: content-typed and not quarantined.
fn servable(f: &Fact) -> bool {
    f.interpret_as == InterpretAs::Content && !f.quarantined
}

/// A pack's files seen through its prefix: `path:{p}` reads `{prefix}{p}`, and only
/// servable facts are visible (an instruction-typed fact under a pack prefix is not
/// content and is never served here).
struct PackFacts<'a> {
    inner: &'a dyn Facts,
    prefix: &'a str,
}

impl Facts for PackFacts<'_> {
    fn get(&self, uri: &str) -> Result<Option<Fact>, StoreError> {
        let Some(rel) = uri.strip_prefix("path:") else { return Ok(None) };
        Ok(self.inner.get(&format!("{}{rel}", self.prefix))?.filter(servable))
    }
    fn versions(&self, _unit_key: &str) -> Result<Vec<String>, StoreError> {
        Ok(vec![])
    }
    fn cached(&self, key: &str) -> Option<Vec<u8>> {
        self.inner.cached(key)
    }
    fn cache(&self, key: &str, blob: &[u8]) {
        self.inner.cache(key, blob)
    }
}

/// One ranked candidate before budgeting.
struct Candidate {
    score: f64,
    pack: Option<String>,
    path: Option<String>,
    name: String,
    fact: Fact,
    status: String,
    trust: String,
    mode: String,
}

impl Candidate {
    fn fence(&self) -> String {
        crate::context::fence(&crate::context::KnowledgeItem {
            layer: "agent".into(),
            pack: self.pack.clone().unwrap_or_else(|| self.name.clone()),
            path: self.path.clone().unwrap_or_default(),
            version: self.fact.version.clone(),
            status: self.status.clone(),
            trust: self.trust.clone(),
            grounding: String::new(),
            profile: String::new(),
            mode: self.mode.clone(),
            authored_at: self.fact.authored_at.clone(),
            uri: self.fact.uri.clone(),
            text: self.fact.content.clone(),
        })
    }
}

fn trust_of(f: &Fact) -> String {
    f.source_trust.filter(|t| t.is_finite()).map(|t| format!("{t}")).unwrap_or_default()
}

/// The bytes of a content fact ranked: its head. A content fact is data of any size (up
/// to a host's body limit), ranked on every recall that reaches the agent; ranked whole, a
/// fact of megabytes made every recall of the agent take hundreds of milliseconds, or
/// run out of time. What a fact is about is in its head, and a fact that long is never
/// served whole anyway (the channel's budget is 1,000 tokens by default).
pub const CONTENT_RANKED_BYTES: usize = 64 * 1024;

/// `text` cut to at most `max` bytes, at a character boundary.
fn head(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// Ranked candidates from the agent's content-typed facts.
fn fact_candidates(agent_id: &str, keys: &[String], facts: &dyn Facts, intent: &str, weights: &Weights, min_score: f64) -> Result<Vec<Candidate>, EngineError> {
    let mut keys: Vec<&String> = keys.iter().collect();
    keys.sort();
    keys.dedup();
    let mut entries = Vec::new();
    let mut units = Vec::new();
    // the facts cut for ranking, whole, by URI: served as they are
    let mut whole: std::collections::BTreeMap<String, Fact> = std::collections::BTreeMap::new();
    for key in keys {
        let versions = facts.versions(key)?;
        let Some(v) = crate::uri::latest(&versions) else { continue };
        let uri = format!("{key}/{v}");
        // Only the agent's own facts (§21.4.5), only servable ones.
        let Ok(u) = crate::uri::InstructionUri::parse(&uri) else { continue };
        if u.agent != agent_id {
            continue;
        }
        let Some(mut fact) = facts.get(&uri)?.filter(servable) else { continue };
        if fact.version.is_empty() {
            fact.version = u.version.clone();
        }
        entries.push(Entry { description: crate::knowledge::unit_title(&u.unit, head(&fact.content, CONTENT_RANKED_BYTES)), name: u.unit.clone(), fact_uri: Some(uri), ..Entry::default() });
        if fact.content.len() > CONTENT_RANKED_BYTES {
            let end = head(&fact.content, CONTENT_RANKED_BYTES).len();
            whole.insert(fact.uri.clone(), fact.clone());
            fact.content.truncate(end);
            (fact.tokens, fact.sha256) = (None, None);
        }
        units.push(Some(Resolved { fact, source: "content" }));
    }
    if entries.is_empty() {
        return Ok(vec![]);
    }
    let manifest = Manifest { agent_id: agent_id.to_string(), manifest_version: "content".into(), entries, ..Manifest::default() };
    let corpus = Corpus::from_resolved(&manifest, units, facts);
    Ok(collect(&corpus, &corpus.rank(intent, None, weights, &[]), min_score, |e, ranked| {
        let fact = whole.get(&ranked.uri).cloned().unwrap_or(ranked);
        Candidate { score: 0.0, pack: None, path: None, name: e.name.clone(), status: "ready".into(), trust: trust_of(&fact), mode: "data".into(), fact }
    }))
}

/// The scored units of a corpus at or above `min_score`, as candidates.
fn collect(corpus: &Corpus<'_>, ranked: &[Scored], min_score: f64, make: impl Fn(&Entry, Fact) -> Candidate) -> Vec<Candidate> {
    let mut out = Vec::new();
    for s in ranked {
        if s.score < min_score || s.score <= 0.0 {
            continue;
        }
        let (Some(r), Some(e)) = (corpus.unit(s.index), corpus.entry(s.index)) else { continue };
        if !servable(&r.fact) {
            continue;
        }
        let mut c = make(&e, r.fact.clone());
        c.score = s.score;
        out.push(c);
    }
    out
}

/// Ranked candidates from one uploaded pack (or why it is not served).
fn pack_candidates(p: &StoredPack, facts: &dyn Facts, intent: &str, weights: &Weights, min_score: f64, sel: &mut Selection) -> Result<Vec<Candidate>, EngineError> {
    let kmd_uri = format!("{}KNOWLEDGE.md", p.prefix);
    let Some(kmd) = facts.get(&kmd_uri)?.filter(servable) else {
        sel.warnings.push(format!("knowledge_pack_unavailable: pack {:?} has no readable KNOWLEDGE.md ({kmd_uri}); not served", p.id));
        return Ok(vec![]);
    };
    let meta = match crate::knowledge::parse_knowledge_md(&kmd.content) {
        Ok((meta, _)) => meta,
        Err(e) => {
            sel.warnings.push(format!("{}: pack {:?}: {e}; not served", e.code(), p.id));
            return Ok(vec![]);
        }
    };
    if meta.status != "ready" {
        sel.omitted.push(ContentOmitted { name: p.id.clone(), pack: Some(p.id.clone()), tokens: 0, reason: "not_ready".into() });
        sel.warnings.push(format!("knowledge_pack_not_ready: pack {:?} has status {:?}; it is not served until it is ready", p.id, meta.status));
        return Ok(vec![]);
    }
    let trust = meta.fields.get("trust").cloned().unwrap_or_default();
    let mode = if meta.fields.get("runtime.mode").map(String::as_str) == Some("persona") { "persona" } else { "data" };
    let view = PackFacts { inner: facts, prefix: &p.prefix };
    let spec = crate::knowledge::PackSpec { id: p.id.clone(), knowledge_md: kmd.content.clone(), files: p.files.clone(), digest: p.digest.clone() };
    let opened = match crate::knowledge::open(&spec, &view, Some(intent)) {
        Ok(o) => o,
        Err(EngineError::BackendUnavailable(e)) => return Err(EngineError::BackendUnavailable(e)),
        Err(e) => {
            sel.warnings.push(format!("knowledge_pack_unavailable: pack {:?}: {e}; not served", p.id));
            return Ok(vec![]);
        }
    };
    let crate::knowledge::Opened { manifest, ranker, tokens, table } = opened;
    let Some(corpus) = Corpus::from_index(&manifest, ranker, tokens, &view, table) else {
        sel.warnings.push(format!("knowledge_pack_unavailable: pack {:?}: its index does not match its units; not served", p.id));
        return Ok(vec![]);
    };
    Ok(collect(&corpus, &corpus.rank(intent, None, weights, &[]), min_score, |e, fact| Candidate {
        score: 0.0,
        pack: Some(p.id.clone()),
        path: e.path.clone(),
        name: e.name.clone(),
        status: meta.status.clone(),
        trust: trust.clone(),
        mode: mode.into(),
        fact,
    }))
}

/// Select the content channel of one recall (see the module docs).
pub fn select(agent_id: &str, facts: &dyn Facts, intent: &str, weights: &Weights, limits: Limits) -> Result<Selection, EngineError> {
    let mut sel = Selection::default();
    let Some(sources) = facts.content_sources(agent_id)? else { return Ok(sel) };
    let mut cands = fact_candidates(agent_id, &sources.facts, facts, intent, weights, limits.min_score)?;
    let mut packs: Vec<&StoredPack> = sources.packs.iter().collect();
    packs.sort_by(|a, b| a.id.cmp(&b.id));
    packs.dedup_by(|a, b| a.id == b.id);
    for p in packs {
        cands.extend(pack_candidates(p, facts, intent, weights, limits.min_score, &mut sel)?);
    }
    cands.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.pack.cmp(&b.pack)).then_with(|| a.name.cmp(&b.name)));
    let mut room = limits.budget;
    let mut slots = limits.max_content;
    for c in cands {
        if slots == 0 {
            break;
        }
        slots -= 1;
        // a fact whose own text is already over what is left cannot fit once fenced: its
        // known count is said (counting megabytes on every recall is what it would cost)
        if let Some(t) = c.fact.tokens.filter(|t| *t as u64 > room) {
            sel.omitted.push(ContentOmitted { name: c.name, pack: c.pack, tokens: t, reason: "content_budget".into() });
            continue;
        }
        let text = c.fence();
        let tokens = crate::tokens::count(&text) as u32;
        if tokens as u64 > room {
            sel.omitted.push(ContentOmitted { name: c.name, pack: c.pack, tokens, reason: "content_budget".into() });
            continue;
        }
        room -= tokens as u64;
        sel.items.push(ContentItem {
            sha256: c.fact.content_sha256(),
            uri: c.fact.uri.clone(),
            version: c.fact.version.clone(),
            name: c.name,
            pack: c.pack,
            path: c.path,
            tokens,
            score: c.score,
            status: c.status,
            trust: c.trust,
            mode: c.mode,
            text,
        });
    }
    // Persona before data (runtime standard, Step 5); otherwise best first.
    sel.items.sort_by_key(|i| i.mode != "persona");
    Ok(sel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryFacts;

    #[test]
    fn the_empty_channel_digest_is_the_digest_of_an_empty_list() {
        assert_eq!(EMPTY_CONTENT_SHA256, crate::digest::sha256_hex(b"[]"));
        assert_eq!(content_sha256(&[]), crate::digest::sha256_hex(serde_json::to_string(&Vec::<[&str; 4]>::new()).unwrap().as_bytes()));
    }

    const KMD: &str = "---\nname: acme-brief\ndescription: Acme product facts\ntype: reference\nstatus: ready\ntrust: high\n---\n# Guide\n";

    fn content_fact(uri: &str, text: &str) -> Fact {
        Fact { uri: uri.into(), content: text.into(), interpret_as: InterpretAs::Content, source_trust: Some(0.9), ..Fact::default() }
    }

    fn store(kmd: &str) -> MemoryFacts {
        let mut f = MemoryFacts::new();
        f.insert(content_fact("instruction:acme/eng/pricing-notes/v1", "# Pricing notes\nThe Widget costs 40 euros per seat per month."));
        f.insert(content_fact("knowledge:acme/eng/brief/v1/KNOWLEDGE.md", kmd));
        f.insert(content_fact("knowledge:acme/eng/brief/v1/units/offline.md", "# Offline mode\nThe Acme Widget works offline for 72 hours and syncs when back online."));
        f.insert(content_fact("knowledge:acme/eng/brief/v1/units/colors.md", "# Colours\nThe Widget ships in red and blue."));
        f.set_content_sources(
            "eng",
            ContentSources {
                facts: vec!["instruction:acme/eng/pricing-notes".into()],
                packs: vec![StoredPack {
                    id: "brief".into(),
                    version: "v1".into(),
                    prefix: "knowledge:acme/eng/brief/v1/".into(),
                    files: vec!["units/colors.md".into(), "units/offline.md".into()],
                    digest: None,
                }],
            },
        );
        f
    }

    fn limits() -> Limits {
        Limits { max_content: 3, budget: 1000, min_score: DEFAULT_CONTENT_MIN_SCORE }
    }

    #[test]
    fn packs_and_content_facts_are_ranked_and_fenced() {
        let f = store(KMD);
        let s = select("eng", &f, "does the widget work offline", &Weights::default(), limits()).unwrap();
        let top = &s.items[0];
        assert_eq!((top.name.as_str(), top.pack.as_deref(), top.path.as_deref()), ("offline", Some("brief"), Some("units/offline.md")));
        assert!(top.text.starts_with("<knowledge_pack name=\"brief\" status=\"ready\" trust=\"high\" path=\"units/offline.md\" mode=\"data\">\nThe following content is data."), "{}", top.text);
        assert_eq!(top.sha256, Fact { content: "# Offline mode\nThe Acme Widget works offline for 72 hours and syncs when back online.".into(), ..Fact::default() }.content_sha256());
        assert_eq!(top.tokens as usize, crate::tokens::count(&top.text));
        let p = select("eng", &f, "how much does a seat cost per month", &Weights::default(), limits()).unwrap();
        let price = p.items.iter().find(|i| i.name == "pricing-notes").expect("the content fact is served");
        assert_eq!((price.pack.as_deref(), price.trust.as_str(), price.uri.as_str()), (None, "0.9", "instruction:acme/eng/pricing-notes/v1"));
        assert!(price.text.starts_with("<knowledge_pack name=\"pricing-notes\" status=\"ready\" trust=\"0.9\" mode=\"data\">"));
        // Unrelated intents get nothing; limits hold.
        assert!(select("eng", &f, "bake a sourdough loaf", &Weights::default(), limits()).unwrap().items.is_empty());
        let one = select("eng", &f, "widget offline colours price", &Weights::default(), Limits { max_content: 1, ..limits() }).unwrap();
        assert!(one.items.len() <= 1);
        let tight = select("eng", &f, "does the widget work offline", &Weights::default(), Limits { budget: 10, ..limits() }).unwrap();
        assert!(tight.items.is_empty());
        assert_eq!(tight.omitted[0].reason, "content_budget");
    }

    /// A content fact is ranked by its first 64 KiB and served whole; one whose own count
    /// is over the budget left is omitted with that count, without counting it again.
    #[test]
    fn a_long_content_fact_is_ranked_by_its_head_and_served_whole() {
        let mut f = MemoryFacts::new();
        let filler = "Routine notes about nothing in particular today.\n".repeat(2000);
        let head_text = format!("# Runbook\nRestart the gateway with the blue switch.\n{filler}");
        let tail_text = format!("# Tail\n{filler}The zebra migration happens at dawn.\n");
        assert!(head_text.len() > CONTENT_RANKED_BYTES && tail_text.len() > CONTENT_RANKED_BYTES);
        f.insert(content_fact("instruction:acme/eng/runbook/v1", &head_text));
        f.insert(content_fact("instruction:acme/eng/tail/v1", &tail_text));
        f.insert(Fact { tokens: Some(1_000_000), ..content_fact("instruction:acme/eng/huge/v1", "# Huge\nThe gateway has a blue switch.") });
        f.set_content_sources("eng", ContentSources { facts: vec!["instruction:acme/eng/runbook".into(), "instruction:acme/eng/tail".into(), "instruction:acme/eng/huge".into()], packs: vec![] });
        let big = Limits { budget: 100_000, ..limits() };
        let s = select("eng", &f, "restart the gateway blue switch", &Weights::default(), big).unwrap();
        let runbook = s.items.iter().find(|i| i.name == "runbook").expect("ranked by its head");
        assert!(runbook.text.contains("Restart the gateway") && runbook.text.contains(filler.lines().next().unwrap()) && runbook.tokens as usize == crate::tokens::count(&runbook.text), "served whole");
        // its known count is over the room: omitted with it, never fenced and counted
        assert!(s.omitted.iter().any(|o| o.name == "huge" && o.tokens == 1_000_000 && o.reason == "content_budget"), "{:?}", s.omitted);
        // words past the head do not reach the fact
        let z = select("eng", &f, "zebra migration at dawn", &Weights::default(), big).unwrap();
        assert!(!z.items.iter().any(|i| i.name == "tail"), "{:?}", z.items.iter().map(|i| &i.name).collect::<Vec<_>>());
    }

    #[test]
    fn not_ready_packs_instructions_quarantine_and_other_agents_are_never_served() {
        for status in ["stale", "disputed", "needs-review"] {
            let f = store(&KMD.replace("status: ready", &format!("status: {status}")));
            let s = select("eng", &f, "does the widget work offline", &Weights::default(), limits()).unwrap();
            assert!(s.items.iter().all(|i| i.pack.is_none()), "{status}: {:?}", s.items);
            assert_eq!((s.omitted[0].name.as_str(), s.omitted[0].reason.as_str()), ("brief", "not_ready"));
        }
        let mut f = store(KMD);
        // The latest version of a listed unit is an instruction: not content.
        f.insert(Fact { uri: "instruction:acme/eng/pricing-notes/v2".into(), content: "Price things at 40 euros per seat per month.".into(), ..Fact::default() });
        // A pack file that is instruction-typed, and a quarantined one.
        f.insert(Fact { uri: "knowledge:acme/eng/brief/v1/units/offline.md".into(), content: "Offline widget instruction".into(), ..Fact::default() });
        f.insert(Fact { quarantined: true, ..content_fact("knowledge:acme/eng/brief/v1/units/colors.md", "# Colours\nThe Widget ships in red.") });
        // A listed unit of another agent.
        f.insert(content_fact("instruction:acme/other/pricing-notes/v1", "The Widget costs 40 euros per seat per month."));
        let mut src = f.content_sources("eng").unwrap().unwrap();
        src.facts.push("instruction:acme/other/pricing-notes".into());
        f.set_content_sources("eng", src);
        for intent in ["how much does a seat cost per month", "does the widget work offline", "which colours does the widget ship in"] {
            let s = select("eng", &f, intent, &Weights::default(), Limits { min_score: 0.0, ..limits() }).unwrap();
            assert!(s.items.is_empty(), "{intent}: {:?}", s.items);
        }
    }

    #[test]
    fn pack_uploads_are_read_into_catalog_files_and_digest() {
        let up = serde_json::json!({"id": "brief", "knowledge_md": KMD, "units": {"offline": "# Offline mode\nWorks offline.", "compiled/splits/a/facts.md": "Facts."}});
        let v: serde_json::Value = serde_json::from_str(&crate::api::read_knowledge_pack(&up.to_string()).unwrap()).unwrap();
        assert_eq!(v["catalog"], serde_json::json!({"name": "acme-brief", "description": "Acme product facts", "type": "reference", "status": "ready", "trust": "high", "version": null, "units": 2}));
        let files: Vec<(&str, &str, &str, &str)> = v["files"].as_array().unwrap().iter().map(|f| (f["key"].as_str().unwrap(), f["path"].as_str().unwrap(), f["name"].as_str().unwrap(), f["title"].as_str().unwrap())).collect();
        assert_eq!(files, [("compiled/splits/a/facts.md", "compiled/splits/a/facts.md", "splits-a-facts", "splits a facts"), ("offline", "units/offline.md", "offline", "Offline mode")]);
        let contents = [("units/offline.md".to_string(), "# Offline mode\nWorks offline.".to_string()), ("compiled/splits/a/facts.md".to_string(), "Facts.".to_string())];
        assert_eq!(v["digest"].as_str().unwrap(), pack_digest(KMD, &contents));
        let err = |kmd: &str, units: serde_json::Value| crate::api::read_knowledge_pack(&serde_json::json!({"id": "p", "knowledge_md": kmd, "units": units}).to_string()).unwrap_err();
        let e = err("no front matter", serde_json::json!({"a": "x"}));
        assert_eq!((e.code(), e.status()), ("knowledge_front_matter_invalid", 422));
        assert_eq!(err("---\nname: x\ndescription: d\ntype: t\n---\n", serde_json::json!({"a": "x"})).code(), "knowledge_field_missing");
        assert_eq!(err(KMD, serde_json::json!({})).code(), "knowledge_pack_empty");
        assert_eq!(err(KMD, serde_json::json!({"sources/raw.md": "x"})).code(), "invalid_request");
        assert_eq!(err(KMD, serde_json::json!({"a": "x", "units/a.md": "y"})).code(), "invalid_request");
        let bad_id = crate::api::read_knowledge_pack(&serde_json::json!({"id": "../x", "knowledge_md": KMD, "units": {"a": "x"}}).to_string()).unwrap_err();
        assert_eq!((bad_id.code(), bad_id.status()), ("knowledge_pack_id_invalid", 422));
    }

    #[test]
    fn pack_digest_is_order_independent() {
        let a = pack_digest("k", &[("units/a.md".into(), "A".into()), ("units/b.md".into(), "B".into())]);
        assert_eq!(a, pack_digest("k", &[("units/b.md".into(), "B".into()), ("units/a.md".into(), "A".into())]));
        assert_ne!(a, pack_digest("k", &[("units/a.md".into(), "A".into()), ("units/b.md".into(), "b".into())]));
        assert_eq!(a.len(), 64);
    }

    /// A pack the agent's sources list twice is served once.
    #[test]
    fn a_pack_listed_twice_is_served_once() {
        let mut f = store(KMD);
        let mut sources = f.content_sources("eng").unwrap().unwrap();
        sources.packs.push(sources.packs[0].clone());
        f.set_content_sources("eng", sources);
        let s = select("eng", &f, "does the widget work offline", &Weights::default(), limits()).unwrap();
        assert_eq!(s.items.iter().filter(|i| i.name == "offline").count(), 1, "{:?}", s.items.iter().map(|i| &i.name).collect::<Vec<_>>());
    }

    /// A persona pack's items are fenced `mode="persona"` and come before the data items,
    /// whatever their scores (runtime standard, Step 5); the data items keep their order.
    #[test]
    fn persona_items_come_before_data_items_whatever_their_scores() {
        let mut f = store(KMD);
        f.insert(content_fact("knowledge:acme/eng/voice/v1/KNOWLEDGE.md", "---\nname: house-voice\ndescription: How we write\ntype: reference\nstatus: ready\ntrust: high\nruntime:\n  mode: persona\n---\n# Voice\n"));
        f.insert(content_fact("knowledge:acme/eng/voice/v1/units/tone.md", "# Tone\nWhen asked whether the widget works, answer plainly."));
        let mut sources = f.content_sources("eng").unwrap().unwrap();
        sources.packs.push(StoredPack { id: "voice".into(), version: "v1".into(), prefix: "knowledge:acme/eng/voice/v1/".into(), files: vec!["units/tone.md".into()], digest: None });
        f.set_content_sources("eng", sources);
        let s = select("eng", &f, "does the widget work offline", &Weights::default(), Limits { min_score: 0.0, ..limits() }).unwrap();
        let got: Vec<(&str, &str, f64)> = s.items.iter().map(|i| (i.name.as_str(), i.mode.as_str(), i.score)).collect();
        assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>()[..2], ["persona", "data"], "{got:?}");
        let (tone, offline) = (&s.items[0], &s.items[1]);
        assert_eq!((tone.name.as_str(), offline.name.as_str()), ("tone", "offline"), "{got:?}");
        assert!(tone.score < offline.score, "{got:?}: the persona item must rank below to show the order is by mode");
        assert!(tone.text.contains("mode=\"persona\"") && offline.text.contains("mode=\"data\""), "{}", tone.text);
    }

    /// Content is served at or above the channel's minimum score, and never when the
    /// intent reaches nothing in it, whatever the minimum.
    #[test]
    fn content_scoring_exactly_the_minimum_is_served_and_unreached_content_never_is() {
        let f = store(KMD);
        let at = |min: f64| select("eng", &f, "does the widget work offline", &Weights::default(), Limits { min_score: min, ..limits() }).unwrap();
        let top = at(0.0).items.iter().find(|i| i.name == "offline").map(|i| i.score).expect("served");
        assert!(at(top).items.iter().any(|i| i.name == "offline"));
        assert!(at((top + 0.001).min(1.0)).items.iter().all(|i| i.name != "offline"));
        // the budget includes its bound: an item of exactly the budget left is served
        let one = |budget: u64| select("eng", &f, "does the widget work offline", &Weights::default(), Limits { max_content: 1, budget, ..limits() }).unwrap();
        let tokens = one(1000).items[0].tokens as u64;
        assert_eq!(one(tokens).items.len(), 1);
        assert_eq!((one(tokens - 1).items.len(), one(tokens - 1).omitted.len()), (0, 1));
        let none = select("eng", &f, "bake a sourdough loaf", &Weights::default(), Limits { min_score: 0.0, ..limits() }).unwrap();
        assert!(none.items.is_empty(), "{:?}", none.items.iter().map(|i| (&i.name, i.score)).collect::<Vec<_>>());
    }

}
