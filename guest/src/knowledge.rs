//! Knowledge packs as rankable corpora: the Agent Knowledge runtime standard
//! (`/work/shared/spec/agent-knowledge-runtime.txt`, "Step 1: Discover packs" and
//! "Step 4: Select context") read into the shape recall ranks (§21.3.3).
//!
//! A pack is a directory holding `KNOWLEDGE.md` (YAML front matter: the catalog fields
//! `name`, `description`, `type`, `status`, optionally `version`, `trust`, `license`…,
//! then a guide) and its context files in one of three layouts:
//! - `units/<name>.md` (one context file per unit, the eval-large layout);
//! - `compiled/…/*.md` (compiled views, e.g. `compiled/splits/<doc>/<part>.md`);
//! - `documents/…/*.md` (document splits).
//!
//! Everything here is pure parsing: the host walks the files and hands over the
//! `KNOWLEDGE.md` text and the context files' relative paths (a [`PackDocument`], sent
//! through the engine's `rank`/`recall` calls in place of a manifest); the files'
//! contents are read as `path:{relative path}` facts, exactly like a manifest entry's
//! `path` fallback (§21.6.1). A unit's name comes from its path, its title (the first
//! line `# <title>`) becomes the manifest description the ranker weighs, and the whole
//! file is the content served. Knowledge content is data, never instructions (runtime
//! standard, "Core principle"): nothing here interprets it beyond the title line.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::rank::column::Column;
use crate::manifest::{Entry, Manifest};
use crate::rank::{Ranker, UnitDoc};
use crate::recall::Resolved;
use crate::store::Facts;

/// The deployment segment under which packs appear as manifests.
pub const PACK_DEPLOYMENT: &str = "knowledge";

/// Why a pack could not be read. Each variant has a stable code ([`KnowledgeError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnowledgeError {
    #[error("KNOWLEDGE.md must start with YAML front matter between `---` lines")]
    FrontMatterMissing,
    #[error("KNOWLEDGE.md front matter is not closed by a `---` line")]
    FrontMatterUnclosed,
    #[error("KNOWLEDGE.md front matter line {line} is not `key: value`: {text:?}")]
    FrontMatterLine { line: usize, text: String },
    #[error("KNOWLEDGE.md front matter gives the key `{key}` twice (lines {first} and {line}); a YAML mapping's keys are unique: keep one")]
    FrontMatterKeyTwice { key: String, first: usize, line: usize },
    #[error("KNOWLEDGE.md front matter lacks the catalog field `{0}` (runtime standard, Step 2)")]
    FieldMissing(&'static str),
    #[error("pack {pack:?} has no context files under units/, compiled/ or documents/")]
    NoUnits { pack: String },
    #[error("pack id {0:?} must be 1-128 characters of [A-Za-z0-9._-]")]
    PackId(String),
    #[error("KNOWLEDGE.md front matter field `{field}` holds U+{code:04X}, {what}, at character {at}: the catalog's fields are listed and fenced as they are, so they may not hold characters a reader cannot see; remove it")]
    FieldHidden { field: String, at: usize, code: u32, what: &'static str },
}

impl KnowledgeError {
    pub fn code(&self) -> &'static str {
        match self {
            KnowledgeError::FrontMatterMissing | KnowledgeError::FrontMatterUnclosed | KnowledgeError::FrontMatterLine { .. } | KnowledgeError::FrontMatterKeyTwice { .. } | KnowledgeError::FieldHidden { .. } => {
                "knowledge_front_matter_invalid"
            }
            KnowledgeError::FieldMissing(_) => "knowledge_field_missing",
            KnowledgeError::NoUnits { .. } => "knowledge_pack_empty",
            KnowledgeError::PackId(_) => "knowledge_pack_id_invalid",
        }
    }
}

/// The catalog metadata of a pack (runtime standard, Step 2). Nested keys are flattened
/// with dots (`runtime.mode`); list items are joined with `", "`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PackMeta {
    pub name: String,
    pub description: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    /// Every other front-matter field, by (flattened) key.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}

impl PackMeta {
    /// Refuse a catalog field (`name`, `description`, `type`, `status`, or one of
    /// `optional` present) that holds a character a reader cannot see, or a line break
    /// ([`line_hidden_character`]): the first such field, in that order.
    pub fn check_catalog_fields(&self, optional: &[&str]) -> Result<(), KnowledgeError> {
        let required = [("name", &self.name), ("description", &self.description), ("type", &self.kind), ("status", &self.status)];
        let present = optional.iter().filter_map(|k| self.fields.get(*k).map(|v| (*k, v)));
        for (field, value) in required.into_iter().chain(present) {
            if let Some((at, c, what)) = line_hidden_character(value) {
                return Err(KnowledgeError::FieldHidden { field: field.to_string(), at, code: c as u32, what });
            }
        }
        Ok(())
    }
}

/// Strip one level of YAML quoting from a scalar.
fn unquote(v: &str) -> String {
    let v = v.trim();
    let b = v.as_bytes();
    if b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"' {
        let inner = &v[1..v.len() - 1];
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(o) => out.push(o),
                    None => out.push('\\'),
                }
            } else {
                out.push(c);
            }
        }
        out
    } else if b.len() >= 2 && b[0] == b'\'' && b[b.len() - 1] == b'\'' {
        v[1..v.len() - 1].replace("''", "'")
    } else {
        // an unquoted scalar ends at a ` #` comment
        v.split(" #").next().unwrap_or("").trim().to_string()
    }
}

/// The lines of `text`, each with its line break: LF, CRLF or a lone CR (YAML 1.2 §5.4
/// and CommonMark both take all three; editors that write CR alone still exist).
fn lines_inclusive(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = match rest.find(['\n', '\r']) {
            Some(i) if rest[i..].starts_with("\r\n") => i + 2,
            Some(i) => i + 1,
            None => rest.len(),
        };
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// Parse `KNOWLEDGE.md`: its front matter (the subset of YAML catalogs use: `key: value`
/// scalars, one level of nested mappings, `- item` lists, comments) and the guide body.
/// Lines end with LF, CRLF or a lone CR.
pub fn parse_knowledge_md(text: &str) -> Result<(PackMeta, &str), KnowledgeError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = lines_inclusive(text);
    let mut offset = match lines.next() {
        Some(first) if first.trim_end() == "---" => first.len(),
        _ => return Err(KnowledgeError::FrontMatterMissing),
    };
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    // the line each key was given on: a key given twice is an error, not the last one kept
    let mut given: BTreeMap<String, usize> = BTreeMap::new();
    let mut parent: Option<String> = None;
    let mut closed = false;
    for (i, raw) in lines.enumerate() {
        offset += raw.len();
        let line = raw.trim_end();
        if line == "---" || line == "..." {
            closed = true;
            break;
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indented = trimmed.len() < line.len();
        if let Some(item) = trimmed.strip_prefix("- ").or(if trimmed == "-" { Some("") } else { None }) {
            let Some(p) = parent.as_ref() else {
                return Err(KnowledgeError::FrontMatterLine { line: i + 2, text: line.to_string() });
            };
            let e = fields.entry(p.clone()).or_default();
            if !e.is_empty() {
                e.push_str(", ");
            }
            e.push_str(&unquote(item));
            continue;
        }
        let Some((k, v)) = trimmed.split_once(':') else {
            return Err(KnowledgeError::FrontMatterLine { line: i + 2, text: line.to_string() });
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(KnowledgeError::FrontMatterLine { line: i + 2, text: line.to_string() });
        }
        let key = match (&parent, indented) {
            (Some(p), true) => format!("{p}.{k}"),
            _ => k.to_string(),
        };
        if let Some(&first) = given.get(&key) {
            return Err(KnowledgeError::FrontMatterKeyTwice { key, first, line: i + 2 });
        }
        given.insert(key.clone(), i + 2);
        let value = unquote(v);
        if value.is_empty() {
            // a mapping or a list follows (only top-level keys open one)
            if !indented {
                parent = Some(key.clone());
            }
        } else if !indented {
            parent = None;
        }
        if !value.is_empty() || !fields.contains_key(&key) {
            fields.insert(key, value);
        }
    }
    if !closed {
        return Err(KnowledgeError::FrontMatterUnclosed);
    }
    let mut take = |f: &'static str| -> Result<String, KnowledgeError> {
        fields.remove(f).filter(|v| !v.trim().is_empty()).ok_or(KnowledgeError::FieldMissing(f))
    };
    let meta = PackMeta { name: take("name")?, description: take("description")?, kind: take("type")?, status: take("status")?, fields };
    Ok((meta, text.get(offset..).unwrap_or("")))
}

