//! Boot-stub rendering (§21.1) of arbitrary manifests against the demo agent's units.
//! Properties: rendering is deterministic for every profile; a rendered stub's body is
//! within the 500-token limit (§21.1.2) and its counts are exact; unknown profiles
//! render as `generic` (§21.1.3).
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::{api, stub, tokens};

fuzz_target!(|data: &[u8]| {
    let Some(json) = lid_fuzz::text(data) else { return };
    let Ok(m) = serde_json::from_str::<serde_json::Value>(json) else { return };
    let facts = lid_fuzz::facts_for(&m);
    for profile in [None, Some("generic"), Some("paperclip-claude-code"), Some("openai-assistants"), Some("no-such-profile")] {
        let a = api::render_stub(json, profile, &facts);
        let b = api::render_stub(json, profile, &facts);
        assert_eq!(a, b, "rendering is deterministic");
        let Ok(out) = a else { continue };
        let s: serde_json::Value = serde_json::from_str(&out).expect("the stub is JSON");
        let body_tokens = s["body_tokens"].as_u64().expect("body_tokens");
        assert!(body_tokens <= stub::BODY_TOKEN_LIMIT as u64, "rendered a {body_tokens}-token body");
        let text = s["text"].as_str().expect("text");
        assert_eq!(s["total_tokens"].as_u64(), Some(tokens::count(text) as u64), "total_tokens is exact");
        assert!(body_tokens <= tokens::count(text) as u64);
        let want = if profile == Some("no-such-profile") { Some("generic") } else { profile.or(Some("generic")) };
        assert_eq!(s["adapter_profile"].as_str(), want, "profile resolution");
    }
});
