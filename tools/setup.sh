#!/usr/bin/env bash
# Installs what building, serving and testing Bubblescope need, and nothing from GitHub:
#   the wasm32 target, trunk 0.21.14, wasm-bindgen-cli at exactly Cargo.lock's wasm-bindgen,
#   wasm-opt (npm binaryen 132) and playwright-core (tests/package-lock.json), Debian's
#   chromium + chromium-driver, and the crates (so trunk --offline can build).
# Idempotent: when everything is present it only checks versions (about a second).
# Run by tools/serve.sh and tools/test.sh; safe to run by hand.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

TRUNK_VERSION=0.21.14
BIN="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
export PATH="$ROOT/tests/node_modules/.bin:$BIN:$PATH"

say() { printf 'setup: %s\n' "$*" >&2; }

# wasm-bindgen version from Cargo.lock: the CLI must match the library exactly.
WB_VERSION="$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)"
[ -n "$WB_VERSION" ] || { say "wasm-bindgen not found in Cargo.lock"; exit 1; }

# 1. The wasm target.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown >&2
fi

# 2. trunk (0.22 needs a newer rustc than this toolchain).
if [ "$("$BIN/trunk" --version 2>/dev/null)" != "trunk $TRUNK_VERSION" ]; then
  say "installing trunk $TRUNK_VERSION (takes several minutes once)"
  cargo install trunk --version "$TRUNK_VERSION" --locked >&2
fi

# 3. wasm-bindgen-cli at exactly Cargo.lock's version. `--locked` fails on this registry for
#    one dependency pinned to a version it does not serve: re-lock only that dependency.
if [ "$("$BIN/wasm-bindgen" --version 2>/dev/null)" != "wasm-bindgen $WB_VERSION" ] ||
   [ "$("$BIN/wasm-bindgen-test-runner" --version 2>/dev/null)" != "wasm-bindgen-test-runner $WB_VERSION" ]; then
  say "installing wasm-bindgen-cli $WB_VERSION (takes a few minutes once)"
  if ! cargo install wasm-bindgen-cli --version "$WB_VERSION" --locked --force >&2; then
    CRATE="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/wasm-bindgen-cli-"$WB_VERSION".crate 2>/dev/null | head -1)"
    [ -n "$CRATE" ] || { say "wasm-bindgen-cli-$WB_VERSION.crate is not in the cargo cache"; exit 1; }
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
    tar -xzf "$CRATE" -C "$WORK"
    SRC="$WORK/wasm-bindgen-cli-$WB_VERSION"
    for _ in 1 2 3 4 5 6 7 8; do
      if err="$(cd "$SRC" && cargo metadata --format-version 1 2>&1 >/dev/null)"; then break; fi
      dep="$(printf '%s\n' "$err" | sed -n 's/.*requirement `\([A-Za-z0-9_-]*\) = .*(locked to .*/\1/p' | head -1)"
      [ -n "$dep" ] || { printf '%s\n' "$err" >&2; exit 1; }
      say "re-locking the unavailable dependency $dep"
      (cd "$SRC" && cargo update -p "$dep" >&2)
    done
    cargo install --path "$SRC" --locked --force >&2
  fi
fi

# 4. wasm-opt (npm binaryen 132; Debian's 108 breaks the app) and playwright-core.
if [ ! -x tests/node_modules/.bin/wasm-opt ] || [ ! -d tests/node_modules/playwright-core ] ||
   [ "$(tests/node_modules/.bin/wasm-opt --version 2>/dev/null)" != "wasm-opt version 132 (version_132)" ]; then
  say "installing wasm-opt and playwright-core from npm"
  (cd tests && npm ci --no-audit --no-fund >&2)
fi

# 5. Chromium and its driver from Debian (the browser tests' browser).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  say "installing chromium and chromium-driver from Debian"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
      say "chromium is missing and this user cannot run apt-get"
      say "hint: run as root, or install the Debian packages chromium and chromium-driver"
      exit 1
    fi
  fi
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >&2
fi

# 6. Crates, so `trunk build --offline` (which makes cargo offline too) finds everything.
#    Only when Cargo.lock changed since the last fetch: the check itself costs a second.
STAMP="target/.fetched-$(cksum < Cargo.lock | cut -d' ' -f1)"
if [ ! -f "$STAMP" ]; then
  cargo fetch --locked -q >&2
  mkdir -p target && rm -f target/.fetched-* && touch "$STAMP"
fi
