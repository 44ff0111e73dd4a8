//! Manifest parse + validate (§21.2, §21.9) on arbitrary bytes.
//! Properties: validation is deterministic; it never accepts a manifest whose canonical
//! JSON is over 1000 cl100k tokens; an accepted manifest loads and its canonical form is
//! accepted again with the same count; a rejection names at least one coded problem.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::{api, manifest, tokens};

fuzz_target!(|data: &[u8]| {
    let Some(json) = lid_fuzz::text(data) else { return };
    let a = api::validate_manifest(json, "");
    assert_eq!(a, api::validate_manifest(json, ""), "validation is deterministic");
    let report: serde_json::Value = serde_json::from_str(&a).expect("the report is JSON");
    let count = report["token_count"].as_u64().expect("token_count");
    if report["ok"] == true {
        assert!(count <= manifest::MANIFEST_TOKEN_CAP as u64, "accepted a manifest of {count} tokens");
        let m = api::load_manifest(json).expect("an accepted manifest loads");
        let canon = manifest::canonical_json(&m);
        assert_eq!(tokens::count(&canon) as u64, count, "the cap is counted on the canonical JSON");
        let again: serde_json::Value = serde_json::from_str(&api::validate_manifest(&canon, "")).expect("JSON");
        assert_eq!(again["ok"], true, "the canonical form of an accepted manifest is accepted");
        assert_eq!(again["token_count"].as_u64(), Some(count));
    } else {
        let errors = report["errors"].as_array().expect("errors");
        assert!(!errors.is_empty(), "a rejection names at least one problem");
        assert!(errors.iter().all(|e| e["code"].as_str().is_some_and(|c| !c.is_empty())), "every problem has a code");
    }
});
