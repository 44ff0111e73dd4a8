//! WASI Preview 2 component glue (wit-bindgen, `wit/lid.wit`, world `lid`).
//!
//! Thin by design: facts come from the imported `wasi:keyvalue/store` bucket
//! `instruction-facts`, audit records go to the imported `lid:engine/audit`, and every
//! export forwards to [`crate::api`].

wit_bindgen::generate!({
    path: "../wit",
    world: "lid",
    generate_all,
});

use exports::lid::engine::engine::{EngineError as WitError, Guest};
use wasi::keyvalue::store;

use crate::error::EngineError;
use crate::store::{AuditSink, Fact, Facts, StoreError};

/// Running out of memory traps at once (`unreachable`), where std would first print
/// "memory allocation of N bytes failed" to the WASI stderr stream and then abort. A host
/// may run the engine on a thread where a WASI stream write cannot block (`lid serve`
/// runs recalls on its tokio worker threads, where wasmtime-wasi's synchronous stream
/// calls panic the host thread, and the request got no answer at all), and the trap is
/// what the host reports anyway (`engine_failed`). Nothing in lid-core recovers from a
/// failed allocation (no `try_reserve`), so no caller loses a choice.
struct TrapOnOom;

fn or_trap(p: *mut u8) -> *mut u8 {
    if p.is_null() {
        core::arch::wasm32::unreachable()
    }
    p
}

// SAFETY: every call forwards to `System` with the caller's arguments unchanged; only a
// null result (which `System` returns when memory cannot grow) becomes a trap.
unsafe impl std::alloc::GlobalAlloc for TrapOnOom {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        or_trap(unsafe { std::alloc::System.alloc(layout) })
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        or_trap(unsafe { std::alloc::System.alloc_zeroed(layout) })
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        or_trap(unsafe { std::alloc::System.realloc(ptr, layout, new_size) })
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: TrapOnOom = TrapOnOom;

/// A panic (a bug) in a recall traps without writing to stderr, for the same reason:
/// `lid serve` runs recalls on its async threads. Set at the start of each recall, as
/// every call has a fresh instance (a hook with no state allocates nothing); the other
/// exports keep std's hook, whose message the hosts log.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|_| {}));
}

/// The bucket name hosts must provide.
const BUCKET: &str = "instruction-facts";

struct KvFacts {
    bucket: Result<store::Bucket, String>,
}

impl KvFacts {
    fn open() -> Self {
        KvFacts { bucket: store::open(BUCKET).map_err(|e| kv_err(&e)) }
    }

    fn raw(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let b = self.bucket.as_ref().map_err(|e| StoreError(e.clone()))?;
        b.get(key).map_err(|e| StoreError(kv_err(&e)))
    }
}

fn kv_err(e: &store::Error) -> String {
    match e {
        store::Error::NoSuchStore => format!("no key-value store named {BUCKET:?}"),
        store::Error::AccessDenied => "access to the instruction fact store was denied".into(),
        store::Error::Other(s) => s.clone(),
    }
}

impl Facts for KvFacts {
    fn get(&self, uri: &str) -> Result<Option<Fact>, StoreError> {
        match self.raw(uri)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| StoreError(format!("fact {uri:?} is not valid fact JSON: {e}"))),
        }
    }

    fn versions(&self, unit_key: &str) -> Result<Vec<String>, StoreError> {
        match self.raw(unit_key)? {
            None => Ok(vec![]),
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError(format!("version list {unit_key:?} is not a JSON string array: {e}"))),
        }
    }

    fn cached(&self, key: &str) -> Option<Vec<u8>> {
        self.raw(key).ok().flatten()
    }

    fn cache(&self, key: &str, blob: &[u8]) {
        // Hosts that keep no derived data refuse the write; that is fine.
        if let Ok(b) = self.bucket.as_ref() {
            let _ = b.set(key, blob);
        }
    }

    fn content_sources(&self, agent_id: &str) -> Result<Option<crate::content::ContentSources>, StoreError> {
        let key = format!("{}{agent_id}", crate::content::SOURCES_PREFIX);
        match self.raw(&key)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| StoreError(format!("{key:?} is not a content-sources document: {e}"))),
        }
    }
}

