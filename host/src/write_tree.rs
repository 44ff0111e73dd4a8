//! All-or-nothing writes of a set of files under one directory, for the commands that
//! write a tree (`lid migrate-instructions`, `lid export`): "bad input gets a clear error
//! and loses nothing". Every file is first written to a staging directory beside `out`
//! (so a full disk, a file-size limit or a permission problem stops the command before
//! `out` changes), then moved into place one rename at a time; a rename that fails undoes
//! the ones before it, putting back any file it had replaced. Errors name the target path,
//! never the staging one.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

/// Files a write of `files` under `out` would leave beside its own: in each directory it
/// writes into below `out` (`units/`, `.cursor/rules/`), the files with an extension it
/// writes there that it would not write. An earlier draft's or export's leftovers, which
/// a tool reading that directory would take as current (a removed unit's Cursor rule
/// would still apply); `out` itself, often a project root, is not looked at. Sorted.
pub fn foreign_files(out: &Path, files: &[(PathBuf, String)]) -> Vec<PathBuf> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut dirs: BTreeMap<PathBuf, (BTreeSet<std::ffi::OsString>, BTreeSet<std::ffi::OsString>)> = BTreeMap::new();
    for (rel, _) in files {
        let (Some(dir), Some(name)) = (rel.parent().filter(|d| !d.as_os_str().is_empty()), rel.file_name()) else { continue };
        let entry = dirs.entry(dir.to_path_buf()).or_default();
        entry.0.insert(name.to_os_string());
        entry.1.extend(rel.extension().map(|x| x.to_os_string()));
    }
    let mut foreign = Vec::new();
    for (dir, (names, exts)) in dirs {
        let Ok(rd) = std::fs::read_dir(out.join(&dir)) else { continue };
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.extension().is_some_and(|x| exts.contains(x)) && !names.contains(&e.file_name()) {
                foreign.push(dir.join(e.file_name()));
            }
        }
    }
    foreign.sort();
    foreign
}

/// What a rename into place did, so that it can be undone.
struct Placed {
    target: PathBuf,
    /// Where the file it replaced was kept, if there was one.
    kept: Option<PathBuf>,
}