/// The unit name of a context file, from its path relative to the pack root: `units/x.md`
/// is `x`; under `compiled/` or `documents/` the path below that folder, `/` replaced by
/// `-` (`compiled/splits/brief/facts.md` is `splits-brief-facts`). Letters and digits of
/// any script are kept, lowercased and in NFC, with the combining marks written with them
/// (`units/部署.md` is `部署`, `units/Überblick.md` `überblick`); `-`, `_` and `.` are kept;
/// any other character becomes `-` (ASCII names are exactly what they always were). At
/// most 128 characters. Anything else (other folders, non-markdown files, hidden files,
/// `..`) is not a context file: `None`. Two files can still give one name (`Deploys.md`,
/// `deploys.md`): [`read_pack`] reports it ([`Pack::clashes`]).
pub fn unit_name(rel_path: &str) -> Option<String> {
    let rel = rel_path.replace('\\', "/");
    let (top, rest) = rel.split_once('/')?;
    if !matches!(top, "units" | "compiled" | "documents") {
        return None;
    }
    // in NFC: a name decomposed on disk (macOS keeps `cafe\u{301}`) is the name a probe,
    // a hint or a precomposed twin spells `caf\u{e9}` (a twin is then a name clash, said)
    let stem = crate::rank::text::nfc(rest.strip_suffix(".md")?);
    let parts: Vec<&str> = stem.split('/').collect();
    if top == "units" && parts.len() != 1 {
        return None;
    }
    if parts.iter().any(|p| p.is_empty() || p.starts_with('.')) {
        return None;
    }
    let mut name = String::with_capacity(stem.len());
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            name.push('-');
        }
        for c in p.chars() {
            if c.is_ascii() {
                name.push(if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c.to_ascii_lowercase() } else { '-' });
            } else if c.is_alphanumeric() || is_combining_mark(c) {
                name.extend(c.to_lowercase());
            } else {
                name.push('-');
            }
        }
    }
    (name.chars().count() <= 128).then_some(name)
}

/// Why a markdown file under a pack's context folders is not one of its units (`None`
/// when it is one, or when it is not under `units/`, `compiled/` or `documents/`): so
/// a catalog can say so rather than leave it out unseen (runtime standard, Step 1).
pub fn not_a_unit(rel_path: &str) -> Option<&'static str> {
    if unit_name(rel_path).is_some() {
        return None;
    }
    let rel = rel_path.replace('\\', "/");
    let (top, rest) = rel.split_once('/')?;
    let stem = rest.strip_suffix(".md")?;
    match top {
        "units" if stem.contains('/') => Some("a unit file sits directly in units/ (units/<name>.md): move it up, or under compiled/, where each subfolder adds to the name (compiled/a/b.md is the unit `a-b`)"),
        "units" | "compiled" | "documents" if stem.split('/').any(|p| p.is_empty() || p.starts_with('.')) => Some("a name part is empty or starts with `.`: rename it"),
        "units" | "compiled" | "documents" => Some("its unit name would be over 128 characters: shorten the file name (or its folders')"),
        _ => None,
    }
}

/// A combining mark (general category M: `char::is_alphanumeric` leaves most of them out)
/// that belongs to the letter it follows: the diacritics a decomposed (NFD) name is written
/// with (`cafe\u{301}`, as some file systems keep names; `テ\u{3099}`), Indic nuktas and
/// viramas, Hebrew and Arabic points, Thai and Tibetan signs. Not variation selectors:
/// they are invisible.
fn is_combining_mark(c: char) -> bool {
    crate::lint::is_mark(c) && !crate::lint::is_variation_selector(c)
}

/// The first character of a pack file's path (or of a catalog field) that it may not hold,
/// as (its 1-based character position, the character, what it is): what the admission
/// lint refuses in text wherever it stands ([`crate::lint::hidden_anywhere`]: bidirectional
/// controls and marks, joiners, variation selectors, zero-width, tag and control
/// characters; a name is not prose, so none is allowed by its neighbours, as
/// `lid_shared::ids::is_hidden` has it for the on-disk loader), and, such a value being one
/// line, tabs, line breaks and the Unicode line and paragraph separators. A path is served to agents as it
/// is: in its fact URI, the content item's `path` and the `<knowledge_pack path="…">`
/// fence; the catalog's fields are listed to whoever picks packs, and fenced.
pub fn line_hidden_character(value: &str) -> Option<(usize, char, &'static str)> {
    let own = value.chars().enumerate().find_map(|(i, c)| match c {
        '\t' | '\n' | '\r' => Some((i + 1, c, "a control character (the value is one line)")),
        '\u{2028}' | '\u{2029}' => Some((i + 1, c, "a Unicode line or paragraph separator (the value is one line)")),
        _ => None,
    });
    let hidden = value.chars().enumerate().find_map(|(i, c)| crate::lint::hidden_anywhere(c).map(|what| (i + 1, c, what)));
    match (own, hidden) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// Two or more files of one layout that give one unit name: only the first (by path) can
/// be served. (A name given by files of different layouts is the documented precedence,
/// [`layout_rank`], not a clash.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameClash {
    pub name: String,
    /// The files, the one served first.
    pub paths: Vec<String>,
}

/// What every clash message ends with: how names are made, and the fix.
pub const NAME_CLASH_FIX: &str = "a unit name keeps letters and digits of any script, lowercased, and turns other characters into `-`: rename the files so their names differ";

impl NameClash {
    /// "files A, B give one unit name "x", so only A is served", each path shown by `show`.
    pub fn describe(&self, show: impl Fn(&str) -> String) -> String {
        let all: Vec<String> = self.paths.iter().map(|p| show(p)).collect();
        format!("files {} give one unit name {:?}, so only {} is served", all.join(", "), self.name, all.first().map_or("", String::as_str))
    }
}

impl std::fmt::Display for NameClash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(str::to_string))
    }
}

/// The context files among `files`, grouped by unit name, each group in precedence order
/// (layout, then path): the first is the one served.
fn by_name<'a>(files: impl IntoIterator<Item = &'a String>) -> BTreeMap<String, Vec<&'a str>> {
    let mut files: Vec<&String> = files.into_iter().collect();
    files.sort_by(|a, b| layout_rank(a).cmp(&layout_rank(b)).then(a.cmp(b)));
    files.dedup();
    let mut out: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for f in files {
        if let Some(name) = unit_name(f) {
            out.entry(name).or_default().push(f.as_str());
        }
    }
    out
}

