//! The §21.5.2 audit submission body on arbitrary bytes. Properties: deterministic; an
//! accepted submission has a well-formed `audi_` ULID token and at most 512 names per
//! list, and its normalised JSON is accepted again unchanged; rejections carry the
//! documented codes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::audit::{parse_submission, valid_token, MAX_FEEDBACK_UNITS};

fuzz_target!(|data: &[u8]| {
    let Some(body) = lid_fuzz::text(data) else { return };
    let a = parse_submission(body);
    assert_eq!(a, parse_submission(body), "parsing is deterministic");
    match a {
        Ok(s) => {
            assert!(valid_token(&s.audit_token));
            assert!(s.used_chunks.len() <= MAX_FEEDBACK_UNITS && s.missed_chunks.len() <= MAX_FEEDBACK_UNITS);
            let again = serde_json::to_string(&s).expect("serialises");
            assert_eq!(parse_submission(&again), Ok(s), "the normalised form is a fixed point");
        }
        Err(e) => assert!(["invalid_json", "invalid_request", "audit_token_invalid"].contains(&e.code()), "unexpected code {}", e.code()),
    }
});
