//! # lid-preview: the browser manifest preview's engine
//!
//! `lid-core` compiled for `wasm32-unknown-unknown` with wasm-bindgen (`--target web`):
//! everything the preview page shows is computed here, in the browser, by the same Rust
//! code `lid serve` and the worker run; no server round-trip. Each export takes the
//! manifest JSON and the units (a JSON object `{name: markdown}`) and returns JSON:
//!
//! - [`validate`]: §21.2 validation, every problem with its code and entry, token count
//!   per entry and of the whole manifest against the 1000 cap (§21.9 `manifest_too_large`);
//! - [`stubs`]: the §21.1 boot stub for each adapter profile with its body token count;
//! - [`coverage`]: the §21.8.3 paraphrase coverage-gate report;
//! - [`rank`]: ranked recall for an intent, with scores (§21.3).
//!
//! Units are served to the engine as facts under each entry's `fact_uri` (or
//! `path:{path}`), as the CLI serves an agent directory. Errors are JSON too:
//! `{"error": {"code", "status", "message", "details"}}`.

use lid_core::store::{Fact, MemoryFacts};
use serde_json::{json, Map, Value};
use wasm_bindgen::prelude::*;

/// The adapter profiles (§21.1.3).
pub const PROFILES: &[&str] = &["generic", "paperclip-claude-code", "openai-assistants"];

fn err_json(e: lid_core::error::EngineError) -> String {
    json!({"error": e.body()}).to_string()
}

/// Units JSON (`{name: markdown}`) → a fact store keyed the way the manifest names them.
fn facts(manifest: &str, units: &str) -> Result<MemoryFacts, String> {
    let m = lid_core::api::load_manifest(manifest).map_err(err_json)?;
    let units: Map<String, Value> = if units.trim().is_empty() {
        Map::new()
    } else {
        serde_json::from_str(units).map_err(|e| json!({"error": {"code": "invalid_json", "status": 400, "message": format!("units must be a JSON object of name → markdown: {e}"), "details": null}}).to_string())?
    };
    let mut f = MemoryFacts::new();
    for e in &m.entries {
        let Some(content) = units.get(&e.name).and_then(Value::as_str) else { continue };
        let uri = match (e.fact_uri.as_deref().filter(|u| !u.is_empty()), e.path.as_deref().filter(|p| !p.is_empty())) {
            (Some(u), _) => u.to_string(),
            (None, Some(p)) => format!("path:{p}"),
            (None, None) => continue,
        };
        let version = lid_core::uri::InstructionUri::parse(&uri).map(|u| u.version).unwrap_or_default();
        f.insert(Fact { uri, content: content.to_string(), version, tokens: Some(lid_core::api::count_tokens(content)), ..Fact::default() });
    }
    Ok(f)
}

/// §21.2 validation report: `ok`, `token_count`, `token_cap`, `entry_tokens`, `errors`,
/// `warnings` (each problem with `code`, `entry`, `field`, `message`).
#[wasm_bindgen]
pub fn validate(manifest: &str, options: &str) -> String {
    lid_core::api::validate_manifest(manifest, options)
}

/// Exact cl100k token count.
#[wasm_bindgen]
pub fn count_tokens(text: &str) -> u32 {
    lid_core::api::count_tokens(text)
}

/// The boot stub of every profile: `[{profile, text, body_tokens, total_tokens, warnings} | {profile, error}]`
/// (`warnings` as `lid stub` gives them: an always-applicable unit left out, the
/// heartbeat contract's fallback, a body over 450 tokens).
#[wasm_bindgen]
pub fn stubs(manifest: &str, units: &str) -> String {
    let f = match facts(manifest, units) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let out: Vec<Value> = PROFILES
        .iter()
        .map(|p| match lid_core::api::render_stub(manifest, Some(p), &f) {
            Ok(s) => {
                let v: Value = serde_json::from_str(&s).unwrap_or(Value::Null);
                json!({"profile": p, "text": v["text"], "body_tokens": v["body_tokens"], "total_tokens": v["total_tokens"], "warnings": v["warnings"]})
            }
            Err(e) => json!({"profile": p, "error": e.body()}),
        })
        .collect();
    Value::Array(out).to_string()
}

/// The §21.8.3 coverage-gate report (`passed`, `units[]` with `coverage_pct`, `failed`).
#[wasm_bindgen]
pub fn coverage(manifest: &str, units: &str) -> String {
    match facts(manifest, units) {
        Ok(f) => lid_core::api::coverage(manifest, "{}", &f).unwrap_or_else(err_json),
        Err(e) => e,
    }
}

/// Ranked units for `intent` with their scores (`ranked[]`: name, score, lexical,
/// semantic, graph; `unavailable[]`: units without content).
#[wasm_bindgen]
pub fn rank(manifest: &str, units: &str, intent: &str) -> String {
    match facts(manifest, units) {
        Ok(f) => lid_core::api::rank(manifest, intent, None, &f).unwrap_or_else(err_json),
        Err(e) => e,
    }
}

/// The engine's identity (ranker version, stub version).
#[wasm_bindgen]
pub fn info() -> String {
    lid_core::api::info()
}
