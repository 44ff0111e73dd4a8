//! The markdown splitter (§21.6.3) on arbitrary text; a first line `re:<regex>` selects
//! the `split_regex` mode. Properties: deterministic; unit names are unique kebab-case of
//! at most 48 characters;
//! the draft manifest lists exactly the units, each with its exact token count.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::{api, manifest::is_kebab, migrate::Migration, tokens};

fuzz_target!(|data: &[u8]| {
    let Some(text) = lid_fuzz::text(data) else { return };
    let (markdown, options) = match text.strip_prefix("re:").and_then(|r| r.split_once('\n')) {
        Some((re, md)) => (md, serde_json::json!({"deployment": "fuzz", "agent": "fuzz-agent", "split_regex": re}).to_string()),
        None => (text, r#"{"deployment":"fuzz","agent":"fuzz-agent"}"#.to_string()),
    };
    let a = api::migrate(markdown, &options);
    assert_eq!(a, api::migrate(markdown, &options), "migration is deterministic");
    let Ok(out) = a else { return };
    let m: Migration = serde_json::from_str(&out).expect("the migration has its documented shape");
    let mut names: Vec<&str> = m.units.iter().map(|u| u.name.as_str()).collect();
    assert!(names.iter().all(|n| is_kebab(n) && n.len() <= 48), "unit names are kebab-case, at most 48 characters: {names:?}");
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), m.units.len(), "unit names are unique");
    let entries: Vec<&str> = m.manifest.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(entries, m.units.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), "the draft manifest lists the units");
    for u in &m.units {
        assert_eq!(u.token_estimate, tokens::count(&lid_core::migrate::unit_file(&u.content)), "token counts are exact: the unit file as written");
    }
});