struct HostAudit;

impl AuditSink for HostAudit {
    fn append(&self, record_json: &str) -> Result<(), String> {
        lid::engine::audit::append(record_json)
    }
}

fn wit_err(e: EngineError) -> WitError {
    let b = e.body();
    WitError { code: b.code, status: b.status, message: b.message, details: b.details.to_string() }
}

struct Component;

impl Guest for Component {
    fn count_tokens(text: String) -> u32 {
        crate::api::count_tokens(&text)
    }

    fn warm() {
        crate::api::warm();
    }

    fn validate_manifest(manifest: String, options: String) -> String {
        crate::api::validate_manifest(&manifest, &options)
    }

    fn render_stub(manifest: String, profile: Option<String>) -> Result<String, WitError> {
        crate::api::render_stub(&manifest, profile.as_deref(), &KvFacts::open()).map_err(wit_err)
    }

    fn recall(manifest: String, request: String, context: String) -> Result<String, WitError> {
        quiet_panics();
        crate::api::recall(&manifest, &request, &context, &KvFacts::open(), &HostAudit).map_err(wit_err)
    }

    fn rank(manifest: String, intent: String, wake_reason: Option<String>) -> Result<String, WitError> {
        crate::api::rank(&manifest, &intent, wake_reason.as_deref(), &KvFacts::open()).map_err(wit_err)
    }

    fn preload(manifest: String, wake_reason: String, stub_tokens: u32, context: String) -> Result<String, WitError> {
        crate::api::preload(&manifest, &wake_reason, stub_tokens, &context, &KvFacts::open(), &HostAudit).map_err(wit_err)
    }

    fn info() -> String {
        crate::api::info()
    }

    fn coverage(manifest: String, options: String) -> Result<String, WitError> {
        crate::api::coverage(&manifest, &options, &KvFacts::open()).map_err(wit_err)
    }

    fn migrate(markdown: String, options: String) -> Result<String, WitError> {
        crate::api::migrate(&markdown, &options).map_err(wit_err)
    }

    fn eval_report(results: String) -> Result<String, WitError> {
        crate::api::eval_report(&results).map_err(wit_err)
    }

    fn audit_metrics(records: String, k: u32) -> Result<String, WitError> {
        crate::api::audit_metrics(&records, k).map_err(wit_err)
    }

    fn check_audit_submission(body: String) -> Result<String, WitError> {
        crate::api::check_audit_submission(&body).map_err(wit_err)
    }

    fn compose_handoff(handoff: String) -> Result<String, WitError> {
        crate::api::compose_handoff(&handoff).map_err(wit_err)
    }

    fn compose_context(manifest: String, request: String, context: String) -> Result<String, WitError> {
        crate::api::compose_context(&manifest, &request, &context, &KvFacts::open(), &HostAudit).map_err(wit_err)
    }

    fn export_agent(manifest: String, format: String) -> Result<String, WitError> {
        crate::api::export(&manifest, &format, &KvFacts::open()).map_err(wit_err)
    }

    fn lint_units(units: String) -> Result<String, WitError> {
        crate::api::lint_units(&units).map_err(wit_err)
    }

    fn knowledge_catalog(request: String) -> Result<String, WitError> {
        crate::api::knowledge_catalog(&request).map_err(wit_err)
    }

    fn knowledge_select(request: String) -> Result<String, WitError> {
        crate::api::knowledge_select(&request).map_err(wit_err)
    }

    fn session_to_handoff(markdown: String) -> Result<String, WitError> {
        crate::api::session_to_handoff(&markdown).map_err(wit_err)
    }

    fn version_order(version: String, than: Option<String>) -> Result<i8, WitError> {
        crate::api::version_order(&version, than.as_deref()).map_err(wit_err)
    }

    fn read_knowledge_pack(upload: String) -> Result<String, WitError> {
        crate::api::read_knowledge_pack(&upload).map_err(wit_err)
    }
}

export!(Component);
