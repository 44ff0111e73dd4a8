//! Spin native `recall` over an agent directory for a few seconds (for `perf record`):
//! `cargo run --release -p lid-core --example recall_profile -- AGENT_DIR "intent" [--uncached]`.

use lid_core::store::{Fact, MemoryFacts, NoAudit};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).expect("AGENT_DIR"));
    let intent = args.get(2).cloned().unwrap_or_else(|| "what should I do next".into());
    let uncached = args.iter().any(|a| a == "--uncached");
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest.json");
    let m: lid_core::manifest::Manifest = serde_json::from_str(&manifest).expect("manifest");
    let load = || {
        let mut facts = MemoryFacts::new();
        for e in &m.entries {
            if let (Some(uri), Ok(content)) = (&e.fact_uri, std::fs::read_to_string(dir.join("units").join(format!("{}.md", e.name)))) {
                let version = uri.rsplit('/').next().unwrap_or_default().to_string();
                // As hosts do at write time: the content hash comes with the fact.
                let sha256 = Some(Fact { content: content.clone(), ..Fact::default() }.content_sha256());
                facts.insert(Fact { uri: uri.clone(), content, version, sha256, ..Fact::default() });
            }
        }
        facts
    };
    let mut facts = load();
    let req = serde_json::json!({ "intent": intent }).to_string();
    let ctx = r#"{"now_ms": 1767225600000, "entropy": "0123456789abcdef0123"}"#;
    let (t, mut n) = (Instant::now(), 0u32);
    while t.elapsed() < Duration::from_secs(3) {
        if uncached {
            facts = load();
        }
        let _ = lid_core::api::recall(&manifest, &req, ctx, &facts, &NoAudit);
        n += 1;
    }
    println!("{n} recalls, {:.3} ms each", t.elapsed().as_secs_f64() * 1e3 / n as f64);
}
