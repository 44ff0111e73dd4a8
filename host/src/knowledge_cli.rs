//! `lid knowledge scan|resolve`: the Agent Knowledge runtime on local folders
//! (`../shared/spec/agent-knowledge-runtime.txt`). This module only walks and reads files
//! ([`crate::pack_dir`]); the catalog, activation, selection, fences and the diagnostics
//! record are the engine's (`knowledge-catalog`, `knowledge-select`, core module
//! `resolve`), so every host resolves packs the same way.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Subcommand;
use serde_json::{json, Value};

use crate::engine::Runtime;
use crate::pack_dir::{self, SCAN_MAX_DEPTH};

#[derive(Subcommand, Debug)]
pub enum KnowledgeCommand {
    /// Discover packs (folders holding KNOWLEDGE.md) under ROOTs and print the compact
    /// catalog: front matter only, nothing in a pack is run.
    Scan {
        #[arg(required = true)]
        roots: Vec<PathBuf>,
        /// Deepest folder level below a root
        #[arg(long, default_value_t = SCAN_MAX_DEPTH)]
        max_depth: usize,
    },
    /// Activate packs for a query (explicit --pack, implicit by the catalog, never packs
    /// that are not ready), select the smallest useful context within --budget, print it
    /// fenced as data, and write the diagnostics record to RUNS/context-*.json.
    Resolve {
        #[arg(required = true)]
        roots: Vec<PathBuf>,
        #[arg(long, default_value = "")]
        query: String,
        /// Activate this pack explicitly, by name or path (repeatable)
        #[arg(long = "pack")]
        packs: Vec<String>,
        /// Never activate this pack (repeatable)
        #[arg(long = "disable")]
        disabled: Vec<String>,
        /// Only explicit activation
        #[arg(long)]
        no_implicit: bool,
        #[arg(long, default_value_t = 2000)]
        budget: u32,
        /// Write the diagnostics record into this folder (runs/context-<id>.json)
        #[arg(long)]
        runs: Option<PathBuf>,
        #[arg(long, default_value_t = SCAN_MAX_DEPTH)]
        max_depth: usize,
    },
}

pub(crate) fn call(r: Result<Result<String, crate::engine::EngineFailure>>) -> Result<Value> {
    let s = r?.map_err(anyhow::Error::new)?;
    serde_json::from_str(&s).context("engine returned invalid JSON")
}

/// The catalog (and, with `activate`, the activation) of the packs under `roots`.
fn catalog(rt: &Runtime, found: &[pack_dir::Found], activate: Option<Value>) -> Result<Value> {
    let packs: Vec<Value> = found.iter().filter(|f| f.unreadable.is_none()).map(|f| json!({"path": f.dir.display().to_string(), "knowledge_md": f.knowledge_md, "files": f.files})).collect();
    let mut v = call(rt.knowledge_catalog(&json!({"packs": packs, "activate": activate}).to_string()))?;
    // A KNOWLEDGE.md that cannot be read is a pack that does not parse: a diagnostic, and
    // the other packs are still listed.
    if let Some(diags) = v["catalog"]["diagnostics"].as_array_mut() {
        for f in found {
            if let Some(why) = &f.unreadable {
                diags.push(json!({"code": "knowledge_front_matter_invalid", "path": f.dir.display().to_string(), "message": why}));
            }
            // files the walk passed over (a symlink, a name that is not UTF-8): never
            // served, so said, as the engine says of files that are no unit
            for why in &f.skipped {
                diags.push(json!({"code": "knowledge_file_not_served", "path": f.dir.display().to_string(), "message": why}));
            }
        }
    }
    Ok(v)
}

/// Options of a resolution.
pub struct ResolveArgs<'a> {
    pub roots: &'a [PathBuf],
    pub query: &'a str,
    pub packs: &'a [String],
    pub disabled: &'a [String],
    pub implicit: bool,
    pub budget: u32,
    pub max_depth: usize,
}

