//! Native tuning harness for recall ranking (§21.3.3): ranks every probe of an
//! evaluation set with [`lid_core::rank::Ranker`] and prints the
//! [`lid_core::eval`] report.
//!
//! ```text
//! cargo run --release -p lid-core --example eval_native -- [--json] [--verbose] [--large] [--bench] [AGENTS_DIR] [PROBES]
//! ```
//! Defaults: `/work/shared/eval/agents` and the `probes-dev.jsonl` next to it.
//! `--large` reads eval-large knowledge packs through `lid_core::knowledge`, as the engine
//! does (defaults `/work/shared/eval-large/packs` and its probes).
//! `--bench` times building and ranking over ~10,000 units (eval-large units repeated).
//! Env: `LID_PARAMS` (JSON of `rank::Params`), `LID_WEIGHTS` (JSON of `rank::Weights`),
//! `LID_DUMP` (a file to append every probe's full ranking to, one JSON line each:
//! `{"id", "agent", "scores": [[unit, score], ...]}`, for comparisons outside lid).
//! `LID_EXPLAIN` (a probe id: print each intent word's best matches and the top five units'
//! signals), with `LID_TERMS` also the vocabulary terms each word reaches and their strengths.
//! `LID_SIGNALS` adds each unit's lexical, semantic, graph and surface signals to the
//! `LID_DUMP` rows (`"signals": [[unit, lexical, semantic, graph, surface], ...]`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lid_core::eval::{evaluate, format_table, parse_probes, ProbeResult};
use lid_core::manifest::Manifest;
use lid_core::rank::{Params, Ranker, UnitDoc, Weights};

struct Unit {
    name: String,
    description: String,
    intents: Vec<String>,
    keywords: Vec<String>,
    task_types: Vec<String>,
    required_by: Vec<String>,
    body: String,
}

impl Unit {
    fn doc(&self) -> UnitDoc<'_> {
        UnitDoc {
            name: &self.name,
            description: &self.description,
            intents: &self.intents,
            keywords: &self.keywords,
            task_types: &self.task_types,
            required_by_task_types: &self.required_by,
            body: &self.body,
        }
    }
}

fn load_agents(dir: &Path) -> BTreeMap<String, Vec<Unit>> {
    let mut out = BTreeMap::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).expect("agents dir").filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for a in entries {
        let mf = a.join("manifest.json");
        let Ok(text) = std::fs::read_to_string(&mf) else { continue };
        let m: Manifest = serde_json::from_str(&text).expect("manifest");
        let mut units = Vec::new();
        for e in &m.entries {
            let body = std::fs::read_to_string(a.join("units").join(format!("{}.md", e.name))).unwrap_or_default();
            units.push(Unit {
                name: e.name.clone(),
                description: e.description.clone(),
                intents: e.load_triggers.intents.clone(),
                keywords: e.load_triggers.keywords.clone(),
                task_types: e.load_triggers.task_types.clone(),
                required_by: e.required_by_task_types.clone(),
                body,
            });
        }
        out.insert(m.agent_id.clone(), units);
    }
    out
}

/// Walk a pack's files (relative paths, sorted; hidden entries skipped).
fn pack_files(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push((rel.to_string_lossy().replace('\\', "/"), p.clone()));
            }
        }
    }
    out.sort();
    out
}

