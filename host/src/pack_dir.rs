//! Knowledge-pack directories as fact stores (Agent Knowledge runtime standard,
//! `../shared/spec/agent-knowledge-runtime.txt`, "Step 1: Discover packs").
//!
//! A pack is a directory holding `KNOWLEDGE.md`; its context files live under `units/`,
//! `compiled/` or `documents/`. This module only walks files: each markdown file under
//! those folders becomes a `path:{relative path}` fact, and the engine receives a pack
//! document (`{"knowledge_pack": {"id", "knowledge_md", "files"}}`) in place of a
//! manifest. Parsing the front matter, naming units and reading titles is the engine's
//! (`lid_core::knowledge`), so every host reads a pack the same way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::json;
use sha2::Digest;

use crate::agent_dir::MemFacts;

/// Folders that hold a pack's context files.
const LAYOUTS: &[&str] = &["units", "compiled", "documents"];
/// Deepest folder level walked below a layout folder (runtime standard: "a reasonable
/// maximum scan depth").
const MAX_DEPTH: usize = 8;

/// A loaded knowledge pack.
pub struct PackDir {
    pub root: PathBuf,
    /// The directory name: probes' `pack_id`.
    pub id: String,
    /// The pack document the engine ranks (sent where a manifest would go).
    pub document: String,
    pub facts: Arc<MemFacts>,
    /// Files passed over while reading it, each with why (see [`walk`]).
    pub skipped: Vec<String>,
}

/// Every markdown file below `dir` (relative to `root`, `/`-separated), skipping hidden
/// entries, at most [`MAX_DEPTH`] levels deep. A markdown file (or a folder) that is
/// passed over for another reason is named in `skipped` with why: a symlink (never
/// followed: it could lead out of the pack), a name that is not UTF-8 (it could not be
/// served as a fact path), a folder past the depth limit.
fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<(String, PathBuf)>, skipped: &mut Vec<String>) -> Result<()> {
    let shown = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_string_lossy().replace('\\', "/");
    if depth > MAX_DEPTH {
        skipped.push(format!("{} is never read: it is more than {MAX_DEPTH} folders deep", shown(dir)));
        return Ok(());
    }
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    for e in rd {
        let e = e.with_context(|| format!("cannot list {}", dir.display()))?;
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let ft = e.file_type()?;
        let p = e.path();
        let markdown = p.extension().is_some_and(|x| x == "md");
        if ft.is_dir() {
            walk(root, &p, depth + 1, out, skipped)?;
        } else if ft.is_symlink() && (markdown || p.is_dir()) {
            skipped.push(format!("{} is never read: it is a symlink, which is never followed (a pack's files are its own); copy the file in", shown(&p)));
        } else if ft.is_file() && markdown {
            match p.strip_prefix(root).ok().and_then(Path::to_str) {
                Some(rel) => out.push((rel.replace('\\', "/"), p.clone())),
                None => skipped.push(format!("{} is never read: its name is not UTF-8, so it cannot be served as a fact path; rename it", shown(&p))),
            }
        }
    }
    Ok(())
}

/// The text of `dir`'s `KNOWLEDGE.md`: `None` when it has none; an error saying why when
/// it cannot be read, or is not a regular file of the pack's own: a symlink is never
/// followed (it could lead out of the pack), as no other file of a pack is.
fn knowledge_md(dir: &Path) -> Option<Result<String, String>> {
    let path = dir.join("KNOWLEDGE.md");
    let kind = std::fs::symlink_metadata(&path).ok()?.file_type();
    Some(if kind.is_symlink() {
        Err(format!("{} is a symlink, which is never followed: a pack's files are its own", path.display()))
    } else if !kind.is_file() {
        Err(format!("{} is not a regular file", path.display()))
    } else {
        std::fs::read_to_string(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => format!("cannot read {}: {e}: save it as UTF-8 text", path.display()),
            _ => format!("cannot read {}: {e}", path.display()),
        })
    })
}

/// Load the pack at `dir`.
pub fn load(dir: &Path) -> Result<PackDir> {
    let knowledge_md = match knowledge_md(dir) {
        Some(Ok(text)) => text,
        Some(Err(why)) => bail!("{why} (a knowledge pack needs one)"),
        None => bail!("cannot read {} (a knowledge pack needs one)", dir.join("KNOWLEDGE.md").display()),
    };
    let Some(id) = dir.file_name().and_then(|s| s.to_str()).map(str::to_string) else {
        bail!("{} has no directory name to use as the pack id", dir.display());
    };
    let (mut files, mut skipped) = (Vec::new(), Vec::new());
    for layout in LAYOUTS {
        walk(dir, &dir.join(layout), 0, &mut files, &mut skipped)?;
    }
    files.sort();
    skipped.sort();
    // A path is served as it is (in rank output, fact URIs and fences): one holding a
    // character a reviewer cannot see refuses the pack, as an upload is refused (the scan
    // reports it as `knowledge_path_invalid`).
    for (rel, _) in &files {
        if let Some(hidden) = lid_shared::ids::hidden_in(rel) {
            bail!("{}: file path {rel:?} holds {hidden}, which a reviewer cannot see: a pack file's path is served to agents as it is; rename the file", dir.display());
        }
    }
    let mut facts = MemFacts::default();
    // The pack digest: KNOWLEDGE.md, then every file's path and content hash, in order.
    // The engine keys the pack's precomputed index by it, so a recall reads no unit file
    // it does not quote.
    let mut digest = sha2::Sha256::new();
    digest.update(sha2::Sha256::digest(knowledge_md.as_bytes()));
    for (rel, path) in &files {
        // past a byte-order mark, as the agent's own unit files are read
        let content = crate::agent_dir::read_text(path)?;
        let sha = crate::engine::hex(&sha2::Sha256::digest(content.as_bytes()));
        digest.update(rel.as_bytes());
        digest.update([0]);
        digest.update(sha.as_bytes());
        let fact = json!({
            "uri": format!("path:{rel}"), "content": content, "version": "v1", "interpret_as": "content",
            "authored_by": format!("file:{}", path.display()), "source_trust": 1.0, "sha256": sha,
        });
        facts.insert(format!("path:{rel}"), fact.to_string().into_bytes());
    }
    let digest = crate::engine::hex(&digest.finalize());
    if let Some(cache) = crate::engine::default_cache_dir() {
        facts = facts.with_derived_dir(cache.join("index"));
    }
    let document = json!({"knowledge_pack": {
        "id": id, "knowledge_md": knowledge_md, "files": files.iter().map(|f| &f.0).collect::<Vec<_>>(), "digest": digest,
    }})
    .to_string();
    Ok(PackDir { root: dir.to_path_buf(), id, document, facts: Arc::new(facts), skipped })
}

