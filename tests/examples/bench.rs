//! lid's benchmark binary: prints the figures recorded in the README's Performance section.
//!
//! ```text
//! cargo run --release -p lid-tests --example bench [-- --quick]
//! ```
//!
//! * recall p50/p95 for the `engineer` dev agent (or the demo agent when `../shared` is
//!   absent) and for synthetic 1,000 / 10,000-unit agents, natively (the `lid-core` crate
//!   linked as Rust) and through the component (fresh `Store` + instantiate per call, as
//!   the CLI and the service do);
//! * cold start: runtime creation from the on-disk compiled cache, then instantiate + the
//!   first recall, with the on-demand and the pooling allocator (the median and the
//!   worst over 5 fresh runtimes, 25 in the full run);
//! * knowledge packs through the precomputed index (`lid_core::knowledge`): the three
//!   eval-large packs (771 units, their dev probes' intents) and synthetic 1,000 /
//!   10,000-unit packs: index build time, index size per unit, recall p50 with the
//!   index cached (native and component) and peak guest memory (the smallest memory
//!   cap under which the call still succeeds);
//! * attestation (§21.4.3) per fact, natively: signing, verifying, a memo hit, and a
//!   rotation's re-signing;
//! * cl100k token counting throughput, native vs component.
//!
//! `--quick` (used by `.ci/run`) runs fewer iterations and skips the 10,000-unit corpus.
//!
//! Profile modes (one measurement spun for `perf`): `--profile-component DIR`,
//! `--profile-native DIR`, `--profile-pack DIR`, `--profile-native-pack DIR`, `--profile-tokens`,
//! `--profile-native-tokens`, `--profile-instantiate`, and `--profile-first` (fresh pooled
//! runtimes, each timing its first recall and counting its page faults: the demo agent's,
//! or `LID_PROFILE_AGENT`'s with `LID_PROFILE_INTENT`; `LID_PROFILE_RUNS` of them, 200 by
//! default; with `LID_PERF_CTL=CTL_FIFO,ACK_FIFO` and `perf record -D -1 --control
//! fifo:CTL_FIFO,ACK_FIFO`, sampling is on around the first recalls only).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lid_host::agent_dir;
use lid_host::engine::{EngineFailure, FactSource, NoAudit, Runtime, RuntimeOptions, Storage, DERIVED_PREFIX};

/// The agent's facts with no derived-index cache: every recall builds the index.
struct Uncached(Arc<agent_dir::MemFacts>);

impl FactSource for Uncached {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        if key.starts_with(DERIVED_PREFIX) {
            return Ok(None);
        }
        self.0.get(key)
    }
    fn keys(&self) -> Result<Vec<String>, String> {
        self.0.keys()
    }
}
use serde_json::json;

/// The context of pack recalls (a pack's index is keyed by its own digest).
const CTX: &str = r#"{"now_ms": 1767225600000, "entropy": "0123456789abcdef0123"}"#;

