//! Handoff JSON → Session Markdown (boot-context-discussion, "Integration with
//! coordination protocols"), on arbitrary bytes. Properties: deterministic; an accepted
//! handoff renders to Markdown that parses back to the same handoff (the mapping is
//! reversible); rejections name the fields; arbitrary Markdown never panics the reader.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::handoff::{parse_handoff, parse_session, render_session};

fuzz_target!(|data: &[u8]| {
    let Some(text) = lid_fuzz::text(data) else { return };
    let a = parse_handoff(text);
    assert_eq!(a, parse_handoff(text), "validation is deterministic");
    match a {
        Ok(h) => {
            let md = render_session(&h);
            assert_eq!(md, render_session(&h), "rendering is deterministic");
            assert_eq!(parse_session(&md).as_ref(), Ok(&h), "JSON → Markdown → JSON is the identity");
        }
        Err(e) => assert!(!e.problems.is_empty() && e.problems.iter().all(|p| !p.field.is_empty())),
    }
    let _ = parse_session(text);
});