/// The unit-name clashes of a pack's files (see [`NameClash`]), by name.
pub fn name_clashes(files: &[String]) -> Vec<NameClash> {
    clashes_of(&by_name(files))
}

fn clashes_of(groups: &BTreeMap<String, Vec<&str>>) -> Vec<NameClash> {
    groups
        .iter()
        .filter_map(|(name, paths)| {
            let first = layout_rank(paths[0]);
            let same: Vec<String> = paths.iter().filter(|p| layout_rank(p) == first).map(|p| p.to_string()).collect();
            (same.len() > 1).then(|| NameClash { name: name.clone(), paths: same })
        })
        .collect()
}

/// Layout precedence when two files give the same unit name: `units/` wins over
/// `compiled/`, which wins over `documents/` (runtime standard, Step 4: compiled views
/// before document splits).
fn layout_rank(rel_path: &str) -> u8 {
    match rel_path.split('/').next() {
        Some("units") => 0,
        Some("compiled") => 1,
        _ => 2,
    }
}

/// The title of a context file: its first line (ended by LF, CRLF or a lone CR) when that
/// is `# <title>`, else the unit name with dashes as spaces.
pub fn unit_title(name: &str, content: &str) -> String {
    let first = content.trim_start_matches('\u{feff}').split(['\n', '\r']).next().unwrap_or("");
    match first.strip_prefix("# ") {
        Some(t) if !t.trim().is_empty() => t.trim().to_string(),
        _ => name.replace('-', " "),
    }
}

/// What a host sends instead of a manifest to rank or recall over a pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackDocument {
    pub knowledge_pack: PackSpec,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackSpec {
    /// The pack's id (its directory name); the manifest's `agent_id`.
    pub id: String,
    /// The text of `KNOWLEDGE.md`.
    pub knowledge_md: String,
    /// Relative paths of the pack's files; each context file's content is the fact
    /// `path:{path}`.
    pub files: Vec<String>,
    /// The host's content digest of the pack (lowercase hex SHA-256 over `KNOWLEDGE.md`
    /// and every file, computed when it read them, as it does for each fact's `sha256`).
    /// With it, the precomputed index is found without reading any unit; without it,
    /// every unit is read to fingerprint the pack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl PackDocument {
    /// A pack document, if `json` is one (`None` for anything else, e.g. a manifest).
    pub fn detect(json: &str) -> Option<PackDocument> {
        if !json.contains("\"knowledge_pack\"") {
            return None;
        }
        serde_json::from_str(json).ok()
    }
}

/// A pack read into manifest form: metadata, one entry per context file (sorted by
/// name, `path` set), the names that lost a layout collision (the documented precedence,
/// `units/` > `compiled/` > `documents/`), and the names several files of one layout give
/// (only the first is served; an upload is refused for it, a scan reports it).
#[derive(Debug, Clone, PartialEq)]
pub struct Pack {
    pub meta: PackMeta,
    pub manifest: Manifest,
    pub collisions: Vec<String>,
    pub clashes: Vec<NameClash>,
}

/// Read a pack from its document: parse `KNOWLEDGE.md`, pick the context files, name
/// them (deterministically, by name), and build the manifest the ranker sees.
/// `title_of(path)` gives a file's title (from its content); the manifest descriptions
/// are those titles.
pub fn read_pack(spec: &PackSpec, mut title_of: impl FnMut(&str, &str) -> Option<String>) -> Result<Pack, KnowledgeError> {
    // (`.` and `..` are made of allowed characters, but name no pack: they are path steps)
    if spec.id.is_empty() || spec.id.len() > 128 || spec.id == "." || spec.id == ".." || !spec.id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        return Err(KnowledgeError::PackId(spec.id.clone()));
    }
    let (meta, _guide) = parse_knowledge_md(&spec.knowledge_md)?;
    let groups = by_name(&spec.files);
    if groups.is_empty() {
        return Err(KnowledgeError::NoUnits { pack: spec.id.clone() });
    }
    let clashes = clashes_of(&groups);
    // (a name per file that lost to a file of a layout that comes first)
    let collisions = groups.iter().flat_map(|(name, paths)| paths.iter().filter(|p| layout_rank(p) > layout_rank(paths[0])).map(move |_| name.clone())).collect();
    let mut entries = Vec::with_capacity(groups.len());
    for (name, paths) in groups {
        let path = paths[0];
        let Some(title) = title_of(&name, path) else { continue };
        entries.push(Entry { description: title, path: Some(path.to_string()), name, ..Entry::default() });
    }
    let manifest = pack_manifest(&spec.id, entries);
    Ok(Pack { meta, manifest, collisions, clashes })
}

/// Read a pack whose context files are `path:` facts in `facts`: the manifest, and each
/// entry's resolved content (parallel to `manifest.entries`). A file that cannot be read
/// is left out of the manifest; a store failure is an error.
pub fn load(spec: &PackSpec, facts: &dyn Facts) -> Result<(Pack, Vec<Option<Resolved>>), crate::error::EngineError> {
    let mut contents: BTreeMap<String, crate::store::Fact> = BTreeMap::new();
    let mut failure = None;
    let pack = read_pack(spec, |name, path| {
        match facts.get(&format!("path:{path}")) {
            // Knowledge is data (runtime standard, "Core principle"): either
            // interpretation is accepted; recall only ranks and quotes it.
            Ok(Some(mut f)) => {
                let title = unit_title(name, &f.content);
                if f.version.is_empty() {
                    f.version = "v1".into();
                }
                contents.insert(path.to_string(), f);
                Some(title)
            }
            Ok(_) => None,
            Err(e) => {
                failure.get_or_insert(e);
                None
            }
        }
    })
    .map_err(crate::error::EngineError::Knowledge)?;
    if let Some(e) = failure {
        return Err(crate::error::EngineError::BackendUnavailable(e.0));
    }
    let units = pack
        .manifest
        .entries
        .iter()
        .map(|e| e.path.as_ref().and_then(|p| contents.remove(p)).map(|fact| Resolved { fact, source: "fallback_path" }))
        .collect();
    Ok((pack, units))
}

/// A pack opened for ranking: its manifest (one entry per readable context file, in
/// name order), the ranker over exactly those entries and their token counts. Opened
/// from its precomputed index, the entries stay in `table` (names in the ranker's index)
/// and `manifest.entries` is empty: a recall makes only the entries it quotes.
pub struct Opened {
    pub manifest: Manifest,
    pub ranker: Ranker,
    pub tokens: Vec<u32>,
    pub table: Option<PackTable>,
}

impl Opened {
    /// Entry `d` (from the manifest, or made from the table).
    pub fn entry(&self, d: usize) -> Option<std::borrow::Cow<'_, Entry>> {
        entry(&self.manifest, self.table.as_ref(), &self.ranker, d)
    }
}

/// Entry `d` of a pack or agent ranked by `ranker`: the manifest's own, or, for a pack
/// opened from its index, made from its `table` (and the index's name).
pub fn entry<'a>(manifest: &'a Manifest, table: Option<&PackTable>, ranker: &Ranker, d: usize) -> Option<std::borrow::Cow<'a, Entry>> {
    match table {
        Some(t) => (d < t.len()).then(|| std::borrow::Cow::Owned(t.entry(ranker.index().name(d), d))),
        None => manifest.entries.get(d).map(std::borrow::Cow::Borrowed),
    }
}

/// A pack's entries as its precomputed index keeps them: per unit its title, then its
/// path, concatenated (string `k` is `texts[text_start[k]..text_start[k + 1]]`).
#[derive(Debug, Clone)]
pub struct PackTable {
    /// The strings' UTF-8 bytes, read in place in the cached blob (each read checked).
    texts: Column<u8>,
    text_start: Column<u32>,
}

