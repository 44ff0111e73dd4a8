//! wasm-bindgen-test tests of lid-core compiled for `wasm32-unknown-unknown`, through the
//! preview's exports: run in Node (`cargo test --target wasm32-unknown-unknown`) and in
//! headless Chromium (`WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=/usr/bin/chromedriver`).
//! The expected figures are the native core's (cl100k counts, §21.2 codes), so a
//! difference between the wasm build and native is a failure.

use serde_json::{json, Value};
use wasm_bindgen_test::*;

const MANIFEST: &str = include_str!("../../../examples/demo-agent/manifest.json");

fn units() -> String {
    let mut m = serde_json::Map::new();
    for (n, t) in [
        ("ground-rules", include_str!("../../../examples/demo-agent/units/ground-rules.md")),
        ("release-checklist", include_str!("../../../examples/demo-agent/units/release-checklist.md")),
        ("rollback-procedure", include_str!("../../../examples/demo-agent/units/rollback-procedure.md")),
        ("code-review", include_str!("../../../examples/demo-agent/units/code-review.md")),
        ("triage-incoming", include_str!("../../../examples/demo-agent/units/triage-incoming.md")),
        ("writing-status-updates", include_str!("../../../examples/demo-agent/units/writing-status-updates.md")),
        ("dependency-upgrades", include_str!("../../../examples/demo-agent/units/dependency-upgrades.md")),
    ] {
        m.insert(n.into(), Value::String(t.into()));
    }
    Value::Object(m).to_string()
}

fn j(s: String) -> Value {
    serde_json::from_str(&s).expect("the preview returns JSON")
}

#[wasm_bindgen_test]
fn cl100k_counts_match_tiktoken() {
    // Reference counts from tiktoken's cl100k_base (the native differential tests' cases).
    assert_eq!(lid_preview::count_tokens("hello world"), 2);
    assert_eq!(lid_preview::count_tokens(""), 0);
    assert_eq!(lid_preview::count_tokens("Lazy Instruction Discovery"), 3);
    // Longer text reaches the hash slots of the table this build lays out from its compact
    // form on the first count (lid-core `tokens::table`): tiktoken's counts of the demo units.
    for (text, want) in [
        (include_str!("../../../examples/demo-agent/units/ground-rules.md"), 53),
        (include_str!("../../../examples/demo-agent/units/release-checklist.md"), 128),
        (include_str!("../../../examples/demo-agent/units/rollback-procedure.md"), 111),
        (include_str!("../../../examples/demo-agent/units/code-review.md"), 105),
        (include_str!("../../../examples/demo-agent/units/triage-incoming.md"), 147),
        (include_str!("../../../examples/demo-agent/units/writing-status-updates.md"), 76),
        (include_str!("../../../examples/demo-agent/units/dependency-upgrades.md"), 68),
    ] {
        assert_eq!(lid_preview::count_tokens(text), want, "{}", &text[..text.len().min(40)]);
    }
}

#[wasm_bindgen_test]
fn the_demo_manifest_validates_with_per_entry_tokens() {
    let r = j(lid_preview::validate(MANIFEST, ""));
    assert_eq!(r["ok"], true, "{r}");
    let total = r["token_count"].as_u64().unwrap();
    assert!(total > 100 && total <= 1000, "{total}");
    assert_eq!(r["token_cap"], 1000);
    assert_eq!(r["entry_tokens"].as_array().unwrap().len(), 7);
}

#[wasm_bindgen_test]
fn a_broken_entry_is_reported_with_its_code_and_name() {
    let mut m: Value = serde_json::from_str(MANIFEST).unwrap();
    m["entries"][1]["name"] = json!("Not Kebab Case");
    let r = j(lid_preview::validate(&m.to_string(), ""));
    assert_eq!(r["ok"], false);
    let e = r["errors"].as_array().unwrap().iter().find(|e| e["code"] == "manifest_entry_invalid").expect("manifest_entry_invalid");
    assert_eq!(e["entry"], "Not Kebab Case");
}

#[wasm_bindgen_test]
fn stubs_render_for_every_profile_under_500_body_tokens() {
    let s = j(lid_preview::stubs(MANIFEST, &units()));
    let s = s.as_array().unwrap();
    assert_eq!(s.len(), 3);
    for p in s {
        let body = p["body_tokens"].as_u64().unwrap_or(9999);
        assert!(body > 20 && body <= 500, "{p}");
        assert!(p["text"].as_str().unwrap().contains("recall_instruction"));
    }
}

#[wasm_bindgen_test]
fn recall_ranks_the_rollback_unit_first_deterministically() {
    let a = lid_preview::rank(MANIFEST, &units(), "production is broken after the deploy, how do I roll back?");
    let b = lid_preview::rank(MANIFEST, &units(), "production is broken after the deploy, how do I roll back?");
    assert_eq!(a, b);
    let r = j(a);
    assert_eq!(r["ranked"][0]["name"], "rollback-procedure", "{r}");
    let s = r["ranked"][0]["score"].as_f64().unwrap();
    assert!(s > 0.0 && s <= 1.0);
    let empty = j(lid_preview::rank(MANIFEST, &units(), "  "));
    assert_eq!(empty["error"]["code"], "intent_required");
}

#[wasm_bindgen_test]
fn the_coverage_gate_runs_in_wasm() {
    let c = j(lid_preview::coverage(MANIFEST, &units()));
    let u = c["units"].as_array().unwrap();
    assert_eq!(u.len(), 7, "{c}");
    assert!(u.iter().all(|x| x["paraphrases"].as_u64().unwrap() >= 5));
}