/// Knowledge packs read exactly as the engine reads them (`lid_core::knowledge`).
fn load_packs(dir: &Path) -> BTreeMap<String, Vec<Unit>> {
    let mut out = BTreeMap::new();
    let mut packs: Vec<PathBuf> = std::fs::read_dir(dir).expect("packs dir").filter_map(|e| e.ok().map(|e| e.path())).collect();
    packs.sort();
    for p in packs {
        let Some(id) = p.file_name().and_then(|s| s.to_str()).map(|s| s.to_string()) else { continue };
        let Ok(kmd) = std::fs::read_to_string(p.join("KNOWLEDGE.md")) else { continue };
        let files = pack_files(&p);
        let mut facts = lid_core::store::MemoryFacts::new();
        for (rel, path) in &files {
            if lid_core::knowledge::unit_name(rel).is_some() {
                let content = std::fs::read_to_string(path).unwrap_or_default();
                facts.insert(lid_core::store::Fact { uri: format!("path:{rel}"), content, ..Default::default() });
            }
        }
        let spec = lid_core::knowledge::PackSpec { id: id.clone(), knowledge_md: kmd, files: files.into_iter().map(|f| f.0).collect(), digest: None };
        let (pack, resolved) = lid_core::knowledge::load(&spec, &facts).expect("pack");
        let units = pack
            .manifest
            .entries
            .iter()
            .zip(resolved)
            .map(|(e, r)| Unit {
                name: e.name.clone(),
                description: e.description.clone(),
                intents: vec![],
                keywords: vec![],
                task_types: vec![],
                required_by: vec![],
                body: r.map(|r| r.fact.content).unwrap_or_default(),
            })
            .collect();
        out.insert(id, units);
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let verbose = args.iter().any(|a| a == "--verbose");
    let large = args.iter().any(|a| a == "--large");
    let bench = args.iter().any(|a| a == "--bench");
    let pos: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let default_dir = if large { "/work/shared/eval-large/packs" } else { "/work/shared/eval/agents" };
    let dir = PathBuf::from(pos.first().map(|s| s.as_str()).unwrap_or(default_dir));
    let probes_path = pos
        .get(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.parent().unwrap_or(Path::new(".")).join("probes-dev.jsonl"));
    let params: Params = std::env::var("LID_PARAMS").ok().map(|s| serde_json::from_str(&s).expect("LID_PARAMS")).unwrap_or_default();
    let weights: Weights = std::env::var("LID_WEIGHTS").ok().map(|s| serde_json::from_str(&s).expect("LID_WEIGHTS")).unwrap_or_default();

    let corpora = if large { load_packs(&dir) } else { load_agents(&dir) };

    if bench {
        run_bench(&corpora, &weights);
        return;
    }

    let probes = parse_probes(&std::fs::read_to_string(&probes_path).expect("probes file")).expect("probes");
    let mut rankers = BTreeMap::new();
    let mut build_us = Vec::new();
    for (id, units) in &corpora {
        let docs: Vec<UnitDoc> = units.iter().map(|u| u.doc()).collect();
        let _ = Ranker::build(&docs); // warm the lexicon
        let t = Instant::now();
        let r = Ranker::build(&docs).with_params(params);
        build_us.push((id.clone(), units.len(), t.elapsed().as_secs_f64() * 1e6));
        rankers.insert(id.clone(), r);
    }
    let mut dump = std::env::var_os("LID_DUMP").map(|path| {
        std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap_or_else(|e| panic!("LID_DUMP {path:?}: {e}"))
    });
    let mut results = Vec::new();
    let mut rank_us = 0.0;
    for p in &probes {
        let Some(r) = rankers.get(&p.agent_id) else {
            eprintln!("probe {}: unknown agent {}", p.id, p.agent_id);
            continue;
        };
        let t = Instant::now();
        let ranked = r.rank(&p.intent, p.wake_reason.as_deref(), &weights);
        rank_us += t.elapsed().as_secs_f64() * 1e6;
        if std::env::var("LID_EXPLAIN").ok().as_deref() == Some(p.id.as_str()) {
            let names: Vec<&str> = rankers_names(&corpora, &p.agent_id);
            for (w, st, u, m) in r.explain(&p.intent) {
                let mut v: Vec<(usize, f32)> = m.iter().copied().enumerate().filter(|x| x.1 > 0.0).collect();
                v.sort_by(|a, b| b.1.total_cmp(&a.1));
                let s: Vec<String> = v.iter().take(5).map(|(d, x)| format!("{}={:.2}", names.get(*d).unwrap_or(&"?"), x)).collect();
                println!("   {w}/{st} u={u:.2}: {}", s.join(" "));
            }
            if std::env::var_os("LID_TERMS").is_some() {
                for (w, ts) in r.explain_terms(&p.intent) {
                    println!("   {w} -> {}", ts.iter().map(|(t, f)| format!("{t}={f:.2}")).collect::<Vec<_>>().join(" "));
                }
            }
            for s in ranked.iter().take(5) {
                println!("   {:<28} {:.3} L{:.2} S{:.2} G{:.2}", s.name, s.score, s.lexical, s.semantic, s.graph);
            }
        }
        if let Some(f) = dump.as_mut() {
            use std::io::Write;
            let mut row = serde_json::json!({"id": p.id, "agent": p.agent_id, "scores": ranked.iter().map(|s| (&s.name, s.score)).collect::<Vec<_>>()});
            if std::env::var_os("LID_SIGNALS").is_some() {
                row["signals"] = serde_json::json!(ranked.iter().map(|s| (&s.name, s.lexical, s.semantic, s.graph, s.surface)).collect::<Vec<_>>());
            }
            writeln!(f, "{row}").expect("writing LID_DUMP");
        }
        if verbose {
            let req_rank: Vec<String> = p
                .required_units
                .iter()
                .map(|u| format!("{}@{}", u, ranked.iter().position(|s| &s.name == u).map(|i| i + 1).unwrap_or(0)))
                .collect();
            let ok = p.expect_none || p.required_units.iter().all(|u| ranked.iter().take(1).any(|s| &s.name == u));
            println!(
                "{} {:<9} {:<24} top={:<28} {:.3} (L{:.2} S{:.2} G{:.2}) req=[{}] | {}",
                if ok { " " } else { "X" },
                p.id,
                p.agent_id,
                ranked.first().map(|s| s.name.as_str()).unwrap_or(""),
                ranked.first().map(|s| s.score).unwrap_or(0.0),
                ranked.first().map(|s| s.lexical).unwrap_or(0.0),
                ranked.first().map(|s| s.semantic).unwrap_or(0.0),
                ranked.first().map(|s| s.graph).unwrap_or(0.0),
                req_rank.join(","),
                p.intent
            );
        }
        results.push(ProbeResult::new(p, ranked.into_iter().map(|s| (s.name, s.score)).collect()));
    }
    let report = evaluate(&results);
    if json {
        println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    } else {
        print!("{}", format_table(&report));
        println!("misses@3: {:?}", report.misses_at_3);
        for (id, n, us) in &build_us {
            println!("build {id:<26} {n:>4} units {us:>9.1} us");
        }
        println!("rank: {:.1} us/probe over {} probes", rank_us / probes.len().max(1) as f64, probes.len());
    }
}

fn rankers_names<'a>(corpora: &'a BTreeMap<String, Vec<Unit>>, id: &str) -> Vec<&'a str> {
    corpora.get(id).map(|v| v.iter().map(|u| u.name.as_str()).collect()).unwrap_or_default()
}

