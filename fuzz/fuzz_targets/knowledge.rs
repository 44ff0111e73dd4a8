//! `KNOWLEDGE.md` front matter (Agent Knowledge runtime, Step 1–2) on arbitrary text.
//! Properties: deterministic; an accepted file has the catalog fields, and the guide it
//! returns is the tail of the input after the closing `---`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::knowledge::parse_knowledge_md;

fuzz_target!(|data: &[u8]| {
    let Some(text) = lid_fuzz::text(data) else { return };
    let a = parse_knowledge_md(text);
    assert_eq!(a, parse_knowledge_md(text), "parsing is deterministic");
    match a {
        Ok((meta, guide)) => {
            assert!(text.ends_with(guide), "the guide is the input's tail");
            assert!(guide.len() < text.len(), "the front matter is not part of the guide");
            assert!(!meta.name.trim().is_empty(), "an accepted pack has a name");
        }
        Err(e) => assert!(e.code().starts_with("knowledge_"), "errors carry a code"),
    }
});
