//! Builds the lid engine component (`guest/`, target `wasm32-wasip2`) and hands its path
//! to the host as `LID_COMPONENT`, in the manner of wasmtime's
//! `crates/test-programs/artifacts/build.rs`. The host embeds the bytes; it never links
//! the guest crate as Rust.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("workspace root").to_path_buf();
    for p in ["guest/src", "guest/build.rs", "guest/Cargo.toml", "guest/data", "wit", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
    println!("cargo:rerun-if-env-changed=LID_COMPONENT_OVERRIDE");
    embed_demo_agent(&root);

    // A prebuilt (e.g. pre-initialised) component can be supplied instead.
    if let Some(p) = env::var_os("LID_COMPONENT_OVERRIDE") {
        println!("cargo:rustc-env=LID_COMPONENT={}", PathBuf::from(p).display());
        return;
    }

    // A target dir of its own, so this nested cargo never waits on the outer one's lock.
    let target_dir = root.join("target").join("lid-guest");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--quiet", "-p", "lid-core", "--target", "wasm32-wasip2", "--features", "component", "--profile", "wasm", "--target-dir"])
        .arg(&target_dir);
    // Do not leak the host build's flags into the guest build.
    for var in ["CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET", "RUSTC_WORKSPACE_WRAPPER", "CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS"] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("failed to run cargo for the guest component");
    if !status.success() {
        panic!("building the lid-core component failed; is the wasm32-wasip2 target installed? (rustup target add wasm32-wasip2)");
    }
    let wasm = target_dir.join("wasm32-wasip2").join("wasm").join("lid_core.wasm");
    assert!(wasm.exists(), "component not found at {}", wasm.display());
    println!("cargo:rustc-env=LID_COMPONENT={}", wasm.display());
}

/// `lid serve --demo` publishes examples/demo-agent from a copy built into the binary, so
/// an installed or moved `lid` does not depend on this checkout: `demo_agent.rs` in
/// `OUT_DIR` lists its files (`manifest.json`, `units/*.md`, in name order) with their text.
fn embed_demo_agent(root: &std::path::Path) {
    let dir = root.join("examples").join("demo-agent");
    // The files, and the units folder (a unit added or removed), not the agent folder: a
    // `lid recall examples/demo-agent` writes its audit log to `.lid/` there, and cargo
    // scans a folder it watches whole, so every such run rebuilt the host (and the tests).
    println!("cargo:rerun-if-changed={}", dir.join("units").display());
    let mut units: Vec<PathBuf> = std::fs::read_dir(dir.join("units"))
        .expect("examples/demo-agent/units")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    units.sort();
    let mut out = String::from("/// examples/demo-agent: (path relative to it, text).\npub static DEMO_AGENT: &[(&str, &str)] = &[\n");
    for (rel, path) in std::iter::once(("manifest.json".to_string(), dir.join("manifest.json"))).chain(units.into_iter().map(|p| (format!("units/{}", p.file_name().expect("file name").to_string_lossy()), p))) {
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!("    ({rel:?}, include_str!({:?})),\n", path.display().to_string()));
    }
    out.push_str("];\n");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out_dir.join("demo_agent.rs"), out).expect("writing demo_agent.rs");
}
