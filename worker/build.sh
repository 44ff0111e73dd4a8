#!/usr/bin/env bash
# Build the worker and the preview page with local tools only (no downloads):
#   build/            worker-build output (index.js + wasm), what wrangler runs
#   preview/dist/     the static preview: index.html, app.js, wasm-bindgen --target web output
# Needs wasm-bindgen (the version pinned in Cargo.toml) and worker-build on PATH, and
# `npm ci` done here (wasm-opt from binaryen, esbuild). LID_SKIP_BUILD=1 skips it when
# build/ and preview/dist/ already exist (CI builds once, then starts wrangler dev).
set -euo pipefail
cd "$(dirname "$0")"
if [ "${LID_SKIP_BUILD:-}" = 1 ] && [ -f build/index.js ] && [ -f preview/dist/preview/lid_preview_bg.wasm ]; then
  exit 0
fi
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen)}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$PWD/node_modules/.bin/wasm-opt}"
export ESBUILD_BIN="${ESBUILD_BIN:-$PWD/node_modules/.bin/esbuild}"
worker-build --release

cargo build --release --locked --target wasm32-unknown-unknown -p lid-preview
out=preview/dist/preview
rm -rf "$out" && mkdir -p "$out"
"$WASM_BINDGEN_BIN" --target web --no-typescript --out-dir "$out" target/wasm32-unknown-unknown/release/lid_preview.wasm
"$WASM_OPT_BIN" -Os --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
  "$out/lid_preview_bg.wasm" -o "$out/lid_preview_bg.wasm"
cp preview/web/index.html preview/web/app.js preview/web/style.css "$out/"
mkdir -p "$out/demo/units"
cp ../examples/demo-agent/manifest.json "$out/demo/"
cp ../examples/demo-agent/units/*.md "$out/demo/units/"
