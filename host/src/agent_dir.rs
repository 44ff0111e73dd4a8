//! Agent directories as fact stores: `manifest.json` + `units/<name>.md`, the format of
//! `shared/eval/agents/<id>/`. Each entry's unit file becomes an instruction fact under
//! its `fact_uri` (and its version list under the unit key); `path` entries are read
//! relative to the directory and exposed as `path:{path}` (§21.6.1 fallback).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::engine::FactSource;

/// An in-memory key-value fact store.
#[derive(Debug, Default, Clone)]
pub struct MemFacts {
    map: BTreeMap<String, Vec<u8>>,
}

impl MemFacts {
    pub fn insert(&mut self, key: String, value: Vec<u8>) {
        self.map.insert(key, value);
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

impl FactSource for MemFacts {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(self.map.get(key).cloned())
    }
    fn keys(&self) -> Result<Vec<String>, String> {
        Ok(self.map.keys().cloned().collect())
    }
}

/// A loaded agent directory.
pub struct AgentDir {
    pub root: PathBuf,
    pub manifest_json: String,
    pub agent_id: String,
    pub facts: Arc<MemFacts>,
    /// Unit names whose file was missing (reported, then left to the engine to handle).
    pub missing: Vec<String>,
}

fn split_uri(uri: &str) -> Option<(String, String)> {
    // instruction:{d}/{a}/{unit}/{version} -> (unit key, version)
    let rest = uri.strip_prefix("instruction:")?;
    let (key, version) = rest.rsplit_once('/')?;
    Some((format!("instruction:{key}"), version.to_string()))
}

/// Load `dir` (or a `manifest.json` path inside it).
pub fn load(dir: &Path) -> Result<AgentDir> {
    let (root, manifest_path) = if dir.is_file() {
        (dir.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(".")), dir.to_path_buf())
    } else {
        (dir.to_path_buf(), dir.join("manifest.json"))
    };
    let manifest_json = std::fs::read_to_string(&manifest_path).with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let manifest: Value = serde_json::from_str(&manifest_json).with_context(|| format!("{} is not valid JSON", manifest_path.display()))?;
    let Some(entries) = manifest.get("entries").and_then(Value::as_array) else {
        bail!("{} has no `entries` array", manifest_path.display());
    };
    let agent_id = manifest.get("agent_id").and_then(Value::as_str).unwrap_or_default().to_string();
    let authored_at = manifest.get("published_at").and_then(Value::as_str).map(str::to_string);
    let mut facts = MemFacts::default();
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut missing = Vec::new();
    let canon_root = root.canonicalize().unwrap_or_else(|_| root.clone());
    for e in entries {
        let name = e.get("name").and_then(Value::as_str).unwrap_or_default();
        let fact_uri = e.get("fact_uri").and_then(Value::as_str).filter(|s| !s.is_empty());
        let path = e.get("path").and_then(Value::as_str).filter(|s| !s.is_empty());
        if let Some(uri) = fact_uri {
            let file = root.join("units").join(format!("{name}.md"));
            // Never read outside the agent directory.
            let inside = !name.is_empty() && !name.contains(['/', '\\']) && name != "..";
            match inside.then(|| std::fs::read_to_string(&file).ok()).flatten() {
                Some(content) => {
                    let (key, version) = split_uri(uri).unwrap_or_default();
                    let fact = json!({
                        "uri": uri, "content": content, "version": version, "interpret_as": "instruction",
                        "authored_by": format!("file:{}", file.display()), "authored_at": authored_at,
                        "source_trust": 1.0,
                    });
                    facts.insert(uri.to_string(), fact.to_string().into_bytes());
                    if !key.is_empty() {
                        versions.entry(key).or_default().push(version);
                    }
                }
                None => missing.push(name.to_string()),
            }
        }
        if let Some(p) = path {
            let full = root.join(p);
            let ok = full.canonicalize().map(|c| c.starts_with(&canon_root)).unwrap_or(false);
            match ok.then(|| std::fs::read_to_string(&full).ok()).flatten() {
                Some(content) => {
                    let fact = json!({"uri": format!("path:{p}"), "content": content, "interpret_as": "instruction"});
                    facts.insert(format!("path:{p}"), fact.to_string().into_bytes());
                }
                None => {
                    if fact_uri.is_none() {
                        missing.push(name.to_string());
                    }
                }
            }
        }
    }
    for (key, vs) in versions {
        facts.insert(key, serde_json::to_vec(&vs)?);
    }
    Ok(AgentDir { root, manifest_json, agent_id, facts: Arc::new(facts), missing })
}
