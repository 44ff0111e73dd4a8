//! The wasmtime embedding of the lid engine component.
//!
//! In the manner of wasmtime's own hosts: `bindgen!` against `wit/lid.wit`, one
//! `Engine` + `Linker` + `InstancePre` built once, a fresh `Store` per call, epoch
//! interruption (a deadline on every guest call) and a `ResourceLimiter` (memory cap).
//! The compiled component is cached on disk, keyed by the component's sha256 and the
//! engine's compatibility hash, so only the first run pays for compilation.
//!
//! Storage is the host's: facts through `wasi:keyvalue/store` ([`FactSource`]), audit
//! records through `lid:engine/audit` ([`AuditLog`]).

use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker, Resource, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "lid",
    with: {
        "wasi:keyvalue/store.bucket": KvBucket,
    },
});

use exports::lid::engine::engine::EngineError as WitError;
use wasi::keyvalue::store::{Error as KvError, KeyResponse};

/// The component bytes, built by `build.rs` from `guest/`.
pub static COMPONENT: &[u8] = include_bytes!(env!("LID_COMPONENT"));

/// The bucket the component opens for facts.
pub const FACTS_BUCKET: &str = "instruction-facts";

/// Host-side fact storage behind `wasi:keyvalue/store`.
pub trait FactSource: Send + Sync {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String>;
    /// [`FactSource::get`] for the guest's `bucket.get`: a store that keeps a value
    /// shared (a derived index, hundreds of KB, read by every recall) hands it over
    /// without a copy on the host; it is copied once, into the guest's memory.
    fn get_shared(&self, key: &str) -> Result<Option<Blob>, String> {
        Ok(self.get(key)?.map(Arc::new))
    }
    fn keys(&self) -> Result<Vec<String>, String>;
    /// Keep a blob the engine derived (a ranker index under `lid-index:…`, keyed by a
    /// fingerprint of its inputs). Instruction facts are never written through here.
    fn set_derived(&self, _key: &str, _value: Vec<u8>) -> Result<(), String> {
        Err("this fact store keeps no derived data".into())
    }
}

/// A value a [`FactSource`] holds shared ([`FactSource::get_shared`]).
pub type Blob = Arc<Vec<u8>>;

/// The interface whose `bucket.get` [`Runtime`] serves through
/// [`FactSource::get_shared`].
const KV_STORE: &str = "wasi:keyvalue/store@0.2.0-draft2";

/// Key prefix under which the engine may cache derived data in the facts bucket.
pub const DERIVED_PREFIX: &str = "lid-index:";

/// Host-side audit storage behind `lid:engine/audit`.
pub trait AuditLog: Send + Sync {
    fn append(&self, line: &str) -> Result<(), String>;
}

/// An audit log that keeps nothing (ranking-only calls).
pub struct NoAudit;

impl AuditLog for NoAudit {
    fn append(&self, _line: &str) -> Result<(), String> {
        Ok(())
    }
}

/// A fact store with nothing in it (calls that read no facts).
pub struct NoFacts;

impl FactSource for NoFacts {
    fn get(&self, _key: &str) -> Result<Option<Vec<u8>>, String> {
        Ok(None)
    }
    fn keys(&self) -> Result<Vec<String>, String> {
        Ok(vec![])
    }
}

/// What one call's store can reach.
#[derive(Clone)]
pub struct Storage {
    pub facts: Arc<dyn FactSource>,
    pub audit: Arc<dyn AuditLog>,
}

impl Storage {
    /// No facts and no audit: for calls that read no storage (token counts, checks).
    pub fn none() -> Self {
        Storage { facts: Arc::new(NoFacts), audit: Arc::new(NoAudit) }
    }
}

/// An open bucket (the resource behind `wasi:keyvalue/store/bucket`).
pub struct KvBucket;

/// Per-call store data.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    storage: Storage,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl wasi::keyvalue::store::Host for HostState {
    fn open(&mut self, identifier: String) -> Result<Resource<KvBucket>, KvError> {
        if identifier != FACTS_BUCKET {
            return Err(KvError::NoSuchStore);
        }
        self.table.push(KvBucket).map_err(|e| KvError::Other(e.to_string()))
    }
}