/// The packs directly under `dir` (directories holding `KNOWLEDGE.md`), by name.
pub fn discover(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list packs in {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        // (any KNOWLEDGE.md entry, a symlink too: `load` then says why it is not read)
        .filter(|p| p.is_dir() && std::fs::symlink_metadata(p.join("KNOWLEDGE.md")).is_ok())
        .collect();
    out.sort();
    Ok(out)
}

/// Folders never entered while scanning for packs (runtime standard, Step 1: "ignore hidden
/// caches, build output, dependency folders, and VCS folders"); hidden folders are
/// skipped too.
pub const SCAN_SKIP: &[&str] = &["node_modules", "target", "build", "dist", "out", "vendor", "__pycache__", "venv", "site-packages", "bower_components", "CVS"];

/// Default maximum folder depth below a root when scanning for packs.
pub const SCAN_MAX_DEPTH: usize = 6;

/// A pack found by [`scan`]: its directory, the text of its `KNOWLEDGE.md` and the
/// pack-relative paths of its context files (listed, not read: nothing else of the pack
/// is read, and nothing in it is run).
#[derive(Debug, Clone)]
pub struct Found {
    pub dir: PathBuf,
    pub knowledge_md: String,
    /// The context files' paths, for the catalog's checks (a path a reviewer cannot read,
    /// files that give one unit name); empty when the folders cannot be listed (reading
    /// the pack then says why).
    pub files: Vec<String>,
    /// Why its `KNOWLEDGE.md` could not be read (not UTF-8, permission denied): a
    /// diagnostic of the catalog, not the end of the scan (`knowledge_md` is then empty).
    pub unreadable: Option<String>,
    /// Files passed over while listing it, each with why (see [`walk`]).
    pub skipped: Vec<String>,
}

/// Find packs under `roots`, in root order, then path order: every directory holding a
/// `KNOWLEDGE.md`, at most `max_depth` levels below its root, never inside another pack,
/// skipping hidden, build, dependency and VCS folders and symlinks.
pub fn scan(roots: &[PathBuf], max_depth: usize) -> Result<Vec<Found>> {
    fn visit(dir: &Path, depth: usize, max_depth: usize, out: &mut Vec<Found>) -> Result<()> {
        if let Some(read) = knowledge_md(dir) {
            let (knowledge_md, unreadable) = match read {
                Ok(text) => (text, None),
                Err(why) => (String::new(), Some(why)),
            };
            let (mut files, mut skipped) = (Vec::new(), Vec::new());
            if unreadable.is_none() {
                for layout in LAYOUTS {
                    if walk(dir, &dir.join(layout), 0, &mut files, &mut skipped).is_err() {
                        files.clear();
                        skipped.clear();
                        break;
                    }
                }
            }
            let mut files: Vec<String> = files.into_iter().map(|f| f.0).collect();
            files.sort();
            skipped.sort();
            out.push(Found { dir: dir.to_path_buf(), knowledge_md, files, unreadable, skipped });
            return Ok(());
        }
        if depth >= max_depth {
            return Ok(());
        }
        let mut subdirs = Vec::new();
        for e in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with('.') || SCAN_SKIP.contains(&name.as_str()) {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                subdirs.push(e.path());
            }
        }
        subdirs.sort();
        for d in subdirs {
            visit(&d, depth + 1, max_depth, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    for r in roots {
        if !r.is_dir() {
            bail!("{} is not a directory: give the folders to scan for KNOWLEDGE.md packs", r.display());
        }
        visit(r, 0, max_depth, &mut out)?;
    }
    Ok(out)
}

/// The context files of the pack at `dir` (relative path → text), read after activation.
pub fn context_files(dir: &Path) -> Result<std::collections::BTreeMap<String, String>> {
    let mut files = Vec::new();
    for layout in LAYOUTS {
        walk(dir, &dir.join(layout), 0, &mut files, &mut Vec::new())?;
    }
    let mut out = std::collections::BTreeMap::new();
    for (rel, path) in files {
        out.insert(rel, crate::agent_dir::read_text(&path)?);
    }
    Ok(out)
}