impl PackTable {
    /// Number of units.
    pub fn len(&self) -> usize {
        self.text_start.len().saturating_sub(1) / 2
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn text(&self, k: usize) -> Option<&str> {
        std::str::from_utf8(self.texts.get(crate::rank::index::span(&self.text_start, k)?)?).ok()
    }

    /// Unit `d`'s title.
    pub fn title(&self, d: usize) -> Option<&str> {
        self.text(2 * d)
    }

    /// Unit `d`'s path in the pack.
    pub fn path(&self, d: usize) -> Option<&str> {
        self.text(2 * d + 1)
    }

    /// Unit `d` as a manifest entry named `name` (a path entry, §21.6.1).
    pub fn entry(&self, name: &str, d: usize) -> Entry {
        Entry { name: name.to_string(), description: self.title(d).unwrap_or("").to_string(), path: self.path(d).map(str::to_string), ..Entry::default() }
    }
}

/// The precomputed index of a pack, as cached under [`pack_key`]: everything recall
/// needs that does not depend on the intent (entry names, titles and paths; the
/// ranker's index; exact token counts), so a recall reads no unit it does not quote.
#[derive(Deserialize)]
struct PackIndex {
    /// Per entry, its title then its path, concatenated: string `k` is
    /// `texts[text_start[k]..text_start[k + 1]]` (names are the index's own), so the
    /// blob decodes with a few allocations however many units the pack has.
    texts: Column<u8>,
    text_start: Column<u32>,
    index: crate::rank::index::Index,
    #[serde(with = "crate::rank::index::flat")]
    tokens: Vec<u32>,
}

#[derive(Serialize)]
struct PackIndexRef<'a> {
    texts: Column<u8>,
    text_start: Column<u32>,
    index: &'a crate::rank::index::Index,
    #[serde(with = "crate::rank::index::flat")]
    tokens: &'a [u32],
}

/// What a cached recall needs of a pack document: its id and the host's digest,
/// borrowed (the file list and `KNOWLEDGE.md` are skipped, not copied).
#[derive(Deserialize)]
struct PackHead<'a> {
    #[serde(borrow)]
    knowledge_pack: PackHeadSpec<'a>,
}

#[derive(Deserialize)]
struct PackHeadSpec<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    digest: Option<std::borrow::Cow<'a, str>>,
}

/// Open a pack document from its precomputed index alone, when the host's digest finds
/// a cached one: the document's file list is not even parsed. `None` otherwise (call
/// [`open`] with the whole document).
pub fn open_cached(document_json: &str, facts: &dyn Facts, intent: Option<&str>) -> Option<Opened> {
    let head: PackHead<'_> = serde_json::from_str(document_json).ok()?;
    let spec = head.knowledge_pack;
    let digest = spec.digest.as_deref().filter(|d| well_formed_digest(d))?;
    let key = pack_key(&spec.id, digest);
    from_blob(&spec.id, &key, facts, intent)
}


/// How [`unit_name`] names units, in the pack index's cache key: an index built under
/// another rule (before names kept letters of every script, when `units/部署.md` and
/// `units/限额.md` were both `--`) is rebuilt, not served with the names it was built with.
const UNIT_NAMES: &str = "unit-names-3 (letters, digits and marks of any script, in NFC)";

/// The cache key of a pack's precomputed index: a fingerprint of the engine and ranker
/// versions, the unit-name rule, the pack id and either the host's digest or (without
/// one) the SHA-256 of `KNOWLEDGE.md` and of every context file read.
fn pack_key(id: &str, digest: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [env!("CARGO_PKG_VERSION"), crate::rank::RANKER_VERSION, "knowledge-pack", UNIT_NAMES, id, digest] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("{}pack-{}", crate::recall::INDEX_PREFIX, crate::digest::hex(&h.finalize()))
}

