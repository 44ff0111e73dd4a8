//! Shared fixtures for the fuzz targets: the demo agent (`examples/demo-agent`) as an
//! in-memory fact store, and a fixed recall context, so every target is deterministic.

use lid_core::store::{Fact, MemoryFacts};

/// The demo agent's manifest.
pub const DEMO_MANIFEST: &str = include_str!("../../examples/demo-agent/manifest.json");

/// The demo agent's unit files, by unit name.
pub const DEMO_UNITS: &[(&str, &str)] = &[
    ("code-review", include_str!("../../examples/demo-agent/units/code-review.md")),
    ("dependency-upgrades", include_str!("../../examples/demo-agent/units/dependency-upgrades.md")),
    ("ground-rules", include_str!("../../examples/demo-agent/units/ground-rules.md")),
    ("release-checklist", include_str!("../../examples/demo-agent/units/release-checklist.md")),
    ("rollback-procedure", include_str!("../../examples/demo-agent/units/rollback-procedure.md")),
    ("triage-incoming", include_str!("../../examples/demo-agent/units/triage-incoming.md")),
    ("writing-status-updates", include_str!("../../examples/demo-agent/units/writing-status-updates.md")),
];

/// A fixed host context (time, entropy, heartbeat id): recall output depends on nothing else.
pub const CONTEXT: &str = r#"{"now_ms":1767225600000,"entropy":"00112233445566778899","heartbeat_id":"hb-fuzz"}"#;

/// Facts for `manifest`: each entry's `fact_uri` holds the demo unit of the same name,
/// or else the first demo unit; `path` entries get `path:` facts.
pub fn facts_for(manifest: &serde_json::Value) -> MemoryFacts {
    let mut facts = MemoryFacts::new();
    let entries = manifest.get("entries").and_then(|e| e.as_array()).cloned().unwrap_or_default();
    for e in &entries {
        let name = e.get("name").and_then(|v| v.as_str()).unwrap_or("");
        let content = DEMO_UNITS.iter().find(|(n, _)| *n == name).map_or(DEMO_UNITS[0].1, |(_, c)| *c).to_string();
        if let Some(uri) = e.get("fact_uri").and_then(|v| v.as_str()) {
            let version = uri.rsplit('/').next().unwrap_or("").to_string();
            facts.insert(Fact { uri: uri.to_string(), content: content.clone(), version, ..Fact::default() });
        }
        if let Some(path) = e.get("path").and_then(|v| v.as_str()) {
            facts.insert(Fact { uri: format!("path:{path}"), content, ..Fact::default() });
        }
    }
    facts
}

/// The demo agent with its facts.
pub fn demo() -> (String, MemoryFacts) {
    let m: serde_json::Value = serde_json::from_str(DEMO_MANIFEST).expect("the demo manifest is JSON");
    (DEMO_MANIFEST.to_string(), facts_for(&m))
}

/// Input bytes as text (libFuzzer mutates bytes; every parser here takes `&str`).
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A ranker over the demo agent's units (names, descriptions, trigger intents, keywords,
/// task types and bodies from the manifest and the unit files).
pub fn demo_ranker() -> lid_core::rank::Ranker {
    let m: serde_json::Value = serde_json::from_str(DEMO_MANIFEST).expect("the demo manifest is JSON");
    let list = |v: &serde_json::Value| -> Vec<String> { v.as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect()).unwrap_or_default() };
    let entries = m["entries"].as_array().cloned().unwrap_or_default();
    let owned: Vec<(String, String, Vec<String>, Vec<String>, Vec<String>, Vec<String>, &str)> = entries
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap_or("").to_string();
            let body = DEMO_UNITS.iter().find(|(n, _)| *n == name).map_or("", |(_, c)| *c);
            let t = &e["load_triggers"];
            (name, e["description"].as_str().unwrap_or("").to_string(), list(&t["intents"]), list(&t["keywords"]), list(&t["task_types"]), list(&e["required_by_task_types"]), body)
        })
        .collect();
    let docs: Vec<lid_core::rank::UnitDoc<'_>> = owned
        .iter()
        .map(|(name, description, intents, keywords, task_types, required_by_task_types, body)| lid_core::rank::UnitDoc { name, description, intents, keywords, task_types, required_by_task_types, body })
        .collect();
    lid_core::rank::Ranker::build(&docs)
}
