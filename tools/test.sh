#!/usr/bin/env bash
# Runs every check: rustfmt and clippy (core, CLI, the app natively and for wasm), the core and
# CLI tests, the app's wasm-bindgen tests in headless Chromium, a release build of the
# playground, and the browser end-to-end tests against it.
# Screenshots of the main views land in target/e2e/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

"$ROOT/tools/setup.sh" test
export PATH="$ROOT/tests/node_modules/.bin:${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin:$PATH"
export WASM_BINDGEN_TEST_TIMEOUT="${WASM_BINDGEN_TEST_TIMEOUT:-120}"
# chromedriver gets 5 s to bind its port by default; on a loaded 2-core machine it has needed
# more (the runner then kills it with "driver failed to bind port during startup").
export WASM_BINDGEN_TEST_DRIVER_TIMEOUT="${WASM_BINDGEN_TEST_DRIVER_TIMEOUT:-60}"

step() {
  local name="$1"; shift
  printf '\n==> %s\n' "$name"
  local start=$SECONDS
  "$@"
  printf '==> %s: ok (%ss)\n' "$name" "$((SECONDS - start))"
}

step "formatting (rustfmt)" cargo fmt --all --check
step "lints: core and CLI (clippy)" cargo clippy --locked -p bubblescope -p bubblescope-cli --all-targets -- -D warnings
step "lints: app, native (clippy)" cargo clippy --locked -p bubblescope-app --all-targets -- -D warnings
step "lints: app, wasm (clippy)" cargo clippy --locked -p bubblescope-app --target wasm32-unknown-unknown --all-targets -- -D warnings
step "lints: the page's own wasm module (clippy)" cargo clippy --locked -p bubblescope-app --target wasm32-unknown-unknown --no-default-features --bin bubblescope-app -- -D warnings
step "core and CLI tests" cargo test --locked -p bubblescope -p bubblescope-cli
step "app unit tests (native)" cargo test --locked -p bubblescope-app --lib
step "app tests in headless Chromium" cargo test --locked -p bubblescope-app --target wasm32-unknown-unknown --test web
step "release build of the playground" trunk build --release --offline --locked
step "browser end-to-end tests" node tests/e2e/run.mjs dist target/e2e