/// Scan, activate, read the activated packs and select: `{"catalog","activated","items",
/// "fenced","record"}`.
pub fn resolve(rt: &Runtime, a: &ResolveArgs<'_>) -> Result<Value> {
    // A `--pack PATH` names a folder however it is spelt (`pack/`, `./pack`, through `..`):
    // it is matched as the path the scan lists for the same folder.
    let found = pack_dir::scan(a.roots, a.max_depth)?;
    let explicit: Vec<String> = a
        .packs
        .iter()
        .map(|p| {
            let real = Path::new(p).canonicalize().ok();
            let same = real.and_then(|c| found.iter().find(|f| f.dir.canonicalize().is_ok_and(|d| d == c)));
            same.map_or_else(|| p.clone(), |f| f.dir.display().to_string())
        })
        .collect();
    let activate = json!({"query": a.query, "explicit": explicit, "disabled": a.disabled, "implicit": a.implicit});
    let v = catalog(rt, &found, Some(activate))?;
    let mut loaded = Vec::new();
    for p in v["activated"]["packs"].as_array().into_iter().flatten() {
        let path = p["path"].as_str().unwrap_or_default();
        // The scan already read KNOWLEDGE.md; only the context files are read now.
        let Some(f) = found.iter().find(|f| f.dir.display().to_string() == path) else { continue };
        loaded.push(json!({"path": path, "activation": p["activation"], "knowledge_md": f.knowledge_md, "files": pack_dir::context_files(&f.dir)?}));
    }
    let mut sel = call(rt.knowledge_select(&json!({"query": a.query, "budget": a.budget, "packs": loaded}).to_string()))?;
    // The record also names what activation refused (not ready, disabled, not found).
    let mut diags: Vec<Value> = v["catalog"]["diagnostics"].as_array().cloned().unwrap_or_default();
    diags.extend(v["activated"]["diagnostics"].as_array().cloned().unwrap_or_default());
    sel["record"]["diagnostics"] = Value::Array(diags);
    sel["catalog"] = v["catalog"].clone();
    sel["activated"] = v["activated"].clone();
    Ok(sel)
}

/// Run `lid knowledge …`.
pub fn run(rt: &Runtime, json_out: bool, cmd: &KnowledgeCommand) -> Result<i32> {
    match cmd {
        KnowledgeCommand::Scan { roots, max_depth } => {
            let v = catalog(rt, &pack_dir::scan(roots, *max_depth)?, None)?;
            if json_out {
                outln!("{}", serde_json::to_string_pretty(&v["catalog"])?);
            } else {
                for p in v["catalog"]["packs"].as_array().into_iter().flatten() {
                    let f = &p["fields"];
                    outln!(
                        "{:<28} {:<10} {:<12} trust={:<7} v={:<8} {}\n    {}",
                        p["name"].as_str().unwrap_or(""),
                        p["type"].as_str().unwrap_or(""),
                        p["status"].as_str().unwrap_or(""),
                        f["trust"].as_str().unwrap_or("-"),
                        f["version"].as_str().unwrap_or("-"),
                        p["path"].as_str().unwrap_or(""),
                        p["description"].as_str().unwrap_or(""),
                    );
                }
                for d in v["catalog"]["diagnostics"].as_array().into_iter().flatten() {
                    eprintln!("{}: {} ({})", d["code"].as_str().unwrap_or(""), d["message"].as_str().unwrap_or(""), d["path"].as_str().unwrap_or(""));
                }
            }
            Ok(0)
        }
        KnowledgeCommand::Resolve { roots, query, packs, disabled, no_implicit, budget, runs, max_depth } => {
            let sel = resolve(rt, &ResolveArgs { roots, query, packs, disabled, implicit: !*no_implicit, budget: *budget, max_depth: *max_depth })?;
            // A `--pack` the catalog lacks is the caller's mistake (a typo, the wrong root):
            // an error, before anything is written, not a record that passed without it.
            if let Some(d) = sel["activated"]["diagnostics"].as_array().into_iter().flatten().find(|d| d["code"] == "knowledge_pack_not_found") {
                let names: Vec<&str> = sel["catalog"]["packs"].as_array().into_iter().flatten().filter_map(|p| p["name"].as_str()).collect();
                let known = if names.is_empty() { "the roots hold no pack (a folder with a KNOWLEDGE.md)".to_string() } else { format!("the catalog has {}", names.join(", ")) };
                let message = format!("{}: {known}; pass --pack a name or path from `lid knowledge scan`", d["message"].as_str().unwrap_or("no such pack"));
                return Err(crate::apierror::ApiError::new(400, "knowledge_pack_not_found", message).into());
            }
            if let Some(dir) = runs {
                std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
                let id = sel["record"]["run_id"].as_str().unwrap_or("context");
                let path = dir.join(format!("{id}.json"));
                std::fs::write(&path, serde_json::to_string_pretty(&sel["record"])? + "\n").with_context(|| format!("cannot write {}", path.display()))?;
                eprintln!("wrote {}", path.display());
            }
            if json_out {
                outln!("{}", serde_json::to_string_pretty(&json!({"items": sel["items"], "fenced": sel["fenced"], "record": sel["record"]}))?);
            } else {
                for f in sel["fenced"].as_array().into_iter().flatten() {
                    outln!("{}\n", f.as_str().unwrap_or(""));
                }
                for d in sel["record"]["diagnostics"].as_array().into_iter().flatten() {
                    eprintln!("{}: {}", d["code"].as_str().unwrap_or(""), d["message"].as_str().unwrap_or(""));
                }
                eprintln!("{} item(s), {} tokens", sel["items"].as_array().map_or(0, Vec::len), sel["record"]["token_estimate"]);
            }
            Ok(0)
        }
    }
}