fn run_bench(corpora: &BTreeMap<String, Vec<Unit>>, weights: &Weights) {
    if let Some(units) = corpora.values().next() {
        let text: String = units.iter().map(|u| u.body.as_str()).collect::<Vec<_>>().join("\n");
        let t = Instant::now();
        let w = lid_core::rank::text::words(&text);
        println!("words: {} chars -> {} words in {:.1} us", text.len(), w.len(), t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let mut k = 0;
        for x in &w {
            k += lid_core::rank::stem::stem(&x.text).len();
        }
        println!("stem: {:.1} us ({k})", t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let c = lid_core::rank::index::content_words(&text);
        println!("content_words: {} in {:.1} us", c.len(), t.elapsed().as_secs_f64() * 1e6);
        let mut ws: Vec<&str> = w.iter().map(|x| x.text.as_str()).collect();
        ws.sort();
        ws.dedup();
        for _ in 0..2 {
        let t = Instant::now();
        let k: usize = ws.iter().map(|x| lid_core::rank::lexicon::concepts(x).len()).sum();
        println!("concepts: {} words in {:.1} us ({k})", ws.len(), t.elapsed().as_secs_f64() * 1e6);
        }
    }
    for (id, units) in corpora.iter().take(3) {
        let docs: Vec<UnitDoc> = units.iter().map(|u| u.doc()).collect();
        let _ = Ranker::build(&docs);
        let t = Instant::now();
        let n = 50;
        for _ in 0..n {
            let _ = Ranker::build(&docs);
        }
        println!("build {id} ({} units): {:.1} us", docs.len(), t.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    let all: Vec<&Unit> = corpora.values().flatten().collect();
    if all.is_empty() {
        return;
    }
    let reps = 10_000usize.div_ceil(all.len());
    let mut owned: Vec<Unit> = Vec::new();
    for r in 0..reps {
        for u in &all {
            owned.push(Unit {
                name: format!("{}-r{r}", u.name),
                description: u.description.clone(),
                intents: u.intents.clone(),
                keywords: u.keywords.clone(),
                task_types: u.task_types.clone(),
                required_by: u.required_by.clone(),
                body: u.body.clone(),
            });
        }
    }
    owned.truncate(10_000);
    let docs: Vec<UnitDoc> = owned.iter().map(|u| u.doc()).collect();
    let t = Instant::now();
    let r = Ranker::build(&docs);
    println!("build {} units: {:.1} ms", docs.len(), t.elapsed().as_secs_f64() * 1e3);
    let intents = [
        "how do I configure remote write with basic auth",
        "session resumption after the server restarts the connection",
        "limit memory of a service container",
        "nothing at all relevant: bake a sourdough loaf",
    ];
    for i in intents {
        let t = Instant::now();
        let n = 5;
        for _ in 0..n {
            let _ = r.rank(i, None, weights);
        }
        println!("rank 10k: {:.2} ms  ({i})", t.elapsed().as_secs_f64() * 1e3 / n as f64);
    }
    let bytes = postcard::to_allocvec(r.index()).map(|v| v.len()).unwrap_or(0);
    println!("postcard index: {bytes} bytes");
}
