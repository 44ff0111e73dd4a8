//! `instruction:` URIs and version ordering (§21.4). The input is split at the first
//! newline into a URI and a second version. Properties: a parsed URI formats back to the
//! same string; floating aliases are never accepted; version comparison is a total order
//! (reflexive-equal, antisymmetric, consistent with `latest`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use lid_core::uri::{check_version, compare_versions, latest, InstructionUri};
use std::cmp::Ordering;

fuzz_target!(|data: &[u8]| {
    let Some(text) = lid_fuzz::text(data) else { return };
    let (a, b) = text.split_once('\n').unwrap_or((text, "v1"));
    if let Ok(u) = InstructionUri::parse(a) {
        assert_eq!(u.to_string(), a, "format(parse(s)) == s");
        assert_eq!(InstructionUri::parse(&u.to_string()), Ok(u.clone()));
        assert!(!["latest", "current", "head"].contains(&u.version.to_ascii_lowercase().as_str()), "floating alias accepted");
        assert!(u.unit_key().starts_with("instruction:") && a.starts_with(&u.unit_key()));
    }
    let v = a.rsplit('/').next().unwrap_or(a);
    assert_eq!(compare_versions(v, v), Ordering::Equal, "a version equals itself");
    assert_eq!(compare_versions(v, b), compare_versions(b, v).reverse(), "comparison is antisymmetric");
    if check_version(v).is_ok() && check_version(b).is_ok() {
        let (va, vb) = (v.to_string(), b.to_string());
        let top = latest([&va, &vb]).expect("two versions have a latest");
        assert_ne!(compare_versions(top, if top == &va { &vb } else { &va }), Ordering::Less, "latest is the greatest");
    }
});
