//! # lid-core: the lid engine
//!
//! Plain Rust that knows nothing of WIT, HTTP or files. It implements §21 of the
//! Lazy Instruction Discovery spec (`../shared/spec/lazy-instruction-discovery.full.md`):
//! manifest validation (§21.2), boot stubs (§21.1), `recall_instruction` (§21.3),
//! `instruction:` URIs (§21.4), the discovery audit (§21.5), migration (§21.6.3),
//! task-type preloads (§21.1.5) and the paraphrase coverage gate (§21.8.3).
//!
//! Storage is reached only through the two traits in [`store`]: [`store::Facts`]
//! and [`store::AuditSink`]. The `component` feature adds the wit-bindgen glue that
//! exports the engine as a WASI Preview 2 component (`wit/lid.wit`).

pub mod audit;
pub mod bytes;
pub mod content;
pub mod context;
pub mod coverage;
pub mod digest;
pub mod error;
pub mod eval;
pub mod export;
pub mod handoff;
mod json_input;
pub mod lint;
pub mod knowledge;
pub mod manifest;
pub mod migrate;
pub mod preload;
pub mod rank;
pub mod recall;
pub mod resolve;
pub mod store;
pub mod stub;
pub mod tokens;
mod tokens_hash;
pub mod uri;
pub mod api;

#[cfg(all(feature = "component", target_arch = "wasm32"))]
mod component;
