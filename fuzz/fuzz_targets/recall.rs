//! `recall_instruction` (§21.3) request and response JSON: arbitrary request bodies
//! against the demo agent. Properties: the response is deterministic for a fixed host
//! context and round-trips through its own type; ranked units never exceed what hinted
//! ones leave of `max_chunks` (an answered request's is 1 to 50); the token budget is exceeded only by guaranteed units
//! (§21.3.3); counts are exact; scores are in [0, 1] and ranked ones meet `min_score` and are above 0.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::recall::{RecallRequest, RecallResponse, DEFAULT_MAX_CHUNKS, DEFAULT_TOKEN_BUDGET, MAX_CHUNKS_LIMIT};
use lid_core::{api, store::NoAudit, tokens};
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static DEMO: OnceLock<(String, lid_core::store::MemoryFacts)> = OnceLock::new();
    let (manifest, facts) = DEMO.get_or_init(lid_fuzz::demo);
    let Some(request) = lid_fuzz::text(data) else { return };
    let a = api::recall(manifest, request, lid_fuzz::CONTEXT, facts, &NoAudit);
    assert_eq!(a, api::recall(manifest, request, lid_fuzz::CONTEXT, facts, &NoAudit), "recall is deterministic");
    let out = match a {
        Ok(out) => out,
        Err(e) => {
            assert!(!e.code().is_empty() && (400..600).contains(&e.status()), "errors carry a code and a status");
            return;
        }
    };
    let req: RecallRequest = serde_json::from_str(request).expect("an answered request parses");
    let resp: RecallResponse = serde_json::from_str(&out).expect("the response has the §21.3.2 shape");
    assert_eq!(serde_json::to_string(&resp).expect("serialises"), out, "the response round-trips");
    let max_chunks = req.max_chunks.unwrap_or(DEFAULT_MAX_CHUNKS) as usize;
    assert!((1..=MAX_CHUNKS_LIMIT as usize).contains(&max_chunks), "max_chunks {max_chunks} was answered");
    let budget = req.token_budget.unwrap_or(DEFAULT_TOKEN_BUDGET) as u64;
    // §21.3.3: hinted units MUST be included (subject to the budget only); ranked ones
    // fill what is left of `max_chunks`.
    // A hinted guaranteed unit takes no slot; a ranked one does (it ranked among the top).
    let m: serde_json::Value = serde_json::from_str(manifest).expect("the demo manifest is JSON");
    let guaranteed: Vec<&str> = m["entries"].as_array().into_iter().flatten().filter(|e| e["guarantee_load"] == true).filter_map(|e| e["name"].as_str()).collect();
    let is_guaranteed = |c: &&lid_core::recall::Chunk| guaranteed.contains(&c.name.as_str());
    let hinted = resp.chunks.iter().filter(|c| c.selected_by == "manifest_hint" && !is_guaranteed(c)).count();
    let ranked = resp.chunks.iter().filter(|c| c.selected_by == "ranked").count();
    assert!(ranked <= max_chunks.saturating_sub(hinted), "{ranked} ranked + {hinted} hinted chunks for max_chunks {max_chunks}");
    let picked = resp.chunks.iter().filter(|c| !is_guaranteed(c)).count();
    let total: u64 = resp.chunks.iter().map(|c| c.tokens as u64).sum();
    assert_eq!(total, resp.total_tokens as u64, "total_tokens is the sum of the chunks");
    assert!(picked == 0 || total <= budget, "{total} tokens over the {budget}-token budget with non-guaranteed units");
    let mut names: Vec<&str> = resp.chunks.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), resp.chunks.len(), "no unit is returned twice");
    for c in &resp.chunks {
        assert_eq!(c.tokens as usize, tokens::count(&c.content), "chunk token counts are exact");
        assert!((0.0..=1.0).contains(&c.score), "score {} out of [0, 1]", c.score);
        if c.selected_by == "ranked" {
            assert!(c.score >= req.min_score.unwrap_or(0.0) && c.score > 0.0, "a ranked chunk below min_score, or one nothing reached");
        }
    }
});