impl wasi::keyvalue::store::HostBucket for HostState {
    /// The generated binding's `get`; [`Runtime`]'s linker serves `bucket.get` with
    /// [`FactSource::get_shared`] instead (no host-side copy), over this one.
    fn get(&mut self, _b: Resource<KvBucket>, key: String) -> Result<Option<Vec<u8>>, KvError> {
        self.storage.facts.get(&key).map_err(KvError::Other)
    }
    fn set(&mut self, _b: Resource<KvBucket>, key: String, value: Vec<u8>) -> Result<(), KvError> {
        // Facts are written by the host's publish path, never by the engine; the engine
        // may only cache what it derived from them (ranker indexes).
        if !key.starts_with(DERIVED_PREFIX) {
            return Err(KvError::AccessDenied);
        }
        self.storage.facts.set_derived(&key, value).map_err(KvError::Other)
    }
    fn delete(&mut self, _b: Resource<KvBucket>, _key: String) -> Result<(), KvError> {
        Err(KvError::AccessDenied)
    }
    fn exists(&mut self, _b: Resource<KvBucket>, key: String) -> Result<bool, KvError> {
        self.storage.facts.get_shared(&key).map(|v| v.is_some()).map_err(KvError::Other)
    }
    fn list_keys(&mut self, _b: Resource<KvBucket>, _cursor: Option<String>) -> Result<KeyResponse, KvError> {
        let keys = self.storage.facts.keys().map_err(KvError::Other)?;
        Ok(KeyResponse { keys, cursor: None })
    }
    fn drop(&mut self, b: Resource<KvBucket>) -> wasmtime::Result<()> {
        self.table.delete(b)?;
        Ok(())
    }
}

impl lid::engine::audit::Host for HostState {
    fn append(&mut self, entry: String) -> Result<(), String> {
        self.storage.audit.append(&entry)
    }
}

/// An engine error as the component reports it (§21.9 code, HTTP status, message).
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize)]
#[error("{code}: {message}")]
pub struct EngineFailure {
    pub code: String,
    pub status: u16,
    pub message: String,
    /// Boxed: a failure stays small, so every `Result` carrying one does too.
    pub details: Box<serde_json::Value>,
}

impl From<WitError> for EngineFailure {
    fn from(e: WitError) -> Self {
        EngineFailure {
            code: e.code,
            status: e.status,
            message: e.message,
            details: Box::new(serde_json::from_str(&e.details).unwrap_or(serde_json::Value::Null)),
        }
    }
}

/// A guest call ran past its deadline and was stopped by epoch interruption.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the engine call exceeded its {0:?} time limit and was interrupted")]
pub struct Interrupted(pub Duration);

/// Options for building a [`Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Use the pooling instance allocator (for services with many calls).
    pub pooling: bool,
    /// Wall-clock limit of one guest call.
    pub call_timeout: Duration,
    /// Memory cap of one guest instance.
    pub memory_limit: usize,
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// With pooling: how many recall slots to warm when the runtime is built (`None`:
    /// one per core, 2 to 8; see [`Runtime::warm_recall_slots`]).
    pub warm_slots: Option<usize>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions { pooling: false, call_timeout: Duration::from_secs(30), memory_limit: 1 << 30, cache_dir: default_cache_dir(), warm_slots: None }
    }
}

/// `$LID_CACHE_DIR`, else `$XDG_CACHE_HOME/lid`, else `$HOME/.cache/lid`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("LID_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("lid"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("lid"))
}

/// How much of each pooled linear memory stays resident between calls
/// (`LID_KEEP_RESIDENT_MIB`, default 16 MiB).
fn keep_resident() -> usize {
    (crate::settings::KEEP_RESIDENT_MIB.get() << 20) as usize
}

/// Epoch tick period; deadlines are counted in ticks.
const TICK: Duration = Duration::from_millis(5);

/// With pooling, a call whose main input (the manifest or pack document) is at least
/// this large runs on the large-call pool: its memory outgrows the 16 MiB a recall
/// of an ordinary agent fits in.
pub const LARGE_INPUT_BYTES: usize = 1 << 20;

/// How much of a large-call slot's memory stays resident between calls (at most the
/// memory cap). Wasmtime decommits what lies beyond `keep_resident` after each call, so
/// a 10,000-unit agent's recall (≈ 50 MiB) re-faulted ≈ 35 MiB of fresh pages on every
/// call in the ordinary pool: 31.7 ms per recall; with its pages kept, 18.9 ms.
const LARGE_KEEP_RESIDENT: usize = 256 << 20;

/// Slots of the large-call pool: at most this many large calls keep their footprint
/// resident; one more at the same time runs on the on-demand engine instead.
const LARGE_SLOTS: u32 = 4;

