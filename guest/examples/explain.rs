//! Print, per query word, its weight and match strength in every unit:
//! `cargo run --release -p lid-core --example explain -- AGENT_DIR "intent"`.
use lid_core::manifest::Manifest;
use lid_core::rank::{Ranker, UnitDoc};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    let m: Manifest = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let bodies: Vec<String> = m.entries.iter().map(|e| std::fs::read_to_string(dir.join("units").join(format!("{}.md", e.name))).unwrap_or_default()).collect();
    let docs: Vec<UnitDoc> = m.entries.iter().zip(&bodies).map(|(e, b)| UnitDoc { name: &e.name, description: &e.description, intents: &e.load_triggers.intents, keywords: &e.load_triggers.keywords, task_types: &e.load_triggers.task_types, required_by_task_types: &e.required_by_task_types, body: b }).collect();
    let r = Ranker::build(&docs);
    let names: Vec<String> = m.entries.iter().map(|e| e.name.chars().take(10).collect()).collect();
    println!("{:<14} {:>5} {}", "word", "w", names.iter().map(|n| format!("{n:>10}")).collect::<String>());
    for (surface, _stem, w, ms) in r.explain(&args[2]) {
        println!("{surface:<14} {w:>5.2} {}", ms.iter().map(|x| format!("{x:>10.2}")).collect::<String>());
    }
    for s in r.rank(&args[2], None, &Default::default()).iter().take(5) {
        println!("{:<28} {:.3}", s.name, s.score);
    }
}
