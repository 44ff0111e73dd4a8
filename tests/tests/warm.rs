//! A pooled runtime warms its recall slots (`Runtime::warm_recall_slots`,
//! `host/src/engine.rs`): each recalls a small agent of lid's own, with `WARM_HEAP` of
//! its heap written, so that an agent's first recall in such a slot finds the heap pages
//! it writes already resident instead of faulting each in (about 3 µs a page on the
//! machine it was measured on; 9 pages for the demo agent, 21–37 for the eval agents).
//!
//! Linux only: page faults are read from `/proc/self/stat`. One test in its own
//! process, so no other test's threads fault pages in meanwhile.

#![cfg(target_os = "linux")]

use std::sync::Arc;

use lid_host::agent_dir;
use lid_host::engine::{NoAudit, Runtime, RuntimeOptions, Storage};
use lid_tests::minor_faults;
use serde_json::json;

#[test]
fn an_agents_first_recall_in_a_warmed_slot_faults_in_no_heap_pages() {
    let a = agent_dir::load(&lid_tests::root().join("examples/demo-agent")).expect("demo agent");
    let st = Storage { facts: a.facts.clone(), audit: Arc::new(NoAudit) };
    let ctx = json!({"now_ms": 1767225600000u64, "entropy": "0123456789abcdef0123", "heartbeat_id": "hb-1", "corpus_key": "demo:1"}).to_string();
    let req = json!({"intent": "roll back a failing canary"}).to_string();
    let prepared = |rt: &Runtime| {
        // as the service has it: the corpus prepared (on the general slots) before recalls
        rt.recall_preparing(&st, &a.manifest_json, &req, &ctx).expect("engine").expect("recall")
    };
    let first_recall_faults = |rt: &Runtime, want: &str| {
        let f0 = minor_faults();
        let got = rt.recall_prepared(&st, &a.manifest_json, &req, &ctx).expect("engine").expect("recall");
        let faults = minor_faults() - f0;
        assert_eq!(got, want, "a warmed slot answers as any other");
        faults
    };

    // Unwarmed slots: the first recall in one faults in the heap pages it writes.
    let cold = Runtime::new(RuntimeOptions { pooling: true, warm_slots: Some(0), ..RuntimeOptions::default() }).expect("pooled runtime");
    let want = prepared(&cold);
    let unwarmed = first_recall_faults(&cold, &want);
    assert!(unwarmed >= 8, "an unwarmed slot's first recall faulted {unwarmed} pages: this test no longer measures anything");

    // Warmed slots (as `lid serve` builds them): the same recall finds its pages resident.
    let warm = Runtime::new(RuntimeOptions { pooling: true, warm_slots: Some(2), ..RuntimeOptions::default() }).expect("pooled runtime");
    assert_eq!(prepared(&warm), want);
    // (measured: 0 with the warm-up's heap, 10 without; the host's own allocator may take
    // a page or two of its own at any call)
    let warmed = first_recall_faults(&warm, &want);
    assert!(warmed <= 4, "the first recall in a warmed slot faulted {warmed} pages (an unwarmed one {unwarmed})");
}