/// The instance allocation of one of the runtime's engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pool {
    /// A fresh mapping per call (the CLI; the heavy calls of a pooled runtime).
    OnDemand,
    /// Pooled slots that keep `LID_KEEP_RESIDENT_MIB` (16 MiB) resident: every recall.
    Small,
    /// Pooled slots that keep [`LARGE_KEEP_RESIDENT`] resident: calls with large inputs.
    Large,
}

/// The agent [`Runtime::warm_recall_slots`] recalls: its manifest and `path:` units.
const WARM_MANIFEST: &str = r#"{"agent_id": "lid-warm-up", "deployment": "lid", "manifest_version": "v1",
  "entries": [
    {"name": "review", "description": "Review a change before it merges.", "path": "warm/review.md",
     "load_triggers": {"intents": ["review a pull request"], "keywords": ["review", "tests"], "task_types": []}},
    {"name": "release", "description": "Cut, tag and roll out a release.", "path": "warm/release.md",
     "load_triggers": {"intents": ["ship a new version"], "keywords": ["release", "deploy"], "task_types": []}}
  ]}"#;

/// The warm-up recalls' request. (A request naming words from across the lexicon, so
/// that a slot maps all of it at once, was tried and left out: every page a slot maps is
/// walked at each of its resets, and a recall instantiated in 0.013 ms instead of 0.006.)
const WARM_REQUEST: &str = r#"{"intent": "how do I review and release a change safely after the tests pass"}"#;

/// How much of the heap the warm-up writes in each recall slot. An agent's first recall
/// in a slot used to fault in every heap page it wrote that the warm-up's small agent had
/// not (its prepared corpus is copied there, then the ranking allocates after it): 9
/// pages for the demo agent, 21–37 for the ten eval agents, about 2–3 µs each on the
/// 2-core VM this was measured on. A page the warm-up writes stays resident (a slot keeps
/// up to `LID_KEEP_RESIDENT_MIB`), and a fresh instance's allocator starts at the same
/// heap top, so the next agent's allocations land on resident pages. On fresh runtimes:
/// the demo agent's first recall 0.128–0.131 → 0.107–0.119 ms with no page faults
/// (`bench`'s pooled cold start), the eval agents' 0.18–0.30 → 0.14–0.21 ms with 0–5
/// (`bench --profile-first`, `LID_PROFILE_AGENT`). Every reset walks a slot's resident
/// pages, so more is not free: with 512 KiB, instantiating alone took 0.015 → 0.026 ms;
/// with 128 KiB 0.016 ms, and the demo agent's later recalls 0.066 → 0.068–0.070 ms (an
/// agent whose recalls write those pages anyway pays nothing).
const WARM_HEAP: usize = 128 << 10;

const WARM_UNITS: &[(&str, &str)] = &[
    ("warm/review.md", "## Review\nRead the diff, run the tests, and ask for changes when a rule is broken."),
    ("warm/release.md", "## Release\nTag the version, deploy to the canary first, and roll back when it fails."),
];