/// The context of an agent's recalls, as the service sends it: the host names the state
/// of the agent's manifest and facts (`corpus_key`), so its recalls use the prepared
/// corpus once it is cached (on disk too, beside the compiled component). Here the name
/// is a fingerprint of the manifest and every fact, so no two agents (and no edit of
/// one) share it.
fn agent_ctx(a: &agent_dir::AgentDir) -> anyhow::Result<String> {
    let mut state = a.manifest_json.clone().into_bytes();
    let mut keys = a.facts.keys().map_err(|e| anyhow::anyhow!(e))?;
    keys.retain(|k| !k.starts_with(DERIVED_PREFIX));
    keys.sort();
    for k in keys {
        state.extend_from_slice(k.as_bytes());
        state.extend(a.facts.get(&k).map_err(|e| anyhow::anyhow!(e))?.unwrap_or_default());
    }
    let key = format!("bench:{:016x}", lid_core::digest::fingerprint64(&state));
    Ok(json!({"now_ms": 1767225600000u64, "entropy": "0123456789abcdef0123", "corpus_key": key}).to_string())
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn time<F: FnMut()>(iters: usize, f: F) -> (Duration, Duration) {
    let samples = time_each(iters, f);
    (percentile(samples.clone(), 0.5), percentile(samples, 0.95))
}

/// `iters` timings of `f`, after one untimed call that warms the caches.
fn time_each<F: FnMut()>(iters: usize, mut f: F) -> Vec<Duration> {
    f();
    (0..iters)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// A deterministic synthetic agent of `n` units (~120-word bodies over a 4,000-word
/// vocabulary with a Zipf-like skew), written as an agent directory.
fn bench_recall(rt: &Runtime, label: &str, dir: &Path, intent: &str, iters: usize) -> anyhow::Result<()> {
    let a = agent_dir::load(dir)?;
    let ctx = agent_ctx(&a)?;
    let ctx = ctx.as_str();
    let st = Storage { facts: a.facts.clone(), audit: Arc::new(NoAudit) };
    let (manifest, facts) = lid_tests::native_facts(dir)?;
    let req = json!({"intent": intent, "max_chunks": 3, "token_budget": 2000}).to_string();
    let n = serde_json::from_str::<serde_json::Value>(&manifest)?["entries"].as_array().map_or(0, Vec::len);
    let native = lid_core::api::recall(&manifest, &req, ctx, &facts, &lid_core::store::NoAudit).map_err(|e| anyhow::anyhow!("{e}"))?;
    let component = rt.recall(&st, &a.manifest_json, &req, ctx)?.map_err(|e| anyhow::anyhow!("{}", e.message))?;
    anyhow::ensure!(native == component, "native and component recall differ for {label}");
    // Prepared now, the corpus is recalled as `lid serve` recalls it: the corpus key names
    // the manifest, which is not sent (`Runtime::recall_prepared`), natively too.
    let prepared = lid_core::api::recall("", &req, ctx, &facts, &lid_core::store::NoAudit).map_err(|e| anyhow::anyhow!("{e}"))?;
    anyhow::ensure!(prepared == native, "a recall without the manifest differs for {label}");
    let (n50, n95) = time(iters, || {
        let _ = lid_core::api::recall("", &req, ctx, &facts, &lid_core::store::NoAudit);
    });
    // cached recalls on a pool whose slots have served only cached recalls (see `serving_pool`)
    let serving = serving_pool()?;
    anyhow::ensure!(serving.recall_prepared(&st, &a.manifest_json, &req, ctx)?.map_err(|e| anyhow::anyhow!("{}", e.message))? == native, "recall_prepared differs for {label}");
    let (c50, c95) = time(iters, || {
        let _ = serving.recall_prepared(&st, &a.manifest_json, &req, ctx);
    });
    let uncached = Storage { facts: Arc::new(Uncached(a.facts.clone())), audit: Arc::new(NoAudit) };
    // Building the index of 10,000 units takes seconds: time the uncached path only below that.
    let u50 = if n < 10_000 {
        time(iters.min(20), || {
            let _ = rt.recall(&uncached, &a.manifest_json, &req, ctx);
        })
        .0
    } else {
        Duration::ZERO
    };
    println!(
        "recall {label:<22} {n:>6} units  native p50 {} p95 {}  component p50 {} p95 {}  ratio {:.2}x  (component without the cached index: p50 {})",
        ms(n50),
        ms(n95),
        ms(c50),
        ms(c95),
        c50.as_secs_f64() / n50.as_secs_f64(),
        ms(u50)
    );
    Ok(())
}

/// A pooled runtime for timing cached recalls, as a service's pool serves them. Wasmtime
/// resets a pooled slot by finding its written pages (`PAGEMAP_SCAN`) and rewriting them
/// in place up to `linear_memory_keep_resident`; a page stays resident, so once written it
/// is reset after every later call too. A slot that once ran a large call (an index
/// build, a 10,000-unit corpus) therefore resets that call's footprint on every later
/// recall: such calls get a runtime of their own here, and the pack table also reports
/// the recalls on the shared runtime that ran them.
fn serving_pool() -> anyhow::Result<Runtime> {
    Runtime::new(RuntimeOptions { pooling: true, ..RuntimeOptions::default() })
}

/// A synthetic knowledge pack of `n` units (the synthetic agent's vocabulary and body
/// length), written as `KNOWLEDGE.md` + `units/<name>.md`.
fn synthetic_pack(n: usize, dir: &Path) -> anyhow::Result<()> {
    let units = dir.join("units");
    if dir.join("KNOWLEDGE.md").exists() && std::fs::read_dir(&units).map(|r| r.count()).unwrap_or(0) == n {
        return Ok(());
    }
    let agent = dir.with_extension("agent");
    lid_tests::synthetic_agent(n, &agent)?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(&units)?;
    std::fs::write(dir.join("KNOWLEDGE.md"), "---\nname: synth\ndescription: synthetic bench pack\ntype: reference\nstatus: ready\n---\n# Synthetic\n")?;
    for e in std::fs::read_dir(agent.join("units"))? {
        let e = e?;
        let body = std::fs::read_to_string(e.path())?;
        // "## words" -> "# words": the first line is the unit's title
        std::fs::write(units.join(e.file_name()), body.replacen("## ", "# ", 1))?;
    }
    Ok(())
}

/// Counts the derived blobs (index blobs, segments) a native recall reads.
struct DerivedReads<'a> {
    inner: &'a lid_core::store::MemoryFacts,
    blobs: std::cell::Cell<usize>,
    bytes: std::cell::Cell<usize>,
}

impl lid_core::store::Facts for DerivedReads<'_> {
    fn get(&self, uri: &str) -> Result<Option<lid_core::store::Fact>, lid_core::store::StoreError> {
        self.inner.get(uri)
    }
    fn versions(&self, unit_key: &str) -> Result<Vec<String>, lid_core::store::StoreError> {
        self.inner.versions(unit_key)
    }
    fn cached(&self, key: &str) -> Option<Vec<u8>> {
        let b = self.inner.cached(key)?;
        self.blobs.set(self.blobs.get() + 1);
        self.bytes.set(self.bytes.get() + b.len());
        Some(b)
    }
    fn cache(&self, key: &str, blob: &[u8]) {
        self.inner.cache(key, blob)
    }
}

