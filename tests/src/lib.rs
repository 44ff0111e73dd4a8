//! Shared helpers for lid's cross-cutting tests.

pub mod http;

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(PathBuf::from).unwrap_or_default()
}

/// The eval sets: `$LID_SHARED` (as `.ci/run` reads it), else `../shared` beside the
/// checkout; `None` when absent.
pub fn shared() -> Option<PathBuf> {
    let p = match std::env::var_os("LID_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => root().parent()?.join("shared"),
    };
    p.exists().then_some(p)
}

/// This process's minor page faults so far (`/proc/self/stat`; 0 where it cannot be read).
pub fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |x| x.1);
    after.split_whitespace().nth(7).and_then(|v| v.parse().ok()).unwrap_or(0)
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

/// A synthetic agent of `n` units in `dir` (`manifest.json` + `units/`), reproducible:
/// six-word descriptions and 120-word bodies drawn Zipf-like from a 4,000-word
/// vocabulary of made-up words (the benchmarks' 1,000- and 10,000-unit corpora). Kept
/// when `dir` already holds `n` units.
pub fn synthetic_agent(n: usize, dir: &std::path::Path) -> anyhow::Result<()> {
    let units = dir.join("units");
    if dir.join("manifest.json").exists() && std::fs::read_dir(&units)?.count() == n {
        return Ok(());
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(&units)?;
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "de", "pa", "qu", "ex", "or", "an", "ly", "st"];
    let vocab: Vec<String> = (0..4000u64)
        .map(|i| {
            let mut w = String::new();
            let mut x = i * 2_654_435_761 + 7;
            for _ in 0..(2 + i % 3) {
                w.push_str(syll[(x % 16) as usize]);
                x /= 16;
            }
            w
        })
        .collect();
    let word = |next: &mut dyn FnMut() -> u64| {
        // Zipf-ish: square a uniform draw to skew towards frequent words.
        let u = (next() % 10_000) as f64 / 10_000.0;
        vocab[((u * u) * vocab.len() as f64) as usize].clone()
    };
    let mut entries = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("unit-{i:05}");
        let desc: Vec<String> = (0..6).map(|_| word(&mut next)).collect();
        let body: Vec<String> = (0..120).map(|_| word(&mut next)).collect();
        std::fs::write(units.join(format!("{name}.md")), format!("## {}\n\n{}\n", desc.join(" "), body.join(" ")))?;
        entries.push(serde_json::json!({
            "name": name,
            "description": desc.join(" "),
            "load_triggers": {"intents": [format!("{} {}", desc[0], desc[1])], "keywords": [desc[2].clone()], "task_types": []},
            "required_by_task_types": [],
            "guarantee_load": false,
            "fact_uri": format!("instruction:bench/synth/{name}/v1"),
            "token_estimate": 160,
        }));
    }
    let manifest = serde_json::json!({"agent_id": "synth", "deployment": "bench", "agent_role": "Synthetic", "manifest_version": "v1",
        "published_at": "2026-11-01T00:00:00Z", "entries": entries});
    std::fs::write(dir.join("manifest.json"), serde_json::to_string(&manifest)?)?;
    Ok(())
}