/// The compiled engine, shared by every call.
pub struct Runtime {
    engine: Engine,
    /// Recall, ranking and preloads over prepared corpora: the calls a service makes per
    /// request, which read only a small part of the component's data.
    pre: LidPre<HostState>,
    /// Every other call. With pooling this is the component loaded a second time: a
    /// module of its own, so the pool keeps its slots apart from `pre`'s (wasmtime gives
    /// a slot back to the module that last used it). A pooled slot keeps every page of
    /// the component's data image that a call read mapped, and its reset walks each of
    /// them after every later call: one token count (the cl100k table is 2.5 MB of that
    /// image) made each later demo recall in the slot 0.054 → 0.070 ms. Token counts,
    /// stub rendering, validation and the first recall of a corpus (which builds its
    /// index) therefore run here, and the recall slots stay small.
    general: LidPre<HostState>,
    /// With pooling: an on-demand engine for the calls that use far more memory than a
    /// recall (the coverage gate, migration, reading a whole knowledge pack), built on
    /// first use. Wasmtime resets a pooled slot by rewriting every page written since the
    /// slot was last decommitted, up to `keep_resident`, and such pages stay resident: one
    /// coverage gate in a slot made every later recall there reset its whole footprint.
    heavy: Arc<std::sync::OnceLock<(Engine, LidPre<HostState>)>>,
    /// With pooling: the large-call pool ([`LARGE_INPUT_BYTES`]), built on first use. Its
    /// slots keep a large call's pages resident, so the next large call in the slot takes
    /// no page faults for them; ordinary recalls never run there, so they never pay for
    /// resetting that footprint (see `heavy`).
    large: Arc<std::sync::OnceLock<(Engine, LidPre<HostState>)>>,
    /// The component, for the heavy and large engines.
    bytes: std::borrow::Cow<'static, [u8]>,
    opts: RuntimeOptions,
    stop: Arc<AtomicBool>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Runtime {
    pub fn new(opts: RuntimeOptions) -> Result<Self> {
        Self::with_bytes(std::borrow::Cow::Borrowed(COMPONENT), opts)
    }

    pub fn from_bytes(bytes: &[u8], opts: RuntimeOptions) -> Result<Self> {
        Self::with_bytes(std::borrow::Cow::Owned(bytes.to_vec()), opts)
    }

    fn with_bytes(bytes: std::borrow::Cow<'static, [u8]>, opts: RuntimeOptions) -> Result<Self> {
        let (engine, pre, general) = Self::compile(&bytes, &opts, if opts.pooling { Pool::Small } else { Pool::OnDemand })?;
        let general = general.unwrap_or_else(|| pre.clone());
        let heavy: Arc<std::sync::OnceLock<(Engine, LidPre<HostState>)>> = Arc::new(std::sync::OnceLock::new());
        let large: Arc<std::sync::OnceLock<(Engine, LidPre<HostState>)>> = Arc::new(std::sync::OnceLock::new());
        let stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let (heavy, large) = (heavy.clone(), large.clone());
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("lid-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(TICK);
                        engine.increment_epoch();
                        for other in [&heavy, &large] {
                            if let Some((e, _)) = other.get() {
                                e.increment_epoch();
                            }
                        }
                    }
                })
                .context("starting the epoch ticker")?;
        }
        let rt = Runtime { engine, pre, general, heavy, large, bytes, opts, stop };
        if rt.opts.pooling {
            let n = rt.opts.warm_slots.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8));
            if n > 0 {
                rt.warm_recall_slots(n).context("warming the recall slots")?;
            }
        }
        Ok(rt)
    }

    /// Recall a small agent of our own once in each of `n` recall slots at once (so in
    /// `n` distinct slots), after preparing its corpus on the general slots. A slot's
    /// first call maps the component's data image into it and faults in every page it
    /// touches; after this, the first recall of an agent in such a slot pays for much
    /// less of that: 0.11–0.13 ms instead of 0.37–0.42 (the demo agent, `bench`'s cold
    /// start), and with [`WARM_HEAP`] of each slot's heap written, none of its heap pages.
    /// Wasmtime gives the module its most recently used slots first.
    pub fn warm_recall_slots(&self, n: usize) -> Result<()> {
        let mut facts = crate::agent_dir::MemFacts::default();
        for (path, content) in WARM_UNITS {
            let fact = serde_json::json!({"uri": format!("path:{path}"), "content": content, "interpret_as": "instruction"});
            facts.insert(format!("path:{path}"), fact.to_string().into_bytes());
        }
        let st = Storage { facts: Arc::new(facts), audit: Arc::new(NoAudit) };
        let ctx = r#"{"now_ms": 0, "entropy": "00000000000000000000", "heartbeat_id": "lid-warm-up", "corpus_key": "lid-warm-up:1"}"#;
        // the manifest lowered into each slot's heap first, with WARM_HEAP of trailing
        // whitespace (which JSON allows): the host writes those pages, so they stay resident
        let manifest = format!("{WARM_MANIFEST}{}", " ".repeat(WARM_HEAP));
        let manifest = manifest.as_str();
        self.recall_preparing(&st, manifest, WARM_REQUEST, ctx)?.map_err(|e| anyhow::anyhow!("warm-up recall: {e}"))?;
        let mut slots = Vec::with_capacity(n);
        for _ in 0..n {
            slots.push(self.instantiate_on(&self.engine, &self.pre, &st)?);
        }
        for (lid, store) in &mut slots {
            self.finish(lid.lid_engine_engine().call_recall(store, manifest, WARM_REQUEST, ctx))?.map_err(|e| anyhow::anyhow!("warm-up recall: {}", e.message))?;
        }
        Ok(())
    }

    /// The engine and instance-pre for one allocation strategy; for the ordinary pool
    /// also the general slots' instance-pre (see the `general` field).
    #[allow(clippy::type_complexity)]
    fn compile(bytes: &[u8], opts: &RuntimeOptions, pool: Pool) -> Result<(Engine, LidPre<HostState>, Option<LidPre<HostState>>)> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        // `LID_PROFILE=perfmap` names guest functions for `perf record` (a development aid).
        if std::env::var_os("LID_PROFILE").is_some_and(|v| v == "perfmap") {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        if pool != Pool::OnDemand {
            // (component instances, core instances and tables, bytes kept resident): one
            // component instance is three core instances (the engine and two shims) with
            // one linear memory and up to three tables; the ordinary pool's 256 core
            // instances allow 85 calls at once.
            let (slots, cores, resident) = match pool {
                Pool::Large => (LARGE_SLOTS, 3 * LARGE_SLOTS, LARGE_KEEP_RESIDENT.min(opts.memory_limit)),
                _ => (256, 256, keep_resident()),
            };
            let mut pool = wasmtime::PoolingAllocationConfig::default();
            pool.total_component_instances(slots);
            pool.total_core_instances(cores);
            pool.total_memories(slots);
            pool.total_tables(cores);
            pool.max_memory_size(opts.memory_limit);
            // Reset only the pages a call dirtied (Linux ≥ 6.7's PAGEMAP_SCAN; elsewhere
            // wasmtime falls back to madvise), and keep them resident: the next call in
            // the slot then takes no page faults for them.
            pool.pagemap_scan(wasmtime::Enabled::Auto);
            pool.linear_memory_keep_resident(resident);
            pool.table_keep_resident(1 << 16);
            config.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config)?;
        let (component, cached) = load_component(&engine, bytes, opts.cache_dir.as_deref())?;
        let pre = Self::link(&engine, &component)?;
        let general = match pool {
            Pool::Small => Some(Self::link(&engine, &load_again(&engine, &component, cached.as_deref())?)?),
            _ => None,
        };
        Ok((engine, pre, general))
    }

    /// `component` linked against the host's imports.
    fn link(engine: &Engine, component: &Component) -> Result<LidPre<HostState>> {
        let mut linker: Linker<HostState> = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        Lid::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
        // `bucket.get` again, returning the store's shared blob (lowered straight into
        // the guest's memory) instead of the owned copy `HostBucket::get` must return.
        linker.allow_shadowing(true);
        linker.instance(KV_STORE)?.func_wrap("[method]bucket.get", |cx: wasmtime::StoreContextMut<'_, HostState>, (_b, key): (Resource<KvBucket>, String)| {
            Ok((cx.data().storage.facts.get_shared(&key).map_err(KvError::Other),))
        })?;
        linker.allow_shadowing(false);
        Ok(LidPre::new(linker.instantiate_pre(component)?)?)
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Bytes kept resident in the idle slots of the ordinary pool and of the large-call
    /// pool (0 for a pool not started, or without pooling): what their next calls reset.
    pub fn pooled_resident_bytes(&self) -> (usize, usize) {
        let of = |e: &Engine| e.pooling_allocator_metrics().map_or(0, |m| m.unused_memory_bytes_resident());
        (of(&self.engine), self.large.get().map_or(0, |(e, _)| of(e)))
    }

    /// Idle slots of the ordinary pool that have run the component (recall and general
    /// slots alike; 0 without pooling).
    pub fn idle_warm_slots(&self) -> u32 {
        self.engine.pooling_allocator_metrics().map_or(0, |m| m.unused_warm_memories())
    }

    /// Instantiate the component in a fresh store and run `f` against it (on the general
    /// slots; see the `general` field).
    pub fn call<R>(&self, storage: &Storage, f: impl FnOnce(&Lid, &mut Store<HostState>) -> wasmtime::Result<R>) -> Result<R> {
        self.call_on(&self.engine, &self.general, storage, f)
    }

    /// [`Runtime::call`] on the recall slots: for recalls, rankings and preloads over
    /// corpora already prepared.
    pub fn call_hot<R>(&self, storage: &Storage, f: impl FnOnce(&Lid, &mut Store<HostState>) -> wasmtime::Result<R>) -> Result<R> {
        self.call_on(&self.engine, &self.pre, storage, f)
    }

    /// [`Runtime::call`] for a call that uses far more memory than a recall: off the
    /// pool when the runtime pools instances (see the `heavy` field).
    fn call_heavy<R>(&self, storage: &Storage, f: impl FnOnce(&Lid, &mut Store<HostState>) -> wasmtime::Result<R>) -> Result<R> {
        if !self.opts.pooling {
            return self.call(storage, f);
        }
        let (engine, pre) = self.other(&self.heavy, Pool::OnDemand)?;
        self.call_on(engine, pre, storage, f)
    }

    /// [`Runtime::call`] for a call whose main input is `input_len` bytes: on the
    /// large-call pool when the runtime pools instances and the input is at least
    /// [`LARGE_INPUT_BYTES`] (see the `large` field).
    fn call_sized<R>(&self, input_len: usize, storage: &Storage, f: impl FnOnce(&Lid, &mut Store<HostState>) -> wasmtime::Result<R>) -> Result<R> {
        if !self.opts.pooling || input_len < LARGE_INPUT_BYTES {
            return self.call_hot(storage, f);
        }
        let (engine, pre) = self.other(&self.large, Pool::Large)?;
        match self.instantiate_on(engine, pre, storage) {
            Ok((lid, mut store)) => self.finish(f(&lid, &mut store)),
            // Every large slot is busy: this call takes a fresh mapping instead.
            Err(e) if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>().is_some() => self.call_heavy(storage, f),
            Err(e) => Err(e),
        }
    }

    /// The heavy or large engine, compiled (or loaded from the cache) on first use.
    fn other<'a>(&self, cell: &'a std::sync::OnceLock<(Engine, LidPre<HostState>)>, pool: Pool) -> Result<&'a (Engine, LidPre<HostState>)> {
        match cell.get() {
            Some(e) => Ok(e),
            None => {
                let (engine, pre, _) = Self::compile(&self.bytes, &self.opts, pool)?;
                Ok(cell.get_or_init(|| (engine, pre)))
            }
        }
    }

    fn call_on<R>(&self, engine: &Engine, pre: &LidPre<HostState>, storage: &Storage, f: impl FnOnce(&Lid, &mut Store<HostState>) -> wasmtime::Result<R>) -> Result<R> {
        let (lid, mut store) = self.instantiate_on(engine, pre, storage)?;
        self.finish(f(&lid, &mut store))
    }

    /// A fresh store with its limits and deadline, and the component instantiated in it.
    fn instantiate_on(&self, engine: &Engine, pre: &LidPre<HostState>, storage: &Storage) -> Result<(Lid, Store<HostState>)> {
        let state = HostState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new().memory_size(self.opts.memory_limit).instances(8).tables(16).memories(8).build(),
            storage: storage.clone(),
        };
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limits);
        let ticks = (self.opts.call_timeout.as_millis() / TICK.as_millis()).max(1) as u64;
        store.set_epoch_deadline(ticks);
        // The deadline covers instantiation too: a call cut off there is as interrupted
        // as one cut off in the export.
        let lid = pre.instantiate(&mut store).map_err(|e| self.interrupted(e))?;
        Ok((lid, store))
    }

    /// A guest call's outcome, an epoch interruption reported as [`Interrupted`].
    fn finish<R>(&self, r: wasmtime::Result<R>) -> Result<R> {
        r.map_err(|e| self.interrupted(e))
    }

    fn interrupted(&self, e: wasmtime::Error) -> anyhow::Error {
        if matches!(e.downcast_ref::<wasmtime::Trap>(), Some(wasmtime::Trap::Interrupt)) {
            anyhow::Error::new(Interrupted(self.opts.call_timeout))
        } else {
            anyhow::Error::from(e)
        }
    }

    pub fn count_tokens(&self, st: &Storage, text: &str) -> Result<u32> {
        self.call(st, |l, s| l.lid_engine_engine().call_count_tokens(s, text))
    }

    pub fn warm(&self, st: &Storage) -> Result<()> {
        self.call(st, |l, s| l.lid_engine_engine().call_warm(s))
    }

    pub fn validate_manifest(&self, st: &Storage, manifest: &str, options: &str) -> Result<String> {
        self.call(st, |l, s| l.lid_engine_engine().call_validate_manifest(s, manifest, options))
    }

    pub fn render_stub(&self, st: &Storage, manifest: &str, profile: Option<&str>) -> Result<Result<String, EngineFailure>> {
        Ok(self.call(st, |l, s| l.lid_engine_engine().call_render_stub(s, manifest, profile))?.map_err(Into::into))
    }

    pub fn recall(&self, st: &Storage, manifest: &str, request: &str, context: &str) -> Result<Result<String, EngineFailure>> {
        Ok(self.call_sized(manifest.len(), st, |l, s| l.lid_engine_engine().call_recall(s, manifest, request, context))?.map_err(Into::into))
    }

    /// [`Runtime::recall`] of a corpus the host has seen prepared under the context's
    /// `corpus_key` (whose promise is that it names this manifest and these facts): the
    /// manifest is not sent, so a large one is neither copied into the guest nor
    /// fingerprinted there. If nothing is prepared under the key after all (the engine
    /// answers `corpus_not_prepared` before it ranks or audits anything), the recall is
    /// made again with the manifest ([`Runtime::recall_preparing`]), which prepares it.
    pub fn recall_prepared(&self, st: &Storage, manifest: &str, request: &str, context: &str) -> Result<Result<String, EngineFailure>> {
        let r = self.call_sized(manifest.len(), st, |l, s| l.lid_engine_engine().call_recall(s, "", request, context))?;
        match r {
            Err(e) if e.code == "corpus_not_prepared" => self.recall_preparing(st, manifest, request, context),
            r => Ok(r.map_err(Into::into)),
        }
    }

    /// [`Runtime::recall`] for a corpus that may not be prepared yet (a service's first
    /// recall of an agent's snapshot): it may build and cache the corpus's index, so
    /// with pooling it runs on the general slots (or the large-call pool), never on the
    /// recall slots.
    pub fn recall_preparing(&self, st: &Storage, manifest: &str, request: &str, context: &str) -> Result<Result<String, EngineFailure>> {
        let f = |l: &Lid, s: &mut Store<HostState>| l.lid_engine_engine().call_recall(s, manifest, request, context);
        let r = if self.opts.pooling && manifest.len() < LARGE_INPUT_BYTES { self.call(st, f)? } else { self.call_sized(manifest.len(), st, f)? };
        Ok(r.map_err(Into::into))
    }

    pub fn rank(&self, st: &Storage, manifest: &str, intent: &str, wake_reason: Option<&str>) -> Result<Result<String, EngineFailure>> {
        Ok(self.call_sized(manifest.len(), st, |l, s| l.lid_engine_engine().call_rank(s, manifest, intent, wake_reason))?.map_err(Into::into))
    }

    pub fn preload(&self, st: &Storage, manifest: &str, wake_reason: &str, stub_tokens: u32, context: &str) -> Result<Result<String, EngineFailure>> {
        Ok(self.call_hot(st, |l, s| l.lid_engine_engine().call_preload(s, manifest, wake_reason, stub_tokens, context))?.map_err(Into::into))
    }

    /// The composed boot context (`{"bundle","markdown"}`); preloads are audited.
    pub fn compose_context(&self, st: &Storage, manifest: &str, request: &str, context: &str) -> Result<Result<String, EngineFailure>> {
        Ok(self.call(st, |l, s| l.lid_engine_engine().call_compose_context(s, manifest, request, context))?.map_err(Into::into))
    }

    /// The manifest and units exported as `skill`, `agents-md` or `cursor-rules` files.
    pub fn export(&self, st: &Storage, manifest: &str, format: &str) -> Result<Result<String, EngineFailure>> {
        Ok(self.call(st, |l, s| l.lid_engine_engine().call_export_agent(s, manifest, format))?.map_err(Into::into))
    }

    /// The engine's identity JSON (`engine`, `ranker_version`, `stub_version`, `wit`).
    pub fn info(&self) -> Result<String> {
        let st = Storage::none();
        self.call(&st, |l, s| l.lid_engine_engine().call_info(s))
    }

    pub fn coverage(&self, st: &Storage, manifest: &str, options: &str) -> Result<Result<String, EngineFailure>> {
        Ok(self.call_heavy(st, |l, s| l.lid_engine_engine().call_coverage(s, manifest, options))?.map_err(Into::into))
    }

    pub fn migrate(&self, st: &Storage, markdown: &str, options: &str) -> Result<Result<String, EngineFailure>> {
        Ok(self.call_heavy(st, |l, s| l.lid_engine_engine().call_migrate(s, markdown, options))?.map_err(Into::into))
    }

    pub fn eval_report(&self, st: &Storage, results: &str) -> Result<Result<String, EngineFailure>> {
        Ok(self.call(st, |l, s| l.lid_engine_engine().call_eval_report(s, results))?.map_err(Into::into))
    }

    pub fn audit_metrics(&self, st: &Storage, records: &str, k: u32) -> Result<Result<String, EngineFailure>> {
        Ok(self.call(st, |l, s| l.lid_engine_engine().call_audit_metrics(s, records, k))?.map_err(Into::into))
    }

    /// §21.5.2: the audit submission checked for shape, as normalised JSON.
    pub fn check_audit_submission(&self, body: &str) -> Result<Result<String, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call(&st, |l, s| l.lid_engine_engine().call_check_audit_submission(s, body))?.map_err(Into::into))
    }

    /// A handoff message composed into Session Markdown (`{"handoff","session_markdown"}`).
    pub fn compose_handoff(&self, handoff: &str) -> Result<Result<String, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call(&st, |l, s| l.lid_engine_engine().call_compose_handoff(s, handoff))?.map_err(Into::into))
    }

    /// Admission lint of unit texts (`[{"name","content","interpret_as"}]`).
    pub fn lint_units(&self, units: &str) -> Result<Result<String, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call(&st, |l, s| l.lid_engine_engine().call_lint_units(s, units))?.map_err(Into::into))
    }

    /// Knowledge catalog and activation from discovered packs' `KNOWLEDGE.md` texts.
    pub fn knowledge_catalog(&self, request: &str) -> Result<Result<String, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call(&st, |l, s| l.lid_engine_engine().call_knowledge_catalog(s, request))?.map_err(Into::into))
    }

    /// Knowledge selection from activated, read packs (items, fences, diagnostics record).
    pub fn knowledge_select(&self, request: &str) -> Result<Result<String, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call(&st, |l, s| l.lid_engine_engine().call_knowledge_select(s, request))?.map_err(Into::into))
    }

    /// A Session document read back into its handoff JSON.
    pub fn session_to_handoff(&self, markdown: &str) -> Result<Result<String, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call(&st, |l, s| l.lid_engine_engine().call_session_to_handoff(s, markdown))?.map_err(Into::into))
    }

    /// A knowledge-pack upload read for storage (`{"id","meta","files","collisions","digest"}`).
    pub fn read_knowledge_pack(&self, upload: &str) -> Result<Result<String, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call_heavy(&st, |l, s| l.lid_engine_engine().call_read_knowledge_pack(s, upload))?.map_err(Into::into))
    }

    /// How `version` orders against `than` (-1, 0, 1 by §21.4.2 precedence), or the
    /// engine's `invalid_request` when `version` is not a concrete version.
    pub fn version_order(&self, version: &str, than: Option<&str>) -> Result<Result<i8, EngineFailure>> {
        let st = Storage::none();
        Ok(self.call(&st, |l, s| l.lid_engine_engine().call_version_order(s, version, than))?.map_err(Into::into))
    }
}