/// The index blobs a store holds after the engine built one pack's index: (count, total
/// bytes, bytes of the largest: the head of a split index, or the whole one).
fn derived_bytes(facts: &lid_core::store::MemoryFacts) -> (usize, usize, usize) {
    let d = facts.derived_sizes();
    (d.len(), d.iter().map(|x| x.1).sum(), d.iter().map(|x| x.1).max().unwrap_or(0))
}

/// The smallest guest memory cap (64 KiB steps) under which `f` still succeeds: the
/// peak linear memory of the call. The component's memory starts at 16 MiB (its initial
/// size, so that small calls never grow it), so 16 MiB is the floor of this figure.
fn peak_memory(f: impl Fn(&Runtime) -> bool) -> anyhow::Result<usize> {
    let (mut lo, mut hi) = (64usize << 10, 1usize << 30);
    while hi - lo > 64 << 10 {
        let mid = (lo + hi) / 2 / (64 << 10) * (64 << 10);
        let rt = Runtime::new(RuntimeOptions { memory_limit: mid, ..RuntimeOptions::default() })?;
        if f(&rt) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

fn mib(b: usize) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

/// Knowledge packs through the precomputed-index path: index build (native, and in the
/// component on a host with no derived blobs), index size per unit, recall p50 with the
/// index cached (native and component), peak guest memory. `intents` per pack id.
fn bench_packs(rt: &Runtime, label: &str, dirs: &[PathBuf], intents: &std::collections::BTreeMap<String, Vec<String>>, iters: usize) -> anyhow::Result<()> {
    let (mut native_all, mut comp_all, mut dirty_all) = (Vec::new(), Vec::new(), Vec::new());
    let mut units_all = 0usize;
    for dir in dirs {
        let p = lid_host::pack_dir::load(dir)?;
        let Some(qs) = intents.get(&p.id).filter(|q| !q.is_empty()) else { continue };
        let req = |i: &str| json!({"intent": i, "max_chunks": 3, "token_budget": 2000}).to_string();
        // native: build (fresh store, nothing cached), then recalls over the cached index
        let (doc, facts) = lid_tests::native_pack(dir)?;
        let t = Instant::now();
        let first = lid_core::api::recall(&doc, &req(&qs[0]), CTX, &facts, &lid_core::store::NoAudit).map_err(|e| anyhow::anyhow!("{e}"))?;
        let native_build = t.elapsed();
        let units = lid_core::api::rank(&doc, &qs[0], None, &facts).map_err(|e| anyhow::anyhow!("{e}"))?;
        let n = serde_json::from_str::<serde_json::Value>(&units)?["ranked"].as_array().map_or(0, Vec::len);
        units_all += n;
        // component: a host with no derived blobs builds the index on every call
        let uncached = Storage { facts: Arc::new(Uncached(p.facts.clone())), audit: Arc::new(NoAudit) };
        let (comp_build, _) = time(if n >= 5_000 { 1 } else { 2 }, || {
            let _ = rt.recall(&uncached, &p.document, &req(&qs[0]), CTX);
        });
        let st = Storage { facts: p.facts.clone(), audit: Arc::new(NoAudit) };
        let c = rt.recall(&st, &p.document, &req(&qs[0]), CTX)?.map_err(|e| anyhow::anyhow!("{}", e.message))?;
        anyhow::ensure!(c == first, "native and component recall differ for pack {}", p.id);
        // (the native store holds every blob the build wrote; a host's loads them lazily)
        let (blobs, bytes, head) = derived_bytes(&facts);
        // Each side in a loop of its own, as a host runs only one of them (interleaving a
        // native recall between component calls evicts the instance's warm memory from
        // the CPU caches and doubled the component's figure).
        let reqs: Vec<String> = qs.iter().map(|q| req(q)).collect();
        let rounds = iters.div_ceil(qs.len()).max(1);
        let mut native = Vec::new();
        for _ in 0..rounds {
            for r in &reqs {
                let t = Instant::now();
                let _ = lid_core::api::recall(&doc, r, CTX, &facts, &lid_core::store::NoAudit);
                native.push(t.elapsed());
            }
        }
        // what one recall reads of the cached index (the whole blob, or a split index's
        // head and the segments its intent reaches)
        let reads = DerivedReads { inner: &facts, blobs: Default::default(), bytes: Default::default() };
        for r in &reqs {
            let _ = lid_core::api::recall(&doc, r, CTX, &reads, &lid_core::store::NoAudit);
        }
        let (read_blobs, read_bytes) = (reads.blobs.get(), reads.bytes.get());
        let serving = serving_pool()?;
        let mut comp = Vec::new();
        for _ in 0..rounds {
            for r in &reqs {
                let t = Instant::now();
                let _ = serving.recall(&st, &p.document, r, CTX);
                comp.push(t.elapsed());
            }
        }
        // the same recalls on the runtime that just built the index (and served every
        // earlier benchmark): its slot resets every page any earlier call wrote
        let mut dirty = Vec::new();
        for r in &reqs {
            let t = Instant::now();
            let _ = rt.recall(&st, &p.document, r, CTX);
            dirty.push(t.elapsed());
        }
        dirty_all.extend(dirty);
        println!(
            "pack {label}/{:<14} {n:>6} units  index build native {} component {}  index {} ({} blob, {:.0} B/unit; whole or head {})  read per recall {} in {:.1} blobs  recall p50 native {} component {}",
            p.id,
            ms(native_build),
            ms(comp_build),
            mib(bytes),
            blobs,
            bytes as f64 / n.max(1) as f64,
            mib(head),
            mib(read_bytes / reqs.len().max(1)),
            read_blobs as f64 / reqs.len().max(1) as f64,
            ms(percentile(native.clone(), 0.5)),
            ms(percentile(comp.clone(), 0.5)),
        );
        native_all.extend(native);
        comp_all.extend(comp);
    }
    if native_all.is_empty() {
        return Ok(());
    }
    let (n50, c50) = (percentile(native_all.clone(), 0.5), percentile(comp_all.clone(), 0.5));
    println!(
        "recall {label:<22} {units_all:>6} units  native p50 {} p95 {}  component p50 {} p95 {}  ratio {:.2}x  (index cached, {} recalls; on the runtime that built the indexes: p50 {})",
        ms(n50),
        ms(percentile(native_all.clone(), 0.95)),
        ms(c50),
        ms(percentile(comp_all.clone(), 0.95)),
        c50.as_secs_f64() / n50.as_secs_f64(),
        comp_all.len(),
        ms(percentile(dirty_all.clone(), 0.5))
    );
    // peak guest memory on the largest pack: a cached recall, and the index build
    if let Some(dir) = dirs.iter().max_by_key(|d| std::fs::read_dir(d.join("units")).map(|r| r.count()).unwrap_or(0)) {
        let p = lid_host::pack_dir::load(dir)?;
        let q = intents.get(&p.id).and_then(|q| q.first()).cloned().unwrap_or_else(|| "anything".into());
        let req = json!({"intent": q, "max_chunks": 3, "token_budget": 2000}).to_string();
        let st = Storage { facts: p.facts.clone(), audit: Arc::new(NoAudit) };
        rt.recall(&st, &p.document, &req, CTX)?.map_err(|e| anyhow::anyhow!("{}", e.message))?;
        let doc = p.document.as_str();
        let cached = peak_memory(|rt: &Runtime| rt.recall(&st, doc, &req, CTX).map(|r| r.is_ok()).unwrap_or(false))?;
        // (building 10,000 units takes seconds per probe of the search, and --quick stays
        // quick: the cached recall only there)
        let quick = std::env::args().any(|a| a == "--quick");
        let build = if units_all < 5_000 && !quick {
            let uncached = Storage { facts: Arc::new(Uncached(p.facts.clone())), audit: Arc::new(NoAudit) };
            mib(peak_memory(|rt: &Runtime| rt.recall(&uncached, doc, &req, CTX).map(|r| r.is_ok()).unwrap_or(false))?)
        } else {
            "not measured".into()
        };
        println!("peak guest memory {label}/{}: recall with the index cached {}, recall building the index {build} (linear memory; it starts at 16 MiB)", p.id, mib(cached));
    }
    Ok(())
}

fn corpus() -> String {
    let mut text = String::new();
    let mut dirs = vec![lid_tests::root().join("examples")];
    if let Some(shared) = lid_tests::shared() {
        dirs.push(shared.join("spec"));
        dirs.push(shared.join("eval/agents"));
    }
    let mut files = Vec::new();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if matches!(p.extension().and_then(|x| x.to_str()), Some("md" | "txt")) {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        text.push_str(&std::fs::read_to_string(f).unwrap_or_default());
    }
    while text.len() < 1 << 20 {
        text = text.repeat(2);
    }
    text
}

/// The runtime the profile modes spin: the service's configuration (the pooling
/// allocator); `LID_BENCH_COMPONENT=FILE` profiles another build of the component (e.g.
/// one that keeps its symbols).
fn profile_runtime() -> anyhow::Result<Runtime> {
    let opts = RuntimeOptions { pooling: true, ..RuntimeOptions::default() };
    Ok(match std::env::var_os("LID_BENCH_COMPONENT") {
        Some(f) => Runtime::from_bytes(&std::fs::read(f)?, opts)?,
        None => Runtime::new(opts)?,
    })
}

/// `perf record --control` fifos (`LID_PERF_CTL=CTL,ACK`), or nothing.
struct PerfControl(Option<(std::fs::File, std::io::BufReader<std::fs::File>)>);

impl PerfControl {
    fn from_env() -> anyhow::Result<PerfControl> {
        let Some(v) = std::env::var("LID_PERF_CTL").ok() else { return Ok(PerfControl(None)) };
        let (ctl, ack) = v.split_once(',').ok_or_else(|| anyhow::anyhow!("LID_PERF_CTL is CTL_FIFO,ACK_FIFO"))?;
        let ctl = std::fs::OpenOptions::new().write(true).open(ctl)?;
        Ok(PerfControl(Some((ctl, std::io::BufReader::new(std::fs::File::open(ack)?)))))
    }

    /// Send `cmd` and wait for perf's `ack`.
    fn send(&mut self, cmd: &str) -> anyhow::Result<()> {
        use std::io::{BufRead, Write};
        if let Some((ctl, ack)) = &mut self.0 {
            ctl.write_all(format!("{cmd}\n").as_bytes())?;
            ctl.flush()?;
            let mut line = String::new();
            ack.read_line(&mut line)?;
        }
        Ok(())
    }
}

/// The profile modes' intent: `LID_PROFILE_INTENT`, else the mode's default.
fn profile_intent(default: &str) -> String {
    std::env::var("LID_PROFILE_INTENT").unwrap_or_else(|_| default.to_string())
}

/// A profile mode's pack directory: `…/synth-pack-N` is generated when absent.
fn profile_pack_dir(dir: &str) -> anyhow::Result<PathBuf> {
    let dir = PathBuf::from(dir);
    let n = dir.file_name().and_then(|f| f.to_str()).and_then(|f| f.strip_prefix("synth-pack-")).and_then(|n| n.parse::<usize>().ok());
    if let Some(n) = n {
        synthetic_pack(n, &dir)?;
    }
    Ok(dir)
}

/// How long `recall` takes on `rt`, a runtime just built: its first recall.
fn first_recall(rt: &Runtime, recall: impl Fn(&Runtime) -> anyhow::Result<Result<String, EngineFailure>>) -> anyhow::Result<Duration> {
    let t = Instant::now();
    recall(rt)?.map_err(|e| anyhow::anyhow!("{}", e.message))?;
    Ok(t.elapsed())
}

/// What the pooled slots keep resident between calls (and so reset after each one).
fn print_resident(rt: &Runtime) {
    let (ordinary, large) = rt.pooled_resident_bytes();
    println!("pooled slots keep {} KiB resident (large-call pool: {} KiB)", ordinary >> 10, large >> 10);
}

/// Call `recall` for `LID_PROFILE_SECS` seconds (default 3) and print its mean.
fn spin(what: &str, mut recall: impl FnMut()) {
    let secs = std::env::var("LID_PROFILE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    eprintln!("{what} ready; recalling for {secs} s");
    let (t, mut n) = (Instant::now(), 0u32);
    while t.elapsed() < Duration::from_secs(secs) {
        recall();
        n += 1;
    }
    println!("{n} {what} recalls in {:?}: {:.3} ms each", t.elapsed(), t.elapsed().as_secs_f64() * 1e3 / n.max(1) as f64);
}

/// What attestation (§21.4.3) costs per fact, natively, for the demo agent's largest unit:
/// signing a write, verifying a read the first time, the memo hit of every later read, and
/// a rotation's re-signing of one fact (from its stored digest).
fn bench_attestation(quick: bool) {
    use lid_shared::attest::{Memo, OrgKey, Signed};
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/demo-agent/units");
    let content = std::fs::read_dir(&demo)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().and_then(|e| std::fs::read_to_string(e.path()).ok()))
        .max_by_key(String::len)
        .unwrap_or_else(|| "x".repeat(2048));
    let sha = lid_core::digest::sha256_hex(content.as_bytes());
    let fact = Signed {
        uri: "instruction:demo/bench/unit/v1",
        version: "v1",
        interpret_as: "instruction",
        content: &content,
        authored_by: "admin:bench",
        authored_at: "2026-11-28T00:00:00.000Z",
        source_trust: 1.0,
        tokens: lid_core::tokens::count(&content) as i64,
        sha256: Some(&sha),
    };
    let (old, new) = (OrgKey::from_seed([1; 32]), OrgKey::from_seed([2; 32]));
    let chain = old.sign(&fact);
    let iters = if quick { 200 } else { 2000 };
    let sign = percentile(time_each(iters, || drop(std::hint::black_box(old.sign(&fact)))), 0.5);
    let verify = percentile(time_each(iters, || drop(std::hint::black_box(old.verify(&fact, Some(&chain))))), 0.5);
    let memo = Memo::default();
    let _ = memo.verify(&old, &fact, Some(&chain));
    let hit = percentile(time_each(iters, || drop(std::hint::black_box(memo.verify(&old, &fact, Some(&chain))))), 0.5);
    let row = Signed { content: "", ..fact };
    let resign = percentile(time_each(iters, || drop(std::hint::black_box(new.resign(&old, &row, Some(&chain))))), 0.5);
    println!(
        "attestation per fact ({:.1} KB, native, p50 of {iters}): sign {}  verify {}  memo hit {}  rotation re-sign {} ({:.0} facts/s)",
        content.len() as f64 / 1024.0,
        ms(sign),
        ms(verify),
        ms(hit),
        ms(resign),
        1.0 / resign.as_secs_f64().max(1e-9)
    );
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    if let Some(dir) = std::env::args().skip_while(|a| a != "--profile-component").nth(1) {
        // Spin recall through the component for `LID_PROFILE=perfmap perf record`.
        let rt = profile_runtime()?;
        let a = agent_dir::load(Path::new(&dir))?;
        let ctx = agent_ctx(&a)?;
        let st = Storage { facts: a.facts.clone(), audit: Arc::new(NoAudit) };
        let req = json!({"intent": profile_intent("this issue cannot proceed until another issue is done")}).to_string();
        // prepared as the service prepares it: on a general slot
        rt.recall_preparing(&st, &a.manifest_json, &req, &ctx)?.map_err(|e| anyhow::anyhow!("{}", e.message))?;
        spin("component", || drop(rt.recall_prepared(&st, &a.manifest_json, &req, &ctx)));
        print_resident(&rt);
        return Ok(());
    }
    if std::env::args().any(|a| a == "--profile-first") {
        // A fresh pooled runtime, then an agent's first recall, over and over: the demo
        // agent's, or `LID_PROFILE_AGENT`'s (a directory) with `LID_PROFILE_INTENT`.
        let dir = std::env::var_os("LID_PROFILE_AGENT").map_or_else(|| lid_tests::root().join("examples/demo-agent"), PathBuf::from);
        let a = agent_dir::load(&dir)?;
        let ctx = agent_ctx(&a)?;
        let st = Storage { facts: a.facts.clone(), audit: Arc::new(NoAudit) };
        // its corpus prepared first, as the service has it before it serves recalls
        profile_runtime()?.recall_preparing(&st, &a.manifest_json, "{\"intent\": \"warm\"}", &ctx)?.map_err(|e| anyhow::anyhow!("{}", e.message))?;
        let req = json!({"intent": profile_intent("production is broken after the deploy")}).to_string();
        // `LID_PERF_CTL=CTL,ACK` (two fifos, `perf record -D -1 --control fifo:CTL,ACK`):
        // sampling is switched on around each first recall only, not the runtime builds.
        let mut perf = PerfControl::from_env()?;
        let runs = std::env::var("LID_PROFILE_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(200);
        let (mut times, mut faults) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let rt = profile_runtime()?;
            perf.send("enable")?;
            let f0 = lid_tests::minor_faults();
            let t = first_recall(&rt, |rt| rt.recall_prepared(&st, &a.manifest_json, &req, &ctx));
            faults.push(lid_tests::minor_faults() - f0);
            perf.send("disable")?;
            times.push(t?);
        }
        faults.sort_unstable();
        println!("first recall p50 {} ({} page faults p50)", ms(percentile(times, 0.5)), faults.get(faults.len() / 2).copied().unwrap_or(0));
        return Ok(());
    }
    if std::env::args().any(|a| a == "--profile-instantiate") {
        // Instantiate on a recall slot and drop it, calling nothing: the fixed cost of a call.
        let rt = profile_runtime()?;
        let empty = Storage { facts: Arc::new(agent_dir::MemFacts::default()), audit: Arc::new(NoAudit) };
        spin("instantiate", || drop(rt.call_hot(&empty, |_, _| Ok(()))));
        return Ok(());
    }
    if let Some(mode) = std::env::args().find(|a| a == "--profile-tokens" || a == "--profile-native-tokens") {
        // Count the token-counting corpus through the component (or natively), over and over.
        let text = corpus();
        println!("{:.2} MB of text", text.len() as f64 / (1 << 20) as f64);
        if mode == "--profile-native-tokens" {
            spin("native token count", || {
                std::hint::black_box(lid_core::tokens::count(&text));
            });
        } else {
            let rt = profile_runtime()?;
            let empty = Storage { facts: Arc::new(agent_dir::MemFacts::default()), audit: Arc::new(NoAudit) };
            spin("token count", || drop(rt.count_tokens(&empty, &text)));
        }
        return Ok(());
    }
    if let Some(dir) = std::env::args().skip_while(|a| a != "--profile-pack").nth(1) {
        // Spin recall over one knowledge pack (its index cached) through the component.
        let rt = profile_runtime()?;
        let p = lid_host::pack_dir::load(&profile_pack_dir(&dir)?)?;
        let st = Storage { facts: p.facts.clone(), audit: Arc::new(NoAudit) };
        // (`LID_PROFILE_INTENT` may hold several intents separated by `|`: they take turns)
        let reqs: Vec<String> = profile_intent("how do I set the scrape interval for one job")
            .split('|')
            .map(|i| json!({"intent": i, "max_chunks": 3, "token_budget": 2000}).to_string())
            .collect();
        if std::env::var_os("LID_PROFILE_BUILD_FIRST").is_some() {
            // one index build first (a big call) on the same runtime
            let uncached = Storage { facts: Arc::new(Uncached(p.facts.clone())), audit: Arc::new(NoAudit) };
            let _ = rt.recall(&uncached, &p.document, &reqs[0], CTX)?;
        }
        let _ = rt.recall(&st, &p.document, &reqs[0], CTX)?;
        let mut k = 0;
        spin("pack", || {
            k += 1;
            drop(rt.recall(&st, &p.document, &reqs[k % reqs.len()], CTX))
        });
        return Ok(());
    }
    if let Some(dir) = std::env::args().skip_while(|a| a != "--profile-native-pack").nth(1) {
        // The same pack recall natively (the index built once, then cached in the store).
        let (doc, facts) = lid_tests::native_pack(&profile_pack_dir(&dir)?)?;
        let req = json!({"intent": profile_intent("how do I set the scrape interval for one job"), "max_chunks": 3, "token_budget": 2000}).to_string();
        lid_core::api::recall(&doc, &req, CTX, &facts, &lid_core::store::NoAudit).map_err(|e| anyhow::anyhow!("{e}"))?;
        spin("native pack", || drop(lid_core::api::recall(&doc, &req, CTX, &facts, &lid_core::store::NoAudit)));
        return Ok(());
    }
    if let Some(dir) = std::env::args().skip_while(|a| a != "--profile-native").nth(1) {
        // Spin the native recall for `perf record`.
        let (manifest, facts) = lid_tests::native_facts(Path::new(&dir))?;
        let ctx = agent_ctx(&agent_dir::load(Path::new(&dir))?)?;
        let req = json!({"intent": profile_intent("this issue cannot proceed until another issue is done")}).to_string();
        lid_core::api::recall(&manifest, &req, &ctx, &facts, &lid_core::store::NoAudit).map_err(|e| anyhow::anyhow!("{e}"))?;
        spin("native", || drop(lid_core::api::recall("", &req, &ctx, &facts, &lid_core::store::NoAudit)));
        return Ok(());
    }
    let iters = if quick { 20 } else { 200 };
    // Cached recalls take a fraction of a millisecond: enough of them for a p50 that
    // holds still from run to run (20 moved it by ±5 %).
    let recall_iters = if quick { 200 } else { 1000 };
    let out = lid_tests::root().join("tests/out/bench");
    std::fs::create_dir_all(&out)?;
    println!("lid bench ({} mode)", if quick { "quick" } else { "full" });

    // Cold start: compiled-cache load, then instantiate + first recall.
    let demo = lid_tests::root().join("examples/demo-agent");
    let a = agent_dir::load(&demo)?;
    let ctx = agent_ctx(&a)?;
    let ctx = ctx.as_str();
    let st = Storage { facts: a.facts.clone(), audit: Arc::new(NoAudit) };
    let req = json!({"intent": "production is broken after the deploy"}).to_string();
    for pooling in [false, true] {
        let opts = RuntimeOptions { pooling, ..RuntimeOptions::default() };
        let _ = Runtime::new(opts.clone())?; // populate the compiled cache
        let t = Instant::now();
        let rt = Runtime::new(opts.clone())?;
        let load = t.elapsed();
        // The pool serves a prepared corpus as `lid serve` does, without sending the
        // manifest (the on-demand engine as the CLI does, with it). The corpus was
        // prepared by the on-demand round.
        let recall = |rt: &Runtime| if pooling { rt.recall_prepared(&st, &a.manifest_json, &req, ctx) } else { rt.recall(&st, &a.manifest_json, &req, ctx) };
        let f0 = lid_tests::minor_faults();
        let mut firsts = vec![first_recall(&rt, recall)?];
        let first_faults = lid_tests::minor_faults() - f0;
        // One first recall is one sample of a noisy thing: the median (and the worst) of
        // several fresh runtimes' (`--profile-first` spins the pooled one).
        for _ in 1..if quick { 5 } else { 25 } {
            firsts.push(first_recall(&Runtime::new(opts.clone())?, recall)?);
        }
        let (samples, worst) = (firsts.len(), firsts.iter().copied().max().unwrap_or_default());
        let first = percentile(firsts, 0.5);
        let (inst50, _) = time(iters, || {
            let _ = rt.call_hot(&st, |_, _| Ok(()));
        });
        let (second50, _) = time(iters, || {
            let _ = recall(&rt);
        });
        let uncached = Storage { facts: Arc::new(Uncached(a.facts.clone())), audit: Arc::new(NoAudit) };
        let t = Instant::now();
        rt.recall(&uncached, &a.manifest_json, &req, ctx)?.map_err(|e| anyhow::anyhow!("{}", e.message))?;
        let first_uncached = t.elapsed();
        println!(
            "cold start ({:<9}) runtime from compiled cache {}  instantiate+first recall p50 {} (max {} of {samples} runtimes; {first_faults} page faults; index cached) / {} (index built)  instantiate alone p50 {}  later recalls p50 {}",
            if pooling { "pooling" } else { "on-demand" },
            ms(load),
            ms(first),
            ms(worst),
            ms(first_uncached),
            ms(inst50),
            ms(second50)
        );
    }

    // Recall is measured on the runtime `lid serve` uses: the pooling allocator.
    let rt = Runtime::new(RuntimeOptions { pooling: true, ..RuntimeOptions::default() })?;
    match lid_tests::shared().map(|s| s.join("eval/agents/engineer")).filter(|p| p.exists()) {
        Some(eng) => bench_recall(&rt, "engineer (dev agent)", &eng, "this issue cannot proceed until another issue is done", recall_iters)?,
        None => bench_recall(&rt, "demo-agent", &demo, "production is broken after the deploy", recall_iters)?,
    }
    let sizes: &[usize] = if quick { &[1_000] } else { &[1_000, 10_000] };
    for &n in sizes {
        let dir: PathBuf = out.join(format!("synth-{n}"));
        lid_tests::synthetic_agent(n, &dir)?;
        bench_recall(&rt, &format!("synthetic-{n}"), &dir, "kalo mine rusa tivo", if n >= 10_000 { 5 } else { recall_iters })?;
    }

    // Knowledge packs: the eval-large packs with their dev probes' intents, then
    // synthetic packs (1k always, 10k in full mode) with the synthetic agent's intent.
    if let Some(large) = lid_tests::shared().map(|s| s.join("eval-large")).filter(|p| p.exists()) {
        let mut intents: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for line in std::fs::read_to_string(large.join("probes-dev.jsonl"))?.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line)?;
            if let (Some(p), Some(i)) = (v["pack_id"].as_str(), v["intent"].as_str()) {
                intents.entry(p.to_string()).or_default().push(i.to_string());
            }
        }
        let dirs = lid_host::pack_dir::discover(&large.join("packs"))?;
        bench_packs(&rt, "eval-large", &dirs, &intents, if quick { 70 } else { 700 })?;
    }
    for &n in sizes {
        let dir: PathBuf = out.join(format!("synth-pack-{n}"));
        synthetic_pack(n, &dir)?;
        let intents = [("synth-pack-".to_string() + &n.to_string(), vec!["kalo mine rusa tivo".to_string(), "deqa lyst orex".to_string()])].into_iter().collect();
        bench_packs(&rt, &format!("synthetic-{n}"), &[dir], &intents, if n >= 10_000 { 10 } else { recall_iters })?;
    }

    bench_attestation(quick);

    // Token counting throughput: the first count on each side (the component's on a
    // general slot of the pool, which maps the rank table's pages as it reads them), then
    // the median of repeated counts (what a service counting all day sees).
    let text = corpus();
    let mb = text.len() as f64 / (1 << 20) as f64;
    let empty = Storage { facts: Arc::new(agent_dir::MemFacts::default()), audit: Arc::new(NoAudit) };
    let t = Instant::now();
    let native_tokens = lid_core::tokens::count(&text);
    let native_first = t.elapsed();
    let t = Instant::now();
    let component_tokens = rt.count_tokens(&empty, &text)? as usize;
    let component_first = t.elapsed();
    anyhow::ensure!(native_tokens == component_tokens, "token counts differ: {native_tokens} vs {component_tokens}");
    // The two sides take turns in rounds (a warm-up count, then three timed ones each),
    // so that a busy spell on the machine slows both alike; within a round each side
    // counts with its own tables warm in the CPU caches, as a host counting all day does.
    let rounds = if quick { 4 } else { 8 };
    let (mut native, mut component) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        native.extend(time_each(3, || {
            std::hint::black_box(lid_core::tokens::count(&text));
        }));
        component.extend(time_each(3, || drop(rt.count_tokens(&empty, &text))));
    }
    let reps = native.len();
    let (native, component) = (percentile(native, 0.5), percentile(component, 0.5));
    let rate = |d: Duration| mb / d.as_secs_f64();
    println!(
        "tokens {:.2} MB ({native_tokens} tokens): native {:.1} MB/s  component {:.1} MB/s  ratio {:.2}x  (median of {reps} each, the sides taking turns; the first count: native {:.1} MB/s, component {:.1} MB/s, {:.2}x)",
        mb,
        rate(native),
        rate(component),
        component.as_secs_f64() / native.as_secs_f64(),
        rate(native_first),
        rate(component_first),
        component_first.as_secs_f64() / native_first.as_secs_f64()
    );
    Ok(())
}