fn well_formed_digest(d: &str) -> bool {
    d.len() == 64 && d.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Open a pack for ranking: from its precomputed index when the host's digest finds
/// one (nothing else is read), else by reading every context file, building the index
/// and offering it to the host's cache (publish / first load).
///
/// `intent` is what the pack is opened to rank: a split index fetches only the postings
/// that intent reaches (`None`: every segment, for any intent).
pub fn open(spec: &PackSpec, facts: &dyn Facts, intent: Option<&str>) -> Result<Opened, crate::error::EngineError> {
    let host_key = spec.digest.as_deref().filter(|d| well_formed_digest(d)).map(|d| pack_key(&spec.id, d));
    if let Some(key) = &host_key {
        if let Some(opened) = from_blob(&spec.id, key, facts, intent) {
            return Ok(opened);
        }
    }
    let (pack, units) = load(spec, facts)?;
    let key = match host_key {
        Some(k) => k,
        None => {
            use sha2::{Digest, Sha256};
            let mut h = Sha256::new();
            h.update(Sha256::digest(spec.knowledge_md.as_bytes()));
            for (e, u) in pack.manifest.entries.iter().zip(&units) {
                h.update(e.path.as_deref().unwrap_or("").as_bytes());
                h.update([0]);
                h.update(u.as_ref().map(|r| r.fact.content_sha256()).unwrap_or_default().as_bytes());
            }
            let d = crate::digest::hex(&h.finalize());
            let k = pack_key(&spec.id, &d);
            if let Some(opened) = from_blob(&spec.id, &k, facts, intent) {
                return Ok(opened);
            }
            k
        }
    };
    let no_list: Vec<String> = Vec::new();
    let docs: Vec<UnitDoc<'_>> = pack
        .manifest
        .entries
        .iter()
        .zip(&units)
        .map(|(e, u)| UnitDoc {
            name: &e.name,
            description: &e.description,
            intents: &no_list,
            keywords: &no_list,
            task_types: &no_list,
            required_by_task_types: &no_list,
            body: u.as_ref().map_or("", |r| r.fact.content.as_str()),
        })
        .collect();
    let ranker = Ranker::build(&docs);
    let tokens: Vec<u32> = units.iter().map(|u| u.as_ref().map_or(0, |r| r.fact.tokens.unwrap_or_else(|| crate::tokens::count(&r.fact.content) as u32))).collect();
    let mut texts = String::new();
    let mut text_start = vec![0u32];
    for e in &pack.manifest.entries {
        for t in [e.description.as_str(), e.path.as_deref().unwrap_or("")] {
            texts.push_str(t);
            text_start.push(texts.len() as u32);
        }
    }
    cache_index(facts, &key, texts.into_bytes().into(), text_start.into(), ranker.index(), &tokens);
    Ok(Opened { manifest: pack.manifest, ranker, tokens, table: None })
}

/// Offer a pack's precomputed index to the host's cache under `key`: one blob, or split
/// (its segments first, so a head is never cached before what it names).
fn cache_index(facts: &dyn Facts, key: &str, texts: Column<u8>, text_start: Column<u32>, index: &crate::rank::index::Index, tokens: &[u32]) {
    let Some(index) = crate::recall::cache_segments(facts, key, index) else { return };
    if let Some(blob) = crate::rank::column::encode(&PackIndexRef { texts, text_start, index: &index, tokens }) {
        facts.cache(key, &blob);
    }
}

/// Decode a cached pack index; `None` (rebuild) when it is not a consistent index of a
/// pack with this id.
fn from_blob(id: &str, key: &str, facts: &dyn Facts, intent: Option<&str>) -> Option<Opened> {
    let blob = facts.cached(key)?;
    let p: PackIndex = crate::rank::column::decode(blob)?;
    let PackIndex { texts, text_start, index, tokens } = p;
    let mut ranker = Ranker::from_index(index);
    if !crate::recall::load_segments(facts, key, &mut ranker, intent) {
        return None;
    }
    let ix = ranker.index();
    let n = tokens.len();
    let table = PackTable { texts, text_start };
    // (the names are the index's own: its shape and the table's are what is checked)
    if table.text_start.len() != 2 * n + 1 || ix.n_docs as usize != n || !ix.fits_shape() || !table.text_start.windows(2).all(|w| w[0] <= w[1]) || table.text_start.last().is_some_and(|&e| e as usize > table.texts.len()) {
        return None;
    }
    Some(Opened { manifest: pack_manifest(id, Vec::new()), ranker, tokens, table: Some(table) })
}

/// The manifest a pack is ranked as: its units as path entries under [`PACK_DEPLOYMENT`].
fn pack_manifest(id: &str, entries: Vec<Entry>) -> Manifest {
    Manifest { agent_id: id.to_string(), deployment: PACK_DEPLOYMENT.to_string(), manifest_version: "v1".into(), entries, ..Manifest::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KMD: &str = "---\nname: prometheus\ndescription: \"Prometheus docs: config, \\\"PromQL\\\"\"\ntype: reference\nstatus: ready\nversion: \"main@d15adb9 (3.x docs)\"\ntrust: medium # how far to trust it\nruntime:\n  mode: data\ntags:\n  - metrics\n  - 'ops'\n---\n# Guide\n\nHow the units were cut.\n";

    #[test]
    fn front_matter_fields_nested_lists_and_guide() {
        let (m, guide) = parse_knowledge_md(KMD).unwrap();
        assert_eq!(m.name, "prometheus");
        assert_eq!(m.description, "Prometheus docs: config, \"PromQL\"");
        assert_eq!((m.kind.as_str(), m.status.as_str()), ("reference", "ready"));
        assert_eq!(m.fields["version"], "main@d15adb9 (3.x docs)");
        assert_eq!(m.fields["trust"], "medium");
        assert_eq!(m.fields["runtime.mode"], "data");
        assert_eq!(m.fields["tags"], "metrics, ops");
        assert!(guide.starts_with("# Guide\n"));
    }

    #[test]
    fn front_matter_errors_have_codes() {
        let e = parse_knowledge_md("# no front matter").unwrap_err();
        assert_eq!((e.code(), e.clone()), ("knowledge_front_matter_invalid", KnowledgeError::FrontMatterMissing));
        assert_eq!(parse_knowledge_md("---\nname: x\n").unwrap_err(), KnowledgeError::FrontMatterUnclosed);
        assert_eq!(
            parse_knowledge_md("---\nname: x\njust words\n---\n").unwrap_err(),
            KnowledgeError::FrontMatterLine { line: 3, text: "just words".into() }
        );
        let e = parse_knowledge_md("---\nname: x\ndescription: d\ntype: reference\n---\n").unwrap_err();
        assert_eq!((e.code(), e), ("knowledge_field_missing", KnowledgeError::FieldMissing("status")));
        // A key given twice, at the top or under one parent, is refused, naming both lines
        // (a YAML mapping's keys are unique; keeping the last one would hide the first).
        let e = parse_knowledge_md("---\nname: a\ndescription: d\ntype: reference\nstatus: ready\nname: b\n---\n").unwrap_err();
        assert_eq!((e.code(), e), ("knowledge_front_matter_invalid", KnowledgeError::FrontMatterKeyTwice { key: "name".into(), first: 2, line: 6 }));
        assert_eq!(
            parse_knowledge_md("---\nruntime:\n  mode: data\n  mode: instructions\n---\n").unwrap_err(),
            KnowledgeError::FrontMatterKeyTwice { key: "runtime.mode".into(), first: 3, line: 4 }
        );
        // The same nested key under two parents is two keys.
        assert!(parse_knowledge_md("---\nname: a\ndescription: d\ntype: t\nstatus: s\nx:\n  mode: 1\ny:\n  mode: 2\n---\n").is_ok());
        // hostile input never panics
        for s in ["---", "---\n:\n---", "---\n- a\n---", "\u{feff}---\r\nname: a\r\n---\r\n", "---\nk: \"\n---\n"] {
            let _ = parse_knowledge_md(s);
        }
    }

    #[test]
    fn unit_names_from_each_layout() {
        assert_eq!(unit_name("units/scrape-config.md").as_deref(), Some("scrape-config"));
        assert_eq!(unit_name("compiled/splits/Brief/facts.md").as_deref(), Some("splits-brief-facts"));
        assert_eq!(unit_name("documents/founder persona.md").as_deref(), Some("founder-persona"));
        for no in ["units/a/b.md", "units/x.txt", "sources/a.md", "KNOWLEDGE.md", "units/.hidden.md", "documents//a.md", "units/.md"] {
            assert_eq!(unit_name(no), None, "{no}");
        }
    }

    /// Every markdown file under a context folder is a unit or has a reason it is not,
    /// which the catalog reports (runtime standard, Step 1: nothing left out unseen).
    #[test]
    fn a_context_file_that_is_no_unit_says_why() {
        for yes in ["units/scrape-config.md", "compiled/a/b.md", "documents/x y.md", "sources/a.md", "units/x.txt", "KNOWLEDGE.md"] {
            assert_eq!(not_a_unit(yes), None, "{yes}");
        }
        assert!(not_a_unit("units/a/b.md").is_some_and(|w| w.contains("directly in units/") && w.contains("compiled/")));
        assert!(not_a_unit("units\\a\\b.md").is_some_and(|w| w.contains("directly in units/")));
        assert!(not_a_unit("compiled//a.md").is_some_and(|w| w.contains("empty")));
        let long = format!("documents/{}.md", "a".repeat(129));
        assert!(not_a_unit(&long).is_some_and(|w| w.contains("128")));
        assert_eq!(not_a_unit(&format!("documents/{}.md", "a".repeat(128))), None);
    }

    /// The name rule before Unicode names, for every ASCII character: ASCII names are
    /// unchanged, so existing packs and the eval sets' expected names are too.
    fn ascii_rule(stem: &str) -> String {
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c.to_ascii_lowercase() } else { '-' }).collect()
    }

    /// Audit finding 01: letters and digits of every script are kept (lowercased, with their
    /// combining marks), so `units/部署.md`, `units/限额.md` and `units/回滚.md` are three units,
    /// not three files named `--` of which one is served (runtime standard, Step 4: each
    /// context file is context to select). ASCII names are exactly what they were.
    #[test]
    fn unit_names_keep_letters_and_digits_of_every_script() {
        for (path, name) in [
            ("units/部署.md", "部署"),
            ("units/限额.md", "限额"),
            ("units/回滚.md", "回滚"),
            ("units/Überblick.md", "überblick"),
            ("units/ΣΥΝΟΨΗ-2.md", "συνοψη-2"),
            ("units/Развёртывание.md", "развёртывание"),
            ("units/استقرار.md", "استقرار"),
            ("units/स्थापना.md", "स्थापना"),
            ("units/การติดตั้ง.md", "การติดตั้ง"),
            ("units/배포.md", "배포"),
            ("units/Ｄｅｐｌｏｙ１.md", "ｄｅｐｌｏｙ１"),
            // a decomposed (NFD) name is named in NFC, never `cafe-`: the name a probe or a
            // precomposed twin spells (§21.3.4: canonically equivalent text is one text)
            ("units/cafe\u{301}.md", "caf\u{e9}"),
            ("units/caf\u{e9}.md", "caf\u{e9}"),
            ("units/\u{30C6}\u{3099}\u{30FC}\u{30BF}.md", "\u{30C7}\u{30FC}\u{30BF}"),
            ("compiled/手册/部署 窗口.md", "手册-部署-窗口"),
            // what is neither a letter, a digit nor a mark is `-`, as in ASCII
            ("units/部署（生产）.md", "部署-生产-"),
            ("units/deploy\u{3000}rules.md", "deploy-rules"),
            ("units/🚀launch.md", "-launch"),
        ] {
            assert_eq!(unit_name(path).as_deref(), Some(name), "{path}");
        }
        // every ASCII character is named as it always was
        for b in 0x20u8..0x7f {
            let c = b as char;
            if matches!(c, '/' | '\\') {
                continue;
            }
            let stem = format!("A{c}z");
            assert_eq!(unit_name(&format!("units/{stem}.md")), Some(ascii_rule(&stem)), "{c:?}");
        }
        assert_eq!(unit_name("units/Deploys.md").as_deref(), Some("deploys"));
        assert_eq!(unit_name("documents/a+b (1).md").as_deref(), Some("a-b--1-"));
        // at most 128 characters, whatever their bytes
        assert_eq!(unit_name(&format!("units/{}.md", "部".repeat(128))).map(|n| n.chars().count()), Some(128));
        assert_eq!(unit_name(&format!("units/{}.md", "部".repeat(129))), None);
        assert_eq!(unit_name(&format!("units/{}.md", "a".repeat(129))), None);
    }

    /// Audit finding 01: two files of one layout that give one name are a clash (only the
    /// first is served), reported by the pack; a `units/` file over a `documents/` one is
    /// the documented precedence (runtime standard, Step 4), a collision as before.
    #[test]
    fn files_of_one_layout_that_give_one_name_clash_and_precedence_does_not() {
        let spec = |files: &[&str]| PackSpec { id: "p".into(), knowledge_md: KMD.into(), files: files.iter().map(|f| f.to_string()).collect(), digest: None };
        let zh = read_pack(&spec(&["units/部署.md", "units/限额.md", "units/回滚.md"]), |n, _| Some(n.to_string())).unwrap();
        assert_eq!(zh.manifest.entries.iter().map(|e| e.path.as_deref().unwrap()).collect::<Vec<_>>(), ["units/回滚.md", "units/部署.md", "units/限额.md"]);
        assert!(zh.clashes.is_empty() && zh.collisions.is_empty());
        let p = read_pack(&spec(&["units/deploys.md", "documents/deploys.md", "units/Deploys.md", "compiled/a/b.md", "compiled/a-b.md"]), |n, _| Some(n.to_string())).unwrap();
        assert_eq!(
            p.clashes,
            [
                NameClash { name: "a-b".into(), paths: vec!["compiled/a-b.md".into(), "compiled/a/b.md".into()] },
                NameClash { name: "deploys".into(), paths: vec!["units/Deploys.md".into(), "units/deploys.md".into()] },
            ]
        );
        assert_eq!(p.collisions, ["deploys"], "documents/deploys.md loses to units/ by precedence");
        assert_eq!(p.manifest.entries.iter().map(|e| e.path.as_deref().unwrap()).collect::<Vec<_>>(), ["compiled/a-b.md", "units/Deploys.md"]);
        assert_eq!(name_clashes(&spec(&["units/Deploys.md", "units/deploys.md"]).files), p.clashes[1..]);
        assert!(name_clashes(&spec(&["units/b.md", "compiled/b.md", "documents/b.md"]).files).is_empty());
        // a decomposed and a precomposed spelling of one name look alike: one name, a clash
        let twins = name_clashes(&spec(&["units/cafe\u{301}.md", "units/caf\u{e9}.md"]).files);
        assert_eq!(twins.iter().map(|c| (c.name.as_str(), c.paths.len())).collect::<Vec<_>>(), [("caf\u{e9}", 2)]);
        assert_eq!(
            p.clashes[1].to_string(),
            "files units/Deploys.md, units/deploys.md give one unit name \"deploys\", so only units/Deploys.md is served"
        );
    }

    /// Audit finding 07: a lone CR ends a front-matter line (YAML 1.2 §5.4 takes LF, CRLF and
    /// CR), as CRLF does; the guide is the rest, as written.
    #[test]
    fn front_matter_lines_may_end_in_a_lone_cr() {
        let (lf, guide) = parse_knowledge_md(KMD).unwrap();
        for eol in ["\r", "\r\n"] {
            let text = KMD.replace('\n', eol);
            let (m, g) = parse_knowledge_md(&text).unwrap();
            assert_eq!(m, lf, "{eol:?}");
            assert_eq!(g, guide.replace('\n', eol));
        }
        let mixed = "\u{feff}---\rname: a\r\ndescription: d\ntype: t\rstatus: ready\r---\rGuide\r";
        let (m, g) = parse_knowledge_md(mixed).unwrap();
        assert_eq!((m.name.as_str(), m.status.as_str(), g), ("a", "ready", "Guide\r"));
        // lines are still counted, and a front matter that is not closed is still refused
        assert_eq!(parse_knowledge_md("---\rname: a\r- stray\r---\r").unwrap_err(), KnowledgeError::FrontMatterLine { line: 3, text: "- stray".into() });
        assert_eq!(parse_knowledge_md("---\rname: a\r").unwrap_err(), KnowledgeError::FrontMatterUnclosed);
        assert_eq!(parse_knowledge_md("--- name: a\r---\r").unwrap_err(), KnowledgeError::FrontMatterMissing);
    }

    /// Audit finding 09: a path (or catalog field) holding a bidi, zero-width or control
    /// character, or a line break, is found at its character; scripts are not.
    #[test]
    fn hidden_characters_in_paths_and_catalog_fields_are_found() {
        assert_eq!(line_hidden_character("units/dep\u{202e}loys.md").map(|(at, c, _)| (at, c)), Some((10, '\u{202e}')));
        assert_eq!(line_hidden_character("units/dep\u{200b}loys.md").map(|(at, c, _)| (at, c)), Some((10, '\u{200b}')));
        assert_eq!(line_hidden_character("units/dep\u{1}loys.md").map(|(at, c, _)| (at, c)), Some((10, '\u{1}')));
        for (p, c) in [("units/a\tb.md", '\t'), ("units/a\nb.md", '\n'), ("units/a\u{2028}b.md", '\u{2028}'), ("a\u{2029}\u{202e}", '\u{2029}'), ("a\u{202e}\n", '\u{202e}')] {
            assert_eq!(line_hidden_character(p).map(|(_, c, _)| c), Some(c), "{p:?}");
        }
        for ok in ["units/部署.md", "units/cafe\u{301}.md", "documents/Überblick/ΣΥΝΟΨΗ.md", "units/a b.md"] {
            assert_eq!(line_hidden_character(ok), None, "{ok:?}");
        }
        // a name is not prose: what text allows beside the right neighbours (a Persian ZWNJ,
        // a mark in right-to-left text, an emoji's selector) is refused in it, as the
        // on-disk loader refuses it, so two names that look alike cannot both be served
        for (p, c) in [("units/کتاب\u{200C}ها.md", '\u{200C}'), ("units/שלום\u{200F}.md", '\u{200F}'), ("units/\u{2764}\u{FE0F}.md", '\u{FE0F}')] {
            assert_eq!(line_hidden_character(p).map(|(_, c, _)| c), Some(c), "{p:?}");
        }
        let meta = |name: &str, trust: &str| {
            let (m, _) = parse_knowledge_md(&format!("---\nname: {name}\ndescription: d\ntype: reference\nstatus: ready\ntrust: {trust}\nsources: x\u{202e}y\n---\n")).unwrap();
            m
        };
        assert_eq!(meta("部署手册", "high").check_catalog_fields(&["trust"]), Ok(()), "a field no catalog lists is not checked");
        let e = meta("bidi\u{202E}pack", "high").check_catalog_fields(&["trust"]).unwrap_err();
        assert!(matches!(e, KnowledgeError::FieldHidden { ref field, at: 5, code: 0x202E, .. } if field == "name"), "{e:?}");
        assert_eq!(e.code(), "knowledge_front_matter_invalid");
        assert!(e.to_string().starts_with("KNOWLEDGE.md front matter field `name` holds U+202E, "), "{e}");
        let e = meta("nul\0pack", "high").check_catalog_fields(&[]).unwrap_err();
        assert!(matches!(e, KnowledgeError::FieldHidden { ref field, code: 0, .. } if field == "name"), "{e:?}");
        let e = meta("ops", "hi\u{200b}gh").check_catalog_fields(&["trust"]).unwrap_err();
        assert!(matches!(e, KnowledgeError::FieldHidden { ref field, code: 0x200B, .. } if field == "trust"), "{e:?}");
    }

    #[test]
    fn pack_manifest_is_sorted_and_units_win_collisions() {
        let spec = PackSpec {
            id: "p".into(),
            knowledge_md: KMD.into(),
            files: vec!["documents/b.md".into(), "units/b.md".into(), "units/a.md".into(), "licenses/LICENSE".into(), "compiled/c.md".into()],
            digest: None,
        };
        let p = read_pack(&spec, |name, _| Some(format!("T {name}"))).unwrap();
        let names: Vec<(&str, &str, Option<&str>)> =
            p.manifest.entries.iter().map(|e| (e.name.as_str(), e.description.as_str(), e.path.as_deref())).collect();
        assert_eq!(names, [("a", "T a", Some("units/a.md")), ("b", "T b", Some("units/b.md")), ("c", "T c", Some("compiled/c.md"))]);
        assert_eq!(p.collisions, ["b"]);
        assert_eq!(p.manifest.agent_id, "p");
        let none = PackSpec { files: vec!["licenses/x.md".into()], ..spec.clone() };
        assert_eq!(read_pack(&none, |_, _| Some(String::new())).unwrap_err().code(), "knowledge_pack_empty");
        for id in ["../x", "..", ".", ""] {
            let bad = PackSpec { id: id.into(), ..spec.clone() };
            assert_eq!(read_pack(&bad, |_, _| Some(String::new())).unwrap_err().code(), "knowledge_pack_id_invalid", "{id:?}");
        }
    }

    #[test]
    fn titles_and_document_detection() {
        assert_eq!(unit_title("a-b", "# Config > Scrape\nbody"), "Config > Scrape");
        assert_eq!(unit_title("a-b", "body only"), "a b");
        let doc = serde_json::json!({"knowledge_pack": {"id": "p", "knowledge_md": KMD, "files": ["units/a.md"]}}).to_string();
        assert_eq!(PackDocument::detect(&doc).map(|d| d.knowledge_pack.files), Some(vec!["units/a.md".to_string()]));
        assert_eq!(PackDocument::detect(r#"{"agent_id":"x","entries":[]}"#), None);
    }

    /// Facts whose units cannot be read: only the derived-blob cache answers.
    struct CacheOnly<'a>(&'a crate::store::MemoryFacts);

    impl Facts for CacheOnly<'_> {
        fn get(&self, uri: &str) -> Result<Option<crate::store::Fact>, crate::store::StoreError> {
            Err(crate::store::StoreError(format!("read {uri}")))
        }
        fn versions(&self, _: &str) -> Result<Vec<String>, crate::store::StoreError> {
            Ok(vec![])
        }
        fn cached(&self, key: &str) -> Option<Vec<u8>> {
            self.0.cached(key)
        }
    }

    #[test]
    fn precomputed_index_is_used_without_reading_units() {
        let mut facts = crate::store::MemoryFacts::new();
        for (p, c) in [("units/water.md", "# Watering\nWater deeply twice a week."), ("units/soil.md", "# Soil\nWork compost into the bed.")] {
            facts.insert(crate::store::Fact { uri: format!("path:{p}"), content: c.into(), ..Default::default() });
        }
        let spec = PackSpec { id: "g".into(), knowledge_md: KMD.into(), files: vec!["units/soil.md".into(), "units/water.md".into()], digest: Some("ab".repeat(32)) };
        let built = open(&spec, &facts, None).unwrap();
        // the second open reads nothing but the cached blob
        let cached = open(&spec, &CacheOnly(&facts), None).unwrap();
        let entries = |o: &Opened| (0..o.tokens.len()).map(|d| o.entry(d).unwrap().into_owned()).collect::<Vec<_>>();
        assert!(cached.table.is_some() && cached.manifest.entries.is_empty(), "a cached pack's entries stay in its table");
        assert_eq!(entries(&cached), built.manifest.entries);
        assert_eq!(Manifest { entries: Vec::new(), ..built.manifest.clone() }, cached.manifest);
        assert!(cached.entry(2).is_none());
        assert_eq!(cached.tokens, built.tokens);
        let w = crate::rank::Weights::default();
        assert_eq!(cached.ranker.rank("how often to water", None, &w), built.ranker.rank("how often to water", None, &w));
        assert_eq!(built.ranker.rank("how often to water", None, &w)[0].name, "water");
        // another digest misses the cache: the units must be read, and here they cannot be
        let other = PackSpec { digest: Some("cd".repeat(32)), ..spec.clone() };
        assert_eq!(open(&other, &CacheOnly(&facts), None).err().map(|e| e.code().to_string()).as_deref(), Some("recall_backend_unavailable"));
        // without a digest the pack is fingerprinted from its files, and still cached
        let plain = PackSpec { digest: None, ..spec };
        assert_eq!(entries(&open(&plain, &facts, None).unwrap()), built.manifest.entries);
    }

    #[test]
    fn load_reads_path_facts_and_skips_unreadable_files() {
        let mut facts = crate::store::MemoryFacts::new();
        for (p, c) in [("units/a.md", "# Alpha\nalpha body"), ("units/b.md", "no title")] {
            facts.insert(crate::store::Fact { uri: format!("path:{p}"), content: c.into(), ..Default::default() });
        }
        let spec = PackSpec { id: "p".into(), knowledge_md: KMD.into(), files: vec!["units/a.md".into(), "units/b.md".into(), "units/gone.md".into()], digest: None };
        let (pack, units) = load(&spec, &facts).unwrap();
        let got: Vec<(&str, &str)> = pack.manifest.entries.iter().map(|e| (e.name.as_str(), e.description.as_str())).collect();
        assert_eq!(got, [("a", "Alpha"), ("b", "b")]);
        assert_eq!(units.len(), 2);
        assert!(units.iter().all(|u| u.as_ref().is_some_and(|r| r.source == "fallback_path")));
    }

    /// Blank lines and `#` comments in the front matter are skipped; a key given with no
    /// value (a mapping or list that never came, or a parent of nested keys) is kept, empty.
    #[test]
    fn front_matter_skips_blank_and_comment_lines_and_keeps_empty_keys() {
        let (m, _) = parse_knowledge_md("---\nname: a\n\n# the catalog fields\ndescription: d\ntype: t\nstatus: ready\nlicense:\nruntime:\n  mode: data\n---\nbody").unwrap();
        let fields: Vec<(&str, &str)> = m.fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(fields, [("license", ""), ("runtime", ""), ("runtime.mode", "data")]);
    }

    /// A front-matter error names the file's line (the `---` is line 1).
    #[test]
    fn front_matter_errors_name_the_line() {
        assert_eq!(parse_knowledge_md("---\nname: a\n- stray\n---\n").unwrap_err(), KnowledgeError::FrontMatterLine { line: 3, text: "- stray".into() });
        assert_eq!(parse_knowledge_md("---\nname: a\n: v\n---\n").unwrap_err(), KnowledgeError::FrontMatterLine { line: 3, text: ": v".into() });
    }

    /// A title line ends at a lone CR too (audit finding 07: CR-only files are text as
    /// LF ones are), not at the end of the file.
    #[test]
    fn a_title_line_ends_at_a_lone_cr() {
        for eol in ["\n", "\r\n", "\r"] {
            assert_eq!(unit_title("x", &format!("# Deploy windows{eol}Monday to Thursday.{eol}")), "Deploy windows", "{eol:?}");
        }
    }

    /// A `# ` line with no title text is no title: the unit name stands in.
    #[test]
    fn an_empty_heading_is_no_title() {
        assert_eq!(unit_title("scrape-config", "#   \nbody"), "scrape config");
    }

    /// A pack id is 1–128 characters: 128 is taken, 129 refused.
    #[test]
    fn a_pack_id_of_128_characters_is_taken_and_129_refused() {
        let spec = |id: String| PackSpec { id, knowledge_md: KMD.into(), files: vec!["units/a.md".into()], digest: None };
        assert!(read_pack(&spec("p".repeat(128)), |_, _| Some(String::new())).is_ok());
        assert_eq!(read_pack(&spec("p".repeat(129)), |_, _| Some(String::new())).unwrap_err().code(), "knowledge_pack_id_invalid");
    }

    /// A pack is ranked as manifest `v1` of agent `{id}` under the `knowledge` deployment.
    #[test]
    fn a_pack_is_ranked_as_manifest_v1_under_the_knowledge_deployment() {
        let spec = PackSpec { id: "p".into(), knowledge_md: KMD.into(), files: vec!["units/a.md".into()], digest: None };
        let m = read_pack(&spec, |_, _| Some(String::new())).unwrap().manifest;
        assert_eq!((m.agent_id.as_str(), m.deployment.as_str(), m.manifest_version.as_str()), ("p", PACK_DEPLOYMENT, "v1"));
        assert_eq!(PACK_DEPLOYMENT, "knowledge");
    }

    fn garden() -> (crate::store::MemoryFacts, PackSpec) {
        let mut facts = crate::store::MemoryFacts::new();
        for (p, c) in [("units/water.md", "# Watering\nWater deeply twice a week."), ("units/soil.md", "# Soil\nWork compost into the bed."), ("units/sun.md", "# Sun\nSix hours of sun.")] {
            facts.insert(crate::store::Fact { uri: format!("path:{p}"), content: c.into(), ..Default::default() });
        }
        (facts, PackSpec { id: "g".into(), knowledge_md: KMD.into(), files: vec!["units/soil.md".into(), "units/sun.md".into(), "units/water.md".into()], digest: Some("ab".repeat(32)) })
    }

    /// A pack document whose digest finds a cached index opens from it alone; any other
    /// (no digest, another digest, not a pack document) does not.
    #[test]
    fn a_pack_document_opens_from_its_cached_index_by_its_digest() {
        let (facts, spec) = garden();
        let doc = |digest: Option<&str>| serde_json::json!({"knowledge_pack": {"id": "g", "knowledge_md": KMD, "files": ["units/soil.md", "units/sun.md", "units/water.md"], "digest": digest}}).to_string();
        let digest = "ab".repeat(32);
        assert!(open_cached(&doc(Some(&digest)), &facts, None).is_none(), "nothing cached yet");
        let built = open(&spec, &facts, None).unwrap();
        let cached = open_cached(&doc(Some(&digest)), &CacheOnly(&facts), None).expect("opened from the cache alone");
        assert_eq!(cached.tokens, built.tokens);
        assert!(cached.table.as_ref().is_some_and(|t| t.len() == 3 && !t.is_empty()));
        assert!(PackTable { texts: Vec::new().into(), text_start: vec![0].into() }.is_empty());
        assert!(open_cached(&doc(Some(&"cd".repeat(32))), &facts, None).is_none());
        assert!(open_cached(&doc(None), &facts, None).is_none());
        assert!(open_cached(r#"{"agent_id": "x", "entries": []}"#, &facts, None).is_none());
    }

    /// A digest that is not 64 lowercase hex digits is not the host's content digest: the
    /// pack is fingerprinted from its files instead, so a changed file is never served
    /// from the index of the old one.
    #[test]
    fn a_malformed_digest_is_ignored_and_the_files_fingerprint_the_pack() {
        for bad in ["abc".to_string(), "AB".repeat(32), "zz".repeat(32), "ab".repeat(33)] {
            let (mut facts, spec) = garden();
            let spec = PackSpec { digest: Some(bad.clone()), ..spec };
            let w = crate::rank::Weights::default();
            assert_eq!(open(&spec, &facts, None).unwrap().ranker.rank("quokka", None, &w)[0].score, 0.0);
            facts.insert(crate::store::Fact { uri: "path:units/soil.md".into(), content: "# Soil\nA quokka digs the bed.".into(), ..Default::default() });
            let again = open(&spec, &facts, None).unwrap();
            let top = &again.ranker.rank("quokka", None, &w)[0];
            assert!(top.name == "soil" && top.score > 0.0, "{bad}: {top:?}");
        }
    }

    /// A cached pack index whose tables disagree with each other is not used (`None`:
    /// the pack is read and indexed again).
    #[test]
    fn a_cached_pack_index_of_the_wrong_shape_is_not_used() {
        let (facts, spec) = garden();
        open(&spec, &facts, None).unwrap();
        let key = pack_key("g", &"ab".repeat(32));
        assert!(from_blob("g", &key, &facts, None).is_some(), "two starts per unit and one more (3 units)");
        let good: PackIndex = crate::rank::column::decode(facts.cached(&key).unwrap()).unwrap();
        let plant_with = |texts: Vec<u8>, starts: Vec<u32>, tokens: &[u32]| {
            facts.cache(&key, &crate::rank::column::encode(&PackIndexRef { texts: texts.into(), text_start: starts.into(), index: &good.index, tokens }).unwrap());
            from_blob("g", &key, &facts, None).is_some()
        };
        let plant = |texts: Vec<u8>, starts: Vec<u32>| plant_with(texts, starts, &good.tokens);
        let (texts, starts) = (good.texts.to_vec(), good.text_start.to_vec());
        assert!(plant(texts.clone(), starts.clone()), "the same tables again");
        let mut longer = starts.clone();
        longer.push(*starts.last().unwrap());
        assert!(!plant(texts.clone(), longer), "a start more than two per unit");
        // a unit more in the table and the token counts than in the ranker's index
        let (mut more, mut tokens) = (starts.clone(), good.tokens.clone());
        more.extend([*starts.last().unwrap(); 2]);
        tokens.push(1);
        assert!(!plant_with(texts.clone(), more, &tokens), "tables of 4 units, an index of 3");
        let mut past = starts.clone();
        *past.last_mut().unwrap() += 1;
        assert!(!plant(texts.clone(), past), "a string past the end of the texts");
        let mut descending = starts;
        descending[1] = descending[2] + 1;
        assert!(!plant(texts, descending), "starts that descend");
    }
}
