//! Shared helpers for lid's cross-cutting tests.

pub mod http;

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(PathBuf::from).unwrap_or_default()
}

/// `../shared` beside the checkout (the eval sets), if present.
pub fn shared() -> Option<PathBuf> {
    let p = root().parent()?.join("shared");
    p.exists().then_some(p)
}

/// Load an agent directory natively into the core's in-memory fact store, exactly as
/// the CLI's `agent_dir` loader exposes it to the component.
pub fn native_facts(dir: &std::path::Path) -> anyhow::Result<(String, lid_core::store::MemoryFacts)> {
    let a = lid_host::agent_dir::load(dir)?;
    let mut facts = lid_core::store::MemoryFacts::new();
    for key in lid_host::engine::FactSource::keys(a.facts.as_ref()).map_err(anyhow::Error::msg)? {
        if key.starts_with("instruction:") && key.matches('/').count() == 3 || key.starts_with("path:") {
            let bytes = lid_host::engine::FactSource::get(a.facts.as_ref(), &key).map_err(anyhow::Error::msg)?.unwrap_or_default();
            facts.insert(serde_json::from_slice(&bytes)?);
        }
    }
    Ok((a.manifest_json, facts))
}

/// Load a knowledge pack natively into the core's in-memory fact store, exactly as the
/// CLI's `pack_dir` loader exposes it to the component: (pack document, facts).
pub fn native_pack(dir: &std::path::Path) -> anyhow::Result<(String, lid_core::store::MemoryFacts)> {
    let p = lid_host::pack_dir::load(dir)?;
    let mut facts = lid_core::store::MemoryFacts::new();
    for key in lid_host::engine::FactSource::keys(p.facts.as_ref()).map_err(anyhow::Error::msg)? {
        if key.starts_with("path:") {
            let bytes = lid_host::engine::FactSource::get(p.facts.as_ref(), &key).map_err(anyhow::Error::msg)?.unwrap_or_default();
            facts.insert(serde_json::from_slice(&bytes)?);
        }
    }
    Ok((p.document, facts))
}
