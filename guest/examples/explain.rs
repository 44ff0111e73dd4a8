//! Print, per query word, its weight and match strength in every unit:
//! `cargo run --release -p lid-core --example explain -- AGENT_DIR "intent"`.
use lid_core::manifest::Manifest;
use lid_core::rank::{Ranker, UnitDoc};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(intent)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: explain AGENT_DIR \"intent\"");
        std::process::exit(2);
    };
    let dir = std::path::PathBuf::from(dir);
    let m: Manifest = match std::fs::read_to_string(dir.join("manifest.json")).map_err(|e| e.to_string()).and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string())) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("explain: cannot read {}: {e}", dir.join("manifest.json").display());
            std::process::exit(1);
        }
    };
    let bodies: Vec<String> = m.entries.iter().map(|e| std::fs::read_to_string(dir.join("units").join(format!("{}.md", e.name))).unwrap_or_default()).collect();
    let docs: Vec<UnitDoc> = m.entries.iter().zip(&bodies).map(|(e, b)| UnitDoc { name: &e.name, description: &e.description, intents: &e.load_triggers.intents, keywords: &e.load_triggers.keywords, task_types: &e.load_triggers.task_types, required_by_task_types: &e.required_by_task_types, body: b }).collect();
    let r = Ranker::build(&docs);
    let names: Vec<String> = m.entries.iter().map(|e| e.name.chars().take(10).collect()).collect();
    println!("{:<14} {:>5} {}", "word", "w", names.iter().map(|n| format!("{n:>10}")).collect::<String>());
    for (surface, _stem, w, ms) in r.explain(intent) {
        println!("{surface:<14} {w:>5.2} {}", ms.iter().map(|x| format!("{x:>10.2}")).collect::<String>());
    }
    if std::env::var_os("LID_TERMS").is_some() {
        for (w, ts) in r.explain_terms(intent) {
            println!("{w}: {}", ts.iter().map(|(t, f)| format!("{t}={f:.2}")).collect::<Vec<_>>().join(" "));
        }
    }
    for s in r.rank(intent, None, &Default::default()).iter().take(5) {
        println!("{:<28} {:.3}", s.name, s.score);
    }
}
