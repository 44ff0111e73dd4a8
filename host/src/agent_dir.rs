//! Agent directories as fact stores: `manifest.json` + `units/<name>.md`, the format of
//! `shared/eval/agents/<id>/`. Each entry's unit file becomes an instruction fact under
//! its `fact_uri` (and its version list under the unit key); `path` entries are read
//! relative to the directory and exposed as `path:{path}` (§21.6.1 fallback).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use sha2::Digest;
use serde_json::{json, Value};

use crate::engine::{Blob, FactSource, DERIVED_PREFIX};

/// An in-memory key-value fact store, with a cache of engine-derived blobs (ranker
/// indexes) that is kept in memory and, when `derived_dir` is set, on disk.
#[derive(Debug, Default)]
pub struct MemFacts {
    map: BTreeMap<String, Vec<u8>>,
    derived: Mutex<BTreeMap<String, Blob>>,
    derived_dir: Option<PathBuf>,
}

impl MemFacts {
    pub fn insert(&mut self, key: String, value: Vec<u8>) {
        self.map.insert(key, value);
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// The derived blobs held in memory, (key, size in bytes), by key (for benchmarks).
    pub fn derived_sizes(&self) -> Vec<(String, usize)> {
        self.derived.lock().map(|d| d.iter().map(|(k, v)| (k.clone(), v.len())).collect()).unwrap_or_default()
    }
    /// Persist derived blobs under `dir` (one file per key) and read them back.
    pub fn with_derived_dir(mut self, dir: PathBuf) -> Self {
        self.derived_dir = Some(dir);
        self
    }

    fn derived_file(&self, key: &str) -> Option<PathBuf> {
        let name = key.strip_prefix(DERIVED_PREFIX)?;
        let safe = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b':' || b == b'-');
        safe.then(|| self.derived_dir.as_ref().map(|d| d.join(format!("{}.postcard", name.replace(':', "-")))))?
    }
}

impl FactSource for MemFacts {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.get_shared(key)?.map(Arc::unwrap_or_clone))
    }
    fn get_shared(&self, key: &str) -> Result<Option<Blob>, String> {
        if let Some(v) = self.map.get(key) {
            return Ok(Some(Arc::new(v.clone())));
        }
        if key.starts_with(DERIVED_PREFIX) {
            if let Some(v) = self.derived.lock().map_err(|e| e.to_string())?.get(key) {
                return Ok(Some(v.clone()));
            }
            // Read from disk once, then served from memory.
            let blob = self.derived_file(key).and_then(|f| std::fs::read(f).ok()).map(Arc::new);
            if let Some(b) = &blob {
                self.derived.lock().map_err(|e| e.to_string())?.insert(key.to_string(), b.clone());
            }
            return Ok(blob);
        }
        Ok(None)
    }
    fn keys(&self) -> Result<Vec<String>, String> {
        Ok(self.map.keys().cloned().collect())
    }
    fn set_derived(&self, key: &str, value: Vec<u8>) -> Result<(), String> {
        if let Some(f) = self.derived_file(key) {
            // Write-then-rename, so a concurrent reader never sees half a blob.
            if let Some(dir) = f.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let tmp = f.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, &value).is_ok() {
                let _ = std::fs::rename(&tmp, &f);
            }
        }
        self.derived.lock().map_err(|e| e.to_string())?.insert(key.to_string(), Arc::new(value));
        Ok(())
    }
}