/// Write `files` (paths relative to `out`, each plain: no `..`, not absolute) under `out`,
/// all of them or none. Existing files at those paths are replaced; other files under
/// `out` are left alone.
pub fn write_files(out: &Path, files: &[(PathBuf, String)]) -> Result<()> {
    for (rel, _) in files {
        if rel.as_os_str().is_empty() || rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            return Err(anyhow!("refusing to write {} outside {}: a file's path must be relative, without `..` (nothing was written)", rel.display(), out.display()));
        }
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut created = Vec::new();
    create_dirs(&parent, &mut created).with_context(|| format!("cannot create {}", parent.display()))?;
    let name = out.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let staging = parent.join(format!(".{name}.lid-staging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = stage_and_place(out, &staging, files);
    let _ = std::fs::remove_dir_all(&staging);
    if result.is_err() {
        remove_empty(&created);
    }
    result
}

fn stage_and_place(out: &Path, staging: &Path, files: &[(PathBuf, String)]) -> Result<()> {
    let nothing = "nothing was written";
    let new = staging.join("new");
    for (rel, content) in files {
        let at = new.join(rel);
        let write = || -> std::io::Result<()> {
            if let Some(dir) = at.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&at, content)
        };
        write().map_err(|e| anyhow!("cannot write {}: {e} ({nothing})", out.join(rel).display()))?;
    }
    let (mut placed, mut created) = (Vec::<Placed>::new(), Vec::new());
    for (i, (rel, _)) in files.iter().enumerate() {
        let target = out.join(rel);
        let step = place(&new.join(rel), &target, &staging.join("old").join(i.to_string()), &mut created);
        match step {
            Ok(p) => placed.push(p),
            Err(e) => {
                undo(&placed);
                remove_empty(&created);
                return Err(anyhow!("cannot write {}: {e} ({nothing})", target.display()));
            }
        }
    }
    Ok(())
}

/// Move the staged file `from` to `target`, keeping a file already there at `keep`.
fn place(from: &Path, target: &Path, keep: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<Placed> {
    if let Some(dir) = target.parent() {
        create_dirs(dir, created)?;
    }
    let kept = match std::fs::symlink_metadata(target) {
        Ok(m) if m.is_dir() => return Err(std::io::Error::other("a directory is in the way")),
        Ok(_) => {
            if let Some(dir) = keep.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::rename(target, keep)?;
            Some(keep.to_path_buf())
        }
        Err(_) => None,
    };
    if let Err(e) = std::fs::rename(from, target) {
        if let Some(k) = &kept {
            let _ = std::fs::rename(k, target);
        }
        return Err(e);
    }
    Ok(Placed { target: target.to_path_buf(), kept })
}

/// Undo renames into place, the last first: remove each new file, put back what it replaced.
fn undo(placed: &[Placed]) {
    for p in placed.iter().rev() {
        let _ = std::fs::remove_file(&p.target);
        if let Some(k) = &p.kept {
            let _ = std::fs::rename(k, &p.target);
        }
    }
}

/// `create_dir_all`, recording each directory it made (outermost first).
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err()) {
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    for d in missing.into_iter().rev() {
        std::fs::create_dir(&d)?;
        created.push(d);
    }
    Ok(())
}

/// Remove directories this write created, the innermost first, where they are empty.
fn remove_empty(created: &[PathBuf]) {
    for d in created.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh temporary directory, removed when the test ends.
    fn tmp(tag: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("lid-write-tree-{tag}-")).tempdir().unwrap()
    }

    fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        list.iter().map(|(p, c)| (PathBuf::from(p), c.to_string())).collect()
    }

    fn tree(dir: &Path) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push((p.strip_prefix(dir).unwrap().display().to_string(), std::fs::read_to_string(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn writes_a_new_tree_and_replaces_only_its_own_files() {
        let d = tmp("new");
        let d = d.path();
        let out = d.join("a/b/out");
        write_files(&out, &files(&[("units/x.md", "x"), ("manifest.json", "{}")])).unwrap();
        assert_eq!(tree(&out), [("manifest.json".into(), "{}".into()), ("units/x.md".into(), "x".into())]);
        std::fs::write(out.join("keep.txt"), "mine").unwrap();
        write_files(&out, &files(&[("units/x.md", "x2")])).unwrap();
        assert_eq!(tree(&out), [("keep.txt".into(), "mine".into()), ("manifest.json".into(), "{}".into()), ("units/x.md".into(), "x2".into())]);
        assert_eq!(std::fs::read_dir(d.join("a/b")).unwrap().count(), 1, "no staging directory is left");
    }

    #[test]
    fn leftovers_are_the_files_of_its_kinds_it_would_not_write() {
        let d = tmp("foreign");
        let d = d.path();
        let out = d.join("out");
        write_files(&out, &files(&[("AGENTS.md", "a"), ("units/a.md", "a"), ("units/gone.md", "g"), ("units/notes.txt", "n"), (".cursor/rules/gone.mdc", "g")])).unwrap();
        std::fs::write(out.join("README.md"), "the project's own").unwrap();
        let next = files(&[("AGENTS.md", "a"), ("units/a.md", "a"), (".cursor/rules/a.mdc", "a")]);
        assert_eq!(foreign_files(&out, &next), [PathBuf::from(".cursor/rules/gone.mdc"), PathBuf::from("units/gone.md")]);
        assert!(foreign_files(&d.join("nowhere"), &next).is_empty());
    }

    #[test]
    fn a_failure_part_way_leaves_the_tree_as_it_was() {
        let d = tmp("fail");
        let d = d.path();
        let out = d.join("out");
        write_files(&out, &files(&[("units/a.md", "old a"), ("units/b.md", "old b")])).unwrap();
        // a directory where the third file goes: the first two are put back as they were
        std::fs::create_dir_all(out.join("units/c.md")).unwrap();
        let e = write_files(&out, &files(&[("units/a.md", "new a"), ("units/new.md", "n"), ("units/c.md", "c"), ("units/b.md", "new b")])).unwrap_err();
        let m = format!("{e:#}");
        assert!(m.contains(&out.join("units/c.md").display().to_string()) && m.contains("nothing was written") && !m.contains("staging"), "{m}");
        assert_eq!(tree(&out), [("units/a.md".into(), "old a".into()), ("units/b.md".into(), "old b".into())]);
        assert!(out.join("units/c.md").is_dir());
        // a new tree whose path runs through a file: nothing is created
        let blocked = d.join("file");
        std::fs::write(&blocked, "f").unwrap();
        assert!(write_files(&blocked.join("out"), &files(&[("x.md", "x")])).is_err());
        assert_eq!(std::fs::read_to_string(&blocked).unwrap(), "f");
        assert!(write_files(&out, &files(&[("../x.md", "x")])).is_err());
        assert!(!d.join("x.md").exists());
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 2, "no staging directory is left");
    }
}