/// Where the compilation of `bytes` for `engine` is cached under `dir`: named by the
/// component's sha256 and the engine's compatibility hash.
fn cache_path(engine: &Engine, bytes: &[u8], dir: &std::path::Path) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    let digest = Sha256::digest(bytes);
    dir.join(format!("{}-{:016x}.cwasm", hex(&digest[..16]), h.finish()))
}

/// `loaded` loaded once more into `engine`, as a module of its own: mapped from its
/// compiled-cache file `cached` when there is one, else deserialized from `loaded`'s
/// serialization (never compiled again).
fn load_again(engine: &Engine, loaded: &Component, cached: Option<&std::path::Path>) -> Result<Component> {
    if let Some(path) = cached {
        // SAFETY: as in `load_component`: written by this engine for this component.
        if let Ok(c) = unsafe { Component::deserialize_file(engine, path) } {
            return Ok(c);
        }
    }
    // SAFETY: serialized just now by this engine.
    Ok(unsafe { Component::deserialize(engine, loaded.serialize()?) }?)
}

/// Compile `bytes`, or load the cached compilation for this engine; with the cache
/// file's path when there is one now.
fn load_component(engine: &Engine, bytes: &[u8], cache: Option<&std::path::Path>) -> Result<(Component, Option<PathBuf>)> {
    let Some(dir) = cache else {
        return Ok((Component::new(engine, bytes)?, None));
    };
    let path = cache_path(engine, bytes, dir);
    if path.exists() {
        // SAFETY: the file was written by `Engine::precompile_component` below for this very
        // component (its sha256 and the engine's compatibility hash are in the name).
        if let Ok(c) = unsafe { Component::deserialize_file(engine, &path) } {
            return Ok((c, Some(path)));
        }
    }
    let compiled = engine.precompile_component(bytes)?;
    if std::fs::create_dir_all(dir).is_ok() {
        let tmp = dir.join(format!(".{}.tmp", std::process::id()));
        if std::fs::write(&tmp, &compiled).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    // SAFETY: `compiled` was just produced by this engine.
    let c = unsafe { Component::deserialize(engine, &compiled) }?;
    Ok((c, path.exists().then_some(path)))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
