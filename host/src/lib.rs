//! lid-host: the wasmtime host of the lid engine component and the `lid` CLI.
//!
//! The host reaches the engine only through the component's WIT interface
//! (`wit/lid.wit`); it never links the guest crate as Rust.

pub mod agent_dir;
pub mod apierror;
pub mod audit_log;
pub mod auth;
pub mod cli;
pub mod db;
pub mod engine;
pub mod http;
pub mod knowledge_cli;
pub mod mcp;
pub mod pack_dir;
pub mod serve;
pub mod service;
pub mod trigger;
