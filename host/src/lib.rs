//! lid-host: the wasmtime host of the lid engine component and the `lid` CLI.
//!
//! The host reaches the engine only through the component's WIT interface
//! (`wit/lid.wit`); it never links the guest crate as Rust.

/// The CLI's `println!`: a closed stdout (`lid … | head`) ends the command quietly
/// instead of panicking ([`cli::emit`]).
macro_rules! outln {
    () => { $crate::cli::emit(format_args!(""), true) };
    ($($t:tt)*) => { $crate::cli::emit(format_args!($($t)*), true) };
}
/// The CLI's `print!` (see [`outln!`]).
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::emit(format_args!($($t)*), false) };
}

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
pub mod settings;
pub mod trigger;
pub mod write_tree;
