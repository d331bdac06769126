#!/usr/bin/env bash
# Runs every test: core and CLI, the app's wasm-bindgen tests in headless Chromium, a release
# build of the playground, and the browser end-to-end tests against it.
# Screenshots of the main views land in target/e2e/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

"$ROOT/tools/setup.sh" test
export PATH="$ROOT/tests/node_modules/.bin:${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin:$PATH"
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"

step() {
  local name="$1"; shift
  printf '\n==> %s\n' "$name"
  local start=$SECONDS
  "$@"
  printf '==> %s: ok (%ss)\n' "$name" "$((SECONDS - start))"
}

step "core and CLI tests" cargo test --locked -p bubblescope -p bubblescope-cli
step "app tests in headless Chromium" cargo test --locked -p bubblescope-app --target wasm32-unknown-unknown --test web
step "release build of the playground" trunk build --release --offline --locked
step "browser end-to-end tests" node tests/e2e/run.mjs dist target/e2e