/// A loaded agent directory.
pub struct AgentDir {
    pub root: PathBuf,
    pub manifest_json: String,
    pub agent_id: String,
    pub facts: Arc<MemFacts>,
    /// Units whose file could not be read, each with why (`no file at …`, or the read's
    /// error: not UTF-8, a directory, permission denied): reported, then left to the
    /// engine to handle.
    /// Each with its entry's field that names the file (`fact_uri` or `path`).
    pub missing: Vec<(String, &'static str, String)>,
}

/// Load `dir` (or a `manifest.json` path inside it).
pub fn load(dir: &Path) -> Result<AgentDir> {
    let (root, manifest_path) = if dir.is_file() {
        (dir_of(dir), dir.to_path_buf())
    } else {
        (dir.to_path_buf(), dir.join("manifest.json"))
    };
    let manifest_json = read_text(&manifest_path)?;
    let manifest: Value = serde_json::from_str(&manifest_json).map_err(|e| crate::apierror::ApiError::new(400, "invalid_json", format!("{} is not valid JSON: {e}", manifest_path.display())))?;
    let Some(entries) = manifest.get("entries").and_then(Value::as_array) else {
        return Err(crate::apierror::ApiError::new(400, "manifest_invalid", format!("{} has no `entries` array", manifest_path.display())).into());
    };
    let agent_id = manifest.get("agent_id").and_then(Value::as_str).unwrap_or_default().to_string();
    let authored_at = manifest.get("published_at").and_then(Value::as_str).map(str::to_string);
    let mut facts = MemFacts::default();
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut missing = Vec::new();
    let canon_root = canonical_root(&root)?;
    for e in entries {
        let name = e.get("name").and_then(Value::as_str).unwrap_or_default();
        let fact_uri = e.get("fact_uri").and_then(Value::as_str).filter(|s| !s.is_empty());
        let path = e.get("path").and_then(Value::as_str).filter(|s| !s.is_empty());
        if let Some(uri) = fact_uri {
            let file = root.join("units").join(format!("{name}.md"));
            match unit_file(&root, &canon_root, name) {
                Ok(content) => {
                    let (key, _, version) = crate::db::split_fact_uri(uri).unwrap_or_default();
                    let fact = json!({
                        "uri": uri, "content": content, "version": version, "interpret_as": "instruction",
                        "authored_by": format!("file:{}", file.display()), "authored_at": authored_at,
                        "source_trust": 1.0,
                        "sha256": crate::engine::hex(&sha2::Sha256::digest(content.as_bytes())),
                    });
                    facts.insert(uri.to_string(), fact.to_string().into_bytes());
                    if !key.is_empty() {
                        versions.entry(key).or_default().push(version);
                    }
                }
                Err(why) => missing.push((name.to_string(), "fact_uri", why)),
            }
        }
        if let Some(p) = path {
            let read = read_unit(&canon_root, &root.join(p));
            match read {
                Ok(content) => {
                    let fact = json!({"uri": format!("path:{p}"), "content": content, "interpret_as": "instruction"});
                    facts.insert(format!("path:{p}"), fact.to_string().into_bytes());
                }
                Err(why) => {
                    if fact_uri.is_none() {
                        missing.push((name.to_string(), "path", why));
                    }
                }
            }
        }
    }
    for (key, vs) in versions {
        facts.insert(key, serde_json::to_vec(&vs)?);
    }
    // Ranker indexes the engine derives are cached beside the compiled component,
    // keyed by a fingerprint of the units, so a second run skips the index build.
    if let Some(dir) = crate::engine::default_cache_dir() {
        facts = facts.with_derived_dir(dir.join("index"));
    }
    Ok(AgentDir { root, manifest_json, agent_id, facts: Arc::new(facts), missing })
}

/// A text file the user gives (a manifest, a probe set, a Markdown file to migrate),
/// without a leading UTF-8 byte-order mark: editors on Windows write one, and the JSON
/// and Markdown read here begin after it.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    text_of(path, bytes).map_err(anyhow::Error::msg)
}

/// The text of `bytes` read from `path`, past a leading byte-order mark ([`read_text`]);
/// bytes that are not UTF-8 are said with their line and byte ([`not_utf8`]).
pub fn text_of(path: &Path, bytes: Vec<u8>) -> Result<String, String> {
    let text = String::from_utf8(bytes).map_err(|e| format!("{} is not UTF-8 text: {}", path.display(), not_utf8(e.as_bytes(), e.utf8_error().valid_up_to())))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// Where `bytes` stop being UTF-8 (`at`, the length of their valid start), said so that
/// the file can be fixed: the line and byte, or that the file is UTF-16.
pub fn not_utf8(bytes: &[u8], at: usize) -> String {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return "it is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8".into();
    }
    let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at - bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1) + 1;
    format!("byte {at} (line {line}, byte {column} of the line) is 0x{:02X}, which is not UTF-8; convert the file to UTF-8 (for example `iconv -f latin1 -t utf-8`)", bytes.get(at).copied().unwrap_or_default())
}

/// The directory of a manifest file `f`: its parent, `.` for a bare file name (whose
/// parent is the empty path, which every path would start with).
pub fn dir_of(f: &Path) -> PathBuf {
    match f.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The agent directory `root`, canonical: what unit files must resolve inside. One that
/// cannot be resolved is an error, never a root every path is inside.
pub fn canonical_root(root: &Path) -> Result<PathBuf> {
    root.canonicalize().with_context(|| format!("cannot resolve the agent directory {}", root.display()))
}

/// The text of the unit `name` of the agent directory `root` (canonical: `canon_root`),
/// `units/<name>.md`, read as [`read_unit`] reads it: never outside the directory.
pub fn unit_file(root: &Path, canon_root: &Path, name: &str) -> Result<String, String> {
    let inside = !name.is_empty() && !name.contains(['/', '\\']) && name != "..";
    if !inside {
        return Err(format!("{name:?} cannot name a file in {}", root.join("units").display()));
    }
    read_unit(canon_root, &root.join("units").join(format!("{name}.md")))
}

/// A unit file's text, or why it cannot be had: `no file at …` when there is none; a file
/// that resolves (through a symlink or `..`) outside `root` (the agent directory,
/// canonical) is never read; nor is anything but a regular file (a FIFO would block the
/// read, a device never end it); else the read's own error (not UTF-8, a symlink loop,
/// permission denied).
fn read_unit(root: &Path, file: &Path) -> Result<String, String> {
    let cannot = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => format!("no file at {}", file.display()),
        _ => format!("cannot read {}: {e}", file.display()),
    };
    let real = file.canonicalize().map_err(cannot)?;
    if !real.starts_with(root) {
        return Err(format!("{} resolves to {}, outside the agent directory {}: unit files are read only inside it", file.display(), real.display(), root.display()));
    }
    let kind = std::fs::metadata(&real).map_err(cannot)?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() { "a directory" } else { "not a regular file (a FIFO, socket or device)" };
        return Err(format!("cannot read {}: it is {what}; a unit is a Markdown file", file.display()));
    }
    // as a manifest is read: past a byte-order mark (which the admission lint would
    // refuse at publish, and a recall would serve), and UTF-8 or said where it is not
    text_of(file, std::fs::read(&real).map_err(cannot)?)
}
