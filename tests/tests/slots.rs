//! The pooled runtime keeps its recall slots apart from every other call
//! (`host/src/engine.rs`, the `general` field): a pooled slot keeps mapped every page of
//! the component's data image that a call read, and its reset walks them all after
//! each later call, so one token count in a recall slot (the cl100k table is 2.5 MB of
//! that image) would slow every later recall there.
//!
//! Linux only: the pages a slot keeps mapped are read from `/proc/self/pagemap`. One test
//! in its own process, so no other runtime's slots are in the picture.

#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use lid_host::agent_dir;
use lid_host::engine::{NoAudit, Runtime, RuntimeOptions, Storage};
use serde_json::json;

const PAGE: u64 = 4096;

/// Present pages of every mapping of a wasm memory image (one per pooled slot that has
/// run the component), by start address.
fn image_pages() -> BTreeMap<u64, usize> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    let mut pagemap = std::fs::File::open("/proc/self/pagemap").expect("open /proc/self/pagemap");
    let mut out = BTreeMap::new();
    // The image is mapped from a memfd, or straight from the compiled file (private, writable).
    let image = |l: &&str| l.contains("wasm-memory-image") || (l.ends_with(".cwasm") && l.split_whitespace().nth(1) == Some("rw-p"));
    for line in maps.lines().filter(image) {
        let range = line.split_whitespace().next().expect("a range");
        let (a, b) = range.split_once('-').expect("start-end");
        let (a, b) = (u64::from_str_radix(a, 16).expect("hex"), u64::from_str_radix(b, 16).expect("hex"));
        let n = ((b - a) / PAGE) as usize;
        let mut raw = vec![0u8; n * 8];
        pagemap.seek(SeekFrom::Start(a / PAGE * 8)).expect("seek pagemap");
        pagemap.read_exact(&mut raw).expect("read pagemap");
        let present = raw.chunks_exact(8).filter(|e| e[7] >> 7 == 1).count();
        out.insert(a, present);
    }
    out
}

#[test]
fn token_counts_and_index_builds_never_run_on_the_recall_slots() {
    // No warmed slots: the test finds the recall slots by the pages its recalls map.
    let rt = Runtime::new(RuntimeOptions { pooling: true, warm_slots: Some(0), ..RuntimeOptions::default() }).expect("pooled runtime");
    let a = agent_dir::load(&lid_tests::root().join("examples/demo-agent")).expect("demo agent");
    let st = Storage { facts: a.facts.clone(), audit: Arc::new(NoAudit) };
    let ctx = json!({"now_ms": 1767225600000u64, "entropy": "0123456789abcdef0123", "heartbeat_id": "hb-1", "corpus_key": "demo:1"}).to_string();
    let req = json!({"intent": "roll back a failing canary"}).to_string();

    // The first recall prepares the corpus (builds and caches its index): general slots.
    let first = rt.recall_preparing(&st, &a.manifest_json, &req, &ctx).expect("engine").expect("recall");
    let before = image_pages();
    for _ in 0..10 {
        assert_eq!(rt.recall(&st, &a.manifest_json, &req, &ctx).expect("engine").expect("recall"), first);
    }
    let after = image_pages();
    let hot: Vec<u64> = after.iter().filter(|(at, n)| before.get(at) != Some(n)).map(|(at, _)| *at).collect();
    assert!(!hot.is_empty(), "the recalls ran in a slot of their own: {before:?} -> {after:?}");
    // ... one the preparing recall (the index build) never ran in.
    assert!(hot.iter().all(|at| !before.contains_key(at)), "a recall ran where the index was built: {before:?} -> {after:?}");

    // A large token count reads most of the cl100k table...
    let text: String = (0..20_000).map(|i| format!("word{i} ")).collect();
    assert!(rt.count_tokens(&Storage::none(), &text).expect("count") > 20_000);
    for _ in 0..10 {
        assert_eq!(rt.recall(&st, &a.manifest_json, &req, &ctx).expect("engine").expect("recall"), first);
    }
    let end = image_pages();
    let table = (2_400_000 / PAGE) as usize;
    assert!(end.values().any(|&n| n > table / 2), "the count read the table in some slot: {end:?}");
    // ... in a slot the recalls never use: theirs keep only what a recall reads.
    for at in &hot {
        assert!(end[at] < table / 2, "recall slot at {at:#x} holds {} pages after the count ({end:?})", end[at]);
        assert_eq!(end[at], after[at], "recall slot at {at:#x} grew: {after:?} -> {end:?}");
    }
}
